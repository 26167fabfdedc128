#!/usr/bin/env bash
# The one prepared run for a lent GPU window (the `run` tool): bench/infer_gpu.py under a time limit
# that leaves room for a rerun. The lent machine's image has torch and transformers but not
# hydra-core / omegaconf (the configs the bench composes its requests from); carry them as wheels
# (antlr4 4.9.3 is an sdist only: built into a pure-Python wheel here, so nothing builds there):
#
#   here:   .venv/bin/pip download --no-deps -d .gpu-wheels hydra-core==1.3.8 omegaconf==2.3.1
#           .venv/bin/pip wheel --no-deps -w .gpu-wheels 'antlr4-python3-runtime==4.9.3'
#   run:    carry=[".gpu-wheels"], command (all rows: ~6 minutes on an H200 before the compile and decode rows, more
#           now; 7B first, BENCH_TIMEOUT the hard stop):
#           BENCH_TIMEOUT=400 bench/gpu_window.sh --models 7b 3b --batch-sizes 32 128 --serial 4 --runner-batch 64
#             --lever-batch 32 --long-new-tokens 128 --long-models 7b --static-cache
#           the second window of 2026-12-04, the rows whose levers changed (~5.5 minutes):
#           BENCH_TIMEOUT=330 bench/gpu_window.sh --models 7b --batch-sizes 128 --runner-batch 64 --lever-batch 8
#             --rows d levers compile decode e split --static-cache --decode-tokens 32
#           the third window (~150 s: the runner at its 0.5 ms GIL switch interval with the compiled vision
#           blocks; the runner's static / dynamic cache at 128 new tokens, the static compile ~48 s; the 5 ms
#           row, e-5ms, left out: the second window measured it, 10.91 against 12.57 samples/s):
#           BENCH_TIMEOUT=150 bench/gpu_window.sh --models 7b --batch-sizes 64 --runner-batch 64 --lever-batch 1
#             --rows compile e f --long-new-tokens 128 --static-cache
#           the next window (not yet run; sized to <= 8 minutes): every row, each lever on and off and the split,
#           for the three families, the two never measured first; 128 new tokens (row f) for the 7B alone:
#           BENCH_TIMEOUT=470 bench/gpu_window.sh --models qwen3-8b gemma3-12b 7b --batch-sizes 64 --serial 4
#             --runner-batch 64 --lever-batch 8 --long-new-tokens 128 --long-models 7b
#           Estimated from the 7B's measured rates (docs/inference.md: (b) 2.6/s, (c) ~5/s, (d) 12.5/s, compiled
#           14/s, runner 12/s, 128 new tokens 5.2/s, compile 9 s, split of 128 ~13 s), each row's samples divided by
#           its rate: 7B ~170 s (c 26, compile + (d) compiled 21, split 20, decode 14, e / e-5ms / e-encode 11 each,
#           f 25, d 10, build 10, the rest 15); Qwen3-VL-8B ~135 s without (f) (about the 7B's FLOPs per sample:
#           950 image tokens, a 410M-parameter tower, a 7.0B-parameter body against 6.5B; its (c) pays one call per
#           image, not per window: ~15 s); Gemma-3-12B ~110 s (no (d), lever or compile rows; 512 image tokens,
#           SigLIP's 4,096 patches per image, a 10.8B body, decode slower by its 24 GB of weights); start-up
#           (wheels, calibration, charts) ~20 s: ~435 s. The timeout (470 s) keeps the window under 8 minutes if the
#           new families run slower than estimated; the 7B, measured three times, runs last.
#
# On CPU (the whole script, tiny model): bench/gpu_window.sh --models tiny --device cpu --batch-sizes 2
# --serial 2 --runner-batch 2 --lever-batch 1 --new-tokens 4 --long-new-tokens 5, with a python3 on
# PATH (a wrapper script exec'ing the venv's python, not a symlink: a symlinked venv python is the
# base interpreter, and the wheels would install there) into whose environment the wheels may install.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .gpu-wheels ]; then
    python3 -m pip install --quiet --no-index --no-deps .gpu-wheels/*.whl
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
# Unbuffered: a run the timeout ends keeps every line it printed.
PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-480}" python3 bench/infer_gpu.py "$@" 2>&1 | grep -v -e "it/s\]" -e "sample/s\]" -e "file/s\]"
