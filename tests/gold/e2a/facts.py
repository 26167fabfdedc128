"""The windows of the E2A judge's gold set: real windows of the committed PSE slice, their anchor
facts, and a fact sheet in plain words for whoever labels answers by hand.

    .venv/bin/python tests/gold/e2a/facts.py > facts.md

A window is a stock and an evaluation date; its bars are the stock's bars strictly before the date
(the E2A-style task's rule). The windows were picked to cover every label of every anchor, including
a golden or death cross further back than the 5-bar ``ma_cross`` look-back.
"""

from __future__ import annotations

import math
import sys
import zlib
from functools import lru_cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from candlebench.market.market import load_market  # noqa: E402
from candlebench.tasks.e2a.anchors import Anchors, compute_anchors  # noqa: E402

SLICE = ROOT / "tests" / "data" / "pse_slice.csv"
COLUMNS = ("open", "high", "low", "close", "volume")
MIN_BARS = 50


@lru_cache(maxsize=1)
def _market():
    return load_market([SLICE], name="PSE")


def window_anchors(code: str, cutoff: str) -> Anchors:
    bars = _market().stock(code)
    history = bars[bars["date"] < pd.Timestamp(cutoff)]
    if len(history) < MIN_BARS:
        raise ValueError(f"{code} {cutoff}: {len(history)} bars before the date, fewer than {MIN_BARS}")
    return compute_anchors({k: history[k].to_numpy(dtype=float) for k in COLUMNS})


def candidate_windows(step: int = 23) -> list[tuple[str, str]]:
    market = _market()
    found = []
    for code in sorted(market.bars["code"].unique()):
        dates = market.stock(code)["date"]
        found += [(code, f"{d:%Y-%m-%d}") for d in dates.iloc[MIN_BARS::step]]
    return found


def pick(count: int = 48) -> list[tuple[str, str]]:
    """Greedy: each next window adds the most (anchor, label) pairs not yet covered."""
    pool = {w: window_anchors(*w) for w in candidate_windows()}
    covered: set[tuple[str, str]] = set()
    chosen: list[tuple[str, str]] = []

    def features(a: Anchors) -> set[tuple[str, str]]:
        f = {(k, v) for k, v in a.labels.items()}
        for key in ("golden_cross_bars", "death_cross_bars"):
            ago = a.values[key]
            f.add((key, "none" if math.isnan(ago) else "recent" if ago < 5 else "older"))
        for key in ("ma_position_short", "ma_position_mid", "ma_position", "ma_cross"):
            f.add((key, "+" if a.values[key] > 0 else "-"))
        return f

    while len(chosen) < count and pool:
        best = max(sorted(pool), key=lambda w: (len(features(pool[w]) - covered), zlib.crc32(repr(w).encode()) % 97))
        covered |= features(pool.pop(best))
        chosen.append(best)
    return chosen


def sheet(code: str, cutoff: str) -> str:
    a = window_anchors(code, cutoff)
    v = a.values

    def side(x: float) -> str:
        return "above" if x > 0 else "below" if x < 0 else "exactly at"

    def ago(x: float) -> str:
        return "none in the window" if math.isnan(x) else f"yes, {int(x)} bars before the last bar"

    lines = [f"### {code} {cutoff} (window = the 30 bars before {cutoff})",
             f"- close vs MA5: {side(v['ma_position_short'])} ({v['ma_position_short']:+.2%}); vs MA10: "
             f"{side(v['ma_position_mid'])} ({v['ma_position_mid']:+.2%}); vs MA20: {side(v['ma_position'])} ({v['ma_position']:+.2%})",
             f"- MA5 vs MA20 on the last bar: MA5 {side(v['ma_cross'])} MA20",
             f"- golden cross (MA5 up through MA20) in the window: {ago(v['golden_cross_bars'])}; "
             f"death cross: {ago(v['death_cross_bars'])}",
             f"- trend: {a.labels['trend']} ({v['trend']:+.1%} over the window; up >= +5%, down <= -5%)",
             f"- 5-day momentum: {a.labels['momentum_5d']} ({v['momentum_5d']:+.1%}; up >= +3%, down <= -3%)",
             f"- range position: {a.labels['range_position']} ({v['range_position']:.2f} of the window's low-high range; top >= 0.8, bottom <= 0.2)",
             f"- breakout (close beyond the prior 20 bars' high/low): {a.labels['breakout']}",
             f"- volume (last 5 bars / window mean): {a.labels['volume_change']} ({v['volume_change']:.2f}; surge >= 1.5, shrink <= 0.67)",
             f"- price-volume: {a.labels['price_volume']}",
             f"- volatility (std of daily returns): {a.labels['volatility']} ({v['volatility']:.2%}; high >= 3%, low <= 1%)",
             f"- last candle: {a.labels['last_candle']}",
             f"- strong signals: {a.strong_signals} ({', '.join(a.strong) or 'none'})"]
    return "\n".join(lines)


if __name__ == "__main__":
    for w in pick():
        print(sheet(*w), end="\n\n")
