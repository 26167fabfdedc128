"""The text modality: the same bars a chart shows, as compact CSV blocks for a prompt.

Format (one block per time frame, oldest bar first, blocks separated by a blank line)::

    AC weekly bars before 2018-03-14 (last 50; MAs over the full history; empty = undefined)
    date,open,high,low,close,volume,ma5,ma20,ma90
    2017-03-31,741,745,722,731.5,1.41M,,,
    ...

Prices keep 5 significant digits, which is finer than any tick size we chart, written as a reader
writes a price: fixed decimals scaled to its size (731.5, 12.345, 0.0012345), never in scientific
notation (123457, not 1.2346e+05: a model that copies it back must be read as the price it is).
Volumes keep 3 with a K/M/B suffix, as in the chart's volume axis. CSV rather than JSON because it
costs about a third of the tokens and every model has read plenty of it.
"""

from __future__ import annotations

import math

import pandas as pd

from candlebench.market.bars import chart_bars


def _price(x: float) -> str:
    """Five significant digits in fixed notation, trailing zeros dropped: what ``%.5g`` writes for
    prices from 0.0001 to 99,999 (the same bytes, so those inputs keep their fingerprints), and the
    whole number, or the decimals five digits need, beyond them."""
    if math.isnan(x):
        return ""
    decimals = max(0, 4 - math.floor(math.log10(abs(x)))) if x else 0
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _volume(x: float) -> str:
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def bars_block(bars: pd.DataFrame, header: str, ma_windows: tuple[int, ...]) -> str:
    columns = ["date", "open", "high", "low", "close", "volume", *(f"ma{w}" for w in ma_windows)]
    lines = [header, ",".join(columns)]
    for row in bars.itertuples(index=False):
        values = [f"{row.date:%Y-%m-%d}", *(_price(getattr(row, c)) for c in ("open", "high", "low", "close"))]
        values.append(_volume(row.volume))
        values += [_price(getattr(row, f"ma{w}")) for w in ma_windows]
        lines.append(",".join(values))
    return "\n".join(lines)


def sample_text(
    history: pd.DataFrame,
    code: str,
    cutoff: pd.Timestamp,
    freqs: tuple[str, ...],
    ma_windows: tuple[int, ...],
    max_bars: int,
) -> str:
    """The text input of one sample: ``history`` must already hold only bars before ``cutoff``."""
    blocks = []
    for freq in freqs:
        bars = chart_bars(history, freq, ma_windows, max_bars)
        header = (
            f"{code} {freq} bars before {cutoff:%Y-%m-%d} "
            f"(last {max_bars}; MAs over the full history; empty = undefined)"
        )
        blocks.append(bars_block(bars, header, ma_windows))
    return "\n\n".join(blocks)
