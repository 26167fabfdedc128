"""Paired comparisons at a task's unit of analysis: the test, the interval and the multiplicity
adjustment every task's compare calls (docs/statistics.md).

Two runs answer the same samples, but samples that share a cluster are not independent: a cutoff
date's stocks share the market's move (forecast), a stock-window's three modalities share the window
(E2A), a chart's questions share the chart (reading). A test that counts samples as independent
(McNemar's over samples) rejects two runs of equal skill far more often than its level says
(tests/scoring/test_calibration.py shows it). Here the cluster is the unit:

* **A measure is a ratio of sums** over the samples: an accuracy (right over asked), a mean (values
  over the defined count), E2A's UCR_dir (response UCRs over directional answers), the mean IC
  (the dates' ICs over the dates). Each cluster carries its numerator and denominator sums, per run:
  arrays ``a`` and ``b`` of shape (..., K, 2) (leading axes: several comparisons at once).
* **Test: the paired sign-flip (randomisation) test over clusters.** Under "no difference" the two
  runs are exchangeable within each cluster, so swapping their sums in any set of clusters gives a
  difference ``D = ratio(b) - ratio(a)`` as likely as the observed one. Up to ``EXACT_MAX`` clusters
  every one of the 2^K swaps is enumerated (the exact randomisation p, which counts the observed one);
  beyond, the normal approximation of that same distribution: z = D / sqrt(sum_k v_k^2), v_k the
  cluster's first-order share of D under a swap. With equal denominators (two runs' verdicts on the
  same samples) z^2 is Durkalski et al.'s (2003) clustered McNemar statistic, sum_k(b_k - c_k)^2 over
  sum_k (b_k - c_k)^2 with b_k, c_k a cluster's discordant counts; with one sample a cluster it is
  McNemar's own (uncorrected).
* **Too few clusters, no p-value**: below ``MIN_CLUSTERS`` the exact test cannot reach small p
  (1/2^K) and the approximation is not trusted; the p is None and the report shows "–".
* **Interval**: the percentile cluster bootstrap, one draw of clusters for both runs
  (:func:`candlebench.scoring.bootstrap.resampled_sums`: the draws of its ``date_weights``).
* **Families**: Holm's step-down adjustment (:func:`holm`) over the tests of one table's family
  (modalities, questions, horizons, regimes, metrics).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from candlebench.scoring.bootstrap import CI_LEVEL, resampled_sums

MIN_CLUSTERS = 10  # fewer clusters: no p-value
EXACT_MAX = 16  # up to 2^16 swaps enumerated; more clusters: the normal approximation
METHOD_EXACT = "paired sign-flip test over clusters (exact, all 2^K swaps)"
METHOD_NORMAL = "paired sign-flip test over clusters (normal approximation; clustered McNemar for verdicts)"
TOO_FEW = f"fewer than {MIN_CLUSTERS} clusters: no p-value"
_CHUNK = 4_000_000  # array elements per block of the exact test, to bound its memory


@dataclass(frozen=True)
class Clusters:
    """Each sample's cluster (``codes``, 0..k-1 in the order of the key's values) and what a
    cluster is, in words (``unit``: "cutoff date", "stock-window", "chart", "sample")."""

    codes: np.ndarray
    unit: str

    @property
    def k(self) -> int:
        return int(self.codes.max()) + 1 if self.codes.size else 0

    def sums(self, values: np.ndarray) -> np.ndarray:
        """(k, T) per-cluster sums of the columns of ``values`` (n, T)."""
        values = np.asarray(values, float)
        values = values[:, None] if values.ndim == 1 else values
        return np.stack([np.bincount(self.codes, values[:, t], minlength=self.k) for t in range(values.shape[1])], axis=1)

    def subset(self, mask: np.ndarray) -> Clusters:
        """The clusters of the rows ``mask`` picks, renumbered 0..k'-1."""
        return Clusters(np.unique(self.codes[mask], return_inverse=True)[1].reshape(-1), self.unit)


def clusters(frame: pd.DataFrame, key: Sequence[str], unit: str) -> Clusters:
    """The clusters of ``frame``'s rows by the columns ``key`` (rows lacking a value: one cluster
    together); each row its own cluster when ``key`` is empty. A missing column is an error: treating
    its rows as independent would make every test too bold."""
    if not key:
        return Clusters(np.arange(len(frame)), "sample")
    missing = [c for c in key if c not in frame]
    if missing:
        raise ValueError(f"cannot cluster by {list(key)} ({unit}): no column {missing} (columns: {list(frame.columns)})")
    codes = np.zeros(len(frame), np.int64)
    for column in key:  # the key's columns combined in their sorted order, without a slow MultiIndex
        part, values = pd.factorize(frame[column], sort=True, use_na_sentinel=False)
        codes = codes * len(values) + part
    return Clusters(np.unique(codes, return_inverse=True)[1].reshape(-1), unit)


