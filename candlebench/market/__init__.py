"""Market data: OHLCV files in their many layouts (``layouts``, ``exports``), price adjustment
(``adjustment``), loading and validation (``market``), the configured source and the bundled demo
market (``data_source``, ``demo``), and bars as a model may see them (``bars``: the cutoff rule,
weekly aggregation, moving averages), dates on its calendar (``calendar``). It imports only the ground floor (``candlebench.core``)."""
