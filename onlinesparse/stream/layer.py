"""The stream layer's per-sample step and prediction, for any family.

A family hands the layer, per target, its prediction's error before learning, its noise
variance σ² and the relative variance of its estimate at the input (``leverage``, hᵀSh
for a ridge model), and the targets in its memory (count, sum, variance). :func:`observe`
then calibrates the interval (:mod:`~onlinesparse.stream.calibration`), watches for a
change (:mod:`~onlinesparse.stream.change`), weighs the model against the running mean
(:mod:`~onlinesparse.stream.baseline`) and tracks the errors' level
(:mod:`~onlinesparse.stream.level`); :func:`predictive` composes the prediction as made
from the model's. The records travel together as one named bundle, :class:`Stream`;
:class:`StreamLayer` owns one for a Python object. A model of K targets keeps the K
targets' records side by side (:class:`Streams`, :func:`new_streams`), each target's a
:class:`Stream` of views (:func:`target_stream`), so that one compiled step serves one
target or several.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.stream.baseline import (
    LAST_EXPERT,
    MEAN_EXPERT,
    lean_on_last,
    model_share,
    new_baseline,
    weigh_baselines,
)
from onlinesparse.stream.calibration import calibrate, new_calibration
from onlinesparse.stream.change import (
    change_underway,
    new_change,
    restart_reference,
    watch_errors,
)
from onlinesparse.stream.concepts import ConceptMemory, Predictor
from onlinesparse.stream.evidence import LOG_ODDS_LIMIT
from onlinesparse.stream.level import level_mixture, new_level_state, new_levels, track_level
from onlinesparse.stream.memory import AdaptiveMemory, Forgetful
from onlinesparse.stream.mixture import FLOAT_MAX, mixture
from onlinesparse.stream.prior import shrink_to_prior

__all__ = ["Stream", "StreamLayer", "Streams", "after_learning", "calibrated_spread",
           "composed", "new_streams", "observe", "observe_without_model", "predictive",
           "predictive_without_model", "target_stream"]


class Stream(NamedTuple):
    """The stream layer's records: ``calibration`` (κ, κ_o, z), ``change`` (the CUSUM
    statistics and an alarm's ``keep``), ``baseline`` (the running mean's prediction and
    the evidence against it), ``levels`` (the level filters) and ``level`` (their mixture
    for the next sample)."""

    calibration: np.ndarray
    change: np.ndarray
    baseline: np.ndarray
    levels: np.ndarray
    level: np.ndarray


class Streams(NamedTuple):
    """The records of K targets side by side: ``calibration``, ``change`` and ``level`` a
    record per target (K), ``baseline`` and ``levels`` a row per target (K × 2, K × the
    level filters). Target k's :class:`Stream` is :func:`target_stream`."""

    calibration: np.ndarray
    change: np.ndarray
    baseline: np.ndarray
    levels: np.ndarray
    level: np.ndarray


def new_streams(n_targets: int, coverage: float = 0.95, last_target: bool = True
                ) -> Streams:
    """Fresh records for ``n_targets`` targets (:class:`Streams`), each calibrated to
    ``coverage``. (Repeated, not concatenated: joining structured arrays promotes their
    fields, 250 µs of a 7-target model's first sample against 23.)"""
    return Streams(np.repeat(new_calibration(coverage), n_targets),
                   np.repeat(new_change(), n_targets),
                   np.repeat(new_baseline(last_target)[None], n_targets, axis=0),
                   np.repeat(new_levels()[None], n_targets, axis=0),
                   np.repeat(new_level_state(), n_targets))


@jit
def target_stream(streams: Streams, k: int) -> Stream:
    """Target k's records as a :class:`Stream` of views into ``streams``: what
    :func:`observe` and :func:`predictive` take, for one target or each of several."""
    return Stream(streams.calibration[k:k + 1], streams.change[k:k + 1],
                  streams.baseline[k], streams.levels[k], streams.level[k:k + 1])


@jit
def calibrated_spread(calibration: np.ndarray, noise: float, leverage: float) -> float:
    """The model's calibrated predictive variance at an input of relative variance
    ``leverage``: ``κ²σ²(1 + leverage)``."""
    return math.exp(2.0 * calibration[0].log_scale) * noise * (1.0 + leverage)


