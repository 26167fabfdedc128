"""Typed task settings (candlebench.task_api.settings): each task's config.yaml and its settings
dataclass hold the same keys, and the dataclass is built and checked once, frozen, with one-line
errors naming the key, the value and what is allowed."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from candlebench.task_api import registry as tasks
from candlebench.core.rules import ConfigError
from candlebench.stages.graph import compose_config
from candlebench.stages.job import job_config
from candlebench.task_api.registry import get_task
from helpers import ROOT, TESTS

pytestmark = pytest.mark.unit


@pytest.fixture()
def with_toy(monkeypatch):
    """The toy task (tests/toy_tasks) joined through CANDLEBENCH_TASKS."""
    monkeypatch.setenv("CANDLEBENCH_TASKS", str(TESTS / "toy_tasks"))
    return tasks.names()


# Fields a config.yaml leaves out (their default holds): the forecast task's library of alternative
# prompts, which the ablation experiments fill.
OPTIONAL = {"task.prompts"}


def _drift(cls: type, block: dict, prefix: str = "task.") -> list[str]:
    """Keys of ``block`` that the dataclass ``cls`` lacks, and fields it has that ``block`` lacks,
    in nested settings too."""
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    optional = {f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
                or f.default_factory is not dataclasses.MISSING}
    assert {f"{prefix}{k}" for k in optional} <= OPTIONAL, f"{cls.__name__}: a default for {optional}"
    out = sorted(f"{prefix}{k} (config only)" for k in set(block) - fields)
    out += sorted(f"{prefix}{k} (dataclass only)" for k in fields - set(block) - optional)
    for name in fields & set(block):
        if dataclasses.is_dataclass(hints[name]):
            out += _drift(hints[name], block[name], f"{prefix}{name}.")
    return out


def test_every_task_config_yaml_has_the_keys_of_its_settings_dataclass(with_toy):
    """So the two cannot drift: a key added to a config.yaml needs its field, and back."""
    from omegaconf import OmegaConf

    assert "toy" in with_toy
    for name in with_toy:
        block = OmegaConf.to_container(compose_config([f"task={name}"]).task, resolve=True)
        assert _drift(get_task(name).settings_type, block) == [], name


def test_settings_are_built_once_frozen_and_reach_the_task_with_their_context():
    cfg = compose_config(["task=forecast", "render.colors=red_up"])
    task = get_task("forecast")
    settings = task.settings(cfg.task)
    assert task.settings(cfg.task) == settings  # the same block, the same settings
    assert settings.images == ("daily", "weekly") and settings.samples.horizons == (5, 30)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.horizon = 5  # type: ignore[misc]
    job = job_config(cfg)
    assert job.settings == settings and job.context.study_dir == Path(str(cfg.out_dir))
    # The colour convention reaches the prompt only through the context's render settings.
    assert job.context.render.colors == ("red", "green")
    assert "RED = up, GREEN = down" in task.prompt_identity(job.settings, job.context)


def test_a_job_builds_its_task_settings_in_one_place():
    """Once per job, at its entrance (stages/job.py); task_overrides checks other tasks' blocks.
    Every stage and library reads them from the job, none builds them again."""
    calls = {str(p.relative_to(ROOT)) for p in (ROOT / "candlebench").rglob("*.py")
             if "task.settings(" in p.read_text(encoding="utf-8")}
    assert calls == {"candlebench/stages/job.py"}, calls


@pytest.mark.parametrize(("task", "override", "message"), [
    ("forecast", "+task.horizn=30", "task.horizn: not a setting here; nearest: horizon"),
    ("forecast", "+task.samples.intervall=30", "task.samples.intervall: not a setting here; nearest: interval"),
    ("forecast", "task.samples.regime_threshold=1.5", "task.samples.regime_threshold=1.5: must be a number in (0, 1)"),
    ("forecast", "task.samples.horizons=[]", "task.samples.horizons=[]: must be a non-empty list of integers >= 1"),
    ("forecast", "task.samples.trend_by=weeks", "task.samples.trend_by='weeks': must be one of ['cutoffs', 'days']"),
    ("forecast", "task.samples.trend_horizon=10",
     "task.samples.trend_horizon=10: must be one of task.samples.horizons=[5, 30] (trend_by=cutoffs reads that label)"),
    ("e2a", "task.samples.max_stale_days=-1", "task.samples.max_stale_days=-1: must be an integer >= 0"),
    ("e2a", "task.modalities=[text,image]",
     "task.modalities=['text', 'image']: must be a non-empty subset of ['text', 'chart', 'both']"),
    ("caption", "task.samples.start=soon", "task.samples.start='soon': must be a date (YYYY-MM-DD) or null"),
    ("reading", "task.language=fr", "task.language='fr': must be one of ['en', 'zh'] (task.prompts)"),
    ("reading", "task.frames=[monthly]", "task.frames=['monthly']: must be a non-empty subset of ['daily', 'weekly']"),
    ("reading", "task.render.marks=3", "task.render.marks=3: the reading charts letter 4 bars"),
])
def test_a_bad_task_setting_is_one_line_naming_key_value_and_what_is_allowed(task, override, message):
    cfg = compose_config([f"task={task}", override])
    with pytest.raises(ConfigError) as err:
        get_task(task).settings(cfg.task)
    assert message in str(err.value) and "\n" not in str(err.value)
