"""Issue #50's hostile answers end to end, for each task with a judge of numbers: imported as a run
(the answers of a model elsewhere), they are scored (no traceback after the records are written, no
score failing forever) and reported (no "Out of range float values" from the sample browser); each
is a row with its raw text and the reason it was not read, and nothing stored is a non-finite number."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from candlebench.stages.graph import run_stage

NESTED = '{"a":' * 3000
HOSTILE = {
    "reading": ['{"up_candles": NaN, "ma5": "above"}', '{"up_candles": Infinity}', '{"up_candles": 1e999}',
                '{"up_candles": ' + "9" * 309 + "}", '{"highest_close": Infinity, "ma5": "below"}',
                '{"highest_close": 1e999}', '{"highest_close": ' + "9" * 309 + "}", NESTED],
    "forecast": ["<score>" + "9" * 400 + "</score>", "<score>NaN</score>", '{"score": 1e999}', "<score>0.1</score>", NESTED],
    "e2a": ['{"action": "BUY", "confidence": NaN, "rationale": "MA5 above MA20"}',
            '{"action": "SELL", "confidence": ' + "9" * 400 + ', "rationale": "x"}',
            '{"action": "HOLD", "confidence": Infinity, "rationale": "flat"}', NESTED],
}
OWN = {"reading": ["task.frames=[daily]", "task.modalities=[text]"], "forecast": [], "e2a": []}


def finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return True


def strict(text: str):
    """JSON as a browser reads it: NaN and Infinity are no JSON."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} stored in an answer: {text[:80]}"))


@pytest.mark.parametrize("task", sorted(HOSTILE))
def test_hostile_answers_are_scored_and_reported_as_rows_with_reasons(task, tmp_path):
    common = [f"task={task}", "data=slice", "data.codes=[AC,ALI]", f"out_dir={tmp_path}", "task.samples.start=2019-01-01",
              "task.samples.end=2019-12-31", *OWN[task]]
    run_stage("samples", common)
    samples = pd.read_parquet(tmp_path / task / "samples.parquet")
    texts = [HOSTILE[task][i % len(HOSTILE[task])] for i in range(len(samples))]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sample_id": s, "text": t}) + "\n" for s, t in zip(samples["sample_id"], texts)))
    run_stage("import", [*common, f"import_file={answers}", "infer.run_name=hostile"])
    run_stage("score", [*common, "score.run=hostile"])
    run_stage("report", [*common, f"tasks=[{task}]"])

    parsed = pd.read_parquet(tmp_path / task / "runs" / "hostile" / "parsed.parquet")
    assert len(parsed) == len(samples) >= len(HOSTILE[task])
    for answer, reason in zip(parsed["answer"], parsed["reason"]):
        assert finite(strict(answer)) if isinstance(answer, str) else pd.isna(answer) and reason  # no answer: why
    numbers = parsed.select_dtypes("number")
    assert not numbers.isin([math.inf, -math.inf]).any().any(), numbers.columns.tolist()
    metrics = json.loads((tmp_path / task / "runs" / "hostile" / "metrics.json").read_text())
    assert metrics["answered"] == len(samples)
    assert (tmp_path / "report" / "report.html").stat().st_size > 0


def test_the_reading_judge_says_why_each_hostile_number_went_unread(tmp_path):
    from candlebench.tasks.reading.parse import parse_answer

    for text in HOSTILE["reading"][:-1]:
        found = parse_answer(text)
        assert found.answers in ({"ma5": "above"}, {"ma5": "below"}, None) and "not a finite number" in found.reason
    assert parse_answer(NESTED).reason == "no answer to any question"
