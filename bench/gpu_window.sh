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
