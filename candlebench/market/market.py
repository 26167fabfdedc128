"""Market data: load a long OHLCV table (CSV or Parquet), validate it, report every defect.

The canonical table has one row per stock and trading day, columns ``code, date, open, high, low,
close, volume[, amount]``, sorted by (code, date) and unique on it.

Suspended days: exporters either omit them (TuShare) or write a row with zero volume (the PSE demo
data, some Yahoo series). Zero-volume rows are taken out of the stock's bars, because a bar that
did not trade carries no price information, but their dates stay in the market's trading calendar
(``Market.calendar``), so both encodings of a suspension give the same bars and the same
labels.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from candlebench.market.adjustment import ADJUST, NO_FACTOR_COLUMN, NO_FACTOR_REASON, back_adjust, fill_absent_factors
from candlebench.market.exports import read_flat
from candlebench.market.layouts import CANONICAL, LAYOUTS, PRICES, REQUIRED, Layout, detect_layout, nearest_layout

# A code names a folder of rendered charts (images/<cutoff>/<code>/...): nothing that could leave it.
_SAFE_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class OnDefect(str, Enum):
    FAIL = "fail"
    DROP = "drop"


@dataclass(frozen=True)
class Defect:
    file: str
    row: int | None  # 1-based line in the source file (header = line 1); None for Parquet
    code: str
    date: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.row}" if self.row is not None else self.file
        return f"{where}: code={self.code or '(empty)'} date={self.date}: {self.reason}"


def summarize_defects(defects: tuple[Defect, ...] | list[Defect], first: int = 3) -> list[str]:
    """One line per file and defect kind, with its count, its first rows and the stocks it hits (a
    lone defect as its own full line): an export with 1,500 identical defects reads as one line."""
    groups: dict[tuple[str, str], list[Defect]] = {}
    for d in defects:
        groups.setdefault((d.file, d.reason), []).append(d)
    lines = []
    for (file, reason), hits in groups.items():
        if len(hits) == 1:
            lines.append(str(hits[0]))
            continue
        where = list(dict.fromkeys(f"line {d.row}" if d.row is not None else f"{d.code or '(empty)'} {d.date}" for d in hits))
        shown = ", ".join(where[:first]) + (", …" if len(where) > first else "")
        codes = sorted({d.code or "(empty)" for d in hits})
        stocks = ",".join(codes[:5]) + (f" and {len(codes) - 5} more" if len(codes) > 5 else "")
        lines.append(f"{file}: {reason}: {len(hits)} rows ({shown}; code{'s' if len(codes) > 1 else ''}={stocks})")
    return lines


class MarketDataError(ValueError):
    """Raised for a file we cannot read at all, or for stock defects under ``on_defect=fail``."""

    def __init__(self, message: str, defects: tuple[Defect, ...] = ()):
        self.defects = defects
        if defects:
            message = message + "".join(f"\n  {line}" for line in summarize_defects(defects))
        super().__init__(message)


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


def read_table(path: Path, layout: str = "auto", code: str | None = None, date_format: str | None = None) -> pd.DataFrame:
    """Read one file into canonical columns plus ``_row`` (source line) and ``_file``.

    Raises :class:`MarketDataError` for problems of the whole file (missing, empty, unknown
    columns, dates that read two ways); defects of single rows are left for :func:`find_defects`.
    ``date_format`` (strptime) overrides the layout's and the inferred one.
    """
    if not path.exists():
        raise MarketDataError(f"{path}: no such file")
    try:
        flat = read_flat(path)
    except pd.errors.EmptyDataError:
        raise MarketDataError(f"{path}: empty file") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as err:
        raise MarketDataError(f"{path}: not a readable CSV or Parquet table: {err}") from None
    raw = flat.frame
    if raw.empty:
        raise MarketDataError(f"{path}: empty file (no data rows)")

    chosen = _choose_layout(path, [c for c in raw.columns if c != "_row"], layout)
    frame = raw[[c for c in raw.columns if c in chosen.rename]].rename(columns=chosen.rename)
    if "code" not in frame:
        frame["code"] = code if code is not None else path.stem
    for col in (*CANONICAL, "adj_close"):
        if col in frame and col not in ("code", "date"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("float64")
    if "adj_close" in frame:  # Yahoo: the factor is how much the adjusted close differs from the close
        frame["adj_factor"] = frame.pop("adj_close") / frame["close"]
    frame["code"] = frame["code"].fillna("").astype(str).str.strip()
    frame.attrs["notes"] = flat.notes + date_notes(path, frame["date"])
    frame["date"] = _parse_dates(path, frame["date"], date_format or chosen.date_format)
    frame["_row"] = raw["_row"].to_numpy()
    frame["_file"] = str(path)
    return frame


def date_notes(path: Path, values: pd.Series) -> tuple[str, ...]:
    """What :func:`_parse_dates` drops from a date column, said in the load report: a zone, a time
    of day (written as text, "2024-01-02 15:30", or as datetimes)."""
    if not pd.api.types.is_datetime64_any_dtype(values):
        after = values.astype(str).str.strip().str.split(r"[ T]", n=1, regex=True).str[1].dropna().astype(str)
        timed = after[after.str.contains(r"[1-9]")]
        if timed.empty:
            return ()
        return (f"{path}: dates carry a time of day on {len(timed)} rows (e.g. {values[timed.index[0]]!r}); "
                "only the day is kept",)
    notes = []
    if values.dt.tz is not None:
        notes.append(f"{path}: dates carry time zone {values.dt.tz}; each is taken as its calendar day in that zone")
    if (values.dropna() != values.dropna().dt.normalize()).any():
        notes.append(f"{path}: dates carry a time of day; only the day is kept")
    return tuple(notes)


def _choose_layout(path: Path, columns: list[str], layout: str) -> Layout:
    if layout == "auto":
        found = detect_layout(columns)
        fits = [(n, sorted(set(columns) - lay.source_columns())) for n, lay in LAYOUTS.items()
                if lay.required_sources() <= set(columns)]
        if found is None and fits:
            name, extra = fits[0]
            raise MarketDataError(
                f"{path}: columns {columns} match no known layout: {extra} belong(s) to none; the others are the {name} layout's "
                f"({sorted(LAYOUTS[name].rename)}). Drop or rename them, or pass data.layout=<name>."
            )
        if found is None:
            nearest, missing = nearest_layout(columns)
            raise MarketDataError(
                f"{path}: columns {columns} match no known layout: missing {missing} of the {nearest.name} layout "
                f"(required {sorted(nearest.required_sources())}; optional {sorted(nearest.optional_sources())}). "
                "Add or rename the missing columns, or pass data.layout=<name>."
            )
        return found
    if layout not in LAYOUTS:
        raise MarketDataError(f"{path}: unknown layout {layout!r}; choose from {sorted(LAYOUTS)}")
    chosen = LAYOUTS[layout]
    missing = sorted(chosen.required_sources() - set(columns))
    unknown = sorted(set(columns) - chosen.source_columns())
    if missing or unknown:
        raise MarketDataError(
            f"{path}: layout {layout!r} needs columns {missing or 'none missing'}; "
            f"unknown columns {unknown or 'none'}"
        )
    return chosen


_ISO = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}")
_COMPACT = re.compile(r"^\d{8}$")
_DAY_MONTH = re.compile(r"^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})$")


def _parse_dates(path: Path, values: pd.Series, date_format: str | None) -> pd.Series:
    """Trading days (midnight, no zone). A time-zone-aware column is taken as its calendar day in
    its own zone, and a time of day is dropped, so a file with zones and one without give the same
    days (otherwise each day would appear twice); :func:`date_notes` says so in the load report."""
    if pd.api.types.is_datetime64_any_dtype(values):
        if values.dt.tz is not None:
            values = values.dt.tz_localize(None)
        return values.dt.normalize()
    # Exports write a time (and zone) after the day on some rows; the trading day is what counts.
    text = values.astype(str).str.strip().str.split(r"[ T]", n=1, regex=True).str[0]
    if date_format is None:
        date_format = infer_date_format(path, text)
    if date_format == "ISO8601":
        return pd.to_datetime(text.str.slice(0, 10), format="ISO8601", errors="coerce")
    return pd.to_datetime(text, format=date_format, errors="coerce")


def infer_date_format(path: Path, text: pd.Series) -> str:
    """ISO 8601, YYYYMMDD, or day and month with a 4-digit year ("1/31/2024" US, "31.01.2024"):
    the order is the one some date proves (a first field above 12 is a day, a second one a month).
    A file whose dates read both ways is refused rather than guessed."""
    sample = text[text.notna() & (text != "") & (text != "nan")]
    if sample.empty or sample.str.match(_ISO).mean() >= 0.5:
        return "ISO8601"
    if sample.str.match(_COMPACT).mean() >= 0.5:
        return "%Y%m%d"
    parts = sample.str.extract(_DAY_MONTH)
    if parts[0].notna().mean() < 0.5:
        return "ISO8601"  # unreadable dates: each row is reported as such
    first, second = parts[0].dropna().astype(int), parts[2].dropna().astype(int)
    sep = parts[1].dropna().iloc[0]
    if (first > 12).any() and not (second > 12).any():
        return f"%d{sep}%m{sep}%Y"
    if (second > 12).any() and not (first > 12).any():
        return f"%m{sep}%d{sep}%Y"
    example = sample[parts[0].notna()].iloc[0]
    raise MarketDataError(
        f"{path}: dates like {example!r} read as month/day or day/month and no date tells which; "
        f"set data.date_format, e.g. %m{sep}%d{sep}%Y (US) or %d{sep}%m{sep}%Y"
    )


# A market does not pause for more than a year; a date past such a gap is a typo, not history.
MAX_GAP_DAYS = 366


def _isolated_dates(dates: pd.Series) -> pd.Series:
    """Rows dated after a gap of over MAX_GAP_DAYS in the whole market's dates (e.g. 2205 for 2025)."""
    days = np.unique(dates.dropna().to_numpy(dtype="datetime64[D]"))
    gaps = np.flatnonzero(np.diff(days) > np.timedelta64(MAX_GAP_DAYS, "D"))
    if not len(gaps) or len(days) < 2:
        return pd.Series(False, index=dates.index)
    # The larger side of the last gap is the market; the other side is the mistake.
    cut = gaps[-1] + 1
    if cut >= len(days) - cut:
        return dates >= pd.Timestamp(days[cut])
    return dates < pd.Timestamp(days[cut])


