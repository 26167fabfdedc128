"""The reading judge's gold set: loading it and checking its labels against the charts' facts.

Each line of ``answers.jsonl``: ``id``, ``lang`` (en / zh), the chart (``code``, ``cutoff``,
``frame``: one of reading_facts.py's CHARTS), ``category`` (one of :data:`CATEGORIES`: what makes it
hard), ``case`` (the hard case it was written for, in words), ``response``
(the raw text, as a model would emit it) and ``answers``: what the response answers, read by hand,
for the questions it answers (normalised to the task's answer values; null where a reader cannot
tell which answer it gives, e.g. "engulfing" without a direction, or an echoed "above|below"). A
question the response does not answer is absent. Each answer is right or wrong by the chart's facts.
"""

from __future__ import annotations

import json
from pathlib import Path

from reading_facts import CHARTS, chart

from candlebench.tasks.reading.questions import CHOICES, NUMERIC, UP_CANDLES

HERE = Path(__file__).resolve().parent
# What makes an answer hard to judge. The first, "format", is how the answer is wrapped (fences, prose,
# lenient JSON, lines, Chinese words); the others are the ways a judge gives credit the answer does not
# earn (issue #50): each holds answers in both languages.
CATEGORIES = {
    "format": "wrapping: fences, prose, think blocks, lenient JSON, key: value lines, Chinese answer words",
    "negation": "a negated answer word: not above, no golden cross, 不高于, 未站上, 不是",
    "hedge": "two answers or a range: 6 or 7, 5-7, 104 to 106, B或C",
    "window": "a count beside the window it counted in: of the last 10 bars, 6 ...; 十根中有六根",
    "final": "a draft, then the final answer: Final answers:, a correction object, 'but actually', 更正",
    "pattern": "pattern names: inverted hammer and 倒锤头 are no hammer; doji synonyms",
    "article": "the article a (and N/A) beside letter answers",
    "scientific": "prices in scientific notation, as the text modality once printed them",
    "cannot_tell": "cannot tell, unclear, 无法判断, 看不出",
    "hostile": "NaN, Infinity, 1e999, 309 digits where numbers go",
    "gloss": "the answer with an explanation naming other values or lines",
    "echo": "the question asked back before its answer: Is the last close above or below MA5? Below.",
}


def answers() -> list[dict]:
    return [json.loads(line) for line in (HERE / "answers.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def problems(item: dict) -> list[str]:
    """What is wrong with an item's labels: an unknown category, a chart not in reading_facts.py, a
    question not asked of its chart, a value no question allows."""
    key = (item["code"], item["cutoff"], item["frame"])
    if item.get("category") not in CATEGORIES:
        return [f"category {item.get('category')!r} is not one of {sorted(CATEGORIES)}"]
    if key not in CHARTS:
        return [f"chart {key} is not one of reading_facts.py's CHARTS"]
    asked = chart(*key)[1].answers
    found = []
    for question, value in item["answers"].items():
        if question not in asked:
            found.append(f"{question} is not asked of {key}")
        elif value is not None and NUMERIC.get(question) == "count" and value not in UP_CANDLES:
            found.append(f"{question} {value!r} is not a count")
        elif value is not None and question in CHOICES and value not in CHOICES[question]:
            found.append(f"{question} {value!r} is not one of {CHOICES[question]}")
        elif value is not None and NUMERIC.get(question) == "price" and not isinstance(value, float):
            found.append(f"{question} {value!r} is not a price")
    return found
