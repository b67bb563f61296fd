"""Run the examples in the core modules' docstrings."""

import doctest
import importlib

import pytest

MODULES = ["onlinesparse.orr.kernels", "onlinesparse.orr.window", "onlinesparse.orr.ridge",
           "onlinesparse.features", "onlinesparse.orr.criteria"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
