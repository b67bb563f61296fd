"""One sample of the Orr family's streaming regressors in one compiled call.

A sample is: the row of the input over every tracked column and each target's error before
learning (:func:`~onlinesparse.core.basis.evaluate_rows`); the model's slopes and the
errors' structure along each input (:mod:`~onlinesparse.core.relevance`); the pattern
(:func:`~onlinesparse.core.pattern.learn_pattern`: Orr (1996) A.8 and A.11); the stream
layer's step on each target's error (:func:`~onlinesparse.stream.layer.observe`); the
pruner's evaluations (:func:`~onlinesparse.core.pruning.evaluate`); the buffer manager's test
of the input as a centre and the noise estimates (:func:`consider`). Each step is the one
implementation of its operation. Everything the call reads and writes travels as one named
bundle, :class:`SampleState`.

K targets share the basis, S and the pruner (``core.state.Targets`` keeps what is each
target's); a single-output model is K = 1 of the same calls.

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
    fit,
    nearest_sq_distance,
    predict_means_and_spread,
)
from onlinesparse.core.criteria import noise_estimate
from onlinesparse.core.linalg import symmetric_quadratic
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
from onlinesparse.stream.change import hold_noise_estimate
from onlinesparse.stream.layer import (
    Streams,
    observe,
    observe_without_model,
    predictive,
    target_stream,
)
from onlinesparse.stream.prior import shrink_to_prior

# What stream_sample and continue_sample return besides core.pattern's LEARNED,
# SLIDE_REFUSED and REFRESH: the sample is done; the pruner stopped at a move for the
# caller (PRUNER.stop, PRUNER.action).
QUIET, MOVE = 3, 4
# The rows of prediction's `out` (3 × K): each target's novelty variance (given), then its
# prediction and predictive variance (returned).
NOVELTY, MEAN, VARIANCE = 0, 1, 2

__all__ = ["QUIET", "MOVE", "NOVELTY", "MEAN", "VARIANCE", "Inputs", "Ring", "SampleState",
           "noise_level",
           "model_prediction", "prediction", "consider", "continue_sample", "stream_sample",
           "observe_sample"]


class Inputs(NamedTuple):
    """The inputs' running statistics (``InputMetric.tracked``): each input's relevance,
    the errors' projections on its Hermite polynomials, its mean and variance."""

    relevance: np.ndarray
    residual: np.ndarray
    mean: np.ndarray
    variance: np.ndarray


class Ring(NamedTuple):
    """The stored patterns' inputs (one column each) and what the window keeps of their
    targets (``core.state.Targets``)."""

    XT: np.ndarray
    targets: Targets


class SampleState(NamedTuple):
    """Everything a compiled sample reads and writes besides the input: the records
    (``core.state``: the estimator's ``SAMPLE``, the pruner's, the ridge's, the window's),
    the stream layer's bundle (a record per target), the inputs' statistics, a row buffer,
    the window's tracked columns and stored ring, the ridge state, spare arrays for a
    resized state, the protected column ids and the pruner's move buffer."""

    record: np.ndarray
    stream: Streams
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
def noise_level(window_record: np.ndarray, targets: Targets, k: int) -> float:
    """Target k's noise variance in use: the last estimate (FGCV eq. 8), or before the
    first one the target's variance (what predicting the mean leaves), never a constant in
    some unit."""
    estimate = targets.noise[k]
    return estimate if estimate > 0.0 else target_variance(window_record, targets.moments, k)


@jit
def shared_lambda_min(window_record: np.ndarray, targets: Targets) -> float:
    """The floor on every λ of the shared basis (:func:`~onlinesparse.core.selection.
    lambda_min`, FGCV 3.2 point 7) at the targets' mean noise-to-variance ratio, so that
    no target's unit sets it (one target: its own)."""
    n_targets = targets.noise.shape[0]
    ratio = 0.0
    for k in range(n_targets):
        variance = target_variance(window_record, targets.moments, k)
        ratio += noise_level(window_record, targets, k) / variance if variance > 0.0 else 1.0
    return lambda_min(ratio / n_targets, window_record[0].count, 1.0)


@jit
def weigh_targets(window_record: np.ndarray, targets: Targets) -> bool:
    """Each target's weight in the shared criteria, ``ωₖ = σ₀²/σₖ²`` (the noise levels in
    use): every target in units of its own noise level, expressed in the first target's
    unit, so that a single target is weighed 1 and every sum of the targets' errors (GCV,
    the model's slopes) changes by a constant factor when a target's unit does. Returns
    whether a weight changed (every criterion must then be recomputed)."""
    reference = noise_level(window_record, targets, 0)
    changed = False
    for k in range(targets.scales.shape[0]):
        noise = noise_level(window_record, targets, k)
        scale = reference / noise if noise > 0.0 else 0.0
        if math.isfinite(scale) and scale > 0.0 and scale != targets.scales[k]:
            targets.scales[k] = scale
            changed = True
    return changed


