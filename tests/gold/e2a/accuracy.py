"""The E2A judge measured on the gold set: per language, claim precision and recall, rationale
polarity, action and confidence accuracy, as the pipeline reads an answer (parse, then claims of
the parsed analysis and rationale, or of the raw text when nothing parsed).

    .venv/bin/python tests/gold/e2a/accuracy.py [--misses]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from facts import window_anchors  # noqa: E402
from gold import answers  # noqa: E402

from candlebench.tasks.e2a.claims import extract_claims, polarity  # noqa: E402
from candlebench.tasks.e2a.parse import parse_response  # noqa: E402

FLOORS = {"claim_precision": 0.95, "claim_recall": 0.95, "polarity": 0.95, "action": 0.99, "confidence": 0.99}


def judged(item: dict) -> dict:
    a = parse_response(item["response"])
    text = f"{a.analysis or ''}\n{a.rationale or ''}" if a.action is not None else item["response"]
    claims = extract_claims(text, window_anchors(item["code"], item["cutoff"]))
    return {"action": a.action, "confidence": a.confidence,
            "polarity": polarity(a.rationale if a.action is not None else item["response"]),
            "claims": {(c.claim, c.negated, c.verdict) for c in claims if c.anchor is not None}}


def measure(items: list[dict] | None = None) -> tuple[dict[str, dict[str, float]], list[tuple[str, str, object, object]]]:
    """Per language the scores of :data:`FLOORS` (and ``n``), and the misses: (id, what, gold, judged)."""
    counts: dict[str, defaultdict] = defaultdict(lambda: defaultdict(int))
    misses = []
    for item in items if items is not None else [i for _, _, i in answers()]:
        got, c = judged(item), counts[item["lang"]]
        gold = {(x["claim"], bool(x["negated"]), x["verdict"]) for x in item["claims"]}
        c["n"] += 1
        c["tp"] += len(gold & got["claims"])
        c["predicted"] += len(got["claims"])
        c["gold"] += len(gold)
        if gold != got["claims"]:
            misses.append((item["id"], "claims", sorted(gold - got["claims"]), sorted(got["claims"] - gold)))
        for key in ("action", "polarity"):
            c[key] += got[key] == item[key]
            if got[key] != item[key]:
                misses.append((item["id"], key, item[key], got[key]))
        same = (got["confidence"] is None) == (item["confidence"] is None) and (
            got["confidence"] is None or abs(got["confidence"] - item["confidence"]) < 1e-6)
        c["confidence"] += same
        if not same:
            misses.append((item["id"], "confidence", item["confidence"], got["confidence"]))
    scores = {}
    for lang, c in sorted(counts.items()):
        scores[lang] = {"n": c["n"], "claim_precision": c["tp"] / max(c["predicted"], 1),
                        "claim_recall": c["tp"] / max(c["gold"], 1), "claims": c["gold"],
                        **{k: c[k] / c["n"] for k in ("polarity", "action", "confidence")}}
    return scores, misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--misses", action="store_true", help="list every answer the judge reads differently")
    args = parser.parse_args()
    scores, misses = measure()
    for lang, s in scores.items():
        print(f"{lang}: {s['n']} answers, {s['claims']} claims | " + ", ".join(
            f"{k} {s[k]:.3f}{'' if s[k] >= FLOORS[k] else ' (below ' + str(FLOORS[k]) + ')'}" for k in FLOORS))
    if args.misses:
        for m in misses:
            print(*m, sep=" | ")


if __name__ == "__main__":
    main()
