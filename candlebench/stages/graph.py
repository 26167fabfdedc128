"""The one stage graph: every stage once, with its name, job, dependencies and split.

``candlebench <stage>`` runs one node of it, ``candlebench run`` walks it on this machine and
``candlebench sweep`` submits it to SLURM; all three read :data:`STAGES`, so a stage has one name
and one definition. :func:`plan` expands the graph for tasks and models into planned jobs — each
a stage with the overrides a command line would carry — and :func:`run_stage` runs one by composing
the config from those overrides, wherever it runs (this process, a SLURM array task). Every job,
a command's own or a planned one, is prepared by one entrance (:func:`prepare`).

    samples ─┬─ render (chunks) ── infer (shards, per model) ── score (per model) ───┐
             │                        └─ infer (second pass) ─── score (the pass) ──┤
             └─ baseline ─────────────────────────────────────── score (baselines) ─┴─ report

A second pass (``task.passes``, e.g. E2A's verify) shows a model its answers in its first pass: its
own run ``<run>-<kind>``, after the first pass's infer job.

``import`` is a stage too (answers made elsewhere become a run, scored like any other), but no
plan includes it: it replaces ``infer`` when the answers already exist.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import DictConfig, OmegaConf

from candlebench.core.overrides import key_of, open_key, with_overrides
from candlebench.core.paths import CONF_DIR, register_resolvers
from candlebench.core.rules import ConfigError
from candlebench.stages.baseline import baseline
from candlebench.stages.import_responses import import_responses
from candlebench.stages import freshness
from candlebench.stages.infer import infer
from candlebench.stages.infer_settings import model_run_info, model_spec
from candlebench.stages.job import JobConfig, job_config
from candlebench.stages.task_overrides import apply_task_overrides, is_setting
from candlebench.stages.provenance import record_config
from candlebench.stages.render import render
from candlebench.stages.report import report
from candlebench.stages.samples import samples
from candlebench.stages.score import score
from candlebench.task_api.registry import get_task, store_configs
from candlebench.task_api.registry import names as task_names


@dataclass(frozen=True)
class StageDef:
    name: str
    job: Callable[[JobConfig], None]
    help: str
    scope: str  # "task": once per task; "model": per task and model; "once": one for the whole run
    split: str | None = None  # the config block of its array split: render.chunk / infer.shard
    gpu: bool = False
    positional: tuple[str, ...] = ()  # command-line words taken as these keys (`import FILE`)
    planned: bool = True  # part of `run` / `sweep`; import stands in for infer when you have answers
    # Whether a job's work is complete on disk under its config, asked of freshness (a sweep leaves
    # fresh jobs out); None: the stage is cheap and always runs (it skips what is done itself).
    done: Callable[[JobConfig], freshness.Freshness] | None = None


STAGES: tuple[StageDef, ...] = (
    StageDef("samples", samples, "build the task's samples (stock x date, labels, groups)", "task", done=freshness.samples_are_built),
    StageDef("render", render, "draw every input the task's samples need (parallel, resumable)", "task", "render.chunk",
             done=freshness.charts_are_drawn),
    StageDef("baseline", baseline, "the task's non-VLM baselines, as runs", "task"),
    StageDef("infer", infer, "run a model over the task's samples (transformers or vLLM), resumable", "model",
             "infer.shard", gpu=True, done=freshness.answers_are_complete),
    StageDef("import", import_responses, "responses made elsewhere (JSONL/CSV: sample_id, text) as a run", "model",
             positional=("import_file",), planned=False),
    StageDef("score", score, "parse and score runs: metrics.json", "model"),
    StageDef("report", report, "Markdown + HTML report of every task's scored runs, paired comparisons", "once"),
)
BY_NAME = {s.name: s for s in STAGES}


@dataclass(frozen=True)
class PlannedJob:
    """A job of a plan: a stage and the overrides of each of its array tasks."""

    key: str  # unique within a plan: "infer:forecast:qwen2_5_vl_7b"
    stage: str
    overrides: tuple[tuple[str, ...], ...]  # one tuple per array task
    after: tuple[str, ...] = ()
    gpu: bool = False


def _split(base: tuple[str, ...], block: str | None, count: int) -> tuple[tuple[str, ...], ...]:
    if block is None or count <= 1:
        return (base,)
    return tuple(with_overrides(list(base), f"{block}.index={i}", f"{block}.count={count}") for i in range(count))


@dataclass(frozen=True)
class ModelVariant:
    """One model run of a plan: a model config, optionally under a variant's overrides (an
    ablation: other inputs, another prompt). ``key`` names it: "model" or "model@variant"."""

    model: str
    variant: str | None = None
    overrides: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.model if self.variant is None else f"{self.model}@{self.variant}"


def model_variants(models: list[str], variants: dict[str, tuple[str, ...]] | None = None) -> list[ModelVariant]:
    """Every model, once per variant (``sweep.variants``: name -> overrides), or once without any."""
    if not variants:
        return [ModelVariant(m) for m in models]
    return [ModelVariant(m, name, tuple(extra)) for m in models for name, extra in variants.items()]


def second_pass_run(first_pass: str, kind: str) -> str:
    """The run a second pass of ``kind`` (task.method) over run ``first_pass`` writes (infer.run_name's
    default says the same)."""
    return f"{first_pass}-{kind}"


def plan(
    base: list[str],
    tasks: list[str],
    models: list[ModelVariant],
    run_names: dict[tuple[str, str], str],
    baselines: bool,
    render_chunks: int = 1,
    infer_shards: int = 1,
    report: tuple[str, ...] = (),
    passes: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
) -> list[PlannedJob]:
    """Every job in dependency order; ``run_names[(task, unit.key)]`` is that model variant's run name,
    ``passes[task]`` the second passes that follow each of the task's model runs."""
    jobs: list[PlannedJob] = []
    scored: list[str] = []
    for task in _scoring_order(tasks):
        on_task = with_overrides(base, f"task={task}")
        jobs.append(PlannedJob(f"samples:{task}", "samples", (on_task,)))
        jobs.append(PlannedJob(f"render:{task}", "render", _split(on_task, "render.chunk", render_chunks), (f"samples:{task}",)))
        if baselines:
            jobs.append(PlannedJob(f"baseline:{task}", "baseline", (on_task,), (f"samples:{task}",)))
            jobs.append(PlannedJob(f"score:{task}:baselines", "score", (with_overrides(list(on_task), "score.run=${task.baseline.names}"),),
                            (f"baseline:{task}",)))
            scored.append(jobs[-1].key)
        for unit in models:
            name = run_names[(task, unit.key)]
            on_model = with_overrides(list(on_task), f"model={unit.model}", *unit.overrides,
                                      *((f"infer.run_name={name}",) if unit.variant else ()))
            infer_key = f"infer:{task}:{unit.key}"
            jobs.append(PlannedJob(infer_key, "infer", _split(on_model, "infer.shard", infer_shards), (f"render:{task}",), gpu=True))
            before = tuple(f"score:{t}:{unit.key}" for t in get_task(task).scored_after if t in tasks)
            jobs.append(PlannedJob(f"score:{task}:{unit.key}", "score", (with_overrides(list(on_model), f"score.run={name}"),),
                            (infer_key, *before)))
            scored.append(jobs[-1].key)
            for kind in passes.get(task, ()):
                second = second_pass_run(name, kind)
                on_pass = with_overrides(list(on_model), f"task.method={kind}", f"task.revises={name}",
                                         f"infer.run_name={second}")
                pass_key = f"{infer_key}:{kind}"
                jobs.append(PlannedJob(pass_key, "infer", _split(on_pass, "infer.shard", infer_shards), (infer_key,), gpu=True))
                jobs.append(PlannedJob(f"score:{task}:{unit.key}:{kind}", "score",
                                (with_overrides(list(on_pass), f"score.run={second}"),), (pass_key,)))
                scored.append(jobs[-1].key)
    jobs.append(PlannedJob("report", "report", (with_overrides(base, f"task={tasks[0]}", f"tasks=[{','.join(tasks)}]", *report),),
                    tuple(scored)))
    return jobs


