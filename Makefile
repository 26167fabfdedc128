# Two entry points for a fresh machine (README): `make demo` runs the main job, `make test` the tests.
# Each creates the virtual environment it needs first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test

$(BIN)/candlebench: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/candlebench
	$(BIN)/candlebench data prepare demo
	$(BIN)/candlebench samples data=demo

test: $(BIN)/candlebench
	$(BIN)/python -m pytest -n auto
