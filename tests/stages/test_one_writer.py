"""One writer per file (#48): parsed.parquet and metrics.json are written by `score` alone.
Infer, baseline and import write records (and run.json); a second pass reads its first pass's
records. Checked on the source (AST), so a new writer anywhere in the package fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import ROOT

pytestmark = pytest.mark.unit

PACKAGE = ROOT / "candlebench"
SCORE = PACKAGE / "stages" / "score.py"
# What writes a file the package over: candlebench.core.io's writers, pandas' and pathlib's.
WRITERS = {"write_parquet", "write_json", "atomic_write", "to_parquet", "write_text", "write_bytes"}
# RunPaths' properties of the files score alone writes.
SCORED_FILES = {"parsed", "metrics"}


def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)]


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _writes_scored_file(call: ast.Call) -> bool:
    """A writer called on (or with) ``<run>.parsed`` / ``<run>.metrics``."""
    if _name(call) not in WRITERS:
        return False
    target = [call.func.value] if isinstance(call.func, ast.Attribute) else []
    return any(isinstance(a, ast.Attribute) and a.attr in SCORED_FILES for a in [*call.args, *target])


def test_only_score_writes_parsed_parquet_and_metrics_json():
    writers = sorted({str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") for c in _calls(p) if _writes_scored_file(c)})
    assert writers == ["candlebench/stages/score.py"]


def test_only_score_judges_a_run_into_its_parsed_table():
    callers = sorted({str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") for c in _calls(p)
                      if _name(c) == "judged_run"})
    assert callers == ["candlebench/stages/score.py"]


def test_the_check_sees_a_writer_of_parsed_parquet_elsewhere(tmp_path):
    """The AST test has teeth: infer's old line (writing parsed.parquet) is found as a writer."""
    old = tmp_path / "infer.py"
    old.write_text("write_parquet(table, run.parsed)\nrun.metrics.write_text('{}')\nwrite_parquet(sent, run.inputs)\n")
    assert [_writes_scored_file(c) for c in _calls(old)] == [True, True, False]
