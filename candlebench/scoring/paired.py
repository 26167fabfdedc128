"""Paired statistics that every task's comparison shares: tests over per-date (or per-stock)
differences and McNemar's test on per-sample correctness.

* Paired t and Wilcoxon signed-rank (scipy's default method: exact for up to 50 differences
  without ties or zeros). When every difference is 0 both return p = 1 (scipy would return NaN:
  no evidence of a difference at all).
* McNemar: with fewer than 25 discordant samples the exact two-sided binomial test (p = 0.5),
  otherwise chi-square with 1 dof and Yates' continuity correction,
  (max(|n_a_only - n_b_only| - 1, 0))^2 / (n_a_only + n_b_only).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

MCNEMAR_EXACT_BELOW = 25


def paired_tests(diff: np.ndarray) -> dict[str, Any]:
    """Paired t and Wilcoxon p over the date differences, with the degenerate cases made explicit."""
    if diff.size == 0:
        return {"t_p": None, "wilcoxon_p": None}
    if not diff.any():
        return {"t_p": 1.0, "wilcoxon_p": 1.0}
    t_p = None
    if diff.size >= 2:
        # A constant non-zero difference has zero spread: t is infinite, the difference certain.
        t_p = 0.0 if np.all(diff == diff[0]) else float(stats.ttest_1samp(diff, 0.0).pvalue)
    return {"t_p": t_p, "wilcoxon_p": float(stats.wilcoxon(diff).pvalue)}


def mcnemar(correct_a: np.ndarray, correct_b: np.ndarray) -> dict[str, Any]:
    """McNemar's test on paired correctness; the variant used is reported in ``method``."""
    a_only = int(np.sum(correct_a & ~correct_b))
    b_only = int(np.sum(~correct_a & correct_b))
    discordant = a_only + b_only
    out: dict[str, Any] = {
        "both_correct": int(np.sum(correct_a & correct_b)),
        "a_only": a_only,
        "b_only": b_only,
        "both_wrong": int(np.sum(~correct_a & ~correct_b)),
    }
    if discordant == 0:
        return {**out, "method": "none (no discordant samples)", "statistic": None, "p": 1.0}
    if discordant < MCNEMAR_EXACT_BELOW:
        p = stats.binomtest(min(a_only, b_only), discordant, 0.5).pvalue
        return {**out, "method": "exact binomial", "statistic": min(a_only, b_only), "p": float(p)}
    statistic = max(abs(a_only - b_only) - 1, 0) ** 2 / discordant
    p = float(stats.chi2.sf(statistic, 1))
    return {**out, "method": "chi2 continuity-corrected", "statistic": statistic, "p": p}
