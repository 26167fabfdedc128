"""The reference writer of the generated caption set: a deterministic analyst's note on one chart.

StockGenChaR's references are ElliottWave-Forecast articles, which are not public. For the demo,
the tests and any market without references, this writes one from the bars the chart shows (the
same bars and axis labels as :func:`rendering.chart.layout`): the period, the trend and its size,
the recent moves and the largest day, support and resistance at the drawn price labels, the close
against each moving average, volume, the path through the labelled dates, and a closing opinion.
Each sentence is drawn from several phrasings by a generator seeded with the sample, so n-gram
metrics are not trivial between samples of the same shape, and the same sample always reads the
same. Lengths land in 100-400 words (the paper's instruction).

Its annotations are the metadata items the chart actually shows, by the paper's categories: the
time frame as ``degree`` (our charts have no Elliott-wave degrees; the time frame is the scale
label they stand for), the date labels of the x axis as ``time``, the price labels of the y axis
as ``price``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rendering.chart import ChartSpec, layout, price_label


@dataclass(frozen=True)
class Described:
    text: str
    metadata: dict[str, list[str]]  # degree / time / price -> the items the chart shows
    opinion: str  # positive / negative / neutral: what the closing sentence says


def _pick(rng: np.random.Generator, *options: str) -> str:
    return options[int(rng.integers(len(options)))]


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.1f}%"


def seed_of(sample_id: str, seed: int) -> int:
    return int(hashlib.sha256(f"{seed}|{sample_id}".encode()).hexdigest()[:8], 16)


def describe(bars: pd.DataFrame, spec: ChartSpec, code: str, freq: str, seed: int) -> Described:
    """``bars``: the chart's bars with its moving-average columns (``rendering.bars.chart_bars``)."""
    rng = np.random.default_rng(seed)
    lay = layout(bars, spec)
    dates = [f"{d:%Y-%m-%d}" for d in pd.to_datetime(bars["date"])]
    c, h, lo, v = (bars[k].to_numpy(dtype=float) for k in ("close", "high", "low", "volume"))
    labels = [price_label(p, lay.price_step) for p in lay.price_ticks]
    ticks = np.asarray(lay.price_ticks, dtype=float)
    time_items = [dates[i] for i in lay.date_ticks]
    change = c[-1] / c[0] - 1 if c[0] else 0.0
    recent = c[-1] / c[-6] - 1 if len(c) > 5 and c[-6] else change
    trend = "up" if change >= 0.05 else "down" if change <= -0.05 else "flat"
    s: list[str] = []
    s.append(_pick(rng, f"This {freq} chart of {code} covers {len(c)} sessions from {dates[0]} to {dates[-1]}.",
                   f"The {freq} candlestick chart shows {code} between {dates[0]} and {dates[-1]}, {len(c)} bars in all.",
                   f"We look at {code} on the {freq} time frame, from {dates[0]} through {dates[-1]}."))
    if trend == "up":
        s.append(_pick(rng, f"Over the period the stock advanced {_pct(change)}, a clear uptrend.",
                       f"Prices climbed {_pct(change)} across the window, tracing an upward trend.",
                       f"The stock has been in a rising trend, gaining {_pct(change)} overall."))
    elif trend == "down":
        s.append(_pick(rng, f"Over the period the stock lost {_pct(change)}, a clear downtrend.",
                       f"Prices fell {_pct(change)} across the window, tracing a downward trend.",
                       f"The stock has been in a falling trend, shedding {_pct(change)} overall."))
    else:
        s.append(_pick(rng, f"Overall the stock moved sideways, ending {_pct(change)} {'higher' if change >= 0 else 'lower'}.",
                       f"The window shows a range-bound market with a net change of {_pct(change)}.",
                       f"Prices consolidated, finishing {_pct(change)} {'above' if change >= 0 else 'below'} where they began."))
    returns = np.diff(c) / np.where(c[:-1] == 0, 1, c[:-1]) if len(c) > 1 else np.zeros(1)
    big = int(np.argmax(np.abs(returns))) if len(returns) else 0
    s.append(_pick(rng, f"The largest single-session move came on {dates[big + 1] if len(c) > 1 else dates[0]}, "
                        f"{'a gain' if returns[big] >= 0 else 'a drop'} of {_pct(float(returns[big]))}.",
                   f"Its sharpest day was {dates[big + 1] if len(c) > 1 else dates[0]}, when it "
                   f"{'rose' if returns[big] >= 0 else 'fell'} {_pct(float(returns[big]))}."))
    s.append(_pick(rng, f"In the last five sessions it {'gained' if recent >= 0 else 'lost'} {_pct(recent)}, closing at {c[-1]:.2f}.",
                   f"The latest week {'added' if recent >= 0 else 'took away'} {_pct(recent)} and the last close was {c[-1]:.2f}."))
    sup = labels[int(np.argmin(np.abs(ticks - lo.min())))] if len(labels) else f"{lo.min():.2f}"
    res = labels[int(np.argmin(np.abs(ticks - h.max())))] if len(labels) else f"{h.max():.2f}"
    s.append(_pick(rng, f"Support sits near {sup}, where the lows of the window held, while resistance stands near {res}.",
                   f"The chart marks support around {sup} and resistance around {res}.",
                   f"Buyers defended the {sup} area; sellers capped the advance near {res}."))
    for col in (f"ma{w}" for w in spec.ma_windows):
        ma = bars[col].iloc[-1] if col in bars else np.nan
        if not np.isfinite(ma):
            continue
        where = "above" if c[-1] > ma else "below" if c[-1] < ma else "on"
        s.append(_pick(rng, f"The close is {where} the {col[2:]}-day moving average at {ma:.2f}.",
                       f"Price trades {where} its {col.upper()} ({ma:.2f}).",
                       f"Relative to the {col[2:]}-period average of {ma:.2f}, the stock is {where} it."))
    tail, whole = v[-5:].mean(), v.mean()
    ratio = tail / whole if whole > 0 else 1.0
    s.append(_pick(rng, f"Volume over the last five sessions ran at {ratio:.2f} times the window's average"
                        f"{', a clear expansion' if ratio >= 1.5 else ', a contraction' if ratio <= 0.67 else ''}.",
                   f"Recent volume is {'heavy' if ratio >= 1.5 else 'light' if ratio <= 0.67 else 'ordinary'}, "
                   f"{ratio:.2f} times its average."))
    for i in lay.date_ticks:
        s.append(_pick(rng, f"By {dates[i]} the stock stood at {c[i]:.2f}.", f"On {dates[i]} it closed at {c[i]:.2f}.",
                       f"Around {dates[i]} prices were near {c[i]:.2f}."))
    lean = (1 if trend == "up" else -1 if trend == "down" else 0) + (1 if recent >= 0.03 else -1 if recent <= -0.03 else 0)
    if lean > 0:
        opinion = "positive"
        s.append(_pick(rng, "We remain constructive and expect the uptrend to extend toward resistance.",
                       "The bias stays bullish while support holds, and we favour further upside.",
                       "Our view is positive: dips toward support should find buyers."))
    elif lean < 0:
        opinion = "negative"
        s.append(_pick(rng, "We stay cautious and expect further downside toward support.",
                       "The bias stays bearish while resistance caps rallies, and we favour more weakness.",
                       "Our view is negative: rallies toward resistance should meet sellers."))
    else:
        opinion = "neutral"
        s.append(_pick(rng, "We stay neutral and would wait for a break of the range before taking a side.",
                       "The picture is balanced; we would wait for a clearer signal.",
                       "Our view is neutral until price leaves the range."))
    metadata = {"degree": [freq], "time": time_items, "price": labels}
    return Described(" ".join(s), metadata, opinion)
