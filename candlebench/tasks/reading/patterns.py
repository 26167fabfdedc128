"""The candlestick pattern of the last bars, by the textbook's definitions (S. Nison, *Japanese
Candlestick Charting Techniques*, 2nd ed., 2001, ch. 4 and 5; the definitions the prompt states, in
both languages, and the docs cite), read in the chart's pixels as a reader sees them:

* **doji**: the last bar's real body is at most a tenth of its high-low range ("open and close are
  the same or nearly the same").
* **hammer**: the last bar's lower shadow is at least twice its real body, its upper shadow at most
  a tenth of its range, and its body is not a doji's (Nison: "the lower shadow should be at least
  twice the height of the real body; it should have no, or a very short, upper shadow"). The
  textbook also wants a prior decline; the prompt asks about the shape alone and says so.
* **bullish / bearish engulfing**: the prior bar's body is a real one (not a doji's) and the last
  bar's body, of the other colour, covers it: its open at or beyond the prior close and its close
  at or beyond the prior open (Nison: "the second real body must engulf the prior real body").

TA-Lib's functions, the rule before, differ: its hammer needs a lower shadow only longer than the
body, and its engulfing counts a flat prior candle; 9 of 11 of its hammers and 11 of 55 of its
engulfings on the PSE slice failed the textbook's rule.

Every value is a pixel height (a price's height above the panel's bottom, :mod:`questions`), and
the answer is asked only when it survives every value moved by up to ``margin`` pixels (each of
the eight prices of the two bars at -margin, 0, +margin: :func:`last_pattern`). More than one
pattern on the last bar (a doji with a long lower shadow is often a hammer too) is ambiguous.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

PATTERNS = ("doji", "hammer", "bullish_engulfing", "bearish_engulfing", "none")
DOJI_BODY = 0.1  # a doji's body is at most this share of its range
HAMMER_SHADOW = 2.0  # a hammer's lower shadow is at least this many bodies
SHORT_SHADOW = 0.1  # a hammer's upper shadow is at most this share of its range


class Ambiguous(ValueError):
    """More than one pattern, or an answer a few pixels would change."""


def classify(o0, h0, l0, c0, o1, h1, l1, c1) -> np.ndarray:
    """The pattern of each set of pixel heights (arrays alike; bar 0 the prior, 1 the last), as
    indices into :data:`PATTERNS`, or -1 where several patterns hold."""
    body1, range1 = np.abs(c1 - o1), np.maximum(h1 - l1, 1e-9)
    doji = body1 <= DOJI_BODY * range1
    lower, upper = np.minimum(o1, c1) - l1, h1 - np.maximum(o1, c1)
    hammer = ~doji & (lower >= HAMMER_SHADOW * body1) & (upper <= SHORT_SHADOW * range1)
    prior_real = np.abs(c0 - o0) > DOJI_BODY * np.maximum(h0 - l0, 1e-9)
    bullish = prior_real & ~doji & (c0 < o0) & (c1 > o1) & (o1 <= c0) & (c1 >= o0)
    bearish = prior_real & ~doji & (c0 > o0) & (c1 < o1) & (o1 >= c0) & (c1 <= o0)
    found = np.stack([doji, hammer, bullish, bearish])
    index = np.where(found.any(axis=0), found.argmax(axis=0), len(PATTERNS) - 1)
    return np.where(found.sum(axis=0) > 1, -1, index)


@lru_cache(maxsize=4)
def _shifts(margin: float) -> np.ndarray:
    """Every combination of -margin, 0, +margin for the eight values, one per column."""
    return np.array(list(itertools.product((-margin, 0.0, margin), repeat=8))).T


def last_pattern(prior: tuple[float, float, float, float], last: tuple[float, float, float, float],
                 margin: float) -> str:
    """The pattern (one of :data:`PATTERNS`) of the last bar after ``prior``, each an (open, high,
    low, close) of pixel heights; raises :class:`Ambiguous` unless every value moved by -margin,
    0 or +margin (3^8 charts) gives the same one."""
    values = np.asarray([*prior, *last], dtype=float)[:, None] + _shifts(margin)
    # A shifted high below its body, or a low above it, is no chart: keep the drawn order.
    o0, h0, l0, c0, o1, h1, l1, c1 = values
    h0, l0 = np.maximum(h0, np.maximum(o0, c0)), np.minimum(l0, np.minimum(o0, c0))
    h1, l1 = np.maximum(h1, np.maximum(o1, c1)), np.minimum(l1, np.minimum(o1, c1))
    found = classify(o0, h0, l0, c0, o1, h1, l1, c1)
    if (found == -1).any():
        raise Ambiguous("several patterns at once")
    if (found != found[0]).any():
        raise Ambiguous(f"a {margin:g} px move changes the pattern")
    return PATTERNS[int(found[0])]
