"""Load and check the E2A judge's gold set (README.md beside this file): every answer's schema, its
window, and every hand-labelled verdict against the window's facts.

    .venv/bin/python tests/gold/e2a/gold.py            # checks every answers_*.jsonl, exit 1 on a problem

The fact table below is written from the fact sheet's definitions, apart from the judge's own
(tasks/e2a/claims/), so that a labelling slip and a judge bug cannot hide each other.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from facts import window_anchors  # noqa: E402

HERE = Path(__file__).resolve().parent
ACTIONS = ("BUY", "SELL", "HOLD", "UNCERTAIN")
POLARITIES = ("bullish", "bearish", "neutral")


def _crossed(key: str) -> Callable:
    return lambda a: not math.isnan(a.values[key])


FACTS: dict[str, Callable] = {
    "close_above_ma5": lambda a: a.values["ma_position_short"] > 0,
    "close_below_ma5": lambda a: a.values["ma_position_short"] < 0,
    "close_above_ma10": lambda a: a.values["ma_position_mid"] > 0,
    "close_below_ma10": lambda a: a.values["ma_position_mid"] < 0,
    "close_above_ma20": lambda a: a.values["ma_position"] > 0,
    "close_below_ma20": lambda a: a.values["ma_position"] < 0,
    "close_above_all_mas": lambda a: min(a.values["ma_position_short"], a.values["ma_position_mid"], a.values["ma_position"]) > 0,
    "close_below_all_mas": lambda a: max(a.values["ma_position_short"], a.values["ma_position_mid"], a.values["ma_position"]) < 0,
    "ma5_above_ma20": lambda a: a.values["ma_cross"] > 0,
    "ma5_below_ma20": lambda a: a.values["ma_cross"] < 0,
    "golden_cross": _crossed("golden_cross_bars"),
    "death_cross": _crossed("death_cross_bars"),
    "uptrend": lambda a: a.labels["trend"] == "up",
    "downtrend": lambda a: a.labels["trend"] == "down",
    "sideways": lambda a: a.labels["trend"] == "flat",
    "momentum_up": lambda a: a.labels["momentum_5d"] == "up",
    "momentum_down": lambda a: a.labels["momentum_5d"] == "down",
    "near_range_top": lambda a: a.labels["range_position"] == "top",
    "near_range_bottom": lambda a: a.labels["range_position"] == "bottom",
    "breakout_up": lambda a: a.labels["breakout"] == "up",
    "breakout_down": lambda a: a.labels["breakout"] == "down",
    "volume_surge": lambda a: a.labels["volume_change"] == "surge",
    "volume_shrink": lambda a: a.labels["volume_change"] == "shrink",
    "rise_on_volume": lambda a: a.labels["price_volume"] == "rise_on_volume",
    "fall_on_volume": lambda a: a.labels["price_volume"] == "fall_on_volume",
    "rise_on_low_volume": lambda a: a.labels["price_volume"] == "rise_on_low_volume",
    "fall_on_low_volume": lambda a: a.labels["price_volume"] == "fall_on_low_volume",
    "volatility_high": lambda a: a.labels["volatility"] == "high",
    "volatility_low": lambda a: a.labels["volatility"] == "low",
    "long_bullish_candle": lambda a: a.labels["last_candle"] == "long_bullish",
    "long_bearish_candle": lambda a: a.labels["last_candle"] == "long_bearish",
    "doji": lambda a: a.labels["last_candle"] == "doji",
}


def answers() -> Iterator[tuple[str, int, dict]]:
    for path in sorted(HERE.glob("answers_*.jsonl")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                yield path.name, number, json.loads(line)


def problems(item: dict) -> list[str]:
    found = []
    for key in ("id", "lang", "code", "cutoff", "response", "action", "confidence", "polarity", "claims", "unverifiable"):
        if key not in item:
            found.append(f"missing {key!r}")
    if found:
        return found
    if item["lang"] not in ("en", "zh"):
        found.append(f"lang {item['lang']!r}")
    if item["action"] not in (*ACTIONS, None):
        found.append(f"action {item['action']!r}")
    c = item["confidence"]
    if c is not None and not (isinstance(c, (int, float)) and 0 <= c <= 1):
        found.append(f"confidence {c!r}")
    if item["polarity"] not in POLARITIES:
        found.append(f"polarity {item['polarity']!r}")
    try:
        anchors = window_anchors(item["code"], item["cutoff"])
    except Exception as e:  # noqa: BLE001 - reported as a problem of this line
        return [*found, f"window: {e}"]
    seen = set()
    for claim in item["claims"]:
        name, negated, verdict = claim.get("claim"), claim.get("negated"), claim.get("verdict")
        if name not in FACTS:
            found.append(f"unknown claim {name!r}")
            continue
        if (name, negated) in seen:
            found.append(f"claim {name} negated={negated} listed twice")
        seen.add((name, negated))
        expected = "supported" if FACTS[name](anchors) != bool(negated) else "contradicted"
        if verdict != expected:
            found.append(f"claim {name} negated={negated}: labelled {verdict}, the facts say {expected}")
    if not all(isinstance(u, str) and u for u in item["unverifiable"]):
        found.append("unverifiable must be a list of non-empty strings")
    return found


def main() -> int:
    bad, ids, count = 0, set(), 0
    for name, number, item in answers():
        count += 1
        listed = problems(item)
        if item.get("id") in ids:
            listed.append(f"duplicate id {item.get('id')!r}")
        ids.add(item.get("id"))
        for p in listed:
            bad += 1
            print(f"{name}:{number} ({item.get('id')}): {p}")
    print(f"{count} answers, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
