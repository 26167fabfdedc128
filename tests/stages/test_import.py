"""`candlebench import FILE`: answers made elsewhere become a run, parsed by the task's parser and
scored like any other; a bad file is an error that names the line, before anything is written."""

from __future__ import annotations

import base64
import csv
import gzip
import itertools
import shutil
import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from candlebench.core.jsonl import jsonl_text
from candlebench.stages.graph import run_stage
from candlebench.inference.records import read_records
from helpers import ESCAPED_SURROGATE, SEPARATORS, TEXTS, cli, run_dir, write_csv

COMMON = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "task.samples.interval=60", "score.n_boot=50"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory, env):
    out = tmp_path_factory.mktemp("import")
    for stage in (["samples"], ["baseline", "task.baseline.names=[momentum]"], ["score", "score.run=momentum"]):
        cli(*stage, *COMMON, f"out_dir={out}", env=env)
    return out


def _responses(out):
    return [r.as_row() for r in read_records(run_dir(out, "momentum") / "responses.jsonl")]


def _import(out, env, path, name, check=True):
    return cli("import", str(path), *COMMON, f"out_dir={out}", f"infer.run_name={name}", env=env, check=check)


def test_imported_answers_score_like_the_run_they_came_from(scored, env, tmp_path):
    jsonl = tmp_path / "answers from elsewhere.jsonl"  # a space in the name, as files come
    jsonl.write_text("".join(json.dumps({"sample_id": r["sample_id"], "text": r["text"], "model": "api-x"}) + "\n"
                             for r in _responses(scored)))
    rows = [[r["sample_id"], r["text"]] for r in _responses(scored)]
    csv_path = write_csv(tmp_path / "answers.csv", ["sample_id", "text"], rows)
    for path, name in ((jsonl, "from-jsonl"), (csv_path, "from-csv")):
        done = _import(scored, env, path, name)
        assert f"imported {len(rows)} responses" in done.stdout
        cli("score", *COMMON, f"out_dir={scored}", f"score.run={name}", env=env)
        original = json.loads((run_dir(scored, "momentum") / "metrics.json").read_text())
        imported = json.loads((run_dir(scored, name) / "metrics.json").read_text())
        assert imported.pop("run_key") != original.pop("run_key")
        imported.pop("records"), original.pop("records")  # the stamp of each run's own record files
        assert imported == original
    assert json.loads((run_dir(scored, "from-jsonl") / "run.json").read_text())["model_name"] == "api-x"
    again = _import(scored, env, jsonl, "from-jsonl")
    assert "imported 0 responses" in again.stdout  # the same file again adds nothing


def test_missing_samples_count_as_missing_records(scored, env, tmp_path):
    half = _responses(scored)[::2]
    path = tmp_path / "half.jsonl"
    path.write_text("".join(json.dumps({"sample_id": r["sample_id"], "text": r["text"]}) + "\n" for r in half))
    _import(scored, env, path, "half")
    cli("score", *COMMON, f"out_dir={scored}", "score.run=half", env=env)
    metrics = json.loads((run_dir(scored, "half") / "metrics.json").read_text())
    assert metrics["n_missing_records"] == len(_responses(scored)) - len(half)
    assert metrics["parse_failure_rate"] == 0.0


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        ('{"sample_id": "%(a)s", "text": "<score>0.1</score>"}\n{"sample_id": "%(a)s", "text": "<score>0.2</score>"}\n',
         ".jsonl", "line 2: sample_id '%(a)s' again (first on line 1)"),
        ('{"sample_id": "%(a)s", "text": "x"}\n{"sample_id": "nope", "text": "x"}\n', ".jsonl",
         "line 2: sample_id 'nope' is not a sample of"),
        ('{"sample_id": "%(a)s", "answer": "x"}\n', ".jsonl", "line 1: no ['text']"),
        ("sample_id,answer\n%(a)s,x\n", ".csv", "no column ['text']"),
        ("", ".jsonl", "empty file"),
        ("", ".csv", "empty file"),
        ('{"sample_id": "%(a)s", "text": "x"}\n{not json\n', ".jsonl", "line 2: not JSON"),
        ('{"sample_id": "%(a)s", "text": "x", "reasoning_opened": "yes"}\n', ".jsonl",
         "line 1: reasoning_opened is true or false"),
        # Valid JSON, not Unicode text: refused with its line before the first record is written (no half-written run).
        ('{"sample_id": "%(a)s", "text": "<score>0.1</score>"}\n{"sample_id": "%(b)s", "text": "ok \\ud800"}\n',
         ".jsonl", "line 2: text holds a lone surrogate \\ud800 (character 4)"),
    ],
)
def test_bad_files_are_named_errors_and_write_nothing(scored, env, tmp_path, content, suffix, message):
    first, second = (r["sample_id"] for r in _responses(scored)[:2])
    path = tmp_path / f"bad{suffix}"
    path.write_text(content % {"a": first, "b": second})
    done = _import(scored, env, path, "bad", check=False)
    assert done.returncode != 0 and str(path) in done.stderr and message % {"a": first} in done.stderr
    assert "Traceback" not in done.stderr
    assert not run_dir(scored, "bad").exists()


