"""Every experiment config composes, passes the config checks and plans its sweep (compare names
that are runs of the sweep, variants with their own run names and prompts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SLICE

EXPERIMENTS = sorted(p.stem for p in (Path(__file__).parents[1] / "conf" / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes_validates_and_plans(name):
    from candlebench.stages import compose_config
    from candlebench.sweep import sweep_plan
    from candlebench.validate import validate

    # Forecast only: a task another test registered in this process would join a plain plan.
    base = [f"experiment={name}", f"data.path={SLICE}", "tasks=[forecast]"]
    cfg = compose_config(base)
    validate(cfg)
    jobs = sweep_plan(cfg, base)
    infer = [j for j in jobs if j.stage == "infer"]
    assert len(infer) == len(cfg.sweep.models) * max(1, len(cfg.sweep.get("variants") or {}))
    report = next(j for j in jobs if j.stage == "report").overrides[0]
    compare = next(o for o in report if o.startswith("report.compare="))
    assert compare.count("[") - 1 == len(cfg.sweep.compare) * (len(cfg.sweep.models) if any(
        str(a).startswith("@") for a, _ in cfg.sweep.compare) else 1)
    for job in infer:  # each variant's prompt resolves to text with the placeholders it needs
        run = compose_config(list(job.overrides[0]))
        from tasks.forecast.task import TASK

        identity = TASK.prompt_identity(run)
        assert "<score>" in identity and ("ohlcv" not in TASK.fed(run) or "{ohlcv}" in identity)


def test_paper_experiments_train_xgboost_on_history_from_2015():
    from candlebench.stages import compose_config

    for name in ("paper_hs300", "paper_sp500"):
        cfg = compose_config([f"experiment={name}", f"data.path={SLICE}"])
        assert str(cfg.baseline.params.xgboost.train_start) == "2015-01-01"
        assert str(cfg.samples.start) == "2023-01-01" and str(cfg.samples.end) == "2025-01-01"
