"""The questions of one chart and their answers, computed from the bars the chart draws, in the
chart's own pixels.

``bars`` are exactly what the chart of a time frame shows: :func:`candlebench.market.bars.chart_bars`
(the renderer's own choice of the last <= 50 bars, MAs over the whole history before the cutoff),
so nothing at or after the cutoff enters an answer. Every price and volume a rule compares is first
mapped to its pixel height on the chart by the renderer's own axis transform
(:func:`candlebench.rendering.chart.geometry`), and a question is asked only when its answer survives
every value it compares moved by up to :data:`MARGIN_PX` pixels: two values are told apart when
their heights differ by more than ``2 * MARGIN_PX``. A rule that counts bars from the right (the
last 10 bars, 5 bars back) is asked only when counting one bar too many or too few gives the same
answer. The rules, one per question (docs/reading.md has them as a table, with their sources):

* ``ma5`` / ``ma20`` / ``ma90`` (position): the last close ``above`` or ``below`` that MA's last
  value; ``cannot_tell`` where the MA is not drawn at all; left out where it is drawn over fewer than
  :data:`MIN_LINE_BARS` bars.
* ``highest`` / ``lowest`` (extremes): which of four marked bars (lettered A-D on the chart,
  :mod:`candlebench.rendering.marks`) has the highest / lowest close.
* ``highest_close``, ``last_close`` (prices read off the axis): a number, right within 1%; left out
  where 2 px span more than 1% of the price (the chart's scale is too coarse for the tolerance).
* ``change``: the last close over the first drawn close, minus 1, in five buckets.
* ``direction`` (trend): the last close ``up`` or ``down`` from the close 5 bars before it.
* ``range_position`` (position): the last close in the ``top``, ``middle`` or ``bottom`` third of
  the range the bars shown span (lowest low to highest high).
* ``cross`` (crossings): MA5 crossed MA20 on one of the last 10 bars: ``golden``, ``death``, ``none``.
* ``ma_order`` / ``ma_slope`` (moving averages): the three MAs top to bottom at the last bar; MA20
  ``rising`` or ``falling`` over the last 5 bars.
* ``up_candles`` (counts): how many of the last 10 bars are drawn in the up colour (closed above
  their open).
* ``volume_above_mean`` / ``max_volume`` (volume): the last bar's volume against the mean; which
  marked bar has the largest volume. On a weekly chart whose last bar is a week the cutoff cut short
  (a partial week), no question reads that bar's volume or size.
* ``pattern``: the pattern the last bar completes, by the textbook's rules the prompt states
  (:mod:`candlebench.tasks.reading.patterns`).
* ``mark_color`` (control): the colour of one marked bar, ``up`` or ``down``; on a seeded quarter
  of the charts the prompt names a bar E before the first bar drawn instead, and the right answer
  is ``cannot_tell``.
* ``frames_agree`` (frames), asked of the daily and the weekly chart together (:func:`pair_set`):
  whether both moved the same way from their first to their last bar, ``yes`` or ``no``.

A question left out is not asked; its reason is counted (the samples summary, the report).
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from candlebench.rendering.chart import ChartSpec, geometry
from candlebench.rendering.marks import LETTERS, marked_bars, partial_last_week
from candlebench.tasks.reading.patterns import PATTERNS, Ambiguous, last_pattern

# Every compared value may sit this many pixels off where a reader places it: a careful reader's
# error on an 800x600 chart (a candle's body edge, a line's centre, a bar's top).
MARGIN_PX = 2.0
APART_PX = 2 * MARGIN_PX  # two values are told apart when their heights differ by more
MA_WINDOWS = (5, 20, 90)
# A moving average drawn over fewer bars than this is a stub (MA90 on a daily chart with 90 bars of
# history is one ~1.5 px dot): no question about it.
MIN_LINE_BARS = 10
MARKS = LETTERS[:4]  # a tuple, as every choice list
OUTSIDE_MARK = LETTERS[4]  # the bar the prompt names outside the drawn window (mark_color's control)
OUTSIDE_SHARE = 4  # one chart in this many asks mark_color about the outside bar
OUTSIDE_BACK = 10  # the outside bar lies 1 to this many bars before the first bar drawn
CHANGE_EDGES = (-0.10, -0.02, 0.02, 0.10)
CHANGE_BUCKETS = ("A", "B", "C", "D", "E")
RECENT = 10  # the last bars the crossing and count questions look at
LOOKBACK = 5  # the bars back the direction and slope questions compare with
VALUE_TOLERANCE = 0.01  # a price is right within 1%
MA_ORDERS = tuple(">".join(f"ma{w}" for w in order) for order in itertools.permutations(MA_WINDOWS))

QUESTIONS = ("ma5", "ma20", "ma90", "highest", "lowest", "highest_close", "last_close", "change", "direction",
             "range_position", "cross", "ma_order", "ma_slope", "up_candles", "volume_above_mean", "max_volume",
             "pattern", "mark_color", "frames_agree")
# The question types (the report's balanced headline averages over them), each a group of questions.
TYPES = {"ma5": "position", "ma20": "position", "ma90": "position", "range_position": "position",
         "highest": "extremes", "lowest": "extremes", "highest_close": "prices", "last_close": "prices",
         "change": "trend", "direction": "trend", "cross": "moving averages", "ma_order": "moving averages",
         "ma_slope": "moving averages", "up_candles": "counts", "volume_above_mean": "volume",
         "max_volume": "volume", "pattern": "pattern", "mark_color": "colour",
         "frames_agree": "frames"}
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
    "direction": ("up", "down"), "range_position": ("top", "middle", "bottom"),
    "cross": ("golden", "death", "none"), "ma_order": MA_ORDERS, "ma_slope": ("rising", "falling"),
    "volume_above_mean": ("yes", "no"), "pattern": PATTERNS, "mark_color": ("up", "down", CANNOT_TELL),
    "frames_agree": ("yes", "no"),
}
# The numeric questions and their kind: "price" (a positive number, right within VALUE_TOLERANCE)
# or "count" (an integer 0..RECENT, right when equal).
NUMERIC: dict[str, str] = {"highest_close": "price", "last_close": "price", "up_candles": "count"}
UP_CANDLES = tuple(range(RECENT + 1))


class LeftOut(ValueError):
    """The case is ambiguous (or not drawn): the question is not asked; the message says why."""


@dataclass(frozen=True)
class Chart:
    """The drawn bars as arrays, the marked bars (indices into them, oldest first) and the axis
    transforms: ``px`` a price's and ``vol_px`` a volume's height in pixels (up = more)."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    mas: dict[int, np.ndarray]
    marked: tuple[int, ...]
    px: Callable[[Any], Any]
    vol_px: Callable[[Any], Any]
    partial_last: bool = False  # the last bar is a week the cutoff cut short
    outside: bool = False  # mark_color asks about the bar outside the drawn window


