"""Bars as a model may see them: history strictly before a cutoff, weekly aggregation, moving averages.

Every function here takes the history already cut at the cutoff, so nothing dated on or after the
cutoff can reach a chart, a text prompt or a feature built from these bars.
"""

from __future__ import annotations

import pandas as pd

OHLCV = ["open", "high", "low", "close", "volume"]
FREQS = ("daily", "weekly")


def history_before(stock_bars: pd.DataFrame, cutoff: pd.Timestamp) -> pd.DataFrame:
    """The stock's bars dated strictly before ``cutoff``: the cutoff rule, the one guard against
    look-ahead that every chart, text block and feature passes through."""
    return stock_bars[stock_bars["date"] < cutoff].reset_index(drop=True)


def weekly(daily: pd.DataFrame) -> pd.DataFrame:
    """Standard weekly aggregation: first open, max high, min low, last close, summed volume.

    Weeks run Monday to Sunday; each weekly bar is dated by its last trading day, so a week cut by
    the cutoff is labelled by the last day before the cutoff, never by a later Friday.
    """
    if daily.empty:
        return daily[["date", *OHLCV]].copy()
    week = daily["date"].dt.to_period("W-SUN")
    agg = {"date": "last", "open": "first", "high": "max", "low": "min", "close": "last", "volume": "sum"}
    if "amount" in daily:
        agg["amount"] = "sum"
    return daily.groupby(week, sort=True).agg(agg).reset_index(drop=True)


def with_moving_averages(bars: pd.DataFrame, windows: tuple[int, ...]) -> pd.DataFrame:
    """Add ``ma<w>`` columns: simple moving averages of close, NaN until ``w`` bars exist."""
    out = bars.copy()
    for w in windows:
        out[f"ma{w}"] = out["close"].rolling(w, min_periods=w).mean()
    return out


def chart_bars(
    history: pd.DataFrame, freq: str, ma_windows: tuple[int, ...], max_bars: int
) -> pd.DataFrame:
    """The last ``max_bars`` bars of ``freq`` with MAs computed on the whole history before them."""
    if freq not in FREQS:
        raise ValueError(f"unknown chart frequency {freq!r}; choose from {FREQS}")
    series = history if freq == "daily" else weekly(history)
    return with_moving_averages(series, ma_windows).tail(max_bars).reset_index(drop=True)
