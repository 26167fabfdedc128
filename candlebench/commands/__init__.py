"""The commands that are more than one stage, each module named after its command: ``run`` (the
stage graph on this machine), ``sweep`` (on SLURM), ``status`` and ``view``. A single stage's
command is the stage itself (candlebench.stages.graph)."""
