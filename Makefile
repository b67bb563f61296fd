# Two commands do all set-up on a machine with only python3 and make:
#   make demo   creates .venv, installs the package, runs the main job
#   make test   creates .venv, installs the package with test (and dask) extras, runs the suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps re-install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,dask]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,dask,bench]"
	touch $@ $(VENV)/.installed $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/onlinesparse demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check onlinesparse tests benchmarks examples

bench: $(VENV)/.installed-bench
	@echo "benchmarks live in benchmarks/; run one with $(BIN)/python benchmarks/<name>.py"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