@dataclass(frozen=True)
class QuestionSet:
    answers: dict[str, Any]  # question -> its true answer, for the questions asked
    left_out: dict[str, str]  # question -> why it is not asked
    # (letter, bars from the right (1 = last), date) of each bar the prompt names: A-D, and E when
    # mark_color asks about the bar outside the drawn window.
    marked: tuple[tuple[str, int, str], ...] = field(default=())
    mark_color: str = ""  # the letter mark_color asks about
    margins: dict[str, float] = field(default_factory=dict)  # question -> px from flipping (MARGINS), if asked
    chart: Chart | None = field(default=None, repr=False, compare=False)  # the chart asked about (pair_set)


def _apart(a: float, b: float) -> bool:
    return abs(a - b) > APART_PX


def _sign(a: float, b: float, what: str) -> bool:
    """Whether ``a`` is above ``b`` (pixel heights), or LeftOut naming ``what`` when a few pixels could say either."""
    if not _apart(a, b):
        raise LeftOut(f"{what} within {APART_PX:g} px")
    return a > b


def _drawn(c: Chart, w: int) -> np.ndarray:
    ma = c.mas[w]
    drawn = int(np.isfinite(ma).sum())
    if 0 < drawn < MIN_LINE_BARS:
        raise LeftOut(f"MA{w} drawn over fewer than {MIN_LINE_BARS} bars")
    return ma


