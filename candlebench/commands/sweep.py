"""``candlebench sweep``: the stage graph (:mod:`candlebench.stages.graph`) on a SLURM cluster, for every
task and every model of ``sweep.models``, stages chained by dependencies.

Jobs go through submitit's SlurmExecutor (``sbatch --dependency=afterok:...``), each calling
:func:`candlebench.stages.graph.run_stage` with the sweep's own overrides plus its job's (task, model,
shard, chunk). Every stage skips what is on disk, so a re-submitted sweep, or a requeued task,
finishes the rest; the sweep also leaves out jobs it can see are complete. Everything that can be
checked before a GPU is asked for is checked first: the partition exists, every checkpoint is
there. ``sweep.executor=local`` runs the same jobs in the same order on this machine.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import time
from pathlib import Path

from candlebench.core.io import write_json
from candlebench.core.overrides import with_overrides
from candlebench.commands.run import chosen_tasks, passes_of, run_jobs, run_names, user_overrides
from candlebench.stages.graph import (BY_NAME, Composed, PlannedJob, check_jobs, compose_config, compose_job,
                                     model_variants, plan, run_stage,
                                     second_pass_run)
from candlebench.inference.backends import check_weights
from candlebench.stages.job import JobConfig
from candlebench.stages.sweep_settings import SweepSettings


class SweepError(RuntimeError):
    pass


def finished_jobs(jobs: list[PlannedJob], composed: dict[tuple[str, ...], Composed]) -> set[str]:
    """The jobs whose work is complete on disk under their config (``composed``: check_jobs')."""
    return {
        job.key for job in jobs
        if BY_NAME[job.stage].done is not None and BY_NAME[job.stage].done(composed[tuple(job.overrides[0])].job).fresh
    }


def sweep_plan(job: JobConfig, base: list[str]) -> list[PlannedJob]:
    s = job.sweep
    tasks = chosen_tasks(job)
    variants = {str(k): tuple(str(o) for o in v) for k, v in (s.variants or {}).items()}
    models = model_variants([str(m) for m in s.models], variants)
    names = run_names(base, tasks, models)
    passes = passes_of(base, tasks)
    with_baselines = bool(s.baselines) and bool(job.settings.baseline.names)
    second_runs = {second_pass_run(name, kind) for (t, _), name in names.items() for kind in passes[t]}
    # Each task's own baselines (forecast: xgboost, ...; e2a: anchor_oracle, ...).
    own = {str(b) for t in tasks for b in compose_config([*base, f"task={t}"]).task.baseline.names}
    runs = sorted({*names.values(), *second_runs, *(own if with_baselines else ())})
    keys = {u.key for u in models}
    # "@variant" pairs stand for the same pair of variants of every model.
    pairs = [(f"{m}{a}", f"{m}{b}") if str(a).startswith("@") else (str(a), str(b))
             for a, b in s.compare for m in ([str(m) for m in s.models] if str(a).startswith("@") else [None])]
    unknown = sorted({x for pair in pairs for x in pair} - keys)
    if unknown:
        raise SweepError(f"sweep.compare names {unknown}, which are not runs of this sweep; known: {sorted(keys)}")
    compare = [[names[(tasks[0], a)], names[(tasks[0], b)]] for a, b in pairs]
    # The study's report (every run of the out_dir, the sweep's pairs compared in it), then the sweep's
    # own view of its runs beside it, in sweep/report: never over the study's, which holds runs of other commands too.
    jobs = plan(base, tasks, models, names, with_baselines, int(s.render_chunks), int(s.infer_shards),
                (f"report.compare={json.dumps(compare)}",), passes)
    study = jobs[-1]
    view = with_overrides(list(study.overrides[0]), f"report.runs=[{','.join(runs)}]", f"report.dir={SWEEP_REPORT}")
    return [*jobs, PlannedJob("report:sweep", "report", (view,), study.after)]


# Where a sweep's view of its own runs goes: beside the study's report (out_dir/report), not over it.
SWEEP_REPORT = "${out_dir}/sweep/report"


def check_before_submitting(s: SweepSettings, base: list[str]) -> None:
    """Fail in seconds, naming the cause, rather than after CPU stages ran and GPU jobs queued."""
    for model in s.models:
        job = compose_job([*base, f"model={model}"]).job
        check_weights(job.backend.name, job.model)
    if s.executor != "slurm":
        return
    partitions = {p for p in (s.cpu.partition, s.gpu.partition) if p}
    for partition in sorted(partitions):
        found = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%P"], capture_output=True, text=True)
        if found.returncode != 0 or not found.stdout.strip():
            known = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True).stdout.split()
            raise SweepError(f"SLURM partition {partition!r} does not exist on this cluster (partitions: {known})")
    if int(s.gpu.gpus_per_task) > 0 and s.models:
        partition = s.gpu.partition
        args = ["sinfo", "-h", "-o", "%G", *(["-p", partition] if partition else [])]
        gres = subprocess.run(args, capture_output=True, text=True).stdout.split()
        if not any("gpu" in g for g in gres):
            where = f"partition {partition!r}" if partition else "this cluster's default partition"
            raise SweepError(
                f"{where} has no GPUs (SLURM gres: {sorted(set(gres)) or 'none'}), but inference asks for "
                f"sweep.gpu.gpus_per_task={s.gpu.gpus_per_task}; on a CPU-only cluster set "
                "sweep.gpu.gpus_per_task=0, or name a GPU partition with sweep.gpu.partition=..."
            )


