"""What every registered task promises the shared stages (task_api/base.py), checked over
``candlebench.task_api.registry.names()``: the shipped tasks, the toy task of tests/toy_tasks and the example
task of docs/development.md, so a task added as a folder is checked with no line added here."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

import pandas as pd
import pytest
from omegaconf import OmegaConf

from candlebench.task_api import registry as tasks
from candlebench.core.results import MAX_TEXT_CHARS, Parsed
from candlebench.stages.graph import compose_config
from candlebench.stages.job import job_config
from candlebench.task_api.base import Column, Inputs, Task
from candlebench.task_api.settings import TaskSettings
from helpers import ROOT, TESTS

pytestmark = pytest.mark.unit

JOINED = (TESTS / "toy_tasks", ROOT / "docs" / "example_task")  # as CANDLEBENCH_TASKS joins them
# What an answer can be: no text (generation failed), nothing, Unicode's odd corners (NEL, a lone
# surrogate, NUL), half a JSON object, an unclosed reasoning block, numbers out of range, and text
# longer than a parser reads.
HOSTILE = (None, "", " \n\t", "\x85", "\ud800", "a\ud800b", "\x00", "{", '{"answer": ', "[]", "null", "<think>",
           "</think>", "<think>" + "x" * 1000, "1e309", "-0", "NaN", '{"a": 1e999}', "零" * 50, "\u202e" * 10,
           "x" * 50_000, "word " * (MAX_TEXT_CHARS // 5 + 1))


@pytest.fixture(scope="module")
def registry():
    """Every task: the shipped ones with the toy and example folders joined through CANDLEBENCH_TASKS."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CANDLEBENCH_TASKS", os.pathsep.join(str(p) for p in JOINED))
        names = tasks.names()
        assert {"toy", "candle"} <= set(names), names
        yield {name: tasks.get_task(name) for name in names}


@pytest.fixture(scope="module")
def configs(registry):
    return {name: compose_config([f"task={name}"]) for name in registry}


@pytest.fixture(scope="module")
def setups(configs):
    return {name: job_config(cfg) for name, cfg in configs.items()}


def each(registry: Mapping[str, Task], check) -> None:
    """``check(name, task)`` over every task, every failure named."""
    failed = []
    for name, task in registry.items():
        try:
            check(name, task)
        except AssertionError as err:
            failed.append(f"{name}: {err}")
    assert not failed, "\n".join(failed)


def test_class_attributes_have_their_declared_shapes(registry):
    def check(name, task):
        assert isinstance(task, Task) and task.name == name
        assert isinstance(task.columns, tuple) and all(isinstance(c, Column) for c in task.columns)
        for c in task.columns:
            pd.api.types.pandas_dtype(c.dtype)  # a dtype pandas knows
        assert len({c.name for c in task.columns}) == len(task.columns), "a column declared twice"
        assert isinstance(task.baselines, Mapping) and all(callable(b) for b in task.baselines.values())
        assert set(task.references) <= set(task.baselines), "a reference that is no baseline"
        assert all(isinstance(m, str) and m != "direct" for m in task.second_passes)
        assert set(task.scored_after) <= set(registry) - {name}, f"scored_after {task.scored_after}"
        assert isinstance(task.judge_version, int) and task.judge_version >= 1
        assert isinstance(task.settings_type, type) and issubclass(task.settings_type, TaskSettings)
        assert task.requires is None or (isinstance(task.requires[0], str) and isinstance(task.requires[1], tuple))

    each(registry, check)


def test_every_task_compares_and_reports_its_runs(registry):
    """Either its per-sample scores (the defaults' input) or a compare and a report of its own."""
    def check(name, task):
        own = [m for m in ("compare", "report") if getattr(type(task), m) is not getattr(Task, m)]
        assert task.per_sample is not None or own == ["compare", "report"], \
            f"declares no per_sample scores and overrides only {own}"

    each(registry, check)


def test_config_yaml_loads_and_composes(registry, configs, setups):
    def check(name, task):
        folder = tasks._folders().get(name)
        if folder is not None:  # not a task registered in code
            assert OmegaConf.load(folder / "config.yaml").name == name, "config.yaml's name is not its folder's"
        cfg = configs[name]
        assert cfg.task.name == name
        assert set(cfg.task.baseline.names) <= set(task.baselines), "config.yaml names baselines the task lacks"
        setup = setups[name]
        assert isinstance(setup.settings, task.settings_type) and setup.settings.name == name
        assert isinstance(task.inputs(setup.settings), Inputs)
        assert isinstance(task.prompt_identity(setup.settings, setup.context), str)

    each(registry, check)


def test_the_parser_never_raises_and_fails_as_data(registry, setups):
    """Every hostile text gives a Parsed: a JSON-safe answer or None with tier "none" and a reason,
    and only the task's declared columns."""
    def check(name, task):
        declared = {c.name for c in task.columns}
        s = setups[name].settings
        for parse in (task.parser(s), task.judge(s)):
            for text in HOSTILE:
                shown = repr(text)[:40]
                try:
                    p = parse(text)
                except Exception as err:  # noqa: BLE001 - the contract is that none escapes
                    raise AssertionError(f"parser raised {type(err).__name__}: {err} on {shown}") from None
                assert isinstance(p, Parsed), f"{shown}: returned {type(p).__name__}"
                assert set(p.columns) <= declared, f"{shown}: columns {set(p.columns) - declared} not declared"
                if p.answer is None:
                    assert p.tier == "none" and p.reason, f"{shown}: no answer needs tier 'none' and a reason"
                else:
                    json.dumps(p.answer, allow_nan=False)

    each(registry, check)
