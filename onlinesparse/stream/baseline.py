"""The predictions every stream can make, as experts beside the model: the running mean of
the targets in memory, and the last target.

The prequential evidence for the model against each (Dawid's prequential principle;
Bayesian model averaging): a sample's ratio scores both by the expert's own predictive
(:func:`~onlinesparse.stream.evidence.log_ratio`), so that one surprising sample cannot
settle it while the expert's variance rests on a few values. Predictions are the
three-component mixture by the evidence (:mod:`~onlinesparse.stream.mixture`), so that a
stream is predicted at least about as well as by the better of the two where the model
has not earned its weight: on the first samples, after a change the model has not caught
up with, and on a time-ordered stream whose target moves more slowly than the model can
follow from its inputs.

* **The running mean** (row ``MEAN_EXPERT``): a Student-t of scale² s²(1 + 1/p) with
  p − 1 degrees of freedom for the p targets in memory. From prior odds of
  e^``PRIOR_LOG_ODDS`` the model has to earn its weight against it: a model fitted to a
  handful of patterns can extrapolate wildly.
* **The last target** (row ``LAST_EXPERT``, persistence): a Student-t centred on the last
  target, of scale² the mean square of the successive differences (over the last
  ``1/PERSISTENCE_RATE`` or fewer), with as many degrees of freedom as differences less
  one. Even prior odds: on a shuffled stream it loses within a few samples, on a slowly
  moving one it wins within a few.

The evidence selects, and by the log score: on a time-ordered stream where the model and
the last target are about as good and err differently, it settles on one of them, and a
blend of the two beats both in squared error. So a third prediction runs beside the
mixture: the model's f moved toward the last target ℓ, q = f + α(ℓ − f), by the share α
that minimises the squared error of q on the recent samples (Bates and Granger's
combination of forecasts, 1969; :func:`learn_blend`). It is weighed against the
mixture's mean p by the same prequential evidence, from the same prior odds, each sample
scored with the share in force before it, by a Student-t of p's recent mean square
error, so that the comparison is of squared errors (:func:`lean_on_last`). A share fitted
in-sample can mislead on a short stream with outliers; there its evidence stays against
it.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse._validation import register_records
from onlinesparse.stream.evidence import PRIOR_LOG_ODDS, accumulate, log_ratio, weight
from onlinesparse.stream.mixture import FLOAT_MAX

__all__ = ["BASELINE", "MEAN_EXPERT", "LAST_EXPERT", "MIN_WEIGHED", "new_baseline",
           "weigh_baselines", "model_share", "blend_share", "lean_on_last"]

# (The blend's fields, kept in the last target's row: cross and spread, the discounted
# Σde and Σd² for e = y − f and d = ℓ − f, f the model's prediction and ℓ the last target;
# errors and blend_errors, the discounted mean squares of the mixture's and the blend's
# errors; blended, the samples they weigh; blend_odds, the evidence for the blend.)
BASELINE = np.dtype([("log_odds", np.float64), ("weight", np.float64),
                     ("mean", np.float64), ("variance", np.float64),
                     ("samples", np.float64), ("enabled", np.bool_),
                     ("cross", np.float64), ("spread", np.float64),
                     ("errors", np.float64), ("blend_errors", np.float64),
                     ("blended", np.float64), ("blend_odds", np.float64)])
MEAN_EXPERT, LAST_EXPERT = 0, 1
# An expert is not judged before its variance rests on this many values.
MIN_WEIGHED = 3
# The last target's variance follows the successive differences over about 200 samples.
PERSISTENCE_RATE = 1.0 / 200.0
# The blend's sums weigh about the last 1000 samples: its share is a property of the stream,
# which moves slowly, and on a shuffled stream the estimate's cost is about 1/(2n) of the MSE.
BLEND_RATE = 1.0 / 1000.0
# (the layout a pickle is stamped with: _validation.Versioned)
register_records(BASELINE=BASELINE)


def new_baseline(last_target: bool = True) -> np.ndarray:
    """Both experts before any target: the mean at prior odds e^``PRIOR_LOG_ODDS`` for the
    model, the last target at even odds; neither predicts yet (weight 0). ``last_target``
    False leaves the last target out (a model queried at inputs of its own choosing, not
    at the stream's next sample: a controller's feedforward at the desired state, which
    the last applied torque would feed back into the loop)."""
    record = np.zeros(2, dtype=BASELINE)
    record[MEAN_EXPERT]["log_odds"] = PRIOR_LOG_ODDS
    record[MEAN_EXPERT]["enabled"] = True
    record[LAST_EXPERT]["enabled"] = last_target
    record[LAST_EXPERT]["blend_odds"] = PRIOR_LOG_ODDS
    return record


@jit
def weigh_baselines(baseline: np.ndarray, y: float, error: float, count: float,
                    total: float, variance: float, judge: bool) -> None:
    """One target's evidence for the model (whose prediction missed ``y`` by ``error``)
    against each expert's prediction made for it (``judge`` False: no model, no evidence),
    then the experts' predictions for the next sample: the mean of the ``count`` targets in
    memory (y included), summing to ``total``, of variance ``variance``; and ``y``."""
    mean, last = baseline[MEAN_EXPERT], baseline[LAST_EXPERT]
    if judge and last.enabled and last.samples > MIN_WEIGHED:
        learn_blend(baseline, y, y - error)
    if judge and mean.variance > 0.0:
        ratio = log_ratio(error, y - mean.mean, mean.variance, count - 2.0)
        mean.log_odds = accumulate(mean.log_odds, ratio, PRIOR_LOG_ODDS, 1.0)
    if judge and last.enabled and last.samples > MIN_WEIGHED and last.variance > 0.0:
        ratio = log_ratio(error, y - last.mean, last.variance, last.samples - 2.0)
        last.log_odds = accumulate(last.log_odds, ratio, 0.0, 1.0)
    mean.mean = total / count if count > 0.0 else 0.0
    mean.variance = variance * (1.0 + 1.0 / count) if count >= MIN_WEIGHED else 0.0
    if last.samples >= 1.0:  # (samples: targets seen; their differences, one fewer)
        step = y - last.mean
        last.variance += max(1.0 / last.samples, PERSISTENCE_RATE) * (
            step * step - last.variance)
    last.samples += 1.0
    last.mean = y
    _weigh(baseline)


@jit
def learn_blend(baseline: np.ndarray, y: float, model: float) -> None:
    """The blend after target ``y`` of a sample for which the model predicted ``model``
    (f): the evidence for the blend q made with the share in force against the mixture's
    mean p as made, then the discounted sums."""
    mean, last = baseline[MEAN_EXPERT], baseline[LAST_EXPERT]
    p = model_share(baseline) * model + mean.weight * mean.mean + last.weight * last.mean
    e, d = y - model, last.mean - model
    if not (abs(e) < FLOAT_MAX and abs(d) < FLOAT_MAX and abs(y - p) < FLOAT_MAX):
        return  # (a prediction past the floats says nothing of the blend)
    miss = e - blend_share(baseline) * d
    if last.blended > MIN_WEIGHED and last.errors > 0.0:
        ratio = log_ratio(miss, y - p, last.errors, last.blended - 2.0)
        last.blend_odds = accumulate(last.blend_odds, ratio, PRIOR_LOG_ODDS, 1.0)
    last.blended += 1.0
    rate = max(1.0 / last.blended, BLEND_RATE)
    last.cross += rate * (d * e - last.cross)
    last.spread += rate * (d * d - last.spread)
    last.errors += rate * ((y - p) * (y - p) - last.errors)
    last.blend_errors += rate * (miss * miss - last.blend_errors)


@jit
def blend_share(baseline: np.ndarray) -> float:
    """α = Σde / Σd², the share of the last target that minimises the squared error of
    f + α(ℓ − f) on the recent samples, in [0, 1] (0 before the sums say anything)."""
    last = baseline[LAST_EXPERT]
    if not (last.cross > 0.0 and last.spread > 0.0 and last.blended > MIN_WEIGHED):
        return 0.0
    return min(last.cross / last.spread, 1.0)


@jit
def lean_on_last(baseline: np.ndarray, model: float, mean: float, variance: float
                 ) -> tuple[float, float]:
    """The mixture's ``mean`` (p) and ``variance`` moved toward the blend q = f + α(ℓ − f)
    of the ``model``'s prediction f and the last target ℓ by the blend's weight w by its
    evidence: p + w(q − p), the variance scaled by (1 − w) + w·(q's recent mean square
    error over p's), held at the largest float as the mixture's is (a blend whose errors
    dwarf p's, after an input far outside the data, made an infinite σ)."""
    last = baseline[LAST_EXPERT]
    # (no sums without the last target: learn_blend runs only while it is an expert)
    w = weight(last.blend_odds) if last.errors > 0.0 else 0.0
    if w == 0.0:
        return mean, variance
    q = model + blend_share(baseline) * (last.mean - model)
    ratio = last.blend_errors / last.errors
    return mean + w * (q - mean), min(variance * (1.0 - w + w * ratio), FLOAT_MAX)


@jit
def _weigh(baseline: np.ndarray) -> None:
    """Each expert's share of the mixture, the model's being the rest (:func:`model_share`):
    the posterior of three by the two pairwise log-odds, an expert whose variance is no
    estimate yet left out."""
    mean, last = _odds(baseline, MEAN_EXPERT), _odds(baseline, LAST_EXPERT)
    total = 1.0 + mean + last  # (the model's odds against itself: 1)
    baseline[MEAN_EXPERT].weight = mean / total
    baseline[LAST_EXPERT].weight = last / total


@jit
def _odds(baseline: np.ndarray, k: int) -> float:
    """Expert ``k``'s odds against the model, 0 while it does not predict."""
    e = baseline[k]
    if e.enabled and e.variance > 0.0 and (k == MEAN_EXPERT or e.samples > MIN_WEIGHED):
        return math.exp(-e.log_odds)
    return 0.0


@jit
def model_share(baseline: np.ndarray) -> float:
    """The model's share of the prediction: what the experts leave (not below 0: at
    odds of e^±40 the difference is rounding)."""
    return max(1.0 - baseline[MEAN_EXPERT].weight - baseline[LAST_EXPERT].weight, 0.0)
