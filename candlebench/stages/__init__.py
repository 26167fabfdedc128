"""The stage jobs, one module per stage (``samples``, ``render``, ``baseline``, ``infer``,
``import_responses``, ``score``, ``report``), their helpers (``parsed``: a run's parsed.parquet;
``infer_settings``: a model run's identity; ``provenance``) and the one stage graph over them
(``graph``, whose ``prepare`` is every job's entrance). A stage job takes its typed job
(``job.JobConfig``: the config built and checked once), asks the task (``tasks``) and calls the
libraries (``rendering``, ``inference``, ``scoring``, ``candlebench.market``), which take typed
values, never the Hydra config; nothing below imports a stage."""
