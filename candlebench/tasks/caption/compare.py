"""Paired comparison of two captioning runs (base a, fine-tuned b) on the samples both answered:
for each per-sample metric the mean of b - a with a 95% interval from one bootstrap of samples
applied to both and its test, the corpus values of each run beside it, and the sentiment-agreement
change.

The unit of analysis is the **sample** (one chart, one caption): each is its own cluster
(:mod:`candlebench.scoring.clustered`: the paired sign-flip test over samples, none below 10; the
percentile bootstrap of samples). The metrics of a pair are one family, Holm-adjusted (``p_holm``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from candlebench.core.io import json_safe
from candlebench.core.results import RunAnswers
from candlebench.scoring.clustered import Clusters, adjust, paired_ratio
from candlebench.scoring.per_sample import MissingScores
from candlebench.task_api.base import ScoreSettings
from candlebench.tasks.caption.metrics import PER_SAMPLE

__all__ = ["MissingScores", "compare_captions"]

UNIT = "sample"


def compare_captions(a: RunAnswers, b: RunAnswers, settings: ScoreSettings) -> dict[str, Any]:
    cols = [f"score_{k}" for k in PER_SAMPLE]
    missing = [r.name for r in (a, b) if not set(cols) <= set(r.parsed.columns)]
    if missing:
        raise MissingScores(f"runs {missing} have no per-sample caption scores: run `candlebench score` on them first")
    x, y = (r.parsed.set_index("sample_id") for r in (a, b))
    shared = sorted(set(x.index) & set(y.index))
    x, y = (f.loc[shared] for f in (x, y))
    out: dict[str, Any] = {"n": len(shared), "unit": UNIT}
    each = Clusters(np.arange(len(shared)), UNIT)  # every sample its own cluster: the captions' charts are not grouped
    for k in PER_SAMPLE:
        va, vb = (f[f"score_{k}"].to_numpy(float) for f in (x, y))
        # Undefined on either side (IoU on a chart with no item of its category): counted nowhere.
        ok = np.isfinite(va) & np.isfinite(vb)
        found = paired_ratio(*(each.ratio_terms(np.where(ok, v, np.nan)) for v in (va, vb)), UNIT, settings.n_boot,
                             settings.seed)
        out[k] = {**found, "a": (a.metrics or {}).get(k), "b": (b.metrics or {}).get(k)}
    adjust([out[k] for k in PER_SAMPLE])
    agree = [(r["score_sa_candidate"] == r["score_sa_reference"]).to_numpy(float) for r in (x, y)]
    out["sa_agreement"] = {"a": float(agree[0].mean()) if shared else None, "b": float(agree[1].mean()) if shared else None}
    out["sa_f1"] = {"a": (a.metrics or {}).get("sa_f1"), "b": (b.metrics or {}).get("sa_f1")}
    return json_safe(out)
