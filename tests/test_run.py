"""`candlebench run`, the main job: every stage in one command, and the same numbers as the stages
run one by one."""

from __future__ import annotations

import json
import shutil

import pandas as pd

from conftest import cli

RUNS = ("xgboost", "momentum", "constant", "random", "tiny_qwen2_5_vl-transformers")


def test_run_produces_the_report_and_score_agrees(tmp_path, env):
    out = tmp_path / "run"
    args = ["~experiment", "data=slice", "data.codes=[AC,ALI,BPI,JFC,SM,TEL]", "samples.interval=40",
            "baseline.params.xgboost.min_train=20", "score.n_boot=100", f"out_dir={out}"]
    done = cli("run", *args, env=env)
    assert "report of 5 runs" in done.stdout
    report = (out / "report" / "report.md").read_text()
    assert "(random weights)" in report and "pipeline checks" in report
    for name in RUNS:
        assert f"| {name}" in report

    # The same responses scored again by `candlebench score`, in a copy: identical metrics.
    again = tmp_path / "again"
    shutil.copytree(out, again)
    for name in RUNS:
        (again / "runs" / name / "metrics.json").unlink()
        cli("score", *args[:-1], f"out_dir={again}", f"score.run={name}", env=env)
        first = json.loads((out / "runs" / name / "metrics.json").read_text())
        second = json.loads((again / "runs" / name / "metrics.json").read_text())
        assert first == second
        if first["accuracy"] is not None:
            assert f"{first['accuracy'] * 100:.2f}" in report

    samples = pd.read_parquet(out / "samples.parquet")
    parsed = pd.read_parquet(out / "runs" / "tiny_qwen2_5_vl-transformers" / "parsed.parquet")
    assert len(parsed) == len(samples) and {"image_daily", "image_weekly"} <= set(samples.columns)

    # A second run finds everything done: no new records anywhere.
    parts = sorted(p for p in (out / "runs").rglob("parts/*.jsonl"))
    cli("run", *args, env=env)
    assert sorted(p for p in (out / "runs").rglob("parts/*.jsonl")) == parts