@jit
def model_prediction(x: np.ndarray, window: np.ndarray, targets: Targets, stream: Streams,
                     t: Tracked, s: Ridge, means: np.ndarray, variances: np.ndarray) -> None:
    """The model's own predictions at x and their predictive variances before calibration:
    h(x)ᵀwₖ and hᵀSh (:func:`~onlinesparse.core.basis.predict_means_and_spread`), each
    returned toward its targets' mean where the model knows little
    (:func:`~onlinesparse.stream.prior.shrink_to_prior`), into ``means`` and
    ``variances``. (The parts of a :class:`SampleState` a prediction reads: each array a
    call unboxes costs time.)"""
    spread = predict_means_and_spread(x, t.kinds, t.centres, t.inv_r2, t.features,
                                      s.weights, s.variance, means)
    moments = targets.moments
    count = window[0].count
    for k in range(means.shape[0]):
        means[k], variances[k] = shrink_to_prior(
            means[k], spread, noise_level(window, targets, k), count,
            target_mean(window, moments, k), target_variance(window, moments, k),
            stream.calibration[k].log_scale)


@jit
def prediction(x: np.ndarray, window: np.ndarray, targets: Targets, stream: Streams,
               t: Tracked, s: Ridge, out: np.ndarray) -> None:
    """``predict_one`` in one call: :func:`model_prediction`, then each target's prediction
    as made (:func:`~onlinesparse.stream.layer.predictive`: calibration, the errors' level,
    the novelty variance ``out[NOVELTY, k]``, the mixture with the experts), into
    ``out[MEAN]`` and ``out[VARIANCE]``."""
    means, variances = out[MEAN], out[VARIANCE]
    model_prediction(x, window, targets, stream, t, s, means, variances)
    for k in range(means.shape[0]):
        means[k], variances[k] = predictive(target_stream(stream, k), means[k], variances[k],
                                            out[NOVELTY, k])


@jit
def consider(b: SampleState, x: np.ndarray, state: Ridge) -> None:
    """The buffer manager's test of a learned input as a centre (``BufferManager.consider``:
    :func:`~onlinesparse.core.selection.proposes` on its distance to the nearest radial
    centre and each target's error), and on one sample in ``noise_every`` each target's
    noise estimate (FGCV eq. 8), which sets λ_min, its weight in the criteria and its
    predictive distribution — unless a change is building in it
    (:func:`~onlinesparse.stream.change.hold_noise_estimate`)."""
    sr = b.record[0]
    w = b.window[0]
    t = b.tracked
    targets = b.ring.targets
    nearest = nearest_sq_distance(t.kinds, t.centres, t.inv_r2, w.n_columns, x)
    sr.nearest = nearest
    propose = False
    for k in range(targets.error.shape[0]):
        propose = propose or proposes(nearest, sr.novelty_sq, targets.error[k],
                                      math.sqrt(noise_level(b.window, targets, k)),
                                      sr.error_threshold)
    sr.propose = 1 if propose else 0
    if sr.n_learned % sr.noise_every != 0:
        return
    computed = False
    for k in range(targets.noise.shape[0]):
        if hold_noise_estimate(b.stream.change[k:k + 1], w.count, sr.noise_every):
            continue
        if not computed:  # (the criteria only when some target takes an estimate)
            _, gamma = criteria_now(b.ridge, targets, t.gram, t.cross_y, state.variance,
                                    state.weights, state.lambdas)
            computed = True
        targets.noise[k] = noise_estimate(targets.training[k], gamma, w.count,
                                          targets.noise[k])
    if weigh_targets(b.window, targets):
        b.ridge[0].summary_version = -1


@jit
def continue_sample(b: SampleState, x: np.ndarray, evaluations: int, first: int) -> int:
    """The rest of a sample once its pattern is in: the pruner's evaluations, then
    :func:`consider`. Returns ``QUIET``, ``MOVE`` (the pruner handed a move back) or
    ``REFRESH`` (a move was made and S is to be refreshed now); after either of the last
    two the caller does what is asked and calls this again with the evaluations left."""
    w = b.window[0]
    t, s, spare = b.tracked, b.state, b.spares
    targets = b.ring.targets
    stop = evaluate(b.pruner, b.ridge, b.window, targets, t, s, spare, b.protected, b.move,
                    shared_lambda_min(b.window, targets), evaluations, first)
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
    """``learn_one`` from a validated input and its K targets ``y``, in one call (module
    docstring): each target's error before learning (``targets.error``) and the row
    (``row[:n]``), the inputs' statistics, the pattern, the inputs' running ``means`` (the
    ``committed``-th learned input), the stream layer's step on each target, then
    :func:`continue_sample`. Returns ``QUIET``, ``SLIDE_REFUSED`` (nothing changed),
    ``REFRESH`` (the pattern is in: refresh S, then :func:`continue_sample`) or ``MOVE``."""
    d = x.shape[0]
    t, s, inputs = b.tracked, b.state, b.inputs
    targets = b.ring.targets
    row = _errors_before(b, x, y)
    m = s.weights.shape[0]
    # The model's slopes before learning, tracked once the pattern is in; a relevance of
    # no entries is not tracked (metric="isotropic": nothing reads it).
    track = m > 0 and inputs.relevance.shape[0] == d
    gradient = np.empty(d if track else 0)
    if track:
        _slopes(b, x, row, gradient)
    status = learn_pattern(b.window, b.ridge, x, y, row, t.gram, t.cross_y, t.traffic, t.HT,
                           b.ring.XT, targets.values, targets.moments, t.stamps, s.variance,
                           s.weights, s.lambdas)
    if status == SLIDE_REFUSED:
        return SLIDE_REFUSED
    _track_inputs(b, x, gradient, track)
    _count_and_observe(b, x, y, means, committed)
    if status == REFRESH:
        return REFRESH
    return continue_sample(b, x, evaluations, first)


