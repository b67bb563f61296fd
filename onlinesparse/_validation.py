"""Validation of constructor parameters, shared by every estimator and the replay's model
registry, so that a parameter means the same and is refused the same way everywhere.

Each check raises ``ValueError`` naming the parameter, what it must be, and what it got.
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers
from collections.abc import Collection
from importlib.metadata import PackageNotFoundError, version

__all__ = ["check_int", "check_real", "check_choice", "check_radii", "Versioned", "VersionError",
           "record_layouts", "register_records"]


def check_int(name: str, value: object, minimum: int = 1,
              maximum: int | None = None) -> int:
    """An integer (not a bool) in ``[minimum, maximum]``."""
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or value < minimum or (maximum is not None and value > maximum)):
        bound = f"≥ {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def check_real(name: str, value: object, low: float = -math.inf, high: float = math.inf,
               low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number in the interval from ``low`` to ``high`` (each end closed
    unless ``low_open`` / ``high_open``)."""
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(value)
          and (value > low if low_open else value >= low)
          and (value < high if high_open else value <= high))
    if not ok:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ValueError(f"{name} must be a finite number in {left}{low}, {high}{right}, "
                         f"got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: Collection[object]) -> object:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(map(repr, choices))}, got {value!r}")
    return value


def check_radii(name: str, radii: object) -> None:
    """``None`` (the model chooses), or a non-empty sequence of positive finite numbers."""
    if radii is None:
        return
    if isinstance(radii, str) or not hasattr(radii, "__len__") or not len(radii):
        raise ValueError(f"{name} must be positive and finite, got {radii!r}")
    for radius in radii:
        check_real(f"each of {name}", radius, 0.0, low_open=True)


class VersionError(ValueError):
    """A pickle written by another version of onlinesparse (or by a pre-release that stamped
    none): its layout is not this version's, so it is refused rather than guessed at."""


class Versioned:
    """Pickles carry the package's version and the layout of its named records, and only
    this version's, with these records, are loaded: another version's (or an unstamped
    pre-release's, or one whose records had other fields) raise :class:`VersionError`
    naming both, as scikit-learn's ``InconsistentVersionWarning`` names them — here an
    error, since a model's arrays in another layout would predict wrongly or fail inside
    compiled code rather than say why."""

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__() if hasattr(super(), "__getstate__")
                     else self.__dict__)
        state["_onlinesparse_version"] = _stamp()
        return state

    def __setstate__(self, state: dict) -> None:
        written = state.pop("_onlinesparse_version", None)
        if written != _stamp():
            version_written = (written or "").partition("+")[0]
            said = (f"a build of {version_written} whose named records had other fields"
                    if version_written == _version() else
                    written or "before 0.1.0 (no version stamp)")
            raise VersionError(
                f"this {type(self).__name__} was pickled by onlinesparse {said}; this is "
                f"{_stamp()}: refit the model (pickles load only in the version that wrote "
                "them)")
        self.__dict__.update(state)


# The named records a pickle's arrays are laid out in, by name (register_records).
_RECORDS: dict[str, object] = {}


def register_records(**records: object) -> None:
    """Declare named records (structured dtypes) whose layout a pickle depends on: the
    modules that define them call this once (``tests/test_validation.py`` finds every
    module-level structured dtype and checks that it is declared)."""
    _RECORDS.update(records)
    _stamp.cache_clear()


def record_layouts() -> dict[str, object]:
    """The declared records' dtypes by name (:func:`register_records`)."""
    return dict(_RECORDS)


@functools.cache
def _stamp() -> str:
    """The version and a digest of the declared records' layouts, e.g.
    ``0.1.0+49be6e546683``."""
    layouts = ";".join(f"{name}={dtype.descr}" for name, dtype in sorted(_RECORDS.items()))
    return f"{_version()}+{hashlib.sha256(layouts.encode()).hexdigest()[:12]}"


def _version() -> str:
    """The installed package's version ("0.0.0" in a source tree that is not installed)."""
    try:
        return version("onlinesparse")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
