"""A run's identity is its content (#51): one source of truth for its records (the parts, stamped by
a hash of their content), one data set per study folder, one meaning of "answered", every writer of
a run under its lock, and every stored file a command reads either read or refused in one line
naming it. One small study (forecast's momentum baseline over the slice, E2A-style's anchor oracle),
staged in process and copied by each test that changes it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from candlebench.core.errors import CorruptFile
from candlebench.core.layout import StudyLayout
from candlebench.core.lock import Held, run_lock
from candlebench.stages.graph import run_stage
from candlebench.stages.score import ScoringFailed
from candlebench.stages.study import OtherDataSet, OtherKind, of_kind
from candlebench.commands.status import report_lines
from candlebench.task_api.registry import get_task
from helpers import SLICE, run_dir

FORECAST = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "task.samples.interval=60", "score.n_boot=20"]
E2A = [*FORECAST[:2], "task=e2a", "task.samples.interval=180", "score.n_boot=20"]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("identity")
    for common, baseline in ((FORECAST, "momentum"), (E2A, "anchor_oracle")):
        for stage, extra in (("samples", []), ("baseline", [f"task.baseline.names=[{baseline}]"]), ("score", [])):
            run_stage(stage, [*common, f"out_dir={out}", *extra])
    return out


@pytest.fixture
def ws(study, tmp_path) -> Path:
    return Path(shutil.copytree(study, tmp_path / "ws"))


def _stage(name: str, out: Path, *extra: str, common: list[str] = FORECAST) -> None:
    run_stage(name, [*common, f"out_dir={out}", *extra])


def _report(out: Path, *extra: str) -> str:
    _stage("report", out, *extra)
    return (out / "report" / "report.md").read_text()


def _status(out: Path, run: str) -> str:
    (line,) = [line for line in report_lines(out) if f" {run}: " in line]
    return line


def _parts(out: Path, run: str) -> list[Path]:
    return sorted((run_dir(out, run) / "parts").glob("*.jsonl"))


def _rewrite(part: Path, change) -> None:
    rows = [json.loads(line) for line in part.read_text(encoding="utf-8").splitlines()]
    part.write_text("".join(json.dumps(change(row)) + "\n" for row in rows), encoding="utf-8")


def _copy_run(out: Path, name: str, change) -> Path:
    """A run of momentum's run.json and records, each record through ``change``."""
    run = run_dir(out, name)
    (run / "parts").mkdir(parents=True)
    shutil.copy(run_dir(out, "momentum") / "run.json", run / "run.json")
    for part in _parts(out, "momentum"):
        shutil.copy(part, run / "parts" / part.name)
        _rewrite(run / "parts" / part.name, change)
    return run


def test_a_same_length_edit_of_an_answer_makes_its_scores_stale_and_score_judges_it_again(ws, capsys):
    judge = get_task("forecast").judge_version
    assert _status(ws, "momentum").endswith(f"scored (judge v{judge})")
    part = _parts(ws, "momentum")[0]
    text = part.read_text(encoding="utf-8")
    old = json.loads(text.splitlines()[0])["text"]
    new = old.replace("-", "+") if "-" in old else old.replace("0.", "1.", 1)
    assert len(new) == len(old) and new != old
    part.write_text(text.replace(json.dumps(old), json.dumps(new), 1), encoding="utf-8")
    assert "scores out of date: its records changed since it was scored" in _status(ws, "momentum")
    capsys.readouterr()
    _stage("score", ws)
    assert f"forecast/momentum: 40/40 answered; judge v{judge} (scored because: its records changed" in capsys.readouterr().out
    assert _status(ws, "momentum").endswith(f"scored (judge v{judge})")


def test_responses_jsonl_is_derived_and_an_edit_there_is_refused_not_lost(ws):
    run = run_dir(ws, "momentum")
    assert json.loads((run / "responses.jsonl.sha256").read_text())["derived_from"] == "parts/*.jsonl"
    merged = run / "responses.jsonl"
    merged.write_text(merged.read_text().replace("<score>", "<score> ", 1))
    with pytest.raises(ScoringFailed, match=rf"{merged} was edited since it was written from {run / 'parts'}/\*\.jsonl: "
                                            "it is derived, never read; make the edit in the parts"):
        _stage("score", ws, "score.run=momentum")
    merged.unlink()
    _stage("score", ws, "score.run=momentum")
    assert merged.exists() and not (run / "score_error.json").exists()