def _executor(s: SweepSettings, folder: Path, gpus: int, name: str, after: list[str]):
    import submitit

    side = s.gpu if gpus else s.cpu
    executor = submitit.SlurmExecutor(folder=folder / "%j")
    params = dict(
        job_name=f"cb-{name}",
        partition=side.partition,
        cpus_per_task=int(side.cpus_per_task),
        mem=f"{int(side.mem_gb)}GB",
        time=int(side.timeout_min),
        array_parallelism=int(s.array_parallelism),
        setup=list(s.setup or []),
        additional_parameters=dict(s.additional_parameters or {}),
    )
    if gpus:
        params["gres"] = f"gpu:{gpus}"
    if s.account:
        params["account"] = s.account
    if after:
        params["dependency"] = "afterok:" + ":".join(after)
    executor.update_parameters(**{k: v for k, v in params.items() if v is not None})
    return executor


def _gpus(s: SweepSettings, job: PlannedJob, composed: dict[tuple[str, ...], Composed]) -> int:
    if not job.gpu:
        return 0
    return int(s.gpu.gpus_per_task) * composed[tuple(job.overrides[0])].job.model.tensor_parallel_size


def submit(s: SweepSettings, jobs: list[PlannedJob], skip: set[str], folder: Path,
           composed: dict[tuple[str, ...], Composed]) -> dict[str, list]:
    """sbatch every job not done, each after the SLURM jobs of the jobs it needs."""
    submitted: dict[str, list] = {}
    for job in jobs:
        if job.key in skip:
            continue
        after = sorted({j.job_id.split("_")[0] for dep in job.after for j in submitted.get(dep, [])})
        executor = _executor(s, folder, _gpus(s, job, composed), job.key.replace(":", "-"), after)
        names = [job.stage] * len(job.overrides)
        submitted[job.key] = executor.map_array(run_stage, names, [list(o) for o in job.overrides])
    return submitted


def _live_arrays(arrays: set[str]) -> set[str]:
    """Array ids with a task still pending or running (squeue; needs no accounting database)."""
    queue = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(sorted(arrays))], capture_output=True, text=True)
    return {line.split("_")[0] for line in queue.stdout.split()}


def _outcome(job) -> tuple[str, object] | None:
    """submitit's result pickle: ("success", value) or ("error", traceback); None while running."""
    path = job.paths.result_pickle
    if not path.exists():
        return None
    with path.open("rb") as fh:
        return pickle.load(fh)


def wait(jobs: dict[str, list], poll_s: float) -> None:
    """Until every job ended; on a failure, cancel what can no longer run and say which stage failed.

    Read from submitit's result files and squeue, not sacct: small clusters often run without
    accounting, and a task cancelled or killed before it wrote a result must not be waited on.
    """
    pending = [(key, job) for key, batch in jobs.items() for job in batch]
    while pending:
        live = _live_arrays({job.job_id.split("_")[0] for _, job in pending})
        for key, job in list(pending):
            outcome = _outcome(job)
            if outcome is None and job.job_id.split("_")[0] in live:
                continue
            pending.remove((key, job))
            if outcome is None or outcome[0] != "success":
                for _, other in pending:
                    other.cancel(check=False)
                why = outcome[1] if outcome else "it left the queue without a result (cancelled, preempted, killed)"
                raise SweepError(
                    f"stage {key} (SLURM job {job.job_id}) failed: {why}\nlog: {job.paths.stderr}\n"
                    "Fix the cause and run the same sweep again: finished work is kept and skipped."
                )
        time.sleep(poll_s)


def sweep(job: JobConfig) -> None:
    base = user_overrides(skip_prefix="sweep.")
    check_before_submitting(job.sweep, base)
    jobs = sweep_plan(job, base)
    composed = check_jobs(jobs)
    skip = finished_jobs(jobs, composed)
    out_dir = job.layout.study_dir
    summary = {"stages": {j.key: {"tasks": len(j.overrides), "done_before": j.key in skip} for j in jobs}}
    if job.sweep.executor == "local":
        run_jobs(jobs, skip, composed)
        write_json(summary, job.layout.sweep)
        print(f"sweep ran locally: {len(jobs)} jobs -> {out_dir / 'report'} (the study's), "
              f"{out_dir / 'sweep' / 'report'} (this sweep's runs)")
        return
    submitted = submit(job.sweep, jobs, skip, out_dir / "sweep" / "submitit", composed)
    for key, batch in submitted.items():
        summary["stages"][key]["jobs"] = [task.job_id for task in batch]
    write_json(summary, job.layout.sweep)
    for key, batch in submitted.items():
        print(f"{key:<36} {len(batch)} task(s): {batch[0].job_id.split('_')[0]}")
    if job.sweep.wait:
        wait(submitted, float(job.sweep.poll_s))
        print(f"sweep finished -> {out_dir / 'report'}")