@jit
def observe_sample(x: np.ndarray, y: np.ndarray, means: np.ndarray, committed: int,
                   evaluations: int, first: int, b: SampleState) -> int:
    """``learn_one`` for a sample the memory does not take in
    (:class:`~onlinesparse.stream.memory.Horizon`): what :func:`stream_sample` does but the
    pattern — each target's error before learning, the leverage ``hᵀSh`` its interval
    reads, the inputs' running ``means``, the stream layer's step, then
    :func:`continue_sample` (the pruner's evaluations and the buffer manager's test).
    Returns ``QUIET``, ``REFRESH`` or ``MOVE``, as :func:`continue_sample` does."""
    row = _errors_before(b, x, y)
    m = b.state.weights.shape[0]
    b.ridge[0].leverage = symmetric_quadratic(b.state.variance, row, m) if m else 0.0
    _count_and_observe(b, x, y, means, committed)
    return continue_sample(b, x, evaluations, first)


@jit
def _count_and_observe(b: SampleState, x: np.ndarray, y: np.ndarray, means: np.ndarray,
                       committed: int) -> None:
    """What every learned sample moves, taken in or not: the count, the inputs' running
    ``means`` (the ``committed``-th learned input) and the stream layer's step."""
    b.record[0].n_learned += 1
    running_mean(means, x, committed)
    _observe(b, y)


@jit
def _errors_before(b: SampleState, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The input's row over every tracked column (``row[:n]``, returned) and each target's
    error before learning (``targets.error``); what the pruner reports is reset to this
    call's."""
    n = b.window[0].n_columns
    t, s = b.tracked, b.state
    row = b.row[:n]
    evaluate_rows(t.kinds, t.centres, t.inv_r2, t.features, x.reshape((1, x.shape[0])), 0,
                  n, row.reshape((1, n)))
    m = s.weights.shape[0]
    error = b.ring.targets.error
    for k in range(y.shape[0]):
        error[k] = y[k] - fit(row, s.weights, m, k)
    b.pruner[0].resized = 0
    b.pruner[0].stop = 0
    b.pruner[0].done = 0
    return row


@jit
def _slopes(b: SampleState, x: np.ndarray, row: np.ndarray, gradient: np.ndarray) -> None:
    """The model's slopes at x (:func:`~onlinesparse.core.relevance.model_gradient`); with
    several targets, along each input ``√(Σₖ ωₖ gₖ²)`` (each target's slope in units of its
    noise level), whose square the relevance tracks."""
    t, s = b.tracked, b.state
    scales = b.ring.targets.scales
    if scales.shape[0] == 1:
        model_gradient(t.kinds, t.centres, t.inv_r2, t.features, s.weights, 0, x, row,
                       gradient)
        return
    one = np.empty(gradient.shape[0])
    squares = np.zeros(gradient.shape[0])
    for k in range(scales.shape[0]):
        model_gradient(t.kinds, t.centres, t.inv_r2, t.features, s.weights, k, x, row, one)
        squares += scales[k] * one * one
    gradient[:] = np.sqrt(squares)


@jit
def _track_inputs(b: SampleState, x: np.ndarray, gradient: np.ndarray, track: bool) -> None:
    """The model's slopes into the inputs' relevance and the error's structure along each
    input (:mod:`~onlinesparse.core.relevance`; one target's only: the errors of several
    are not one signed number), once the pattern is in."""
    inputs = b.inputs
    if inputs.relevance.shape[0] != x.shape[0]:
        return
    count = b.window[0].count
    if track:
        track_relevance(inputs.relevance, gradient, count)
    sr = b.record[0]
    error = b.ring.targets.error
    sr.error_square = track_residual(inputs.residual, inputs.mean, inputs.variance, x,
                                     error[0], sr.error_square, count,
                                     track and error.shape[0] == 1)


@jit
def _observe(b: SampleState, y: np.ndarray) -> None:
    """The stream layer's step on each target (an empty model's prediction is no model's:
    only the running mean moves)."""
    w = b.window[0]
    targets = b.ring.targets
    for k in range(y.shape[0]):
        stream = target_stream(b.stream, k)
        variance = target_variance(b.window, targets.moments, k)
        total = targets.moments[SUM, k]
        if b.state.weights.shape[0] > 0:
            observe(stream, targets.error[k], noise_level(b.window, targets, k),
                    b.ridge[0].leverage, y[k], w.count, total, variance,
                    targets.noise[k] > 0.0)
        else:
            observe_without_model(stream, y[k], w.count, total, variance)
