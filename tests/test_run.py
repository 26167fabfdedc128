"""`candlebench run`, the main job: every stage in one command, the same numbers as the stages run
one by one, the forecast benchmark unchanged by the task seam (golden files), and your own data
with nothing else set."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from helpers import DATA_DIR, SLICE, cli, forecast_snapshot

RUNS = ("xgboost", "momentum", "constant", "random", "tiny_qwen2_5_vl-transformers")
# The golden files' setup (tests/data/golden/forecast.json: made with the code before the task seam,
# regenerated when the continuous groups moved to cutoff returns and the metrics gained n_reasoning_cut;
# #25 gave the baselines' no-answer records their reason and the metrics no_answer_reasons, both
# edited into the golden file from the records already there).
# XGBoost trains on the test grid (train_stride = the interval), as the golden records were made;
# its default, every day, has its own tests.
GOLDEN = ["tasks=[forecast]", "data=slice", "data.codes=[AC,ALI,BPI,JFC,SM,TEL]", "task.samples.interval=40",
          "task.baseline.params.xgboost.min_train=20", "task.baseline.params.xgboost.train_stride=40", "score.n_boot=100",
          "render.workers=1"]


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory, env):
    out = tmp_path_factory.mktemp("run") / "run"
    done = cli("run", *GOLDEN, f"out_dir={out}", env=env)
    return out, done


def test_forecast_is_unchanged_by_the_task_seam(golden_run):
    """Charts (bytes), samples, every record and every metrics.json value equal the files the
    pre-refactor main produced on the same config."""
    out, _ = golden_run
    golden = json.loads((DATA_DIR / "golden" / "forecast.json").read_text())
    now = json.loads(json.dumps(forecast_snapshot(out), sort_keys=True))
    assert len(golden["charts"]) == 180 and set(golden["records"]) == set(RUNS)
    for part in ("charts", "samples", "records", "metrics"):
        assert now[part] == golden[part], part


def test_run_produces_the_report_and_score_agrees(tmp_path, golden_run, env):
    out, done = golden_run
    assert "report of 5 runs" in done.stdout
    report = (out / "report" / "report.md").read_text()
    assert "(random weights)" in report and "pipeline checks" in report
    page = (out / "report" / "report.html").read_text()
    assert "<em>(random weights)</em> are pipeline checks" in page and "*(random weights)*" not in page
    for name in RUNS:
        assert f"| {name}" in report

    # The same responses scored again by `candlebench score`, in a copy: identical metrics.
    again = tmp_path / "again"
    shutil.copytree(out, again)
    for name in RUNS:
        (again / "forecast" / "runs" / name / "metrics.json").unlink()
        cli("score", *GOLDEN, f"out_dir={again}", f"score.run={name}", env=env)
        first = json.loads((out / "forecast" / "runs" / name / "metrics.json").read_text())
        second = json.loads((again / "forecast" / "runs" / name / "metrics.json").read_text())
        assert first == second
        assert f"{first['accuracy'] * 100:.2f}" in report

    samples = pd.read_parquet(out / "forecast" / "samples.parquet")
    parsed = pd.read_parquet(out / "forecast" / "runs" / "tiny_qwen2_5_vl-transformers" / "parsed.parquet")
    assert len(parsed) == len(samples) and {"image_daily", "image_weekly"} <= set(samples.columns)
    # The pipeline check exercises every statistic: the tiny VLM's answers depend on the chart.
    assert parsed["pred"].nunique() >= 5
    tiny = json.loads((out / "forecast" / "runs" / "tiny_qwen2_5_vl-transformers" / "metrics.json").read_text())
    assert tiny["ic_mean"] is not None and tiny["rank_ic_mean"] is not None and tiny["icir"] is not None
    assert tiny["ci"]["ic_mean"] is not None and tiny["n_dates"] >= 10 and tiny["n_dates_skipped"] == 0

    # A second run finds everything done: no new records anywhere.
    parts = sorted((out / "forecast" / "runs").rglob("parts/*.jsonl"))
    cli("run", *GOLDEN, f"out_dir={out}", env=env)
    assert sorted((out / "forecast" / "runs").rglob("parts/*.jsonl")) == parts


def test_own_data_with_nothing_else_set(tmp_path, env):
    """`candlebench run data=csv data.path=FILE`: the demo experiment stays out of the way, and
    every task runs (E2A-style with its verify pass; chart reading, joined to the forecast run of the
    same model)."""
    mine = tmp_path / "my märket.csv"  # a space and a non-ASCII letter, as users name files
    frame = pd.read_csv(SLICE)
    # 120 sessions (one forecast cutoff: 90 bars before, 30 after; two E2A-style and caption dates a
    # stock): the run's every stage and task, not its scale.
    frame = frame[frame["code"].isin(["AC", "ALI", "SM", "TEL"]) & (frame["date"] >= "2019-01-01")]
    frame[frame["date"].isin(sorted(frame["date"].unique())[:120])].to_csv(mine, index=False)
    done = cli("run", "data=csv", f"data.path={mine}", env=env, cwd_out=tmp_path)
    out = tmp_path / "outputs" / "my märket"  # the study folder is named after the file
    report = out / "report" / "report.html"
    assert report.exists(), done.stdout[-2000:]
    for task in ("forecast", "e2a", "reading"):
        samples = pd.read_parquet(out / task / "samples.parquet")
        assert set(samples["code"]) == {"AC", "ALI", "SM", "TEL"}
    assert (out / "e2a" / "runs" / "tiny_qwen2_5_vl-transformers-verify" / "metrics.json").exists()
    md = (out / "report" / "report.md").read_text()
    assert "Forecast" in md and "E2A-style leaderboard" in md and "oracle-aided verification (direct → verify" in md
    reading = {run: json.loads((out / "reading" / "runs" / run / "metrics.json").read_text())
               for run in ("oracle", "tiny_qwen2_5_vl-transformers")}
    assert reading["oracle"]["all"]["accuracy"] == 1.0 and "forecast" not in reading["oracle"]
    link = reading["tiny_qwen2_5_vl-transformers"]["forecast"]  # its forecast run, scored before it
    assert link["n"] == link["read_right"]["n"] + link["read_wrong"]["n"] > 0
    assert "## Chart reading" in md and "Chart reading next to forecasting" in md and "oracle (reference)" in md
    # ... and an out_dir with a space and a non-ASCII letter, unquoted as typed.
    out = tmp_path / "résultats 1"
    cli("samples", "data=csv", f"data.path={mine}", f"out_dir={out}", env=env)
    samples = pd.read_parquet(out / "forecast" / "samples.parquet")
    assert set(samples["code"]) == {"AC", "ALI", "SM", "TEL"}
