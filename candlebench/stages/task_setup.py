"""The task a job runs, set up from its config: the task, its settings from ``cfg.task`` (built and
checked once: ``Task.settings``) and the context its methods get (``TaskContext``) — the only way the
render and path settings reach a task."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from candlebench.rendering.render import render_settings
from candlebench.task_api.registry import get_task
from candlebench.task_api.base import Task, TaskContext
from candlebench.task_api.settings import TaskSettings


@dataclass(frozen=True)
class TaskSetup:
    task: Task
    settings: TaskSettings
    context: TaskContext

    @property
    def draws_nothing(self) -> bool:
        """The task's prompts carry no chart and no text file (its inputs are in the prompt itself):
        render has nothing to draw, and a run's inputs are none."""
        return not self.context.render.freqs and not self.context.render.text


def task_setup(cfg: DictConfig) -> TaskSetup:
    task = get_task(str(cfg.task.name))
    settings = task.settings(cfg.task)
    inputs = task.inputs(settings)
    # The task's inputs, drawn by cfg.render to its chart design (task.render).
    render = render_settings(cfg.render, settings.render, inputs.charts, inputs.text)
    return TaskSetup(task, settings, TaskContext(render, Path(str(cfg.out_dir)), Path(str(cfg.paths.cache_dir))))