def test_another_file_of_the_same_name_with_other_bars_is_refused_naming_both(tmp_path):
    """data2/JFC.csv gets data/JFC.csv's default out_dir (outputs/JFC): refused there, in one line
    naming both files and a folder of its own; the same file with new bars rebuilds in place."""
    first, other = tmp_path / "data" / SLICE.name, tmp_path / "data2" / SLICE.name
    first.parent.mkdir(), other.parent.mkdir()
    shutil.copy(SLICE, first)
    frame = pd.read_csv(SLICE)
    frame[["open", "high", "low", "close"]] *= 2
    frame.to_csv(other, index=False)
    common = ["data=csv", "data.market=PSE", *FORECAST[1:], f"paths.output_root={tmp_path / 'outputs'}"]
    run_stage("samples", [*common, f"data.path={first}"])
    study = tmp_path / "outputs" / SLICE.stem
    before = (study / "forecast" / "samples.parquet").read_bytes()
    built = json.loads((study / "forecast" / "samples_summary.json").read_text())["data"]["fingerprint"]
    with pytest.raises(OtherDataSet) as refused:
        run_stage("samples", [*common, f"data.path={other}", "task=e2a"])
    said = str(refused.value)
    assert said.startswith(f"{study} is the study of {first} (forecast's samples), whose bars differ from those of {other}")
    assert f"(out_dir={study}-" in said and len(said.splitlines()) == 1
    assert (study / "forecast" / "samples.parquet").read_bytes() == before and not (study / "e2a").exists()
    frame.to_csv(first, index=False)  # the study's own file, restated: rebuilt where it is
    run_stage("samples", [*common, f"data.path={first}"])
    assert json.loads((study / "forecast" / "samples_summary.json").read_text())["data"]["fingerprint"] != built


def test_a_report_shows_the_tasks_of_one_data_set_and_names_the_others(ws):
    fewer = ["data.codes=[AC,ALI]"]  # the same file, other bars: forecast is rebuilt, e2a keeps the old ones
    _stage("samples", ws, *fewer)
    _stage("baseline", ws, *fewer, "task.baseline.names=[momentum]")
    _stage("score", ws, *fewer)
    md = _report(ws, *fewer)
    assert "## forecast" in md.lower() and "| anchor_oracle" not in md
    hidden = md.split("## Not shown: tasks built from other data")[1].split("\n## ")[0]
    assert "| e2a " in hidden and str(SLICE) in hidden
    (line,) = [line for line in report_lines(ws) if " data " in line]
    assert line.startswith(f"e2a       data     built from other bars ({SLICE}) than the study's ({SLICE}): `report` leaves")


def test_the_reports_header_names_the_data_its_stocks_dates_and_adjustment(study, tmp_path):
    out = Path(shutil.copytree(study, tmp_path / "copy"))
    md = _report(out)
    header = md.split("Contents:")[0]
    assert f"Data: {SLICE} (4 stocks," in header and "AC, ALI, SM, TEL" in header
    assert "no adjustment column (Adj Close / adj_factor): prices used as exported" in header
    samples = pd.read_parquet(out / "forecast" / "samples.parquet")
    assert f"{samples['cutoff'].min():%Y-%m-%d} .. {samples['cutoff'].max():%Y-%m-%d}" in header


def test_answered_is_a_text_without_error_in_every_stage_and_a_partial_baseline_is_never_starred(ws, capsys):
    gaps = set(sorted(pd.read_parquet(ws / "forecast" / "samples.parquet")["sample_id"])[:5])

    def no_prediction(row: dict) -> dict:
        return {**row, "text": None, "reason": "no prediction: too little history"} if row["sample_id"] in gaps else row

    _copy_run(ws, "gappy", no_prediction)
    capsys.readouterr()
    _stage("score", ws, "score.run=gappy")
    said = capsys.readouterr().out
    assert "forecast/gappy: 35/40 answered, partial: 5 missing" in said
    metrics = json.loads((run_dir(ws, "gappy") / "metrics.json").read_text())
    assert (metrics["answered"], metrics["n_samples"]) == (35, 40)
    assert "gappy: 35/40 answered, 5 recorded without an answer, scored" in _status(ws, "gappy")
    md = _report(ws)
    tables = [line for line in md.splitlines() if line.startswith("| gappy") and "35/40 (partial)" in line]
    assert len(tables) >= 4 and not any("★" in row for row in tables)  # headline, Tables 4 and 5, regimes
    assert all("(–)" in row for row in tables if "(rank" in row or " (–) |" in row)  # no rank in Tables 4 and 5
    failures = md.split("## forecast: parse failures")[1].split("\n## ")[0] if "## forecast: parse failures" in md else ""
    assert "gappy" not in failures  # its gaps are no answers, not parse failures


