"""A study folder written by main before schema versions (8cea46e: the forecast task's samples,
render manifest, two baselines, a partial import and a tiny model's run; E2A-style's samples and
its anchor oracle) is read by this candlebench: `score` re-judges every run from its stored text
(its scores predate judge versions) to the same metrics, and a file of a newer schema is refused
with one line naming it (#39)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from candlebench.core.schema import CURRENT, NewerSchema
from candlebench.stages.graph import run_stage
from candlebench.rendering.render import read_manifest
from candlebench.task_api.registry import get_task
from helpers import DATA_DIR

STUDY = DATA_DIR / "study_main_8cea46e"
COMMON = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "score.n_boot=20", "render.width=200", "render.height=200"]
TASKS = {"forecast": ["task.samples.interval=60"], "e2a": ["task=e2a", "task.samples.interval=180"]}


def _score(out: Path, task: str, *extra: str) -> None:
    run_stage("score", [*COMMON, *TASKS[task], f"out_dir={out}", *extra])


@pytest.fixture()
def study(tmp_path) -> Path:
    return Path(shutil.copytree(STUDY, tmp_path / "study"))


def test_a_study_of_main_before_schema_versions_scores_to_the_same_metrics(study, capsys):
    for task, runs in (("forecast", {"momentum", "constant", "elsewhere", "tiny_qwen2_5_vl-transformers"}),
                       ("e2a", {"anchor_oracle"})):
        before = {r: json.loads((study / task / "runs" / r / "metrics.json").read_text()) for r in runs}
        assert all("schema" not in m and "judge_version" not in m for m in before.values())
        capsys.readouterr()
        _score(study, task)  # no run named: every one, judged before judges had versions
        said = capsys.readouterr().out
        for run, old in before.items():
            assert f"{task}/{run}: " in said and "(scored because: judged before judges had versions; the judge is now v" in said
            new = json.loads((study / task / "runs" / run / "metrics.json").read_text())
            assert {k: new[k] for k in old} == old, run
            assert (new["schema"], new["judge_version"]) == (CURRENT["metrics"], get_task(task).judge_version)
        assert "is scored under its current key" in (_score(study, task), capsys.readouterr().out)[1]
    partial = json.loads((study / "forecast" / "runs" / "elsewhere" / "metrics.json").read_text())
    assert (partial["answered"], partial["n_samples"]) == (30, 40)
    rows = read_manifest(study / "forecast" / "images" / "manifest.jsonl")  # version 1 rows read as they were
    assert len(rows) == 80 and all("schema" not in r and r["sha256"] for r in rows)


@pytest.mark.parametrize("name", ["run.json", "metrics.json"])
def test_a_file_of_a_newer_schema_is_refused_in_one_line_naming_it(study, name):
    path = study / "forecast" / "runs" / "momentum" / name
    kind = "run" if name == "run.json" else "metrics"
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema": CURRENT[kind] + 1}))
    with pytest.raises(NewerSchema) as refused:
        _score(study, "forecast", "score.run=momentum" if name == "run.json" else "score.run=null")
    assert str(refused.value) == (f"{path}: {kind} schema version {CURRENT[kind] + 1}, newer than "
                                  f"this candlebench reads ({CURRENT[kind]}); update candlebench to read it")
