"""One-off tools that rewrite a checkpoint into a layout the engines load (``candlebench convert ...``);
nothing at run time imports them."""
