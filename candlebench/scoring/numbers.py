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


def pct(value, digits: int = 1) -> str:
    """A share as a percentage: 0.0625 -> "6.2%"."""
    return "–" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{100 * value:.{digits}f}%"