def _position(w: int) -> Callable[[Chart], str]:
    def rule(c: Chart) -> str:
        ma = _drawn(c, w)
        if not np.isfinite(ma).any():
            return CANNOT_TELL
        if not np.isfinite(ma[-1]):
            raise LeftOut(f"MA{w} not drawn on the last bar")
        return "above" if _sign(c.px(c.close[-1]), c.px(ma[-1]), f"last close and MA{w}") else "below"

    return rule


def _pick(heights_of: Callable[[Chart], np.ndarray], highest: bool) -> Callable[[Chart], str]:
    def rule(c: Chart) -> str:
        if not c.marked:
            raise LeftOut("fewer than 4 bars to mark")
        heights = np.asarray(heights_of(c), dtype=float)[list(c.marked)]
        order = np.argsort(-heights if highest else heights)
        if not _apart(heights[order[0]], heights[order[1]]):
            raise LeftOut(f"tie: two marked bars within {APART_PX:g} px")
        return MARKS[int(order[0])]

    return rule


def _price(value_of: Callable[[Chart], float]) -> Callable[[Chart], float]:
    def rule(c: Chart) -> float:
        value = float(value_of(c))
        per_px = 1.0 / abs(float(c.px(1.0)) - float(c.px(0.0)))  # the axis is linear: price per pixel
        if MARGIN_PX * per_px > VALUE_TOLERANCE * abs(value):
            raise LeftOut(f"{MARGIN_PX:g} px span more than {VALUE_TOLERANCE:.0%} of the price")
        return value

    return rule


def _change(c: Chart) -> str:
    last = c.px(c.close[-1])
    for edge in CHANGE_EDGES:
        if not _apart(last, c.px(c.close[0] * (1 + edge))):
            raise LeftOut(f"last close within {APART_PX:g} px of a bucket edge")
    change = c.close[-1] / c.close[0] - 1
    return CHANGE_BUCKETS[int(np.searchsorted(CHANGE_EDGES, change, side="right"))]


def _back_bars(c: Chart, back: int) -> range:
    """Indices of the bars ``back - 1``, ``back`` and ``back + 1`` before the last: a reader who
    miscounts by one lands on one of them."""
    if len(c.close) < back + 2:
        raise LeftOut(f"fewer than {back + 2} bars drawn")
    return range(-back - 2, -back + 1)


def _direction(c: Chart) -> str:
    last = c.px(c.close[-1])
    ups = {_sign(last, c.px(c.close[i]), f"last close and the close {LOOKBACK} bars back") for i in _back_bars(c, LOOKBACK)}
    if len(ups) > 1:
        raise LeftOut("a bar more or fewer back changes the direction")
    return "up" if ups.pop() else "down"


def _range_position(c: Chart) -> str:
    lo, hi, last = c.px(np.min(c.low)), c.px(np.max(c.high)), c.px(c.close[-1])
    for third in (1 / 3, 2 / 3):
        if not _apart(last, lo + third * (hi - lo)):
            raise LeftOut(f"last close within {APART_PX:g} px of a third of the range")
    share = (last - lo) / (hi - lo)
    return "top" if share > 2 / 3 else "middle" if share > 1 / 3 else "bottom"


def _cross(c: Chart) -> str:
    """The sign of MA5 - MA20 on the bar before the last 10 and on the last; the bars either side of
    the window's edge agree with the first (a miscount by one finds no other crossing); between, at
    most one change of sign among the bars whose lines lie apart."""
    fast, slow = _drawn(c, 5)[-(RECENT + 2):], _drawn(c, 20)[-(RECENT + 2):]
    if len(slow) < RECENT + 2 or not (np.isfinite(fast).all() and np.isfinite(slow).all()):
        raise LeftOut(f"MA20 not drawn on the last {RECENT + 2} bars")
    f, s = c.px(fast), c.px(slow)
    apart = np.abs(f - s) > APART_PX
    above = f > s
    if not (apart[:3].all() and apart[-1]):
        raise LeftOut(f"MA5 within {APART_PX:g} px of MA20 at the window's edge or on the last bar")
    if len(set(above[:3].tolist())) > 1:
        raise LeftOut("MA5 crossed MA20 at the window's edge")
    signs = above[apart]
    turns = int((signs[1:] != signs[:-1]).sum())
    if turns > 1:
        raise LeftOut("MA5 crossed MA20 more than once")
    if turns == 0:
        return "none"
    return "golden" if above[-1] else "death"


