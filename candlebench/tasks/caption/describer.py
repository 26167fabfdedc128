"""The reference writer of the generated caption set: a deterministic analyst's note on one chart.

StockGenChaR's references are ElliottWave-Forecast articles, which are not public. For the demo,
the tests and any market without references, this writes one from the bars the chart shows (the
same bars and axis labels as :func:`candlebench.rendering.chart.geometry`): the period, the trend, its size and
scale, the recent moves and the largest day, support and resistance at the drawn price labels, the
close against each moving average, volume, the path through the labelled dates, and a closing
opinion.
Each sentence is drawn from several phrasings by a generator seeded with the sample, so n-gram
metrics are not trivial between samples of the same shape, and the same sample always reads the
same. Lengths land in 100-400 words (the paper's instruction).

Its annotations are the metadata items the chart shows, by the paper's categories: the date
labels of the x axis as ``time``, the price labels of the y axis as ``price``, and as ``degree``
the time frame and the scale of the trend the chart shows (:func:`trend_scale`). Elliott-wave
degrees (Minute, Minor, Intermediate, ...) name the size of a move, each with its usual span of
time; our charts carry no wave counts, so the degree is read from the bars: the trend scale
varies with the chart as the paper's degrees do, where the time frame alone is one item for a
whole dataset (a shuffled reference would name it every time).

Nothing the reference says contradicts its chart: support is stated below the last close and
resistance above it, or stated as given way when the close is the window's low (high); every
change in percent says its direction (gained / lost, higher / lower, a gain / a drop).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from candlebench.rendering.chart import ChartSpec, geometry, price_label


@dataclass(frozen=True)
class Described:
    text: str
    metadata: dict[str, list[str]]  # degree / time / price -> the items the chart shows
    opinion: str  # positive / negative / neutral: what the closing sentence says


def _pick(rng: np.random.Generator, *options: str) -> str:
    return options[int(rng.integers(len(options)))]


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.1f}%"


def _money(x: float) -> str:
    """A price as the text states it: two decimals, more below 1 so that three significant digits
    remain (0.00670, never "0.01" for a penny stock)."""
    return f"{x:.2f}" if abs(x) >= 1 or x == 0 else f"{x:.{2 - math.floor(math.log10(abs(x)))}f}"


TREND = 0.05  # a net move of at least 5% across the window is a trend; less is a range
# Calendar days of a trend and its scale word, after Dow theory's horizons: a minor trend lasts
# under three weeks, a secondary (intermediate) one from three weeks to some months (we take six),
# a primary one longer.
SCALES = ((21, "short-term"), (183, "intermediate-term"), (math.inf, "long-term"))


def trend_scale(dates: pd.Series, close: np.ndarray) -> str:
    """The scale word of the trend the chart shows: the whole window's when it trends (a net move
    of at least ``TREND``), else that of the last five bars, the latest move the reference
    describes, since a range has no trend of the window's size; the word is that of the
    calendar time the trend spans (``SCALES``). 60 daily bars: intermediate-term when trending,
    short-term in a range; 60 weekly bars: long-term / intermediate-term."""
    d = pd.to_datetime(pd.Series(dates)).reset_index(drop=True)
    change = close[-1] / close[0] - 1 if close[0] else 0.0
    first = 0 if abs(change) >= TREND else max(0, len(close) - 6)
    days = (d.iloc[-1] - d.iloc[first]).days
    return next(word for limit, word in SCALES if days < limit)


def _level(value: float, close: float, labels: list[str], ticks: np.ndarray, below: bool) -> str | None:
    """The price stated for the support (``below``) or resistance nearest ``value``: the drawn label
    nearest it when that label is on its side of the last close, else ``value`` itself; None when
    not even ``value`` is (the close is the window's low / high at the precision the text prints,
    so the level has given way). Snapping to the nearest label alone put support above the close
    whenever the low sat within half a label step under it."""
    # On its side of both the close and the close as the text prints it, so neither the chart nor
    # the text's own numbers say otherwise.
    stated = float(_money(close))
    side = (lambda x: x < min(close, stated)) if below else (lambda x: x > max(close, stated))
    if not side(float(_money(value))):
        return None
    if len(labels):
        i = int(np.argmin(np.abs(ticks - value)))
        try:  # the value as printed: a tick of 41 * 0.2 is 8.200000000000001, its label "8.2"
            drawn = float(labels[i])
        except ValueError:  # "1.2M"
            drawn = float(ticks[i])
        if side(drawn):
            return labels[i]
    return _money(value)


def seed_of(sample_id: str, seed: int) -> int:
    return int(hashlib.sha256(f"{seed}|{sample_id}".encode()).hexdigest()[:8], 16)


def describe(bars: pd.DataFrame, spec: ChartSpec, code: str, freq: str, seed: int) -> Described:
    """``bars``: the chart's bars with its moving-average columns (``candlebench.market.bars.chart_bars``)."""
    rng = np.random.default_rng(seed)
    lay = geometry(bars, spec)
    dates = [f"{d:%Y-%m-%d}" for d in pd.to_datetime(bars["date"])]
    c, h, lo, v = (bars[k].to_numpy(dtype=float) for k in ("close", "high", "low", "volume"))
    labels = [price_label(p, lay.price_step) for p in lay.price_ticks]
    ticks = np.asarray(lay.price_ticks, dtype=float)
    time_items = [dates[i] for i in lay.date_ticks]
    change = c[-1] / c[0] - 1 if c[0] else 0.0
    recent = c[-1] / c[-6] - 1 if len(c) > 5 and c[-6] else change
    trend = "up" if change >= TREND else "down" if change <= -TREND else "flat"
    scale = trend_scale(bars["date"], c)
    s: list[str] = []
    s.append(_pick(rng, f"This {freq} chart of {code} covers {len(c)} sessions from {dates[0]} to {dates[-1]}.",
                   f"The {freq} candlestick chart shows {code} between {dates[0]} and {dates[-1]}, {len(c)} bars in all.",
                   f"We look at {code} on the {freq} time frame, from {dates[0]} through {dates[-1]}."))
    if trend == "up":
        s.append(_pick(rng, f"Over the period the stock advanced {_pct(change)}, a clear {scale} uptrend.",
                       f"Prices climbed {_pct(change)} across the window, tracing an upward {scale} trend.",
                       f"The stock has been in a rising {scale} trend, gaining {_pct(change)} overall."))
    elif trend == "down":
        s.append(_pick(rng, f"Over the period the stock lost {_pct(change)}, a clear {scale} downtrend.",
                       f"Prices fell {_pct(change)} across the window, tracing a downward {scale} trend.",
                       f"The stock has been in a falling {scale} trend, shedding {_pct(change)} overall."))
    else:
        # A range has no trend of the window's size: the scale is that of the latest moves.
        s.append(_pick(rng, f"Overall the stock moved sideways, ending {_pct(change)} {'higher' if change >= 0 else 'lower'}, "
                            f"so only {scale} moves stand out.",
                       f"The window shows a range-bound market with a net {'gain' if change >= 0 else 'loss'} of "
                       f"{_pct(change)}, leaving only {scale} swings.",
                       f"Prices consolidated, finishing {_pct(change)} {'above' if change >= 0 else 'below'} where they "
                       f"began; the trend is {scale} at most."))
    returns = np.diff(c) / np.where(c[:-1] == 0, 1, c[:-1]) if len(c) > 1 else np.zeros(1)
    big = int(np.argmax(np.abs(returns))) if len(returns) else 0
    s.append(_pick(rng, f"The largest single-session move came on {dates[big + 1] if len(c) > 1 else dates[0]}, "
                        f"{'a gain' if returns[big] >= 0 else 'a drop'} of {_pct(float(returns[big]))}.",
                   f"Its sharpest day was {dates[big + 1] if len(c) > 1 else dates[0]}, when it "
                   f"{'rose' if returns[big] >= 0 else 'fell'} {_pct(float(returns[big]))}."))
    s.append(_pick(rng, f"In the last five sessions it {'gained' if recent >= 0 else 'lost'} {_pct(recent)}, closing at {_money(c[-1])}.",
                   f"The latest week {'added' if recent >= 0 else 'took away'} {_pct(recent)} and the last close was {_money(c[-1])}."))
    sup = _level(float(lo.min()), float(c[-1]), labels, ticks, below=True)
    res = _level(float(h.max()), float(c[-1]), labels, ticks, below=False)
    if sup and res:
        s.append(_pick(rng, f"Support sits near {sup}, where the lows of the window held, while resistance stands near {res}.",
                       f"The chart marks support around {sup} and resistance around {res}.",
                       f"Buyers defended the {sup} area; sellers capped the advance near {res}."))
    elif res:
        s.append(_pick(rng, f"The last close, {_money(c[-1])}, is the lowest price of the window: support has given way, "
                            f"and resistance stands near {res}.",
                       f"Support has given way: the stock closed at {_money(c[-1])}, the low of the window, with "
                       f"resistance near {res}."))
    elif sup:
        s.append(_pick(rng, f"The last close, {_money(c[-1])}, is the highest price of the window: resistance has given way, "
                            f"and support sits near {sup}.",
                       f"Resistance has given way: the stock closed at {_money(c[-1])}, the high of the window, with "
                       f"support near {sup}."))
    else:
        s.append(f"The last close, {_money(c[-1])}, is both the high and the low of the window: prices have not moved.")
    for col in (f"ma{w}" for w in spec.ma_windows):
        ma = bars[col].iloc[-1] if col in bars else np.nan
        if not np.isfinite(ma):
            continue
        where = "above" if c[-1] > ma else "below" if c[-1] < ma else "on"
        s.append(_pick(rng, f"The close is {where} the {col[2:]}-day moving average at {_money(ma)}.",
                       f"Price trades {where} its {col.upper()} ({_money(ma)}).",
                       f"Relative to the {col[2:]}-period average of {_money(ma)}, the stock is {where} it."))
    tail, whole = v[-5:].mean(), v.mean()
    ratio = tail / whole if whole > 0 else 1.0
    s.append(_pick(rng, f"Volume over the last five sessions ran at {ratio:.2f} times the window's average"
                        f"{', a clear expansion' if ratio >= 1.5 else ', a contraction' if ratio <= 0.67 else ''}.",
                   f"Recent volume is {'heavy' if ratio >= 1.5 else 'light' if ratio <= 0.67 else 'ordinary'}, "
                   f"{ratio:.2f} times its average."))
    for i in lay.date_ticks:
        s.append(_pick(rng, f"By {dates[i]} the stock stood at {_money(c[i])}.", f"On {dates[i]} it closed at {_money(c[i])}.",
                       f"Around {dates[i]} prices were near {_money(c[i])}."))
    lean = (1 if trend == "up" else -1 if trend == "down" else 0) + (1 if recent >= 0.03 else -1 if recent <= -0.03 else 0)
    # Levels that have given way are no targets: the closing sentence names only those that stand.
    if lean > 0:
        opinion = "positive"
        s.append(_pick(rng, "We remain constructive and expect the uptrend to extend toward resistance." if res else
                       "We remain constructive and expect the breakout above the window's high to extend.",
                       "The bias stays bullish while support holds, and we favour further upside.",
                       "Our view is positive: dips toward support should find buyers."))
    elif lean < 0:
        opinion = "negative"
        s.append(_pick(rng, "We stay cautious and expect further downside toward support." if sup else
                       "We stay cautious and expect the break below the window's low to extend.",
                       "The bias stays bearish while resistance caps rallies, and we favour more weakness.",
                       "Our view is negative: rallies toward resistance should meet sellers."))
    else:
        opinion = "neutral"
        s.append(_pick(rng, "We stay neutral and would wait for a break of the range before taking a side." if sup and res else
                       "We stay neutral and would wait for the break to be confirmed before taking a side.",
                       "The picture is balanced; we would wait for a clearer signal.",
                       "Our view is neutral until price leaves the range." if sup and res else
                       "Our view is neutral until the break is confirmed."))
    metadata = {"degree": [freq, scale], "time": time_items, "price": labels}
    return Described(" ".join(s), metadata, opinion)
