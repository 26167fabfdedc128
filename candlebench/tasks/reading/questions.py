"""The questions of one chart and their answers, computed from the bars the chart draws.

``bars`` are exactly what the chart of a time frame shows: :func:`candlebench.market.bars.chart_bars`
(the renderer's own choice of the last <= 50 bars, MAs over the whole history before the cutoff),
so nothing at or after the cutoff enters an answer. Each rule (docs/reading.md has them as a table):

* ``ma5`` / ``ma20`` / ``ma90`` (position): the last close is ``above`` or ``below`` that MA's last
  value. Left out where the MA is not drawn on the last bar, or the close lies within 0.1% of it.
* ``highest`` / ``lowest`` (extremes): which of four marked bars (A-D, oldest first; chosen by a
  seeded draw per stock, date and time frame) has the highest / lowest close. Left out on a tie: the
  best two closes within 0.1% of each other.
* ``highest_close`` (extremes): the highest close of the drawn bars, right within 1%.
* ``change``: the last close over the first drawn close, minus 1, in five buckets: A below -10%,
  B -10% to -2%, C -2% to +2%, D +2% to +10%, E above +10% (a value on an edge goes up). Left out
  within 0.1 percentage points of an edge.
* ``cross`` (crossings): the sign of MA5 - MA20 changed from one bar to the next on one of the last
  10 bars: ``golden`` (MA5 crossed above), ``death`` (below), or ``none``. Left out where MA20 is
  not drawn on the last 11 bars, MA5 comes within 0.1% of MA20 on one of them, or it crossed more
  than once (both directions).
* ``up_candles`` (counts): how many of the last 10 bars closed above their open. Left out where
  one of them has a body within 0.1% of its open (its colour, its direction, hard to call).
* ``volume_above_mean`` (volume): the last bar's volume is above the mean volume of the drawn bars:
  ``yes`` / ``no``. Left out within 0.1% of the mean.
* ``max_volume`` (volume): which of the four marked bars has the largest volume; ties as above.
* ``pattern``: the pattern the last bar completes, by TA-Lib (:mod:`candlebench.tasks.reading.patterns`).

A question left out is not asked; its reason is counted (the samples summary, the report).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from candlebench.tasks.reading.patterns import Ambiguous, last_pattern

# Relative distance under which two values read as one on a chart: the case is left out.
AMBIGUOUS = 0.001
MA_WINDOWS = (5, 20, 90)
MARKS = ("A", "B", "C", "D")
CHANGE_EDGES = (-0.10, -0.02, 0.02, 0.10)
CHANGE_BUCKETS = ("A", "B", "C", "D", "E")
RECENT = 10  # the last bars the crossing and count questions look at
VALUE_TOLERANCE = 0.01  # highest_close is right within 1%

QUESTIONS = ("ma5", "ma20", "ma90", "highest", "lowest", "highest_close", "change", "cross", "up_candles",
             "volume_above_mean", "max_volume", "pattern")
# The question types, each a group of questions (the report's rows keep each question).
TYPES = {"ma5": "position", "ma20": "position", "ma90": "position", "highest": "extremes", "lowest": "extremes",
         "highest_close": "extremes", "change": "change", "cross": "crossings", "up_candles": "counts",
         "volume_above_mean": "volume", "max_volume": "volume", "pattern": "pattern"}
# The canonical answer of an unanswerable item (a line not drawn, a marked bar outside the drawn
# window): the parser reads "cannot tell" / "无法判断" as this; it is one of the choices of every
# question that can be unanswerable.
CANNOT_TELL = "cannot_tell"
# The answers each multiple-choice question allows (the parser reads an answer by them); every
# other question is numeric, of a kind in NUMERIC.
CHOICES: dict[str, tuple[str, ...]] = {
    "ma5": ("above", "below", CANNOT_TELL), "ma20": ("above", "below", CANNOT_TELL),
    "ma90": ("above", "below", CANNOT_TELL),
    "highest": MARKS, "lowest": MARKS, "max_volume": MARKS, "change": CHANGE_BUCKETS,
    "cross": ("golden", "death", "none"), "volume_above_mean": ("yes", "no"),
    "pattern": ("doji", "hammer", "bullish_engulfing", "bearish_engulfing", "none"),
}
# The numeric questions and their kind: "price" (a positive number, right within VALUE_TOLERANCE)
# or "count" (an integer 0..RECENT, right when equal).
NUMERIC: dict[str, str] = {"highest_close": "price", "up_candles": "count"}
UP_CANDLES = tuple(range(RECENT + 1))


class LeftOut(ValueError):
    """The case is ambiguous (or not drawn): the question is not asked; the message says why."""


@dataclass(frozen=True)
class Chart:
    """The drawn bars as arrays, and the four marked bars (indices into them, oldest first)."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    mas: dict[int, np.ndarray]
    marked: tuple[int, ...]


@dataclass(frozen=True)
class QuestionSet:
    answers: dict[str, Any]  # question -> its true answer, for the questions asked
    left_out: dict[str, str]  # question -> why it is not asked
    marked: tuple[tuple[int, str], ...] = field(default=())  # (bars from the right, 1 = last; date) of A-D


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= AMBIGUOUS * abs(b)