@jit
def observe(stream: Stream, error: float, noise: float, leverage: float, y: float,
            count: float, total: float, variance: float, noise_known: bool) -> None:
    """What a target says of the prediction made for it (module docstring): the model's
    ``error`` (y − f(x)) and the error of the prediction as made (the level added)
    calibrate the two factors; the calibrated error moves the change statistics; the
    prediction as made is weighed against the running mean of the ``count`` targets in
    memory (y included; ``total`` their sum, ``variance`` their variance); the level's
    filters move once ``noise_known`` (before the first noise estimate it has no unit)."""
    spread = calibrated_spread(stream.calibration, noise, leverage)  # (κ before this step)
    level = stream.level[0]
    made = error - level.offset
    # (the prediction as returned, recomposed from the records as they were when it was
    # made: the model's f = y − error and its variance, no novelty term)
    returned, returned_variance = composed(stream, y - error, noise * (1.0 + leverage), 0.0)
    # (the detector's variance leaves κ out: it calibrates its own factor, held in a change)
    own = noise * (1.0 + leverage) + level.variance * math.exp(
        -2.0 * stream.calibration[0].log_scale)
    if calibrate(stream.calibration, spread, error, y - returned, returned_variance):
        c = stream.calibration[0]
        watch_errors(stream.change, made, own, c.quantile, c.miss_rate)
    weigh_baselines(stream.baseline, y, made, count, total, variance, True)
    if noise_known:
        track_level(stream.levels, error, spread, noise)
        level.offset, level.variance = level_mixture(stream.levels)


@jit
def observe_without_model(stream: Stream, y: float, count: float, total: float,
                          variance: float) -> None:
    """A target seen while there is no model (nothing to judge): the running mean's
    prediction moves on, no statistic does."""
    weigh_baselines(stream.baseline, y, 0.0, count, total, variance, False)


@jit
def predictive(stream: Stream, mean: float, variance: float, novelty: float
               ) -> tuple[float, float]:
    """The prediction as returned from the model's ``mean`` and uncalibrated predictive
    ``variance``: :func:`composed`, its variance times κ_o², the factor calibrated on the
    errors of what is returned (:mod:`~onlinesparse.stream.calibration`)."""
    mean, variance = composed(stream, mean, variance, novelty)
    return mean, min(variance * math.exp(2.0 * stream.calibration[0].outer_log_scale),
                     FLOAT_MAX)


@jit
def composed(stream: Stream, mean: float, variance: float, novelty: float
             ) -> tuple[float, float]:
    """The prediction before its outer factor: κ² on the model's variance, the level's
    offset and variance and ``novelty`` (what the model cannot know at x) added, then the
    mixture with the running mean and the last target by the evidence, and with the blend
    of the model and the last target by its own
    (:func:`~onlinesparse.stream.baseline.lean_on_last`)."""
    c = stream.calibration[0]
    level = stream.level[0]
    variance = variance * math.exp(2.0 * c.log_scale) + level.variance + novelty
    mean += level.offset
    w = model_share(stream.baseline)
    mixed = mean
    if w != 1.0:
        mixed, variance = mixture_of_baselines(stream.baseline, w, mean, variance)
    return lean_on_last(stream.baseline, mean, mixed, variance)


@jit
def predictive_without_model(stream: Stream, mean: float, variance: float
                             ) -> tuple[float, float]:
    """The prediction while there is no model: the experts' mixture by their odds
    (:mod:`~onlinesparse.stream.baseline`); before either predicts, the family's own
    ``mean`` and ``variance``."""
    b = stream.baseline
    if not b[MEAN_EXPERT].weight + b[LAST_EXPERT].weight > 0.0:
        return mean, variance
    return mixture_of_baselines(b, 0.0, mean, variance)


