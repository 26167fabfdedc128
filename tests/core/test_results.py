"""core.results' bounds on every judge: what no table, metric or page can hold is no answer."""

from __future__ import annotations

import math

import pytest

from candlebench.core.results import Parsed, bounded

pytestmark = pytest.mark.unit


def test_a_judge_that_keeps_a_non_finite_number_gives_no_answer_with_the_reason():
    def parser(text):  # a parser that broke its own rules
        if text is None:
            return Parsed(None, "none", "empty", {"pred": None})
        return Parsed({"inf": math.inf}, "json", None, {"pred": 0.1}) if text == "a" else \
            Parsed(0.1, "tag", None, {"pred": math.nan})

    judge = bounded(parser)
    for text in ("a", "b"):
        found = judge(text)
        assert (found.answer, found.tier, dict(found.columns)) == (None, "none", {"pred": None})
        assert found.reason == "a number that is not finite in the parsed answer: scored as no answer"
