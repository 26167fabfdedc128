"""Numerical features for the XGBoost baseline, built only from the bars a chart of the sample shows.

Paper, Appendix A: for each (stock, cutoff) a fixed-length window of daily and of weekly OHLCV bars
is cut at the cutoff and turned into numbers, aligned with the same cutoffs and labels as the charts.
Here the windows are the charts' own: the last ``WINDOW`` (50) daily bars and the last 50 weekly
bars of the history strictly before the cutoff, with the MA5 / MA20 / MA90 the charts draw
(computed on the full history, so they only need the last 90 + ``SLOPE_LAG`` bars).

Features, each once on daily bars (prefix ``d_``) and once on weekly bars (prefix ``w_``); "bar" is a
day or a week, ``c, o, h, l, v`` the last bar's close, open, high, low, volume:

* ``ret_{1,5,10,20,50}`` — ``c / close k bars earlier - 1``.
* ``close_ma{5,20,90}`` — ``c / MA - 1``: price position against each moving average.
* ``ma5_ma20``, ``ma20_ma90`` — ``MA_short / MA_long - 1``: the crossovers.
* ``ma{5,20,90}_slope`` — ``MA now / MA SLOPE_LAG bars earlier - 1``.
* ``vol20``, ``vol50`` — standard deviation of bar-to-bar returns over the last 20 / 50 bars.
* ``range_mean`` — mean of ``(high - low) / close`` over the window; ``range_last`` the last bar's.
* ``pos_in_range`` — where ``c`` sits between the window's lowest low (0) and highest high (1).
* ``volume_rel1``, ``volume_rel5`` — last bar's / last 5 bars' mean volume over the window's mean.
* ``body_last``, ``upper_wick_last``, ``lower_wick_last`` — the last candle's signed body
  ``(c - o)``, upper wick and lower wick, each as a share of its ``high - low``.
* ``body_mean5`` — mean signed body share of the last 5 candles.
* ``up_share5``, ``up_share50`` — share of rising candles (close > open) in the last 5 / 50 bars.
* ``gap_last`` — ``o / previous close - 1``.

A feature is NaN unless every bar it needs exists (short history: xgboost handles missing values),
and NaN where its denominator is zero, except candle shares: a flat candle (high = low, common on
thinly traded stocks) has body and wick shares 0.

Weekly bars follow :func:`candlebench.market.bars.weekly` (Monday–Sunday weeks, first open, max high, min low,
last close, summed volume); the week holding the cutoff is cut at the cutoff, exactly as the chart's
last weekly candle is. To vectorise, week-to-date aggregates are computed for every daily bar: the
weekly series as of daily bar ``i`` is the completed weeks before ``i``'s week plus the week-to-date
bar at ``i``, so nothing dated after bar ``i`` enters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

WINDOW = 50
MA_WINDOWS = (5, 20, 90)
RETURN_LAGS = (1, 5, 10, 20, 50)
SLOPE_LAG = 5
# Bars a sample's features can reach back: MA90 five bars ago needs 95 closes.
DEPTH = max(max(MA_WINDOWS) + SLOPE_LAG, max(RETURN_LAGS) + 1, WINDOW + 1)
FIELDS = ("open", "high", "low", "close", "volume")
FREQ_PREFIXES = {"daily": "d_", "weekly": "w_"}
# Bounds peak memory: each chunk holds 2 x 5 matrices of CHUNK x DEPTH floats.
CHUNK = 8192


def feature_names() -> list[str]:
    """The feature columns in table order."""
    per_freq = [
        *(f"ret_{k}" for k in RETURN_LAGS),
        *(f"close_ma{w}" for w in MA_WINDOWS),
        "ma5_ma20",
        "ma20_ma90",
        *(f"ma{w}_slope" for w in MA_WINDOWS),
        "vol20",
        "vol50",
        "range_mean",
        "range_last",
        "pos_in_range",
        "volume_rel1",
        "volume_rel5",
        "body_last",
        "upper_wick_last",
        "lower_wick_last",
        "body_mean5",
        "up_share5",
        "up_share50",
        "gap_last",
    ]
    return [p + name for p in FREQ_PREFIXES.values() for name in per_freq]


def features_for(history: pd.DataFrame) -> dict[str, float]:
    """Features of one stock's history (the caller passes ``history_before(stock, cutoff)``)."""
    if history.empty:
        return dict.fromkeys(feature_names(), float("nan"))
    bars = history.assign(code="_") if "code" not in history else history
    table = _features_at(bars.reset_index(drop=True), np.array([len(bars) - 1]))
    return {name: float(table[name][0]) for name in feature_names()}


