"""Records keep what the model said; `score` judges it with the task's judge of now (#39).

A verdict stored with an answer is never used; a run judged by another version of the task's
judge, or written to since it was scored, is scored again by the next `score`, without answering
again; `status` and the report say which version judged each run and how much of it is answered.
One small study (momentum's 40 answers), staged in process and shared by the module.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from candlebench.core.jsonl import read_jsonl
from candlebench.core.layout import StudyLayout
from candlebench.core.schema import CURRENT
from candlebench.stages.graph import run_stage
from candlebench.stages.provenance import run_provenance
from candlebench.commands.status import report_lines
from helpers import SCORING_BOOKKEEPING, run_dir
from candlebench.tasks.forecast.parse import parse_score
from candlebench.tasks.forecast.task import TASK

COMMON = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "task.samples.interval=60", "score.n_boot=20"]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("judge")
    for stage, extra in (("samples", []), ("baseline", ["task.baseline.names=[momentum]"]), ("score", [])):
        run_stage(stage, [*COMMON, f"out_dir={out}", *extra])
    return out


def _score(out: Path, capsys, *extra: str) -> str:
    capsys.readouterr()
    run_stage("score", [*COMMON, f"out_dir={out}", *extra])
    return capsys.readouterr().out


def _copy_run(out: Path, name: str, lines: list[dict]) -> Path:
    """A run of momentum's run.json whose one part holds ``lines`` (any layout)."""
    run = run_dir(out, name)
    shutil.rmtree(run, ignore_errors=True)
    (run / "parts").mkdir(parents=True)
    shutil.copy(run_dir(out, "momentum") / "run.json", run / "run.json")
    (run / "parts" / "old.jsonl").write_text("".join(json.dumps(row) + "\n" for row in lines), encoding="utf-8")
    return run


def _rows(out: Path) -> list[dict]:
    return list(read_jsonl(run_dir(out, "momentum") / "responses.jsonl"))


def _numbers(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in ("run_key", *SCORING_BOOKKEEPING)}


def test_score_judges_the_text_never_a_verdict_stored_with_it(study, capsys):
    """Records as today's main wrote them (no schema version, the parse made at generation) whose
    stored parse disagrees with the text: the text is judged, and the run scores as momentum does."""
    legacy = []
    for row in _rows(study):
        row.pop("schema")
        legacy.append({**row, "answer": 0.9, "tier": "scan", "reason": "stale verdict",
                       "columns": {"pred": 0.9, "pred_in_range": True}})
    run = _copy_run(study, "legacy", legacy)
    _score(study, capsys, "score.run=legacy")
    parsed = pd.read_parquet(run / "parsed.parquet").set_index("sample_id")
    for row in legacy:
        expected = parse_score(row["text"])
        assert parsed.loc[row["sample_id"], "pred"] == expected.value and parsed.loc[row["sample_id"], "tier"] == expected.tier
        assert parsed.loc[row["sample_id"], "reason"] == expected.reason
    got = json.loads((run / "metrics.json").read_text())
    assert _numbers(got) == _numbers(json.loads((run_dir(study, "momentum") / "metrics.json").read_text()))
    assert got["judge_version"] == TASK.judge_version and got["schema"] == CURRENT["metrics"]


def test_a_new_judge_version_rejudges_every_run_without_answering_again(study, capsys, monkeypatch, tmp_path):
    # In a copy: its scores by the next judge are refused by this one's once the test ends (#51).
    study = Path(shutil.copytree(study, tmp_path / "study"))
    run = run_dir(study, "momentum")
    _score(study, capsys)  # every run up to date first
    parts = {p.name: p.read_bytes() for p in (run / "parts").glob("*.jsonl")}
    assert f"momentum: 40/40 answered, scored (judge v{TASK.judge_version})" in "\n".join(report_lines(study))

    # The judge changes: every answer now reads as its value halved (version raised with it).
    parser = TASK.parser

    def halved(cfg):
        parse = parser(cfg)

        def judge(text):
            p = parse(text)
            return p if p.answer is None else type(p)(p.answer / 2, p.tier, p.reason, {**p.columns, "pred": p.answer / 2})

        return judge

    monkeypatch.setattr(type(TASK), "parser", lambda self, cfg: halved(cfg))
    monkeypatch.setattr(type(TASK), "judge_version", TASK.judge_version + 1)
    said = "\n".join(report_lines(study))
    assert f"momentum: 40/40 answered, scores out of date: judged by the forecast judge v{TASK.judge_version - 1}; " \
           f"the judge is now v{TASK.judge_version}" in said
    out = _score(study, capsys)
    assert f"forecast/momentum: 40/40 answered; judge v{TASK.judge_version} (scored because: judged by the forecast judge " in out
    metrics = json.loads((run / "metrics.json").read_text())
    parsed = pd.read_parquet(run / "parsed.parquet")
    texts = dict(zip(parsed["sample_id"], parsed["text"]))
    assert all(p == parse_score(texts[s]).value / 2 for s, p in zip(parsed["sample_id"], parsed["pred"]))
    assert metrics["judge_version"] == TASK.judge_version
    assert {p.name: p.read_bytes() for p in (run / "parts").glob("*.jsonl")} == parts  # nothing answered again
    assert "is scored under its current key" in _score(study, capsys)  # not judged twice
    assert run_provenance(StudyLayout(study).task("forecast"), "momentum")["judge_version"] == TASK.judge_version


def test_a_run_scored_while_being_written_is_scored_again_once_it_has_more_answers(study, capsys):
    rows = _rows(study)
    run = _copy_run(study, "unfinished", rows[:25])
    out = _score(study, capsys, "score.run=unfinished")
    assert "forecast/unfinished: 25/40 answered, partial: 15 missing, never starred beside complete runs; judge v" in out
    assert "unfinished: 25/40 answered, scored (judge v" in "\n".join(report_lines(study))
    # The writer goes on (a resumed infer: a part of its own) after the score.
    (run / "parts" / "resumed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[25:]), encoding="utf-8")
    said = "\n".join(report_lines(study))
    assert "unfinished: 40/40 answered, scores out of date: its records changed since it was scored (25/40 answered then)" in said
    assert ", scored (judge" not in said.split("unfinished:")[1].splitlines()[0]
    out = _score(study, capsys)  # no run named: the stale one is found
    assert "forecast/unfinished: 40/40 answered; judge v" in out
    assert json.loads((run / "metrics.json").read_text())["answered"] == 40