def find_defects(frame: pd.DataFrame, today: pd.Timestamp | None = None) -> list[Defect]:
    """Every row-level defect of a canonical frame (with ``_row`` and ``_file``), in file order."""
    checks: list[tuple[pd.Series, str | pd.Series]] = [
        (frame["code"] == "", "empty code"),
        ((frame["code"] != "") & ~frame["code"].str.match(_SAFE_CODE), "unsafe code (letters, digits, '.', '_', '-' only)"),
        (frame["date"].isna(), "unparseable date"),
    ]
    for col in REQUIRED[2:]:
        checks.append((frame[col].isna(), f"missing or non-numeric {col}"))
    for col in [*PRICES, "volume", *(["amount"] if "amount" in frame else [])]:
        checks.append((np.isinf(frame[col]), f"infinite {col}"))
    for col in PRICES:
        checks.append((frame[col] <= 0, f"non-positive {col}"))
    if "adj_factor" in frame:
        factor = frame["adj_factor"]
        bad = factor.isna() | np.isinf(factor) | (factor <= 0)
        if NO_FACTOR_COLUMN in frame:  # the file had no column to fill: say so, not "missing"
            checks.append((frame[NO_FACTOR_COLUMN], NO_FACTOR_REASON))
            bad &= ~frame[NO_FACTOR_COLUMN]
        checks.append((bad, "missing, infinite or non-positive adjustment factor"))
    today = pd.Timestamp(today or pd.Timestamp.now().normalize())
    checks.append((frame["date"] > today, f"dated in the future (after today, {today:%Y-%m-%d})"))
    checks.append((_isolated_dates(frame["date"]), f"dated over {MAX_GAP_DAYS} days after the market's previous day (a wrong year?)"))
    checks += [
        (frame["volume"] < 0, "negative volume"),
        (frame["high"] < frame["low"], "high < low"),
        ((frame["open"] < frame["low"]) | (frame["open"] > frame["high"]), "open outside [low, high]"),
        ((frame["close"] < frame["low"]) | (frame["close"] > frame["high"]), "close outside [low, high]"),
        (frame.duplicated(["code", "date"], keep=False) & frame["date"].notna(), "duplicate date"),
    ]
    defects = []
    for mask, reason in checks:
        for idx in np.flatnonzero(mask.to_numpy(dtype=bool)):
            row = frame.iloc[idx]
            defects.append(
                Defect(
                    file=row["_file"],
                    row=int(row["_row"]) if row["_row"] >= 0 else None,
                    code=row["code"],
                    date="NaT" if pd.isna(row["date"]) else row["date"].strftime("%Y-%m-%d"),
                    reason=str(reason),
                )
            )
    return sorted(defects, key=lambda d: (d.file, d.row or 0, d.reason))


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
