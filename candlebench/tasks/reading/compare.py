"""Paired comparison of two reading runs on the questions both were asked: per question (over time
frames and modalities), per modality and overall, the accuracy change b - a with a 95% interval from
one bootstrap of cutoff dates applied to both runs, and McNemar's test on the paired verdicts."""

from __future__ import annotations

from typing import Any

import pandas as pd

from candlebench.core.io import json_safe
from candlebench.scoring.bootstrap import date_weights, percentile_ci, weighted_ratio
from candlebench.scoring.paired import mcnemar
from candlebench.tasks.reading.metrics import date_terms, verdicts
from candlebench.tasks.reading.questions import QUESTIONS


def _paired(both: pd.DataFrame, weights, dates: pd.Index) -> dict[str, Any]:
    a, b = both["right_a"].to_numpy(bool), both["right_b"].to_numpy(bool)
    out: dict[str, Any] = {"n": len(both), "accuracy_a": float(a.mean()), "accuracy_b": float(b.mean()),
                           "diff": float(b.mean() - a.mean()), "mcnemar": mcnemar(a, b)}
    if weights is not None:
        reps = [weighted_ratio(weights, *date_terms(both.rename(columns={f"right_{k}": "right"}), dates)) for k in "ab"]
        out["ci"] = percentile_ci(reps[1] - reps[0])
    return out


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """``a``, ``b``: two runs' parsed rows (the same samples file)."""
    keys = ["sample_id", "question"]
    both = verdicts(a).merge(verdicts(b)[[*keys, "right"]], on=keys, suffixes=("_a", "_b"))
    if both.empty:
        return {"n": 0}
    dates = pd.Index(sorted(both["cutoff"].unique()))
    weights = date_weights(len(dates), n_boot, seed) if n_boot > 0 else None
    out = _paired(both, weights, dates)
    out["modalities"] = {m: _paired(part, weights, dates) for m, part in both.groupby("modality", sort=True)}
    out["questions"] = {q: _paired(both[both["question"] == q], weights, dates) for q in QUESTIONS
                        if (both["question"] == q).any()}
    return json_safe(out)
