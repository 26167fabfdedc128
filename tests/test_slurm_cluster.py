"""Jobs on a real SLURM cluster: arrays, dependencies, cancellation, submitit, Hydra sweeps.

They need a cluster that answers `sinfo`: locally `slurm/install.sh && slurm/cluster.sh start` (as
root) gives a one-node one; CI starts it before pytest and sets CANDLEBENCH_REQUIRE_SLURM=1, which
turns "no cluster" from a skip into a failure. On any cluster other than that local one (ClusterName
`candlebench`) the tests skip unless CANDLEBENCH_SLURM_TESTS=1, so they never queue on a shared cluster.

Jobs are followed through files they write and `squeue` (never `sbatch --wait`, never sacct, which
needs slurmdbd). The local cluster keeps finished jobs in squeue for MinJobAge = 300 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from helpers import ROOT
from slurm_support import _run, needs_cluster

pytestmark = pytest.mark.cluster

REPO = ROOT
CANDLEBENCH = str(Path(sys.executable).parent / "candlebench")
TIMEOUT = 45.0


def _require(module: str):
    if os.environ.get("CANDLEBENCH_REQUIRE_SLURM") == "1":
        return __import__(module)
    return pytest.importorskip(module, reason=f"{module} is not installed (pip install hydra-submitit-launcher)")


def sbatch(*args: str) -> str:
    done = _run("sbatch", "--parsable", *args)
    assert done.returncode == 0, f"sbatch {' '.join(args)}: {done.stderr}"
    return done.stdout.strip().split(";")[0]


def states(job: str) -> dict[str, str]:
    """Task id ("12" or "12_3") -> state, finished tasks included."""
    out = _run("squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%i %T").stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def reason(job: str) -> str:
    return _run("squeue", "-h", "-j", job, "-o", "%r").stdout.strip()


def wait_for(what: str, check: Callable[[], bool], folder: Path | None = None, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    logs = ""
    if folder is not None:
        for path in sorted(folder.rglob("*.out")) + sorted(folder.rglob("*.err")):
            logs += f"\n--- {path}\n{path.read_text()[-2000:]}"
    queue = _run("squeue", "-t", "all").stdout
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\nsqueue -t all:\n{queue}{logs}")


def cancel_later(request: pytest.FixtureRequest, job: str) -> None:
    request.addfinalizer(lambda: _run("scancel", job))


@needs_cluster
def test_array_then_afterok_dependency_runs_in_order(tmp_path, request):
    # Three array tasks take ~1 s each; the dependent job may start only once all three succeeded.
    array = sbatch(
        "--array=0-2", "-J", "cb-array", "-c", "1", "--mem=100M", "-t", "5", f"--chdir={tmp_path}",
        f"--output={tmp_path}/%A_%a.out",
        "--wrap", 'date +%s.%N > start_$SLURM_ARRAY_TASK_ID; sleep 1; date +%s.%N > end_$SLURM_ARRAY_TASK_ID',
    )
    after = sbatch(
        f"--dependency=afterok:{array}", "-J", "cb-after", "-c", "1", "--mem=100M", "-t", "5",
        f"--chdir={tmp_path}", f"--output={tmp_path}/%j.out",
        "--wrap", "ls end_* > seen; date +%s.%N > after.tmp; mv after.tmp after",  # (appears complete)
    )
    # A dependency on a failed job is never satisfied: the job stays pending with that reason.
    failing = sbatch("-J", "cb-fail", "-t", "5", f"--chdir={tmp_path}", f"--output={tmp_path}/%j.out", "--wrap", "exit 3")
    blocked = sbatch(f"--dependency=afterok:{failing}", "-J", "cb-blocked", "-t", "5", f"--chdir={tmp_path}",
                     "--output=/dev/null", "--wrap", f"touch {tmp_path}/must_not_run")
    for job in (array, after, failing, blocked):
        cancel_later(request, job)

    assert states(after).get(after) == "PENDING"
    wait_for("the dependent job", lambda: (tmp_path / "after").exists(), tmp_path)
    ends = [float((tmp_path / f"end_{i}").read_text()) for i in range(3)]
    assert float((tmp_path / "after").read_text()) >= max(ends)
    assert (tmp_path / "seen").read_text().split() == ["end_0", "end_1", "end_2"]
    wait_for("array tasks to be COMPLETED", lambda: set(states(array).values()) == {"COMPLETED"}, tmp_path)
    assert set(states(array)) == {f"{array}_{i}" for i in range(3)}

    wait_for("the failing job to fail", lambda: states(failing).get(failing) == "FAILED", tmp_path)
    wait_for("DependencyNeverSatisfied", lambda: "DependencyNeverSatisfied" in reason(blocked), tmp_path)
    assert states(blocked).get(blocked) == "PENDING" and not (tmp_path / "must_not_run").exists()
    assert _run("scancel", blocked).returncode == 0
    wait_for("the blocked job to be cancelled", lambda: states(blocked).get(blocked) == "CANCELLED", tmp_path)


@needs_cluster
def test_cancelled_array_task_stops_and_the_others_finish(tmp_path, request):
    # Task 1 would sleep a minute; cancelling it must end it early and leave tasks 0 and 2 alone.
    # (`sleep 60 && touch`: scancel's SIGTERM may reach sleep before the shell, which must not go on.)
    script = ('i=$SLURM_ARRAY_TASK_ID; touch started_$i; '
              'if [ "$i" = 1 ]; then sleep 60 && touch done_$i; else touch done_$i; fi')
    array = sbatch("--array=0-2", "-J", "cb-cancel", "-c", "1", "--mem=100M", "-t", "5", f"--chdir={tmp_path}",
                   f"--output={tmp_path}/%A_%a.out", "--wrap", script)
    cancel_later(request, array)
    wait_for("task 1 to start", lambda: (tmp_path / "started_1").exists(), tmp_path)
    assert states(array)[f"{array}_1"] == "RUNNING"
    t0 = time.monotonic()
    assert _run("scancel", f"{array}_1").returncode == 0
    wait_for("task 1 to be CANCELLED", lambda: states(array).get(f"{array}_1") == "CANCELLED", tmp_path)
    assert time.monotonic() - t0 < 30
    wait_for("tasks 0 and 2", lambda: all(states(array).get(f"{array}_{i}") == "COMPLETED" for i in (0, 2)), tmp_path)
    assert (tmp_path / "done_0").exists() and (tmp_path / "done_2").exists()
    assert not (tmp_path / "done_1").exists()


@needs_cluster
def test_submitit_map_array(tmp_path):
    submitit = _require("submitit")

    def work(x: int) -> tuple[int, str, str]:  # nested: cloudpickle sends it by value, no import needed
        import os

        return x * x, os.environ.get("SLURM_ARRAY_JOB_ID", ""), os.environ.get("SLURM_ARRAY_TASK_ID", "")

    executor = submitit.AutoExecutor(folder=tmp_path / "submitit" / "%j", cluster="slurm")
    executor.update_parameters(timeout_min=5, cpus_per_task=1, mem_gb=1, slurm_array_parallelism=4, name="cb-submitit")
    jobs = executor.map_array(work, [1, 2, 3])
    try:
        wait_for("submitit results", lambda: all(j.done() for j in jobs), tmp_path)
        results = [j.result() for j in jobs]
    finally:
        for job in jobs:
            job.cancel(check=False)
    assert [r[0] for r in results] == [1, 4, 9]
    (array,) = {r[1] for r in results}  # one SLURM array ...
    assert array and sorted(r[2] for r in results) == ["0", "1", "2"], results  # ... of three tasks
    assert [j.job_id for j in jobs] == [f"{array}_{i}" for i in range(3)]


def _sweep(tmp_path: Path, launcher: str) -> subprocess.CompletedProcess:
    # Each job of the sweep gets its own out_dir (a shared one would have both write samples.parquet).
    return subprocess.run(
        [CANDLEBENCH, "samples", "data=slice", f"out_dir={tmp_path}/i${{task.samples.interval}}",
         "task.samples.interval=20,30", f"hydra/launcher={launcher}", "--multirun"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )


def _check_sweep_outputs(tmp_path: Path) -> list[Path]:
    import pandas as pd

    cutoffs = {}
    for interval in (20, 30):
        run = tmp_path / f"i{interval}"
        frame = pd.read_parquet(run / "forecast" / "samples.parquet")
        assert len(frame) > 0 and (run / "forecast" / "samples_summary.json").exists()
        cutoffs[interval] = frame["cutoff"].nunique()
        # Hydra's per-job folder with the resolved config of that job.
        (config,) = run.glob("multirun/*/*/.hydra/config.yaml")
        assert f"interval: {interval}" in config.read_text()
    assert cutoffs[20] > cutoffs[30]
    return sorted(tmp_path.glob("i30/multirun/*/submitit/*/*_result.pkl"))


@needs_cluster
def test_hydra_multirun_on_slurm_from_the_cli(tmp_path):
    _require("hydra_plugins.hydra_submitit_launcher")
    done = _sweep(tmp_path, "slurm")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Submitit 'slurm' sweep output dir" in done.stdout + done.stderr
    results = _check_sweep_outputs(tmp_path)
    # submitit's folder is named after the SLURM task ids: <array>_0 and <array>_1 of one array.
    tasks = sorted(p.parent.name for p in results)
    array = tasks[0].split("_")[0]
    assert tasks == [f"{array}_0", f"{array}_1"], tasks
    # (the result files exist a moment before SLURM marks the tasks COMPLETED)
    wait_for("both tasks COMPLETED", lambda: states(array) == {f"{array}_0": "COMPLETED", f"{array}_1": "COMPLETED"})


def test_hydra_multirun_with_the_local_submitit_launcher(tmp_path):
    _require("hydra_plugins.hydra_submitit_launcher")
    done = _sweep(tmp_path, "local")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_check_sweep_outputs(tmp_path)) == 2
