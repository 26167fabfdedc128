"""The floor plan: the import-linter contract in pyproject.toml holds (layers, independence, no
cycles between siblings), and grimp finds no import cycle among the project's modules or its
packages."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("candlebench", "tasks", "rendering", "inference", "scoring")
# The packages the layers are made of; every other module of candlebench/ is one of its own.
UNITS = ("candlebench.core", "candlebench.market", "candlebench.stages")


def _graph():
    import grimp

    return grimp.build_graph(*PACKAGES, cache_dir=None)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node, or with a self-loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _unit(module: str) -> str:
    for unit in UNITS:
        if module == unit or module.startswith(unit + "."):
            return unit
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "candlebench" else parts[0]


def test_the_import_linter_contract_holds(capsys):
    from importlinter import configuration
    from importlinter.application.use_cases import lint_imports

    configuration.configure()  # what the lint-imports command does first
    kept = lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True, is_debug_mode=True)
    assert kept, capsys.readouterr().out


def test_no_import_cycles_among_modules_or_packages():
    graph = _graph()
    modules = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert _cycles(modules) == []
    units: dict[str, set[str]] = {}
    for importer, imported in modules.items():
        units.setdefault(_unit(importer), set()).update(_unit(m) for m in imported if _unit(m) != _unit(importer))
    assert _cycles(units) == []
    assert {"candlebench.core", "candlebench.market", "candlebench.stages", "tasks", "rendering"} <= set(units)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}}) == [["a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_task_folder_is_in_the_independence_contract():
    """A task folder left out of the contract could import another task unseen (reading once did)."""
    import tomllib

    import tasks

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    independent = next(c for c in contracts if c["id"] == "tasks")["modules"]
    assert sorted(independent) == sorted(f"tasks.{name}" for name in tasks._folders())
