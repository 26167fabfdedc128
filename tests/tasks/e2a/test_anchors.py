"""E2A-style evidence anchors against hand computations (plain Python over the committed CSV's
rows) on real windows of every slice stock, plus flat, zero-volume and gapped windows."""

from __future__ import annotations

import statistics
from collections import Counter

import numpy as np
import pytest

from candlebench.tasks.e2a.anchors import ANCHORS, AnchorSettings, compute_anchors

pytestmark = pytest.mark.unit

S = AnchorSettings()


def hand_anchors(bars: list[dict]) -> dict[str, str]:
    """The rule table of tasks/e2a/anchors.py, written again with lists and the statistics module."""
    closes_all = [b["close"] for b in bars]
    win = bars[-30:]
    c = [b["close"] for b in win]
    o, h, lo, v = ([b[k] for b in win] for k in ("open", "high", "low", "volume"))
    n = len(c)

    def ma(k, end):
        part = closes_all[max(0, end - k + 1): end + 1]
        return sum(part) / len(part)

    last = len(closes_all) - 1
    out = {}
    m5, m20 = ma(5, last), ma(20, last)
    out["ma_position"] = "above_both" if c[-1] > m5 and c[-1] > m20 else "below_both" if c[-1] < m5 and c[-1] < m20 else "mixed"
    diffs = [ma(5, t) - ma(20, t) for t in range(max(0, last - 5), last + 1)]
    cross = "none"
    for i in range(1, len(diffs)):
        if diffs[i - 1] <= 0 < diffs[i]:
            cross = "golden"
        if diffs[i - 1] >= 0 > diffs[i]:
            cross = "death"
    out["ma_cross"] = cross
    xbar, ybar = (n - 1) / 2, sum(c) / n
    slope = sum((i - xbar) * (y - ybar) for i, y in enumerate(c)) / sum((i - xbar) ** 2 for i in range(n))
    t = slope * n / ybar
    out["trend"] = "up" if t >= 0.05 else "down" if t <= -0.05 else "flat"
    m = c[-1] / (c[-6] if n > 5 else c[0]) - 1
    out["momentum_5d"] = "up" if m >= 0.03 else "down" if m <= -0.03 else "flat"
    span = max(h) - min(lo)
    pos = 0.5 if span == 0 else (c[-1] - min(lo)) / span
    out["range_position"] = "top" if pos >= 0.8 else "bottom" if pos <= 0.2 else "middle"
    prior_h, prior_l = h[-21:-1], lo[-21:-1]
    out["breakout"] = "none" if not prior_h else "up" if c[-1] > max(prior_h) else "down" if c[-1] < min(prior_l) else "none"
    mean_v = sum(v) / n
    vr = 1.0 if mean_v == 0 else (sum(v[-5:]) / len(v[-5:])) / mean_v
    out["volume_change"] = "surge" if vr >= 1.5 else "shrink" if vr <= 0.67 else "normal"
    flow = {"surge": "on_volume", "shrink": "on_low_volume"}.get(out["volume_change"])
    direction = "rise" if m > 0 else "fall" if m < 0 else None
    out["price_volume"] = f"{direction}_{flow}" if flow and direction else "neutral"
    rets = [c[i] / c[i - 1] - 1 for i in range(1, n)]
    vol = statistics.stdev(rets) if len(rets) >= 2 else 0.0
    out["volatility"] = "high" if vol >= 0.03 else "low" if vol <= 0.01 else "normal"
    rng = h[-1] - lo[-1]
    mean_rng = sum(a - b for a, b in zip(h, lo)) / n
    body = 0.0 if rng == 0 else (c[-1] - o[-1]) / rng
    rel = 0.0 if mean_rng == 0 else rng / mean_rng
    out["last_candle"] = ("doji" if rng == 0 or abs(body) <= 0.1 else "long_bullish" if body >= 0.6 and rel >= 1.2
                          else "long_bearish" if body <= -0.6 and rel >= 1.2 else "ordinary")
    strong = {"ma_position": {"above_both", "below_both"}, "ma_cross": {"golden", "death"},
              "range_position": {"top", "bottom"}, "breakout": {"up", "down"},
              "price_volume": {"rise_on_volume", "fall_on_volume"}, "volatility": {"high"},
              "last_candle": {"long_bullish", "long_bearish"}}
    out["strong_signals"] = (sum(out[a] in labels for a, labels in strong.items())
                             + (abs(t) >= 0.10) + (abs(m) >= 0.06))
    return out


def arrays(bars: list[dict]) -> dict[str, np.ndarray]:
    return {k: np.array([b[k] for b in bars]) for k in ("open", "high", "low", "close", "volume")}


def check(bars: list[dict]) -> dict[str, str]:
    got = compute_anchors(arrays(bars))
    want = hand_anchors(bars)
    assert dict(got.labels) == {a: want[a] for a in ANCHORS}
    assert got.strong_signals == want["strong_signals"]
    return dict(got.labels)


@pytest.fixture(scope="module")
def stocks(slice_rows) -> dict[str, list[dict]]:
    by_code: dict[str, list[dict]] = {}
    for row in slice_rows:
        bar = {k: float(row[k]) for k in ("open", "high", "low", "close", "volume")}
        by_code.setdefault(row["code"], []).append({**bar, "date": row["date"]})
    return {code: sorted(bars, key=lambda b: b["date"]) for code, bars in by_code.items()}


def test_every_anchor_equals_the_hand_computation_on_real_windows(stocks):
    seen: Counter[tuple[str, str]] = Counter()
    for code, bars in stocks.items():
        for end in range(40, len(bars), 7):  # windows ending on many real days of every stock
            for anchor, label in check(bars[:end]).items():
                seen[(anchor, label)] += 1
    # The comparison has teeth: the real windows reach the labels that matter.
    for must in [("ma_cross", "golden"), ("ma_cross", "death"), ("breakout", "up"), ("breakout", "down"),
                 ("volume_change", "surge"), ("volume_change", "shrink"), ("trend", "up"), ("trend", "down"),
                 ("range_position", "top"), ("range_position", "bottom"), ("price_volume", "rise_on_volume"),
                 ("last_candle", "doji"), ("ma_position", "mixed")]:
        assert seen[must] > 0, must


def test_flat_window_has_defined_labels():
    bars = [{"open": 10.0, "high": 10.0, "low": 10.0, "close": 10.0, "volume": 500.0} for _ in range(40)]
    labels = check(bars)
    assert labels == {"ma_position": "mixed", "ma_cross": "none", "trend": "flat", "momentum_5d": "flat",
                      "range_position": "middle", "breakout": "none", "volume_change": "normal",
                      "price_volume": "neutral", "volatility": "low", "last_candle": "doji"}
    assert compute_anchors(arrays(bars)).strong_signals == 0


def test_zero_volume_window_and_short_history(stocks):
    bars = [dict(b, volume=0.0) for b in stocks["AC"][:40]]
    assert check(bars)["volume_change"] == "normal"
    short = stocks["SM"][:4]  # fewer bars than any rule looks back: still every label defined
    labels = check(short)
    assert set(labels) == set(ANCHORS) and all(isinstance(x, str) for x in labels.values())


def test_a_gap_is_no_bar(stocks):
    """A suspension leaves no bar: the window is the stock's last 30 bars, whatever the calendar."""
    bars = stocks["TEL"][:120]
    gapped = bars[:70] + bars[80:]  # ten trading days missing
    labels = check(gapped)
    assert labels == dict(compute_anchors(arrays(gapped[-60:])).labels)  # only the bars before count
