"""Evidence anchors of the E2A-style task: deterministic facts of one OHLCV window.

E2A-Bench (the seed paper) verifies a model's claims against "deterministic OHLCV-derived facts"
but never published its rules, so these are ours, every threshold a field of
:class:`AnchorSettings`. ``window`` is the stock's last ``window`` bars strictly before the
evaluation date (last bar = the day before); ``history`` may reach further back, for moving
averages only. ``c``, ``o``, ``h``, ``l``, ``v``: closes, opens, highs, lows, volumes of the
window; ``MAk`` = mean of the last ``k`` closes of the history (all of them when it is shorter).

    | anchor         | rule                                                      | labels                              | strong            |
    |----------------|-----------------------------------------------------------|-------------------------------------|-------------------|
    | ma_position    | c[-1] against MA5 and MA20 (equal to one = mixed)         | above_both / below_both / mixed     | above/below_both  |
    | ma_cross       | MA5 - MA20 changes sign within the last 5 bars: from <= 0 | golden / death / none (the latest   | golden, death     |
    |                | to > 0 golden, from >= 0 to < 0 death                     | crossing wins)                      |                   |
    | trend          | OLS slope of c on 0..n-1, times n, over mean(c)           | up >= +5% / down <= -5% / flat      | |x| >= 10%        |
    | momentum_5d    | c[-1] / c[-6] - 1                                         | up >= +3% / down <= -3% / flat      | |x| >= 6%         |
    | range_position | (c[-1] - min l) / (max h - min l); a flat window is 0.5   | top >= 0.8 / bottom <= 0.2 / middle | top, bottom       |
    | breakout       | c[-1] above the max high / below the min low of the 20    | up / down / none                    | up, down          |
    |                | bars before the last                                      |                                     |                   |
    | volume_change  | mean v of the last 5 bars / mean v of the window; 1 when  | surge >= 1.5 / shrink <= 0.67 /     | (never)           |
    |                | the window traded nothing                                 | normal                              |                   |
    | price_volume   | sign of c[-1] / c[-6] - 1 with volume_change surge/shrink | rise_on_volume / fall_on_volume /   | rise_on_volume,   |
    |                | (no move, or normal volume: neutral)                      | rise_on_low_volume /                | fall_on_volume    |
    |                |                                                           | fall_on_low_volume / neutral        |                   |
    | volatility     | std (ddof 1) of the window's daily close-to-close returns | high >= 3% / low <= 1% / normal     | high              |
    | last_candle    | body = (c - o) / (h - l) of the last bar, its range over  | doji (|body| <= 0.1, or no range) / | long_bullish,     |
    |                | the window's mean range                                   | long_bullish (body >= 0.6, range >= | long_bearish      |
    |                |                                                           | 1.2x mean) / long_bearish / ordinary|                   |

Values beyond the labels, for claims the labels cannot check: ``ma_position_short`` /
``ma_position_mid`` / ``ma_position`` are c[-1] / MA5, MA10, MA20 - 1 (the chart draws all three);
``ma_cross`` is MA5 - MA20 on the last bar (which average is on top); ``golden_cross_bars`` and
``death_cross_bars`` are the bars since the latest such crossing anywhere in the window, between two
bars the chart shows (NaN when none). A claim "a golden cross formed" is about what the chart shows,
so it is checked against the whole window, while the ``ma_cross`` label (a *recent* cross, a strong
signal) keeps its 5-bar look-back.

Short windows: momentum and price_volume compare with the first bar when there are fewer than 6;
breakout needs 2 bars (1: none); volatility needs 3 (fewer: low). A gap in the stock's bars
(a suspension) is simply not a bar: the window is its last ``window`` bars. Every label is
defined, never NaN: flat prices give flat / middle / none / low / doji.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

ANCHORS = ("ma_position", "ma_cross", "trend", "momentum_5d", "range_position", "breakout", "volume_change",
           "price_volume", "volatility", "last_candle")

STRONG: Mapping[str, frozenset[str]] = MappingProxyType({
    "ma_position": frozenset({"above_both", "below_both"}),
    "ma_cross": frozenset({"golden", "death"}),
    "range_position": frozenset({"top", "bottom"}),
    "breakout": frozenset({"up", "down"}),
    "volume_change": frozenset(),
    "price_volume": frozenset({"rise_on_volume", "fall_on_volume"}),
    "volatility": frozenset({"high"}),
    "last_candle": frozenset({"long_bullish", "long_bearish"}),
})  # trend and momentum_5d are strong by size, not by label


@dataclass(frozen=True)
class AnchorSettings:
    window: int = 30
    ma_short: int = 5
    ma_mid: int = 10
    ma_long: int = 20
    cross_bars: int = 5
    trend_move: float = 0.05
    trend_strong: float = 0.10
    momentum_bars: int = 5
    momentum_move: float = 0.03
    momentum_strong: float = 0.06
    range_top: float = 0.8
    range_bottom: float = 0.2
    breakout_bars: int = 20
    volume_bars: int = 5
    volume_surge: float = 1.5
    volume_shrink: float = 0.67
    volatility_high: float = 0.03
    volatility_low: float = 0.01
    doji_body: float = 0.1
    long_body: float = 0.6
    long_range: float = 1.2


@dataclass(frozen=True)
class Anchors:
    labels: Mapping[str, str]  # anchor -> label
    values: Mapping[str, float]  # the number behind each label (NaN where a label has none)
    strong: tuple[str, ...]  # anchors whose label counts as a strong signal

    @property
    def strong_signals(self) -> int:
        return len(self.strong)


def _ma(closes: np.ndarray, k: int, end: int) -> float:
    """Mean of the ``k`` closes ending at index ``end`` (inclusive), or of all before it."""
    window = closes[max(0, end - k + 1): end + 1]
    return float(window.sum()) / len(window)  # what .mean() computes, without its overhead


def _band(x: float, up: float, down: float, labels: tuple[str, str, str]) -> str:
    return labels[0] if x >= up else labels[1] if x <= down else labels[2]


def compute_anchors(history: Mapping[str, np.ndarray], s: AnchorSettings = AnchorSettings()) -> Anchors:
    """The anchors of the last ``s.window`` bars of ``history`` (arrays ``open, high, low, close,
    volume``, oldest first, every bar strictly before the evaluation date)."""
    closes_all = np.asarray(history["close"], dtype=float)
    if len(closes_all) == 0:
        raise ValueError("anchors: the window has no bars")
    n = min(s.window, len(closes_all))
    o, h, l, c, v = (np.asarray(history[k], dtype=float)[-n:] for k in ("open", "high", "low", "close", "volume"))
    last = len(closes_all) - 1
    labels: dict[str, str] = {}
    values: dict[str, float] = {}
    strong: list[str] = []

    ma_s, ma_l = _ma(closes_all, s.ma_short, last), _ma(closes_all, s.ma_long, last)
    labels["ma_position"] = ("above_both" if c[-1] > ma_s and c[-1] > ma_l else
                             "below_both" if c[-1] < ma_s and c[-1] < ma_l else "mixed")
    values["ma_position"] = c[-1] / ma_l - 1  # the close against MA20 (claims about one average)
    values["ma_position_short"] = c[-1] / ma_s - 1
    values["ma_position_mid"] = c[-1] / _ma(closes_all, s.ma_mid, last) - 1

    diff = [_ma(closes_all, s.ma_short, t) - _ma(closes_all, s.ma_long, t)
            for t in range(max(0, last - s.cross_bars), last + 1)]
    cross = "none"
    for before, after in zip(diff, diff[1:]):
        if before <= 0 < after:
            cross = "golden"
        elif before >= 0 > after:
            cross = "death"
    labels["ma_cross"] = cross
    values["ma_cross"] = diff[-1]
    shown = [_ma(closes_all, s.ma_short, t) - _ma(closes_all, s.ma_long, t) for t in range(last - n + 1, last + 1)]
    values["golden_cross_bars"] = values["death_cross_bars"] = float("nan")
    for ago, (before, after) in enumerate(zip(shown[-2::-1], shown[::-1])):
        key = "golden_cross_bars" if before <= 0 < after else "death_cross_bars" if before >= 0 > after else None
        if key and np.isnan(values[key]):
            values[key] = float(ago)

    x = np.arange(n, dtype=float)
    slope = float(np.polyfit(x, c, 1)[0]) if n >= 2 else 0.0
    trend = slope * n / float(c.mean())
    labels["trend"] = _band(trend, s.trend_move, -s.trend_move, ("up", "down", "flat"))
    values["trend"] = trend
    if abs(trend) >= s.trend_strong:
        strong.append("trend")

    base = c[-1 - s.momentum_bars] if n > s.momentum_bars else c[0]
    momentum = float(c[-1] / base - 1)
    labels["momentum_5d"] = _band(momentum, s.momentum_move, -s.momentum_move, ("up", "down", "flat"))
    values["momentum_5d"] = momentum
    if abs(momentum) >= s.momentum_strong:
        strong.append("momentum_5d")

    span = float(h.max() - l.min())
    position = 0.5 if span == 0 else float((c[-1] - l.min()) / span)
    labels["range_position"] = _band(position, s.range_top, s.range_bottom, ("top", "bottom", "middle"))
    values["range_position"] = position

    prior_h, prior_l = h[-1 - s.breakout_bars:-1], l[-1 - s.breakout_bars:-1]
    labels["breakout"] = ("none" if len(prior_h) == 0 else "up" if c[-1] > prior_h.max()
                          else "down" if c[-1] < prior_l.min() else "none")
    values["breakout"] = float("nan")

    mean_v = float(v.mean())
    volume = 1.0 if mean_v == 0 else float(v[-s.volume_bars:].mean() / mean_v)
    labels["volume_change"] = _band(volume, s.volume_surge, s.volume_shrink, ("surge", "shrink", "normal"))
    values["volume_change"] = volume

    flow = {"surge": "on_volume", "shrink": "on_low_volume"}.get(labels["volume_change"])
    direction = "rise" if momentum > 0 else "fall" if momentum < 0 else None
    labels["price_volume"] = f"{direction}_{flow}" if flow and direction else "neutral"
    values["price_volume"] = float("nan")

    returns = c[1:] / c[:-1] - 1
    volatility = float(returns.std(ddof=1)) if len(returns) >= 2 else 0.0
    labels["volatility"] = _band(volatility, s.volatility_high, s.volatility_low, ("high", "low", "normal"))
    values["volatility"] = volatility

    bar_range = float(h[-1] - l[-1])
    mean_range = float((h - l).mean())
    body = 0.0 if bar_range == 0 else float((c[-1] - o[-1]) / bar_range)
    relative = 0.0 if mean_range == 0 else bar_range / mean_range
    if bar_range == 0 or abs(body) <= s.doji_body:
        candle = "doji"
    elif body >= s.long_body and relative >= s.long_range:
        candle = "long_bullish"
    elif body <= -s.long_body and relative >= s.long_range:
        candle = "long_bearish"
    else:
        candle = "ordinary"
    labels["last_candle"] = candle
    values["last_candle"] = body

    strong += [a for a, wanted in STRONG.items() if labels[a] in wanted]
    return Anchors(labels, values, tuple(a for a in ANCHORS if a in strong))
