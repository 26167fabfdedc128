"""``candlebench import FILE``: responses produced elsewhere (an API model, another harness, a
paper's released outputs) become a run like any other, judged by the task's judge when scored.

The file is JSONL (one object per line) or CSV with columns ``sample_id`` and ``text``, optionally
``model``, ``reasoning`` (reasoning a server returned apart) and ``reasoning_opened`` (true: the
chat template opened the reasoning block, so ``text`` starts inside it). Either puts the block
into the recorded text as the in-process backends record it, so a reasoning answer cut by its
budget is flagged by every task's parser as it is in process. Every row must name a sample of the task's samples.parquet, once; samples without a row
are missing records, as for an unfinished run. The run key is the fingerprint of the file's bytes
and the task, so importing the same file again adds nothing and a changed file is a new run key.

An import is all or nothing: every line is read and checked (JSON, sample, text) before the first
record is written. A text holding a lone surrogate (``"\ud800"``: valid JSON, not Unicode text,
which no later file could store) is refused with its line; it is not replaced, since the answer
would then differ from the file's.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
from pathlib import Path

from candlebench.core.errors import UserError
from candlebench.core.io import read_utf8
from candlebench.core.jsonl import json_objects
from candlebench.core.lock import RunLock, one_writer, run_lock
from candlebench.stages.job import JobConfig
from candlebench.stages.parsed import run_records
from candlebench.inference.chat import reasoning_in_text
from candlebench.inference.records import RecordStore, ResponseRecord, is_answer
from candlebench.inference.run_info import RunInfo
from candlebench.rendering.inputs import read_samples

REQUIRED = ("sample_id", "text")
# What json.loads makes of an unpaired "\ud800" escape (a pair becomes one character).
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class ResponseFileError(UserError, ValueError):
    """A response file that cannot become a run; the message names the file and line."""


def read_responses(path: Path) -> list[tuple[int, dict]]:
    """(line number, row) pairs; line numbers count from 1 as an editor shows them."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such response file")
    raw = read_utf8(path, ResponseFileError, "a response file is UTF-8 JSONL or CSV")
    if not raw.strip():
        raise ResponseFileError(f"{path}: empty file, no responses to import")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(raw))
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ResponseFileError(f"{path}: no column {missing} (columns: {reader.fieldnames}); need {list(REQUIRED)}")
        rows = [(reader.line_num, row) for row in reader]
        if not rows:  # as an empty file is: an import of nothing would be an empty run
            raise ResponseFileError(f"{path}: a header and no rows, no responses to import")
        return rows
    rows = []
    for number, row in json_objects(raw, path, ResponseFileError):
        missing = [c for c in REQUIRED if c not in row]
        if missing:
            raise ResponseFileError(f"{path}, line {number}: no {missing}; every line needs {list(REQUIRED)}")
        if not isinstance(row.get("reasoning_opened", False), bool):
            raise ResponseFileError(f"{path}, line {number}: reasoning_opened is true or false "
                                    f"(got {row.get('reasoning_opened')!r})")
        for key in ("text", "reasoning"):
            # A list, object, true/false, number or NaN was stored as Python's str() of it
            # ("['...']", "True"): an answer no model wrote.
            if not isinstance(row.get(key), (str, type(None))):
                raise ResponseFileError(f"{path}, line {number}: {key} is {_json_kind(row[key])}, not a text "
                                        f"(or null: no answer); got {json.dumps(row[key])[:80]}")
        for key, value in row.items():
            if isinstance(value, str) and (lone := LONE_SURROGATE.search(value)):
                raise ResponseFileError(
                    f"{path}, line {number}: {key} holds a lone surrogate \\u{ord(lone.group()):04x} (character "
                    f"{lone.start() + 1}), which is no Unicode text; replace it (e.g. with \\ufffd) and import again")
        rows.append((number, row))
    return rows


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _writing(job: JobConfig) -> RunLock:
    """An import writes (or replaces) the whole run: refused while any command writes into it."""
    return run_lock(job.task_paths, job.run_paths.name, instead="import under another infer.run_name")


@one_writer(_writing)
def import_responses(job: JobConfig) -> None:
    if not job.import_file:
        raise ResponseFileError("usage: candlebench import FILE [infer.run_name=NAME] [task=NAME]")
    path = Path(str(job.import_file)).expanduser()
    task, paths = job.task, job.task_paths
    samples = read_samples(paths)
    known = set(samples["sample_id"])
    rows = read_responses(path)
    seen: dict[str, int] = {}
    for number, row in rows:
        sid = str(row["sample_id"])
        if sid not in known:
            raise ResponseFileError(f"{path}, line {number}: sample_id {sid!r} is not a sample of {paths.samples}")
        if sid in seen:
            raise ResponseFileError(f"{path}, line {number}: sample_id {sid!r} again (first on line {seen[sid]})")
        seen[sid] = number
    run = job.run_paths
    models = {str(row["model"]) for _, row in rows if row.get("model")}
    info = RunInfo(
        task=task.name, kind="import", model_name=models.pop() if len(models) == 1 else run.name,
        identity={"import": hashlib.sha256(path.read_bytes()).hexdigest()},
    )
    before = RunInfo.read(run.info) if run.info.exists() else None
    # Another run under this name (a model's, a baseline's, another file's import): replaced only when told.
    replaced = before is not None and before.run_key != info.run_key
    if replaced and not job.import_replace:
        what = "an import of another file" if before.kind == "import" else f"a {before.kind} run, not an import"
        raise ResponseFileError(f"{run.root} is {what}: importing {path} there would replace its answers; name "
                                "another run (infer.run_name=...), or add import_replace=true to replace it")
    records = [ResponseRecord.answered(info.run_key, str(r["sample_id"]), str(r.get("model") or info.model_name),
                                       "import", _recorded(r))
               for _, r in rows]  # every record built before anything is written
    if replaced:  # told to: none of the other run's answers may stay beside the imported ones
        shutil.rmtree(run.root)
    info.write(run.info)
    store = RecordStore(run.root)
    done = store.finished(info.run_key)
    todo = [r for r in records if r.sample_id not in done]
    if todo:
        with store.writer("import") as writer:
            writer.write(todo)
    answered = sum(map(is_answer, run_records(run, known)))  # `score` judges them
    print(f"imported {len(todo)} responses ({len(rows) - len(todo)} already there) from {path}: "
          f"{answered} of {len(samples)} samples answered -> {run.root}\n"
          f"next: `candlebench score` (scores every run not scored yet, this one included), then `candlebench report`, "
          "with the same data= and out_dir= as here")


def _recorded(row: dict) -> str | None:
    """The text as the in-process backends would have recorded it: the reasoning block in it (a
    CSV cell "true" counts as true); an answer after reasoning given apart closes its block."""
    answer = _text(row["text"])
    opened = row.get("reasoning_opened") in (True, "true", "True", "1")
    return reasoning_in_text(answer, _text(row.get("reasoning")), opened, closed=answer is not None)


def _text(value) -> str | None:
    """An empty CSV cell or a JSON null is no answer (the parser says so), not the text "None"."""
    return None if value is None or value == "" else str(value)
