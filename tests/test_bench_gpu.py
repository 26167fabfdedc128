"""bench/infer_gpu.py, the script a lent GPU runs once, end to end on CPU at tiny size: every row
and column it prints on a GPU is printed here too, so the one GPU window is never spent on a bug."""

from __future__ import annotations

import re

from helpers import ROOT, script

BENCH = ROOT / "bench" / "infer_gpu.py"


def test_the_gpu_benchmark_runs_on_cpu_and_prints_every_column(env):
    done = script(BENCH, "--models", "tiny", "--device", "cpu", "--batch-sizes", "2", "--serial", "2",
                  "--runner-batch", "2", "--lever-batch", "1", "--new-tokens", "4", "--long-new-tokens", "5", "--long-models", "tiny", "--static-cache",
                  "--compile-backend", "eager", "--decode-tokens", "4", env=env)
    assert done.rc == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"\(a\) matmul peak reached [0-9.]+ TFLOPS", out)
    # Image tokens measured by the real image processor: two 800x600 charts at 812x588, 609 tokens each.
    assert re.search(r"prompt: \d+ tokens measured, 1218 of them image tokens", out)
    header = next(line for line in out.splitlines() if line.startswith("model"))
    assert header.split() == ["model", "row", "batch", "samples/s", "ratio", "TFLOPS", "MFU", "(a)", "MFU", "sheet"]
    for row in ("(b) one request at a time", "(c) batched, transformers' vision", "(d) batched, varlen + levers",
                "(e) (d) through the runner", "(e) pixels in the batch encode", "(f) runner, 5 new tokens",
                "(f) + static cache, compiled step", "(d) + compiled vision blocks", "(e) GIL switch interval 5 ms"):
        assert any(line.startswith(f"tiny  {row}") for line in out.splitlines()), row
    assert re.search(r"best \(c\)/\(b\) [0-9.]+x, best \(d\)/\(b\) [0-9.]+x, \(e\)/\(d\) at batch 2 [0-9.]+x", out)
    assert re.search(r"vision attention sdpa: (\d+) calls per layer", out)
    assert "vision attention candlebench_flash_varlen_sdpa: 1 calls per layer" in out
    assert int(re.search(r"vision attention sdpa: (\d+) calls per layer", out).group(1)) > 2
    assert re.search(r"split of one batch of \d+ .*vision [0-9.]+ s.*prefill [0-9.]+ s.*decode \+ processor [0-9.]+ s", out)
    # every lever off in turn, on the vision tower alone; the processor's CPU time per request
    levers = next(line for line in out.splitlines() if line.startswith("tiny  vision tower, 2 charts: all levers"))
    for lever in ("flash_kernel", "grid_cache", "patch_matmul", "mlp_pad"):
        assert f"all but {lever} " in levers, lever
    assert "none (varlen, padded SDPA)" in levers
    assert re.search(r"image processor on CPU: [0-9.]+ ms per request \(2 charts\).*whole processor [0-9.]+ s, "
                     r"pixels ahead [0-9.]+ s", out)
    assert re.search(r"\(f\) static cache: compile \+ first batch of 2 [0-9.]+ s", out)
    assert re.search(r"\(f\) static / dynamic cache at 5 new tokens: [0-9.]+x", out)
    assert re.search(r"vision tower, 4 charts, compiled blocks: compile \+ first call [0-9.]+ s; steady [0-9.]+ s "
                     r"against [0-9.]+ s eager .*largest difference from eager [0-9.e+-]+ of its scale", out)
    assert re.search(r"split of one batch of 2 \(varlen vision \+ levers \+ compiled blocks, pixels ahead\)", out)
    assert re.search(r"decode at batch 2, 4 new tokens: dynamic cache: first token after [0-9.]+ s, then [0-9.]+ ms a "
                     r"step; static cache \(compile \+ first call [0-9.]+ s\): first token after", out)
    assert "failed (" not in out  # every row ran


def test_a_ratio_against_a_row_not_run_prints_a_dash(env):
    """A window that skips row (b) prints "–", not "nanx (b)"."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("infer_gpu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.ratio(12.5, 2.5, " (b)") == "5.00x (b)"
    assert bench.ratio(12.5, float("nan"), " (b)") == "–" and bench.ratio(float("nan"), 2.5) == "–"
