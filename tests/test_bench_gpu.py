"""bench/infer_gpu.py, the script a lent GPU runs once, end to end on CPU at tiny size: every row
and column it prints on a GPU is printed here too, so the one GPU window is never spent on a bug."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import script

BENCH = Path(__file__).resolve().parents[1] / "bench" / "infer_gpu.py"


def test_the_gpu_benchmark_runs_on_cpu_and_prints_every_column(env):
    done = script(BENCH, "--models", "tiny", "--device", "cpu", "--batch-sizes", "2", "--serial", "2",
                  "--runner-batch", "2", "--new-tokens", "4", env=env)
    assert done.rc == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"\(a\) matmul peak reached [0-9.]+ TFLOPS", out)
    # Image tokens measured by the real image processor: two 800x600 charts at 812x588, 609 tokens each.
    assert re.search(r"prompt: \d+ tokens measured, 1218 of them image tokens", out)
    header = next(line for line in out.splitlines() if line.startswith("model"))
    assert header.split() == ["model", "row", "batch", "samples/s", "ratio", "TFLOPS", "MFU", "(a)", "MFU", "sheet"]
    for row in ("(b) one request at a time", "(c) batched, transformers' vision", "(d) batched, varlen vision",
                "(e) (d) through the runner"):
        assert any(line.startswith(f"tiny  {row}") for line in out.splitlines()), row
    assert re.search(r"best \(c\)/\(b\) [0-9.]+x, best \(d\)/\(b\) [0-9.]+x, \(e\)/\(d\) at batch 2 [0-9.]+x", out)
    assert re.search(r"vision attention sdpa: (\d+) calls per layer", out)
    assert "vision attention candlebench_flash_varlen_sdpa: 1 calls per layer" in out
    assert int(re.search(r"vision attention sdpa: (\d+) calls per layer", out).group(1)) > 2
    assert re.search(r"split of one batch of \d+ .*vision [0-9.]+ s.*prefill [0-9.]+ s.*decode \+ processor [0-9.]+ s", out)
