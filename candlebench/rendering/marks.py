"""Marked bars: a letter drawn over chosen candles, so that a question can name a bar by what the
chart shows rather than by a count of candles from the right (misplacing a bar by one candle
changed the right answer of nearly half the questions about marked bars).

A chart spec with ``marks`` > 0 marks that many bars of each chart, lettered A, B, ... oldest
first, chosen by a seeded draw from the stock, the cutoff and the time frame (the same on every
machine and in every run). Only the chart-reading task marks its charts (its own chart design);
every other spec has ``marks = 0`` and draws as before. The reading task asks which bars are
marked through :func:`marked_bars`, the same function the renderer draws them by.

A weekly bar of the week the cutoff falls in is a part of a week (its volume and its range are a
few days'): it is never marked (:func:`partial_last_week`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

LETTERS = tuple("ABCDEFGH")
MARK_COLUMN = "mark"  # the bars' column the renderer reads: a bar's letter, "" for none


def partial_last_week(freq: str, last: pd.Timestamp, cutoff: pd.Timestamp) -> bool:
    """The weekly chart's last bar is a week cut short by the cutoff: the cutoff falls in the
    same Monday-to-Sunday week (market/bars.py's weeks), so trading days of it are still to come."""
    return freq == "weekly" and pd.Timestamp(last).to_period("W-SUN") == pd.Timestamp(cutoff).to_period("W-SUN")


def marked_bars(n: int, code: str, cutoff: pd.Timestamp, freq: str, count: int, partial_last: bool = False
                ) -> tuple[int, ...]:
    """``count`` distinct bars of the ``n`` drawn (a partial last week excluded), oldest first;
    () where fewer are drawn."""
    candidates = n - 1 if partial_last else n
    if count <= 0 or candidates < count:
        return ()
    if count > len(LETTERS):
        raise ValueError(f"marks={count}: at most {len(LETTERS)} bars can be lettered")
    seed = f"{code}|{pd.Timestamp(cutoff):%Y-%m-%d}|{freq}"
    rng = np.random.default_rng(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))
    return tuple(sorted(int(i) for i in rng.choice(candidates, size=count, replace=False)))


def with_marks(bars: pd.DataFrame, code: str, cutoff: pd.Timestamp, freq: str, count: int) -> pd.DataFrame:
    """``bars`` with the :data:`MARK_COLUMN` the renderer draws letters from."""
    partial = len(bars) > 0 and partial_last_week(freq, bars["date"].iloc[-1], cutoff)
    letters = [""] * len(bars)
    for letter, i in zip(LETTERS, marked_bars(len(bars), code, cutoff, freq, count, partial)):
        letters[i] = letter
    return bars.assign(**{MARK_COLUMN: letters})
