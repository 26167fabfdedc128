from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rendering.market import Market, load_market

DATA_DIR = Path(__file__).parent / "data"
SLICE = DATA_DIR / "pse_slice.csv"


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


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    """Where the fixture tests build tiny checkpoints (once per session and worker)."""
    return tmp_path_factory.getbasetemp() / "tiny-models"


# --- the infer job through the CLI, on tiny checkpoints --------------------------------------------

CANDLEBENCH = str(Path(sys.executable).parent / "candlebench")


def cli(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([CANDLEBENCH, *args], capture_output=True, text=True, env=env, timeout=900)
    if check:
        assert done.returncode == 0, done.stderr[-4000:]
    return done


@pytest.fixture(scope="session")
def env(tmp_path_factory) -> dict:
    """Tiny checkpoints are built on first use into this cache (CANDLEBENCH_CACHE); vLLM's sockets
    and compile caches go to a temporary folder too."""
    scratch = tmp_path_factory.mktemp("scratch")
    return {
        **os.environ,
        "CANDLEBENCH_CACHE": str(tmp_path_factory.mktemp("cache")),
        "HF_HUB_OFFLINE": "1",
        "VLLM_CACHE_ROOT": str(scratch / "vllm"),
        "TMPDIR": str(scratch),
        "VLLM_NO_USAGE_STATS": "1",
    }


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, env) -> Path:
    """samples.parquet + rendered charts for 27 real samples of the committed slice."""
    out = tmp_path_factory.mktemp("infer")
    common = ["data=slice", f"out_dir={out}", "data.codes=[AC,ALI,PHN,SM]"]
    cli("samples", *common, "samples.interval=90", env=env)
    cli("render", *common, "render.workers=1", env=env)
    assert len(pd.read_parquet(out / "samples.parquet")) == 27
    return out


def infer(workspace: Path, env: dict, run: str, *overrides: str, check: bool = True) -> subprocess.CompletedProcess:
    return cli("infer", "data=slice", f"out_dir={workspace}", f"infer.run_name={run}", *overrides, env=env, check=check)


def records(workspace: Path, run: str) -> pd.DataFrame:
    lines = (workspace / "runs" / run / "responses.jsonl").read_text().splitlines()
    return pd.DataFrame([json.loads(line) for line in lines]).set_index("sample_id").sort_index()
