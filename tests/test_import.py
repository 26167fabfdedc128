"""`candlebench import FILE`: answers made elsewhere become a run, parsed by the task's parser and
scored like any other; a bad file is an error that names the line, before anything is written."""

from __future__ import annotations

import csv
import json

import pytest

from helpers import cli, run_dir, write_csv

COMMON = ["data=slice", "data.codes=[AC,ALI,SM,TEL]", "task.samples.interval=60", "score.n_boot=50"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory, env):
    out = tmp_path_factory.mktemp("import")
    for stage in (["samples"], ["baseline", "task.baseline.names=[momentum]"], ["score", "score.run=momentum"]):
        cli(*stage, *COMMON, f"out_dir={out}", env=env)
    return out


def _responses(out):
    return [json.loads(line) for line in (run_dir(out, "momentum") / "responses.jsonl").read_text().splitlines()]


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
    ],
)
def test_bad_files_are_named_errors_and_write_nothing(scored, env, tmp_path, content, suffix, message):
    first = _responses(scored)[0]["sample_id"]
    path = tmp_path / f"bad{suffix}"
    path.write_text(content % {"a": first})
    done = _import(scored, env, path, "bad", check=False)
    assert done.returncode != 0 and str(path) in done.stderr and message % {"a": first} in done.stderr
    assert "Traceback" not in done.stderr
    assert not run_dir(scored, "bad").exists()


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
