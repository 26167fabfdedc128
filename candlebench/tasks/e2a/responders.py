"""Reference responders of the E2A-style task: answers with known metric values, which check the
claim matcher and the scorer end to end (and floor a leaderboard).

* ``anchor_oracle`` states every anchor fact truthfully (one sentence each, in the phrases the
  matcher reads), acts on the majority of bullish against bearish facts (HOLD on a tie) with a
  rationale of that polarity, and a confidence rising with the strong-signal count (>= 0.7 only
  with 3 or more): UCR 0, RCI 0, ECI 0.
* ``always_hold``: the same analysis, always HOLD: coverage 0, NDR 0.
* ``contrarian``: the oracle's analysis and rationale, the opposite action: RCI 1 wherever it acts.
* ``liar``: states the opposite of every fact in plain sentences ("The close is above the 20-day
  moving average." when it is below) and acts on what it said: UCR 1 and NDR 0, the judge's check
  that a model stating false facts is not rewarded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final, Mapping

from candlebench.tasks.e2a.anchors import Anchors

# anchor -> label -> (sentence, +1 bullish / -1 bearish / 0)
STATEMENTS: Final[Mapping[str, Mapping[str, tuple[str, int]]]] = {
    "ma_position": {"above_both": ("The close is above the 5-day and the 20-day moving average", 1),
                    "below_both": ("The close is below the 5-day and the 20-day moving average", -1),
                    "mixed": ("The close sits between the 5-day and the 20-day moving average", 0)},
    "ma_cross": {"golden": ("A golden cross of MA5 over MA20 formed", 1),
                 "death": ("A death cross of MA5 under MA20 formed", -1),
                 "none": ("", 0)},  # said by _no_recent_cross: what the window shows
    "trend": {"up": ("The window is in an uptrend", 1), "down": ("The window is in a downtrend", -1),
              "flat": ("Prices move sideways", 0)},
    "momentum_5d": {"up": ("The stock shows positive short-term momentum", 1), "down": ("The stock shows negative short-term momentum", -1),
                    "flat": ("Five-day momentum is small", 0)},
    "range_position": {"top": ("The close is near the top of its range", 1),
                       "bottom": ("The close is near the bottom of its range", -1),
                       "middle": ("The close is in the middle of its range", 0)},
    "breakout": {"up": ("The close made a breakout above the prior highs", 1),
                 "down": ("The close made a breakdown below the prior lows", -1),
                 "none": ("There is no breakout and no breakdown", 0)},
    "volume_change": {"surge": ("There is a volume surge", 0), "shrink": ("There is a volume contraction", 0),
                      "normal": ("Volume is ordinary", 0)},
    "price_volume": {"rise_on_volume": ("The stock rises on heavy volume", 1),
                     "fall_on_volume": ("The stock falls on heavy volume", -1),
                     "rise_on_low_volume": ("The stock rises on light volume", 0),
                     "fall_on_low_volume": ("The stock falls on light volume", 0),
                     "neutral": ("Price and volume give no joint signal", 0)},
    "volatility": {"high": ("The window shows high volatility", 0), "low": ("The window shows low volatility", 0),
                   "normal": ("Volatility is ordinary", 0)},
    "last_candle": {"long_bullish": ("The last bar is a long bullish candle", 1),
                    "long_bearish": ("The last bar is a long bearish candle", -1),
                    "doji": ("The last bar is a doji", 0), "ordinary": ("The last bar is an ordinary candle", 0)},
}


def _no_recent_cross(anchors: Anchors) -> str:
    """No cross in the last bars: the averages' order, and any older cross the chart shows."""
    v = anchors.values
    said = "MA5 is above MA20" if v["ma_cross"] > 0 else "MA5 is below MA20" if v["ma_cross"] < 0 else ""
    older = [name for name in ("golden", "death") if v[f"{name}_cross_bars"] == v[f"{name}_cross_bars"]]
    crosses = (". " + " and ".join(f"a {n} cross" for n in older).capitalize() + " formed earlier in the window"
               if older else ". There is no golden cross and no death cross in the window")
    return (said + crosses).lstrip(". ")


