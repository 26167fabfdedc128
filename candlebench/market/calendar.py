"""Dates on a market's trading calendar."""

from __future__ import annotations

import numpy as np
import pandas as pd


def every_nth_day(calendar: pd.DatetimeIndex, start: str | None, end: str | None, interval: int) -> pd.DatetimeIndex:
    """Every ``interval``-th trading day in [start, end) (None: the calendar's own bound), from the first."""
    in_window = np.ones(len(calendar), dtype=bool)
    if start is not None:
        in_window &= calendar >= pd.Timestamp(start)
    if end is not None:
        in_window &= calendar < pd.Timestamp(end)
    return calendar[in_window][::interval]
