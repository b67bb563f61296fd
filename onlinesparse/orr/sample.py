"""One sample of :class:`~onlinesparse.orr.rbf.SparseRBFRegressor` in one compiled call.

A sample is: the row of the input over every tracked column and the error before learning
(:func:`~onlinesparse.core.basis.evaluate_rows`); the model's slopes and the errors'
structure along each input (:mod:`~onlinesparse.core.relevance`); the pattern
(:func:`~onlinesparse.core.pattern.learn_pattern`: Orr (1996) A.8 and A.11); the stream
layer's step on the prediction's error (:func:`~onlinesparse.stream.layer.observe`); the
pruner's evaluations (:func:`~onlinesparse.core.pruning.evaluate`); the buffer manager's test
of the input as a centre and the noise estimate (:func:`consider`). Each step is the one
implementation of its operation. Everything the call reads and writes travels as one named
bundle, :class:`SampleState`.

Rare work stops the call with a status for the caller, which does it and continues the
sample with :func:`continue_sample`: a refresh of S (LAPACK), a move that needs the stored
rows, the add-first order of a slide whose removal would leave the model singular. At M = 100
the interpreter overhead of a dozen Python calls per sample cost more than their arithmetic,
hence one call.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.basis import (
    evaluate_rows,
    nearest_sq_distance,
    predict_means_and_spread,
)
from onlinesparse.core.criteria import noise_estimate
from onlinesparse.core.pattern import (
    REFRESH,
    SLIDE_REFUSED,
    learn_pattern,
    target_mean,
    target_variance,
)
from onlinesparse.core.pruning import FINISHED, HAND_BACK, Ridge, Tracked, criteria_now, evaluate
from onlinesparse.core.relevance import model_gradient, track_relevance, track_residual
from onlinesparse.core.selection import lambda_min, proposes
from onlinesparse.core.state import SUM, Targets
from onlinesparse.core.statistics import running_mean
from onlinesparse.core.updates import fit
from onlinesparse.stream.change import hold_noise_estimate
from onlinesparse.stream.layer import Stream, observe, observe_without_model, predictive
from onlinesparse.stream.prior import shrink_to_prior

# What stream_sample and continue_sample return besides core.pattern's LEARNED,
# SLIDE_REFUSED and REFRESH: the sample is done; the pruner stopped at a move for the
# caller (PRUNER.stop, PRUNER.action).
QUIET, MOVE = 3, 4

__all__ = ["QUIET", "MOVE", "Inputs", "Ring", "SampleState", "noise_level",
           "model_prediction", "prediction", "consider", "continue_sample", "stream_sample"]


class Inputs(NamedTuple):
    """The inputs' running statistics (``InputMetric.tracked``): each input's relevance,
    the errors' projections on its Hermite polynomials, its mean and variance."""

    relevance: np.ndarray
    residual: np.ndarray
    mean: np.ndarray
    variance: np.ndarray


class Ring(NamedTuple):
    """The stored patterns' inputs (one column each) and what the window keeps of their
    targets (``core.state.Targets``: the single-output model's K = 1)."""

    XT: np.ndarray
    targets: Targets


class SampleState(NamedTuple):
    """Everything a compiled sample reads and writes besides the input: the records
    (``core.state``: the estimator's ``SAMPLE``, the pruner's, the ridge's, the window's),
    the stream layer's bundle, the inputs' statistics, a row buffer, the window's tracked
    columns and stored ring, the ridge state, spare arrays for a resized state, the
    protected column ids and the pruner's move buffer."""

    record: np.ndarray
    stream: Stream
    inputs: Inputs
    pruner: np.ndarray
    ridge: np.ndarray
    window: np.ndarray
    row: np.ndarray
    tracked: Tracked
    ring: Ring
    state: Ridge
    spares: Ridge
    protected: np.ndarray
    move: np.ndarray


