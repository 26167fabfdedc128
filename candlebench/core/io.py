"""File contracts every stage shares.

* Whole files never appear half-written: write a temp file, then rename (:func:`atomic_write`).
* Progress files are append-only JSON Lines, flushed and fsynced after each batch
  (:mod:`candlebench.core.jsonl`, which reads and writes every JSONL file).
* One fingerprint of a JSON-able value (:func:`fingerprint`) keys runs, render settings and
  merged checkpoints alike.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd


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


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON that a browser's JSON.parse reads: a NaN or inf anywhere in ``value``
    (which a judge must never keep, but a report must not die of) is written as null."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:  # "Out of range float values are not JSON compliant"
        return json.dumps(json_safe(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def fingerprint(value: Any) -> str:
    """16 hex digits of sha256 over canonical JSON (sorted keys; non-JSON values by ``str``)."""
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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
