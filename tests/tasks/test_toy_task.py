"""The task seam holds: a task that is one folder (tests/toy_tasks/toy: task.py and config.yaml),
found on the registry's path, runs through samples → render → baseline → infer (tiny fixture) →
import → score → report with no change to any shared file."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from candlebench.stages.graph import run_stage
from candlebench.commands.status import report_lines
from helpers import ROOT, TESTS, records


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """The toy folder joined through CANDLEBENCH_TASKS."""
    monkeypatch.setenv("CANDLEBENCH_TASKS", str(TESTS / "toy_tasks"))
    return tmp_path


def test_a_task_defined_in_a_test_runs_every_stage(toy, env, monkeypatch):
    monkeypatch.setenv("CANDLEBENCH_CACHE", env["CANDLEBENCH_CACHE"])
    common = ["task=toy", "data=slice", "data.codes=[AC,ALI,SM]", f"out_dir={toy}", "render.workers=1",
              "infer.batch_size=4"]
    for stage in ("samples", "render", "baseline", "infer"):
        run_stage(stage, common)
    samples = pd.read_parquet(toy / "toy" / "samples.parquet")
    assert len(samples) >= 9 and {"image_daily", "text_ohlcv"} <= set(samples.columns)
    text = (toy / "toy" / samples["text_ohlcv"].iloc[0]).read_text()
    assert text.startswith(f"{samples['code'].iloc[0]} daily bars before") and "date,open,high,low,close" in text

    run = toy / "toy" / "runs" / "tiny_qwen2_5_vl-transformers"
    answered = records(toy, "tiny_qwen2_5_vl-transformers", task="toy")  # scored first: score judges
    assert len(answered) == len(samples) and set(answered["answer"]) <= {"UP", "DOWN"}
    info = json.loads((run / "run.json").read_text())
    assert info["task"] == "toy" and info["identity"]["generation"]["regex"] == "(UP|DOWN)"

    # Responses made elsewhere join as a run of their own, parsed by the toy's parser.
    answers = toy / "answers.jsonl"
    answers.write_text("".join(json.dumps({"sample_id": s, "text": "I say DOWN."}) + "\n" for s in samples["sample_id"]))
    run_stage("import", [*common, f"import_file={answers}", "infer.run_name=elsewhere"])
    for name in ("always_up", "tiny_qwen2_5_vl-transformers", "elsewhere"):
        run_stage("score", [*common, f"score.run={name}"])
    run_stage("report", [*common, "tasks=[toy]", "report.compare=[[always_up,elsewhere]]"])

    metrics = json.loads((toy / "toy" / "runs" / "elsewhere" / "metrics.json").read_text())
    assert metrics["accuracy"] == pytest.approx(1 - samples["up"].mean())
    assert metrics["n_missing_records"] == 0 and metrics["task"] == "toy"
    up = json.loads((toy / "toy" / "runs" / "always_up" / "metrics.json").read_text())
    assert up["accuracy"] == pytest.approx(samples["up"].mean())
    md = (toy / "report" / "report.md").read_text()
    assert "## Toy task" in md and "| elsewhere |" in md and "(random weights)" in md
    comparisons = json.loads((toy / "report" / "comparisons.json").read_text())
    assert comparisons["toy"]["always_up → elsewhere"]["accuracy_diff"] == pytest.approx(1 - 2 * samples["up"].mean())

    # A second task of the study: a one-task report puts its own section first and keeps the toy's.
    forecast = ["task=forecast", *common[1:], "task.baseline.names=[constant]", "score.n_boot=20"]
    for stage in ("samples", "baseline", "score"):
        run_stage(stage, forecast)
    run_stage("report", [*forecast, "tasks=[forecast]"])
    md = (toy / "report" / "report.md").read_text()
    assert md.index("## Forecast") < md.index("## Toy task") and "| elsewhere |" in md, md[:2000]


def test_a_task_of_its_own_samples_without_market_keys_runs_every_stage(tmp_path, env, monkeypatch):
    """The example task of docs/development.md: samples with no market, code or cutoff and no input
    to draw; every stage copes, and its comparison, report and browser rows are the defaults of its
    per-sample scores."""
    monkeypatch.setenv("CANDLEBENCH_TASKS", str(ROOT / "docs" / "example_task"))
    monkeypatch.setenv("CANDLEBENCH_CACHE", env["CANDLEBENCH_CACHE"])
    common = ["task=candle", "task.samples.n=8", f"out_dir={tmp_path}", "render.workers=1", "infer.batch_size=4"]
    for stage in ("samples", "render", "baseline", "infer"):
        run_stage(stage, common)
    samples = pd.read_parquet(tmp_path / "candle" / "samples.parquet")
    assert len(samples) == 8 and not {"market", "code", "cutoff"} & set(samples.columns)
    model = "tiny_qwen2_5_vl-transformers"
    for name in ("always_bullish", "coin", model):
        run_stage("score", [*common, f"score.run={name}"])
    metrics = json.loads((tmp_path / "candle" / "runs" / "always_bullish" / "metrics.json").read_text())
    assert metrics["accuracy"] == pytest.approx((samples["truth"] == "bullish").mean())
    assert metrics["resampled"] == "sample" and metrics["n_missing_records"] == 0
    run_stage("report", [*common, "tasks=[candle]", f"report.compare=[[always_bullish,{model}]]"])
    md = (tmp_path / "report" / "report.md").read_text()
    assert "candle: 8 samples\n" in md and "## Candle colour" in md and f"| always_bullish → {model} | Accuracy | 8 |" in md
    assert "The bootstrap draws samples." in md
    assert "candle" in (tmp_path / "report" / "report.html").read_text()
    lines = report_lines(tmp_path)
    assert lines[0].split() == ["candle", "samples", "8", "samples"] and not any(" error " in line for line in lines)
    assert lines[1] == "candle    render   nothing to draw (its prompts carry its inputs)"  # not "0/0 ... none yet"
