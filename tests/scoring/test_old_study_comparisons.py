"""A study scored before the comparisons were tested over clusters (tests/data/study_main_8cea46e,
written by main at 8cea46e) re-scores and reports with the new tests, without a new answer: the
comparisons are computed at report time from parsed.parquet, so no judge's version changed (#49)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from candlebench.stages.graph import run_stage
from helpers import DATA_DIR

STUDY = DATA_DIR / "study_main_8cea46e"
COMMON = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "score.n_boot=20", "render.width=200", "render.height=200"]
TASKS = {"forecast": ["task.samples.interval=60"], "e2a": ["task=e2a", "task.samples.interval=180"]}
PAIRS = "report.compare=[[momentum,tiny_qwen2_5_vl-transformers],[anchor_oracle,anchor_oracle]]"


def test_an_old_study_reports_its_comparisons_over_clusters(tmp_path):
    study = Path(shutil.copytree(STUDY, tmp_path / "study"))
    responses = {p: p.read_bytes() for p in study.rglob("parts/*.jsonl")}
    for settings in TASKS.values():
        run_stage("score", [*COMMON, *settings, f"out_dir={study}"])
    run_stage("report", [*COMMON, *TASKS["forecast"], f"out_dir={study}", PAIRS])
    comparisons = json.loads((study / "report" / "comparisons.json").read_text())
    forecast = comparisons["forecast"]["momentum → tiny_qwen2_5_vl-transformers"]
    # 40 samples on 10 cutoff dates: tested exactly over the dates, not over the 40 samples.
    assert (forecast["unit"], forecast["n"], forecast["direction"]["n_clusters"]) == ("cutoff date", 40, 10)
    assert forecast["direction"]["method"].startswith("paired sign-flip test over clusters (exact")
    assert 0 < forecast["direction"]["p"] <= 1 and set(forecast["by_regime"]) <= {"bull", "bear", "sideways"}
    e2a = comparisons["e2a"]["anchor_oracle → anchor_oracle"]  # 48 answers: 16 stock-windows x 3 modalities
    assert (e2a["unit"], e2a["n"], e2a["n_clusters"]) == ("stock-window", 48, 16)
    assert e2a["coverage"]["diff"] == 0 and e2a["coverage"]["p"] == 1.0
    md = (study / "report" / "report.md").read_text()
    assert "Unit of analysis: the cutoff date" in md and "Unit of analysis: the stock-window" in md
    assert {p: p.read_bytes() for p in study.rglob("parts/*.jsonl")} == responses  # no answer asked again