def test_a_report_marks_scores_out_of_date_and_lists_runs_not_scored(ws, tmp_path):
    run = run_dir(ws, "momentum")
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "judge_version": 0}))
    answers = tmp_path / "answers.jsonl"
    ids = sorted(pd.read_parquet(ws / "forecast" / "samples.parquet")["sample_id"])
    answers.write_text("".join(json.dumps({"sample_id": s, "text": "<score>0.010</score>"}) + "\n" for s in ids[:3]))
    _stage("import", ws, f"import_file={answers}", "infer.run_name=pending")
    # A run scored while it was written (25 answers), then finished, reported without scoring again.
    growing = _copy_run(ws, "growing", lambda row: row)
    (part,) = _parts(ws, "growing")
    lines = part.read_text(encoding="utf-8").splitlines(keepends=True)
    part.write_text("".join(lines[:25]), encoding="utf-8")
    _stage("score", ws, "score.run=growing")
    (growing / "parts" / "resumed.jsonl").write_text("".join(lines[25:]), encoding="utf-8")
    md = _report(ws)
    assert "| growing (out of date) |" in md
    assert "| growing | its records changed since it was scored (25/40 answered then) | `candlebench score`" in md
    assert "| momentum (out of date)" in md
    dated = md.split("## forecast: scores out of date or missing")[1].split("\n## ")[0]
    judge = get_task("forecast").judge_version
    assert f"| momentum | judged by the forecast judge v0; the judge is now v{judge} | `candlebench score`" in dated
    assert "| pending | not scored yet | `candlebench score`" in dated


def test_a_newer_judges_scores_are_refused_in_one_line(ws):
    run = run_dir(ws, "momentum")
    newer = get_task("forecast").judge_version + 1
    (run / "metrics.json").write_text(json.dumps({**json.loads((run / "metrics.json").read_text()), "judge_version": newer}))
    with pytest.raises(Exception, match=rf"^{run / 'metrics.json'}: scored by the forecast judge v{newer}, newer than "
                                        f"this candlebench's v{newer - 1}; update candlebench"):
        _stage("score", ws)
    assert f"momentum: error: {run / 'metrics.json'}: scored by the forecast judge v{newer}" in _status(ws, "momentum")


def test_a_baselines_predictions_are_never_scored_against_rebuilt_samples(tmp_path):
    data = tmp_path / "prices.csv"
    shutil.copy(SLICE, data)
    common = ["data=csv", f"data.path={data}", "data.market=PSE", *FORECAST[1:], f"out_dir={tmp_path / 'study'}"]
    for stage, extra in (("samples", []), ("baseline", ["task.baseline.names=[momentum]"]), ("score", [])):
        run_stage(stage, [*common, *extra])
    frame = pd.read_csv(SLICE)
    frame[["open", "high", "low", "close"]] *= 1.5  # the file restated in place: same stocks and dates, other bars
    frame.loc[frame.index % 7 == 0, "close"] *= 1.01
    frame["high"] = frame[["open", "high", "close"]].max(axis=1)
    frame["low"] = frame[["open", "low", "close"]].min(axis=1)
    frame.to_csv(data, index=False)
    run_stage("samples", common)
    again = "candlebench baseline task=forecast 'task.baseline.names=[momentum]'"
    assert f"(`{again}` redoes it)" in _status(tmp_path / "study", "momentum")
    with pytest.raises(ScoringFailed, match=r"momentum: OtherSamples: .*baseline momentum predicted from other market "
                                            r"data than .* was built from \(rebuilt since\).*run `" + re.escape(again) + "` first"):
        run_stage("score", common)


def test_writers_of_one_run_exclude_each_other_whatever_their_shard_counts(tmp_path):
    paths = StudyLayout(tmp_path).task("forecast")
    paths.root.mkdir()
    with run_lock(paths, "r", (0, 2)).hold():
        with run_lock(paths, "r", (1, 2)).hold():  # one array's shards side by side
            pass
        for other in ((0, 1), (0, 2), (1, 3), None):
            with pytest.raises(Held, match=rf"run {paths.run('r').root}.* is being written by another command: pid \d+"):
                with run_lock(paths, "r", other).hold():
                    pass
        with run_lock(paths, "r.b", None).hold():  # another run (whose name starts alike) is another lock
            pass
    with run_lock(paths, "r", None).hold():  # an import (or score) of the run: no one beside it
        for other in ((0, 1), None):
            with pytest.raises(Held):
                with run_lock(paths, "r", other).hold():
                    pass
    with run_lock(paths, "r", (0, 1)).hold():  # every holder gone: free again
        pass


def test_import_waits_for_no_one_it_is_refused_while_the_run_is_written(ws, tmp_path):
    answers = tmp_path / "answers.jsonl"
    sid = sorted(pd.read_parquet(ws / "forecast" / "samples.parquet")["sample_id"])[0]
    answers.write_text(json.dumps({"sample_id": sid, "text": "<score>0.010</score>"}) + "\n")
    paths = StudyLayout(ws).task("forecast")
    before = sorted(p.name for p in _parts(ws, "momentum"))
    with run_lock(paths, "momentum", (0, 1)).hold():  # an infer of the run, shard 0/1
        with pytest.raises(Held):
            _stage("import", ws, f"import_file={answers}", "infer.run_name=momentum", "import_replace=true")
        with pytest.raises(ScoringFailed, match="momentum: .*is being written by another command"):
            _stage("score", ws, "score.run=momentum")
    assert sorted(p.name for p in _parts(ws, "momentum")) == before
    assert not (run_dir(ws, "momentum") / "score_error.json").exists()  # being written is no scoring failure


