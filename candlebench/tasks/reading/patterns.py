"""The candlestick pattern of the last bars, by TA-Lib's definitions (TA-Lib 0.8.2, the C library's
CDL functions that charting tools and traders use; https://ta-lib.org/functions/).

* doji (``CDLDOJI``): the last bar's real body is at most 10% of the average high-low range of the
  10 bars before it (TA-Lib's BodyDoji setting).
* hammer (``CDLHAMMER``): the last bar has a small real body (below the average body of the 10 bars
  before it), a long lower shadow (longer than its body), almost no upper shadow (below 10% of the
  average range of the 5 bars before it), and its body sits at or near the prior bar's low.
* bullish / bearish engulfing (``CDLENGULFING``): the last bar's real body, of the opposite colour,
  covers the prior bar's real body (TA-Lib returns +-100, or +-80 where one end of the bodies is
  equal; both count, the sign gives the direction).

Each rule reads the drawn bars only; the averages TA-Lib takes look back over bars before the last
one, all of them drawn (a chart holds up to 50 bars). More than one pattern on the last bar is
ambiguous (a doji is often a hammer too): the question is left out, never guessed.
"""

from __future__ import annotations

import numpy as np
import talib

PATTERNS = ("doji", "hammer", "bullish_engulfing", "bearish_engulfing", "none")
# TA-Lib needs this many bars before the last for its trailing averages (10 of body and range, 1 prior bar).
MIN_BARS = 11


class Ambiguous(ValueError):
    """More than one pattern, or too few bars to say."""


def last_pattern(open_: np.ndarray, high: np.ndarray, low: np.ndarray, close: np.ndarray) -> str:
    """The pattern (one of :data:`PATTERNS`) the last bar completes; raises :class:`Ambiguous`."""
    if len(close) < MIN_BARS:
        raise Ambiguous(f"fewer than {MIN_BARS} bars drawn")
    arrays = [np.ascontiguousarray(a, dtype=float) for a in (open_, high, low, close)]
    found = []
    if talib.CDLDOJI(*arrays)[-1]:
        found.append("doji")
    if talib.CDLHAMMER(*arrays)[-1]:
        found.append("hammer")
    engulfing = talib.CDLENGULFING(*arrays)[-1]
    if engulfing:
        found.append("bullish_engulfing" if engulfing > 0 else "bearish_engulfing")
    if len(found) > 1:
        raise Ambiguous("several patterns: " + ", ".join(found))
    return found[0] if found else "none"
