"""The render settings a config gives: what render draws under, and what freshness checks charts
against (apart from the render stage, which asks freshness whether its market is current)."""

from __future__ import annotations

from omegaconf import DictConfig

from candlebench.rendering.render import RenderSettings, render_settings
from candlebench.tasks import get_task


def settings_from(cfg: DictConfig) -> RenderSettings:
    """The render settings of the task a stage runs: its inputs, drawn by cfg.render to its chart design (cfg.task.render)."""
    inputs = get_task(cfg.task.name).inputs(cfg)
    return render_settings(cfg.render, cfg.task.render, inputs.charts, inputs.text)
