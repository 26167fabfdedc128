"""Market data: load a long OHLCV table (CSV or Parquet), validate it, report every defect.

The canonical table has one row per stock and trading day, columns ``code, date, open, high, low,
close, volume[, amount]``, sorted by (code, date) and unique on it.

Suspended days: exporters either omit them (TuShare) or write a row with zero volume (the PSE demo
data, some Yahoo series). Zero-volume rows are taken out of the stock's bars, because a bar that
did not trade carries no price information, but their dates stay in the market's trading calendar
(``Market.calendar``), so both encodings of a suspension give the same bars and the same
labels.

Here the :class:`Market` and its load; each step has a module of its own: reading a file
(:mod:`.read`, its layout in :mod:`.layouts`, its dates in :mod:`.dates`), the defects of single
rows (:mod:`.defects`), the rows of days nobody traded (:mod:`.filler_rows`), back-adjustment
(:mod:`.adjustment`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from candlebench.market.adjustment import ADJUST, back_adjust, fill_absent_factors
from candlebench.market.defects import Defect, MarketDataError, find_defects, summarize_defects
from candlebench.market.filler_rows import drop_filler_rows
from candlebench.market.layouts import CANONICAL
from candlebench.market.read import read_table


class OnDefect(str, Enum):
    FAIL = "fail"
    DROP = "drop"


@dataclass(frozen=True)
class LoadReport:
    files: tuple[str, ...]
    rows: int
    stocks: int
    suspended_rows: int
    dropped: dict[str, tuple[Defect, ...]] = field(default_factory=dict)
    # Rows taken out as not being trading days (forward-filled copies, non-trading weekdays), by reason.
    filler_rows: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what was normalised on the way in (time zones, times of day)
    # Files without an adjustment factor column (data.adjust=auto): their prices are used as exported.
    unadjusted_files: tuple[str, ...] = ()
    # Some stocks back-adjusted from a factor, others as exported (the notes name them).
    mixed_adjustment: bool = False

    def as_dict(self) -> dict:
        return {
            "files": list(self.files),
            "rows": self.rows,
            "stocks": self.stocks,
            "suspended_rows": self.suspended_rows,
            "filler_rows": dict(self.filler_rows),
            "notes": list(self.notes),
            "unadjusted_files": list(self.unadjusted_files),
            "mixed_adjustment": self.mixed_adjustment,
            "dropped_stocks": {
                code: sorted({d.reason for d in defects}) for code, defects in self.dropped.items()
            },
            "defects": summarize_defects([d for defects in self.dropped.values() for d in defects]),
        }


@dataclass(frozen=True)
class Market:
    """Validated bars of one market plus the calendar of days on which that market traded."""

    name: str
    bars: pd.DataFrame
    calendar: pd.DatetimeIndex
    report: LoadReport

    def stock(self, code: str) -> pd.DataFrame:
        return self.bars[self.bars["code"] == code].reset_index(drop=True)

    def fingerprint(self) -> str:
        """Of the bars and the calendar: another market file gives another one."""
        rows = pd.util.hash_pandas_object(self.bars, index=False).to_numpy()
        digest = hashlib.sha256(rows.tobytes() + self.calendar.asi8.tobytes())
        return digest.hexdigest()[:16]

    def stocks_fingerprint(self, codes: Iterable[str]) -> str:
        """Of these stocks' bars alone (what a task's samples were built from): the same whatever
        other stocks a config loads beside them."""
        bars = self.bars[self.bars["code"].isin(set(codes))].sort_values(["code", "date"], kind="stable")
        rows = pd.util.hash_pandas_object(bars.reset_index(drop=True), index=False).to_numpy()
        return hashlib.sha256(rows.tobytes()).hexdigest()[:16]


def load_market(
    paths: list[Path],
    name: str,
    layout: str = "auto",
    on_defect: OnDefect | str = OnDefect.FAIL,
    code: str | None = None,
    codes: list[str] | None = None,
    weekdays: tuple[int, ...] = (0, 1, 2, 3, 4),
    today: pd.Timestamp | None = None,
    date_format: str | None = None,
    adjust: str = "auto",
) -> Market:
    """Load, validate and sort one market from one or more files.

    ``on_defect=fail`` raises with every defect found; ``drop`` removes each defective stock whole
    (a stock with a hole in its prices would give charts and labels that lie) and counts it.
    """
    if not paths:
        raise MarketDataError(f"market {name!r}: no input files")
    if adjust not in ADJUST:
        raise MarketDataError(f"market {name!r}: data.adjust must be one of {ADJUST}, got {adjust!r}")
    tables = [read_table(p, layout, code, date_format) for p in paths]
    notes = tuple(n for t in tables for n in t.attrs.get("notes", ()))
    # Said once per file: a file without a factor is loaded as it is, never refused for it.
    plain = [str(p) for p, t in zip(paths, tables) if "adj_factor" not in t] if adjust == "auto" else []
    notes += tuple(f"{p}: no adjustment column (Adj Close / adj_factor): prices used as exported" for p in plain)
    frame = pd.concat(tables, ignore_index=True)
    if adjust == "none" and "adj_factor" in frame:
        frame = frame.drop(columns="adj_factor")
    if codes is not None:
        frame = frame[frame["code"].isin([str(c) for c in codes])]
        if frame.empty:
            raise MarketDataError(f"market {name!r}: none of the codes {codes} is in {paths}")
    frame, mixed = fill_absent_factors(frame, plain)
    notes += mixed
    defects = find_defects(frame, today)
    policy = OnDefect(on_defect)
    if defects and policy is OnDefect.FAIL:
        raise MarketDataError(
            f"market {name!r}: {len(defects)} defective rows (set data.on_defect=drop to drop "
            "the affected stocks instead)",
            tuple(defects),
        )
    dropped: dict[str, tuple[Defect, ...]] = {}
    for d in defects:
        dropped[d.code] = dropped.get(d.code, ()) + (d,)
    frame = frame[~frame["code"].isin(dropped)]
    if frame.empty:
        raise MarketDataError(f"market {name!r}: every stock is defective", tuple(defects))

    frame = frame.sort_values(["code", "date"], kind="stable")
    frame, filler = drop_filler_rows(frame, weekdays)
    frame, adjusted = back_adjust(frame)
    if adjusted:
        notes += (f"prices back-adjusted for splits and dividends (adjustment factor): {adjusted} stocks changed",)
    calendar = pd.DatetimeIndex(np.unique(frame["date"].to_numpy()), name="date")
    suspended = frame["volume"] == 0
    bars = frame.loc[~suspended, [c for c in CANONICAL if c in frame]].reset_index(drop=True)
    if bars.empty:
        raise MarketDataError(f"market {name!r} ({', '.join(str(p) for p in paths)}): no bar with a volume above 0, so no "
                              f"stock traded on any day ({sum(filler.values())} rows dropped as days nobody traded, zero-volume rows as suspended); "
                              "check the volume column")
    report = LoadReport(
        files=tuple(str(p) for p in paths),
        rows=len(bars),
        stocks=bars["code"].nunique(),
        suspended_rows=int(suspended.sum()),
        dropped=dropped,
        filler_rows=filler,
        notes=notes,
        unadjusted_files=tuple(plain),
        mixed_adjustment=bool(mixed),
    )
    return Market(name=name, bars=bars, calendar=calendar, report=report)
