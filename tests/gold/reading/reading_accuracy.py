"""The reading judge (parser + exact comparison) measured on the gold set, per language:

* ``values``: share of (answer, question asked of its chart) pairs where the parser reads the value the
  hand label gives (both "no answer" counts as agreeing);
* ``verdicts``: share of the same pairs where the judge's verdict (right / wrong against the chart's
  facts) is the hand label's;
* ``answers``: share of answers read wholly right;
* ``wrong_credit``: how many (answer, question) pairs the judge marks right that the hand label marks
  wrong (an answer the text does not give, or gives wrong, credited): the judge's worst error;
* ``credit_lost``: share of the pairs the hand label marks right that the judge marks wrong.

    .venv/bin/python tests/gold/reading/reading_accuracy.py [--misses]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from reading_facts import chart  # noqa: E402
from reading_gold import answers  # noqa: E402

from candlebench.tasks.reading.parse import parse_answer  # noqa: E402
from candlebench.tasks.reading.questions import is_right  # noqa: E402

FLOORS = {"values": 0.95, "verdicts": 0.95, "answers": 0.85}
# Bounds (at most): no wrong credit at all; a little credit lost to answers explained with other
# values (tests/gold/reading/README.md lists them).
CEILINGS = {"wrong_credit": 0, "credit_lost": 0.03}


def measure(items: list[dict] | None = None) -> tuple[dict[str, dict[str, float]], list[tuple]]:
    """Per language the scores of :data:`FLOORS` and :data:`CEILINGS` (and ``n``), and the misses:
    (id, question, hand, parsed)."""
    counts: dict[str, defaultdict] = defaultdict(lambda: defaultdict(int))
    misses = []
    for item in items if items is not None else answers():
        truths = chart(item["code"], item["cutoff"], item["frame"])[1].answers
        read = parse_answer(item["response"]).answers or {}
        c, whole = counts[item["lang"]], True
        c["answers_n"] += 1
        for question, truth in truths.items():
            hand, got = item["answers"].get(question), read.get(question)
            c["n"] += 1
            agree = hand == got
            c["values"] += agree
            by_hand, by_judge = is_right(question, truth, hand), is_right(question, truth, got)
            c["verdicts"] += by_hand == by_judge
            c["wrong_credit"] += by_judge and not by_hand
            c["right_n"] += by_hand
            c["credit_lost"] += by_hand and not by_judge
            if not agree:
                whole = False
                misses.append((item["id"], question, hand, got))
        c["answers"] += whole
    scores = {lang: {"n": c["n"], "values": c["values"] / c["n"], "verdicts": c["verdicts"] / c["n"],
                     "answers": c["answers"] / c["answers_n"], "wrong_credit": c["wrong_credit"],
                     "credit_lost": c["credit_lost"] / c["right_n"]} for lang, c in sorted(counts.items())}
    return scores, misses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list every disagreement")
    args = parser.parse_args()
    scores, misses = measure()
    for lang, s in scores.items():
        print(f"{lang}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in s.items()))
    if args.misses:
        for miss in misses:
            print(*miss, sep="\t")
