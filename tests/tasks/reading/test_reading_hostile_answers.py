"""Issue #50's hostile answers end to end: imported into a reading run, they are scored (no
traceback after the records are written, no score failing forever) and reported (no "Out of range
float values" from the sample browser), each a row with its raw text and the reason it was not read."""

from __future__ import annotations

import json

import pandas as pd

from candlebench.stages.graph import run_stage
from helpers import verdicts

HOSTILE = ['{"up_candles": NaN, "ma5": "above"}', '{"up_candles": Infinity}', '{"up_candles": 1e999}',
           '{"up_candles": ' + "9" * 309 + "}", '{"highest_close": Infinity, "ma5": "below"}',
           '{"highest_close": 1e999}', '{"highest_close": ' + "9" * 309 + "}", '{"a":' * 3000]


def test_hostile_answers_are_scored_and_reported_as_rows_with_reasons(tmp_path):
    common = ["task=reading", "data=slice", "data.codes=[AC,ALI]", f"out_dir={tmp_path}", "render.workers=1",
              "task.frames=[daily]", "task.modalities=[text]", "task.samples.start=2019-01-01",
              "task.samples.end=2019-12-31"]
    for stage in ("samples", "render"):
        run_stage(stage, common)
    samples = pd.read_parquet(tmp_path / "reading" / "samples.parquet")
    texts = [HOSTILE[i % len(HOSTILE)] for i in range(len(samples))]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sample_id": s, "text": t}) + "\n" for s, t in zip(samples["sample_id"], texts)))
    run_stage("import", [*common, f"import_file={answers}", "infer.run_name=hostile"])
    run_stage("score", [*common, "score.run=hostile"])
    run_stage("report", [*common, "tasks=[reading]"])

    judged = verdicts(tmp_path, "hostile", task="reading")
    assert len(judged) == len(samples) >= len(HOSTILE)
    for verdict in judged.values():
        assert verdict["answer"] in ({"ma5": "above"}, {"ma5": "below"}, None)
        assert verdict["reason"] and ("not a finite number" in verdict["reason"] or "no answer" in verdict["reason"])
    metrics = json.loads((tmp_path / "reading" / "runs" / "hostile" / "metrics.json").read_text())
    assert metrics["judge_version"] == 2 and 0 <= metrics["all"]["accuracy"] <= 1
    assert (tmp_path / "report" / "report.html").stat().st_size > 0
