"""Stages as picklable calls: ``run_stage(name, overrides)`` composes the config from the same
overrides a command line would carry and runs one stage. SLURM array tasks (through submitit) and
the local executor both call this, so a stage runs the same code wherever it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

import pandas as pd
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from candlebench.paths import CONF_DIR, register_resolvers
from inference import jobs as infer_jobs
from rendering import jobs as data_jobs
from rendering import render_job
from scoring import jobs as score_jobs


def finalize_and_score(cfg: DictConfig) -> None:
    """After every shard of a model: one responses.jsonl, parsed.parquet and metrics.json."""
    infer_jobs.finalize_run(cfg)
    samples = pd.read_parquet(Path(cfg.out_dir) / "samples.parquet")
    score_jobs.score_run(
        infer_jobs.run_dir_of(cfg), samples, int(cfg.task.horizon), int(cfg.score.n_boot), int(cfg.score.seed)
    )


def baselines_and_score(cfg: DictConfig) -> None:
    infer_jobs.baseline(cfg)
    score_jobs.score_all(cfg, list(cfg.baseline.names))


STAGES: Mapping[str, Callable[[DictConfig], None]] = {
    "samples": data_jobs.samples,
    "render": render_job.render,
    "render_finalize": render_job.finalize_render,
    "baseline": baselines_and_score,
    "infer": infer_jobs.infer,
    "score": finalize_and_score,
    "report": score_jobs.report,
}


def compose_config(overrides: list[str]) -> DictConfig:
    register_resolvers()
    if GlobalHydra.instance().is_initialized():  # inside a Hydra job (the sweep itself)
        return compose(config_name="config", overrides=overrides)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="candlebench"):
        return compose(config_name="config", overrides=overrides)


def run_stage(name: str, overrides: list[str]) -> str:
    STAGES[name](compose_config(overrides))
    return name
