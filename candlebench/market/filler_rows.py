"""Rows of days a market did not trade, which some exports add by forward-filling."""

from __future__ import annotations

import pandas as pd

FILLER_REASONS = {
    "weekday": "not a trading weekday (data.weekdays)",
    "no_trade": "no stock traded that day: only zero volume or copies of the previous bar (a filled holiday)",
}


def drop_filler_rows(frame: pd.DataFrame, weekdays: tuple[int, ...]) -> tuple[pd.DataFrame, dict[str, int]]:
    """Rows of days the market did not trade, which some exports add by forward-filling: taken out
    (and counted) so they never become trading days — a "30-day" label would span fewer real days
    and cutoffs would fall on holidays. ``frame`` is sorted by code and date.

    A day is a trading day when some stock has a real bar on it: volume > 0 and not an exact copy
    of its previous bar. A copy alone proves nothing (an illiquid stock may trade one lot at the
    same price two days running, as PHN does in the committed slice), so copies on trading days stay.
    """
    columns = ["open", "high", "low", "close", "volume"]
    off_day = ~frame["date"].dt.day_of_week.isin(weekdays)
    previous = frame.groupby("code", sort=False)[columns].shift()
    copy = (frame[columns] == previous).all(axis=1)
    traded = frame.loc[~off_day & (frame["volume"] > 0) & ~copy, "date"].unique()
    no_trade = ~off_day & ~frame["date"].isin(traded)
    counts = {FILLER_REASONS["weekday"]: int(off_day.sum()), FILLER_REASONS["no_trade"]: int(no_trade.sum())}
    return frame[~off_day & ~no_trade], {k: v for k, v in counts.items() if v}
