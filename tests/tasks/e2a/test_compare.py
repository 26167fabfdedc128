"""The E2A-style comparison over stock-windows (the per-sample default, tasks/e2a/metrics.py's
PER_SAMPLE) and its report table: a window's three modalities are one cluster, each modality a
family Holm adjusts, the overall tests each the pair's headline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from candlebench.report.per_sample import comparison_table
from candlebench.scoring.clustered import holm
from candlebench.tasks.e2a.metrics import PER_SAMPLE
from helpers import e2a_compare

pytestmark = pytest.mark.unit


def rows(act: np.ndarray) -> pd.DataFrame:
    """12 stocks x 2 dates x 3 modalities; ``act`` (72,) which answers BUY (else HOLD)."""
    n = len(act)
    window = np.arange(n) // 3
    return pd.DataFrame({"sample_id": [f"s{i}" for i in range(n)], "code": window % 12, "cutoff": window // 12,
                         "modality": np.tile(["text", "chart", "both"], n // 3),
                         "action": np.where(act, "BUY", "HOLD"), "confidence": 0.5, "polarity": "neutral",
                         "strong_signals": 2, "supported": 1, "contradicted": 0, "unverifiable": 0})


def test_windows_are_the_clusters_and_modalities_a_holm_family():
    rng = np.random.default_rng(0)
    act_a = rng.random(72) < 0.3
    act_b = act_a | (rng.random(72) < 0.5)  # b acts wherever a did, and more
    c = e2a_compare(rows(act_a), rows(act_b), n_boot=100, seed=1)
    assert (c["unit"], c["n"], c["n_clusters"]) == ("stock-window", 72, 24)
    gained = (act_b & ~act_a).reshape(24, 3).sum(1)  # each window's extra acting answers, all one way
    # Normal approximation over 24 windows: z = sum / sqrt(sum of squares) (Durkalski's statistic).
    z = gained.sum() / np.sqrt((gained**2).sum())
    assert c["coverage"]["p"] == pytest.approx(2 * stats.norm.sf(z)) and "p_holm" not in c["coverage"]
    family = [c["groups"]["modality"][m]["coverage"] for m in ("text", "chart", "both")]
    assert [f["p_holm"] for f in family] == pytest.approx(holm([f["p"] for f in family]))
    table = comparison_table(PER_SAMPLE, "E2A", {"a → b": c})
    row = table.frame.set_index("Measure").loc["Coverage"]
    assert row["n"] == 24 and row["p"] == f"{c['coverage']['p']:.3f}" and row["p (Holm)"] == "–"
    assert "Unit of analysis: the stock-window" in table.note and "Holm" in table.note
    per = comparison_table(PER_SAMPLE, "E2A", {"a → b": c}, PER_SAMPLE.groups[0]).frame
    chart = per[(per["Modality"] == "chart") & (per["Measure"] == "Coverage")].iloc[0]
    assert chart["p (Holm)"] == f"{c['groups']['modality']['chart']['coverage']['p_holm']:.3f}"
