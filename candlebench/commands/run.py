"""``candlebench run``: the stage graph walked on this machine, for every task (``tasks=[...]``,
default all) and the model of the config. Each stage skips what is already on disk, so a re-run
after an interruption finishes the rest."""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig

from candlebench.task_api import registry
from candlebench.core.overrides import without_keys
from candlebench.stages.graph import Composed, ModelVariant, PlannedJob, check_jobs, compose_config, plan, run_stage
from candlebench.stages.job import JobConfig
from candlebench.inference.backends import check_weights
from candlebench.task_api.base import PassError


def user_overrides(skip_prefix: str | None = None) -> list[str]:
    """The command's own overrides, handed to every stage, minus the tasks it covers (each job
    names its own) and settings of the command itself (``skip_prefix``)."""
    return without_keys(HydraConfig.get().overrides.task, "task", "tasks", prefix=skip_prefix)


def chosen_tasks(job: JobConfig) -> list[str]:
    chosen = list(job.tasks) if job.tasks else registry.names()
    for name in chosen:
        registry.get_task(name)  # an unknown name fails now, not after the first task ran
    return chosen


def run_names(base: list[str], tasks: list[str], models: list[ModelVariant]) -> dict[tuple[str, str], str]:
    """The run each model variant writes: the model's own run name, plus "-<variant>" under a variant."""
    names = {}
    for t in tasks:
        for u in models:
            name = compose_config([*base, f"task={t}", f"model={u.model}", *u.overrides]).infer.run_name
            names[(t, u.key)] = name if u.variant is None else f"{name}-{u.variant}"
    return names


def passes_of(base: list[str], tasks: list[str]) -> dict[str, tuple[str, ...]]:
    """Each task's second passes (``task.passes``), checked against those it offers."""
    out = {}
    for t in tasks:
        wanted = tuple(str(m) for m in (compose_config([*base, f"task={t}"]).task.get("passes") or ()))
        offered = registry.get_task(t).second_passes
        unknown = sorted(set(wanted) - set(offered))
        if unknown:
            raise PassError(f"task.passes={list(wanted)}: the {t} task has no second pass {unknown} "
                            f"(its second passes: {list(offered)})")
        out[t] = wanted
    return out


def run_jobs(jobs: list[PlannedJob], skip: set[str] = frozenset(),
             composed: dict[tuple[str, ...], Composed] | None = None) -> None:
    """Run the stages in order (each with its job in ``composed``, as :func:`check_jobs` returns
    them, where it is there). A run that fails to score stops nothing: the report that follows
    lists it with why, and the command fails at the end."""
    from candlebench.stages.score import ScoringFailed

    composed = composed or {}
    unscored = []
    for job in jobs:
        if job.key in skip:
            continue
        for overrides in job.overrides:
            try:
                run_stage(job.stage, list(overrides), composed.get(tuple(overrides)))
            except ScoringFailed as err:
                unscored.append(str(err))
    if unscored:
        raise ScoringFailed("; ".join(unscored))


def run(job: JobConfig) -> None:
    base = user_overrides()
    tasks = chosen_tasks(job)
    model = [ModelVariant(HydraConfig.get().runtime.choices["model"])]
    check_weights(job.backend.name, job.model)  # as sweep does: before samples, charts and baselines
    names = run_names(base, tasks, model)
    jobs = plan(base, tasks, model, names, baselines=bool(job.settings.baseline.names), passes=passes_of(base, tasks))
    run_jobs(jobs, composed=check_jobs(jobs))
