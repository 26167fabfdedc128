"""Every plot the report draws, on a tiny study and on a degenerate one (one stock, every return and
prediction 0), read as a reader would: no text cut off or spilling out of its axes, no two labels
over each other, numbers on coloured cells at WCAG contrast >= 4.5 : 1, and an empty panel that
says why (tests/plot_checks.py). The forecast metrics are the scorer's own, of rows made here."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from candlebench.report.model import RunMetrics, scored_run
from candlebench.task_api.registry import get_task
from candlebench.tasks.forecast.metrics import compute_metrics

from helpers import ROOT
from plot_checks import problems

pytestmark = pytest.mark.unit

LONG = "tiny_qwen2_5_vl-transformers"  # the demo's model run, labelled "(random weights)"


def _forecast_rows(stocks: int, dates: int, seed: int, zero: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in pd.date_range("2024-01-02", periods=dates, freq="MS"):
        for k in range(stocks):
            draw = (lambda scale: 0.0) if zero else (lambda scale: float(rng.normal(0, scale)))
            rows.append({"cutoff": d, "code": f"S{k}", "pred": draw(0.05), "r_30": draw(0.05), "r_5": draw(0.02),
                         "regime": "sideways" if zero else str(rng.choice(["bull", "bear", "sideways"])),
                         "continuous_rise": k == 0 and not zero, "continuous_fall": k == 1 and not zero})
    return pd.DataFrame(rows)


def _e2a_block(v: float, claims: float) -> dict:
    return {"n": 24, "ndr": v, "ucr_dir": v / 2, "ucr_all": v / 2, "rci": v / 3, "eci": v / 4, "coverage": v,
            "joint_pass_rate": v, "no_claim_share": 1 - claims, "claims_per_answer": 3 * claims,
            "parse_failure_rate": 0.0, "buy_sell_ratio": 1.0}


def _e2a(v: float, claims: float = 1.0, revises: str | None = None) -> dict:
    return {"all": _e2a_block(v, claims), "modalities": {m: _e2a_block(v * f, claims) for m, f in
                                                         (("text", 1.0), ("chart", 0.8), ("both", 0.9))},
            "revises": revises}


CAPTION_KEYS = ("bleu4", "meteor", "rouge_l", "cider", "bertscore_f1", "cos", "sa_f1", "iou")


def _caption(v: float) -> dict:
    return {"n": 12, **{k: v * (10 if k == "cider" else 1) for k in CAPTION_KEYS},
            "ci": {k: [v / 2, v * 1.5] for k in CAPTION_KEYS} if v else None}


def study(task: str, kind: str) -> tuple[list[RunMetrics], dict]:
    if task == "forecast":
        if kind == "degenerate":
            return [scored_run(LONG, compute_metrics(_forecast_rows(1, 4, 0, zero=True), n_boot=0), True)], {}
        return [scored_run(name, compute_metrics(_forecast_rows(4, 6, seed), n_boot=50), name == LONG)
                for seed, name in enumerate(("constant", "momentum", "xgboost", LONG))], {}
    if task == "e2a":
        if kind == "degenerate":
            return [scored_run(LONG, _e2a(0.0, claims=0.0), True)], {}
        runs = [scored_run("anchor_oracle", _e2a(0.9), False), scored_run("always_hold", _e2a(0.0, claims=0.0), False),
                scored_run(LONG, _e2a(0.3, 0.4), True), scored_run(f"{LONG}-verify", _e2a(0.5, 0.6, revises=LONG), True)]
        return runs, {f"{LONG} → {LONG}-verify": {"n": 72}}
    if kind == "degenerate":
        return [scored_run(LONG, _caption(0.0), True)], {}
    return [scored_run(n, _caption(v), n == LONG) for n, v in (("template", 0.1), ("describer", 1.0), (LONG, 0.02))], {}


@pytest.mark.parametrize("kind", ["tiny", "degenerate"])
@pytest.mark.parametrize("task", ["forecast", "e2a", "caption"])
def test_every_plot_reads_cleanly(task, kind, monkeypatch):
    found: list[tuple[str, list[str]]] = []
    save = Figure.savefig

    def checked(fig, *args, **kwargs):
        found.append((" / ".join(ax.get_title() for ax in fig.axes)[:80], problems(fig)))
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", checked)
    runs, comparisons = study(task, kind)
    plots = [name for s in get_task(task).report(runs, comparisons, []) for name in s.plots]
    assert len(found) == len(plots) >= 1
    assert [(title, said) for title, said in found if said] == []


def test_an_accuracy_of_zero_is_drawn_as_zero_not_as_no_sample(monkeypatch):
    """The regime and continuous-rise heatmaps showed "–" (no sample) where accuracy was exactly 0,
    beside a table saying 0.000 (n=40)."""
    from candlebench.tasks.forecast.report import plot_continuous, plot_regimes

    cells: list[list[str]] = []
    save = Figure.savefig

    def kept(fig, *args, **kwargs):
        cells.append([t.get_text() for t in fig.axes[0].texts])
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", kept)
    metrics = {"by_regime": {"bull": {"accuracy": 0.0, "n": 40}, "bear": {"accuracy": 0.5, "n": 40}},
               "continuous_rise": {"accuracy": 0.0, "n": 40}}
    run = scored_run("momentum", metrics, False)
    plot_regimes([run])
    plot_continuous([run])
    assert cells == [["0.00", "0.50", "–"], ["0.00", "–"]]


# In a fresh process whose backend is SVG (a user's MPLBACKEND, a notebook's own): the report's modules
# and every task's report, imported, then a plot drawn; what the process's backend is after.
BACKEND_PROBE = """
import sys, matplotlib
import candlebench.report.browser, candlebench.report.failures, candlebench.report.per_sample, candlebench.report.writer
import candlebench.tasks.caption.report, candlebench.tasks.e2a.report, candlebench.tasks.reading.report
from candlebench.report.model import scored_run
from candlebench.tasks.forecast.report import plot_confusions
png = plot_confusions([scored_run("a", {"tn": 3, "fp": 1, "fn": 2, "tp": 4}, False)])
print(matplotlib.rcParams["backend"], "matplotlib.pyplot" in sys.modules, png[:8] == b"\\x89PNG\\r\\n\\x1a\\n")
"""


def test_the_report_draws_on_its_own_canvas_and_leaves_the_processs_backend_alone():
    """report/plots.py selects no global backend (it once ran matplotlib.use("Agg") on import, and
    the tasks' reports had to be imported after it): a process on another backend keeps it, pyplot
    is never imported, and the PNG is still drawn."""
    env = {**os.environ, "MPLBACKEND": "svg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", BACKEND_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["svg", "False", "True"]