def test_a_run_is_never_replaced_by_another_kind_or_another_file_unless_told(ws, tmp_path):
    ids = sorted(pd.read_parquet(ws / "forecast" / "samples.parquet")["sample_id"])
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text(json.dumps({"sample_id": ids[0], "text": "<score>0.010</score>"}) + "\n")
    second.write_text(json.dumps({"sample_id": ids[1], "text": "<score>0.020</score>"}) + "\n")
    _stage("import", ws, f"import_file={first}", "infer.run_name=ext")
    with pytest.raises(Exception, match=rf"{run_dir(ws, 'ext')} is an import of another file: importing {second}"):
        _stage("import", ws, f"import_file={second}", "infer.run_name=ext")
    _stage("import", ws, f"import_file={second}", "infer.run_name=ext", "import_replace=true")
    _stage("import", ws, f"import_file={first}", "infer.run_name=momentum", "import_replace=true")
    with pytest.raises(OtherKind, match=rf"{run_dir(ws, 'momentum')} holds the import run of .*: writing a baseline run's answers"):
        _stage("baseline", ws, "task.baseline.names=[momentum]")
    with pytest.raises(OtherKind, match="writing a model run's answers there would replace its own; give this one"):
        of_kind(StudyLayout(ws).task("forecast").run("momentum"), "model", "give this one another infer.run_name")  # infer's check


@pytest.mark.parametrize("damage", ["parsed random", "parsed gone", "metrics random", "run.json gone",
                                    "run.json random", "samples gone", "summary random"])
def test_a_damaged_or_missing_file_is_refused_in_one_line_naming_it(ws, damage):
    run = run_dir(ws, "momentum")
    path = {"parsed random": run / "parsed.parquet", "parsed gone": run / "parsed.parquet",
            "metrics random": run / "metrics.json", "run.json gone": run / "run.json",
            "run.json random": run / "run.json", "samples gone": ws / "forecast" / "samples.parquet",
            "summary random": ws / "forecast" / "samples_summary.json"}[damage]
    if damage.endswith("random"):
        path.write_bytes(bytes(range(256)) * 4)
    else:
        path.unlink()
    with pytest.raises((CorruptFile, FileNotFoundError)) as refused:
        _stage("report", ws)
    said = str(refused.value)
    assert said.startswith(str(path)) and len(said.splitlines()) == 1, said
    if damage.startswith(("parsed", "metrics", "run.json")):
        assert "scored (judge" not in _status(ws, "momentum")
    if damage.startswith("run.json"):  # score names it too, never passing over the run
        with pytest.raises(ScoringFailed, match=rf"forecast/momentum: \w+: {run / 'run.json'}: "):
            _stage("score", ws)


def test_a_record_that_is_no_record_is_refused_naming_its_file_and_line(ws):
    part = _parts(ws, "momentum")[0]
    _rewrite(part, lambda row: {**row, "text": 0.25})
    with pytest.raises(ScoringFailed, match=rf"{part}, line 1: a response record whose text is float"):
        _stage("score", ws, "score.run=momentum")


def test_a_merge_killed_between_its_two_writes_leaves_a_copy_the_next_one_knows(tmp_path):
    """The sidecar is written first, naming the copy it replaces too: a merge killed before its
    responses.jsonl landed leaves the older copy, which the next merge takes as derived, not edited."""
    from candlebench.inference.records import RecordStore, ResponseRecord

    store = RecordStore(tmp_path / "run")
    with store.writer("a") as writer:
        writer.write([ResponseRecord.answered("k", "s1", "m", "import", "<score>0.1</score>")])
    store.merge()
    older = store.responses.read_bytes()
    with store.writer("b") as writer:
        writer.write([ResponseRecord.answered("k", "s2", "m", "import", "<score>0.2</score>")])
    note = json.loads(store.derived.read_text())
    store.derived.write_text(json.dumps({**note, "sha256": "the copy that never landed", "previous": note["sha256"]}))
    assert len(store.merge()) == 2 and store.responses.read_bytes() != older
    store.responses.write_bytes(older + b"\n")  # an edit
    with pytest.raises(CorruptFile, match="was edited since it was written from"):
        store.merge()


def test_a_damaged_metrics_json_is_what_score_replaces(ws):
    metrics = run_dir(ws, "momentum") / "metrics.json"
    metrics.write_bytes(bytes(range(256)))
    _stage("score", ws)  # stale (damaged): scored again, written whole
    assert json.loads(metrics.read_text())["answered"] == 40
