"""The boundary between river's feature dicts and the numerical core's arrays.

Every estimator turns ``x`` (a dict) into a fixed-order float vector through a
:class:`FeatureMap`, which is where bad input is caught. The policy, shared by all models:

* A value that is not a finite real number (NaN, ±inf, a string, ``None``…) raises
  ``ValueError`` naming the feature. Booleans count as 0/1.
* The numeric domain: a feature or target must satisfy ``|value| ≤ MAX_MAGNITUDE`` (10⁵⁰);
  a larger one, or an integer too large for a float at all (``10**400``), raises
  ``ValueError`` naming it. Why 10⁵⁰: the statistics hold squares and sums of products
  (``HᵀH``, ``yᵀy``), and the VBLS E-step divides by the square of a noise variance of the
  order of y², so fourth powers of the data must stay finite with a wide margin:
  (10⁵⁰)⁴ = 10²⁰⁰ leaves a factor 10¹⁰⁸ for sums over patterns and products of a few such
  terms before the largest float (1.8·10³⁰⁸). Small magnitudes, subnormals included, are
  accepted. The policy table per estimator is ``docs/input_policy.md``.
* The input space is fixed by the first sample learned. Feature order is by name, so the
  order of keys in the dict never matters.
* ``strict=True``: a feature the model has seen that is missing from ``x``, or a feature it
  has never seen, raises ``ValueError`` naming it. This is the mode for a control loop, where
  a silently missing sensor is a fault.
* ``strict=False`` (default, river's convention that models cope with emerging and
  disappearing features): a missing feature takes its running mean over the samples
  learned so far (the neutral value, which is 0 behind a ``StandardScaler``), and a feature
  first seen after the first sample is ignored; its name is kept in ``ignored``, and an
  :class:`IgnoredFeatureWarning` says so once per name.

Nothing is changed by :meth:`FeatureMap.transform`; an estimator calls :meth:`commit` only
after its own update has succeeded, so a rejected sample leaves the model exactly as it was.
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings
from collections.abc import Hashable, Iterable, Mapping
from operator import itemgetter

import numpy as np

from onlinesparse import core

__all__ = ["FeatureMap", "IgnoredFeatureWarning", "MAX_MAGNITUDE", "as_target", "as_rows"]


class IgnoredFeatureWarning(UserWarning):
    """A feature that was not in the first sample, ignored (once per name): river's
    ``OneHotEncoder`` emits a category's column only once the category has been seen, so
    every category first seen later is lost to a model without a word."""


#: Largest magnitude of a feature or a target (module docstring: fourth powers stay finite).
MAX_MAGNITUDE = 1e50


def _refuse(what: str, value: object) -> ValueError:
    """The error for a value that is not a real number in the domain (``what`` names it)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        try:
            number = float(value)
        except OverflowError:  # an integer (or fraction) beyond the largest float
            return ValueError(f"{what} is too large for a float (|value| > 1.8e308)")
        except (TypeError, ValueError):  # a Real whose __float__ fails
            return ValueError(f"{what} is not a number: {value!r}")
        if not math.isfinite(number):
            return ValueError(f"{what} is not finite: {number}")
        return ValueError(f"{what} = {number:.6g} is outside the numeric domain "
                          f"|value| ≤ {MAX_MAGNITUDE:g}")
    return ValueError(f"{what} is not a number: {value!r}")


# The arrays of real numbers the fast path takes (transform_known).
_FAST_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def _real(value: object) -> float | None:
    """``value`` as a float in the domain, or None (the caller names what was wrong)."""
    if type(value) is not float:  # (the common case skips the slow abstract-class checks)
        if isinstance(value, bool | np.bool_):
            return float(value)
        if not isinstance(value, numbers.Real):
            return None
        try:
            value = float(value)
        except (OverflowError, TypeError, ValueError):
            return None
    # (a NaN fails both comparisons)
    return value if -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE else None


def _number(name: Hashable, value: object) -> float:
    out = _real(value)
    if out is None:
        raise _refuse(f"feature {name!r}", value)
    return out


def as_target(y: object, what: str = "the target") -> float:
    """Validate a regression target: a real number in the domain (booleans count as 0/1);
    ``what`` names it in the error."""
    if type(y) is float and -MAX_MAGNITUDE <= y <= MAX_MAGNITUDE:  # (once per sample: inline)
        return y
    out = _real(y)
    if out is None:
        raise _refuse(what, y)
    return out


