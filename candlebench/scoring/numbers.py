"""Numbers as people read them, in the report and on the console: each metric at the digits that
carry meaning for it, and one dash for a value that is not there. Free of matplotlib, so the
console's summary lines do not import a plotting library."""

from __future__ import annotations

import numpy as np
import pandas as pd


def fmt(value, digits: int = 4) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return "–"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{value:.{digits}f}"


def fmt_ci(value, ci, digits: int = 4, ci_digits: int | None = None) -> str:
    """A value and, where it has one, its interval: "0.512 [0.43, 0.60]" (``ci_digits``: the
    interval's own precision, the value's by default)."""
    d = digits if ci_digits is None else ci_digits
    return fmt(value, digits) + (f" [{fmt(ci[0], d)}, {fmt(ci[1], d)}]" if ci else "")


def pct(value, digits: int = 1) -> str:
    """A share as a percentage: 0.0625 -> "6.2%"."""
    return "–" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{100 * value:.{digits}f}%"
