"""Response records carry a schema version (#39): the reader migrates version 1 (today's main:
the parse made at generation stored with the text) by dropping the verdict, refuses a newer
version naming the file and line, and never drops a row silently: a line it cannot read is an
error naming file and line, except a torn last line a killed writer left."""

from __future__ import annotations

import json

import pytest

from candlebench.core.errors import CorruptFile
from candlebench.core.schema import NewerSchema
from candlebench.inference.records import ResponseRecord, read_records

pytestmark = pytest.mark.unit

RECORD = {"run_key": "k", "sample_id": "s1", "model": "m", "backend": "import", "text": "<score>0.1</score>",
          "reason": None, "error": None}


def _write(tmp_path, *lines: str):
    path = tmp_path / "part.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_a_version_1_record_loses_its_stored_verdict_and_keeps_why_it_has_no_text(tmp_path):
    v1 = {**RECORD, "answer": 0.9, "tier": "scan", "reason": "a flag", "columns": {"pred": 0.9}}
    no_text = {**v1, "sample_id": "s2", "text": None, "answer": None, "reason": "no prediction: too early"}
    path = _write(tmp_path, json.dumps(v1) + "\n", json.dumps(no_text) + "\n")
    first, second = read_records(path)
    assert first == ResponseRecord(**RECORD) and second.reason == "no prediction: too early"
    assert first.as_row()["schema"] == 2 and "answer" not in first.as_row()


def test_a_newer_record_version_is_refused_naming_the_file_and_line(tmp_path):
    path = _write(tmp_path, json.dumps({**RECORD, "schema": 2}) + "\n", json.dumps({**RECORD, "schema": 3}) + "\n")
    with pytest.raises(NewerSchema, match=rf"{path}, line 2: records schema version 3, newer than this candlebench reads \(2\)"):
        list(read_records(path))


def test_a_row_that_is_no_record_is_an_error_naming_its_line_never_skipped(tmp_path):
    path = _write(tmp_path, json.dumps({**RECORD, "schema": 2}) + "\n", json.dumps({"schema": 2, "text": "x"}) + "\n",
                  json.dumps({**RECORD, "schema": 2}) + "\n")
    with pytest.raises(CorruptFile, match=rf"{path}, line 2: a response record without \['run_key', 'sample_id'"):
        list(read_records(path))
    bad_json = _write(tmp_path, json.dumps(RECORD) + "\n", "{not json\n", json.dumps(RECORD) + "\n")
    with pytest.raises(CorruptFile, match=rf"{bad_json}, line 2: not a JSON record"):
        list(read_records(bad_json))


def test_only_a_torn_last_line_is_skipped(tmp_path):
    whole = json.dumps({**RECORD, "schema": 2})
    path = _write(tmp_path, whole + "\n", whole[:40])  # a killed writer's last line: no newline
    assert [r.sample_id for r in read_records(path)] == ["s1"]