def as_targets(y: object, names: list[Hashable] | None) -> tuple[np.ndarray, list[Hashable]]:
    """Validate a multi-target sample ``y`` (a dict of targets, each :func:`as_target`):
    its values in the order of ``names``, the targets fixed by the first sample (None
    before it: then ``y``'s, ordered by type and repr so that the order of its keys never
    matters). A target missing from ``y``, not in ``names`` or not a real number raises
    ``ValueError`` naming it."""
    if not isinstance(y, Mapping):
        raise ValueError(f"y must be a dict of targets, got {type(y).__name__}")
    values = {name: as_target(value, f"target {name!r}") for name, value in y.items()}
    if names is None:
        names = sorted(values, key=lambda n: (type(n).__name__, repr(n)))
        if not names:
            raise ValueError("y has no targets")
        return np.array([values[name] for name in names]), names
    for name in values:
        if name not in names:
            raise ValueError(f"target {name!r} was not in the first sample")
    for name in names:
        if name not in values:
            raise ValueError(f"target {name!r} is missing")
    return np.array([values[name] for name in names]), names


def as_target_rows(X: object, Y: object, names: list[Hashable] | None
                   ) -> tuple[list[Mapping[Hashable, object]], list[Mapping[Hashable, object]]]:
    """A multi-target batch's feature rows and target rows (:func:`as_rows` of each), every
    target row validated by :func:`as_targets` against ``names`` (or the first row's), so
    that a bad one refuses the batch before anything is learned."""
    rows, targets = as_rows(X), as_rows(Y)
    if len(rows) != len(targets):
        raise ValueError(f"{len(rows)} rows of features but {len(targets)} of targets")
    for y in targets:
        names = as_targets(y, names)[1]
    return rows, targets


def as_rows(X: object) -> list[Mapping[Hashable, object]]:
    """The rows of a pandas ``DataFrame`` (or of any iterable of feature dicts) as dicts."""
    return list(X.to_dict(orient="records")) if hasattr(X, "to_dict") else list(X)


def _ordered(names) -> list[Hashable]:
    """Feature order by name (type first, so that mixed key types still sort)."""
    return sorted(names, key=lambda n: (type(n).__name__, str(n)))


