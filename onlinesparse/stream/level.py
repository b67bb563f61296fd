"""The level of a stream's errors: a wandering offset tracked beside the model.

A stream recorded in time order often leaves errors that are correlated from one sample
to the next — a chick heavier than every chick seen so far, an opinion poll moving with
the news, a sensor whose offset drifts with temperature. A regression on the inputs cannot
see that level; the last few errors can. Each filter here is the local-level model of
Bayesian forecasting (West and Harrison, *Bayesian Forecasting and Dynamic Models*,
ch. 2): the model's error is ``e_t = b_t + ε_t`` with ``ε_t ~ N(0, r_t)`` (the model's
calibrated predictive variance) and a level that walks, ``b_t = b_{t−1} + η_t``,
``η_t ~ N(0, q·σ²)``; a Kalman filter keeps its posterior ``N(m, P)``.

How fast a level may walk is not known in advance, so there is one filter per drift q in
``LEVEL_DRIFTS`` (memories of about 1/√q: 30, 10 and 3 samples) beside the model without
a level (``b ≡ 0``), and the four are averaged by their prequential evidence
(:mod:`~onlinesparse.stream.evidence`, :mod:`~onlinesparse.stream.mixture`). On a stream
whose errors are independent the evidence goes to the model without a level and the
offset fades to 0; where they are correlated, the offset is the mixture's mean and its
variance joins the predictive variance. Everything is in units of σ², so that the offset
scales with the target. Cost: O(len(LEVEL_DRIFTS)) per sample.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse._validation import register_records
from onlinesparse.stream.evidence import GAUSSIAN, LOG_ODDS_LIMIT, accumulate, log_ratio
from onlinesparse.stream.mixture import mixture

__all__ = ["LEVEL", "LEVEL_STATE", "LEVEL_DRIFTS", "new_levels", "new_level_state",
           "track_level", "level_mixture"]

# The drifts q, as fractions of the noise variance per sample: a filter at q forgets a
# level in about 1/√q samples. Three decades span the slow offset of a sensor to the
# block-to-block growth of a sorted stream.
LEVEL_DRIFTS = (1e-3, 1e-2, 1e-1)

LEVEL = np.dtype([("drift", np.float64), ("mean", np.float64), ("variance", np.float64),
                  ("log_odds", np.float64)])


# The mixture's mean and variance for the next sample (level_mixture), which predictions add.
LEVEL_STATE = np.dtype([("offset", np.float64), ("variance", np.float64)])
# (the layout a pickle is stamped with: _validation.Versioned)
register_records(LEVEL=LEVEL, LEVEL_STATE=LEVEL_STATE)


def new_level_state() -> np.ndarray:
    return np.zeros(1, dtype=LEVEL_STATE)


def new_levels() -> np.ndarray:
    """The filters of a new model: level 0 known exactly (it walks away from 0 only as
    the errors ask for it), no evidence either way."""
    levels = np.zeros(len(LEVEL_DRIFTS), dtype=LEVEL)
    levels["drift"] = LEVEL_DRIFTS
    return levels


@jit
def track_level(levels: np.ndarray, error: float, spread: float, noise: float) -> None:
    """One sample of every filter: the evidence of the model's error ``e`` for the filter
    (which predicted its mean m) against the model without a level (which predicted 0),
    both scored as Gaussians of the filter's variance ``P + r`` (r = ``spread``, the
    model's calibrated predictive variance), then the Kalman update ``g = P/(P + r)``,
    ``m ← m + g(e − m)``, ``P ← (1 − g)P + qσ²`` (West and Harrison, ch. 2; σ² is
    ``noise``). A filter whose evidence reaches −``LOG_ODDS_LIMIT`` is discredited and
    restarts at m = 0, P = qσ²: its tiny weight would otherwise still carry a mean that a
    wild target sent far out into every later prediction."""
    if not (spread > 0.0 and noise > 0.0):
        return
    for k in range(levels.shape[0]):
        f = levels[k]
        total = f.variance + spread
        miss = error - f.mean
        f.log_odds = accumulate(f.log_odds, log_ratio(miss, error, total, GAUSSIAN), 0.0, 1.0)
        if f.log_odds <= -LOG_ODDS_LIMIT:
            f.mean = 0.0
            f.variance = f.drift * noise
            continue
        gain = f.variance / total
        f.mean += gain * miss
        f.variance = (1.0 - gain) * f.variance + f.drift * noise


@jit
def level_mixture(levels: np.ndarray) -> tuple[float, float]:
    """The level's predictive mean (the offset added to the model's prediction) and
    variance for the next sample: the mixture of the filters' ``N(mₖ, Pₖ)`` and the model
    without a level (``N(0, 0)``, log-odds 0) by their evidence."""
    n = levels.shape[0]
    top = 0.0
    for k in range(n):
        top = max(top, levels[k].log_odds)
    weights = np.empty(n + 1)
    means = np.zeros(n + 1)
    variances = np.zeros(n + 1)
    weights[n] = math.exp(-top)  # (the model without a level)
    for k in range(n):
        weights[k] = math.exp(levels[k].log_odds - top)
        means[k] = levels[k].mean
        variances[k] = levels[k].variance
    return mixture(weights, means, variances)
