"""Run the examples in the docstrings of the command line, the replay's checks and registry,
the report and the grid (the modules a new user reads first)."""

import doctest
import importlib

import pytest

MODULES = ["onlinesparse.replay.cli", "onlinesparse.replay.collector", "onlinesparse.replay.jobs",
           "onlinesparse.replay.models", "onlinesparse.replay.checks",
           "onlinesparse.replay.report", "onlinesparse.replay.plots", "onlinesparse.replay.grid",
           "onlinesparse.lin1"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
