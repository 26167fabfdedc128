"""The floor plan: the import-linter contract in pyproject.toml holds (layers, independence, no
cycles between siblings), and grimp finds no import cycle among the project's modules or its
packages."""

from __future__ import annotations

import pytest

from helpers import ROOT

pytestmark = pytest.mark.unit

# The packages the layers are made of; every other module of candlebench/ (cli, commands.sweep, ...) is one of its own.
UNITS = tuple(f"candlebench.{name}" for name in
              ("core", "market", "stages", "tasks", "task_api", "report", "inference", "scoring", "rendering"))
# The names the card's folders had as top-level packages before they joined candlebench.*.
FORMER_TOP_LEVEL = ("tasks", "inference", "scoring", "rendering")


def _graph(external: bool = False):
    import grimp

    return grimp.build_graph("candlebench", cache_dir=None, include_external_packages=external)


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
    return ".".join(module.split(".")[:2])


def _layers() -> list[set[str]]:
    """The layer contract of pyproject.toml, top first: each layer's modules or packages."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    return [{name.strip() for name in layer.split("|")} for layer in layers]


def _layer_of(module: str, layers: list[set[str]]) -> int | None:
    for depth, layer in enumerate(layers):
        if any(module == name or module.startswith(name + ".") for name in layer):
            return depth
    return None


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
    assert {"candlebench.core", "candlebench.market", "candlebench.stages", "candlebench.tasks",
            "candlebench.rendering"} <= set(units)


def test_the_folders_read_in_layer_order():
    """Every folder of the package (candlebench/core, candlebench/tasks, ...) and every
    top-floor module stands in one layer, and no import runs from a layer up to one above it: the
    folder picture and the contract say the same."""
    graph, layers = _graph(), _layers()
    unplaced = sorted(m for m in graph.modules if m != "candlebench" and _layer_of(m, layers) is None)
    assert unplaced == []
    upward = sorted(
        f"{importer} -> {imported}"
        for importer in graph.modules if importer != "candlebench"
        for imported in graph.find_modules_directly_imported_by(importer)
        if _layer_of(imported, layers) < _layer_of(importer, layers)
    )
    assert upward == []


def test_nothing_imports_the_folders_by_their_former_top_level_names():
    """`import inference` would load a second copy of the package from a checkout's root (and find
    PyPI's `inference` where one is installed): every import goes through candlebench.*."""
    graph = _graph(external=True)
    assert sorted(set(FORMER_TOP_LEVEL) & set(graph.modules)) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}}) == [["a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_task_folder_is_in_the_independence_contract():
    """A task folder left out of the contract could import another task unseen (reading once did):
    the contract names them by wildcard, and candlebench/tasks holds nothing but task folders."""
    import tomllib

    from candlebench.task_api import registry
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert next(c for c in contracts if c["id"] == "tasks")["modules"] == ["candlebench.tasks.*"]
    graph = _graph()
    children = {m.split(".")[2] for m in graph.find_descendants("candlebench.tasks")}
    assert children == {path.parent.name for path in registry.SHIPPED.glob("*/task.py")}


def test_the_package_is_real_folders_each_module_found_once():
    """No links in the package (they broke Windows clones, grep, ruff and blame): a plain walk of
    candlebench/ that follows no link finds every module grimp finds, each at one tracked path."""
    import os

    package = ROOT / "candlebench"
    links, walked = [], set()
    for folder, dirs, files in os.walk(package, followlinks=False):
        links += [os.path.join(folder, n) for n in dirs + files if os.path.islink(os.path.join(folder, n))]
        for name in files:
            if name.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                walked.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert links == []
    assert walked == set(_graph().modules)
