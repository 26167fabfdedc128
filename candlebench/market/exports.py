"""Real OHLCV exports as they come, turned into one flat table before a layout maps its columns.

Two shapes are common and neither is a layout question:

* **pandas' index column**: ``df.to_csv(path)`` writes the index first, under an empty header (read
  back as ``Unnamed: 0``). A counter (``0, 1, 2, ...``, after ``reset_index()``) is dropped; dates
  (a Yahoo frame whose date index lost its name) become the date column, named in the file's own
  casing (``Date`` beside ``Close``, else ``date``). The load report says which.
* **yfinance's two-row header**: ``yf.download(tickers).to_csv(path)`` writes the column MultiIndex
  as a ``Price`` row (field names, each repeated per ticker), a ``Ticker`` row and a ``Date`` row
  naming the index, then one line per day with every ticker side by side. It is stacked into one
  row per (ticker, day) under the Yahoo names, with the ticker as ``Ticker``.

Every row keeps its source line number (``_row``) so defects still name the line of the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

_INDEX_HEADER = re.compile(r"^(?:|Unnamed: 0)$")


@dataclass(frozen=True)
class Flat:
    frame: pd.DataFrame  # text columns plus ``_row`` (1-based source line; -1 for Parquet)
    notes: tuple[str, ...] = ()


def read_flat(path: Path) -> Flat:
    """The file as one flat text table (CSV) or as stored (Parquet), in one of the shapes above."""
    if path.suffix.lower() in {".parquet", ".pq"}:
        frame = pd.read_parquet(path)
        return Flat(frame.assign(_row=-1))
    # Text: a malformed number must become a reported defect, not a silently mixed-type column.
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    if _is_yfinance(raw):
        return _stack_yfinance(path, raw)
    raw = raw.assign(_row=np.arange(len(raw)) + 2)
    notes: tuple[str, ...] = ()
    if len(raw.columns) > 1 and _INDEX_HEADER.match(str(raw.columns[0])):
        first = raw.columns[0]
        name = _date_column(raw)
        if name is not None:
            notes = (f"{path}: its first column, unnamed, holds the dates (pandas' to_csv of a date index "
                     f"without a name): read as {name!r}",)
            raw = raw.rename(columns={first: name})
        else:
            notes = (f"{path}: dropped its first column, an unnamed index as pandas' to_csv writes it",)
            raw = raw.drop(columns=first)
    return Flat(raw, notes)


def _date_column(raw: pd.DataFrame) -> str | None:
    """The date column's name for an unnamed first column that holds dates rather than pandas'
    row counter, when no other column is the date; None otherwise (the column is an index to drop)."""
    columns = {str(c) for c in raw.columns[1:]}
    if columns & {"Date", "date", "trade_date", "Datetime"}:
        return None
    values = raw.iloc[:200, 0].dropna().astype(str).str.strip()
    if values.empty or values.str.fullmatch(r"-?\d+").all():
        return None  # a counter, or YYYYMMDD that no layout reads from an unnamed column
    if pd.to_datetime(values, errors="coerce", format="mixed", utc=True).notna().mean() < 0.5:
        return None
    return "Date" if "Close" in columns else "date"


def _is_yfinance(raw: pd.DataFrame) -> bool:
    return (
        len(raw) >= 2
        and str(raw.columns[0]) == "Price"
        and str(raw.iloc[0, 0]) == "Ticker"
        and str(raw.iloc[1, 0]) == "Date"
        and raw.iloc[1, 1:].isna().all()
    )


def _stack_yfinance(path: Path, raw: pd.DataFrame) -> Flat:
    # read_csv suffixes repeated header names (".1", ".2"); the field is the name before that.
    fields = [re.sub(r"\.\d+$", "", str(c)) for c in raw.columns[1:]]
    tickers = [str(t).strip() for t in raw.iloc[0, 1:]]
    body = raw.iloc[2:].reset_index(drop=True)
    lines = np.arange(len(body)) + 4  # the Price, Ticker and Date rows come first
    parts = []
    for ticker in dict.fromkeys(tickers):
        columns = {f: body.iloc[:, 1 + i] for i, (f, t) in enumerate(zip(fields, tickers)) if t == ticker}
        part = pd.DataFrame({"Date": body.iloc[:, 0], **columns, "Ticker": ticker, "_row": lines})
        # A ticker listed later than the others has empty cells before its first day.
        values = part[list(columns)]
        parts.append(part[values.notna().any(axis=1)])
    frame = pd.concat(parts, ignore_index=True)
    note = f"{path}: yfinance export with a Price/Ticker header, {len(parts)} tickers stacked into rows"
    return Flat(frame, (note,))
