"""The reading judge's gold set: loading it and checking its labels against the charts' facts.

Each line of ``answers.jsonl``: ``id``, ``lang`` (en / zh), the chart (``code``, ``cutoff``,
``frame``: one of reading_facts.py's CHARTS), ``case`` (the hard case it was written for), ``response``
(the raw text, as a model would emit it) and ``answers``: what the response answers, read by hand,
for the questions it answers (normalised to the task's answer values; null where a reader cannot
tell which answer it gives, e.g. "engulfing" without a direction, or an echoed "above|below"). A
question the response does not answer is absent. Each answer is right or wrong by the chart's facts.
"""

from __future__ import annotations

import json
from pathlib import Path

from reading_facts import CHARTS, chart

from candlebench.tasks.reading.questions import CHOICES, UP_CANDLES

HERE = Path(__file__).resolve().parent


def answers() -> list[dict]:
    return [json.loads(line) for line in (HERE / "answers.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def problems(item: dict) -> list[str]:
    """What is wrong with an item's labels: a chart not in reading_facts.py, a question not asked of its
    chart, a value no question allows."""
    key = (item["code"], item["cutoff"], item["frame"])
    if key not in CHARTS:
        return [f"chart {key} is not one of reading_facts.py's CHARTS"]
    asked = chart(*key)[1].answers
    found = []
    for question, value in item["answers"].items():
        if question not in asked:
            found.append(f"{question} is not asked of {key}")
        elif value is not None and question == "up_candles" and value not in UP_CANDLES:
            found.append(f"up_candles {value!r} is not a count")
        elif value is not None and question in CHOICES and value not in CHOICES[question]:
            found.append(f"{question} {value!r} is not one of {CHOICES[question]}")
        elif question == "highest_close" and value is not None and not isinstance(value, float):
            found.append(f"highest_close {value!r} is not a number")
    return found
