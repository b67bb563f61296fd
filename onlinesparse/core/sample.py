"""One sample of :class:`~onlinesparse.orr.rbf.SparseRBFRegressor` in one compiled call.

A sample is: the row of the input over every tracked column and the error before learning
(:func:`~onlinesparse.core.basis.evaluate_rows`); the pattern (:func:`learn_pattern`:
Orr (1996) A.8 and A.11, the window's bookkeeping, the rounding accounts, the rolling
refresh, the verdict on S); the pruner's evaluations
(:func:`~onlinesparse.core.pruning.evaluate`); the buffer manager's test of the input as a
centre and, periodically, the noise estimate (:func:`consider`). Each step is the one
implementation of its operation: ``IncrementalRidge.add_pattern`` calls
:func:`learn_pattern`, ``GCVPruner.step`` calls ``evaluate``.

Rare work stops the call with a status for the caller, which does it and continues the
sample with :func:`continue_sample`: a refresh of S (LAPACK), a move that needs the stored
rows, the add-first order of a slide whose removal would leave the model singular.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.basis import (
    evaluate_rows,
    inner,
    nearest_sq_distance,
    predict_mean_and_spread,
)
from onlinesparse.core.criteria import noise_estimate
from onlinesparse.core.health import REFRESH_NOW, account, close_round, decide, is_healthy
from onlinesparse.core.level import level_mixture, track_level
from onlinesparse.core.pruning import FINISHED, HAND_BACK, Ridge, Tracked, criteria_now, evaluate
from onlinesparse.core.relevance import model_gradient, track_relevance, track_residual
from onlinesparse.core.selection import lambda_min, proposes
from onlinesparse.core.statistics import gram_rank_one, rolling_refresh, running_mean
from onlinesparse.core.updates import MIN_RESIDUAL_LEVERAGE, sherman_morrison, slide_window

# What learn_pattern returns: the pattern is in; nothing changed, because the oldest
# pattern cannot leave first (the caller adds first, then removes); the pattern is in and
# S is to be refreshed now (RIDGE.pending says what).
LEARNED, SLIDE_REFUSED, REFRESH = 0, 1, 2
# What stream_sample and continue_sample return besides those: the sample is done; the
# pruner stopped at a move for the caller (PRUNER.stop, PRUNER.action).
QUIET, MOVE = 3, 4

__all__ = ["LEARNED", "SLIDE_REFUSED", "REFRESH", "QUIET", "MOVE", "learn_pattern",
           "consider", "stream_sample", "continue_sample"]


@jit
def learn_pattern(window_record: np.ndarray, ridge_record: np.ndarray, x: np.ndarray,
                  y: float, row: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                  traffic: np.ndarray, HT: np.ndarray, XT: np.ndarray, targets: np.ndarray,
                  stamps: np.ndarray, variance: np.ndarray, weights: np.ndarray,
                  lambdas: np.ndarray) -> int:
    """Add a pattern to a window that stores its patterns, the oldest leaving a full one
    (``IncrementalRidge.add_pattern``); ``row`` is its row over every tracked column.

    A full window slides (:func:`~onlinesparse.core.updates.slide_window`: Orr A.11 for the
    oldest pattern and A.8 for the new one in one rank-two pass over S and G); a filling
    one takes the pattern (Orr A.8). The new pattern takes the oldest one's slot of the
    ring. Then the rounding accounts, a full window's share of the rolling refresh
    (:func:`~onlinesparse.core.statistics.rolling_refresh`) and the verdict on S
    (:func:`~onlinesparse.core.health.decide`). Returns ``LEARNED``, ``SLIDE_REFUSED``
    (nothing changed) or ``REFRESH``.
    """
    w = window_record[0]
    r = ridge_record[0]
    n = w.n_columns
    m = weights.shape[0]
    capacity = w.store_capacity
    head = w.head
    if w.n_stored >= capacity:
        h_old = HT[:n, head].copy()
        y_old = targets[head]
        out = np.empty(5)
        if not slide_window(gram, cross_y, traffic, n, variance, weights, m, row, y, h_old,
                            y_old, MIN_RESIDUAL_LEVERAGE, np.empty(m), out):
            return SLIDE_REFUSED
        w.yy -= y_old * y_old
        w.yy += y * y
        w.sum_y += y - y_old
        slot = head
        w.head = (head + 1) % targets.shape[0]
        removal, addition, cancellation = out[0], out[1], out[2]
        healthy = out[3] > 0.0
        r.leverage = out[4]
        if m > 0:  # (a model without basis functions has no S to account for)
            r.error_estimate = account(r.error_estimate, 1.0 / removal, 1.0 / removal)
            r.statistics_error += cancellation
            r.round_error += cancellation
            r.error_estimate = account(r.error_estimate, 1.0, cancellation)
            r.error_estimate = account(r.error_estimate, 1.0 / addition, addition)
    else:
        gram_rank_one(gram, cross_y, traffic, n, row, y, 1.0)
        w.yy += y * y
        w.sum_y += y
        w.count += 1.0
        slot = (head + w.n_stored) % targets.shape[0]  # (a ring still growing: its size)
        w.n_stored += 1
        healthy = True
        r.leverage = 0.0
        if m > 0:
            addition = sherman_morrison(variance, weights, row[:m], y, 1.0, -math.inf,
                                        np.empty(m))
            r.leverage = addition - 1.0
            r.error_estimate = account(r.error_estimate, 1.0 / addition, addition)
            healthy = is_healthy(variance, weights)
    XT[:, slot] = x
    targets[slot] = y
    HT[:n, slot] = row[:n]
    w.n_seen += 1
    r.version += 1
    exact_since = -1
    if w.n_stored >= capacity:
        credit, fresh_yy, exact = rolling_refresh(HT, targets, gram, cross_y, stamps,
                                                  traffic, n, w.n_seen, w.refresh_credit,
                                                  r.refresh_every)
        w.refresh_credit = credit
        if exact >= 0:
            w.yy = fresh_yy
            w.sum_y = np.sum(targets)  # (a full ring: every slot holds a pattern)
            w.exact_since = exact
        exact_since = w.exact_since
        close_round(ridge_record, exact_since, w.n_seen)
    if decide(ridge_record, True, exact_since, 1 if healthy else 0, False, gram, traffic,
              variance, weights, lambdas) == REFRESH_NOW:
        return REFRESH
    return LEARNED


# The 95 % interval's half-width in standard deviations, and the step of its calibration.
Z95 = 1.959963984540054
CALIBRATION_STEP = 0.1
CALIBRATION_LIMIT = 5.0  # |log κ| at most: κ within [0.007, 148]


@jit
def target_variance(window_record: np.ndarray) -> float:
    """The variance of the targets in memory, ``yᵀy/p − (Σy/p)²`` (at least 1e-12 of the
    second moment): the target's scale, which makes the model's decisions independent of
    the unit of y."""
    w = window_record[0]
    if w.count <= 0.0:
        return 0.0
    mean = w.sum_y / w.count
    second = w.yy / w.count
    return max(second - mean * mean, 1e-12 * second)


@jit
def noise_level(sample_record: np.ndarray, window_record: np.ndarray) -> float:
    """The noise variance in use: the last estimate (FGCV eq. 8), or before the first one
    the target's variance (what predicting the mean leaves), never a constant in some
    unit."""
    estimate = sample_record[0].noise_variance
    return estimate if estimate > 0.0 else target_variance(window_record)


@jit
def shrink_to_prior(sample_record: np.ndarray, window_record: np.ndarray, mean: float,
                    spread: float) -> tuple[float, float]:
    """The model's prediction ``mean = h(x)ᵀw`` at x, with ``spread = h(x)ᵀSh(x)``,
    combined with a prior on the function's value there, f(x) ~ N(ȳ, s²): the mean and
    variance of the targets in memory. Returns the posterior mean and the predictive
    variance before calibration, ``(ȳ + c·(mean − ȳ), σ² + c·v)`` with ``v = σ²·spread``
    the variance of the model's estimate and ``c = s²/(s² + κ²v)``, κ the calibration
    factor of the predictive deviation (:func:`calibrate`: where the model's intervals
    have been too narrow, its estimate counts for less).

    Inside the data v is a small fraction of s² and c is 1 to a few parts in a thousand.
    Where the model knows little (basis functions fitted on few patterns, linear terms
    extrapolated far from them), v grows beyond s² and the prediction returns toward the
    mean of the targets, instead of running off to values no target has come near.
    (Precision weighting of two Gaussian estimates of f(x), the ridge's and the prior's.)
    A model pickled before this existed (``prior_shrink`` 0) predicts as it did."""
    noise = noise_level(sample_record, window_record)
    w = window_record[0]
    v = noise * max(spread, 0.0)
    prior = target_variance(window_record)
    if (not sample_record[0].prior_shrink or w.count <= 0.0
            or not (v == v and prior > 0.0)):  # (no prior, or no spread: as is)
        return mean, noise + v
    centre = w.sum_y / w.count
    if math.isinf(v):  # (nothing known at x: the prior)
        return centre, noise + prior
    c = prior / (prior + v * math.exp(2.0 * sample_record[0].calibration))
    return centre + c * (mean - centre), noise + c * v


@jit
def model_prediction(x: np.ndarray, sample_record: np.ndarray, window_record: np.ndarray,
                     kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                     features: np.ndarray, weights: np.ndarray, variance: np.ndarray
                     ) -> tuple[float, float]:
    """The model's prediction at x and its predictive variance in one call
    (``SparseRBFRegressor.predict_one``): :func:`predict_mean_and_spread`, then
    :func:`shrink_to_prior`."""
    mean, spread = predict_mean_and_spread(x, kinds, centres, inv_r2, features, weights,
                                           variance)
    return shrink_to_prior(sample_record, window_record, mean, spread)


@jit
def calibrate(sample_record: np.ndarray, spread: float, error: float, made: float) -> None:
    """One step of the predictive deviations' calibration (adaptive conformal inference,
    Gibbs and Candès 2021, on a scale): a factor grows by e^(0.95η) when the error before
    learning fell outside its 95 % interval and shrinks by e^(−0.05η) when it fell inside,
    so that in the long run 5 % fall outside whatever the stream (a noise estimate from
    few patterns, heavy tails, drift, inputs far from the centres). Two factors:

    * κ (``calibration``), of the model's own deviation ``κσ√(1 + hᵀSh)`` (``spread`` is
      its square, :func:`model_spread`), on its own ``error``. That error in units of
      this deviation (before the step), clipped at ±3, is ``sample_record.z``, which
      :func:`watch_for_change` accumulates.
    * κ_o (``outer_calibration``), of the deviation of the prediction as made,
      ``κ_o√(κ²σ²(1 + hᵀSh) + v_b)`` with v_b the variance of the errors' level
      (:mod:`~onlinesparse.core.level`), on that prediction's error ``made``. Where the
      level explains part of the model's errors, κ alone would leave the interval too
      wide.

    The change statistics and the level watch the model itself: a level that follows a
    change must not hide it from the memory."""
    s = sample_record[0]
    if not spread > 0.0:
        s.z = 0.0
        return
    deviation = math.sqrt(spread)
    s.z = min(max(error / deviation, -3.0), 3.0)
    outer = math.exp(s.outer_calibration) * math.sqrt(spread + s.level_variance)
    s.calibration = calibration_step(s.calibration, error, deviation)
    s.outer_calibration = calibration_step(s.outer_calibration, made, outer)
    watch_for_change(sample_record)


@jit
def calibration_step(log_scale: float, error: float, deviation: float) -> float:
    """One step of a calibration factor's logarithm (:func:`calibrate`): up by 0.95η when
    ``error`` fell outside ``±Z95·deviation``, down by 0.05η when inside, bounded."""
    miss = abs(error) > Z95 * deviation
    step = CALIBRATION_STEP * ((1.0 if miss else 0.0) - 0.05)
    return min(max(log_scale + step, -CALIBRATION_LIMIT), CALIBRATION_LIMIT)


@jit
def model_spread(sample_record: np.ndarray, window_record: np.ndarray,
                 leverage: float) -> float:
    """The model's calibrated predictive variance at an input of leverage ``hᵀSh``,
    ``κ²σ²(1 + hᵀSh)``."""
    noise = noise_level(sample_record, window_record)
    return math.exp(2.0 * sample_record[0].calibration) * noise * (1.0 + leverage)


@jit
def judge_prediction(sample_record: np.ndarray, window_record: np.ndarray,
                     levels: np.ndarray, leverage: float, y: float) -> None:
    """What a sample's target says of the prediction made for it: the error of the
    prediction as made (the model's plus the errors' level) and the model's own
    calibrate the two deviations (:func:`calibrate`) and the first weighs the model against
    the mean (:func:`weigh_against_mean`); the model's own error moves the level's
    filters (:func:`~onlinesparse.core.level.track_level`) once the noise has been
    estimated — before that, the level has no unit."""
    s = sample_record[0]
    spread = model_spread(sample_record, window_record, leverage)  # (κ before this step)
    made = s.error - s.level_offset
    calibrate(sample_record, spread, s.error, made)
    weigh_against_mean(sample_record, window_record, y, made)
    if s.noise_variance > 0.0:
        track_level(levels, s.error, spread, s.noise_variance)
        s.level_offset, s.level_variance = level_mixture(levels)


# The bound on the evidence for either side: past it the losing side's weight is below
# e^(−40) ≈ 4e-18 (the winner's weight is 1 to the last bit), and 40 nats of contrary
# evidence — a dozen errors of three deviations — hand the prediction back.
LOG_ODDS_LIMIT = 40.0
MIN_WEIGHED = 3
# The prior odds of the model against the mean before any evidence: e^(−4), a weight of
# 2 % for a model that has yet to predict anything. A model fitted by GCV to a handful of
# patterns behind a young scaler can extrapolate wildly; with even odds one such
# prediction on Friedman #1 (37 for a target of 9, the fifth sample) cost the first ten
# samples an RMSE of 6.97 against the mean's 4.75 (4.77 at these odds). Four nats are a
# few samples of clearly better predictions; TrumpApproval, ChickWeights and Friedman
# #1 end the same or better.
PRIOR_LOG_ODDS = -4.0


@jit
def evidence_ratio(error: float, miss: float, variance: float, dof: float) -> float:
    """The log-likelihood ratio of a prediction with ``error`` against one with ``miss``,
    both scored by the mean's predictive: a Student-t of scale² ``variance`` and ``dof``
    (≥ 1) degrees of freedom, the predictive of a Gaussian whose mean and variance are
    estimated from ``dof + 1`` patterns. ``−(ν+1)/2·[log(1 + e²/(νv)) − log(1 + m²/(νv))]``,
    which tends to the Gaussian ``(m² − e²)/(2v)`` as ν grows. Its tails bound what one
    sample can say while the variance rests on a few patterns: on Friedman #1 shifted so
    that its first target is 0, the Gaussian ratio gave the model 18.7 nats at the fourth
    sample, against a variance of 0.37 estimated from three targets where the target's is
    25, and the running mean never weighed again."""
    nu = max(dof, 1.0)
    scale = nu * variance
    return -0.5 * (nu + 1.0) * (math.log1p(error * error / scale)
                                - math.log1p(miss * miss / scale))


@jit
def weigh_against_mean(sample_record: np.ndarray, window_record: np.ndarray, y: float,
                       error: float) -> None:
    """The prequential evidence for the model against the simplest one, the mean of the
    targets in memory (Dawid's prequential principle; Bayesian model averaging of the
    two). Both are scored by one predictive, the mean's own: a Student-t of scale²
    s²(1 + 1/p) with p − 1 degrees of freedom (:func:`evidence_ratio`), so that the
    evidence compares their predictions and not how confident either claims to be, and
    one surprising sample cannot settle it while s² rests on a few patterns. The ratio
    (about ``(miss² − error²)/(2s²(1 + 1/p))`` once p is large) is added to ``log_odds``
    (bounded by ±``LOG_ODDS_LIMIT``, so that either can take over again), and
    ``model_weight`` is its posterior probability (from prior odds of
    e^``PRIOR_LOG_ODDS``: a model has to earn its weight). The mean's prediction for the next
    sample is then set from the window (y included: call after the pattern is in); it
    is not judged before the window holds ``MIN_WEIGHED`` patterns, since before that
    its variance is no estimate.

    A model fitted by GCV to a handful of patterns is easily fooled; its predictions are
    ``w·(f(x) + b) + (1 − w)·ȳ`` (``SparseRBFRegressor.predict_one``, b the errors'
    level), so that on the first samples, or after a change it has not caught up with, a
    stream is predicted at least about as well as by its running mean, and the model
    takes over as its evidence grows."""
    s = sample_record[0]
    w = window_record[0]
    if s.mean_variance > 0.0:
        ratio = evidence_ratio(error, y - s.mean_prediction, s.mean_variance, w.count - 2.0)
        if ratio == ratio:  # (both errors overflowing the scale say nothing: NaN)
            s.log_odds = min(max(s.log_odds + ratio, -LOG_ODDS_LIMIT), LOG_ODDS_LIMIT)
    s.model_weight = 1.0 / (1.0 + math.exp(-s.log_odds))
    s.mean_prediction = w.sum_y / w.count if w.count > 0.0 else 0.0
    s.mean_variance = (target_variance(window_record) * (1.0 + 1.0 / w.count)
                       if w.count >= MIN_WEIGHED else 0.0)


# The change statistics' allowance (a shift of the errors' mean by 2k deviations is what
# the bias statistics are tuned to) and their alarm threshold: with k = 0.5 and h = 10 a
# one-sided statistic of standard normal errors raises a false alarm about once in 10⁵
# samples (Siegmund's approximation) and finds a shift of one deviation in about 20.
CHANGE_ALLOWANCE = 0.5
CHANGE_THRESHOLD = 10.0
# Patterns a window holds before a building change holds the noise estimate back (and at
# least three of the estimate's periods): a younger model is still learning.
YOUNG_WINDOW = 60.0
# The scale statistic's increment, the log-likelihood ratio of a deviation twice the
# calibrated one: (1 − 1/4)·z²/2 − log 2.
SCALE_WEIGHT = 0.375
SCALE_OFFSET = math.log(2.0)


@jit
def watch_for_change(sample_record: np.ndarray) -> None:
    """The memory's change detectors: Page's CUSUM on the calibrated errors ``z``,
    three one-sided statistics — the errors' mean going up, going down, and their scale
    doubling (the log-likelihood ratio of N(0, 4) against N(0, 1)). Each is
    ``max(0, S + increment)``; the samples since it was last 0 (``run_*``) are its
    estimate of how long ago the stream changed. When one exceeds ``CHANGE_THRESHOLD``,
    ``change_keep`` is set to that estimate (the caller forgets the patterns before it)
    and every statistic starts again.

    On a stationary stream whose errors the calibration describes, the statistics drift
    back to 0 (the increments' means are −k and about −0.32); after a change that
    moves the errors by several deviations an alarm comes within a few samples."""
    s = sample_record[0]
    z = s.z
    s.cusum_up, s.run_up = _cusum_step(s.cusum_up, s.run_up, z - CHANGE_ALLOWANCE)
    s.cusum_down, s.run_down = _cusum_step(s.cusum_down, s.run_down, -z - CHANGE_ALLOWANCE)
    s.cusum_scale, s.run_scale = _cusum_step(s.cusum_scale, s.run_scale,
                                             SCALE_WEIGHT * z * z - SCALE_OFFSET)
    run = -1
    if s.cusum_up > CHANGE_THRESHOLD:
        run = s.run_up
    if s.cusum_down > CHANGE_THRESHOLD:
        run = max(run, s.run_down)
    if s.cusum_scale > CHANGE_THRESHOLD:
        run = max(run, s.run_scale)
    if run < 0:
        return
    s.change_keep = max(run, 1)
    s.cusum_up = s.cusum_down = s.cusum_scale = 0.0
    s.run_up = s.run_down = s.run_scale = 0


@jit
def _cusum_step(statistic: float, run: int, increment: float) -> tuple[float, int]:
    statistic = max(statistic + increment, 0.0)
    return statistic, (run + 1 if statistic > 0.0 else 0)


@jit
def consider(sample_record: np.ndarray, ridge_record: np.ndarray,
             window_record: np.ndarray, x: np.ndarray, t: Tracked, s: Ridge) -> None:
    """The buffer manager's test of a learned input as a centre (``BufferManager.consider``:
    :func:`~onlinesparse.core.selection.proposes` on its distance to the nearest radial
    centre), and on one sample in ``noise_every`` the noise estimate (FGCV eq. 8,
    :func:`~onlinesparse.core.criteria.noise_estimate`), which sets λ_min and the
    predictive distribution — unless a change is building (:func:`_change_building`)."""
    sr = sample_record[0]
    w = window_record[0]
    nearest = nearest_sq_distance(t.kinds, t.centres, t.inv_r2, w.n_columns, x)
    sr.nearest = nearest
    sr.propose = 1 if proposes(nearest, sr.novelty_sq, sr.error,
                               math.sqrt(noise_level(sample_record, window_record)),
                               sr.error_threshold) else 0
    if sr.n_learned % sr.noise_every == 0 and not _change_building(sample_record, w.count):
        training, gamma = criteria_now(ridge_record, window_record, t.gram, t.cross_y,
                                       s.variance, s.weights, s.lambdas)
        sr.noise_variance = noise_estimate(training, gamma, w.count, sr.noise_variance)


@jit
def change_underway(sample_record: np.ndarray) -> bool:
    """Whether a change is building up: one of the three change statistics
    (:func:`watch_for_change`) is past half its alarm threshold."""
    s = sample_record[0]
    return max(s.cusum_up, s.cusum_down, s.cusum_scale) > 0.5 * CHANGE_THRESHOLD


@jit
def _change_building(sample_record: np.ndarray, count: float) -> bool:
    """Whether a change is building up (:func:`change_underway`) in a window of at
    least ``YOUNG_WINDOW`` patterns and three noise periods: the noise estimate then
    waits (until the alarm, or until the statistic falls back). Patterns of a new
    concept that the window already holds raise the estimate within a few samples, and
    the errors measured in the raised noise no longer reach the alarm: on a target that
    flips sign, the scale statistic stood at 8 of 10 when an estimate of three times the
    noise came, and the change was never caught. An in-control scale is estimated from
    in-control data. A young window is not in control yet: its model is still learning,
    its errors are biased, and holding its first estimates made a false alarm at sample
    56 of Friedman #1."""
    return (count >= max(YOUNG_WINDOW, 3.0 * sample_record[0].noise_every)
            and change_underway(sample_record))


