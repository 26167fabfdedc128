"""The one JSON Lines reader and writer (candlebench.core.jsonl): a record ends at "\\n" alone, so
every Unicode text goes through whole; a torn last line is the one row passed over; every other bad
row is an error naming the file and line."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from candlebench.core.errors import CorruptFile
from candlebench.core.jsonl import JsonlAppender, json_objects, jsonl_text, read_jsonl
from candlebench.inference.records import ResponseRecord, read_records
from helpers import ESCAPED_SURROGATE, SEPARATORS, TEXTS

pytestmark = pytest.mark.unit


def _record(text: str | None, sample_id: str = "s1") -> ResponseRecord:
    return ResponseRecord(run_key="k", sample_id=sample_id, model="m", backend="import", text=text, reason=None,
                          error=None)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=4))
@example([SEPARATORS + ESCAPED_SURROGATE])
def test_any_text_goes_through_the_writer_and_reader_whole(tmp_path_factory, texts):
    path = tmp_path_factory.mktemp("jsonl") / "part.jsonl"
    with JsonlAppender(path) as out:
        out.write(_record(t, f"s{i}").as_row() for i, t in enumerate(texts))
    assert [r.text for r in read_records(path)] == texts
    user = path.with_name("user.jsonl")
    user.write_text(jsonl_text({"sample_id": "a", "text": t} for t in texts), encoding="utf-8")
    read = [row["text"] for _, row in json_objects(user.read_text(encoding="utf-8"), user, ValueError)]
    assert read == texts


def test_a_lone_surrogate_is_written_escaped_and_read_back_the_same(tmp_path):
    path = tmp_path / "part.jsonl"
    with JsonlAppender(path) as out:
        out.write([_record("a\ud800b").as_row()])
    assert "\\ud800" in path.read_text(encoding="utf-8")
    assert [r.text for r in read_records(path)] == ["a\ud800b"]


def test_a_torn_last_line_is_the_one_row_passed_over(tmp_path):
    path = tmp_path / "part.jsonl"
    whole = jsonl_text([_record("x").as_row(), _record("é", "s2").as_row()])
    path.write_bytes(whole.encode()[:-4])  # killed mid-write: no newline after the last line
    assert [r.sample_id for r in read_records(path)] == ["s1"]
    path.write_bytes(whole.encode()[: whole.encode().index("é".encode()) + 1])  # cut inside a UTF-8 character
    assert [r.sample_id for r in read_records(path)] == ["s1"]


@pytest.mark.parametrize(("line", "said"), [
    (b"garbage", "line 2: not a JSON record"),
    (b'{"text": "\xff"}', "line 2: not a JSON record"),  # not UTF-8
    (b"[1, 2]", "line 2: a JSON object is needed, got list"),
    (b'{"sample_id": "s9", "text": "x"}', "line 2: a response record without ['run_key',"),
])
def test_a_bad_row_before_the_last_is_an_error_naming_file_and_line(tmp_path, line, said):
    path = tmp_path / "part.jsonl"
    good = jsonl_text([_record("x").as_row()]).encode()
    path.write_bytes(good + line + b"\n" + good)
    with pytest.raises(CorruptFile) as err:
        list(read_records(path))
    assert f"{path}, {said}" in str(err.value) and "candlebench infer" in str(err.value)


def test_a_row_that_is_no_record_is_an_error_even_as_the_last_line_when_whole(tmp_path):
    path = tmp_path / "part.jsonl"
    path.write_text(json.dumps({"sample_id": "s1"}) + "\n")  # a whole line: a newline follows
    with pytest.raises(CorruptFile, match="line 1: a response record without"):
        list(read_records(path))


def test_read_jsonl_builds_plain_rows_by_default(tmp_path):
    path = tmp_path / "manifest.jsonl"
    path.write_text('{"path": "a\u2028b"}\r\n\n{"path": "c"}\n', encoding="utf-8")  # CRLF ends and a blank line
    assert list(read_jsonl(path)) == [{"path": "a\u2028b"}, {"path": "c"}]


def test_a_users_file_has_no_torn_tail(tmp_path):
    path = tmp_path / "answers.jsonl"
    text = '{"sample_id": "a", "text": "x\x85y"}\n{"sample_id": "b", "te'
    with pytest.raises(ValueError, match=r"answers.jsonl, line 2: not JSON"):
        list(json_objects(text, path, ValueError))
    assert next(json_objects(text, path, ValueError)) == (1, {"sample_id": "a", "text": "x\x85y"})


def test_provenance_counts_records_whose_text_holds_a_line_separator(tmp_path):
    """A tiny model's E2A verify answer held a U+0085: the report's provenance ended in a
    JSONDecodeError (it split responses.jsonl with str.splitlines)."""
    from candlebench.core.layout import TaskPaths
    from candlebench.stages.provenance import run_provenance

    paths = TaskPaths(tmp_path / "e2a")
    run = paths.run("tiny")
    run.root.mkdir(parents=True)
    run.info.write_text(json.dumps({"run_key": "k", "kind": "model", "model_name": "tiny", "identity": {}}))
    rows = [{**_record(f"BUY\x85{i}\u2028", f"s{i}").as_row(), "latency_s": 0.5, "device": "cpu"} for i in range(3)]
    run.responses.write_text(jsonl_text(rows), encoding="utf-8")
    found = run_provenance(paths, "tiny")
    assert (found["records"], found["wall_s"], found["device"]) == (3, 1.5, "cpu")