def ratio(sums: np.ndarray) -> np.ndarray:
    """numerator / denominator along the last axis; NaN where the denominator is 0."""
    num, den = sums[..., 0], sums[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


@functools.cache
def _swaps(k: int) -> np.ndarray:
    """(2^k, k): every subset of clusters as 0/1 rows (made once per k: every exact test of k clusters reads it)."""
    swaps = ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(float)
    swaps.flags.writeable = False
    return swaps


def sign_flip_p(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, str | None]:
    """Two-sided p of ``ratio(b) - ratio(a)`` (the module docstring's test) over the K clusters of
    ``a``, ``b`` (..., K, 2), and the method's name; NaN where the difference is undefined, all NaN
    (and method None) below ``MIN_CLUSTERS``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    k = a.shape[-2]
    total_a, total_b = a.sum(-2), b.sum(-2)
    d = ratio(total_b) - ratio(total_a)
    if k < MIN_CLUSTERS:
        return np.full(d.shape, np.nan), None
    if k <= EXACT_MAX:
        swaps = _swaps(k)
        lead = a.shape[:-2]
        gap = (a - b).reshape(-1, k, 2)  # what a swapped cluster moves from a's sums to b's
        sum_a, sum_b = total_a.reshape(-1, 1, 2), total_b.reshape(-1, 1, 2)
        flat_d = d.reshape(-1)
        p = np.empty(flat_d.shape)
        step = max(1, _CHUNK // (swaps.shape[0] * 2))
        for i in range(0, len(flat_d), step):
            part = slice(i, i + step)
            moved = swaps @ gap[part]  # (r, 2^K, 2)
            d_star = ratio(sum_b[part] + moved) - ratio(sum_a[part] - moved)
            bound = np.abs(flat_d[part])[:, None] * (1 - 1e-9) - 1e-12
            p[part] = (~(np.abs(d_star) < bound)).mean(-1)  # an undefined swap counts as extreme: conservative
        return np.where(np.isnan(d), np.nan, p.reshape(lead)), METHOD_EXACT
    from scipy.stats import norm

    den = (total_a[..., 1] + total_b[..., 1]) / 2
    pooled = ratio(total_a + total_b)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = ((b[..., 0] - a[..., 0]) - pooled[..., None] * (b[..., 1] - a[..., 1])) / den[..., None]
        se = np.sqrt(np.sum(v**2, axis=-1))
        p = np.where(se > 0, 2 * norm.sf(np.abs(d) / np.where(se > 0, se, 1.0)), np.where(np.abs(d) > 1e-12, 0.0, 1.0))
    return np.where(np.isnan(d), np.nan, p), METHOD_NORMAL


def percentile_intervals(replicates: np.ndarray, level: float = CI_LEVEL) -> np.ndarray:
    """(..., 2) percentile interval of the defined replicates along the last axis (NaN where none is)."""
    tail = (1.0 - level) / 2.0 * 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no defined replicate: NaN, which the caller reports as None
        return np.moveaxis(np.nanpercentile(replicates, [tail, 100.0 - tail], axis=-1), 0, -1)


def holm(p: Sequence[float | None]) -> list[float | None]:
    """Holm's (1979) step-down adjusted p-values of a family (None: no test, left out of the
    family). statsmodels' ``multipletests(method="holm")`` computes the same; it is not a
    dependency of candlebench for these five lines."""
    tested = [(v, i) for i, v in enumerate(p) if v is not None and not np.isnan(v)]
    out: list[float | None] = [None] * len(p)
    running = 0.0
    for rank, (v, i) in enumerate(sorted(tested)):
        running = max(running, min(1.0, (len(tested) - rank) * v))
        out[i] = running
    return out


def paired_ratio(a: np.ndarray, b: np.ndarray, unit: str, n_boot: int, seed: int) -> dict[str, Any]:
    """One measure's paired comparison from its clusters' (numerator, denominator) sums ``a``, ``b``
    (K, 2): each run's value, ``diff`` = b - a, its cluster-bootstrap ``ci`` (None without draws),
    the sign-flip ``p`` (None with fewer than MIN_CLUSTERS clusters, or an undefined difference),
    the ``method``, the cluster ``unit`` and ``n_clusters``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    va, vb = (float(ratio(x.sum(0))) for x in (a, b))
    diff = None if np.isnan(va) or np.isnan(vb) else vb - va
    p, method = sign_flip_p(a, b)
    ci = None
    if n_boot > 0 and len(a) and diff is not None:
        sums = resampled_sums(np.concatenate([a, b], axis=1), n_boot, seed)
        low, high = percentile_intervals(ratio(sums[:, 2:]) - ratio(sums[:, :2]))
        ci = None if np.isnan(low) else [float(low), float(high)]
    return {"a": None if np.isnan(va) else va, "b": None if np.isnan(vb) else vb, "diff": diff, "ci": ci,
            "p": None if np.isnan(p) else float(p), "method": method or TOO_FEW, "unit": unit, "n_clusters": len(a)}


def adjust(blocks: Sequence[dict | None]) -> None:
    """Holm over the ``p`` of ``blocks`` (one family), written beside each as ``p_holm``."""
    present = [b for b in blocks if b is not None]
    for block, adjusted in zip(present, holm([b.get("p") for b in present])):
        block["p_holm"] = adjusted
