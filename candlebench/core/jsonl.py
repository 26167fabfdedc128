"""JSON Lines, the one reader and writer of every ``*.jsonl`` file: run parts and responses,
render manifests, imports, caption datasets.

A record ends at "\\n" and nowhere else. ``json.dumps(..., ensure_ascii=False)`` writes U+0085,
U+2028, U+2029 and \\x1c-\\x1e raw inside strings, and ``str.splitlines()`` breaks a line at each
of them, so no reader here splits any other way; "\\r\\n" ends still read (the "\\r" is JSON
whitespace).

Files a stage appends to (:class:`JsonlAppender`, flushed and fsynced after each batch) may end in
a torn last line when the writer was killed: :func:`read_jsonl` skips it (its work is redone), the
one row any reader passes over. Every other line that is not UTF-8, not a JSON object, or not a
row its reader can build is an error naming the file and line, and so is a row of a newer schema
version than this candlebench reads (:mod:`candlebench.core.schema`), wherever it is. A user's file
(:func:`json_objects`) has no torn tail: every line counts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

from candlebench.core.errors import CorruptFile
from candlebench.core.schema import NewerSchema

T = TypeVar("T")

# The whitespace JSON allows around a value; str.strip() would also take U+0085, U+2028 and the rest.
JSON_SPACE = " \t\r"


def dumps(row: dict) -> str:
    """One record as a line (its "\\n" included): readable UTF-8 where the text is Unicode; a text
    holding a lone surrogate (valid JSON, not UTF-8-encodable) is written with \\u escapes, which
    read back to the same string."""
    text = json.dumps(row, sort_keys=True, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(row, sort_keys=True)
    return text + "\n"


def split(data: str) -> list[str]:
    """The lines of a JSON Lines text: split at "\\n" alone."""
    return data.split("\n")


def _built(line: str, build: Callable[[dict], T]) -> T:
    row = json.loads(line)
    if not isinstance(row, dict):
        raise TypeError(f"a JSON object is needed, got {type(row).__name__}")
    return build(row)


def read_jsonl(path: Path, writer: str = "the stage that wrote it",
               build: Callable[[dict], T] = dict) -> Iterator[T]:  # type: ignore[assignment]
    """``build(row)`` of each row of an append-only JSONL file. A last line cut short by a kill is
    skipped (its work is redone); a line anywhere else that is not UTF-8, not JSON, or that
    ``build`` refuses (TypeError, ValueError, KeyError) means the file was damaged or edited, and
    is an error that names the file, the line and ``writer``, the stage to re-run."""
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip(JSON_SPACE.encode()):
            continue
        try:
            yield _built(raw.decode("utf-8"), build)
        except NewerSchema as err:  # a newer candlebench's row, never taken for a torn one
            raise NewerSchema(f"{path}, line {number}: {err}") from None
        except (UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError, KeyError) as err:
            if number == len(lines):  # no newline follows: the torn write of a killed writer
                continue
            why = "not a JSON record" if isinstance(err, (UnicodeDecodeError, json.JSONDecodeError)) else str(err)
            raise CorruptFile(
                f"{path}, line {number}: {why} ({raw[:60].decode('utf-8', 'replace')!r}); the file was damaged "
                f"or edited. Remove that line (its work is redone) and re-run {writer}"
            ) from None


def json_objects(text: str, path: Path, error: type[Exception]) -> Iterator[tuple[int, dict]]:
    """(line number from 1, object) of each non-blank line of a user's JSONL; a line that is not a
    JSON object is ``error`` naming it."""
    for number, line in enumerate(split(text), start=1):
        if not line.strip(JSON_SPACE):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise error(f"{path}, line {number}: not JSON ({err.msg}, column {err.colno})") from None
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
            self._fh.write(dumps(row))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def jsonl_text(rows: Iterable[dict]) -> str:
    """A whole JSONL file's text (written atomically by its caller)."""
    return "".join(dumps(r) for r in rows)
