"""``candlebench sweep``: a whole comparison on a SLURM cluster, stages chained by dependencies.

    samples ─ render array (chunks) ─ render_finalize ─┬─ infer array per model (shards) ─ score ─┐
            └─ baselines (+ their scores) ──────────────┴──────────────────────────────────────────┴─ report

Jobs go through submitit's SlurmExecutor (``sbatch --dependency=afterok:...``), each calling
:func:`candlebench.stages.run_stage` with the sweep's own overrides plus its stage's (model, shard,
chunk). Every stage skips what is on disk, so a re-submitted sweep, or a requeued task, finishes
the rest; the sweep also leaves out stages it can see are complete. Everything that can be checked
before a GPU is asked for is checked first: the partition exists, every checkpoint is there.
``sweep.executor=local`` runs the same stages in the same order on this machine.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from candlebench.io import write_json
from candlebench.stages import compose_config, run_stage
from inference.jobs import run_identity, run_key
from inference.models import ModelSpec, check_available
from inference.records import RecordStore
from rendering.render_job import collect_manifest, settings_from


class SweepError(RuntimeError):
    pass


@dataclass(frozen=True)
class Stage:
    key: str  # unique within the sweep: "infer:qwen2_5_vl_7b"
    name: str  # the function in candlebench.stages
    overrides: tuple[tuple[str, ...], ...]  # one tuple per task; several = a job array
    after: tuple[str, ...] = ()
    gpus: int = 0
    done: bool = False  # complete on disk already: not submitted


@dataclass
class Plan:
    stages: list[Stage] = field(default_factory=list)

    def add(self, stage: Stage) -> Stage:
        self.stages.append(stage)
        return stage


def _user_overrides() -> list[str]:
    """The sweep command's own overrides, handed to every stage (minus the sweep's own settings)."""
    return [o for o in HydraConfig.get().overrides.task if not o.split("=", 1)[0].lstrip("+~").startswith("sweep.")]


def _samples_done(out_dir: Path) -> bool:
    return (out_dir / "samples.parquet").exists()


def _render_done(cfg: DictConfig) -> bool:
    out_dir = Path(cfg.out_dir)
    if not _samples_done(out_dir):
        return False
    samples = pd.read_parquet(out_dir / "samples.parquet")
    try:
        collect_manifest(samples, settings_from(cfg), out_dir)
    except FileNotFoundError:
        return False
    return {f"image_{f}" for f in cfg.render.freqs} <= set(samples.columns)


def _infer_done(cfg: DictConfig) -> bool:
    out_dir = Path(cfg.out_dir)
    if not _samples_done(out_dir):
        return False
    key = run_key(run_identity(cfg, ModelSpec.from_config(cfg.model)))
    wanted = set(pd.read_parquet(out_dir / "samples.parquet")["sample_id"])
    return wanted <= RecordStore(out_dir / "runs" / cfg.infer.run_name).done(key)


def plan_sweep(cfg: DictConfig, base: list[str]) -> Plan:
    """Every stage with its tasks and dependencies; stages already complete on disk marked done."""
    s = cfg.sweep
    out_dir = Path(cfg.out_dir)
    plan = Plan()
    samples = plan.add(Stage("samples", "samples", (tuple(base),), done=_samples_done(out_dir)))
    rendered = _render_done(cfg)
    chunks = int(s.render_chunks)
    render = plan.add(
        Stage(
            "render", "render",
            tuple((*base, f"render.chunk.index={i}", f"render.chunk.count={chunks}") for i in range(chunks)),
            after=(samples.key,), done=rendered,
        )
    )
    ready = plan.add(Stage("render_finalize", "render_finalize", (tuple(base),), after=(render.key,), done=rendered))
    scored = []
    if s.baselines:
        scored.append(plan.add(Stage("baseline", "baseline", (tuple(base),), after=(samples.key,))).key)
    shards = int(s.infer_shards)
    for model in s.models:
        model_base = (*base, f"model={model}")
        model_cfg = compose_config(list(model_base))
        gpus = int(s.gpu.gpus_per_task) * int(model_cfg.model.tensor_parallel_size)
        infer = plan.add(
            Stage(
                f"infer:{model}", "infer",
                tuple((*model_base, f"infer.shard.index={i}", f"infer.shard.count={shards}") for i in range(shards)),
                after=(ready.key,), gpus=gpus, done=_infer_done(model_cfg),
            )
        )
        scored.append(plan.add(Stage(f"score:{model}", "score", (model_base,), after=(infer.key,))).key)
    compare = [[run_name(cfg, base, a), run_name(cfg, base, b)] for a, b in s.compare]
    runs = [run_name(cfg, base, m) for m in s.models] + (list(cfg.baseline.names) if s.baselines else [])
    report = (*base, f"report.runs=[{','.join(runs)}]", f"report.compare={json.dumps(compare)}")
    plan.add(Stage("report", "report", (report,), after=tuple(scored)))
    return plan


def run_name(cfg: DictConfig, base: list[str], model: str) -> str:
    return compose_config([*base, f"model={model}"]).infer.run_name


def check_before_submitting(cfg: DictConfig, base: list[str]) -> None:
    """Fail in seconds, naming the cause, rather than after CPU stages ran and GPU jobs queued."""
    for model in cfg.sweep.models:
        check_available(ModelSpec.from_config(compose_config([*base, f"model={model}"]).model))
    if cfg.sweep.executor != "slurm":
        return
    partitions = {p for p in (cfg.sweep.cpu.partition, cfg.sweep.gpu.partition) if p}
    for partition in sorted(partitions):
        found = subprocess.run(["sinfo", "-h", "-p", partition, "-o", "%P"], capture_output=True, text=True)
        if found.returncode != 0 or not found.stdout.strip():
            known = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True).stdout.split()
            raise SweepError(f"SLURM partition {partition!r} does not exist on this cluster (partitions: {known})")


def run_locally(plan: Plan) -> None:
    for stage in plan.stages:
        if stage.done:
            continue
        for overrides in stage.overrides:
            run_stage(stage.name, list(overrides))


def _executor(cfg: DictConfig, folder: Path, gpus: int, name: str, after: list[str]):
    import submitit

    side = cfg.sweep.gpu if gpus else cfg.sweep.cpu
    executor = submitit.SlurmExecutor(folder=folder / "%j")
    params = dict(
        job_name=f"cb-{name}",
        partition=side.partition,
        cpus_per_task=int(side.cpus_per_task),
        mem=f"{int(side.mem_gb)}GB",
        time=int(side.timeout_min),
        array_parallelism=int(cfg.sweep.array_parallelism),
        setup=list(cfg.sweep.setup or []),
        additional_parameters=dict(cfg.sweep.additional_parameters or {}),
    )
    if gpus:
        params["gres"] = f"gpu:{gpus}"
    if cfg.sweep.account:
        params["account"] = cfg.sweep.account
    if after:
        params["dependency"] = "afterok:" + ":".join(after)
    executor.update_parameters(**{k: v for k, v in params.items() if v is not None})
    return executor


def submit(cfg: DictConfig, plan: Plan, folder: Path) -> dict[str, list]:
    """sbatch every stage not done, each after the SLURM jobs of the stages it needs."""
    jobs: dict[str, list] = {}
    for stage in plan.stages:
        if stage.done:
            continue
        after = sorted({job.job_id.split("_")[0] for dep in stage.after for job in jobs.get(dep, [])})
        executor = _executor(cfg, folder, stage.gpus, stage.key.replace(":", "-"), after)
        names = [stage.name] * len(stage.overrides)
        jobs[stage.key] = executor.map_array(run_stage, names, [list(o) for o in stage.overrides])
    return jobs


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


def sweep(cfg: DictConfig) -> None:
    base = _user_overrides()
    check_before_submitting(cfg, base)
    plan = plan_sweep(cfg, base)
    out_dir = Path(cfg.out_dir)
    summary = {"stages": {st.key: {"tasks": len(st.overrides), "done_before": st.done} for st in plan.stages}}
    if cfg.sweep.executor == "local":
        run_locally(plan)
        write_json(summary, out_dir / "sweep.json")
        print(f"sweep ran locally: {len(plan.stages)} stages -> {out_dir / 'report'}")
        return
    jobs = submit(cfg, plan, out_dir / "sweep" / "submitit")
    for key, batch in jobs.items():
        summary["stages"][key]["jobs"] = [job.job_id for job in batch]
    write_json(summary, out_dir / "sweep.json")
    for key, batch in jobs.items():
        print(f"{key:<28} {len(batch)} task(s): {batch[0].job_id.split('_')[0]}")
    if cfg.sweep.wait:
        wait(jobs, float(cfg.sweep.poll_s))
        print(f"sweep finished -> {out_dir / 'report'}")