@jit
def mixture_of_baselines(baseline: np.ndarray, w: float, mean: float, variance: float
                         ) -> tuple[float, float]:
    """:func:`~onlinesparse.stream.mixture.mixture` of the model's prediction (share ``w``)
    and the experts' (:mod:`~onlinesparse.stream.baseline`)."""
    weights = np.empty(3)
    means = np.empty(3)
    variances = np.empty(3)
    weights[0], means[0], variances[0] = w, mean, variance
    for k in (MEAN_EXPERT, LAST_EXPERT):
        e = baseline[k]
        weights[k + 1], means[k + 1], variances[k + 1] = e.weight, e.mean, e.variance
    return mixture(weights, means, variances)


class StreamLayer:
    """A :class:`Stream` owned by a Python object, with what the object reads of it.

    Parameters
    ----------
    coverage
        The central probability the predictive intervals are calibrated to (0.95: the
        95 % interval). A higher coverage widens every interval.
    last_target
        Whether the last target is an expert (:mod:`~onlinesparse.stream.baseline`): right
        for a model that predicts a stream's next sample, wrong for one queried at inputs
        of its owner's choosing whose output comes back as the target (a control loop).
    bundle
        The records to own (a target's :func:`target_stream` of a model's
        :class:`Streams`); by default new ones.
    """

    def __init__(self, coverage: float = 0.95, last_target: bool = True,
                 bundle: Stream | None = None) -> None:
        self.coverage = coverage
        self.bundle = bundle if bundle is not None else target_stream(
            new_streams(1, coverage, last_target), 0)

    @classmethod
    def for_targets(cls, streams: Streams, coverage: float) -> list[StreamLayer]:
        """A layer per target of ``streams``, each owning its target's views (a model of
        several targets reads and acts through them; its compiled step writes the same
        records)."""
        return [cls(coverage, bundle=target_stream(streams, k))
                for k in range(streams.calibration.shape[0])]

    def learn(self, error: float, noise: float, leverage: float, y: float, count: float,
              total: float, variance: float) -> None:
        """:func:`observe` for a model that has predicted (its ``error``, noise σ² and
        relative variance ``leverage`` at the input), the targets in its memory after ``y``
        joined them: ``count``, their sum ``total`` and their ``variance``."""
        observe(self.bundle, error, noise, leverage, y, count, total, variance, noise > 0.0)

    def learn_without_model(self, y: float, count: float, total: float,
                            variance: float) -> None:
        """:func:`observe_without_model`: a target seen before there is a model."""
        observe_without_model(self.bundle, y, count, total, variance)

    def predict_without_model(self, mean: float, variance: float) -> tuple[float, float]:
        """:func:`predictive_without_model`: the experts' prediction while there is no
        model, else the family's ``mean`` and ``variance``."""
        return predictive_without_model(self.bundle, mean, variance)

    def shrink(self, mean: float, variance: float, noise: float, count: float, total: float,
               target_variance: float) -> tuple[float, float]:
        """:func:`~onlinesparse.stream.prior.shrink_to_prior` for a model whose predictive
        variance at the input is ``variance`` (noise ``noise`` included): its prediction
        returned toward the mean of the ``count`` targets in memory (sum ``total``,
        variance ``target_variance``) where its estimate is uncertain."""
        if not (noise > 0.0 and count > 0.0):
            return mean, variance
        spread = max(variance - noise, 0.0) / noise
        return shrink_to_prior(mean, spread, noise, count, total / count, target_variance,
                               self.log_scale)

    def predict(self, mean: float, variance: float, novelty: float = 0.0
                ) -> tuple[float, float]:
        """:func:`predictive`: the prediction as made from the model's mean and variance."""
        return predictive(self.bundle, mean, variance, novelty)

    def judge_concepts(self, concepts: ConceptMemory, x: object, target: float,
                       error: float, noise: float, count: float, learned: int) -> None:
        """Sample ``learned``'s evidence for the kept ``concepts`` against the model whose
        error at ``x`` was ``error``: both scored by the model's calibrated predictive
        variance κ²σ² (:func:`calibrated_spread` at leverage 0, σ² = ``noise``) and a
        Student-t of ``count − 2`` degrees of freedom; a change building up wakes them."""
        if concepts.kept:
            concepts.judge(x, target, error,
                           calibrated_spread(self.bundle.calibration, noise, 0.0),
                           count - 2.0, self.change_underway, learned)

    @property
    def change_underway(self) -> bool:
        """Whether a change is building up (a change statistic past half its threshold)."""
        return bool(change_underway(self.bundle.change))

    def concept_memory(self, capacity: int, lasted: int) -> ConceptMemory:
        """A :class:`~onlinesparse.stream.concepts.ConceptMemory` calibrated to this
        layer's coverage."""
        return ConceptMemory(capacity, lasted, self.coverage)

    def after_learning(self, memory: AdaptiveMemory | None, concepts: ConceptMemory | None,
                       model: Forgetful,
                       freeze: Callable[[], tuple[Predictor, float] | None],
                       learned: int) -> bool:
        """:func:`after_learning` of this layer alone (a single-output model)."""
        return after_learning((self,), memory, concepts, model, freeze, learned)

    def restart(self) -> None:
        """A model refitted after a change makes errors of its own: the level its
        predecessor's errors had starts again from 0, and the change detector learns its
        reference anew (:func:`~onlinesparse.stream.change.restart_reference`)."""
        self.bundle.levels[:] = new_levels()
        self.bundle.level[:] = new_level_state()
        restart_reference(self.bundle.change)

    def trust_the_model(self) -> None:
        """A model that did not earn its weight sample by sample (built from a batch fit)
        predicts with its own fit alone."""
        self.bundle.baseline["log_odds"] = LOG_ODDS_LIMIT
        self.bundle.baseline["weight"] = 0.0

    def take_alarm(self) -> int:
        """The change-point estimate of an alarm the last step raised (0: none), cleared.
        Read through a memoryview kept for it: every sample asks, and a structured array's
        field costs a microsecond to reach."""
        view = self.__dict__.get("_keep")
        if view is None:
            view = self.__dict__["_keep"] = memoryview(self.bundle.change["keep"])
        keep = view[0]
        if keep:
            view[0] = 0
        return keep

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_keep"}

    @property
    def log_scale(self) -> float:
        return float(self.bundle.calibration[0]["log_scale"])

    @property
    def model_weight(self) -> float:
        return float(model_share(self.bundle.baseline))

    def summary(self) -> dict[str, float]:
        """The calibration factors, the level and the model's weight against the mean."""
        c, level = self.bundle.calibration[0], self.bundle.level[0]
        return {"calibration": math.exp(float(c["log_scale"])),
                "level": float(level["offset"]),
                "interval_calibration": math.exp(float(c["outer_log_scale"])),
                "model_weight": self.model_weight}


