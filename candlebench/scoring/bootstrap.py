"""Cluster bootstrap, vectorised as weight matrices, over any cluster key: cutoff dates (their
stocks share the market's move), stock-windows, charts, or each sample alone.

Samples of one cluster have correlated errors; resampling rows would treat them as independent and
give intervals that are far too narrow. Every interval in ``scoring`` therefore resamples whole
clusters (which key a task's comparison uses: :mod:`candlebench.scoring.clustered`). Because a
cluster's statistics (a date's IC, its count of correct directions) do not change when it is drawn,
a bootstrap replicate is fully described by how many times each cluster was drawn, and every
replicate statistic becomes a weighted sum: one matrix product instead of a Python loop over 1000
replicates.
"""

from __future__ import annotations

import numpy as np

CI_LEVEL = 0.95
_BLOCK = 4_000_000  # draws per block of resampled_sums, to bound its memory on studies of many clusters


def date_weights(n_dates: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_dates) counts: how often each cluster (a date, or any other) is drawn in each
    replicate (draws with replacement).

    Deterministic given ``seed``; the same matrix may be applied to several statistics so their
    intervals come from the same resampled worlds.
    """
    return _counts(np.random.default_rng(seed), n_boot, n_dates).astype(float)


def _counts(rng: np.random.Generator, rows: int, k: int) -> np.ndarray:
    """(rows, k) counts of k draws with replacement among k clusters, a row per replicate."""
    draws = rng.integers(0, k, size=(rows, k))
    return np.bincount((draws + (np.arange(rows) * k)[:, None]).ravel(), minlength=rows * k).reshape(rows, k)


def resampled_sums(terms: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, T) sums of ``terms`` (K, T) over bootstrap draws of K clusters with replacement:
    ``date_weights(K, n_boot, seed) @ terms``, drawn and summed in blocks so that a study of many
    clusters needs no (n_boot, K) matrix."""
    k = terms.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, terms.shape[1]))
    step = max(1, _BLOCK // max(k, 1))
    for i in range(0, n_boot, step):
        rows = min(step, n_boot - i)
        out[i:i + rows] = _counts(rng, rows, k) @ terms
    return out


def weighted_ratio(weights: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Per replicate sum(w * numerator) / sum(w * denominator); NaN where the denominator sums to 0."""
    num = weights @ numerator
    den = weights @ denominator
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def weighted_mean_of_defined(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per replicate mean of ``values`` over the drawn dates where it is defined (not NaN).

    A skipped date (undefined IC) can be drawn but contributes nothing, exactly as it contributes
    nothing to the point estimate.
    """
    defined = ~np.isnan(values)
    return weighted_ratio(weights, np.where(defined, values, 0.0), defined.astype(float))


def percentile_ci(replicates: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float] | None:
    """Percentile interval of the replicates that are defined; None when none is."""
    finite = replicates[~np.isnan(replicates)]
    if finite.size == 0:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)
