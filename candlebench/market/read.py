"""One market file read into the canonical columns: its layout chosen (detected from its columns, or
the one named) and its values and dates read; defects of single rows are left for :mod:`.defects`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from candlebench.market.dates import date_notes, parse_dates
from candlebench.market.defects import MarketDataError
from candlebench.market.exports import read_flat
from candlebench.market.layouts import CANONICAL, LAYOUTS, ExportLayout, detect_layout, nearest_layout


def read_table(path: Path, layout: str = "auto", code: str | None = None, date_format: str | None = None) -> pd.DataFrame:
    """Read one file into canonical columns plus ``_row`` (source line) and ``_file``.

    Raises :class:`MarketDataError` for problems of the whole file (missing, empty, unknown
    columns, dates that read two ways); defects of single rows are left for :func:`~candlebench.market.defects.find_defects`.
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
    frame["date"] = parse_dates(path, frame["date"], date_format or chosen.date_format)
    frame["_row"] = raw["_row"].to_numpy()
    frame["_file"] = str(path)
    return frame


def _choose_layout(path: Path, columns: list[str], layout: str) -> ExportLayout:
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
