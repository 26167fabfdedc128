"""The task registry: one line per task, its package and the object that implements it.

Adding a task = one folder under ``tasks/``, one ``conf/task/<name>.yaml`` and one line here. A task
defined elsewhere (a test, a user's own package) joins with :func:`register`.
"""

from __future__ import annotations

from importlib import import_module

from candlebench.core.errors import UserError
from tasks.base import Task


class UnknownTask(UserError, ValueError):
    pass

# name -> "module:attribute"; imported on first use, so a stage loads only the task it runs.
_KNOWN: dict[str, str] = {
    "forecast": "tasks.forecast.task:TASK",
    "e2a": "tasks.e2a.task:TASK",
    "caption": "tasks.caption.task:TASK",
}
_LOADED: dict[str, Task] = {}


def register(task: Task) -> Task:
    _LOADED[task.name] = task
    return task


def names() -> list[str]:
    """The registry's order (the primary task, forecast, first; reports follow it), then tasks
    registered from elsewhere by name."""
    return [*_KNOWN, *sorted(set(_LOADED) - set(_KNOWN))]


def get_task(name: str) -> Task:
    if name not in _LOADED:
        if name not in _KNOWN:
            raise UnknownTask(f"task={name!r}: unknown task; known: {names()}")
        module, attribute = _KNOWN[name].split(":")
        _LOADED[name] = getattr(import_module(module), attribute)
    return _LOADED[name]
