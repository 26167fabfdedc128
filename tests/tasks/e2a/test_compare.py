"""The E2A-style comparison over stock-windows (tasks/e2a/compare.py) and its report table: a window's
three modalities are one cluster, each modality a family Holm adjusts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from candlebench.scoring.clustered import holm
from candlebench.tasks.e2a.compare import compare_e2a
from candlebench.tasks.e2a.report import comparison_table

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
    c = compare_e2a(rows(act_a), rows(act_b), n_boot=100, seed=1)
    assert (c["unit"], c["n"], c["n_clusters"]) == ("stock-window", 72, 24)
    gained = (act_b & ~act_a).reshape(24, 3).sum(1)  # each window's extra acting answers, all one way
    # Normal approximation over 24 windows: z = sum / sqrt(sum of squares) (Durkalski's statistic).
    z = gained.sum() / np.sqrt((gained**2).sum())
    assert c["coverage"]["p"] == pytest.approx(2 * stats.norm.sf(z))
    family = [c["modalities"][m]["coverage"] for m in ("text", "chart", "both")]
    assert [f["p_holm"] for f in family] == pytest.approx(holm([f["p"] for f in family]))
    table = comparison_table("E2A", {"a → b": c})
    all_row = table.frame[table.frame["Modality"] == "all"].iloc[0]
    assert all_row["windows"] == 24 and all_row["p Coverage (acting)"] == f"{c['coverage']['p']:.3f}"
    assert "Unit of analysis: the stock-window" in table.note and "Holm" in table.note
