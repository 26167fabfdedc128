"""Reference responders of the E2A-style task: answers with known metric values, which check the
claim matcher and the scorer end to end (and floor a leaderboard).

* ``anchor_oracle`` states every anchor fact truthfully (one sentence each, in the phrases the
  matcher reads), acts on the majority of bullish against bearish facts (HOLD on a tie) with a
  rationale of that polarity, and a confidence rising with the strong-signal count (>= 0.7 only
  with 3 or more): UCR 0, RCI 0, ECI 0.
* ``always_hold``: the same analysis, always HOLD: coverage 0, NDR 0.
* ``contrarian``: the oracle's analysis and rationale, the opposite action: RCI 1 wherever it acts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final, Mapping

from tasks.e2a.anchors import Anchors

# anchor -> label -> (sentence, +1 bullish / -1 bearish / 0)
STATEMENTS: Final[Mapping[str, Mapping[str, tuple[str, int]]]] = {
    "ma_position": {"above_both": ("The close is above both moving averages", 1),
                    "below_both": ("The close is below both moving averages", -1),
                    "mixed": ("The close sits between the 5-day and the 20-day moving average", 0)},
    "ma_cross": {"golden": ("A golden cross of MA5 over MA20 formed", 1),
                 "death": ("A death cross of MA5 under MA20 formed", -1),
                 "none": ("There is no golden cross and no death cross", 0)},
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


def _truthful(anchors: Anchors) -> tuple[str, int]:
    sentences, lean = [], 0
    for anchor, label in anchors.labels.items():
        sentence, sign = STATEMENTS[anchor][label]
        sentences.append(sentence + ".")
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


RESPONDERS: Final[Mapping[str, Callable[[Anchors], str]]] = {
    "anchor_oracle": anchor_oracle, "always_hold": always_hold, "contrarian": contrarian,
}