def feature_table(samples: pd.DataFrame, bars: pd.DataFrame) -> pd.DataFrame:
    """Features of every sample (``code``, ``cutoff``), indexed by ``sample_id``.

    ``bars`` is a market's long table (``Market.bars``: sorted by code and date). Each sample sees
    only its stock's bars dated strictly before its cutoff; one with none gets all-NaN features.
    """
    bars = bars.sort_values(["code", "date"], kind="stable").reset_index(drop=True)
    last = _last_bar_before(samples, bars)
    out = np.full((len(samples), len(feature_names())), np.nan)
    has = np.flatnonzero(last >= 0)
    for start in range(0, len(has), CHUNK):
        rows = has[start : start + CHUNK]
        table = _features_at(bars, last[rows])
        out[rows] = np.column_stack([table[name] for name in feature_names()])
    index = pd.Index(samples["sample_id"].to_numpy(), name="sample_id")
    return pd.DataFrame(out, index=index, columns=feature_names())


def _last_bar_before(samples: pd.DataFrame, bars: pd.DataFrame) -> np.ndarray:
    """Row of ``bars`` holding each sample's last bar before its cutoff, -1 where there is none."""
    last = np.full(len(samples), -1, dtype=np.int64)
    codes = bars["code"].to_numpy()
    dates = bars["date"].to_numpy()
    sample_codes = samples["code"].to_numpy()
    cutoffs = samples["cutoff"].to_numpy(dtype="datetime64[ns]")
    for code in np.unique(sample_codes):
        mine = np.flatnonzero(sample_codes == code)
        rows = np.flatnonzero(codes == code)
        if len(rows) == 0:
            continue
        before = np.searchsorted(dates[rows], cutoffs[mine], side="left")
        last[mine] = np.where(before > 0, rows[0] + before - 1, -1)
    return last


def _features_at(bars: pd.DataFrame, positions: np.ndarray) -> dict[str, np.ndarray]:
    """Features as of each row in ``positions`` of ``bars`` (sorted by code, date), from rows <= it."""
    daily, weekly = _windows(bars, positions)
    table: dict[str, np.ndarray] = {}
    for freq, matrices in (("daily", daily), ("weekly", weekly)):
        prefix = FREQ_PREFIXES[freq]
        table.update({prefix + k: v for k, v in _matrix_features(*matrices).items()})
    return table


