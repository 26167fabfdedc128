"""A task's settings as a frozen dataclass, built and checked once per job from its ``task:`` block
by the machinery every config block uses (candlebench.core.settings).

tasks/<name>/config.yaml stays the source of the defaults; each task mirrors it in a dataclass
(``Task.settings_type``): the keys every task has are here, a task adds its own.
tests/tasks/test_task_settings.py keeps every task's dataclass and its config.yaml to the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from candlebench.core.rules import ConfigError, integer
from candlebench.core.settings import DATE, Check, setting


def subset_of(choices: tuple[str, ...]) -> Check:
    """A non-empty list of some of ``choices`` (the modalities a task asks in, its time frames)."""
    return (lambda v: isinstance(v, list) and bool(v) and set(v) <= set(choices)), f"a non-empty subset of {list(choices)}"


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