def _scoring_order(tasks: list[str]) -> list[str]:
    """``tasks`` in their order, except that a task comes after those whose scored runs it reads
    (``Task.scored_after``), so that each job of the plan follows every job it waits for."""
    ordered: list[str] = []

    def place(task: str) -> None:
        if task not in ordered:
            for first in get_task(task).scored_after:
                if first in tasks:
                    place(first)
            ordered.append(task)

    for task in tasks:
        place(task)
    return ordered


def compose_config(overrides: list[str]) -> DictConfig:
    """The config a job runs with: conf/ under ``overrides``, its task's ``task_overrides`` settings merged in."""
    register_resolvers()
    store_configs()
    overrides = [open_key(o) for o in overrides]
    if GlobalHydra.instance().is_initialized():  # inside a Hydra job (run, sweep)
        return apply_task_overrides(compose(config_name="config", overrides=overrides), overrides)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="candlebench"):
        return apply_task_overrides(compose(config_name="config", overrides=overrides), overrides)


@dataclass(frozen=True)
class Composed:
    """A job's config as composed (recorded under out_dir/configs when it runs) and as typed."""

    config: DictConfig
    job: JobConfig


def compose_job(overrides: list[str]) -> Composed:
    """The config a job runs with (:func:`compose_config`) and its job, built and checked."""
    config = compose_config(overrides)
    return Composed(config, job_config(config))


