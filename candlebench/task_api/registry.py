"""The task registry: every folder under ``candlebench/tasks/`` with a ``task.py`` that defines
``TASK`` and a ``config.yaml`` (its whole ``task:`` block) is a task, found by listing the folder, so
adding a task is adding a folder (lmms-eval's shape). Your own task folders join by path: the
directories on ``CANDLEBENCH_TASKS`` (a path list of directories holding task folders), imported as
``candlebench_user_tasks.<name>`` and never added to the shipped package. A name that two folders
claim (yours and a shipped one, or two of yours) is an error, not a silent choice. A task object
built in code joins with :func:`register`.
"""

from __future__ import annotations

import os
import sys
import types
from functools import cache
from importlib import import_module
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from candlebench.core.errors import UserError
from candlebench.task_api.base import Task

# Where the shipped tasks stand in reports and listings (the primary task, forecast, first); a task
# not named here joins after them, by name: this orders, it registers nothing.
ORDER = ("forecast", "e2a", "caption")

SHIPPED = Path(__file__).resolve().parents[1] / "tasks"
# The package your task folders are imported under: one synthetic package whose path is the
# CANDLEBENCH_TASKS directories, so a task's task.py imports as it would in place.
USER_PACKAGE = "candlebench_user_tasks"


class UnknownTask(UserError, ValueError):
    pass


_REGISTERED: dict[str, Task] = {}


def register(task: Task) -> Task:
    _REGISTERED[task.name] = task
    return task


def _user_roots() -> list[str]:
    """The CANDLEBENCH_TASKS directories, read when tasks are listed, not once on import: a process
    forked after the import (the CLI's test parent) sees its own."""
    return [folder for folder in os.environ.get("CANDLEBENCH_TASKS", "").split(os.pathsep) if folder]


def _user_package(roots: list[str]) -> types.ModuleType:
    package = sys.modules.get(USER_PACKAGE)
    if package is None:
        package = types.ModuleType(USER_PACKAGE, "Task folders joined through CANDLEBENCH_TASKS.")
        package.__path__ = []
        sys.modules[USER_PACKAGE] = package
    package.__path__[:] = roots
    return package


def _folders() -> dict[str, Path]:
    """name -> folder of every task folder: the shipped ones, then yours; a name claimed twice is
    refused with both folders named."""
    found = {code.parent.name: code.parent for code in sorted(SHIPPED.glob("*/task.py"))}
    for root in _user_roots():
        for code in sorted(Path(root).glob("*/task.py")):
            name = code.parent.name
            if name in found:
                raise UnknownTask(f"task {name!r} is defined twice: {found[name]} and {code.parent} "
                                  f"(CANDLEBENCH_TASKS); rename your folder")
            found[name] = code.parent
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


def module_name(name: str, folder: Path) -> str:
    """The import name of a task's folder: ``candlebench.tasks.<name>`` when shipped, else under
    :data:`USER_PACKAGE`."""
    return f"candlebench.tasks.{name}" if folder.parent == SHIPPED else f"{USER_PACKAGE}.{name}"


@cache
def _load(name: str, folder: Path) -> Task:
    # Imported on first use, so a stage loads only the task it runs.
    if folder.parent != SHIPPED:
        _user_package(_user_roots())
    task = import_module(f"{module_name(name, folder)}.task").TASK
    if task.name != name:
        raise UnknownTask(f"{folder}/task.py defines the task {task.name!r}: a task's folder carries its name")
    return task


def get_task(name: str) -> Task:
    if name in _REGISTERED:
        return _REGISTERED[name]
    folders = _folders()
    if name not in folders:
        raise UnknownTask(f"task={name!r}: unknown task; known: {names()}")
    return _load(name, folders[name])
