"""A task's settings as a frozen dataclass, built and checked once per job from its ``task:`` block.

tasks/<name>/config.yaml stays the source of the defaults (Hydra composes and overrides it); each
task mirrors it in a dataclass (``Task.settings_type``) whose fields declare their checks
(:func:`setting`) and whose ``__post_init__`` checks what spans fields. :func:`build` turns the
block into that dataclass, so a bad or unknown key is one line naming the key, the value and what
is allowed, and a task's methods read typed fields instead of string lookups in a DictConfig.
tests/tasks/test_task_settings.py keeps every task's dataclass and its config.yaml to the same keys.
"""

from __future__ import annotations

import difflib
import typing
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, Callable, Mapping

import pandas as pd
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from candlebench.core.rules import ConfigError, date_or_null, integer

Check = tuple[Callable[[Any], bool], str]  # (test of the plain value, what is allowed)
DATE: Check = (date_or_null, "a date (YYYY-MM-DD) or null")


def subset_of(choices: tuple[str, ...]) -> Check:
    """A non-empty list of some of ``choices`` (the modalities a task asks in, its time frames)."""
    return (lambda v: isinstance(v, list) and bool(v) and set(v) <= set(choices)), f"a non-empty subset of {list(choices)}"


def setting(check: Check | None = None, key_of: str | None = None) -> Any:
    """A field whose value, as the config gives it (lists still lists), must pass ``check``, or be
    a key of the mapping field ``key_of`` declared before it (``language`` of ``prompts``)."""
    return field(metadata={k: v for k, v in (("check", check), ("key_of", key_of)) if v is not None})


def _frozen(value: Any) -> Any:
    """Lists as tuples, all the way down: a setting cannot be changed in place."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    return value


def _value(values: Any, name: str, key: str) -> Any:
    """``values[name]`` as plain Python, interpolations resolved now: field by field in their
    order, so ``language`` is checked before the ``prompt`` that interpolates it fails to resolve."""
    try:
        value = values[name]
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except OmegaConfBaseException as err:
        raise ConfigError(f"{key}: does not resolve: {str(err).splitlines()[0]}") from None


def build(cls: type, values: Mapping[str, Any], prefix: str = "task") -> Any:
    """``cls`` from the mapping ``values``, plain or a DictConfig (``prefix``: where it sits in the
    config, for the errors): nested dataclass fields from nested mappings, each value checked by
    its field's check."""
    names = [f.name for f in fields(cls) if f.init]
    for key in values:
        if key not in names:
            nearest = difflib.get_close_matches(str(key), names, n=3, cutoff=0.6)
            raise ConfigError(f"{prefix}.{key}: not a setting here; "
                              + (f"nearest: {', '.join(nearest)}" if nearest else f"the settings: {names}"))
    hints = typing.get_type_hints(cls)
    given = {}
    for f in fields(cls):
        if not f.init:
            continue
        key = f"{prefix}.{f.name}"
        if f.name not in values:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ConfigError(f"{key}: missing; the task's config.yaml gives every setting a default")
            continue
        kind = hints[f.name]
        if is_dataclass(kind):
            value = values[f.name]
            if not isinstance(value, Mapping):
                raise ConfigError(f"{key}={value!r}: must be a mapping of {[g.name for g in fields(kind)]}")
            given[f.name] = build(kind, value, key)
            continue
        value = _value(values, f.name, key)
        check, key_of = f.metadata.get("check"), f.metadata.get("key_of")
        if check is not None and not check[0](value):
            raise ConfigError(f"{key}={value!r}: must be {check[1]}")
        if key_of is not None and value not in given[key_of]:
            raise ConfigError(f"{key}={value!r}: must be one of {sorted(given[key_of])} ({prefix}.{key_of})")
        given[f.name] = _frozen(value)
    return cls(**given)


@dataclass(frozen=True, kw_only=True)
class Baselines:
    names: tuple[str, ...]  # each one of the task's baselines (Task.settings checks)
    params: dict[str, Any]  # baseline name -> its keyword arguments


@dataclass(frozen=True, kw_only=True)
class ChartDesign:
    """``task.render``: the task's chart design (``render:`` is how it is drawn)."""

    max_bars: int = setting(integer(1))
    ma_windows: tuple[int, ...]
    ma_colors: tuple[str, ...]
    # Bars lettered A, B, ... on each chart (rendering/marks.py): the reading task's; 0 elsewhere.
    marks: int = setting(integer(0))

    def __post_init__(self) -> None:
        if len(self.ma_windows) != len(self.ma_colors):
            raise ConfigError(f"task.render.ma_windows={list(self.ma_windows)} and task.render.ma_colors="
                              f"{list(self.ma_colors)}: must be as long as each other (one colour per moving average)")


@dataclass(frozen=True, kw_only=True)
class MarketWindow:
    """``task.samples`` of a task asking about stocks on dates of the market calendar: every
    ``interval`` trading days in [start, end) (task_api/windows.py)."""

    start: str | None = setting(DATE)
    end: str | None = setting(DATE)
    interval: int = setting(integer(1))
    min_bars: int = setting(integer(1))
    max_stale_days: int = setting(integer(0))

    def __post_init__(self) -> None:
        if self.start is not None and self.end is not None and pd.Timestamp(str(self.start)) >= pd.Timestamp(str(self.end)):
            raise ConfigError(f"task.samples.start={self.start} is not before task.samples.end={self.end}: "
                              "the window holds no cutoff")

    @property
    def window(self) -> dict[str, Any]:
        """The window as evaluation_windows (task_api/windows.py) takes it: dates as text."""
        return {"start": None if self.start is None else str(self.start), "end": None if self.end is None else str(self.end),
                "interval": self.interval, "min_bars": self.min_bars, "max_stale_days": self.max_stale_days}


@dataclass(frozen=True, kw_only=True)
class StockWindow(MarketWindow):
    """A window over some of the stocks: ``codes`` (null = every stock of the data)."""

    codes: tuple[str, ...] | None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.codes is not None:
            object.__setattr__(self, "codes", tuple(str(c) for c in self.codes))


@dataclass(frozen=True, kw_only=True)
class TaskSettings:
    """The keys every task has (conf/task/_defaults.yaml, its name and its chart design); a task
    adds its own, its ``samples`` among them."""

    name: str
    # The pass a run is: direct, or a second pass of kind ``method`` over first-pass run ``revises``
    # (Task.first_pass_run checks both); ``passes``: the second passes `run` / `sweep` add.
    method: str
    revises: str | None
    passes: tuple[str, ...]
    answer_regex: str | None
    answer_format: str | None
    baseline: Baselines
    render: ChartDesign
