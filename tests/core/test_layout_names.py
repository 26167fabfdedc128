"""core/layout.py is the one module that knows the names of a study's files (#48): a string
constant of the package naming one of them anywhere else (a path, a glob, a lock's name) fails
here. Messages a person reads (with spaces) may name them; docstrings too."""

from __future__ import annotations

import ast

import pytest

from helpers import ROOT

pytestmark = pytest.mark.unit

PACKAGE = ROOT / "candlebench"
LAYOUT = PACKAGE / "core" / "layout.py"
NAMES = {"parts", "responses.jsonl", "responses.jsonl.sha256", "run.json", "parsed.parquet", "metrics.json",
         "inputs.parquet", "score_error.json", "locks"}
SUFFIXES = (".lock", ".gate")


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def file_names(source: str) -> list[str]:
    """The string constants of ``source`` (f-strings' literal parts included) that name a file of
    the layout: a path, one of its parts or a lock's suffix; prose and docstrings aside."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if any(c.isspace() for c in node.value):
                continue
            parts = node.value.split("/")
            if any(p in NAMES or p.endswith(SUFFIXES) for p in parts):
                found.append(node.value)
    return found


def test_only_the_layout_names_the_files_of_a_study():
    elsewhere = {str(p.relative_to(ROOT)): names for p in sorted(PACKAGE.rglob("*.py")) if p != LAYOUT
                 and (names := file_names(p.read_text(encoding="utf-8")))}
    assert elsewhere == {}
    assert {"parsed.parquet", "metrics.json", "run.json", "parts"} <= set(file_names(LAYOUT.read_text(encoding="utf-8")))


def test_a_file_name_in_a_path_a_glob_or_a_lock_is_found_and_prose_is_not():
    source = '''"""Writes parsed.parquet."""
run / "parsed.parquet"
root.glob("parts/*.jsonl")
f"run.{name}.{unit}.lock"
raise ValueError("damaged metrics.json or run.json")
'''
    assert file_names(source) == ["parsed.parquet", "parts/*.jsonl", ".lock"]
