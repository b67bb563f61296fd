# Two commands do all set-up on a machine with only python3 and make:
#   make demo   creates .venv, installs the package with the replay application, runs the demo
#   make test   creates .venv, installs the package with test, dask and replay extras, runs
#               the suite
# The onlinesparse command is installed in .venv/bin: run it as .venv/bin/onlinesparse, or
# after `. .venv/bin/activate`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps re-install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[replay]"
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,dask,replay]"
	touch $@ $(VENV)/.installed

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,dask,replay,bench]"
	touch $@ $(VENV)/.installed $(VENV)/.installed-test

demo: $(VENV)/.installed
	$(BIN)/onlinesparse demo
	@echo
	@echo "The onlinesparse command is in $(BIN): run it as $(BIN)/onlinesparse, or type"
	@echo "  . $(BIN)/activate"
	@echo "to put it on your PATH; onlinesparse-demo/recording.parquet is a recording to replay."

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check onlinesparse tests benchmarks examples

bench: $(VENV)/.installed-bench
	@echo "benchmarks live in benchmarks/; run one with $(BIN)/python benchmarks/<name>.py"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
