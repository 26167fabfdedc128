"""Every registered task's judge reads any text, as a property: arbitrary JSON (NaN, Infinity,
numbers past a float's range, integers of hundreds of digits, deep nesting) under the task's own
answer keys, inside prose and tags, and arbitrary text. It never raises, and nothing it keeps is a
non-finite number: what it cannot read is no answer with a reason (tests/tasks/test_task_contract.py
checks a fixed list of hostile texts; this one lets hypothesis look for the rest)."""

from __future__ import annotations

import json
import math
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from candlebench.core.results import Parsed
from candlebench.stages.graph import compose_job
from candlebench.task_api import registry as tasks
from helpers import ROOT, TESTS

pytestmark = pytest.mark.unit

JOINED = (TESTS / "toy_tasks", ROOT / "docs" / "example_task")


@pytest.fixture(scope="module")
def judges():
    """Each task's judge (its parser behind the shared bounds) under its default settings."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CANDLEBENCH_TASKS", os.pathsep.join(str(p) for p in JOINED))
        found = {}
        for name in tasks.names():
            task = tasks.get_task(name)
            found[name] = task.judge(compose_job([f"task={name}"]).job.settings)
        return found


# Keys the shipped judges read (reading's questions, E2A's fields, forecast's labels), so the
# arbitrary values land where a parser looks.
KEYS = ("ma5", "ma20", "highest", "highest_close", "change", "cross", "up_candles", "volume_above_mean", "pattern",
        "answers", "answer", "action", "confidence", "rationale", "evidence", "score", "prediction", "caption",
        "direction", "colour", "a")
HUGE = st.sampled_from([10 ** 308 * 9, 10 ** 400, -(10 ** 350), 2 ** 64])
NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), HUGE)
WORDS = st.sampled_from(["above", "below", "not above", "6 or 7", "5-7", "A", "a", "hammer", "BUY", "SELL", "golden",
                         "1e999", "-1e999", "NaN", "9" * 320, "2.0127e+12", "无法判断", "不是", "<score>1e999</score>"])
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, WORDS, st.text(max_size=30))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=5)),
    max_leaves=20)
OBJECTS = st.dictionaries(st.sampled_from(KEYS), VALUES, min_size=1, max_size=6)


def answer_text(obj, prefix: str, suffix: str) -> str:
    # allow_nan: the JSON a model writes may say NaN, Infinity and 1e999 (Python's json reads them)
    return prefix + json.dumps(obj, ensure_ascii=False) + suffix


def finite(value) -> bool:
    """Nothing stored is a non-finite float, at any depth."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(finite(v) for v in value)
    return True


def check(judges, text: str | None) -> None:
    failed = []
    for name, judge in judges.items():
        try:
            p = judge(text)
        except Exception as err:  # noqa: BLE001 - the contract is that none escapes
            failed.append(f"{name} raised {type(err).__name__}: {str(err)[:80]}")
            continue
        if not isinstance(p, Parsed):
            failed.append(f"{name} returned {type(p).__name__}")
        elif p.answer is None and not (p.tier == "none" and p.reason):
            failed.append(f"{name}: no answer without tier 'none' and a reason")
        elif not (finite(p.answer) and finite(dict(p.columns))):
            failed.append(f"{name} kept a non-finite number: {str(p.answer)[:80]} {dict(p.columns)}")
        else:
            json.dumps(p.answer, allow_nan=False)  # what parsed.parquet and the browser write
    assert not failed, f"{str(text)[:120]!r}: " + "; ".join(failed)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=OBJECTS, prefix=st.sampled_from(["", "Answer: ", "```json\n", "<score>", "<think>x</think>"]),
       suffix=st.sampled_from(["", "\n```", "</score>", " Final answer above."]))
def test_any_json_answer_is_judged_without_raising(judges, obj, prefix, suffix):
    check(judges, answer_text(obj, prefix, suffix))


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(list("{}[]:\",0123456789.eE-+<>/"))))
def test_any_text_is_judged_without_raising(judges, text):
    check(judges, text)


@pytest.mark.parametrize("text", [
    '{"a":' * 3000,  # 18 kB: past the JSON decoder's recursion limit
    '{"answers": ' * 3000 + '{"ma5": "above"}' + "}" * 3000,
    "[" * 5000 + "]" * 5000,
    '{"up_candles": ' + "9" * 5000 + "}",  # past Python's 4,300-digit limit for int()
    '{"confidence": ' + "9" * 400 + ', "action": "BUY", "rationale": "x"}',
    "<score>" + "9" * 400 + "</score>",
    '{"up_candles": NaN, "highest_close": Infinity}', '{"up_candles": 1e999, "highest_close": -Infinity}',
    '{"up_candles": ' + "9" * 309 + ', "highest_close": ' + "9" * 309 + "}",
], ids=["nested-objects", "nested-answers", "nested-lists", "5000-digits", "huge-confidence", "huge-score", "nan",
        "1e999", "309-digits"])
def test_hostile_numbers_and_nesting_are_judged_without_raising(judges, text):
    check(judges, text)


def test_a_non_finite_reading_value_is_no_answer_with_a_reason(judges):
    p = judges["reading"]('{"highest_close": Infinity, "up_candles": NaN, "ma5": "above"}')
    assert p.answer == {"ma5": "above"}
    assert re.search(r"highest_close", p.reason) and re.search(r"up_candles", p.reason)
