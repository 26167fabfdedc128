"""Paired comparison of two captioning runs (base a, fine-tuned b) on the samples both answered:
for each per-sample metric the mean of b - a with a 95% interval from one bootstrap of samples
applied to both, the corpus values of each run beside it, and the sentiment-agreement change."""

from __future__ import annotations

from typing import Any

import numpy as np

from candlebench.core.io import json_safe
from candlebench.core.results import RunAnswers
from candlebench.scoring.bootstrap import date_weights
from candlebench.scoring.per_sample import MissingScores, cluster_mean
from candlebench.task_api.base import ScoreSettings
from candlebench.tasks.caption.metrics import PER_SAMPLE

__all__ = ["MissingScores", "compare_captions"]


def compare_captions(a: RunAnswers, b: RunAnswers, settings: ScoreSettings) -> dict[str, Any]:
    cols = [f"score_{k}" for k in PER_SAMPLE]
    missing = [r.name for r in (a, b) if not set(cols) <= set(r.parsed.columns)]
    if missing:
        raise MissingScores(f"runs {missing} have no per-sample caption scores: run `candlebench score` on them first")
    x = a.parsed.set_index("sample_id")
    y = b.parsed.set_index("sample_id")
    shared = sorted(set(x.index) & set(y.index))
    out: dict[str, Any] = {"n": len(shared)}
    weights = date_weights(len(shared), settings.n_boot, settings.seed) if settings.n_boot > 0 and shared else None
    each = np.arange(len(shared))  # every sample its own cluster: the captions' charts are not grouped
    for k in PER_SAMPLE:
        # NaN where undefined (IoU on a chart with no item of its category): counted nowhere.
        diff, ci = cluster_mean((y.loc[shared, f"score_{k}"] - x.loc[shared, f"score_{k}"]).to_numpy(float), each, weights)
        out[k] = {"a": (a.metrics or {}).get(k), "b": (b.metrics or {}).get(k), "diff": diff, "ci": ci}
    agree = [(r.loc[shared, "score_sa_candidate"] == r.loc[shared, "score_sa_reference"]).to_numpy(float) for r in (x, y)]
    out["sa_agreement"] = {"a": float(agree[0].mean()) if shared else None, "b": float(agree[1].mean()) if shared else None}
    out["sa_f1"] = {"a": (a.metrics or {}).get("sa_f1"), "b": (b.metrics or {}).get("sa_f1")}
    return json_safe(out)
