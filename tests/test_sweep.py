"""`candlebench sweep` on a real SLURM cluster: a base and a fine-tuned (LoRA) tiny model over the
committed slice, through sbatch arrays with dependencies; a cancelled array task finishes on
re-submission without duplicates, and that sweep gives the local executor's numbers; bad settings
fail before any job is queued."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import cli, records
from slurm_support import _run, needs_cluster

pytestmark = [needs_cluster, pytest.mark.cluster]

MODELS = ["tiny_qwen2_5_vl", "tiny_qwen2_5_vl_lora"]
RUNS = ["tiny_qwen2_5_vl-transformers", "tiny_qwen2_5_vl_lora-transformers", "xgboost", "momentum", "constant", "random"]
COMMON = [
    "tasks=[forecast]", "data=slice", "data.codes=[AC,ALI,SM]", "task.samples.interval=60", "score.n_boot=100",
    f"sweep.models=[{','.join(MODELS)}]", f"sweep.compare=[[{MODELS[0]},{MODELS[1]}]]",
    "sweep.render_chunks=2", "sweep.infer_shards=2", "sweep.poll_s=0.5",
]
# The local test cluster has one CPU node in partition `cpu` and no GPUs.
SLURM = ["sweep.executor=slurm", "sweep.cpu.partition=cpu", "sweep.gpu.partition=cpu", "sweep.gpu.gpus_per_task=0",
         "sweep.cpu.cpus_per_task=1", "sweep.gpu.cpus_per_task=1", "sweep.cpu.mem_gb=1", "sweep.gpu.mem_gb=2"]


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory, env) -> Path:
    out = tmp_path_factory.mktemp("local")
    cli("sweep", *COMMON, "sweep.executor=local", f"out_dir={out}", env=env)
    return out


def _jobs_of(out: Path) -> list[str]:
    stages = json.loads((out / "sweep.json").read_text())["stages"]
    return [job for stage in stages.values() for job in stage.get("jobs", [])]


def _queued() -> set[str]:
    return set(_run("squeue", "-h", "-o", "%i").stdout.split())


def _nothing_submitted_from(out: Path) -> bool:
    """No job of this sweep is queued and none was ever handed to sbatch: other tests' sweeps share the
    cluster, so the whole queue is no witness. A job's batch script (squeue ``%o``) is submitit's file
    under ``out``; a job that already finished has still left that folder behind."""
    scripts = _run("squeue", "-h", "-o", "%o").stdout.split()
    return not any(Path(s).is_relative_to(out) for s in scripts) and not (out / "sweep" / "submitit").exists()


@dataclass(frozen=True)
class Resubmitted:
    out: Path
    first: dict  # sweep.json's stages as the first submission queued them
    written: int  # records of the cancelled array task when it was cancelled
    again: str  # what the second submission printed


@pytest.fixture(scope="module")
def slurm_sweep(tmp_path_factory, env) -> Resubmitted:
    """The module's one SLURM sweep (each is a dozen fresh jobs on the cluster): queued without
    waiting, one infer array task cancelled once it has written, the rest of that submission with
    it, then the same command again to the end."""
    out = tmp_path_factory.mktemp("slurm") / "cancel"
    slow = ["infer.batch_size=1", "sweep.wait=false"]
    cli("sweep", *COMMON, *SLURM, *slow, f"out_dir={out}", env=env)
    first = json.loads((out / "sweep.json").read_text())["stages"]
    jobs = _jobs_of(out)
    task = first[f"infer:forecast:{MODELS[0]}"]["jobs"][0]
    parts = out / "forecast" / "runs" / RUNS[0] / "parts"
    deadline = time.time() + 240
    while time.time() < deadline and not any(p.read_text().strip() for p in parts.glob("*.jsonl")):
        time.sleep(0.05)
    _run("scancel", task)
    written = sum(len(p.read_text().splitlines()) for p in parts.glob("*.jsonl"))
    # Downstream jobs can never start now (afterok): cancel the rest of this submission.
    deadline = time.time() + 120
    while time.time() < deadline and any(job in _queued() for job in jobs if job != task):
        if all("Dependency" in _run("squeue", "-h", "-j", job.split("_")[0], "-o", "%r").stdout
               for job in jobs if job in _queued()):
            _run("scancel", *{job.split("_")[0] for job in jobs})
        time.sleep(0.5)
    again = cli("sweep", *COMMON, *SLURM, f"out_dir={out}", env=env)
    return Resubmitted(out, first, written, again.stdout)


def test_sweep_on_slurm_equals_the_local_sweep(env, local_sweep, slurm_sweep):
    """Its numbers, comparisons, report and status: those of the local sweep (the SLURM sweep is
    the one cancelled in part and submitted again: the next test)."""
    out = slurm_sweep.out
    assert "sweep finished" in slurm_sweep.again
    stages = slurm_sweep.first
    assert len(stages["render:forecast"]["jobs"]) == 2 and len(stages[f"infer:forecast:{MODELS[0]}"]["jobs"]) == 2
    assert len({job.split("_")[0] for job in stages[f"infer:forecast:{MODELS[1]}"]["jobs"]}) == 1  # one array
    for run in RUNS:
        slurm, local = (json.loads((root / "forecast" / "runs" / run / "metrics.json").read_text()) for root in (out, local_sweep))
        slurm.pop("records"), local.pop("records")  # the stamp of each run's own record files (latencies differ)
        assert slurm == local, run
    comparisons = json.loads((out / "report" / "comparisons.json").read_text())
    assert comparisons == json.loads((local_sweep / "report" / "comparisons.json").read_text())
    pair = comparisons["forecast"][f"{RUNS[0]} → {RUNS[1]}"]
    # The fixtures' answers depend on the chart and the LoRA shifts them: every paired statistic is defined.
    assert pair["ic"]["mean_diff"] is not None and pair["ic"]["ci"] is not None and pair["direction"]["diff"] is not None
    assert (out / "report" / "report.html").exists()
    status = cli("status", str(out), env=env).stdout
    assert "forecast  render   60/60 inputs" in status and f"{RUNS[0]}: 30/30 answered" in status


def test_cancelled_array_task_completes_on_resubmission_without_duplicates(local_sweep, slurm_sweep):
    out = slurm_sweep.out
    assert slurm_sweep.written < 30  # the shard was cut short
    assert "sweep finished" in slurm_sweep.again
    resubmitted = json.loads((out / "sweep.json").read_text())["stages"]
    assert "jobs" not in resubmitted["samples:forecast"] and "jobs" not in resubmitted["render:forecast"]  # done: skipped
    final = records(out, RUNS[0])
    assert final.index.is_unique and len(final) == 30
    reference = records(local_sweep, RUNS[0])
    assert list(final["token_ids"]) == list(reference["token_ids"])
    assert json.loads((out / "forecast" / "runs" / RUNS[0] / "metrics.json").read_text())["n_missing_records"] == 0


def test_wrong_partition_fails_before_anything_is_queued(tmp_path, env):
    done = cli("sweep", *COMMON, *SLURM, "sweep.gpu.partition=h100-nowhere", f"out_dir={tmp_path}", env=env, check=False)
    assert done.returncode != 0 and "partition 'h100-nowhere' does not exist" in done.stderr
    assert "Traceback" not in done.stderr and _nothing_submitted_from(tmp_path)
    assert not (tmp_path / "sweep.json").exists()


def test_gpus_asked_of_a_cpu_only_cluster_fail_before_anything_is_queued(tmp_path, env):
    done = cli("sweep", *COMMON, *SLURM, "sweep.gpu.gpus_per_task=1", f"out_dir={tmp_path}", env=env, check=False)
    assert done.returncode != 0 and "partition 'cpu' has no GPUs" in done.stderr
    assert "sweep.gpu.gpus_per_task=0" in done.stderr and "Traceback" not in done.stderr
    assert _nothing_submitted_from(tmp_path)


def test_missing_checkpoint_fails_before_anything_is_queued(tmp_path, env):
    done = cli("sweep", *COMMON, *SLURM, "sweep.models=[tiny_qwen2_5_vl,qwen2_5_vl_7b]", f"out_dir={tmp_path}",
               env=env, check=False)
    assert done.returncode != 0 and "Qwen/Qwen2.5-VL-7B-Instruct" in done.stderr and _nothing_submitted_from(tmp_path)
    assert not list(tmp_path.glob("*.parquet"))
