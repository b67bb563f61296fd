# Two commands do all set-up on a machine with only python3 and make:
#   make demo   creates .venv, installs the package with the replay application, runs the demo
#   make test   creates .venv, installs the package with test, dask and replay extras, runs
#               the suite
# The onlinesparse command is installed in .venv/bin: run it as .venv/bin/onlinesparse, or
# after `. .venv/bin/activate`.
# Benchmark figures in docs/performance.md, the README and examples/trump_approval/README.md are
# generated from results files:
#   make performance  regenerates those pages from the committed results (seconds, python3 only)
#   make bench-all    reruns every stream benchmark (tens of minutes), then regenerates them
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench bench-all performance clean

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
	$(BIN)/python -m pytest -n auto --durations=15

lint: $(VENV)/.installed-test
	$(BIN)/ruff check onlinesparse tests benchmarks examples

bench: $(VENV)/.installed-bench
	@echo "benchmarks live in benchmarks/; run one with $(BIN)/python benchmarks/<name>.py"

# The benchmarks whose results files docs/performance.md is generated from, each run in full.
RESULT_BENCHMARKS := stream_real river_more robot_panda stream_friedman sample_cost friedman_seeds \
	rbf_metric vbls_stream vbls_kernel_cost target_offset target_units stream_memory \
	vbls_synthetic vbls_kernel memory_alarms neural_decoding control_panda tick_budget first_ticks
# Runs of the same scripts with other options, each writing its own results file.
RESULT_RUNS := "robot_panda.py --multi" "neural_decoding.py --multi"

bench-all: $(VENV)/.installed-bench
	for b in $(RESULT_BENCHMARKS); do $(BIN)/python benchmarks/$$b.py || exit 1; done
	for r in $(RESULT_RUNS); do $(BIN)/python benchmarks/$$r || exit 1; done
	$(PYTHON) benchmarks/performance.py

performance:
	$(PYTHON) benchmarks/performance.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