@jit
def continue_sample(sample_record: np.ndarray, pruner_record: np.ndarray,
                    ridge_record: np.ndarray, window_record: np.ndarray, x: np.ndarray,
                    gram: np.ndarray, cross_y: np.ndarray, traffic: np.ndarray,
                    HT: np.ndarray, ids: np.ndarray, merit: np.ndarray, stamps: np.ndarray,
                    kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                    features: np.ndarray, variance: np.ndarray, weights: np.ndarray,
                    lambdas: np.ndarray, spare_variance: np.ndarray,
                    spare_weights: np.ndarray, spare_lambdas: np.ndarray,
                    protected: np.ndarray, move: np.ndarray, evaluations: int,
                    first: int) -> int:
    """The rest of a sample once its pattern is in: the pruner's evaluations, then
    :func:`consider`. Returns ``QUIET``, ``MOVE`` (the pruner handed a move back) or
    ``REFRESH`` (a move was made and S is to be refreshed now); after either of the last
    two the caller does what is asked and calls this again with the evaluations left."""
    w = window_record[0]
    floor = lambda_min(noise_level(sample_record, window_record), w.count,
                       target_variance(window_record))
    stop = evaluate(pruner_record, ridge_record, window_record, gram, cross_y, traffic, HT,
                    ids, merit, stamps, kinds, centres, inv_r2, features, variance, weights,
                    lambdas, spare_variance, spare_weights, spare_lambdas, protected, move,
                    floor, evaluations, first)
    if stop == HAND_BACK:
        return MOVE
    if stop != FINISHED:
        return REFRESH
    t = Tracked(gram, cross_y, traffic, HT, ids, merit, stamps, kinds, centres, inv_r2,
                features)
    m = w.n_model
    if pruner_record[0].resized:  # (the state now lives in the spare arrays)
        s = Ridge(spare_variance[:m * m].reshape((m, m)), spare_weights[:m],
                  spare_lambdas[:m])
    else:
        s = Ridge(variance, weights, lambdas)
    consider(sample_record, ridge_record, window_record, x, t, s)
    return QUIET


