"""The stream layer as a river wrapper around any regressor with a predictive distribution.

In the style of river's ``conf`` and ``drift.retrain`` wrappers: :class:`StreamRegressor`
gives a regressor that does not build the layer in (``VBLSKernelRegressor``, or any river
regressor whose ``predict_one(x, with_dist=True)`` returns a distribution) calibrated
intervals, the errors' level, the weighing against the running mean, and — for a model
that implements :class:`~onlinesparse.stream.memory.Forgetful` — adaptive memory; kept
concepts are copies of the wrapped model. It is the same code the built-in layers run
(:class:`~onlinesparse.stream.layer.StreamLayer`).
"""

from __future__ import annotations

import copy
import math

from river import base, proba, stats

from onlinesparse._distributions import gaussian
from onlinesparse._validation import check_int, check_real
from onlinesparse.stream.concepts import LASTED
from onlinesparse.stream.layer import StreamLayer
from onlinesparse.stream.memory import AdaptiveMemory

__all__ = ["StreamRegressor"]


class _Frozen:
    """A copy of the wrapped model, frozen: a kept concept's predictor (on feature dicts)."""

    def __init__(self, model: base.Regressor) -> None:
        self.model = copy.deepcopy(model)

    def predict(self, x: dict) -> float:
        return float(self.model.predict_one(x))


class StreamRegressor(base.Wrapper, base.Regressor):
    """A regressor with the stream layer around it.

    Parameters
    ----------
    regressor
        The wrapped model; its ``predict_one(x, with_dist=True)`` must return a
        distribution with ``mu`` and ``sigma`` (river's ``proba.Gaussian``).
    coverage
        The central probability the intervals are calibrated to (0.95: mean ± 1.96σ).
    window_size
        With a model that can forget its oldest patterns (``n_stored``, ``n_parameters``,
        ``forget_oldest``), the most patterns the adaptive memory lets it keep; otherwise
        unused (alarms are counted in ``n_alarms`` and the level restarts).
    concepts
        How many of the models a change ended are kept (deep copies) to predict again if
        their stretch returns; each costs a copy of the model and one of its predictions per
        sample while it is awake.
    last_target
        Whether the last target is an expert beside the model (see
        :class:`~onlinesparse.SparseRBFRegressor`): False for a model queried at inputs of
        its owner's choosing whose output comes back as the target (a control loop).
    """

    def __init__(self, regressor: base.Regressor, coverage: float = 0.95,
                 window_size: int = 1000, concepts: int = 0, last_target: bool = True) -> None:
        check_real("coverage", coverage, 0.0, 1.0, low_open=True, high_open=True)
        check_int("window_size", window_size, 2)
        check_int("concepts", concepts, 0)
        self.regressor = regressor
        self.coverage = coverage
        self.window_size = window_size
        self.concepts = concepts
        self.last_target = last_target
        self._layer = StreamLayer(coverage, last_target)
        forgetful = all(hasattr(regressor, name)
                        for name in ("n_stored", "n_parameters", "forget_oldest"))
        self._memory = AdaptiveMemory(window_size) if forgetful else None
        self._concepts = self._layer.concept_memory(concepts, min(LASTED, window_size))
        self._targets = stats.Var(ddof=0)  # (the targets' count, mean and variance)
        self.n_learned = 0
        self.n_alarms = 0
        self.n_memory_cuts = 0

    @property
    def _wrapped_model(self) -> base.Regressor:
        return self.regressor

    @classmethod
    def _unit_test_params(cls):
        from river import linear_model

        yield {"regressor": linear_model.BayesianLinearRegression()}

    def _own(self, x: dict, **kwargs) -> tuple[float, float]:
        dist = self.regressor.predict_one(x, with_dist=True, **kwargs)
        return float(dist.mu), float(dist.sigma) ** 2

    def learn_one(self, x: dict, y: float, **kwargs) -> None:
        """Learn (keyword arguments pass to the wrapped model's ``learn_one``), after the
        prediction made for ``y`` is judged by the layer."""
        mean, variance = self._own(x)
        self.regressor.learn_one(x, y, **kwargs)
        y = float(y)
        self._targets.update(y)
        self.n_learned += 1
        count = self._targets.mean.n
        total, spread = self._targets.mean.get() * count, self._targets.get()
        if self.n_learned == 1 or not (variance > 0.0 and math.isfinite(mean)):
            self._layer.learn_without_model(y, count, total, spread)
        else:
            self._layer.learn(y - mean, variance, 0.0, y, count, total, spread)
            self._layer.judge_concepts(self._concepts, x, y, y - mean, variance, count,
                                       self.n_learned)
        self._after_learning(variance)

    def _after_learning(self, variance: float) -> None:
        """An alarm: the memory cut (a model that forgets and holds more than the patterns
        after the change), the level restarted and the targets' statistics started again
        from the samples after the change — whether or not the model could forget."""
        alarm = bool(self._layer.bundle.change[0]["keep"])
        if not alarm and self._memory is None:
            return
        freeze = lambda: (_Frozen(self.regressor), variance)  # noqa: E731
        if alarm:
            self.n_alarms += 1
            self._targets = stats.Var(ddof=0)
        if self._memory is None:
            self._concepts.after_alarm(freeze, self.n_learned)
            self._layer.take_alarm()
        elif self._layer.after_learning(self._memory, self._concepts, self.regressor, freeze,
                                        self.n_learned):
            self.n_memory_cuts += 1
            return
        if alarm:  # (no cut: a model that cannot forget, or nothing to cut)
            self._layer.restart()

    def predict_one(self, x: dict, with_dist: bool = False, **kwargs
                    ) -> float | proba.Gaussian:
        """The prediction as made (keyword arguments pass to the wrapped model)."""
        mean, variance = self._own(x, **kwargs)
        if self.n_learned:
            mean, variance = self._layer.predict(mean, variance)
            if self._concepts.kept:
                mean, variance = self._concepts.blend(x, mean, variance,
                                                      self._layer.model_weight)
        return gaussian(mean, variance) if with_dist else mean

    def diagnostics(self) -> dict[str, float]:
        """The layer's calibration, level and weight, and the alarms and cuts so far."""
        return {**self._layer.summary(), "alarms": float(self.n_alarms),
                "memory_cuts": float(self.n_memory_cuts),
                "concepts": float(len(self._concepts.concepts))}
