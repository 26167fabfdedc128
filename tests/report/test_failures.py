"""Parse failures by reason (report/failures.py): counted among a run's answers alone, each reason
with its share and its first raw text; nothing failed, no section."""

from __future__ import annotations

import pandas as pd
import pytest

from candlebench.report.failures import failure_section

pytestmark = pytest.mark.unit


def test_parse_failures_are_counted_by_reason_with_a_raw_text_among_the_answers_alone():
    """A failed generation or a baseline's no-prediction is no answer (core.results.has_answer), so
    never a parse failure: the run's Answered cell counts it; the share is of the run's answers."""
    parsed = pd.DataFrame({"sample_id": ["a", "b", "c", "d"], "answer": ['{"x": 1}', None, None, None],
                           "reason": [None, "no JSON object", "no JSON object", "CUDA out of memory"],
                           "text": ['{"x": 1}', "I think BUY", "hmm", None],
                           "error": [None, None, None, "OutOfMemoryError: CUDA out of memory"]})
    (table,) = failure_section("e2a", {"tiny": parsed}).tables
    rows = table.frame.to_dict("records")
    assert [(r["Reason"], r["Count"], r["Share"]) for r in rows] == [("no JSON object", 2, round(2 / 3, 4))]
    assert rows[0]["First raw text"] == "I think BUY"
    assert failure_section("e2a", {"clean": parsed.iloc[:1]}) is None
    gaps = parsed.drop(columns="error").iloc[[0, 3]].assign(reason=[None, "no prediction: too little history"])
    assert failure_section("forecast", {"xgboost": gaps}) is None  # no answer written, nothing failed to parse