def after_learning(layers: Sequence[StreamLayer], memory: AdaptiveMemory | None,
                   concepts: ConceptMemory | None, model: Forgetful,
                   freeze: Callable[[], tuple[Predictor, float] | None],
                   learned: int) -> bool:
    """Act on the alarms the last step raised in the ``layers`` of a model's targets, if
    any: keep the outgoing model as a concept (``freeze()``: the model frozen and its noise
    variance), cut ``model``'s memory — shared by its targets — to the patterns after the
    change (:class:`~onlinesparse.stream.memory.AdaptiveMemory`; of several targets'
    alarms, the earliest change point, so that no alarm costs the others more than it
    must) and restart every target's level; an alarm a refit refuses
    (:mod:`~onlinesparse.stream.refit`) only wakes the kept concepts, and one it cannot yet
    judge is looked at again later (:meth:`AdaptiveMemory.review_due`), as an alarm. Without
    an alarm, let the memory drop what it holds back. ``memory`` None: a fixed memory (the
    alarms are cleared, nothing else). Returns whether it cut."""
    since = 0
    for layer in layers:  # (every target's alarm is taken, and cleared)
        since = max(since, layer.take_alarm())
    if memory is None:
        return False
    if not since:
        since = memory.review_due(learned)  # (a change the refit could not yet judge)
    if not since:
        if memory.holding:
            memory.hold(model, learned)
        return False
    plan = memory.plan(model, since, learned)
    if concepts is not None and not plan.pending:
        if plan.refused:  # (no change to keep a model of; a recurring concept may show)
            concepts.wake()
        else:
            concepts.after_alarm(freeze, learned)
    if not memory.cut(model, plan, learned):
        return False
    for layer in layers:
        layer.restart()
    return True
