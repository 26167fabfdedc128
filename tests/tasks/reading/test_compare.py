"""The reading comparison over samples (tasks/reading/compare.py) and its report table: a sample's
questions (a chart as asked) are one cluster; the questions and the modalities are families Holm adjusts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from candlebench.scoring.clustered import holm
from candlebench.tasks.reading.compare import compare_verdicts
from candlebench.tasks.reading.report import comparison_table

pytestmark = pytest.mark.unit


def verdicts(right: np.ndarray) -> pd.DataFrame:
    samples = right.shape[0]
    return pd.DataFrame({"sample_id": np.repeat([f"c{i}" for i in range(samples)], 3),
                         "question": np.tile(["ma5", "ma20", "change"], samples),
                         "modality": np.repeat(np.where(np.arange(samples) % 2, "text", "chart"), 3),
                         "right": right.ravel()})


def test_samples_are_the_clusters_and_questions_a_holm_family():
    rng = np.random.default_rng(2)
    a = rng.random((30, 3)) < 0.5
    b = a | (rng.random((30, 3)) < 0.3)
    c = compare_verdicts(verdicts(a), verdicts(b), n_boot=100)
    assert (c["unit"], c["n"], c["n_clusters"]) == ("sample", 90, 30)
    gained = (b & ~a).sum(1)
    z = gained.sum() / np.sqrt((gained**2).sum())  # 30 samples: the normal approximation
    assert c["p"] == pytest.approx(2 * stats.norm.sf(z))
    family = [c["questions"][q] for q in ("ma5", "ma20", "change")]
    assert [f["p_holm"] for f in family] == pytest.approx(holm([f["p"] for f in family]))
    assert {m: d["n_clusters"] for m, d in c["modalities"].items()} == {"chart": 15, "text": 15}
    table = comparison_table({"a → b": c})
    assert list(table.frame["samples"])[:3] == [30, 15, 15] and "Unit of analysis: the sample" in table.note
