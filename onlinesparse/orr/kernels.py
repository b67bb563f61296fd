"""Basis functions: radial kernels (Orr A.3), a constant and one linear function per input.

A :class:`Basis` is an ordered set of columns of a design matrix. Each column is one of

* ``constant`` — ``h(x) = 1`` (the bias),
* ``linear`` — ``h(x) = x[i]`` for one input ``i``,
* a radial function ``h(x) = φ(‖x − c‖² / r²)`` with centre ``c`` and radius ``r``, where
  φ is one of Orr's four types (A.3, with ``z = ‖x − c‖²/r²``), or with a diagonal metric
  ``z = Σ_f a_f (x_f − c_f)²/r²`` whose weights ``a`` average 1 (an input of weight
  ``a_f`` is seen at radius ``r/√a_f``: Orr (1996) A.3's metric per basis function, kept
  diagonal):

  =====================  ======================
  ``gaussian``           ``exp(−z)``
  ``multiquadric``       ``√(1 + z)``
  ``inverse_multiquadric`` ``1/√(1 + z)``
  ``cauchy``             ``1/(1 + z)``
  =====================  ======================

Evaluation is one compiled loop over inputs and columns
(:func:`onlinesparse.core.basis.evaluate_rows`): the distance ``‖x − c‖²`` is summed directly
(no ``‖c‖² − 2cᵀx + ‖x‖²`` cancellation) and the per-sample call costs about a microsecond
instead of a dozen NumPy calls. The order of the columns matters to the caller (the window
keeps model columns first, candidates after), so the
class supports the swaps and truncations the window needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from onlinesparse import core

__all__ = ["KERNELS", "BasisSpec", "Basis", "FrozenBasis", "radial_profile"]

# Column kinds, by the codes of the compiled core (kernels are numbered from 2 there, so
# that a kind < 2 means "not radial").
CONSTANT, LINEAR = core.CONSTANT, core.LINEAR
KERNELS: dict[str, int] = {
    "gaussian": core.GAUSSIAN,
    "multiquadric": core.MULTIQUADRIC,
    "inverse_multiquadric": core.INVERSE_MULTIQUADRIC,
    "cauchy": core.CAUCHY,
}
_KIND_NAMES = {CONSTANT: "constant", LINEAR: "linear"} | {v: k for k, v in KERNELS.items()}


def radial_profile(kind: int, z: np.ndarray) -> np.ndarray:
    """φ(z) for one radial type, Orr A.3, on scaled squared distances ``z = ‖x − c‖²/r²``.

    The formulas are those of the table above, compiled once in
    :func:`onlinesparse.core.profile` (which the per-sample evaluation shares).
    """
    if kind not in _KIND_NAMES or kind < 2:
        raise ValueError(f"unknown radial kind {kind}")
    z = np.asarray(z, dtype=float)
    out = np.empty_like(z)
    core.profile_array(int(kind), np.ascontiguousarray(z).ravel(), out.reshape(-1))
    return out


@dataclass(frozen=True)
class BasisSpec:
    """One column of a design matrix, as a user or the buffer manager describes it.

    Use the constructors :meth:`constant`, :meth:`linear` and :meth:`radial`.
    """

    kind: str
    centre: tuple[float, ...] = ()
    radius: float = 1.0
    feature: int = -1
    metric: tuple[float, ...] = ()  # (empty: isotropic)

    @staticmethod
    def constant() -> BasisSpec:
        return BasisSpec("constant")

    @staticmethod
    def linear(feature: int) -> BasisSpec:
        if feature < 0:
            raise ValueError(f"a linear basis function needs an input index ≥ 0, got {feature}")
        return BasisSpec("linear", feature=int(feature))

    @staticmethod
    def radial(centre: Sequence[float] | np.ndarray, radius: float,
               kind: str = "gaussian",
               metric: Sequence[float] | np.ndarray | None = None) -> BasisSpec:
        """A radial column; ``metric`` (optional) weighs the inputs' squared differences,
        one positive weight per input, rescaled here to average 1 so that ``radius``
        keeps its meaning."""
        if kind not in KERNELS:
            raise ValueError(f"unknown kernel {kind!r}; choose one of {sorted(KERNELS)}")
        # Plain Python checks: the buffer manager builds one spec per proposal, and NumPy's
        # per-call overhead on ten numbers cost more than the rest of the proposal.
        values = tuple(np.asarray(centre, dtype=float).ravel().tolist())
        if not all(map(math.isfinite, values)):
            raise ValueError("a kernel centre must be finite")
        radius = float(radius)
        if not (math.isfinite(radius) and radius > 0.0):
            raise ValueError(f"a kernel radius must be positive and finite, got {radius}")
        return BasisSpec(kind, values, radius, metric=_normalised_metric(metric, len(values)))


def _radius(inv_r2: np.ndarray) -> np.ndarray | float:
    """The radius of a column (rows of ``1/r²`` per input: of each row), ``1/√(mean 1/r²)``:
    the radius of the isotropic column of the same mean width."""
    return 1.0 / np.sqrt(inv_r2.mean(axis=-1))


def _normalised_metric(metric: Sequence[float] | np.ndarray | None, d: int
                       ) -> tuple[float, ...]:
    """``metric`` as d positive weights averaging 1, or () for the isotropic metric."""
    if metric is None:
        return ()
    weights = np.asarray(metric, dtype=float).ravel()
    if d == 0 and weights.size == 0:  # (no inputs: nothing to weigh)
        return ()
    if weights.shape != (d,) or not np.all(np.isfinite(weights)) or not np.all(weights > 0):
        raise ValueError(f"a kernel metric must be {d} positive finite weights")
    weights = weights / weights.max()  # (first: the mean of weights near 1e308 overflows)
    weights = weights / weights.mean()
    if np.allclose(weights, 1.0, rtol=0.0, atol=1e-12):
        return ()
    return tuple(weights.tolist())


class Basis:
    """An ordered, growable set of basis functions over ``n_features`` inputs.

    Parameters
    ----------
    n_features
        Input dimension ``d``. Every radial centre has this length.
    capacity
        Initial storage; it doubles when exceeded.

    Examples
    --------
    >>> basis = Basis(n_features=1)
    >>> basis.append(BasisSpec.constant())
    0
    >>> basis.append(BasisSpec.radial([0.0], radius=1.0))
    1
    >>> basis.evaluate(np.array([1.0])).round(4).tolist()
    [1.0, 0.3679]
    """

    def __init__(self, n_features: int, capacity: int = 16) -> None:
        if n_features < 0:
            raise ValueError("n_features must be ≥ 0")
        self.n_features = int(n_features)
        capacity = max(int(capacity), 1)
        self._kind = np.zeros(capacity, dtype=np.int8)
        self._centres = np.zeros((capacity, self.n_features))
        # 1/r² per input: row k is column k's diagonal metric over r² (its mean is 1/r²);
        # one entry at least, so that a column over no inputs keeps its radius
        self._inv_r2 = np.ones((capacity, max(self.n_features, 1)))
        self._feature = np.full(capacity, -1, dtype=np.int64)
        self.size = 0

    # -- pickling: only the columns in use ------------------------------------------------
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in ("_kind", "_centres", "_inv_r2", "_feature"):
            state[name] = getattr(self, name)[: self.size].copy()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.size == 0:  # keep room for one column so that append can index
            self._grow(1)

    # -- structure ------------------------------------------------------------------------
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(kinds, centres, 1/r² per input, input)`` of every column: the description
        the compiled core evaluates and swaps, in its order."""
        return self._kind, self._centres, self._inv_r2, self._feature

    def __len__(self) -> int:
        return self.size

    def _grow(self, needed: int) -> None:
        capacity = len(self._kind)
        if needed <= capacity:
            return
        new_capacity = max(needed, 2 * capacity)
        self._kind = np.resize(self._kind, new_capacity)
        centres = np.zeros((new_capacity, self.n_features))
        centres[: self.size] = self._centres[: self.size]
        self._centres = centres
        inv_r2 = np.ones((new_capacity, self._inv_r2.shape[1]))
        inv_r2[: self.size] = self._inv_r2[: self.size]
        self._inv_r2 = inv_r2
        self._feature = np.resize(self._feature, new_capacity)

    def reserve(self, capacity: int) -> None:
        """Make room for ``capacity`` columns now (the arrays otherwise double as needed)."""
        self._grow(int(capacity))

    def append(self, spec: BasisSpec) -> int:
        """Add a column at the end and return its position."""
        if spec.kind == "constant":
            kind, centre, inv_r2, feature = CONSTANT, None, 1.0, -1
        elif spec.kind == "linear":
            if spec.feature >= self.n_features:
                raise ValueError(
                    f"linear basis on input {spec.feature} but there are {self.n_features} inputs"
                )
            kind, centre, inv_r2, feature = LINEAR, None, 1.0, spec.feature
        elif spec.kind in KERNELS:
            if len(spec.centre) != self.n_features:
                raise ValueError(
                    f"centre has {len(spec.centre)} coordinates, expected {self.n_features}"
                )
            kind, centre = KERNELS[spec.kind], spec.centre
            # (a spec built directly, not by BasisSpec.radial, is checked here too)
            metric = _normalised_metric(spec.metric or None, self.n_features)
            inv_r2 = (np.asarray(metric) if metric else 1.0) / spec.radius ** 2
            feature = -1
        else:
            raise ValueError(f"unknown basis kind {spec.kind!r}")
        return self._put(kind, centre, inv_r2, feature)

    def append_radial(self, centre: np.ndarray, radius: float, kind: str,
                      metric: np.ndarray | None = None) -> int:
        """:meth:`append` of ``BasisSpec.radial(centre, radius, kind, metric)`` without
        building the spec, for a caller whose centre (``n_features`` finite numbers),
        radius, kind and metric (None, or positive weights averaging 1) are already valid
        (the buffer manager, many times a second)."""
        return self._put(KERNELS[kind], centre, _scaled(metric, radius), -1)

    def put_radial(self, i: int, centre: np.ndarray, radius: float, kind: str,
                   metric: np.ndarray | None = None) -> None:
        """Overwrite column ``i`` with a radial column (as :meth:`append_radial`)."""
        if not 0 <= i < self.size:
            raise IndexError(i)
        self._put(KERNELS[kind], centre, _scaled(metric, radius), -1, i)

    def _put(self, kind: int, centre: object, inv_r2: float | np.ndarray, feature: int,
             i: int | None = None) -> int:
        if i is None:
            i = self.size
            self._grow(i + 1)
            self.size += 1
        self._kind[i] = kind
        self._centres[i] = 0.0 if centre is None else centre
        self._inv_r2[i] = inv_r2
        self._feature[i] = feature
        return i

    def truncate(self, size: int) -> None:
        """Drop every column from position ``size`` on."""
        if not 0 <= size <= self.size:
            raise ValueError(f"cannot truncate a basis of {self.size} columns to {size}")
        self.size = size

    def spec(self, i: int) -> BasisSpec:
        """The :class:`BasisSpec` of column ``i``."""
        if not 0 <= i < self.size:
            raise IndexError(i)
        kind = int(self._kind[i])
        if kind == CONSTANT:
            return BasisSpec.constant()
        if kind == LINEAR:
            return BasisSpec.linear(int(self._feature[i]))
        radius = float(_radius(self._inv_r2[i]))
        metric = _normalised_metric(self._inv_r2[i, : self.n_features] * radius ** 2,
                                    self.n_features)
        return BasisSpec(_KIND_NAMES[kind], tuple(self._centres[i].tolist()), radius,
                         metric=metric)

    @property
    def kinds(self) -> list[str]:
        return [_KIND_NAMES[int(k)] for k in self._kind[: self.size]]

    @property
    def centres(self) -> np.ndarray:
        """Centres of all columns (rows of zeros for constant and linear columns)."""
        return self._centres[: self.size]

    @property
    def radii(self) -> np.ndarray:
        """Radii of all columns (1 for constant and linear columns): ``1/√(mean 1/r²)``
        over the inputs, the radius of an isotropic column."""
        return _radius(self._inv_r2[: self.size])

    @property
    def metrics(self) -> np.ndarray:
        """Each column's weights of the inputs (rows averaging 1; all 1 when isotropic)."""
        return self._inv_r2[: self.size, : self.n_features] * (self.radii ** 2)[:, None]

    @property
    def radial_mask(self) -> np.ndarray:
        return self._kind[: self.size] >= 2

    # -- evaluation -----------------------------------------------------------------------
    def evaluate(self, x: np.ndarray, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Values of columns ``start:stop`` at one input ``x`` of shape ``(d,)``.

        One compiled loop over the columns (:func:`onlinesparse.core.evaluate_rows`): at
        a hundred columns, vectorised NumPy spent most of its time in call overhead.
        """
        stop = self.size if stop is None else stop
        x = np.asarray(x, dtype=float)
        out = np.empty(stop - start)
        core.evaluate_rows(self._kind, self._centres, self._inv_r2, self._feature,
                             x.reshape(1, -1), start, stop, out.reshape(1, -1))
        return out

    def evaluate_many(self, X: np.ndarray, start: int = 0, stop: int | None = None
                      ) -> np.ndarray:
        """Design matrix of columns ``start:stop`` at inputs ``X`` of shape ``(N, d)``."""
        stop = self.size if stop is None else stop
        X = np.ascontiguousarray(np.atleast_2d(np.asarray(X, dtype=float)))
        out = np.empty((X.shape[0], stop - start))
        core.evaluate_rows(self._kind, self._centres, self._inv_r2, self._feature, X,
                             start, stop, out)
        return out


@dataclass(frozen=True, eq=False)
class FrozenBasis:
    """A model frozen as it stood: copies of its M basis functions' arrays
    (``core.basis.evaluate_rows``'s) and weights — a
    :class:`~onlinesparse.stream.concepts.Predictor` of ``f(x) = h(x)ᵀw``, O(M·d)."""

    kinds: np.ndarray
    centres: np.ndarray
    inv_r2: np.ndarray
    features: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        # (one column, M × 1: core.basis.fit reads a target's column of W)
        object.__setattr__(self, "weights", np.ascontiguousarray(
            self.weights, dtype=float).reshape(len(self.kinds), 1))

    @classmethod
    def of(cls, basis: Basis, weights: np.ndarray) -> FrozenBasis | None:
        """The first ``len(weights)`` columns of ``basis`` with ``weights`` (None when
        there are none)."""
        m = len(weights)
        if not m:
            return None
        kinds, centres, inv_r2, features = (a[:m].copy() for a in basis.arrays())
        return cls(kinds, centres, inv_r2, features, np.array(weights, dtype=float))

    def predict(self, x: np.ndarray) -> float:
        """``h(x)ᵀw``, O(M·d)."""
        return core.predict_mean(x, self.kinds, self.centres, self.inv_r2, self.features,
                                 self.weights)


def _scaled(metric: np.ndarray | None, radius: float) -> float | np.ndarray:
    """A column's 1/r² per input from its radius and metric (None: isotropic)."""
    inverse = 1.0 / (radius * radius)
    return inverse if metric is None else metric * inverse