def check_jobs(jobs: list[PlannedJob]) -> dict[tuple[str, ...], Composed]:
    """Every job's config composes and builds into its checked :class:`JobConfig` (an infer job:
    its run identity, the prompt included) before the first job runs: a bad value of the second
    task fails the command before the first task's work. Returns them by their overrides, for
    :func:`run_stage` to run with instead of building each again (a quarter second each, 21 jobs
    in a three-task run)."""
    composed: dict[tuple[str, ...], Composed] = {}
    for planned in jobs:
        overrides = tuple(planned.overrides[0])
        if overrides not in composed:  # a task's samples, render and baseline jobs share theirs
            try:
                composed[overrides] = compose_job(list(overrides))
            except (ConfigCompositionException, MissingConfigException) as err:
                raise ConfigError(f"{planned.key}: {composition_error(err, list(overrides))}") from None
        job = composed[overrides].job
        if planned.stage == "infer":
            model_run_info(job, model_spec(job))
    return composed


def prepare(name: str, config: DictConfig, job: JobConfig | None = None) -> JobConfig:
    """The one entrance of a job, a command's or a planned one: ``config`` (composed, its task's
    ``task_overrides`` merged in) built into its checked :class:`JobConfig` unless ``job`` is that
    already, and, for a stage, the config recorded under out_dir/configs (`run` and `sweep`
    record each of their stages)."""
    job = job_config(config) if job is None else job
    if name in BY_NAME:
        record_config(name, job, config)
    return job


def run_stage(name: str, overrides: list[str], composed: Composed | None = None) -> str:
    """One job: its config composed from ``overrides`` (or ``composed``, already built from them)."""
    composed = compose_job(overrides) if composed is None else composed
    BY_NAME[name].job(prepare(name, composed.config, composed.job))
    return name


def composition_error(err: Exception, overrides: list[str]) -> str:
    """Hydra's message about a bad override, in one line: an unknown key with the nearest settings
    there are, an unknown config of a group with the configs it has."""
    text = str(err)
    unknown = re.match(r"Could not override '([^']+)'", text)
    if unknown:
        key = unknown.group(1)
        rest = [o for o in overrides if key_of(o) != key]
        if key.startswith("task."):
            mine = str(compose_config(rest).task.name)
            owners = [t for t in task_names() if t != mine
                      and key in _keys(OmegaConf.to_container(compose_config([*rest, f"task={t}"]), resolve=False))]
            if owners:
                return (f"{key} is a setting of task {' and '.join(owners)}, not of task {mine}: "
                        f"task_overrides.{owners[0]}.{key.removeprefix('task.')}=... sets it for that task only")
        return _not_a_setting(key, compose_config(rest))
    missing = re.search(r"Could not find '([^'/]+)/([^']+)'", text)
    if missing:
        group, option = missing.groups()
        if group == "task":
            return f"task={option}: no such task in tasks/; choose from {sorted(task_names())}"
        options = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml") if not p.stem.startswith("_"))
        return f"{group}={option}: no such config in conf/{group}/; choose from {options}"
    return " ".join(text.split())


def _not_a_setting(key: str, cfg: DictConfig) -> str:
    keys = _keys(OmegaConf.to_container(cfg, resolve=False))
    nearest = difflib.get_close_matches(key, keys, n=3, cutoff=0.6)
    return f"{key} is not a setting" + (f"; nearest: {', '.join(nearest)}" if nearest else "")


def check_added_keys(overrides: list[str]) -> None:
    """A ``+key=value`` adds a key only inside a mapping whose keys are the user's own (an empty one:
    ``task.anchors``, a baseline's params); anywhere else it is a typo Hydra would accept and a
    stage would meet as an unexpected argument, so it is a one-line error before any work."""
    added = [key_of(o) for o in overrides if o.startswith("+") and not o.startswith("++")]
    added = [k for k in added if not k.startswith("hydra.")]
    if not added:
        return
    rest = [o for o in overrides if not (o.startswith("+") and not o.startswith("++"))]
    try:
        cfg = compose_config(rest)
    except (ConfigCompositionException, MissingConfigException):
        return  # the whole command's composition fails and says why
    for key in added:
        if not is_setting(cfg, key):
            raise ConfigError(f"+{key}: {_not_a_setting(key, cfg)}; a + adds a key only inside a mapping of "
                              "your own keys (task.anchors, a baseline's params)")


def _keys(node: object, prefix: str = "") -> list[str]:
    """Every setting's dotted key (an empty mapping is a setting too)."""
    if isinstance(node, dict) and node:
        return [k for name, value in node.items() for k in _keys(value, f"{prefix}{name}.")]
    return [prefix[:-1]]
