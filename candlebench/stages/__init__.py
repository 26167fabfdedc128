"""The stage jobs, one module per stage (``samples``, ``render``, ``baseline``, ``infer``,
``import_responses``, ``score``, ``report``), their helpers (``parsed``: a run's parsed.parquet;
``infer_settings``: what infer reads from the config; ``provenance``; ``validate``: every job's
config checked before the first runs) and the one stage graph over them (``graph``). A stage job
reads the config, asks the task (``tasks``) and calls the libraries (``rendering``, ``inference``,
``scoring``, ``candlebench.market``); nothing below imports a stage."""
