"""The registry: shipped task folders under candlebench/tasks, yours by path through
CANDLEBENCH_TASKS, imported outside the shipped package, and a name two folders claim refused."""

from __future__ import annotations

import shutil
import sys

import pytest

from candlebench.task_api import registry
from helpers import TESTS

pytestmark = pytest.mark.unit


def test_a_user_task_is_imported_outside_the_shipped_package(monkeypatch):
    monkeypatch.setenv("CANDLEBENCH_TASKS", str(TESTS / "toy_tasks"))
    task = registry.get_task("toy")
    assert type(task).__module__.startswith(f"{registry.USER_PACKAGE}.toy.")
    assert not any(name.startswith("candlebench.tasks.toy") for name in sys.modules)
    assert registry.module_name("forecast", registry._folders()["forecast"]) == "candlebench.tasks.forecast"


def test_a_user_task_named_like_a_shipped_one_is_refused_naming_both_folders(tmp_path, monkeypatch):
    clash = tmp_path / "forecast"
    shutil.copytree(TESTS / "toy_tasks" / "toy", clash)
    monkeypatch.setenv("CANDLEBENCH_TASKS", str(tmp_path))
    with pytest.raises(registry.UnknownTask) as err:
        registry.names()
    assert str(clash) in str(err.value) and str(registry.SHIPPED / "forecast") in str(err.value)


def test_two_user_folders_claiming_one_name_are_refused(tmp_path, monkeypatch):
    for root in ("one", "two"):
        shutil.copytree(TESTS / "toy_tasks" / "toy", tmp_path / root / "toy")
    monkeypatch.setenv("CANDLEBENCH_TASKS", f"{tmp_path / 'one'}:{tmp_path / 'two'}")
    with pytest.raises(registry.UnknownTask, match="defined twice"):
        registry.get_task("toy")


def test_the_shipped_tasks_folder_holds_only_task_folders():
    entries = {p.name for p in registry.SHIPPED.iterdir() if p.name != "__pycache__"}
    assert entries - {"__init__.py"} == {p.parent.name for p in registry.SHIPPED.glob("*/task.py")}
