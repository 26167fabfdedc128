"""``candlebench run``: the main job, every stage in order on one config.

samples → render → baselines → infer → score (each run) → report. Each stage skips what is
already on disk, so a re-run after an interruption finishes the rest.
"""

from __future__ import annotations

from omegaconf import DictConfig

from inference import jobs as infer_jobs
from rendering import jobs as data_jobs
from rendering import render_job
from scoring import jobs as score_jobs


def run(cfg: DictConfig) -> None:
    data_jobs.samples(cfg)
    render_job.render(cfg)
    infer_jobs.baseline(cfg)
    infer_jobs.infer(cfg)
    score_jobs.score_all(cfg, [*cfg.baseline.names, cfg.infer.run_name])
    score_jobs.report(cfg)
