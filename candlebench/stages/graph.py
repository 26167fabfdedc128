"""The one stage graph: every stage once, with its name, job, dependencies and split.

``candlebench <stage>`` runs one node of it, ``candlebench run`` walks it on this machine and
``candlebench sweep`` submits it to SLURM; all three read :data:`STAGES`, so a stage has one name
and one definition. :func:`plan` expands the graph for tasks and models into jobs — each a stage
with the overrides a command line would carry — and :func:`run_stage` runs one job by composing
the config from those overrides, wherever it runs (this process, a SLURM array task).

    samples ─┬─ render (chunks) ── infer (shards, per model) ── score (per model) ───┐
             │                        └─ infer (second pass) ─── score (the pass) ──┤
             └─ baseline ─────────────────────────────────────── score (baselines) ─┴─ report

A second pass (``task.passes``, e.g. E2A's verify) revises its model's first run: its own run
``<run>-<method>``, after that run's infer job.

``import`` is a stage too (answers made elsewhere become a run, scored like any other), but no
plan includes it: it replaces ``infer`` when the answers already exist.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

from candlebench.core.paths import CONF_DIR, register_resolvers
from candlebench.stages.baseline import baseline
from candlebench.stages.import_responses import import_responses
from candlebench.stages.infer import infer
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.stages.provenance import record_config
from candlebench.stages.render import render
from candlebench.stages.report import report
from candlebench.stages.samples import samples
from candlebench.stages.score import score
from candlebench.stages.validate import validate
from tasks import get_task


@dataclass(frozen=True)
class StageDef:
    name: str
    job: Callable[[DictConfig], None]
    help: str
    scope: str  # "task": once per task; "model": per task and model; "once": one for the whole run
    split: str | None = None  # the config block of its array split: render.chunk / infer.shard
    gpu: bool = False
    positional: tuple[str, ...] = ()  # command-line words taken as these keys (`import FILE`)
    planned: bool = True  # part of `run` / `sweep`; import stands in for infer when you have answers


STAGES: tuple[StageDef, ...] = (
    StageDef("samples", samples, "build the task's samples (stock x date, labels, groups)", "task"),
    StageDef("render", render, "draw every input the task's samples need (parallel, resumable)", "task", "render.chunk"),
    StageDef("baseline", baseline, "the task's non-VLM baselines, as runs", "task"),
    StageDef("infer", infer, "run a model over the task's samples (transformers or vLLM), resumable", "model",
             "infer.shard", gpu=True),
    StageDef("import", import_responses, "responses made elsewhere (JSONL/CSV: sample_id, text) as a run", "model",
             positional=("import_file",), planned=False),
    StageDef("score", score, "parse and score runs: metrics.json", "model"),
    StageDef("report", report, "Markdown + HTML report of every task's scored runs, paired comparisons", "once"),
)
BY_NAME = {s.name: s for s in STAGES}


@dataclass(frozen=True)
class Job:
    key: str  # unique within a plan: "infer:forecast:qwen2_5_vl_7b"
    stage: str
    overrides: tuple[tuple[str, ...], ...]  # one tuple per array task
    after: tuple[str, ...] = ()
    gpu: bool = False


def _keys(overrides: list[str]) -> set[str]:
    return {o.split("=", 1)[0].lstrip("+~") for o in overrides}


def with_overrides(base: list[str], *extra: str) -> tuple[str, ...]:
    """``base`` with ``extra`` replacing any override of the same key."""
    replaced = _keys(list(extra))
    return (*(o for o in base if o.split("=", 1)[0].lstrip("+~") not in replaced), *extra)


def _split(base: tuple[str, ...], block: str | None, count: int) -> tuple[tuple[str, ...], ...]:
    if block is None or count <= 1:
        return (base,)
    return tuple(with_overrides(list(base), f"{block}.index={i}", f"{block}.count={count}") for i in range(count))


@dataclass(frozen=True)
class Unit:
    """One model run of a plan: a model config, optionally under a variant's overrides (an
    ablation: other inputs, another prompt). ``key`` names it: "model" or "model@variant"."""

    model: str
    variant: str | None = None
    overrides: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.model if self.variant is None else f"{self.model}@{self.variant}"


def units(models: list[str], variants: dict[str, tuple[str, ...]] | None = None) -> list[Unit]:
    """Every model, once per variant (``sweep.variants``: name -> overrides), or once without any."""
    if not variants:
        return [Unit(m) for m in models]
    return [Unit(m, name, tuple(extra)) for m in models for name, extra in variants.items()]


def _is_value(override: str) -> bool:
    """``task.horizon=10``, not a group choice (``model=x``) nor an addition / deletion (``+k``, ``~k``)."""
    key = override.split("=", 1)[0]
    return "." in key and not key.startswith(("+", "~"))


def _composed(groups: tuple[str, ...], task: str | None) -> DictConfig:
    return compose_config([*groups, *((f"task={task}",) if task else ())])


_ABSENT = object()


def for_task(base: list[str], task: str | None, tasks: list[str]) -> list[str]:
    """``base`` as one task's jobs take it when a plan covers several tasks: a value override of a
    key this task's config lacks but another planned task's has (``task.horizon`` belongs to
    forecast, ``task.language`` to e2a) stays with that task. A key no task has is kept, so
    Hydra names it. ``task=None``: the report's config (the default task)."""
    groups = tuple(o for o in base if not _is_value(o))
    mine = _composed(groups, task)
    others = [_composed(groups, t) for t in tasks if t != task]

    def keep(override: str) -> bool:
        if not _is_value(override):
            return True
        key = override.split("=", 1)[0]
        if OmegaConf.select(mine, key, default=_ABSENT) is not _ABSENT:
            return True
        return not any(OmegaConf.select(o, key, default=_ABSENT) is not _ABSENT for o in others)

    return [o for o in base if keep(o)]


