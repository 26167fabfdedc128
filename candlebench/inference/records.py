"""Response records and their append-only store.

A run directory holds ``parts/*.jsonl``: every process (a shard, a SLURM array task, a resumed
attempt, an import) appends to a part file of its own, so concurrent writers never interleave
bytes, and flushes + fsyncs after every batch. What is done is the union of all parts, keyed by
``(run_key, sample_id, inputs)``; a line cut short by a kill is ignored (and its sample redone).
The parts are the run's one source of truth: ``merge`` derives from them the deduplicated
``responses.jsonl`` (per key, the first answer, or while there is none the latest failure), a copy
for people and other tools that every score rewrites. Its sidecar
``responses.jsonl.sha256`` holds the hash it was written with, so an edit made there, which would
change nothing and then be lost, is refused in one line instead (edit the parts). Whether a score
is of the records now is decided by :meth:`RecordStore.stamp`, a hash of the parts' content.

"Answered" has one meaning everywhere (console lines, status, metrics.json, every table):
:func:`is_answer`, a record with a text and no error. A failed generation, a baseline's "no
prediction" and an imported empty answer are records, but not answers.

Failures are retried: a sample counts as done only with an answer record (no ``error``) for the
same ``inputs`` — the fingerprint of the input files the model received (chart and text hashes
from the render manifest). A re-rendered chart or a changed market thus redoes its samples, and
a sample that fails every time keeps its latest error record, visible as failed.

A record keeps what the model said and how it was asked, never a verdict on it: the raw text,
tokens, latency, device, input fingerprint, prompt and charts. ``candlebench score`` judges the
text with the task's current judge (:mod:`candlebench.stages.parsed`), so a judge fixed after the
answers were made reaches them without answering again. Each line carries its schema version
(:mod:`candlebench.core.schema`); version 1 (before it) also held the parse made at generation,
which the reader drops.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import time
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Iterator

from candlebench.core.errors import CorruptFile
from candlebench.core.io import atomic_write
from candlebench.core.results import has_answer
from candlebench.core.jsonl import JsonlAppender, jsonl_text, read_jsonl
from candlebench.core.layout import RunPaths
from candlebench.core.schema import KEY, stamped, version_of


# Version 1 records' verdicts, made when the answer was generated: a reader drops them (score judges).
_V1_VERDICT = ("answer", "tier", "columns")


@dataclass(frozen=True)
class ResponseRecord:
    run_key: str
    sample_id: str
    model: str
    backend: str
    text: str | None  # raw model output; None when there is none (a failed generation, a baseline's no-answer)
    reason: str | None  # why there is no text: the generation error, or why a baseline has no answer
    error: str | None  # exception of a failed generation, recorded instead of stopping the run
    prompt_tokens: int = 0
    completion_tokens: int = 0
    token_ids: tuple[int, ...] = ()
    # Wall time of the batch this sample ran in divided by its size (continuous feeding: the time
    # since the previous write, shared by the answers it wrote); summed, a run's wall time.
    latency_s: float = 0.0
    inputs: str | None = None  # fingerprint of the input files' sha256 (None: baselines, imports)
    # What the model was given, for the report's sample browser: the prompt as sent and the time
    # frames of the charts that went with it (the sample's chart files). None / (): not recorded.
    prompt: str | None = None
    charts: tuple[str, ...] = ()
    device: str | None = None  # the accelerator it ran on ("NVIDIA H200", "cpu"): provenance, not the run key
    served_model: str | None = None  # the model a server's reply named (backend=server); None: any other source

    @classmethod
    def answered(cls, run_key: str, sample_id: str, model: str, backend: str, text: str | None,
                 **usage: Any) -> "ResponseRecord":
        return cls(run_key=run_key, sample_id=sample_id, model=model, backend=backend, text=text,
                   reason=None, error=None, **usage)

    @classmethod
    def failed(cls, run_key: str, sample_id: str, model: str, backend: str, error: Exception,
               **context: Any) -> "ResponseRecord":
        message = f"{type(error).__name__}: {error}"
        return cls(run_key=run_key, sample_id=sample_id, model=model, backend=backend, text=None,
                   reason=f"generation failed: {message}", error=message, **context)

    def as_row(self) -> dict:
        return stamped("records", asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "ResponseRecord":
        """A record of any schema version this candlebench knows (a newer one is
        :class:`~candlebench.core.schema.NewerSchema`); a row that is no record is a ValueError,
        which :func:`read_records` reports with its file and line."""
        version = version_of("records", data)
        values = {k: v for k, v in data.items() if k != KEY}
        if version == 1:  # the verdict made at generation goes; a reason stays only where there is no text
            values = {k: v for k, v in values.items() if k not in _V1_VERDICT}
            if values.get("text") is not None:
                values["reason"] = None
        missing = [f for f in _REQUIRED if f not in values]
        if missing:
            raise ValueError(f"a response record without {missing} (schema version {version})")
        unknown = sorted(set(values) - _FIELDS)
        if unknown:
            raise ValueError(f"a response record with fields no schema version {version} has: {unknown}")
        wrong = [f"{name} is {type(values[name]).__name__}" for name, kinds in _TYPES.items()
                 if name in values and not isinstance(values[name], kinds)]
        if wrong:
            raise ValueError(f"a response record whose {', '.join(wrong)}")
        values["token_ids"] = tuple(values.get("token_ids", ()))
        values["charts"] = tuple(values.get("charts", ()))
        return cls(**values)


_FIELDS = frozenset(f.name for f in fields(ResponseRecord))
# What each field may hold in a stored line (JSON's types); a text that is a number is an edited file.
_OPTIONAL_TEXT = (str, type(None))
_TYPES = {"run_key": str, "sample_id": str, "model": str, "backend": str, "text": _OPTIONAL_TEXT,
          "reason": _OPTIONAL_TEXT, "error": _OPTIONAL_TEXT, "inputs": _OPTIONAL_TEXT, "prompt": _OPTIONAL_TEXT,
          "device": _OPTIONAL_TEXT, "served_model": _OPTIONAL_TEXT, "token_ids": list, "charts": list,
          "prompt_tokens": int, "completion_tokens": int, "latency_s": (int, float)}


def is_answer(record: ResponseRecord) -> bool:
    """The one meaning of "answered": the record holds a text and no error (a failed generation, a
    baseline's no-prediction, an imported empty answer are records without an answer)."""
    return has_answer(record.text, record.error)
_REQUIRED = tuple(f.name for f in fields(ResponseRecord) if f.default is MISSING and f.default_factory is MISSING)


def read_records(path: Path) -> Iterator[ResponseRecord]:
    """The records of a part or responses.jsonl; a row that is no record (a field missing or
    unknown) is an error naming the file and line, as a line that is not JSON is."""
    yield from read_jsonl(path, "`candlebench infer` (or baseline / import) for this run", ResponseRecord.from_dict)


class RecordStore:
    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.paths = RunPaths(run_dir)
        self.parts_dir = self.paths.parts

    def records(self) -> Iterator[ResponseRecord]:
        if self.parts_dir.exists():
            for part in sorted(self.parts_dir.glob("*.jsonl")):
                yield from read_records(part)

    def done(self, run_key: str) -> set[tuple[str, str | None]]:
        """(sample_id, inputs) of every answered sample; failed ones are not done: they are retried."""
        return {(r.sample_id, r.inputs) for r in self.records() if r.run_key == run_key and r.error is None}

    def finished(self, run_key: str) -> set[str]:
        """Samples with a record that is not retried (an answer, or a baseline's or an import's
        record of no answer): a re-run of a baseline or an import adds nothing for them."""
        return {sid for sid, _ in self.done(run_key)}

    def answered(self, run_key: str) -> set[str]:
        """Samples with an answer (:func:`is_answer`) under ``run_key``."""
        return {r.sample_id for r in self.records() if r.run_key == run_key and is_answer(r)}

    def stamp(self) -> str:
        """The parts' content in a word: a sha256 over each part's name and bytes, in name order.
        Any change to a record (an answer written since, an edited score of the same length) changes
        it, so a score stamped with it is of exactly these records (bench/score.py measures its cost
        against hashlib alone over the same bytes)."""
        digest, buffer = hashlib.sha256(), bytearray(1 << 20)
        view = memoryview(buffer)  # read into one buffer: no bytes object per chunk
        for part in sorted(self.parts_dir.glob("*.jsonl")) if self.parts_dir.exists() else []:
            digest.update(f"{part.name}\n{part.stat().st_size}\n".encode())
            with part.open("rb", buffering=0) as fh:
                while size := fh.readinto(buffer):
                    digest.update(view[:size])
        return f"sha256:{digest.hexdigest()}"

    def writer(self, label: str) -> "PartWriter":
        stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{socket.gethostname()}-{os.getpid()}"
        return PartWriter(self.parts_dir / f"{label}-{stamp}.jsonl")

    def merged(self) -> list[ResponseRecord]:
        """One record per (run_key, sample_id, inputs), sorted: the first answer, or while there is
        none the latest failure. Reads only: what infer, baseline and import count their progress
        from, and a second pass its first pass's answers (a run it does not hold the lock of)."""
        unique: dict[tuple[str, str, str], ResponseRecord] = {}
        for record in self.records():
            key = (record.run_key, record.sample_id, record.inputs or "")
            kept = unique.get(key)
            if kept is None or kept.error is not None:  # the first answer stays; a failure gives way
                unique[key] = record
        return [unique[k] for k in sorted(unique)]

    def merge(self) -> list[ResponseRecord]:
        """:meth:`merged`, written atomically to ``responses.jsonl`` (by `score` alone, the writer
        of a run's derived files)."""
        merged = self.merged()
        data = jsonl_text(r.as_row() for r in merged).encode("utf-8")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # The sidecar is also the merge's lock (shards of one array finishing together merge one after
        # another), so it is rewritten in place, and names the copy on disk before this one as well:
        # a merge killed between the two writes leaves a copy the next one still knows as derived.
        fd = os.open(self.derived, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            before = self._check_derived(fd)
            note = json.dumps({"sha256": hashlib.sha256(data).hexdigest(), "previous": before,
                               "derived_from": f"{self.parts_dir.name}/*.jsonl",
                               "note": "responses.jsonl is rewritten from parts/ by every score: edit the parts"})
            os.ftruncate(fd, 0)
            os.pwrite(fd, (note + "\n").encode(), 0)
            atomic_write(self.responses, lambda p: p.write_bytes(data))
        finally:
            os.close(fd)  # and its lock
        return merged

    @property
    def responses(self) -> Path:
        return self.paths.responses

    @property
    def derived(self) -> Path:
        """The sidecar naming the hash responses.jsonl was last written with."""
        return self.paths.responses_sidecar

    def _check_derived(self, fd: int) -> str | None:
        """The hash of the responses.jsonl on disk (None: none yet), refused when it was edited since
        it was written (the sidecar open as ``fd`` names another): the edit would count for nothing
        (the parts are the records) and then be lost without a word."""
        if not self.responses.exists():
            return None
        with self.responses.open("rb") as fh:
            now = hashlib.file_digest(fh, "sha256").hexdigest()
        text = os.pread(fd, 1 << 16, 0)
        if not text.strip():
            return now  # written before the sidecar: nothing to tell an edit by
        try:
            note = json.loads(text)
            written = {note["sha256"], note.get("previous")}
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise CorruptFile(f"{self.derived}: damaged; delete it and {self.responses} (both are rewritten "
                              "from parts/)") from None
        if now not in written:
            raise CorruptFile(
                f"{self.responses} was edited since it was written from {self.parts_dir}/*.jsonl: it is derived, "
                "never read; make the edit in the parts (the run's records) and delete responses.jsonl")
        return now


class PartWriter(JsonlAppender):
    def write(self, records: Iterable[ResponseRecord]) -> None:  # type: ignore[override]
        super().write(r.as_row() for r in records)
