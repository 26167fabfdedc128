"""Response records and their append-only store.

A run directory holds ``parts/*.jsonl``: every process (a shard, a SLURM array task, a resumed
attempt) appends to a part file of its own, so concurrent writers never interleave bytes, and
flushes + fsyncs after every batch. What is done is the union of all parts, keyed by
``(run_key, sample_id)``; a line cut short by a kill is ignored (and its sample redone). ``merge``
writes the deduplicated ``responses.jsonl`` (first record of a key wins) that scoring reads.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Iterable, Iterator

from candlebench.io import atomic_write


@dataclass(frozen=True)
class ResponseRecord:
    run_key: str
    sample_id: str
    model: str
    backend: str
    text: str | None  # raw model output; None only when generation failed
    value: float | None  # parsed answer
    tier: str  # parser tier ("tag", "interval", "scan") or "none"
    reason: str | None  # parse failure / flag, or the generation error
    in_range: bool
    error: str | None  # exception of a failed generation, recorded instead of stopping the run
    prompt_tokens: int
    completion_tokens: int
    token_ids: tuple[int, ...]
    latency_s: float  # wall time of the batch this sample ran in, divided by its size

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict) -> "ResponseRecord":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["token_ids"] = tuple(values.get("token_ids", ()))
        return cls(**values)


def read_jsonl(path: Path) -> Iterator[ResponseRecord]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                yield ResponseRecord.from_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError):
                continue  # the torn last line of a killed writer


class RecordStore:
    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.parts_dir = run_dir / "parts"

    def records(self) -> Iterator[ResponseRecord]:
        if self.parts_dir.exists():
            for part in sorted(self.parts_dir.glob("*.jsonl")):
                yield from read_jsonl(part)

    def done(self, run_key: str) -> set[str]:
        return {r.sample_id for r in self.records() if r.run_key == run_key}

    def writer(self, label: str) -> "PartWriter":
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{socket.gethostname()}-{os.getpid()}"
        return PartWriter(self.parts_dir / f"{label}-{stamp}.jsonl")

    def merge(self) -> list[ResponseRecord]:
        """Deduplicated records, sorted, written atomically to ``responses.jsonl``."""
        unique: dict[tuple[str, str], ResponseRecord] = {}
        for record in self.records():
            unique.setdefault((record.run_key, record.sample_id), record)
        merged = [unique[k] for k in sorted(unique)]
        text = "".join(r.to_json() + "\n" for r in merged)
        atomic_write(self.run_dir / "responses.jsonl", lambda p: p.write_text(text, encoding="utf-8"))
        return merged


class PartWriter:
    def __init__(self, path: Path):
        self.path = path
        self._fh = path.open("a", encoding="utf-8")

    def write(self, records: Iterable[ResponseRecord]) -> None:
        for record in records:
            self._fh.write(record.to_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> "PartWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
