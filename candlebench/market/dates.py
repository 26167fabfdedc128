"""The trading day of each row's date: the format of a file's dates (ISO 8601, YYYYMMDD, or day and
month in the order some date proves), and what is dropped on the way (a zone, a time of day)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from candlebench.market.defects import MarketDataError


def date_notes(path: Path, values: pd.Series) -> tuple[str, ...]:
    """What :func:`parse_dates` drops from a date column, said in the load report: a zone, a time
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


_ISO = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}")
_COMPACT = re.compile(r"^\d{8}$")
_DAY_MONTH = re.compile(r"^(\d{1,2})([/.-])(\d{1,2})\2(\d{4})$")


def parse_dates(path: Path, values: pd.Series, date_format: str | None) -> pd.Series:
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
