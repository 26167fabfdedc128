"""Paired comparison of two reading runs on the questions both were asked: per question (over time
frames and modalities), per modality and overall, the accuracy change b - a with a 95% interval and
a test.

The unit of analysis is the **sample**, a chart as asked (one stock, date, time frame and
modality): its ~12 questions are read off one input, so a model that misreads it misreads several
at once. Each sample is one cluster (:mod:`candlebench.scoring.clustered`: the paired sign-flip test
over samples, none below 10; the percentile bootstrap of whole samples for both runs); a chart's
modalities are apart here, as both runs answer each of them. The questions of a pair are
one family and its modalities another, each Holm-adjusted (``p_holm``); the overall test is the
pair's headline, unadjusted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from candlebench.core.io import json_safe
from candlebench.scoring.clustered import Clusters, adjust, clusters, paired_ratio
from candlebench.tasks.reading.metrics import verdicts
from candlebench.tasks.reading.questions import QUESTIONS

UNIT = "sample"


def _paired(samples: Clusters, right: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """``right``: (verdicts, 2) a's and b's, of the verdicts whose samples are ``samples``."""
    ones = np.ones(len(right))
    found = paired_ratio(*(samples.sums(np.column_stack([right[:, k], ones])) for k in (0, 1)), UNIT, n_boot, seed)
    return {"n": len(right), "accuracy_a": found.pop("a"), "accuracy_b": found.pop("b"), **found}


def compare_verdicts(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """``a``, ``b``: two runs' verdicts (:func:`candlebench.tasks.reading.metrics.verdicts`: one row
    per sample and asked question, ``right`` its verdict)."""
    keys = ["sample_id", "question"]
    both = a.merge(b[[*keys, "right"]], on=keys, suffixes=("_a", "_b"))
    if both.empty:
        return {"n": 0, "unit": UNIT}
    samples = clusters(both, ["sample_id"], UNIT)
    right = both[["right_a", "right_b"]].to_numpy(float)

    def part(mask: np.ndarray) -> dict[str, Any]:
        return _paired(samples.subset(mask), right[mask], n_boot, seed)

    out = _paired(samples, right, n_boot, seed)
    modality, question = both["modality"].to_numpy(), both["question"].to_numpy()
    out["modalities"] = {m: part(modality == m) for m in sorted(set(modality))}
    out["questions"] = {q: part(question == q) for q in QUESTIONS if (question == q).any()}
    adjust(list(out["modalities"].values()))
    adjust(list(out["questions"].values()))
    return json_safe(out)


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """``a``, ``b``: two runs' parsed rows (the same samples file)."""
    return compare_verdicts(verdicts(a), verdicts(b), n_boot, seed)
