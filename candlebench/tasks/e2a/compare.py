"""Paired comparison of two E2A-style runs (base a and fine-tuned b, or a direct pass a and its
verify pass b) on the same samples, overall and per modality: the change of every metric b - a with
a 95% interval from one bootstrap of stock-windows applied to both runs, a test of each ratio metric's
change, and the BUY:SELL amplification factor (the seed paper reports 4.21-4.68x after financial
fine-tuning).

The unit of analysis is the **stock-window** (a stock at one evaluation date): its answers share
the window's evidence, and the three modalities ask about the same window, so a window is one
cluster (:mod:`candlebench.scoring.clustered`: the paired sign-flip test over windows, none below 10;
the percentile bootstrap of whole windows). Rows without a ``cutoff`` cluster by stock, coarser and
so still valid. Each ratio metric (coverage: acting, the old McNemar's subject; UCR, RCI, ECI, ...)
is tested; NDR, a product of four ratios, has its interval only. The modalities of a pair are one
family per metric, Holm-adjusted (``p_holm``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from candlebench.core.io import json_safe
from candlebench.scoring.bootstrap import date_weights, percentile_ci
from candlebench.scoring.clustered import Clusters, adjust, clusters, sign_flip_p, TOO_FEW
from candlebench.tasks.e2a.metrics import MODALITIES, RATIOS, _block, indicators, replicates

UNIT = "stock-window"


def _clusters(rows: pd.DataFrame) -> Clusters:
    return clusters(rows, ["code", "cutoff"], UNIT) if "cutoff" in rows else clusters(rows, ["code"], "stock")


def _paired(windows: Clusters, terms: list[pd.DataFrame], unverifiable: list[pd.Series | None], n_boot: int,
            seed: int) -> dict[str, Any]:
    """The comparison of the responses in ``windows`` whose :func:`indicators` are ``terms`` (a's, b's)."""
    # metrics.py's own reduction of a block's indicators (as e2a_metrics does per modality), on
    # indicators computed once for the whole comparison.
    block_a, block_b = (_block(t, u) for t, u in zip(terms, unverifiable))
    out: dict[str, Any] = {"n": len(windows.codes), "unit": windows.unit, "n_clusters": windows.k}
    for name in [*RATIOS, "ndr", "buy_sell_ratio"]:
        va, vb = block_a[name], block_b[name]
        out[name] = {"a": va, "b": vb, "diff": None if va is None or vb is None else vb - va}
    ratio_a, ratio_b = block_a["buy_sell_ratio"], block_b["buy_sell_ratio"]
    out["buy_sell_amplification"] = None if not ratio_a or ratio_b is None else ratio_b / ratio_a
    if not len(windows.codes):
        return out
    # Each window's indicator sums, per run: every ratio metric's (numerator, denominator) terms.
    sums = [windows.sums(t.to_numpy(float)) for t in terms]
    at = {c: i for i, c in enumerate(terms[0].columns)}
    pairs = [[at[num], at[den]] for num, den in RATIOS.values()]
    # Every ratio metric at once: (metrics, windows, 2) per run, one test each.
    p, method = sign_flip_p(*(np.stack([s[:, pair] for pair in pairs]) for s in sums))
    for name, found in zip(RATIOS, p):
        out[name].update(p=None if np.isnan(found) else float(found), method=method or TOO_FEW)
    if n_boot > 0:
        # One draw of windows for both runs: the difference is paired, replicate by replicate.
        weights = date_weights(windows.k, n_boot, seed)
        reps = [replicates(pd.DataFrame(s, columns=terms[0].columns), weights) for s in sums]
        for name in [*RATIOS, "ndr"]:
            out[name]["ci"] = percentile_ci(reps[1][name] - reps[0][name])
    return out


def compare_e2a(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = 1000, seed: int = 0,
                eci_confidence: float = 0.7, eci_signals: int = 1) -> dict[str, Any]:
    """``a`` and ``b``: scored rows with ``sample_id``, ``code``, ``cutoff`` and ``modality`` (see
    metrics.py); only the samples both hold are compared, over all of them and per modality (the
    seed paper's verification study is chart-only)."""
    shared = sorted(set(a["sample_id"]) & set(b["sample_id"]))
    a = a.set_index("sample_id").loc[shared].reset_index()
    b = b.set_index("sample_id").loc[shared].reset_index()
    terms = [indicators(x, eci_confidence, eci_signals) for x in (a, b)]
    unverifiable = [x.get("unverifiable") for x in (a, b)]

    windows = _clusters(a)

    def part(mask: np.ndarray) -> dict[str, Any]:
        return _paired(windows.subset(mask), [t[mask] for t in terms],
                       [None if u is None else u[mask] for u in unverifiable], n_boot, seed)

    out = _paired(windows, terms, unverifiable, n_boot, seed)
    modality = a["modality"].to_numpy()
    out["modalities"] = {m: part(modality == m) for m in MODALITIES if (modality == m).any()}
    for name in RATIOS:
        adjust([d[name] for d in out["modalities"].values()])
    return json_safe(out)