@jit
def noise_level(sample_record: np.ndarray, window_record: np.ndarray, targets: Targets
                ) -> float:
    """The noise variance in use: the last estimate (FGCV eq. 8), or before the first one
    the target's variance (what predicting the mean leaves), never a constant in some
    unit."""
    estimate = sample_record[0].noise_variance
    return estimate if estimate > 0.0 else target_variance(window_record, targets.moments, 0)


@jit
def model_prediction(x: np.ndarray, record: np.ndarray, window: np.ndarray,
                     targets: Targets, stream: Stream, t: Tracked, s: Ridge
                     ) -> tuple[float, float]:
    """The model's own prediction at x and its predictive variance before calibration:
    h(x)ᵀw and hᵀSh (:func:`~onlinesparse.core.basis.predict_means_and_spread`), returned
    toward the targets' mean where the model knows little
    (:func:`~onlinesparse.stream.prior.shrink_to_prior`). (The parts of a
    :class:`SampleState` a prediction reads: each array a call unboxes costs time.)"""
    means = np.empty(1)
    spread = predict_means_and_spread(x, t.kinds, t.centres, t.inv_r2, t.features,
                                      s.weights, s.variance, means)
    moments = targets.moments
    return shrink_to_prior(means[0], spread, noise_level(record, window, targets),
                           window[0].count, target_mean(window, moments, 0),
                           target_variance(window, moments, 0),
                           stream.calibration[0].log_scale)


@jit
def prediction(x: np.ndarray, record: np.ndarray, window: np.ndarray, targets: Targets,
               stream: Stream, t: Tracked, s: Ridge, novelty: float) -> tuple[float, float]:
    """``SparseRBFRegressor.predict_one`` in one call: :func:`model_prediction`, then the
    prediction as made (:func:`~onlinesparse.stream.layer.predictive`: calibration, the
    errors' level, ``novelty``, the mixture with the running mean)."""
    mean, variance = model_prediction(x, record, window, targets, stream, t, s)
    return predictive(stream, mean, variance, novelty)


@jit
def consider(b: SampleState, x: np.ndarray, state: Ridge) -> None:
    """The buffer manager's test of a learned input as a centre (``BufferManager.consider``:
    :func:`~onlinesparse.core.selection.proposes` on its distance to the nearest radial
    centre), and on one sample in ``noise_every`` the noise estimate (FGCV eq. 8), which
    sets λ_min and the predictive distribution — unless a change is building
    (:func:`~onlinesparse.stream.change.hold_noise_estimate`)."""
    sr = b.record[0]
    w = b.window[0]
    t = b.tracked
    nearest = nearest_sq_distance(t.kinds, t.centres, t.inv_r2, w.n_columns, x)
    sr.nearest = nearest
    targets = b.ring.targets
    sr.propose = 1 if proposes(nearest, sr.novelty_sq, sr.error,
                               math.sqrt(noise_level(b.record, b.window, targets)),
                               sr.error_threshold) else 0
    if (sr.n_learned % sr.noise_every == 0
            and not hold_noise_estimate(b.stream.change, w.count, sr.noise_every)):
        training, gamma = criteria_now(b.ridge, targets, t.gram, t.cross_y, state.variance,
                                       state.weights, state.lambdas)
        sr.noise_variance = noise_estimate(training, gamma, w.count, sr.noise_variance)


@jit
def continue_sample(b: SampleState, x: np.ndarray, evaluations: int, first: int) -> int:
    """The rest of a sample once its pattern is in: the pruner's evaluations, then
    :func:`consider`. Returns ``QUIET``, ``MOVE`` (the pruner handed a move back) or
    ``REFRESH`` (a move was made and S is to be refreshed now); after either of the last
    two the caller does what is asked and calls this again with the evaluations left."""
    w = b.window[0]
    t, s, spare = b.tracked, b.state, b.spares
    targets = b.ring.targets
    floor = lambda_min(noise_level(b.record, b.window, targets), w.count,
                       target_variance(b.window, targets.moments, 0))
    stop = evaluate(b.pruner, b.ridge, b.window, targets, t, s, spare, b.protected, b.move,
                    floor, evaluations, first)
    if stop == HAND_BACK:
        return MOVE
    if stop != FINISHED:
        return REFRESH
    m = w.n_model
    if b.pruner[0].resized:  # (the state now lives in the spare arrays)
        s = Ridge(spare.variance[:m * m].reshape((m, m)), spare.weights[:m],
                  spare.lambdas[:m])
    consider(b, x, s)
    return QUIET


