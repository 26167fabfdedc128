from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

# The suites start hundreds of interpreters (commands, SLURM jobs, servers, benchmarks): their
# bytecode is written and reused even where the environment says PYTHONDONTWRITEBYTECODE (this
# machine's image does), or each compiles this project's modules again, and all it imports of vLLM
# (.venv-vllm installs uncompiled: Makefile).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers import SLICE, cli  # noqa: E402
from candlebench.market.market import Market, load_market  # noqa: E402


@pytest.fixture(scope="session")
def slice_path() -> Path:
    return SLICE


@pytest.fixture(scope="session")
def slice_market() -> Market:
    return load_market([SLICE], name="PSE")


@pytest.fixture(scope="session")
def slice_rows() -> list[dict[str, str]]:
    """The committed slice read with the csv module only: the independent side of hand checks."""
    with SLICE.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    """Where the fixture tests build tiny checkpoints (once per session and worker)."""
    return tmp_path_factory.getbasetemp() / "tiny-models"


@pytest.fixture(scope="session")
def env(tmp_path_factory) -> dict:
    """Tiny checkpoints are built on first use into this cache (CANDLEBENCH_CACHE); vLLM's sockets
    and compile caches go to a temporary folder too. vLLM's engine runs in the command's own process
    (20 of a tiny run's 30 CPU seconds are the engine process's start); the SIGKILL test runs it in
    its own process, as vLLM does by default."""
    scratch = tmp_path_factory.mktemp("scratch")
    return {
        **os.environ,
        "CANDLEBENCH_CACHE": str(tmp_path_factory.mktemp("cache")),
        "HF_HUB_OFFLINE": "1",
        "VLLM_CACHE_ROOT": str(scratch / "vllm"),
        "TMPDIR": str(scratch),
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    }


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, env) -> Path:
    """samples.parquet + rendered charts for 27 real samples of the committed slice."""
    out = tmp_path_factory.mktemp("infer")
    common = ["data=slice", f"out_dir={out}", "data.codes=[AC,ALI,PHN,SM]"]
    cli("samples", *common, "task.samples.interval=90", env=env)
    cli("render", *common, "render.workers=1", env=env)
    assert len(pd.read_parquet(out / "forecast" / "samples.parquet")) == 27
    return out


TIERS = ("unit", "stages", "cluster", "browser", "vllm")


def pytest_collection_modifyitems(config, items):
    """Every test is in one tier (pyproject's markers); one that names none is a stage test. The
    modules run in the order of their file names, as when tests/ was flat and make test was timed
    (13-14 min): by folder, the heavy whole-package modules (docs, install, run, no_silent_wrong)
    would be handed out last under --dist loadscope, where one worker runs the tail alone."""
    items.sort(key=lambda item: item.path.name)  # stable: a module's tests keep their order
    for item in items:
        if not any(item.get_closest_marker(t) for t in TIERS):
            item.add_marker(pytest.mark.stages)
