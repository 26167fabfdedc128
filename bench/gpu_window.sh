#!/usr/bin/env bash
# The one prepared run for a lent GPU window (the `run` tool): bench/infer_gpu.py, 3B and 7B, under a
# time limit that leaves room for a rerun. The lent machine's image has torch and transformers but not
# hydra-core / omegaconf (the configs the bench composes its requests from); carry them as wheels:
#
#   here:   .venv/bin/pip download --no-deps -d .gpu-wheels hydra-core==1.3.8 omegaconf==2.3.1 'antlr4-python3-runtime==4.9.3'
#   run:    command="bench/gpu_window.sh", carry=[".gpu-wheels"]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .gpu-wheels ]; then
    # antlr4 4.9.3 is an sdist only: built with the image's own setuptools (no index to isolate from).
    python3 -m pip install --quiet --no-index --no-deps --no-build-isolation .gpu-wheels/*
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
# Unbuffered: a run the timeout ends keeps every line it printed.
PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-480}" python3 bench/infer_gpu.py "$@" 2>&1 | grep -v -e "it/s\]" -e "sample/s\]" -e "file/s\]" -e "Warning"