def _truthful(anchors: Anchors) -> tuple[str, int]:
    sentences, lean = [], 0
    for anchor, label in anchors.labels.items():
        sentence, sign = STATEMENTS[anchor][label]
        sentences.append((sentence or _no_recent_cross(anchors)) + ".")
        lean += sign
    return " ".join(sentences), lean


def _answer(analysis: str, rationale: str, action: str, confidence: float) -> str:
    return json.dumps({"analysis": analysis, "rationale": rationale, "action": action,
                       "confidence": round(confidence, 2)})


def _oracle_parts(anchors: Anchors) -> tuple[str, str, str, float]:
    analysis, lean = _truthful(anchors)
    action = "BUY" if lean > 0 else "SELL" if lean < 0 else "HOLD"
    rationale = {"BUY": "The facts are bullish on balance.", "SELL": "The facts are bearish on balance.",
                 "HOLD": "Bullish and bearish facts balance out."}[action]
    confidence = min(0.9, 0.4 + 0.1 * anchors.strong_signals)
    return analysis, rationale, action, confidence


def anchor_oracle(anchors: Anchors) -> str:
    return _answer(*_oracle_parts(anchors))


def always_hold(anchors: Anchors) -> str:
    analysis, rationale, _, confidence = _oracle_parts(anchors)
    return _answer(analysis, rationale, "HOLD", confidence)


def contrarian(anchors: Anchors) -> str:
    analysis, rationale, action, confidence = _oracle_parts(anchors)
    opposite = {"BUY": "SELL", "SELL": "BUY"}.get(action, action)
    return _answer(analysis, rationale, opposite, confidence)


def _lies(anchors: Anchors) -> tuple[list[str], int]:
    """One false sentence per fact, and the lean (+1 bullish / -1 bearish) of what they say."""
    v, labels = anchors.values, anchors.labels
    said: list[tuple[str, int]] = []
    for k, key in (("5", "ma_position_short"), ("20", "ma_position")):
        above = v[key] <= 0
        said.append((f"The close is {'above' if above else 'below'} the {k}-day moving average", 1 if above else -1))
    golden = v["golden_cross_bars"] == v["golden_cross_bars"]
    said.append(("There is no golden cross in the window", -1) if golden else ("A golden cross of MA5 over MA20 formed", 1))
    said.append(("The window is in a downtrend", -1) if labels["trend"] == "up" else ("The window is in an uptrend", 1))
    said.append(("The stock shows negative short-term momentum", -1) if labels["momentum_5d"] == "up"
                else ("The stock shows positive short-term momentum", 1))
    said.append(("The close is near the bottom of its range", -1) if labels["range_position"] == "top"
                else ("The close is near the top of its range", 1))
    said.append(("There is no breakout", -1) if labels["breakout"] == "up"
                else ("The close made a breakout above the prior highs", 1))
    said.append(("There is a volume contraction", 0) if labels["volume_change"] == "surge" else ("There is a volume surge", 0))
    said.append(("The window shows low volatility", 0) if labels["volatility"] == "high"
                else ("The window shows high volatility", 0))
    said.append(("The last bar is a long bearish candle", -1) if labels["last_candle"] == "long_bullish"
                else ("The last bar is a long bullish candle", 1))
    return [sentence + "." for sentence, _ in said], sum(sign for _, sign in said)


def liar(anchors: Anchors) -> str:
    sentences, lean = _lies(anchors)
    action = "BUY" if lean >= 0 else "SELL"
    rationale = "The facts are bullish on balance." if action == "BUY" else "The facts are bearish on balance."
    return _answer(" ".join(sentences), rationale, action, 0.6)


RESPONDERS: Final[Mapping[str, Callable[[Anchors], str]]] = {
    "anchor_oracle": anchor_oracle, "always_hold": always_hold, "contrarian": contrarian, "liar": liar,
}
