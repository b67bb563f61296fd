"""The streaming sparse RBF regressor for several targets that share one basis."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable

import numpy as np
import pandas as pd
from river import base, proba

from onlinesparse import core
from onlinesparse._distributions import gaussian
from onlinesparse.features import as_rows, as_target_rows, as_targets
from onlinesparse.orr.streaming import StreamingRBF

__all__ = ["SparseRBFMultiTargetRegressor"]


class SparseRBFMultiTargetRegressor(StreamingRBF, base.MultiTargetRegressor):
    """:class:`~onlinesparse.SparseRBFRegressor` for K targets predicted from the same
    inputs — a robot's joint torques from (q, q̇, q̈), several muscles' EMG and a hand's
    velocity from the same neural channels — with one basis set for all of them.

    Orr's framework shares naturally: with one design matrix H and one Λ, the variance
    matrix ``S = (HᵀH + Λ)⁻¹`` is the same for every target and only ``W = SHᵀY`` has a
    column per target. So there is one window, one S, one Gram matrix, one buffer manager
    and one pruner, and a target costs a column of W: a pattern updates S once (Orr A.8,
    A.11) and each column by the same vector, O(M² + M·K) rather than K·O(M²).

    Model selection is shared: GCV (and LOO, UEV, FPE, BIC) is summed over the targets,
    each in units of its own noise level (weight ``ωₖ ∝ 1/σₖ²``), so that no target's unit
    decides the basis; Orr A.11's optimal λⱼ and FGCV's candidate optimum keep their
    single-target form with the targets' quadratic terms summed
    (``core.criteria.basis_quantities``, ``candidate_optima``). Each target keeps its own
    noise level, interval calibration, errors' level, experts (the running mean and the
    last target) and prior shrink, and is equivariant to its own unit and origin. One
    target is :class:`~onlinesparse.SparseRBFRegressor`: the same calls, the same
    predictions.

    The memory is shared: ``memory="adaptive"`` watches every target's errors and cuts the
    window on any target's alarm, to the earliest change point the alarms give. Concepts
    (:mod:`onlinesparse.stream.concepts`) are one target's frozen model and are not kept.

    Missing targets: the first sample fixes the targets; a later ``y`` without one of
    them, with another, or with a value that is not a real number is refused with a
    ``ValueError`` naming the target, the model unchanged — a sensor that dropped out
    would otherwise enter the shared statistics as a target of 0. A replay decides what
    to do with such a row (``onlinesparse replay``'s ``--missing``).

    Parameters
    ----------
    All of :class:`~onlinesparse.SparseRBFRegressor`'s except ``concepts``; each applies to
    the shared model, or to each target where it is a target's (``coverage``,
    ``last_target``, ``error_threshold``: a sample is proposed as a centre when any
    target's error exceeds it).

    Examples
    --------
    >>> import math, random
    >>> from onlinesparse import SparseRBFMultiTargetRegressor
    >>> model = SparseRBFMultiTargetRegressor(max_basis=20, window_size=200)
    >>> rng = random.Random(0)
    >>> for _ in range(300):
    ...     x = {"q": rng.uniform(-2, 2)}
    ...     model.learn_one(x, {"tau1": math.sin(x["q"]), "tau2": 1000 * x["q"] ** 2})
    >>> prediction = model.predict_one({"q": 0.5})
    >>> sorted(prediction), round(prediction["tau1"], 1)
    (['tau1', 'tau2'], 0.5)
    """

    def __init__(self, max_basis: int = 100, window_size: int = 1000, memory: str = "adaptive",
                 kernel: str = "gaussian",
                 radii: tuple[float, ...] | None = None, n_candidates: int = 10,
                 evaluations_per_sample: int = 1, candidate_every: int = 3,
                 linear: bool = True, novelty: float = 0.25, error_threshold: float = 2.0,
                 noise_every: int = 1, strict: bool = False, metric: str = "gradient",
                 coverage: float = 0.95, last_target: bool = True,
                 horizon: int | None = None):
        super().__init__(max_basis=max_basis, window_size=window_size, memory=memory,
                         kernel=kernel, radii=radii, n_candidates=n_candidates,
                         evaluations_per_sample=evaluations_per_sample,
                         candidate_every=candidate_every, linear=linear, novelty=novelty,
                         error_threshold=error_threshold, noise_every=noise_every,
                         strict=strict, metric=metric, concepts=0, coverage=coverage,
                         last_target=last_target, horizon=horizon)
        self._targets: list[Hashable] | None = None

    @classmethod
    def _unit_test_params(cls) -> Iterable[dict]:
        yield {}

    # Each target's first value: a target enters the window as its difference from it and
    # every prediction adds it back (equivariance to a shift of each target).
    _references: np.ndarray | None = None

    @property
    def targets(self) -> tuple[Hashable, ...]:
        """The targets, in the order the model keeps them (fixed by the first sample)."""
        return () if self._targets is None else tuple(self._targets)

    def learn_one(self, x: dict, y: dict) -> None:  # type: ignore[override]
        """Learn one sample; ``y`` must hold every target (class docstring)."""
        values, names = as_targets(y, self._targets)
        features = self._features
        vector = features.transform_known(x)
        known = vector is not None
        if not known:
            vector = features.transform(x, learning=True)
        if self._model is None:
            self._start(len(vector), len(names))
            self._targets, self._references = list(names), values.copy()
        targets = self._scratch().targets
        np.subtract(values, self._references, out=targets)
        self._learn(vector, x, known, targets)

    def learn_many(self, X: pd.DataFrame | Iterable[dict],
                   Y: pd.DataFrame | Iterable[dict]) -> None:
        """Add many samples, then bring the model to its batch optimum on its window (as
        :meth:`SparseRBFRegressor.learn_many <onlinesparse.SparseRBFRegressor.learn_many>`):
        every row is validated first, a bad one refusing the batch with nothing changed."""
        rows, targets = as_target_rows(X, Y, self._targets)
        self._features.rehearse(rows)  # (validates every row on a copy)
        for row, y in zip(rows, targets, strict=True):
            self.learn_one(row, y)
        self._refine_to_convergence()

    def predict_one(self, x: dict, with_dist: bool = False
                    ) -> dict[Hashable, float] | dict[Hashable, proba.Gaussian]:
        """Each target's prediction (or its Gaussian predictive distribution); ``{}``
        before the first sample, which names the targets."""
        vector = self._features.transform(x)
        if self._targets is None:
            return {}
        means, variances = self._predict(vector, with_dist)
        means = means + self._references
        if not with_dist:
            return dict(zip(self._targets, means.tolist(), strict=True))
        return {name: gaussian(float(m), float(v))
                for name, m, v in zip(self._targets, means, variances, strict=True)}

    def predict_many(self, X: pd.DataFrame) -> pd.DataFrame:
        """Each target's prediction for every row of ``X``: a column per target."""
        rows = [self.predict_one(row) for row in as_rows(X)]
        return pd.DataFrame(rows, index=X.index, columns=list(self.targets), dtype=float)

    def basis_functions(self) -> list[dict]:
        """Every basis function of the model: kind, centre, radius, metric, λ and its weight
        for each target."""
        if self.model is None:
            return []
        weights = self.model.weights
        return [{**self._basis_function(j),
                 "weights": dict(zip(self._targets, weights[j].tolist(), strict=True))}
                for j in range(self.model.size)]

    def diagnostics(self) -> dict[str, float]:
        """The shared model's numbers (``n_basis``, ``gcv``, ``effective_parameters``, …,
        all O(M) or less) and ``noise_std``, the root mean of the targets' noise variances
        in units of each target's variance (each target's own: :meth:`target_diagnostics`)."""
        if self.model is None:
            return {"n_basis": 0.0}
        return {**self._shared_diagnostics(), "noise_std": self._relative_noise()}

    def _relative_noise(self) -> float:
        window = self.model.window
        if not window.count:
            return 1.0
        ratios = [self._noise_level(k) / max(core.target_variance(
            window.record, window.targets.moments, k), 1e-300) for k in range(self.n_targets)]
        return math.sqrt(float(np.mean(ratios)))

    def target_diagnostics(self) -> dict[Hashable, dict[str, float]]:
        """Each target's numbers: ``noise_std`` (in its unit), ``calibration``, ``level``,
        ``interval_calibration``, ``model_weight`` (the stream layer's, per target)."""
        if self.model is None:
            return {}
        return {name: self._target_diagnostics(k) for k, name in enumerate(self._targets)}