@pytest.mark.unit
@pytest.mark.parametrize(("text", "kind"), [
    ('["<score>0.1</score>"]', "a list"), ('{"score": 0.1}', "an object"), ("true", "true/false"),
    ("0.1", "a number"), ("NaN", "a number"),
])
def test_a_text_that_is_not_text_is_refused_with_its_line(tmp_path, text, kind):
    """Stored as Python's str() of it ("['...']", "True"), it was an answer no model wrote."""
    from candlebench.stages.import_responses import ResponseFileError, read_responses

    path = tmp_path / "answers.jsonl"
    path.write_text('{"sample_id": "a", "text": "ok"}\n{"sample_id": "b", "text": null}\n'
                    f'{{"sample_id": "c", "text": {text}}}\n')
    with pytest.raises(ResponseFileError, match=f"answers.jsonl, line 3: text is {kind}, not a text"):
        read_responses(path)
    path.write_text('{"sample_id": "a", "text": "ok", "reasoning": 7}\n')
    with pytest.raises(ResponseFileError, match="line 1: reasoning is a number, not a text"):
        read_responses(path)


@pytest.mark.unit
def test_a_csv_of_its_header_alone_is_refused_as_an_empty_file_is(tmp_path):
    from candlebench.stages.import_responses import ResponseFileError, read_responses

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    for path in (empty, write_csv(tmp_path / "header.csv", ["sample_id", "text"], [])):
        with pytest.raises(ResponseFileError, match=f"{path.name}: .*no responses to import"):
            read_responses(path)


def test_csv_with_quoted_multiline_answers(scored, env, tmp_path):
    rows = [[r["sample_id"], f"Thinking...\nfinal: {r['text']}"] for r in _responses(scored)]
    path = tmp_path / "multi.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows([["sample_id", "text"], *rows])
    _import(scored, env, path, "multi")
    cli("score", *COMMON, f"out_dir={scored}", "score.run=multi", env=env)
    metrics = json.loads((run_dir(scored, "multi") / "metrics.json").read_text())
    original = json.loads((run_dir(scored, "momentum") / "metrics.json").read_text())
    assert metrics["accuracy"] == original["accuracy"]


def test_score_with_no_run_named_scores_every_run_not_yet_scored(scored, env, tmp_path):
    """After import, `candlebench score` alone scores the imported run (and nothing already scored
    again); the import's output says what comes next."""
    jsonl = tmp_path / "more.jsonl"
    jsonl.write_text("".join(json.dumps({"sample_id": r["sample_id"], "text": r["text"]}) + "\n"
                             for r in _responses(scored)))
    done = _import(scored, env, jsonl, "fresh")
    assert "next: `candlebench score`" in done.stdout
    before = (run_dir(scored, "momentum") / "metrics.json").stat().st_mtime_ns
    out = cli("score", *COMMON, f"out_dir={scored}", env=env)
    assert "forecast/fresh:" in out.stdout and "forecast/momentum:" not in out.stdout
    assert (run_dir(scored, "fresh") / "metrics.json").exists()
    assert (run_dir(scored, "momentum") / "metrics.json").stat().st_mtime_ns == before
    again = cli("score", *COMMON, f"out_dir={scored}", env=env)
    assert "every run under" in again.stdout and "is scored under its current key" in again.stdout


_runs = itertools.count()


