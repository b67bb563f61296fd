"""VBLS for several targets predicted from the same inputs: the window statistics shared, a
posterior per target."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

import numpy as np
import pandas as pd
from river import base, proba

from onlinesparse import core
from onlinesparse._blas import single_blas_thread
from onlinesparse.features import FeatureMap, as_rows, as_target_rows, as_targets
from onlinesparse.orr.window import WindowStatistics
from onlinesparse.stream.layer import after_learning
from onlinesparse.stream.memory import AdaptiveMemory, Horizon
from onlinesparse.stream.refit import RidgeView
from onlinesparse.vbls.regressor import MEMORY_PER_WEIGHT, VBLSRegressor

__all__ = ["VBLSMultiTargetRegressor"]


class _TargetColumn:
    """Target k's face of window statistics shared by K targets: what a
    :class:`~onlinesparse.vbls.regressor.VBLSRegressor` reads of its statistics (``G`` and
    the counts shared, ``c``, ``yᵀy``, ``Σy`` and the moments the target's own)."""

    def __init__(self, stats: WindowStatistics, k: int) -> None:
        self.stats, self.k = stats, k

    def __getattr__(self, name: str) -> object:  # (G, counts, the record: shared)
        if name in ("stats", "k") or name.startswith("__"):  # (not set yet: unpickling)
            raise AttributeError(name)
        return getattr(self.stats, name)

    @property
    def cross_y_model(self) -> np.ndarray:
        return np.ascontiguousarray(self.stats.cross_y_buffer[: self.stats.n_model, self.k])

    @property
    def yy(self) -> float:
        return float(self.stats.targets.moments[core.YY, self.k])

    @property
    def sum_y(self) -> float:
        return float(self.stats.targets.moments[core.SUM, self.k])

    @property
    def targets(self) -> core.Targets:
        whole = self.stats.targets
        return whole._replace(moments=whole.moments[:, self.k:self.k + 1])


class VBLSMultiTargetRegressor(base.MultiTargetRegressor):
    """:class:`~onlinesparse.VBLSRegressor` for K targets of the same inputs, sharing the
    window statistics (``HᵀH`` and the stored inputs: one update per sample, not K) with a
    posterior per target (its weights, precisions and noise, each target its own relevance:
    an input may matter to one target and not another).

    Each target is what a :class:`~onlinesparse.VBLSRegressor` with the same parameters
    would be on it alone — the same EM sweeps, prior, stream layer (intervals calibrated per
    target, the errors' level, the experts) — except that the memory is shared: with
    ``memory="adaptive"`` every target's errors are watched and the window is cut on any
    target's alarm, to the earliest change point, and each target's posterior is refitted.
    A sample without one of the targets, with another, or with a value that is not a
    number is refused with a ``ValueError`` naming it, the model unchanged. Kept concepts
    are one target's models and are not kept.

    Parameters
    ----------
    All of :class:`~onlinesparse.VBLSRegressor`'s except ``concepts``.

    Examples
    --------
    >>> import random
    >>> from onlinesparse import VBLSMultiTargetRegressor
    >>> model = VBLSMultiTargetRegressor()
    >>> rng = random.Random(0)
    >>> for _ in range(300):
    ...     x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1)}
    ...     model.learn_one(x, {"u": 2 * x["a"], "v": 1000 * x["b"] + rng.gauss(0, 1)})
    >>> {k: round(v) for k, v in model.predict_one({"a": 1.0, "b": 1.0}).items()}
    {'u': 2, 'v': 1000}
    """

    def __init__(self, prior: str = "ard", sweeps_per_sample: int = 1,
                 memory: str = "adaptive", window_size: int = 1000,
                 forgetting_factor: float | None = None, precision_cap: float = 10.0,
                 relevance_threshold: float = 1.0, tol: float = 1e-10,
                 max_sweeps: int = 20_000, restart_every: int = 20,
                 factorisation: str = "gaussian", strict: bool = False,
                 coverage: float | None = None, last_target: bool = True,
                 horizon: int | None = None) -> None:
        self.prior = prior
        self.sweeps_per_sample = sweeps_per_sample
        self.memory = memory
        self.window_size = window_size
        self.forgetting_factor = forgetting_factor
        self.precision_cap = precision_cap
        self.relevance_threshold = relevance_threshold
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.restart_every = restart_every
        self.factorisation = factorisation
        self.strict = strict
        self.coverage = coverage
        self.last_target = last_target
        self.horizon = horizon
        self._template = self._head()  # (validates the parameters now)
        self._features = FeatureMap(strict=strict)
        self._targets: list[Hashable] | None = None
        self._heads: list[VBLSRegressor] = []
        self._stats: WindowStatistics | None = None
        # (the shared window's horizon: the template's, which admits its samples)
        self._adaptive = (AdaptiveMemory(window_size, self._template._horizon)
                          if memory == "adaptive" else None)
        self.n_memory_cuts = 0

    @property
    def _horizon(self) -> Horizon | None:
        """Which samples the shared window takes in: the template's (it admits them)."""
        return self._template._horizon

    @classmethod
    def _unit_test_params(cls) -> Iterable[dict]:
        yield {}

    def _head(self) -> VBLSRegressor:
        """A single-target model with this model's parameters (a target's posterior)."""
        return VBLSRegressor(
            prior=self.prior, sweeps_per_sample=self.sweeps_per_sample, memory=self.memory,
            window_size=self.window_size, forgetting_factor=self.forgetting_factor,
            precision_cap=self.precision_cap, relevance_threshold=self.relevance_threshold,
            tol=self.tol, max_sweeps=self.max_sweeps, restart_every=self.restart_every,
            factorisation=self.factorisation, strict=self.strict, coverage=self.coverage,
            concepts=0, last_target=self.last_target, horizon=self.horizon)

    @property
    def targets(self) -> tuple[Hashable, ...]:
        """The targets, in the order the model keeps them (fixed by the first sample)."""
        return () if self._targets is None else tuple(self._targets)

    def _start(self, n_features: int, names: list[Hashable], values: np.ndarray) -> None:
        """The shared statistics (:meth:`VBLSRegressor._new_statistics` for K targets) and a
        head per target reading its column of them."""
        stats = self._template._new_statistics(n_features)
        self._stats = WindowStatistics(n_features, memory=stats.memory,
                                       size=self.window_size, factor=stats.factor,
                                       tolerance=1.0 if self.memory == "forgetting" else 1e-12,
                                       n_targets=len(names))
        for column in range(n_features + 1):  # (the bias, then each input: as the template)
            self._stats.add_column(stats.basis.spec(column))
            self._stats.promote(column)
        self._targets = list(names)
        self._heads = []
        for k, reference in enumerate(values.tolist()):
            head = self._head()
            head._features = self._features
            head._stats = _TargetColumn(self._stats, k)
            head._target_reference = reference
            self._heads.append(head)

    @single_blas_thread
    def learn_one(self, x: dict, y: dict) -> None:  # type: ignore[override]
        """Add one sample to the shared statistics and run each target's sweeps."""
        values, names = as_targets(y, self._targets)
        vector = self._features.transform(x, learning=True)
        if self._stats is None:
            self._start(len(vector), names, values)
        heads = self._heads
        layered = heads[0]._layer is not None
        made = [head._model_predictive(vector) if layered else None for head in heads]
        targets = values - np.array([head._target_reference for head in heads])
        if self._template._admits(self._stats, heads[0]._n_learned):  # (the shared window)
            self._template._push(self._stats, vector, targets)
        for head in heads:
            head._ensure_state()
            head._sweep()
            head._n_learned += 1
        self._features.commit(vector, x)
        if layered:
            self._observe(vector, targets, made)

    def _observe(self, vector: np.ndarray, targets: np.ndarray, made: list) -> None:
        """Each target's stream-layer step, then the shared memory's response to the
        targets' alarms (``stream.layer.after_learning``)."""
        for head, target, target_made in zip(self._heads, targets.tolist(), made, strict=True):
            head._observe_target(vector, target, target_made)
        if after_learning([head._layer for head in self._heads], self._adaptive, None, self,
                          lambda: None, self._heads[0]._n_learned):
            self.n_memory_cuts += 1

    # -- the adaptive memory's protocol (stream.memory.Forgetful) ---------------------------
    @property
    def n_stored(self) -> int:
        return 0 if self._stats is None else int(self._stats.n_stored)

    @property
    def n_parameters(self) -> int:
        """``MEMORY_PER_WEIGHT`` patterns per weight (as :class:`VBLSRegressor`)."""
        return 0 if self._stats is None else MEMORY_PER_WEIGHT * int(self._stats.n_model)

    def ridge_view(self) -> RidgeView | None:
        """The shared window as a ridge regression, each target at its own posterior's
        penalties (:meth:`VBLSRegressor.ridge_view`); None before every target is swept."""
        views = [head.ridge_view() for head in self._heads]
        if not views or any(view is None for view in views):
            return None
        # (a head reads the shared window: its view holds every target, and its rows are
        # its units' — the Student-t factorisation's leave out the bias column)
        return views[0]._replace(penalty=np.column_stack([view.penalty for view in views]))

    def stored_inputs(self) -> np.ndarray:
        """The shared window's stored inputs, oldest first (``stream.memory.StoresInputs``)."""
        return np.zeros((0, 0)) if self._stats is None else self._stats.stored_inputs()

    def forget_oldest(self, k: int) -> None:
        """Forget the ``k`` oldest patterns of the shared statistics and refit every
        target's posterior from the neutral point."""
        self._stats.drop_oldest(k)
        for head in self._heads:
            head._restart()

    @single_blas_thread
    def learn_many(self, X: pd.DataFrame | Iterable[Mapping[Hashable, object]],
                   Y: pd.DataFrame | Iterable[dict]) -> None:
        """Learn every row (validated first: a bad one refuses the batch with nothing
        changed), then sweep each target to its VBLS fixed point (:meth:`refine`)."""
        rows, targets = as_target_rows(X, Y, self._targets)
        self._features.rehearse(rows)  # (validates every row on a copy)
        for row, y in zip(rows, targets, strict=True):
            self.learn_one(row, y)
        self.refine()

    def refine(self, max_sweeps: int | None = None) -> int:
        """Each target's :meth:`VBLSRegressor.refine`; returns the sweeps run in all."""
        return sum(head.refine(max_sweeps) for head in self._heads)

    def predict_one(self, x: dict, with_dist: bool = False
                    ) -> dict[Hashable, float] | dict[Hashable, proba.Gaussian]:
        """Each target's prediction (or predictive distribution); ``{}`` before the first
        sample, which names the targets."""
        vector = self._features.transform(x)
        return {name: head._predict_vector(vector, with_dist)
                for name, head in zip(self.targets, self._heads, strict=True)}

    def predict_many(self, X: pd.DataFrame) -> pd.DataFrame:
        """Each target's prediction for every row of ``X``: a column per target."""
        rows = [self.predict_one(row) for row in as_rows(X)]
        return pd.DataFrame(rows, index=X.index, columns=list(self.targets), dtype=float)

    def target_diagnostics(self) -> dict[Hashable, dict[str, float]]:
        """Each target's :meth:`VBLSRegressor.diagnostics`."""
        return {name: head.diagnostics()
                for name, head in zip(self.targets, self._heads, strict=True)}

    def diagnostics(self) -> dict[str, float]:
        """``n_patterns`` and ``memory_cuts`` of the shared memory, ``n_basis`` the inputs
        relevant to any target (the bias included)."""
        if self._stats is None:
            return {"n_basis": 0.0, "n_patterns": 0.0, "memory_cuts": 0.0}
        relevant = np.zeros(self._stats.n_model, dtype=bool)
        for head in self._heads:
            relevant |= head._ratios() < self.relevance_threshold
        return {"n_basis": float(np.sum(relevant)), "n_patterns": float(self._stats.count),
                "memory_cuts": float(self.n_memory_cuts)}

    def input_relevance(self) -> dict[Hashable, float]:
        """Each input's largest :meth:`VBLSRegressor.input_relevance` over the targets."""
        scores = [head.input_relevance() for head in self._heads]
        return {name: max((s[name] for s in scores), default=0.0) if scores else 0.0
                for name in self._features.names}
