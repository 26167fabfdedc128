"""Whether the SLURM tests can run here: a cluster that answers `sinfo`, and that is the local
test cluster (ClusterName `candlebench`) unless CANDLEBENCH_SLURM_TESTS=1. With
CANDLEBENCH_REQUIRE_SLURM=1 (CI) a missing cluster is an error, never a skip."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

LOCAL_CLUSTER = "candlebench"


def _run(*cmd: str, timeout: float = 15) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _cluster_problem() -> str | None:
    """Why the SLURM tests cannot run here, or None when they can."""
    if shutil.which("sinfo") is None:
        return "no SLURM client (sinfo) on PATH; start one with: slurm/install.sh && slurm/cluster.sh start"
    try:
        info = _run("sinfo", "-h", "-o", "%t")
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 15 s"
    if info.returncode != 0:
        last = (info.stderr.strip().splitlines() or [f"exit status {info.returncode}"])[-1]
        return f"sinfo failed ({last}); start a cluster with slurm/cluster.sh start"
    states = set(info.stdout.split())
    if not states & {"idle", "mix", "alloc"}:
        return f"no usable node (sinfo states: {sorted(states) or 'none'})"
    config = _run("scontrol", "show", "config").stdout
    name = next((line.split("=", 1)[1].strip() for line in config.splitlines() if line.startswith("ClusterName")), "?")
    if name != LOCAL_CLUSTER and os.environ.get("CANDLEBENCH_SLURM_TESTS") != "1":
        return f"cluster {name!r} is not the local test cluster; set CANDLEBENCH_SLURM_TESTS=1 to submit to it anyway"
    return None


_PROBLEM = _cluster_problem()
if _PROBLEM and os.environ.get("CANDLEBENCH_REQUIRE_SLURM") == "1":
    raise RuntimeError(f"CANDLEBENCH_REQUIRE_SLURM=1 but the SLURM tests cannot run: {_PROBLEM}")
needs_cluster = pytest.mark.skipif(_PROBLEM is not None, reason=_PROBLEM or "")