def _ma_order(c: Chart) -> str:
    lasts = {}
    for w in MA_WINDOWS:
        ma = _drawn(c, w)
        if not np.isfinite(ma[-1]):
            raise LeftOut(f"MA{w} not drawn on the last bar")
        lasts[w] = c.px(ma[-1])
    if any(not _apart(lasts[a], lasts[b]) for a, b in itertools.combinations(MA_WINDOWS, 2)):
        raise LeftOut(f"two MAs within {APART_PX:g} px at the last bar")
    return ">".join(f"ma{w}" for w in sorted(MA_WINDOWS, key=lambda w: -lasts[w]))


def _ma_slope(c: Chart) -> str:
    ma = _drawn(c, 20)
    indices = _back_bars(c, LOOKBACK)
    if not np.isfinite(ma[indices.start]):
        raise LeftOut(f"MA20 not drawn {LOOKBACK + 1} bars back")
    last = c.px(ma[-1])
    ups = {_sign(last, c.px(ma[i]), f"MA20 now and {LOOKBACK} bars back") for i in indices}
    if len(ups) > 1:
        raise LeftOut("a bar more or fewer back changes the slope")
    return "rising" if ups.pop() else "falling"


def _up_candles(c: Chart) -> int:
    """By colour, which the chart draws exactly (up = close >= open): a flat candle is drawn in the
    up colour yet did not close above its open, so a window holding one is left out. Counting the
    last 10 is the skill asked here, so no miscount rule."""
    if len(c.close) < RECENT:
        raise LeftOut(f"fewer than {RECENT} bars drawn")
    o, cl = c.open[-RECENT:], c.close[-RECENT:]
    if (cl == o).any():
        raise LeftOut("a flat candle (close = open) among the last bars")
    return int((cl > o).sum())


def _volume_above_mean(c: Chart) -> str:
    if c.partial_last:
        raise LeftOut("the last weekly bar is a partial week")
    above = _sign(c.vol_px(c.volume[-1]), c.vol_px(float(c.volume.mean())), "last volume and the mean")
    return "yes" if above else "no"


def _pattern(c: Chart) -> str:
    if c.partial_last:
        raise LeftOut("the last weekly bar is a partial week")
    if len(c.close) < 2:
        raise LeftOut("fewer than 2 bars drawn")
    bars = [tuple(float(c.px(a[i])) for a in (c.open, c.high, c.low, c.close)) for i in (-2, -1)]
    try:
        return last_pattern(bars[0], bars[1], MARGIN_PX)
    except Ambiguous as why:
        raise LeftOut(str(why)) from None


def _mark_color(c: Chart) -> str:
    if c.outside:
        return CANNOT_TELL
    if not c.marked:
        raise LeftOut("fewer than 4 bars to mark")
    i = c.marked[0]
    if c.close[i] == c.open[i]:
        raise LeftOut("the marked bar is a flat candle")
    return "up" if c.close[i] > c.open[i] else "down"


RULES: dict[str, Callable[[Chart], Any]] = {
    "ma5": _position(5), "ma20": _position(20), "ma90": _position(90),
    "highest": _pick(lambda c: c.px(c.close), True), "lowest": _pick(lambda c: c.px(c.close), False),
    "highest_close": _price(lambda c: np.max(c.close)), "last_close": _price(lambda c: c.close[-1]),
    "change": _change, "direction": _direction, "range_position": _range_position, "cross": _cross,
    "ma_order": _ma_order, "ma_slope": _ma_slope, "up_candles": _up_candles,
    "volume_above_mean": _volume_above_mean, "max_volume": _pick(lambda c: c.vol_px(c.volume), True),
    "pattern": _pattern, "mark_color": _mark_color,
}


def _frames_agree(daily: Chart, weekly: Chart) -> str:
    ups = [_sign(c.px(c.close[-1]), c.px(c.close[0]), f"the {name} chart's last and first close")
           for name, c in (("daily", daily), ("weekly", weekly))]
    return "yes" if ups[0] == ups[1] else "no"


