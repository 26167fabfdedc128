"""How vLLM's engine (CPU build) is fed: continuous feeding against chunks, resumed after a SIGKILL,
and the benchmark of every feeding mode (bench/infer_vllm.py). Runs in the vLLM environment
(`-m vllm`); a module of its own so that `make test`'s two vLLM workers share the tier evenly
(Makefile)."""

from __future__ import annotations

import json
import re

import pytest

from helpers import VLLM_CPU, infer, records, run_dir

pytestmark = pytest.mark.vllm


def test_continuous_feeding_equals_chunks_and_resumes_after_sigkill(workspace, env):
    """backend.feed=continuous (a request in whenever one comes out, each answer fsynced as it
    finishes) gives the chunked run's records; killed mid-run, it resumes with nothing lost or
    answered twice."""
    import os
    import signal
    import subprocess
    import time

    from helpers import CANDLEBENCH

    infer(workspace, env, "vllm-chunks", *VLLM_CPU, "backend.feed=chunks", "infer.batch_size=5")
    chunks = records(workspace, "vllm-chunks")
    parts = run_dir(workspace, "vllm-fed") / "parts"

    def lines() -> list[dict]:
        return [json.loads(x) for p in sorted(parts.glob("*.jsonl")) for x in p.read_text().splitlines() if x.strip()]

    # One request in the engine at a time: the kill lands between answers, not after the last. Here
    # the engine runs in its own process, as vLLM runs it by default (conftest's env: in-process).
    proc = subprocess.Popen([CANDLEBENCH, "infer", "data=slice", f"out_dir={workspace}", "infer.run_name=vllm-fed",
                             *VLLM_CPU, "backend.feed=continuous", "backend.in_flight=1"],
                            env={**env, "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600
    while proc.poll() is None and (not parts.exists() or len(lines()) < 3) and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(lines())
    assert 3 <= before < len(chunks)
    infer(workspace, env, "vllm-fed", *VLLM_CPU, "backend.in_flight=4")  # continuous is the default
    fed = records(workspace, "vllm-fed")
    assert list(fed.index) == list(chunks.index) and fed.index.is_unique
    assert list(fed["token_ids"]) == list(chunks["token_ids"]) and list(fed["text"]) == list(chunks["text"])
    answered = [r["sample_id"] for r in lines() if r["error"] is None]
    assert sorted(answered) == sorted(fed.index)  # each sample answered exactly once across both attempts


def test_the_vllm_benchmark_runs_on_the_cpu_build(env):
    """bench/infer_vllm.py, bench/infer_gpu.py's twin: dummy weights at the configured size, every row,
    the server row (vLLM's OpenAI server, fed by backend=server) included."""
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "bench" / "infer_vllm.py"
    done = subprocess.run([sys.executable, str(bench), "--models", "tiny", "--batch-sizes", "4", "--serial", "2",
                           "--requests", "8", "--server-concurrency", "1", "4",
                           "--cpu-kvcache-gb", "0.125"], capture_output=True, text=True, env=env,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    for row in ("(b) one request at a time", "(c) LLM.generate chunks", "(d) continuous feeding",
                "(e) (d) through the runner", "(f) server, concurrency            1", "(f) server, concurrency            4"):
        assert f"tiny  {row}" in done.stdout, row
    assert re.search(r"best \(c\)/\(b\) [0-9.]+x, \(d\)/\(c\) [0-9.]+x, \(e\)/\(d\) [0-9.]+x, best \(f\)/\(d\) [0-9.]+x",
                     done.stdout)
