"""Samples of the forecast task: one row per (task, code, cutoff) with labels and evaluation groups.

Cutoff rule (every task's): a sample's inputs hold only bars dated strictly before its cutoff. Cutoffs
are trading days of the market calendar, every ``interval`` trading days from the window start.

Labels, chosen where the paper is silent:

* ``T0`` is the market's last trading day before the cutoff and the horizon counts *market*
  trading days from it: ``r_H = close(T0 + H) / close(T0) - 1``, where ``close(d)`` is the stock's
  last close on or before ``d``. For a stock that trades every day this is exactly
  ``close[t0 + H] / close[t0] - 1``; for a stock suspended inside the horizon its price simply stands
  still, so every stock of one cutoff is measured over the same calendar span (which the
  cross-sectional IC assumes).
* A sample is dropped, and counted under its reason, when the stock has fewer than ``min_bars``
  daily bars before the cutoff, has not traded in the ``max_stale_days`` trading days before it
  (suspended at the cutoff), or when any horizon runs past the market's data or past the stock's
  last bar (delisted or data ends).

Evaluation groups, which like the labels look past the cutoff and are never model inputs:

* ``regime`` of the cutoff day (paper §5.4.1): ``bull`` if more than ``regime_threshold`` of the
  stocks that traded that day closed above their previous close, ``bear`` if more than that share
  closed below, else ``sideways``.
* ``continuous_rise`` / ``continuous_fall`` of the stock (paper §5.4.2, "more than 70% rising /
  falling days during the test period"). Read literally, as daily bars, the group is empty on every
  real market (a stock that closes up on 70% of its days for two years does not exist in HS300,
  S&P 500 or PSE data), so the default reading (``trend_by="cutoffs"``) counts the stock's *test
  cutoffs* instead: more than ``trend_threshold`` of them have a positive / negative realised
  ``r_<trend_horizon>`` label, the quantity the model is asked about. ``trend_by="days"`` keeps the
  daily-bar reading.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from candlebench.market.calendar import every_nth_day
from candlebench.market.market import Market
from candlebench.tasks.forecast.settings import ForecastSamples

INPUT_COLUMNS = ("sample_id", "task", "market", "code", "cutoff", "t0", "n_bars")
GROUP_COLUMNS = ("regime", "market_up_ratio", "continuous_rise", "continuous_fall")


def label_columns(horizons: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(f"r_{h}" for h in horizons)


@dataclass(frozen=True)
class SampleSet:
    frame: pd.DataFrame
    cutoffs: pd.DatetimeIndex
    dropped: dict[str, int]


def sample_id(task: str, code: str, cutoff: pd.Timestamp) -> str:
    return hashlib.sha256(f"{task}|{code}|{cutoff:%Y-%m-%d}".encode()).hexdigest()[:16]


def cutoff_dates(calendar: pd.DatetimeIndex, rules: ForecastSamples) -> pd.DatetimeIndex:
    return every_nth_day(calendar, rules.start, rules.end, rules.interval)


def history_spec(calendar: pd.DatetimeIndex, rules: ForecastSamples, train_start: str | None) -> ForecastSamples | None:
    """The cutoffs before the test window on the test grid, stepped back from ``rules.start`` by
    ``rules.interval`` trading days down to ``train_start`` (None = the start of the data): the training
    history of a walk-forward baseline (the paper trains XGBoost on data from 2015, tests on
    2023-2024). None when the test window starts with the data."""
    if rules.start is None:
        return None
    first_test = int(calendar.searchsorted(pd.Timestamp(rules.start), side="left"))
    floor = 0 if train_start is None else int(calendar.searchsorted(pd.Timestamp(train_start), side="left"))
    steps = (first_test - floor) // rules.interval
    if steps < 1:
        return None
    start = calendar[first_test - steps * rules.interval]
    return replace(rules, start=f"{start:%Y-%m-%d}", end=rules.start)


def training_spec(
    calendar: pd.DatetimeIndex, rules: ForecastSamples, train_start: str | None, stride: int, last_cutoff: pd.Timestamp
) -> ForecastSamples | None:
    """The training days of a walk-forward baseline: every ``stride``-th trading day from
    ``train_start`` (None = the start of the data) up to ``last_cutoff`` (exclusive), on a grid through
    the first test cutoff, so ``stride = rules.interval`` gives exactly :func:`history_spec`'s cutoffs
    followed by the test cutoffs. ``train_start`` floors the history only: the earlier test windows
    are always training days. The samples of these days follow the test samples' own rules
    (``min_bars``, staleness, labels), since only ``start``, ``end`` and ``interval`` change. None when
    no training day precedes ``last_cutoff``."""
    if stride < 1:
        raise ValueError(f"baseline train_stride must be >= 1 trading day, got {stride}")
    anchor = 0 if rules.start is None else int(calendar.searchsorted(pd.Timestamp(rules.start), side="left"))
    floor = 0 if train_start is None else int(calendar.searchsorted(pd.Timestamp(train_start), side="left"))
    floor = min(floor, anchor)
    first = anchor - ((anchor - floor) // stride) * stride  # the grid's first day at or after the floor
    if first >= len(calendar) or calendar[first] >= pd.Timestamp(last_cutoff):
        return None
    return replace(rules, start=f"{calendar[first]:%Y-%m-%d}", end=f"{pd.Timestamp(last_cutoff):%Y-%m-%d}",
                   interval=stride)


def build_samples(market: Market, rules: ForecastSamples, task: str = "forecast") -> SampleSet:
    """The samples of ``task`` (its sample ids' prefix) under ``rules``, the task's ``task.samples``."""
    cal = market.calendar
    close = market.bars.pivot(index="date", columns="code", values="close").reindex(cal)
    codes = close.columns.to_numpy()
    traded = close.notna().to_numpy()
    filled = close.ffill().to_numpy()
    n_bars = traded.cumsum(axis=0)
    positions = np.arange(len(cal))[:, None]
    last_pos = pd.DataFrame(np.where(traded, positions, np.nan)).ffill().to_numpy()
    final_pos = np.where(traded.any(axis=0), len(cal) - 1 - np.argmax(traded[::-1], axis=0), -1)
    cutoffs = cutoff_dates(cal, rules)
    dropped: Counter[str] = Counter()
    rows = []
    for cutoff in cutoffs:
        k = cal.get_loc(cutoff)
        if k == 0:
            dropped["no bars before cutoff"] += len(codes)
            continue
        up_ratio, regime = _regime(filled[k - 1], close.iloc[k].to_numpy(), rules.regime_threshold)
        bars_before = n_bars[k - 1]
        staleness = (k - 1) - last_pos[k - 1]
        targets = {h: k - 1 + h for h in rules.horizons}
        for j, code in enumerate(codes):
            reason = _drop_reason(
                int(bars_before[j]), staleness[j], final_pos[j], targets, len(cal), rules
            )
            if reason is not None:
                dropped[reason] += 1
                continue
            row = {
                "sample_id": sample_id(task, code, cutoff),
                "task": task,
                "market": market.name,
                "code": code,
                "cutoff": cutoff,
                "t0": cal[int(last_pos[k - 1, j])],
                "n_bars": int(bars_before[j]),
            }
            base = filled[k - 1, j]
            for h, target in targets.items():
                row[f"r_{h}"] = filled[target, j] / base - 1.0
            row.update(regime=regime, market_up_ratio=up_ratio)
            rows.append(row)

    columns = [*INPUT_COLUMNS, *label_columns(rules.horizons), *GROUP_COLUMNS]
    frame = pd.DataFrame(rows, columns=columns)
    trend = _trend_by_days(close, rules) if rules.trend_by == "days" else _trend_by_cutoffs(frame, rules)
    for column in ("continuous_rise", "continuous_fall"):
        frame[column] = frame["code"].map(trend[column]).fillna(False)
    frame = frame.astype({"n_bars": "int64", "continuous_rise": bool, "continuous_fall": bool})
    frame = frame.sort_values(["cutoff", "code"], kind="stable").reset_index(drop=True)
    return SampleSet(frame=frame, cutoffs=cutoffs, dropped=dict(sorted(dropped.items())))


def _drop_reason(
    bars_before: int,
    staleness: float,
    final_pos: int,
    targets: dict[int, int],
    calendar_len: int,
    rules: ForecastSamples,
) -> str | None:
    if bars_before == 0:
        return "no bars before cutoff"
    if bars_before < rules.min_bars:
        return f"fewer than {rules.min_bars} bars before cutoff"
    if staleness > rules.max_stale_days:
        return f"no trade in the {rules.max_stale_days} trading days before cutoff"
    if max(targets.values()) >= calendar_len:
        return "label horizon past the end of the market data"
    if max(targets.values()) > final_pos:
        return "label horizon past the stock's last bar"
    return None


def _regime(prev_close: np.ndarray, day_close: np.ndarray, threshold: float) -> tuple[float, str]:
    valid = ~np.isnan(prev_close) & ~np.isnan(day_close)
    if not valid.any():
        return float("nan"), "unknown"
    change = day_close[valid] - prev_close[valid]
    up, down = float(np.mean(change > 0)), float(np.mean(change < 0))
    if up > threshold:
        return up, "bull"
    if down > threshold:
        return up, "bear"
    return up, "sideways"


def _trend_by_cutoffs(frame: pd.DataFrame, rules: ForecastSamples) -> pd.DataFrame:
    """Continuous rise / fall per stock: the share of its samples with a positive / negative label."""
    label = frame[f"r_{rules.trend_horizon}"]
    by_code = pd.DataFrame({"up": label > 0, "down": label < 0, "code": frame["code"]}).groupby("code")
    return pd.DataFrame({
        "continuous_rise": by_code["up"].mean() > rules.trend_threshold,
        "continuous_fall": by_code["down"].mean() > rules.trend_threshold,
    })


def _trend_by_days(close: pd.DataFrame, rules: ForecastSamples) -> pd.DataFrame:
    """Continuous rise / fall per stock over the sample window (its own trading days)."""
    flags = {}
    for code in close.columns:
        series = close[code].dropna()
        change = series.diff()
        in_window = np.ones(len(series), dtype=bool)
        if rules.start is not None:
            in_window &= series.index >= pd.Timestamp(rules.start)
        if rules.end is not None:
            in_window &= series.index < pd.Timestamp(rules.end)
        window = change[in_window].dropna()
        rise = float((window > 0).mean()) if len(window) else 0.0
        fall = float((window < 0).mean()) if len(window) else 0.0
        flags[code] = {
            "continuous_rise": rise > rules.trend_threshold,
            "continuous_fall": fall > rules.trend_threshold,
        }
    return pd.DataFrame.from_dict(flags, orient="index", columns=["continuous_rise", "continuous_fall"])


def regime_days(market: Market, threshold: float) -> dict[str, int]:
    """The regime of every trading day of the market after its first (the paper's Table 1), by the
    rule the cutoff days use."""
    close = market.bars.pivot(index="date", columns="code", values="close").reindex(market.calendar)
    filled = close.ffill().to_numpy()
    today = close.to_numpy()
    counts = Counter(_regime(filled[k - 1], today[k], threshold)[1] for k in range(1, len(market.calendar)))
    return {name: int(counts.get(name, 0)) for name in ("bull", "bear", "sideways", "unknown") if name != "unknown" or counts.get(name)}


def summarize(samples: SampleSet, market: Market, rules: ForecastSamples, task: str = "forecast") -> dict:
    frame = samples.frame
    return {
        "task": task,
        "samples": len(frame),
        # The cutoffs with a sample, as the report's header counts them; the grid's others lost
        # every stock (too few bars, no realised label) and are counted apart.
        "cutoffs": int(frame["cutoff"].nunique()),
        "cutoffs_without_samples": len(samples.cutoffs) - int(frame["cutoff"].nunique()),
        "first_cutoff": None if frame.empty else f"{frame['cutoff'].min():%Y-%m-%d}",
        "last_cutoff": None if frame.empty else f"{frame['cutoff'].max():%Y-%m-%d}",
        "per_market": {str(k): int(v) for k, v in frame["market"].value_counts().sort_index().items()},
        "per_regime": {str(k): int(v) for k, v in frame["regime"].value_counts().sort_index().items()},
        "regime_days": regime_days(market, rules.regime_threshold),
        "stocks": int(frame["code"].nunique()),
        "continuous_rise_stocks": int(frame.loc[frame["continuous_rise"], "code"].nunique()),
        "continuous_fall_stocks": int(frame.loc[frame["continuous_fall"], "code"].nunique()),
        "dropped_samples": samples.dropped,
        "data": market.report.as_dict(),
    }