# The questions asked of the daily and the weekly chart of one stock and cutoff together.
PAIR_RULES: dict[str, Callable[[Chart, Chart], Any]] = {"frames_agree": _frames_agree}
assert set(RULES) | set(PAIR_RULES) == set(QUESTIONS) == set(TYPES) == set(CHOICES) | set(NUMERIC)


def _ma20_margin(c: Chart) -> float:
    return float(abs(c.px(c.close[-1]) - c.px(c.mas[20][-1])))


def _change_margin(c: Chart) -> float:
    last = c.px(c.close[-1])
    return float(min(abs(last - c.px(c.close[0] * (1 + edge))) for edge in CHANGE_EDGES))


# How far, in pixels, an asked question's answer lies from flipping (its compared values' distance
# from the decision's edge): a chart's difficulty for that question, measured on the chart alone.
# Reading next to forecasting (forecast_link) stratifies by it.
MARGINS: dict[str, Callable[[Chart], float]] = {"ma20": _ma20_margin, "change": _change_margin}


def _seeded(seed: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha256(seed.encode()).hexdigest()[:16], 16))


def question_set(bars: pd.DataFrame, spec: ChartSpec, code: str, cutoff: pd.Timestamp, freq: str,
                 before: pd.DataFrame | None = None) -> QuestionSet:
    """Every question's answer for the drawn ``bars`` (date, OHLCV, ma5, ma20, ma90) of the chart of
    ``code`` at ``cutoff`` in time frame ``freq``, drawn by ``spec``, or why it is left out.
    ``before``: bars of the same time frame just before the drawn ones (mark_color's outside bar)."""
    lay = geometry(bars, spec)
    bottom = lay.price_box.bottom

    def px(price):
        return bottom - lay.y_of(np.asarray(price, dtype=float))

    def vol_px(volume):
        return bottom - lay.y_vol_of(np.asarray(volume, dtype=float))

    partial = partial_last_week(freq, bars["date"].iloc[-1], cutoff)
    marked = marked_bars(len(bars), code, cutoff, freq, len(MARKS), partial)
    rng = _seeded(f"{code}|{pd.Timestamp(cutoff):%Y-%m-%d}|{freq}|mark_color")
    outside_back = int(rng.integers(1, OUTSIDE_BACK + 1))
    outside = (before is not None and len(before) >= outside_back and bool(marked)
               and int(rng.integers(OUTSIDE_SHARE)) == 0)
    arrays = {k: bars[k].to_numpy(dtype=float) for k in ("open", "high", "low", "close", "volume")}
    chart = Chart(**arrays, mas={w: bars[f"ma{w}"].to_numpy(dtype=float) for w in MA_WINDOWS}, marked=marked,
                  px=px, vol_px=vol_px, partial_last=partial, outside=outside)
    answers, left_out = _asked(RULES, chart)
    dates = bars["date"].dt.strftime("%Y-%m-%d").tolist()
    named = [(letter, len(bars) - i, dates[i]) for letter, i in zip(MARKS, marked)]
    if outside:
        named.append((OUTSIDE_MARK, len(bars) + outside_back, f"{before['date'].iloc[-outside_back]:%Y-%m-%d}"))
    margins = {q: round(margin(chart), 2) for q, margin in MARGINS.items() if q in answers}
    return QuestionSet(answers, left_out, tuple(named), OUTSIDE_MARK if outside else MARKS[0] if marked else "", margins,
                       chart)


def _asked(rules: dict[str, Callable[..., Any]], *charts: Chart) -> tuple[dict[str, Any], dict[str, str]]:
    answers, left_out = {}, {}
    for key, rule in rules.items():
        try:
            answers[key] = rule(*charts)
        except LeftOut as why:
            left_out[key] = str(why)
    return answers, left_out


def pair_set(daily: QuestionSet, weekly: QuestionSet) -> QuestionSet:
    """The questions of the daily and the weekly chart of one stock and cutoff, asked together."""
    return QuestionSet(*_asked(PAIR_RULES, daily.chart, weekly.chart))


def is_right(question: str, truth: Any, answer: Any) -> bool:
    """The judge of one question: exact for every choice and count, prices within 1%."""
    if answer is None:
        return False
    if NUMERIC.get(question) == "price":
        return isinstance(answer, (int, float)) and abs(float(answer) - truth) <= VALUE_TOLERANCE * abs(truth)
    return answer == truth
