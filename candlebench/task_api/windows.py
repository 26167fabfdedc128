"""Evaluation windows shared by the tasks that ask about one stock on one date (E2A-style,
captioning): every ``interval`` trading days of the market calendar in [start, end) (the forecast
task's grid, on :mod:`candlebench.market.calendar`), each stock's bars strictly before the date. A stock is skipped at a date, and the
reason counted, when it has fewer than ``min_bars`` bars before it or has not traded in the
``max_stale_days`` trading days before it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Collection, Iterator

import numpy as np
import pandas as pd

from candlebench.market.market import Market
from candlebench.market.calendar import every_nth_day


@dataclass(frozen=True)
class Window:
    code: str
    date: pd.Timestamp
    bars: pd.DataFrame  # the stock's bars; the first ``n`` are strictly before ``date``
    n: int

    @property
    def history(self) -> pd.DataFrame:
        return self.bars.iloc[: self.n].reset_index(drop=True)


def evaluation_windows(market: Market, start: str | None, end: str | None, interval: int, min_bars: int,
                       max_stale_days: int, dropped: Counter[str], codes: Collection[str] | None = None
                       ) -> tuple[pd.DatetimeIndex, Iterator[Window]]:
    """The evaluation dates and, stock by stock (code order), each stock's usable windows; only
    the stocks ``codes`` when given (the market's other stocks still make its calendar)."""
    cal = market.calendar
    dates = every_nth_day(cal, start, end, interval)

    def windows() -> Iterator[Window]:
        for code, bars in market.bars.groupby("code", sort=True):
            if codes is not None and code not in codes:
                continue
            bars = bars.reset_index(drop=True)
            days = bars["date"].to_numpy(dtype="datetime64[ns]")
            for date in dates:
                n = int(np.searchsorted(days, date.to_datetime64(), side="left"))
                if n < min_bars:
                    dropped[f"fewer than {min_bars} bars before the date"] += 1
                    continue
                stale = cal.get_loc(date) - 1 - int(cal.searchsorted(days[n - 1]))
                if stale > max_stale_days:
                    dropped[f"no trade in the {max_stale_days} trading days before the date"] += 1
                    continue
                yield Window(str(code), date, bars, n)

    return dates, windows()