def marked_bars(n: int, seed: str) -> tuple[int, ...]:
    """Four distinct bars of ``n``, oldest first, drawn from ``seed`` (stable across runs and machines)."""
    if n < len(MARKS):
        return ()
    rng = np.random.default_rng(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))
    return tuple(sorted(int(i) for i in rng.choice(n, size=len(MARKS), replace=False)))


def _position(w: int) -> Callable[[Chart], str]:
    def rule(c: Chart) -> str:
        ma = c.mas[w][-1]
        if not np.isfinite(ma):
            raise LeftOut(f"MA{w} not drawn on the last bar")
        if _near(c.close[-1], ma):
            raise LeftOut(f"last close within 0.1% of MA{w}")
        return "above" if c.close[-1] > ma else "below"

    return rule


def _pick(values_of: Callable[[Chart], np.ndarray], highest: bool) -> Callable[[Chart], str]:
    def rule(c: Chart) -> str:
        if not c.marked:
            raise LeftOut("fewer than 4 bars drawn")
        values = values_of(c)[list(c.marked)]
        order = np.argsort(-values if highest else values)
        first, second = order[0], order[1]
        if _near(values[second], values[first]):
            raise LeftOut("tie: two marked bars within 0.1%")
        return MARKS[int(first)]

    return rule


def _highest_close(c: Chart) -> float:
    return float(c.close.max())


def _change(c: Chart) -> str:
    change = c.close[-1] / c.close[0] - 1
    if any(abs(change - edge) < AMBIGUOUS for edge in CHANGE_EDGES):
        raise LeftOut("change within 0.1 points of a bucket edge")
    return CHANGE_BUCKETS[int(np.searchsorted(CHANGE_EDGES, change, side="right"))]


def _cross(c: Chart) -> str:
    fast, slow = c.mas[5][-(RECENT + 1):], c.mas[20][-(RECENT + 1):]
    if len(slow) < RECENT + 1 or not (np.isfinite(fast).all() and np.isfinite(slow).all()):
        raise LeftOut(f"MA20 not drawn on the last {RECENT + 1} bars")
    if (np.abs(fast - slow) <= AMBIGUOUS * np.abs(slow)).any():
        raise LeftOut("MA5 within 0.1% of MA20 on a recent bar")
    above = fast > slow
    turns = np.flatnonzero(above[1:] != above[:-1])
    if len(turns) > 1:
        raise LeftOut("MA5 crossed MA20 more than once")
    if len(turns) == 0:
        return "none"
    return "golden" if above[-1] else "death"


def _up_candles(c: Chart) -> int:
    if len(c.close) < RECENT:
        raise LeftOut(f"fewer than {RECENT} bars drawn")
    o, cl = c.open[-RECENT:], c.close[-RECENT:]
    if (np.abs(cl - o) <= AMBIGUOUS * np.abs(o)).any():
        raise LeftOut("a recent candle's body within 0.1% of its open")
    return int((cl > o).sum())


def _volume_above_mean(c: Chart) -> str:
    mean = float(c.volume.mean())
    if _near(c.volume[-1], mean):
        raise LeftOut("last volume within 0.1% of the mean")
    return "yes" if c.volume[-1] > mean else "no"


def _pattern(c: Chart) -> str:
    try:
        return last_pattern(c.open, c.high, c.low, c.close)
    except Ambiguous as why:
        raise LeftOut(str(why)) from None


RULES: dict[str, Callable[[Chart], Any]] = {
    "ma5": _position(5), "ma20": _position(20), "ma90": _position(90),
    "highest": _pick(lambda c: c.close, True), "lowest": _pick(lambda c: c.close, False),
    "highest_close": _highest_close, "change": _change, "cross": _cross, "up_candles": _up_candles,
    "volume_above_mean": _volume_above_mean, "max_volume": _pick(lambda c: c.volume, True),
    "pattern": _pattern,
}


def question_set(bars: pd.DataFrame, seed: str) -> QuestionSet:
    """Every question's answer for the drawn ``bars`` (date, OHLCV, ma5, ma20, ma90), or why it is left out."""
    arrays = {k: bars[k].to_numpy(dtype=float) for k in ("open", "high", "low", "close", "volume")}
    chart = Chart(**arrays, mas={w: bars[f"ma{w}"].to_numpy(dtype=float) for w in MA_WINDOWS},
                  marked=marked_bars(len(bars), seed))
    answers, left_out = {}, {}
    for key, rule in RULES.items():
        try:
            answers[key] = rule(chart)
        except LeftOut as why:
            left_out[key] = str(why)
    dates = bars["date"].dt.strftime("%Y-%m-%d").tolist()
    return QuestionSet(answers, left_out, tuple((len(bars) - i, dates[i]) for i in chart.marked))


def is_right(question: str, truth: Any, answer: Any) -> bool:
    """The judge of one question: exact for every choice and count, within 1% for highest_close."""
    if answer is None:
        return False
    if question == "highest_close":
        return isinstance(answer, (int, float)) and abs(float(answer) - truth) <= VALUE_TOLERANCE * abs(truth)
    return answer == truth
