"""Paired comparison of two E2A-style runs (base a and fine-tuned b, or a direct pass a and its
verify pass b) on the same samples, overall and per modality: the change
of every metric b - a with a 95% interval from one stock bootstrap applied to both runs, McNemar
on acting (BUY / SELL) against not acting, and the BUY:SELL amplification factor (the seed paper
reports 4.21-4.68x after financial fine-tuning)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from candlebench.core.io import json_safe
from candlebench.scoring.bootstrap import date_weights, percentile_ci
from candlebench.scoring.paired import mcnemar
from candlebench.tasks.e2a.metrics import MODALITIES, RATIOS, block, replicates, stock_terms


def _paired(a: pd.DataFrame, b: pd.DataFrame, n_boot: int, seed: int, eci_confidence: float,
            eci_signals: int) -> dict[str, Any]:
    block_a, block_b = block(a, eci_confidence, eci_signals), block(b, eci_confidence, eci_signals)
    metrics = [*RATIOS, "ndr"]
    out: dict[str, Any] = {"n": len(a)}
    for name in [*metrics, "buy_sell_ratio"]:
        va, vb = block_a[name], block_b[name]
        out[name] = {"a": va, "b": vb, "diff": None if va is None or vb is None else vb - va}
    if n_boot > 0 and len(a):
        # One draw of stocks for both runs: the difference is paired, replicate by replicate.
        terms = [stock_terms(x, eci_confidence, eci_signals) for x in (a, b)]
        weights = date_weights(len(terms[0]), n_boot, seed)
        reps = [replicates(t, weights) for t in terms]
        for name in metrics:
            out[name]["ci"] = percentile_ci(reps[1][name] - reps[0][name])
    acts = [x["action"].isin(("BUY", "SELL")).to_numpy() for x in (a, b)]
    out["mcnemar_directional"] = mcnemar(acts[0], acts[1])
    ratio_a, ratio_b = block_a["buy_sell_ratio"], block_b["buy_sell_ratio"]
    out["buy_sell_amplification"] = None if not ratio_a or ratio_b is None else ratio_b / ratio_a
    return out


def compare_e2a(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 1000, seed: int = 0,
                eci_confidence: float = 0.7, eci_signals: int = 1) -> dict[str, Any]:
    """``a`` and ``b``: scored rows with ``sample_id``, ``code`` and ``modality`` (see metrics.py);
    only the samples both hold are compared, over all of them and per modality (the seed paper's
    verification study is chart-only)."""
    shared = sorted(set(a["sample_id"]) & set(b["sample_id"]))
    a = a.set_index("sample_id").loc[shared].reset_index()
    b = b.set_index("sample_id").loc[shared].reset_index()
    settings = dict(n_boot=n_boot, seed=seed, eci_confidence=eci_confidence, eci_signals=eci_signals)
    out = _paired(a, b, **settings)
    out["modalities"] = {m: _paired(a[a["modality"] == m].reset_index(drop=True),
                                    b[b["modality"] == m].reset_index(drop=True), **settings)
                         for m in MODALITIES if (a["modality"] == m).any()}
    return json_safe(out)
