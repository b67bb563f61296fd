"""Run the examples in the core modules' docstrings."""

import doctest
import importlib

import pytest

MODULES = ["onlinesparse.kernels", "onlinesparse.window", "onlinesparse.ridge",
           "onlinesparse.features", "onlinesparse.criteria"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