class FeatureMap:
    """Maps feature dicts to vectors in a fixed order and validates them.

    Parameters
    ----------
    strict
        Raise on missing or unseen features instead of imputing / ignoring them.

    Examples
    --------
    >>> fm = FeatureMap()
    >>> v = fm.transform({"b": 2, "a": 1.0}, learning=True)
    >>> fm.commit(v, {"b": 2, "a": 1.0})
    >>> fm.names, fm.transform({"a": 3.0}).tolist()
    (['a', 'b'], [3.0, 2.0])
    >>> fm.transform({"a": float("nan"), "b": 1})
    Traceback (most recent call last):
    ...
    ValueError: feature 'a' is not finite: nan
    """

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
        self.names: list[Hashable] = []
        self.index: dict[Hashable, int] = {}
        self.means = np.zeros(0)
        self.n_committed = 0
        self.ignored: set[Hashable] = set()

    @property
    def n_features(self) -> int:
        return len(self.names)

    @property
    def is_fitted(self) -> bool:
        """Whether a sample has fixed the input space (possibly an empty one)."""
        return self.n_committed > 0

    def transform(self, x: Mapping[Hashable, object], learning: bool = False) -> np.ndarray:
        """Validate ``x`` and return its vector (changes nothing).

        Before the first commit, ``learning=True`` defines the input space from ``x``;
        ``learning=False`` returns an empty vector (the model has no inputs yet).
        """
        if type(x) is not dict and not isinstance(x, Mapping):  # (the ABC check is slow)
            raise ValueError(f"features must be a dict, got {type(x).__name__}")
        vector = self.transform_known(x)
        if vector is not None:
            return vector
        values = {name: _number(name, value) for name, value in x.items()}
        if not self.is_fitted:
            if not learning:
                return np.zeros(0)
            return np.array([values[n] for n in _ordered(values)], dtype=float)
        if self.strict:
            unseen = [n for n in values if n not in self.index]
            if unseen:
                raise ValueError(f"feature {unseen[0]!r} was not seen in the first sample")
        out = self.means.copy()
        missing = []
        for name, value in values.items():
            i = self.index.get(name)
            if i is not None:
                out[i] = value
        if len(values) < len(self.names) or self.strict:
            missing = [n for n in self.names if n not in values]
            if missing and self.strict:
                raise ValueError(f"feature {missing[0]!r} is missing")
        return out

    def transform_known(self, x: Mapping[Hashable, object]) -> np.ndarray | None:
        """The common case of :meth:`transform` in a stream, in a few µs (it runs twice per
        sample): once the input space is fixed, a dict of exactly the known features,
        all floats (Python's, as river's scalers emit them, or NumPy's float64 or float32,
        as a robot's stack may) and finite. Returns None for
        anything else, which :meth:`transform` then examines."""
        names = self.names
        if type(x) is not dict and not isinstance(x, Mapping):
            return None  # (transform names the problem)
        if not ((self.n_committed or names) and len(x) == len(names)):
            return None
        try:
            # (itemgetter reads every value in one C call; with one name it would return
            # the value itself rather than a tuple)
            ordered = (itemgetter(*names)(x) if len(names) > 1
                       else tuple(x[name] for name in names))
        except (KeyError, TypeError):
            return None
        try:
            vector = np.array(ordered)
        except (ValueError, TypeError):  # e.g. sequences of different lengths
            return None
        # Real numbers only make a float array (a string, None, a complex number or an
        # integer beyond the floats does not; booleans and integers become the floats
        # _number makes of them), and a Euclidean norm within the domain means every value
        # is (hypot neither overflows nor lets a NaN through; a norm above the bound with
        # every value within it only sends the sample down the general path).
        # (a robot stack's float32 readings: exactly the float64 numbers _number makes of
        # them, without the general path's dict, which took a tick twice as long)
        if (vector.dtype in _FAST_DTYPES and vector.ndim == 1
                and math.hypot(*ordered) <= MAX_MAGNITUDE):
            return vector if vector.dtype == np.float64 else vector.astype(np.float64)
        return None

    def declare(self, x: Mapping[Hashable, object]) -> None:
        """Know, before the first sample, the input space a first sample with ``x``'s
        features will fix (a prepared model's): :meth:`transform_known` then takes such a
        sample at once, in the order it will fix. Nothing is fixed: a first sample of
        other features fixes its own, as in an undeclared map."""
        if not self.is_fitted:
            self.names = _ordered(x)
            self.index = {n: i for i, n in enumerate(self.names)}
            self.means = np.zeros(len(self.names))

    def commit(self, vector: np.ndarray, x: Mapping[Hashable, object],
               known: bool = False) -> None:
        """Record a learned sample (``x`` and its vector from :meth:`transform`): the first
        fixes the input space; every one updates the running means. ``known``: the vector
        came from :meth:`transform_known`, so ``x`` has no feature to record as ignored."""
        if not self.is_fitted:
            self.names = _ordered(x)
            self.index = {n: i for i, n in enumerate(self.names)}
            self.means = np.zeros(len(self.names))
        if not (known or self.strict or x.keys() <= self.index.keys()):
            new = [n for n in x if n not in self.index and n not in self.ignored]
            self.ignored.update(new)
            for name in new:  # (once per name: a one-hot encoder's late categories, say)
                warnings.warn(f"feature {name!r} was not in the first sample, which fixed "
                              f"the input space: it is ignored (give the first sample every "
                              f"feature; docs/input_policy.md)", IgnoredFeatureWarning,
                              stacklevel=4)
        self.n_committed += 1
        core.running_mean(self.means, vector, self.n_committed)

    def rehearse(self, rows: Iterable[Mapping[Hashable, object]]
                 ) -> tuple[FeatureMap, list[np.ndarray]]:
        """Validate a batch as if it were learned row by row, on a copy.

        Returns the copy (with every row committed) and the vectors; ``self`` is untouched,
        so a bad row anywhere rejects the whole batch with nothing changed. An estimator
        replaces its map with the copy once its own update has succeeded.
        """
        trial = copy.deepcopy(self)
        vectors = []
        for row in rows:
            vector = trial.transform(row, learning=True)
            trial.commit(vector, row)
            vectors.append(vector)
        return trial, vectors

    def overflow(self, vector: np.ndarray) -> ValueError:
        """The error for a prediction at ``vector`` that the floats cannot hold.

        Inside the domain a prediction can still overflow when an input lies hundreds of
        orders of magnitude outside the data learned (a feature of 1e50 after features of
        1e-117: its weight's variance times its square). The model then refuses the input
        rather than return ∞ or NaN, naming the feature of largest magnitude.
        """
        if not len(vector):
            return ValueError("the prediction overflows the floats")
        i = int(np.argmax(np.abs(vector)))
        return ValueError(f"feature {self.names[i]!r} = {float(vector[i]):.6g} is too far "
                          "outside the data learned so far: the prediction overflows")

    def to_dict(self, vector: np.ndarray) -> dict[Hashable, float]:
        """Inverse mapping, for reports (e.g. relevance per input)."""
        return {name: float(v) for name, v in zip(self.names, vector, strict=True)}
