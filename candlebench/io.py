"""Writes that never leave a half-written file behind: write a temp file, then rename."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

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