@jit
def stream_sample(x: np.ndarray, y: np.ndarray, means: np.ndarray, committed: int,
                  evaluations: int, first: int, b: SampleState) -> int:
    """``SparseRBFRegressor.learn_one`` from a validated input and target (``y``, one
    entry), in one call (module docstring): the error before learning (``record.error``)
    and the row (``row[:n]``),
    the inputs' statistics, the pattern, the inputs' running ``means`` (the
    ``committed``-th learned input), the stream layer's step, then :func:`continue_sample`.
    Returns ``QUIET``, ``SLIDE_REFUSED`` (nothing changed), ``REFRESH`` (the pattern is
    in: refresh S, then :func:`continue_sample`) or ``MOVE``."""
    n = b.window[0].n_columns
    d = x.shape[0]
    t, s, inputs = b.tracked, b.state, b.inputs
    row = b.row[:n]
    evaluate_rows(t.kinds, t.centres, t.inv_r2, t.features, x.reshape((1, d)), 0, n,
                  row.reshape((1, n)))
    b.record[0].error = y[0] - fit(row, s.weights, s.weights.shape[0], 0)
    # The model's slopes before learning, tracked once the pattern is in; a relevance of
    # no entries is not tracked (metric="isotropic": nothing reads it).
    track = s.weights.shape[0] > 0 and inputs.relevance.shape[0] == d
    gradient = np.empty(d if track else 0)
    if track:
        model_gradient(t.kinds, t.centres, t.inv_r2, t.features, s.weights, 0, x, row,
                       gradient)
    b.pruner[0].resized = 0  # (what the pruner reports is this call's)
    b.pruner[0].stop = 0
    b.pruner[0].done = 0
    targets = b.ring.targets
    status = learn_pattern(b.window, b.ridge, x, y, row, t.gram, t.cross_y, t.traffic, t.HT,
                           b.ring.XT, targets.values, targets.moments, t.stamps, s.variance,
                           s.weights, s.lambdas)
    if status == SLIDE_REFUSED:
        return SLIDE_REFUSED
    _track_inputs(b, x, gradient, track)
    b.record[0].n_learned += 1
    running_mean(means, x, committed)
    _observe(b, y[0])
    if status == REFRESH:
        return REFRESH
    return continue_sample(b, x, evaluations, first)


@jit
def _track_inputs(b: SampleState, x: np.ndarray, gradient: np.ndarray, track: bool) -> None:
    """The model's slopes into the inputs' relevance and the error's structure along each
    input (:mod:`~onlinesparse.core.relevance`), once the pattern is in."""
    inputs = b.inputs
    if inputs.relevance.shape[0] != x.shape[0]:
        return
    count = b.window[0].count
    if track:
        track_relevance(inputs.relevance, gradient, count)
    sr = b.record[0]
    sr.error_square = track_residual(inputs.residual, inputs.mean, inputs.variance, x,
                                     sr.error, sr.error_square, count, track)


@jit
def _observe(b: SampleState, y: float) -> None:
    """The stream layer's step on this target (an empty model's prediction is no model's:
    only the running mean moves)."""
    w = b.window[0]
    targets = b.ring.targets
    variance = target_variance(b.window, targets.moments, 0)
    total = targets.moments[SUM, 0]
    if b.state.weights.shape[0] > 0:
        sr = b.record[0]
        observe(b.stream, sr.error, noise_level(b.record, b.window, targets),
                b.ridge[0].leverage, y, w.count, total, variance, sr.noise_variance > 0.0)
    else:
        observe_without_model(b.stream, y, w.count, total, variance)
