"""File contracts every stage shares.

* Whole files never appear half-written: write a temp file, then rename (:func:`atomic_write`).
* Progress files are append-only JSONL, flushed and fsynced after each batch
  (:class:`JsonlAppender`); a reader skips the torn last line a killed writer leaves
  (:func:`read_jsonl`).
* One fingerprint of a JSON-able value (:func:`fingerprint`) keys runs, render settings and
  merged checkpoints alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import pandas as pd

from candlebench.core.errors import CorruptFile


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    return atomic_write(path, lambda p: frame.to_parquet(p, index=False))


def write_json(obj: Any, path: Path) -> Path:
    return atomic_write(path, lambda p: p.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n"))


def json_safe(value: Any) -> Any:
    """Plain Python containers and scalars, NaN and inf as None, timestamps as ISO dates."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, pd.Timestamp):
        return value.date().isoformat() if value == value.normalize() else value.isoformat()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def fingerprint(value: Any) -> str:
    """16 hex digits of sha256 over canonical JSON (sorted keys; non-JSON values by ``str``)."""
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_jsonl(path: Path, writer: str = "the stage that wrote it") -> Iterator[dict]:
    """The rows of an append-only JSONL file. A last line cut short by a kill is skipped (its work
    is redone); a bad line anywhere else means the file was damaged or edited, and is an error that
    names the file, the line and ``writer``, the stage to re-run."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict):
            yield row
        elif number < len(lines):  # a complete line (a newline follows): not a torn write
            raise CorruptFile(
                f"{path}, line {number}: not a JSON record ({line[:60]!r}); the file was damaged or edited. "
                f"Remove that line (its work is redone) and re-run {writer}"
            )


def read_utf8(path: Path, error: type[Exception], kind: str) -> str:
    """A user's file as text (UTF-8, a byte-order mark allowed); another encoding is ``error``
    naming the line and byte, and what ``kind`` of file is UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise error(f"{path}, line {line}: not UTF-8 text (byte 0x{data[err.start]:02x}); "
                    f"{kind} (save it as UTF-8)") from None


def json_objects(text: str, path: Path, error: type[Exception]) -> Iterator[tuple[int, dict]]:
    """(line number from 1, object) of each non-blank line of a user's JSONL; a line that is not a
    JSON object is ``error`` naming it."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise error(f"{path}, line {number}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise error(f"{path}, line {number}: a JSON object is needed, got {type(row).__name__}")
        yield number, row


def _cut_torn_tail(path: Path) -> None:
    """A writer killed mid-line leaves a line without its newline; appending after it would glue
    the next record onto it. Cut it off first (its work was not recorded, so it is redone)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        data = fh.read()
        if not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


class JsonlAppender:
    """Appends rows to a JSONL file, each batch flushed and fsynced before ``write`` returns."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        _cut_torn_tail(path)
        self._fh = path.open("a", encoding="utf-8")

    def write(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self._fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
