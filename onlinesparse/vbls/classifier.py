"""Variational Bayesian least squares binary classification (Jaakkola–Jordan bound)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from river import base

from onlinesparse._blas import single_blas_thread
from onlinesparse._validation import Versioned, check_choice, check_int, check_real
from onlinesparse.features import FeatureMap, as_rows
from onlinesparse.orr.kernels import KERNELS, BasisSpec
from onlinesparse.orr.window import WindowStatistics
from onlinesparse.vbls import engine
from onlinesparse.vbls._many import proba_frame

__all__ = ["VBLSClassifier"]

# Output noise of the Jaakkola–Jordan pseudo-regression at ξ = 0: 1/(2φ(0)) = 4.
_JJ_NOISE_AT_ZERO = 4.0


class _Unseen:
    """The marker of a class not seen yet, distinct from every label (``None`` included).
    It pickles by reference to the module's one instance, so a copied or unpickled model
    still recognises it by identity."""

    def __reduce__(self) -> str:
        return "_UNSEEN"

    def __repr__(self) -> str:
        return "<unseen class>"


_UNSEEN = _Unseen()


def _label(y: object) -> Hashable:
    """A label as stored: NumPy scalars as Python values; unhashable labels and labels that
    are not equal to themselves (a NaN of any float type, which could never be recognised
    again) or infinite raise ``ValueError`` naming the label."""
    if isinstance(y, np.bool_):
        return bool(y)
    if isinstance(y, np.generic):
        y = y.item()
    try:
        hash(y)
    except TypeError as exc:
        raise ValueError(f"a label must be hashable, got {y!r}") from exc
    try:
        itself = bool(y == y)
    except Exception:  # (an == that raises or returns something without a truth value)
        itself = False
    if not itself:
        raise ValueError(f"the label {y!r} is not equal to itself (NaN?): it could never be "
                         "recognised again")
    if isinstance(y, float) and not math.isfinite(y):
        raise ValueError(f"a label must not be {y!r}")
    return y  # type: ignore[return-value]


class VBLSClassifier(Versioned, base.Classifier):
    """Variational Bayesian least squares (VBLS) binary classifier.

    Ting, D'Souza, Vijayakumar and Schaal section 4.6: the output passes through a logistic
    link, ``P(y | z) = g(y Σ_m z_m)``, and the Jaakkola–Jordan bound on ``g`` turns each
    pattern into a Gaussian pseudo-observation, so the EM sweeps of VBLS regression (with the
    ARD prior of 4.2 or the shared prior of 4.1, section 4.6.1, eq. 4.15) apply unchanged
    except for the E-step (see :mod:`onlinesparse.vbls.engine`). The basis is the inputs plus a
    bias, or, given ``centres``, a bias plus one kernel per centre (the VBLS-RVM of 5.2).

    Memory is a window of the last ``window_size`` patterns. The variational parameters ``ξ_i``
    of every pattern in it change with every sweep and make the per-pattern weights of the
    pseudo-regression change too, so a sweep reads the stored rows: O(window_size · M) per
    sweep, bounded by the window whatever the length of the stream.

    Labels may be any hashable values, ``None`` included (two of them); a NaN label of any
    float type is refused, as it could never be recognised again. The *negative* class
    (sign −1) is the smaller of the two labels when they can be ordered (False, 0, "a"…),
    otherwise the first seen. Before two labels are seen the model predicts
    {False: ½, True: ½} (river's binary convention) or, after one non-boolean label, that
    label with probability 1.

    Parameters
    ----------
    prior
        ``"ard"``, ``"shared"`` or ``"none"`` (see :class:`~onlinesparse.vbls.VBLSRegressor`).
    sweeps_per_sample
        EM sweeps after each ``learn_one``.
    window_size
        Number of patterns kept.
    centres
        ``None`` for linear basis functions; otherwise a sequence of feature dicts, one
        kernel centre each (every feature of the stream must appear in each).
    radius
        Kernel width r, ``φ(x) = exp(−‖x − c‖²/r²)`` for the Gaussian kernel.
    kernel
        ``"gaussian"``, ``"multiquadric"``, ``"inverse_multiquadric"`` or ``"cauchy"``.
    precision_cap
        Largest ratio of a weight's prior precision to its data precision (engine module).
        The default 1 keeps every weight at least half its unregularised size: in
        classification the Jaakkola–Jordan output noise (at least 4) cannot move into the
        branches, so the factorised posterior asks a unit for a t-statistic of order
        √((4 + Σψ)/ψ_zm) ~ √M and would prune every kernel of an RVM; at the cap a pruned
        unit acts as a ridge penalty instead (Ripley: 100 % of the kernels pruned with cap
        100, test error about 20 %; with cap 1 a handful stay relevant and the error is
        below 10 %, see ``benchmarks/vbls_classify.py``).
    relevance_threshold, tol, max_sweeps, strict
        As for :class:`~onlinesparse.vbls.VBLSRegressor`; a unit at the cap counts as
        irrelevant.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinesparse.vbls import VBLSClassifier
    >>> model = preprocessing.StandardScaler() | VBLSClassifier()
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    Accuracy: 8...%
    >>> model.predict_proba_one({"empty_server_form_handler": 1.0})
    {False: ..., True: ...}
    """

    def __init__(self, prior: str = "ard", sweeps_per_sample: int = 1, window_size: int = 500,
                 centres: Sequence[Mapping[Hashable, float]] | None = None,
                 radius: float = 1.0, kernel: str = "gaussian", precision_cap: float = 1.0,
                 relevance_threshold: float = 1.0, tol: float = 1e-8,
                 max_sweeps: int = 20_000, strict: bool = False) -> None:
        check_choice("prior", prior, engine.PRIORS)
        check_int("window_size", window_size)
        check_int("sweeps_per_sample", sweeps_per_sample, 0)
        check_choice("kernel", kernel, KERNELS)
        check_real("radius", radius, 0.0, low_open=True)
        check_real("precision_cap", precision_cap, 0.0, low_open=True)
        self.prior = prior
        self.sweeps_per_sample = sweeps_per_sample
        self.window_size = window_size
        self.centres = centres
        self.radius = radius
        self.kernel = kernel
        self.precision_cap = precision_cap
        self.relevance_threshold = relevance_threshold
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.strict = strict
        self._features = FeatureMap(strict=strict)
        self._stats: WindowStatistics | None = None
        self._state: engine.VBLSState | None = None
        # Oldest first, aligned with the window's stored patterns.
        self._signs = np.zeros(0)
        self._xi = np.zeros(0)
        # [negative label, positive label]; _UNSEEN until seen (a label may be None).
        self._classes: list[Hashable] = [_UNSEEN, _UNSEEN]

    @property
    def _multiclass(self) -> bool:
        return False

    # -- internals --------------------------------------------------------------------------
    def _new_statistics(self, features: FeatureMap) -> WindowStatistics:
        names = features.names
        stats = WindowStatistics(len(names), memory="window", size=self.window_size)
        stats.add_column(BasisSpec.constant())
        stats.promote(0)
        if self.centres is None:
            specs = [BasisSpec.linear(i) for i in range(len(names))]
        else:
            specs = []
            for centre in self.centres:
                missing = [n for n in names if n not in centre]
                if missing:
                    raise ValueError(f"feature {missing[0]!r} is missing from a centre")
                specs.append(BasisSpec.radial([float(centre[n]) for n in names], self.radius,
                                              self.kernel))
        for spec in specs:
            position = stats.n_columns
            stats.add_column(spec)
            stats.promote(position)
        return stats

    def _encode(self, label: Hashable) -> tuple[list[Hashable], float, bool]:
        """Classes after seeing ``label``, its sign, and whether the old signs flip."""
        classes = list(self._classes)
        if label in classes:
            return classes, (-1.0 if classes[0] == label else 1.0), False
        seen = [c for c in classes if c is not _UNSEEN]
        if not seen:
            positive = label is True
            classes = [_UNSEEN, label] if positive else [label, _UNSEEN]
            return classes, (1.0 if positive else -1.0), False
        if len(seen) == 2:
            raise ValueError(
                f"label {label!r} is a third class; the classifier is binary ({seen[0]!r}, "
                f"{seen[1]!r})")
        old = seen[0]
        try:
            new_is_negative = bool(label < old)  # type: ignore[operator]
        except TypeError:
            new_is_negative = False
        old_was_negative = classes[0] is not _UNSEEN
        if new_is_negative:
            classes = [label, old]
        else:
            classes = [old, label]
        flip = old_was_negative == new_is_negative
        return classes, (-1.0 if new_is_negative else 1.0), flip

    def _push(self, stats: WindowStatistics, vector: np.ndarray, sign: float) -> None:
        if stats.is_full:
            stats.pop_oldest()
            self._signs = self._signs[1:]
            self._xi = self._xi[1:]
        row = stats.push(vector, sign)[: stats.n_model]
        if self._state is not None:
            # Warm start of the new pattern's ξ: ξ² = ⟨(1ᵀz)²⟩ under the current posterior.
            mean = float(row @ self._state.weights)
            var = float(self._state.branch_noise.sum()
                        + (row * row) @ self._state.weight_variances)
            xi = math.sqrt(mean * mean + var)
        else:
            xi = 0.0
        self._signs = np.append(self._signs, sign)
        self._xi = np.append(self._xi, xi)
        # Adding and subtracting patterns accumulates rounding: a full window recomputes its
        # statistics from the stored rows a column at a time, about once per window for
        # each (WindowStatistics.refresh_step; FGCV 3.2 point 5).
        stats.refresh_step()

    def _sweep(self, n: int) -> float:
        stats, state = self._stats, self._state
        change = 0.0
        if n <= 0:
            return change
        rows = stats.stored_rows()
        gram_diag = np.diagonal(stats.gram_model).copy()
        for _ in range(n):
            change, self._xi = engine.sweep_classification(
                state, rows, self._signs, self._xi, gram_diag, self.prior, self.precision_cap)
        return change

    def _learn(self, features: FeatureMap, vector: np.ndarray, label: Hashable) -> None:
        classes, sign, flip = self._encode(label)
        if self._stats is None:
            self._stats = self._new_statistics(features)
        if flip:
            # y → −y with b → −b leaves the model unchanged (ξ is even).
            self._signs = -self._signs
            if self._state is not None:
                self._state.weights = -self._state.weights
        self._classes = classes
        self._push(self._stats, vector, sign)
        if self._state is None:
            self._state = engine.initial_state(self._stats.n_model, _JJ_NOISE_AT_ZERO,
                                               self.prior, output_noise=False)

    # -- river API --------------------------------------------------------------------------
    @single_blas_thread
    def learn_one(self, x: dict, y: Hashable) -> None:
        """Add one pattern to the window and run ``sweeps_per_sample`` EM sweeps.

        Bad input raises ``ValueError`` naming the feature and leaves the model unchanged.
        """
        label = _label(y)
        self._encode(label)  # raises on a third class before anything changes
        features = self._features
        if self._stats is None:
            # The first sample fixes the input space, and the centres are checked against it:
            # work on a rehearsed copy of the map until everything is valid.
            features, (vector,) = features.rehearse([x])
            self._new_statistics(features)  # validates the centres before anything changes
            self._learn(features, vector, label)
            self._features = features
        else:
            vector = features.transform(x, learning=True)
            self._learn(features, vector, label)
            features.commit(vector, x)
        self._sweep(self.sweeps_per_sample)

    @single_blas_thread
    def learn_many(self, X: Iterable[Mapping[Hashable, object]] | object,
                   y: Iterable[object]) -> None:
        """Add many patterns (the last ``window_size`` stay), then sweep to convergence.

        ``X`` is a pandas ``DataFrame`` or an iterable of feature dicts. Every row is
        validated before anything changes.
        """
        rows = as_rows(X)
        labels = [_label(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]
        if len(rows) != len(labels):
            raise ValueError(f"{len(rows)} rows of features but {len(labels)} labels")
        if not rows:
            return
        distinct = {c for c in self._classes if c is not _UNSEEN}
        for label in labels:
            distinct.add(label)
            if len(distinct) > 2:
                raise ValueError(f"label {label!r} is a third class; the classifier is binary")
        features, vectors = self._features.rehearse(rows)
        if self._stats is None:
            self._new_statistics(features)
        for vector, label in zip(vectors, labels, strict=True):
            self._learn(features, vector, label)
        self._features = features
        self.refine()

    @single_blas_thread
    def refine(self, max_sweeps: int | None = None) -> int:
        """Sweep until the relative change of the weights stays below ``tol`` for three
        sweeps, or ``max_sweeps``; returns the number of sweeps run."""
        if self._state is None:
            return 0
        limit = self.max_sweeps if max_sweeps is None else int(max_sweeps)
        calm = 0
        for n in range(1, limit + 1):
            calm = calm + 1 if self._sweep(1) < self.tol else 0
            if calm >= 3:
                return n
        return limit

    def predict_proba_one(self, x: dict) -> dict[Hashable, float]:
        vector = self._features.transform(x)
        negative, positive = self._classes
        if self._state is None:
            return {False: 0.5, True: 0.5}
        row = self._stats.basis.evaluate(vector, 0, self._stats.n_model)
        p = engine.predictive_probability(self._state, row)
        if not math.isfinite(p):
            raise self._features.overflow(vector)
        if negative is not _UNSEEN and positive is not _UNSEEN:
            return {negative: 1.0 - p, positive: p}
        only = negative if negative is not _UNSEEN else positive
        if isinstance(only, bool):
            return {False: 1.0 - p, True: p}
        return {only: 1.0}

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        """Class probabilities of every row of ``X``, as river's ``predict_proba_many``: a
        ``DataFrame`` on ``X``'s index with one column per class, exactly
        :meth:`predict_proba_one` row by row; nothing is learned."""
        return proba_frame(self.predict_proba_one, X)

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        """The most probable class of every row of ``X`` (river's ``predict_many``), exactly
        ``predict_one`` row by row."""
        rows = as_rows(X)
        labels = [self.predict_one(dict(row)) for row in rows]
        index = X.index if isinstance(X, pd.DataFrame) else pd.RangeIndex(len(rows))
        return pd.Series(labels, index=index, dtype=object)

    # -- inspection -------------------------------------------------------------------------
    def _ratios(self) -> np.ndarray:
        if self._state is None:
            return np.zeros(0)
        return engine.precision_ratio(self._state, np.diagonal(self._stats.gram_model))

    def basis_relevance(self) -> list[float]:
        """``1/(1 + ratio_m)`` for every basis function (bias first), as in
        :meth:`VBLSRegressor.input_relevance`."""
        return (1.0 / (1.0 + self._ratios())).tolist()

    def input_relevance(self) -> dict[Hashable, float]:
        """Every input → ``1/(1 + ratio_m)`` of its weight for linear basis functions (see
        :meth:`VBLSRegressor.input_relevance`). With kernels every input enters every basis
        function, so each input gets 1.0; :meth:`basis_relevance` ranks the centres."""
        names = self._features.names
        if self._state is None or self.centres is not None:
            return {name: 1.0 for name in names}
        return self._features.to_dict(1.0 / (1.0 + self._ratios()[1:]))

    def relevance(self) -> dict[Hashable, bool]:
        """Every input → relevant (linear basis: precision ratio below
        ``relevance_threshold``; kernels: always True)."""
        limit = 1.0 / (1.0 + self.relevance_threshold)
        return {name: bool(v > limit) for name, v in self.input_relevance().items()}

    def diagnostics(self) -> dict[str, float]:
        """``n_basis`` relevant basis functions (bias included), ``noise_std`` the latent noise
        ``√Σψ_zm``, ``n_patterns``, ``n_sweeps``, ``last_change``, ``mean_xi``."""
        if self._state is None:
            return {"n_basis": 0.0, "noise_std": 0.0, "n_patterns": 0.0, "n_sweeps": 0.0,
                    "last_change": 0.0, "mean_xi": 0.0}
        state = self._state
        return {
            "n_basis": float(np.sum(self._ratios() < self.relevance_threshold)),
            "noise_std": math.sqrt(float(state.branch_noise.sum())),
            "n_patterns": float(self._stats.n_stored),
            "n_sweeps": float(state.n_sweeps),
            "last_change": float(state.last_change) if math.isfinite(state.last_change)
            else 0.0,
            "mean_xi": float(self._xi.mean()) if len(self._xi) else 0.0,
        }
