"""The task registry: every folder under ``tasks/`` with a ``task.py`` that defines ``TASK`` and a
``config.yaml`` (its whole ``task:`` block) is a task, found by listing the folder, so adding a task
is adding a folder (lmms-eval's shape). Folders elsewhere join through ``CANDLEBENCH_TASKS`` (a
path list of directories holding task folders); a task object built in code joins with :func:`register`.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import import_module
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from candlebench.core.errors import UserError
from candlebench.tasks.base import Task

# Where the shipped tasks stand in reports and listings (the primary task, forecast, first); a task
# not named here joins after them, by name: this orders, it registers nothing.
ORDER = ("forecast", "e2a", "caption")


def _joined() -> list[str]:
    """Your own tasks' folders (CANDLEBENCH_TASKS), found as the shipped ones are: added to the
    package's path, so `candlebench.tasks.<name>.task` imports from there. Read when tasks are
    listed, not once on import: a process forked after the import (the CLI's test parent) sees its own."""
    for folder in os.environ.get("CANDLEBENCH_TASKS", "").split(os.pathsep):
        if folder and folder not in __path__:
            __path__.append(folder)
    return __path__


_joined()


class UnknownTask(UserError, ValueError):
    pass


_REGISTERED: dict[str, Task] = {}


def register(task: Task) -> Task:
    _REGISTERED[task.name] = task
    return task


def _folders() -> dict[str, Path]:
    """name -> folder of every task folder on the package's path (the first of a name wins)."""
    found: dict[str, Path] = {}
    for root in _joined():
        for code in sorted(Path(root).glob("*/task.py")):
            found.setdefault(code.parent.name, code.parent)
    return found


def names() -> list[str]:
    """Every task (those registered from elsewhere too), in :data:`ORDER`, then by name."""
    return sorted({*_folders(), *_REGISTERED}, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def store_configs() -> None:
    """Each task folder's config.yaml as the option ``task=<name>`` of Hydra's task group."""
    _store(tuple(_folders().items()))


@cache
def _store(folders: tuple[tuple[str, Path], ...]) -> None:
    # Once per set of task folders: every composed config calls store_configs, a plan composes dozens.
    store = ConfigStore.instance()
    for name, folder in folders:
        if (folder / "config.yaml").exists():
            store.store(group="task", name=name, node=OmegaConf.load(folder / "config.yaml"))


@cache
def _load(name: str) -> Task:
    # Imported on first use, so a stage loads only the task it runs.
    task = import_module(f"candlebench.tasks.{name}.task").TASK
    if task.name != name:
        raise UnknownTask(f"tasks/{name}/task.py defines the task {task.name!r}: a task's folder carries its name")
    return task


def get_task(name: str) -> Task:
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name not in _folders():
        raise UnknownTask(f"task={name!r}: unknown task; known: {names()}")
    return _load(name)
