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
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.stream.evidence import PRIOR_LOG_ODDS, accumulate, log_ratio

__all__ = ["BASELINE", "MEAN_EXPERT", "LAST_EXPERT", "MIN_WEIGHED", "new_baseline",
           "weigh_baselines", "model_share"]

BASELINE = np.dtype([("log_odds", np.float64), ("weight", np.float64),
                     ("mean", np.float64), ("variance", np.float64),
                     ("samples", np.float64), ("enabled", np.bool_)])
MEAN_EXPERT, LAST_EXPERT = 0, 1
# An expert is not judged before its variance rests on this many values.
MIN_WEIGHED = 3
# The last target's variance follows the successive differences over about 200 samples.
PERSISTENCE_RATE = 1.0 / 200.0


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
    return record


@jit
def weigh_baselines(baseline: np.ndarray, y: float, error: float, count: float,
                    total: float, variance: float, judge: bool) -> None:
    """One target's evidence for the model (whose prediction missed ``y`` by ``error``)
    against each expert's prediction made for it (``judge`` False: no model, no evidence),
    then the experts' predictions for the next sample: the mean of the ``count`` targets in
    memory (y included), summing to ``total``, of variance ``variance``; and ``y``."""
    mean, last = baseline[MEAN_EXPERT], baseline[LAST_EXPERT]
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