@jit
def stream_sample(x: np.ndarray, y: float, means: np.ndarray, committed: int,
                  evaluations: int, first: int, sample_record: np.ndarray,
                  levels: np.ndarray, relevance: np.ndarray, residual: np.ndarray,
                  input_mean: np.ndarray, input_var: np.ndarray, pruner_record: np.ndarray,
                  ridge_record: np.ndarray, window_record: np.ndarray, row: np.ndarray,
                  gram: np.ndarray,
                  cross_y: np.ndarray, traffic: np.ndarray,
                  HT: np.ndarray, XT: np.ndarray, targets: np.ndarray, ids: np.ndarray,
                  merit: np.ndarray, stamps: np.ndarray, kinds: np.ndarray,
                  centres: np.ndarray, inv_r2: np.ndarray, features: np.ndarray,
                  variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray,
                  spare_variance: np.ndarray, spare_weights: np.ndarray,
                  spare_lambdas: np.ndarray, protected: np.ndarray, move: np.ndarray
                  ) -> int:
    """``SparseRBFRegressor.learn_one`` from a validated input, in one call: the row and
    the error before learning (``sample_record.error``, ``row[:n]``), the model's slopes
    at x into the inputs' ``relevance`` and the error's structure along each input into
    ``residual``, ``input_mean`` and ``input_var`` (:mod:`~onlinesparse.core.relevance`),
    :func:`learn_pattern`,
    the inputs' running means (``means``, the ``committed``-th learned input), then
    :func:`continue_sample`. Returns ``QUIET``, ``SLIDE_REFUSED`` (nothing changed),
    ``REFRESH`` (the pattern is in: refresh S, then :func:`continue_sample`) or ``MOVE``.

    At M = 100 the interpreter overhead of a dozen Python calls per sample cost more than
    their arithmetic, hence one call.
    """
    n = window_record[0].n_columns
    d = x.shape[0]
    row = row[:n]
    evaluate_rows(kinds, centres, inv_r2, features, x.reshape((1, d)), 0, n,
                  row.reshape((1, n)))
    sample_record[0].error = y - inner(row, weights, weights.shape[0])
    # The model's slopes before learning, tracked once the pattern is in; a relevance of
    # no entries is not tracked (metric="isotropic": nothing reads it).
    track = weights.shape[0] > 0 and relevance.shape[0] == d
    gradient = np.empty(d if track else 0)
    if track:
        model_gradient(kinds, centres, inv_r2, features, weights, x, row, gradient)
    pruner_record[0].resized = 0  # (what the pruner reports is this call's)
    pruner_record[0].stop = 0
    pruner_record[0].done = 0
    status = learn_pattern(window_record, ridge_record, x, y, row, gram, cross_y, traffic,
                           HT, XT, targets, stamps, variance, weights, lambdas)
    if status == SLIDE_REFUSED:
        return SLIDE_REFUSED
    if relevance.shape[0] == d:
        count = window_record[0].count
        if track:
            track_relevance(relevance, gradient, count)
        sample_record[0].error_square = track_residual(
            residual, input_mean, input_var, x, sample_record[0].error,
            sample_record[0].error_square, count, track)
    sample_record[0].n_learned += 1
    running_mean(means, x, committed)
    if weights.shape[0] > 0:  # (an empty model's prediction is no model's)
        judge_prediction(sample_record, window_record, levels, ridge_record[0].leverage, y)
    else:
        sample_record[0].z = 0.0  # (nothing to judge: no change statistics either)
        weigh_against_mean(sample_record, window_record, y, y - sample_record[0].mean_prediction)
    if status == REFRESH:
        return REFRESH
    return continue_sample(sample_record, pruner_record, ridge_record, window_record, x,
                           gram, cross_y, traffic, HT, ids, merit, stamps, kinds, centres,
                           inv_r2, features, variance, weights, lambdas, spare_variance,
                           spare_weights, spare_lambdas, protected, move, evaluations,
                           first)
