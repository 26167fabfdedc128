"""The reading judge on its hand-labelled gold set (tests/gold/reading/): every label fits its chart's
facts, the set is bilingual and covers the hard cases, and the judge meets its floors in each
language. bench/reading.py prints the same numbers beside the judge's speed."""

from __future__ import annotations

import sys

import pytest

from helpers import TESTS

GOLD = TESTS / "gold" / "reading"
sys.path.insert(0, str(GOLD))

from reading_accuracy import CEILINGS, FLOORS, measure  # noqa: E402
from reading_facts import sheet  # noqa: E402
from reading_gold import CATEGORIES, answers, problems  # noqa: E402

from candlebench.core.io import fingerprint  # noqa: E402
from candlebench.task_api.registry import get_task  # noqa: E402

pytestmark = pytest.mark.unit

ITEMS = answers()
# judge version -> fingerprint of the reading parser's verdicts on the gold set's responses (as
# tests/tasks/test_judge_versions.py pins the other tasks' on main's study, where no reading answer is).
PINNED = {2: "d435cb7c6f277206"}


def test_the_gold_set_is_bilingual_labelled_from_the_facts_and_current():
    langs = [item["lang"] for item in ITEMS]
    assert len(ITEMS) >= 40 and abs(langs.count("en") - langs.count("zh")) <= 4
    assert len({item["id"] for item in ITEMS}) == len(ITEMS)
    assert {item["id"]: problems(item) for item in ITEMS if problems(item)} == {}
    # Partial answers, refusals and wrong answers are all there, as models give them.
    assert sum(not item["answers"] for item in ITEMS) >= 3
    assert (GOLD / "facts.md").read_text() == sheet() + "\n"  # the sheet the labels were made from is current


def test_every_hard_category_is_there_in_both_languages():
    """Each way a judge gives unearned credit (reading_gold.CATEGORIES) has answers in English and
    Chinese, and the hard answers hold at least 300 labelled fields."""
    have = {(item["category"], item["lang"]) for item in ITEMS}
    assert {(c, lang) for c in CATEGORIES for lang in ("en", "zh")} - have == set()
    assert sum(len(item["answers"]) for item in ITEMS if item["category"] != "format") >= 300


def test_the_judge_meets_its_floors_in_each_language_and_never_gives_wrong_credit():
    scores, misses = measure(ITEMS)
    below = {(lang, k): round(s[k], 3) for lang, s in scores.items() for k in FLOORS if s[k] < FLOORS[k]}
    above = {(lang, k): round(s[k], 3) for lang, s in scores.items() for k in CEILINGS if s[k] > CEILINGS[k]}
    assert set(scores) == {"en", "zh"} and below == {}, f"below the floors {FLOORS}: {below}; misses: {misses}"
    assert above == {}, f"above the ceilings {CEILINGS}: {above}; misses: {misses}"


def test_a_judge_whose_verdicts_change_has_a_new_version():
    task = get_task("reading")
    parse = task.parser(None)
    verdicts = [(p.answer, p.tier, p.reason, dict(sorted(p.columns.items())))
                for p in map(parse, [None, "", *(item["response"] for item in ITEMS)])]
    assert fingerprint(verdicts) == PINNED.get(task.judge_version), (
        "the reading judge's verdicts changed: raise ReadingTask.judge_version and pin the new digest")
