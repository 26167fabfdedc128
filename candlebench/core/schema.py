"""Schema versions of the files a study keeps.

Every stored file a later command reads carries the version of its layout (``"schema": N``):
run.json, each record of a run's parts, metrics.json, each row of the render manifest and the
samples summary. A file without one was written before versions existed (version 1, the layout
of that time). A reader migrates every older version it knows and refuses a newer one with one line
naming the file: answers made by a newer candlebench are never read as if they were of this one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from candlebench.core.errors import CorruptFile, UserError

# The layout this candlebench writes, per kind of file. Raise one when its fields change meaning,
# and teach its reader to migrate the one before.
CURRENT: Mapping[str, int] = {
    "run": 2,  # run.json: 2 = versioned
    "records": 2,  # parts/*.jsonl, responses.jsonl: 2 = what the model said, no verdict (score judges)
    "metrics": 3,  # metrics.json: 2 = judge version, answered / total, the records it was scored from; 3 = answered
    # is core.results.has_answer (a text, no error) and the records stamp is a hash of their content
    "render manifest": 2,  # images/manifest.jsonl rows: 2 = versioned
    "samples summary": 2,  # samples_summary.json: 2 = versioned
}
FIRST = 1  # a file without a version: written before versions existed
KEY = "schema"


class NewerSchema(UserError):
    """A file written by a newer candlebench than this one. Not a damaged file: a JSON Lines reader
    never passes over it as a torn last line (:mod:`candlebench.core.jsonl`)."""


def version_of(kind: str, row: Mapping[str, Any], path: Path | None = None) -> int:
    """The schema version of ``row`` (a whole file's JSON, or one line of a JSONL: its reader then
    names the file and line), checked: a version newer than this candlebench writes is
    :class:`NewerSchema`, a value that is no version :class:`CorruptFile`."""
    found = row.get(KEY, FIRST)
    current = CURRENT[kind]
    where = "" if path is None else f"{path}: "
    if not isinstance(found, int) or isinstance(found, bool) or found < FIRST:
        raise CorruptFile(f"{where}schema {found!r} is not a {kind} schema version (1..{current}); "
                          "the file was damaged or edited")
    if found > current:
        raise NewerSchema(f"{where}{kind} schema version {found}, newer than this candlebench reads ({current}); "
                          "update candlebench to read it")
    return found


def stamped(kind: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with the current schema version of ``kind``, as it is written."""
    return {KEY: CURRENT[kind], **row}


def read_versioned(kind: str, path: Path) -> dict[str, Any]:
    """A whole JSON file of ``kind`` (run.json, metrics.json, the samples summary) without its
    version key, checked by :func:`version_of`; the layouts of version 1 and 2 differ in nothing else."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorruptFile(f"{path}: not a {kind} file ({type(err).__name__}): damaged or replaced; re-run the stage "
                          "that writes it") from None
    if isinstance(data, dict):
        version_of(kind, data, path)
        data.pop(KEY, None)
    return data
