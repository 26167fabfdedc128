"""One job's config, typed, built once at its entrance (:func:`job_config`, called by
candlebench.stages.graph.prepare) from the composed Hydra config: the task and its settings, the
context its methods get, the study's and the run's folders, and each block a stage reads as a
frozen dataclass built by candlebench.core.settings.build. So every key is checked before any work
(a bad one is one line naming the key, the value and what is allowed), the task's settings are
built once per job, and nothing below the stages reads the Hydra config.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from omegaconf import DictConfig, ListConfig, OmegaConf

from candlebench.core.layout import StudyLayout, RunPaths, TaskPaths
from candlebench.core.paths import PathSettings
from candlebench.core.rules import check_early
from candlebench.core.settings import build
from candlebench.inference.backends import backend_settings
from candlebench.inference.backends.base import GenerationSpec
from candlebench.inference.backends.settings import BackendSettings
from candlebench.inference.models import ModelSpec
from candlebench.inference.settings import InferSettings
from candlebench.market.data_source import DataSettings
from candlebench.rendering.render import Drawing, render_settings
from candlebench.report.settings import ReportSettings
from candlebench.stages.sweep_settings import SweepSettings
from candlebench.task_api.base import ScoreSettings, Task, TaskContext
from candlebench.task_api.registry import get_task
from candlebench.task_api.settings import TaskSettings


@dataclass(frozen=True)
class JobConfig:
    task: Task
    settings: TaskSettings  # the task's ``task:`` block, checked (Task.settings)
    # The ``task:`` block as given, plain: a baseline's run key holds it (run_identity.task_config).
    task_block: Mapping[str, Any]
    context: TaskContext  # what the task's methods get of the job beyond their settings
    study: str
    layout: StudyLayout  # the study folder (out_dir)
    paths: PathSettings
    data: DataSettings
    drawing: Drawing  # ``render:``
    model: ModelSpec  # as configured (infer's model_spec: as the backend will run it)
    backend: BackendSettings  # the kind's own settings (``backend.name``)
    infer: InferSettings
    score: ScoreSettings
    report: ReportSettings
    sweep: SweepSettings  # `sweep`'s models and splits (`run` plans with them too)
    tasks: tuple[str, ...] | None  # the tasks `run` / `sweep` / `report` cover; None: every task
    import_file: str | None
    import_replace: bool

    @property
    def task_paths(self) -> TaskPaths:
        """The folder of the task the job runs."""
        return self.layout.task(self.task.name)

    @property
    def run_paths(self) -> RunPaths:
        """The folder of the run ``infer.run_name`` names."""
        return self.task_paths.run(self.infer.run_name)

    @property
    def draws_nothing(self) -> bool:
        """The task's prompts carry no chart and no text file (its inputs are in the prompt itself):
        render has nothing to draw, and a run's inputs are none."""
        return not self.context.render.freqs and not self.context.render.text

    def batch_size(self) -> int:
        """Requests per step: ``infer.batch_size``; when null the backend's own (vLLM's chunk, a
        server's concurrency), else the model's GPU batch on a GPU and 8 on CPU: a GPU left at 8
        idles between Python steps; a CPU gains nothing from larger batches."""
        if self.infer.batch_size is not None:
            return int(self.infer.batch_size)
        if self.backend.batch_size is not None:
            return int(self.backend.batch_size)
        import torch

        return int(self.model.gpu_batch_size or 8) if torch.cuda.is_available() else 8

    def generation(self, model: ModelSpec) -> GenerationSpec:
        """``infer.generation`` with the answer constraint of the task and ``model``."""
        return replace(self.infer.generation,
                       regex=self.task.answer_constraint(self.settings, model.constrain_answers))


def _plain(cfg: DictConfig, key: str) -> Any:
    """A top-level value as plain Python (lists and mappings resolved)."""
    value = cfg.get(key)
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value


def _found(cfg: DictConfig, key: str) -> tuple[bool, Any]:
    """(whether ``key`` is in the config, its resolved value as plain Python)."""
    node = OmegaConf.select(cfg, key, default="\0missing")
    if isinstance(node, str) and node == "\0missing":
        return False, None
    return True, OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node


def job_config(cfg: DictConfig) -> JobConfig:
    """The job of the composed config ``cfg``, every block checked: raises
    :class:`~candlebench.core.rules.ConfigError` for the first value it cannot run with."""
    infer = build(InferSettings, cfg.infer, "infer")
    drawing = build(Drawing, cfg.render, "render")
    data = build(DataSettings, cfg.data, "data")
    report = build(ReportSettings, cfg.report, "report")
    score = build(ScoreSettings, cfg.score, "score")
    backend = backend_settings(cfg.backend)
    paths = build(PathSettings, cfg.paths, "paths")
    sweep = build(SweepSettings, cfg.sweep, "sweep")
    check_early((), lambda key: _found(cfg, key))  # set in a config file rather than on the command line
    task = get_task(str(cfg.task.name))
    settings = task.settings(cfg.task)
    inputs = task.inputs(settings)
    # The task's inputs, drawn as render: says to its chart design (task.render).
    render = render_settings(drawing, settings.render, inputs.charts, inputs.text)
    study_dir = Path(str(cfg.out_dir))
    tasks = _plain(cfg, "tasks")
    return JobConfig(
        task=task, settings=settings, task_block=OmegaConf.to_container(cfg.task, resolve=True),
        context=TaskContext(render, study_dir, Path(paths.cache_dir)), study=str(cfg.study), layout=StudyLayout(study_dir),
        paths=paths, data=data, drawing=drawing, model=ModelSpec.from_config(_plain(cfg, "model")), backend=backend,
        infer=infer, score=score, report=report, sweep=sweep, tasks=None if not tasks else tuple(str(t) for t in tasks),
        import_file=cfg.get("import_file"), import_replace=bool(cfg.get("import_replace")),
    )