# About 2 CPU s an example (import, score, report), so few examples of several texts each; the
# writer and reader alone see hundreds (tests/core/test_jsonl.py).
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=8))
@example(texts=[SEPARATORS, f"<score>0.5</score>{ESCAPED_SURROGATE}\u2028\x85"])
def test_any_text_goes_through_import_score_and_report_unchanged(scored, tmp_path, texts):
    """In process (no command's start): every Unicode text, each line separator, NUL and an
    escaped lone surrogate among them, is the same text in the record, the scored table and the
    report's sample browser."""
    name = f"unicode-{next(_runs)}"
    ids = [r["sample_id"] for r in _responses(scored)][: len(texts)]
    path = tmp_path / f"{name}.jsonl"
    path.write_text(jsonl_text({"sample_id": s, "text": t} for s, t in zip(ids, texts)), encoding="utf-8")
    common = [*COMMON, f"out_dir={scored}", f"infer.run_name={name}"]
    run_stage("import", [*common, f"import_file={path}"])
    run_stage("score", [*common, f"score.run={name}"])
    run_stage("report", [*common, f"report.runs=[{name}]", f"report.dir={tmp_path / name}"])
    expected = {s: t or None for s, t in zip(ids, texts)}  # an empty text is no answer, as a JSON null
    assert {r.sample_id: r.text for r in read_records(run_dir(scored, name) / "responses.jsonl")} == expected
    parsed = pd.read_parquet(run_dir(scored, name) / "parsed.parquet")
    assert {s: t for s, t in zip(parsed["sample_id"], parsed["text"]) if isinstance(t, str)} == \
        {s: t for s, t in expected.items() if t is not None}
    page = (tmp_path / name / "report.html").read_text(encoding="utf-8")
    shown = json.loads(gzip.decompress(base64.b64decode(page.split("id='cb-data'>")[1].split("<")[0])))
    assert sorted(t for t in shown["detail"]["text"] if t is not None) == sorted(t for t in texts if t)


def test_imported_reasoning_answers_cut_by_their_budget_are_flagged_as_in_process(scored, tmp_path):
    """An answer of a model whose chat template opens <think> itself (reasoning_opened), or whose
    reasoning came apart (reasoning, no answer after it): recorded inside the block, as in process,
    so the parser flags the cut instead of reading 0.12 out of the reasoning (in process)."""
    from candlebench.task_api.base import REASONING_CUT

    a, b, c, d = (r["sample_id"] for r in _responses(scored)[:4])
    thought = "The close rose 5% and the score is 0.12 because"
    path = tmp_path / "thinking.jsonl"
    path.write_text(jsonl_text([
        {"sample_id": a, "text": thought, "reasoning_opened": True},
        {"sample_id": b, "text": None, "reasoning": thought},
        {"sample_id": c, "text": "<score>0.2</score>", "reasoning": thought},
        {"sample_id": d, "text": thought},
    ]))
    common = [*COMMON, f"out_dir={scored}", "infer.run_name=thinking"]
    run_stage("import", [*common, f"import_file={path}"])
    run_stage("score", [*common, "score.run=thinking"])
    parsed = pd.read_parquet(run_dir(scored, "thinking") / "parsed.parquet").set_index("sample_id")
    assert parsed.loc[[a, b], "reason"].str.contains(REASONING_CUT, regex=False).all()
    assert parsed.loc[[a, b], "answer"].isna().all()
    assert parsed.loc[c, "text"] == f"<think>\n{thought}</think>\n<score>0.2</score>" and pd.isna(parsed.loc[c, "reason"])
    assert parsed.loc[d, "text"] == thought and REASONING_CUT not in str(parsed.loc[d, "reason"])  # no flag: as it was


def test_runs_of_other_data_are_never_reported_as_this_datas_and_score_refuses_them(scored, tmp_path):
    """A study folder whose samples were rebuilt from other data (#39: other stocks here, another
    file there): the runs scored on the old samples go under "not shown: made for other
    data/settings", never into the results tables, and `score` refuses them with the command
    that answers these samples. In process, in a copy of the module's study."""
    from candlebench.stages.score import ScoringFailed

    out = tmp_path / "study"
    shutil.copytree(scored, out)
    common = ["data=slice", "data.codes=[BPI,JFC]", "task.samples.interval=60", "score.n_boot=0", f"out_dir={out}"]
    run_stage("samples", common)
    run_stage("baseline", [*common, "task.baseline.names=[constant]"])
    run_stage("score", [*common, "score.run=constant"])
    run_stage("report", common)
    md = (out / "report" / "report.md").read_text()
    results, hidden = md.split("## forecast: not shown: made for other data/settings", 1)
    assert "| constant" in results and "momentum" not in results
    assert "| momentum" in hidden.split("## Provenance")[0]
    with pytest.raises(ScoringFailed, match=r"momentum: OtherSamples: .* answered \d+ samples, none of them in .*"
                                            r"`candlebench baseline task.baseline.names=\[momentum\]` with this data"):
        run_stage("score", [*common, "score.run=momentum"])
    run_stage("report", common)  # the refused run is listed as not scored, its older scores as not shown
    md = (out / "report" / "report.md").read_text()
    (row,) = [line for line in md.split("## forecast: runs that could not be scored")[1].split("\n## ")[0].splitlines() if "| momentum" in line]
    assert "OtherSamples" in row and row.rstrip(" |").endswith("no")
