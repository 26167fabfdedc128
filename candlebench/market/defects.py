"""Defects of single rows (an empty or unsafe code, an unreadable date or price, a bar outside its own
range, a date in the future or a year off, a duplicate), found all at once and said one line per
file and kind; and the error that carries them."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from candlebench.market.adjustment import NO_FACTOR_COLUMN, NO_FACTOR_REASON
from candlebench.market.layouts import PRICES, REQUIRED

# A code names a folder of rendered charts (images/<cutoff>/<code>/...): nothing that could leave it.
_SAFE_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


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
