"""The package's version, in a module of its own: the pickles' version stamp
(:mod:`onlinesparse._validation`) reads it without importing the package's estimators."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onlinesparse")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"
