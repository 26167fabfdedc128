"""Column layouts of the OHLCV exports we read, mapped onto the canonical long table.

A layout is data, not code: adding a provider means adding one entry to ``LAYOUTS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

REQUIRED = ("code", "date", "open", "high", "low", "close", "volume")
# adj_factor: the provider's cumulative adjustment factor (TuShare `adj_factor`; Yahoo's Adj Close
# / Close), read by candlebench.market.adjustment; adj_close is turned into it on the way in.
OPTIONAL = ("amount", "adj_factor")
CANONICAL = REQUIRED + OPTIONAL
PRICES = ("open", "high", "low", "close")


@dataclass(frozen=True)
class ExportLayout:
    name: str
    # source column -> canonical column
    rename: Mapping[str, str]
    # strptime format of the date column; None lets pandas read ISO 8601
    date_format: str | None = None
    # columns the provider exports that we deliberately ignore (never an "unknown column")
    ignored: frozenset[str] = field(default_factory=frozenset)
    # single-stock exports (Yahoo) carry no code column; the code comes from config or the file name
    has_code: bool = True

    def source_columns(self) -> frozenset[str]:
        return frozenset(self.rename) | self.ignored

    def required_sources(self) -> frozenset[str]:
        wanted = set(REQUIRED) - ({"code"} if not self.has_code else set())
        return frozenset(src for src, dst in self.rename.items() if dst in wanted)

    def optional_sources(self) -> frozenset[str]:
        return frozenset(src for src, dst in self.rename.items() if dst in OPTIONAL or dst == "adj_close")

    def date_source(self) -> str:
        return next(src for src, dst in self.rename.items() if dst == "date")


def _identity(*names: str) -> Mapping[str, str]:
    return {n: n for n in names}


LAYOUTS: Mapping[str, ExportLayout] = MappingProxyType(
    {
        "canonical": ExportLayout("canonical", _identity(*CANONICAL)),
        # TuShare pro `daily`: newest first, trade_date as YYYYMMDD, vol in lots (100 shares) and
        # amount in thousands of CNY. Units are kept as exported: charts and features only use
        # volume relative to the same stock's own history, so a constant factor changes nothing.
        "tushare": ExportLayout(
            "tushare",
            {
                "ts_code": "code",
                "trade_date": "date",
                "open": "open",
                "high": "high",
                "low": "low",
                "close": "close",
                "vol": "volume",
                "amount": "amount",
                # Not in `daily` itself: merge the `adj_factor` endpoint on (ts_code, trade_date).
                "adj_factor": "adj_factor",
            },
            date_format="%Y%m%d",
            ignored=frozenset({"pre_close", "change", "pct_chg"}),
        ),
        # Yahoo Finance: the CSV download (one stock per file, no code column) and yfinance's
        # export, whose tickers candlebench.market.exports stacks into a Ticker column.
        "yahoo": ExportLayout(
            "yahoo",
            {
                "Date": "date",
                "Open": "open",
                "High": "high",
                "Low": "low",
                "Close": "close",
                "Volume": "volume",
                "Adj Close": "adj_close",
                "Ticker": "code",
            },
            ignored=frozenset({"Dividends", "Stock Splits", "Capital Gains"}),
            has_code=False,
        ),
    }
)


def detect_layout(columns: list[str]) -> ExportLayout | None:
    """The first layout whose required columns are all present and which knows every column."""
    present = set(columns)
    for layout in LAYOUTS.values():
        if layout.required_sources() <= present and present <= layout.source_columns():
            return layout
    return None


def nearest_layout(columns: list[str]) -> tuple[ExportLayout, list[str]]:
    """The layout the columns come closest to, and its required columns they lack: the fewest
    missing, then the most columns in common (a file without ``close`` is the canonical layout
    short of ``close``, not "no layout")."""
    present = set(columns)

    def distance(layout: ExportLayout) -> tuple[int, int]:
        return len(layout.required_sources() - present), -len(layout.source_columns() & present)

    layout = min(LAYOUTS.values(), key=distance)
    return layout, sorted(layout.required_sources() - present)