def _windows(
    bars: pd.DataFrame, positions: np.ndarray
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """Daily and weekly ``(len(positions), DEPTH)`` matrices per field, oldest bar first, NaN-padded.

    Row ``i`` of the weekly matrices is the completed weeks before the week of ``positions[i]``
    followed by that week aggregated up to ``positions[i]`` only.
    """
    codes = bars["code"].to_numpy()
    new_code = np.r_[True, codes[1:] != codes[:-1]]
    stock_first = np.maximum.accumulate(np.where(new_code, np.arange(len(bars)), 0))

    dates = bars["date"].dt.normalize()
    week = (dates - pd.to_timedelta(dates.dt.day_of_week, unit="D")).to_numpy()  # its Monday
    new_week = new_code | np.r_[True, week[1:] != week[:-1]]
    week_id = np.cumsum(new_week) - 1  # global index of each row's (stock, week)
    to_date = _week_to_date(bars, week_id)
    week_end = np.r_[np.flatnonzero(new_week)[1:] - 1, len(bars) - 1]
    completed = {f: to_date[f][week_end] for f in FIELDS}

    offsets = np.arange(DEPTH - 1, -1, -1)
    day_rows = positions[:, None] - offsets
    day_ok = day_rows >= stock_first[positions][:, None]
    week_rows = week_id[positions][:, None] - offsets
    week_ok = week_rows >= week_id[stock_first[positions]][:, None]
    daily, weekly = [], []
    for f in FIELDS:
        values = bars[f].to_numpy(dtype=np.float64)
        daily.append(np.where(day_ok, values[np.where(day_ok, day_rows, 0)], np.nan))
        w = np.where(week_ok, completed[f][np.where(week_ok, week_rows, 0)], np.nan)
        w[:, -1] = to_date[f][positions]
        weekly.append(w)
    return tuple(daily), tuple(weekly)


def _week_to_date(bars: pd.DataFrame, week_id: np.ndarray) -> dict[str, np.ndarray]:
    """Each daily row's week aggregated from the week's first trading day up to that row."""
    grouped = bars[list(FIELDS)].astype(np.float64).groupby(week_id, sort=False)
    return {
        "open": grouped["open"].transform("first").to_numpy(),
        "high": grouped["high"].cummax().to_numpy(),
        "low": grouped["low"].cummin().to_numpy(),
        "close": bars["close"].to_numpy(dtype=np.float64),
        "volume": grouped["volume"].cumsum().to_numpy(),
    }


def _matrix_features(
    o: np.ndarray, h: np.ndarray, low: np.ndarray, c: np.ndarray, v: np.ndarray
) -> dict[str, np.ndarray]:
    """Features of ``(n, DEPTH)`` bar matrices (last column = last bar before the cutoff).

    Plain (not nan-) reductions on purpose: a bar missing from a feature's span makes it NaN.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        last = c[:, -1]
        feats = {f"ret_{k}": last / c[:, -1 - k] - 1.0 for k in RETURN_LAGS}
        ma_now = {w: c[:, -w:].mean(axis=1) for w in MA_WINDOWS}
        ma_before = {w: c[:, -w - SLOPE_LAG : -SLOPE_LAG].mean(axis=1) for w in MA_WINDOWS}
        feats.update({f"close_ma{w}": last / ma_now[w] - 1.0 for w in MA_WINDOWS})
        feats["ma5_ma20"] = ma_now[5] / ma_now[20] - 1.0
        feats["ma20_ma90"] = ma_now[20] / ma_now[90] - 1.0
        feats.update({f"ma{w}_slope": ma_now[w] / ma_before[w] - 1.0 for w in MA_WINDOWS})

        step = c[:, 1:] / c[:, :-1] - 1.0
        feats["vol20"] = step[:, -20:].std(axis=1, ddof=1)
        feats["vol50"] = step[:, -WINDOW:].std(axis=1, ddof=1)
        span = h - low
        win = slice(-WINDOW, None)
        feats["range_mean"] = (span[:, win] / c[:, win]).mean(axis=1)
        feats["range_last"] = span[:, -1] / last
        lowest, highest = low[:, win].min(axis=1), h[:, win].max(axis=1)
        feats["pos_in_range"] = (last - lowest) / (highest - lowest)
        mean_volume = v[:, win].mean(axis=1)
        feats["volume_rel1"] = v[:, -1] / mean_volume
        feats["volume_rel5"] = v[:, -5:].mean(axis=1) / mean_volume
        body = _share(c - o, span)
        feats["body_last"] = body[:, -1]
        feats["upper_wick_last"] = _share(h[:, -1] - np.maximum(o[:, -1], last), span[:, -1])
        feats["lower_wick_last"] = _share(np.minimum(o[:, -1], last) - low[:, -1], span[:, -1])
        feats["body_mean5"] = body[:, -5:].mean(axis=1)
        rising = np.where(np.isnan(c) | np.isnan(o), np.nan, (c > o).astype(np.float64))
        feats["up_share5"] = rising[:, -5:].mean(axis=1)
        feats["up_share50"] = rising[:, win].mean(axis=1)
        feats["gap_last"] = o[:, -1] / c[:, -2] - 1.0
    return {k: np.where(np.isfinite(x), x, np.nan) for k, x in feats.items()}


def _share(part: np.ndarray, span: np.ndarray) -> np.ndarray:
    """``part`` as a share of the candle's range; 0 for a flat candle (high = low: no body, no wick)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span == 0, 0.0, part / span)