def pass_run(run: str, method: str) -> str:
    """The run a second pass over ``run`` writes (infer.run_name's default says the same)."""
    return f"{run}-{method}"


def plan(
    base: list[str],
    tasks: list[str],
    models: list[Unit],
    run_names: dict[tuple[str, str], str],
    baselines: bool,
    render_chunks: int = 1,
    infer_shards: int = 1,
    report: tuple[str, ...] = (),
    passes: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
) -> list[Job]:
    """Every job in dependency order; ``run_names[(task, unit.key)]`` is that unit's run name,
    ``passes[task]`` the second passes that follow each of the task's model runs."""
    jobs: list[Job] = []
    scored: list[str] = []
    for task in tasks:
        on_task = with_overrides(for_task(base, task, tasks), f"task={task}")
        jobs.append(Job(f"samples:{task}", "samples", (on_task,)))
        jobs.append(Job(f"render:{task}", "render", _split(on_task, "render.chunk", render_chunks), (f"samples:{task}",)))
        if baselines:
            jobs.append(Job(f"baseline:{task}", "baseline", (on_task,), (f"samples:{task}",)))
            jobs.append(Job(f"score:{task}:baselines", "score", (with_overrides(list(on_task), "score.run=${baseline.names}"),),
                            (f"baseline:{task}",)))
            scored.append(jobs[-1].key)
        for unit in models:
            name = run_names[(task, unit.key)]
            on_model = with_overrides(list(on_task), f"model={unit.model}", *unit.overrides,
                                      *((f"infer.run_name={name}",) if unit.variant else ()))
            infer_key = f"infer:{task}:{unit.key}"
            jobs.append(Job(infer_key, "infer", _split(on_model, "infer.shard", infer_shards), (f"render:{task}",), gpu=True))
            jobs.append(Job(f"score:{task}:{unit.key}", "score", (with_overrides(list(on_model), f"score.run={name}"),),
                            (infer_key,)))
            scored.append(jobs[-1].key)
            for method in passes.get(task, ()):
                revision = pass_run(name, method)
                on_pass = with_overrides(list(on_model), f"task.method={method}", f"task.revises={name}",
                                         f"infer.run_name={revision}")
                pass_key = f"{infer_key}:{method}"
                jobs.append(Job(pass_key, "infer", _split(on_pass, "infer.shard", infer_shards), (infer_key,), gpu=True))
                jobs.append(Job(f"score:{task}:{unit.key}:{method}", "score",
                                (with_overrides(list(on_pass), f"score.run={revision}"),), (pass_key,)))
                scored.append(jobs[-1].key)
    jobs.append(Job("report", "report", (with_overrides(for_task(base, None, tasks), f"tasks=[{','.join(tasks)}]", *report),),
                    tuple(scored)))
    return jobs


def compose_config(overrides: list[str]) -> DictConfig:
    register_resolvers()
    if GlobalHydra.instance().is_initialized():  # inside a Hydra job (run, sweep)
        return compose(config_name="config", overrides=overrides)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="candlebench"):
        return compose(config_name="config", overrides=overrides)


def check_jobs(jobs: list[Job]) -> None:
    """Every job's config composes and passes :func:`validate` (an infer job: its run identity,
    the prompt included) before the first job runs: a bad value of the second task fails the
    command before the first task's work."""
    for job in jobs:
        cfg = compose_config(list(job.overrides[0]))
        validate(cfg)
        if job.stage == "infer":
            model_run_info(cfg, get_task(cfg.task.name), model_spec(cfg))


def run_stage(name: str, overrides: list[str]) -> str:
    cfg = compose_config(overrides)
    validate(cfg)
    record_config(name, cfg)
    BY_NAME[name].job(cfg)
    return name
