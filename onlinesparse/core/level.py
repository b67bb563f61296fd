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
a level (``b ≡ 0``), and the four are averaged by their prequential evidence (Bayesian
model averaging, as :func:`~onlinesparse.core.sample.weigh_against_mean` does for the
model and the mean). On a stream whose errors are independent the evidence goes to the
model without a level and the offset fades to 0; where they are correlated, the offset
is the average of the filters' means and its variance joins the predictive variance.
Everything is in units of σ², so that the offset scales with the target.

Cost: O(len(LEVEL_DRIFTS)) per sample, inside the compiled sample.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit

__all__ = ["LEVEL_DRIFTS", "LEVEL_LOG_ODDS_LIMIT", "new_levels", "track_level",
           "level_mixture"]

# The drifts q, as fractions of the noise variance per sample: a filter at q forgets a
# level in about 1/√q samples. Three decades span the slow offset of a sensor to the
# block-to-block growth of a sorted stream.
LEVEL_DRIFTS = (1e-3, 1e-2, 1e-1)
# As core.sample.LOG_ODDS_LIMIT: a filter that lost can come back after some forty nats.
LEVEL_LOG_ODDS_LIMIT = 40.0
# A filter whose evidence reaches −LEVEL_LOG_ODDS_LIMIT is discredited and starts again
# from a level of 0: its weight e^(−40) would otherwise still carry a mean that a wild
# target (or a model polluted by one) sent far out into every later prediction.

LEVEL = np.dtype([("drift", np.float64), ("mean", np.float64), ("variance", np.float64),
                  ("log_odds", np.float64)])


def new_levels() -> np.ndarray:
    """The filters of a new model: level 0 known exactly (it walks away from 0 only as
    the errors ask for it), no evidence either way."""
    levels = np.zeros(len(LEVEL_DRIFTS), dtype=LEVEL)
    levels["drift"] = LEVEL_DRIFTS
    return levels


@jit
def track_level(levels: np.ndarray, error: float, spread: float, noise: float) -> None:
    """One sample of every filter: the evidence of the error ``e = y − f(x)`` (the model's,
    before learning) for the filter against the model without a level, then the Kalman
    update and the walk to the next sample.

    Filter k predicted the mean m, the model without a level 0; both are scored as
    Gaussians of the filter's variance ``P + r`` (r the model's predictive variance
    ``spread``), so that the evidence, ``(e² − (e − m)²)/(2(P + r))`` added to
    ``log_odds``, compares what they predict and not how confident they claim to be (a
    wider distribution would otherwise win on heavy-tailed errors alone). The update is
    ``g = P/(P + r)``, ``m ← m + g(e − m)``, ``P ← (1 − g)P + qσ²`` (West and Harrison,
    ch. 2), σ² being ``noise``. A filter whose evidence reaches the lower bound restarts
    at m = 0, P = qσ²."""
    if not (spread > 0.0 and noise > 0.0):
        return
    for k in range(levels.shape[0]):
        f = levels[k]
        total = f.variance + spread
        miss = error - f.mean
        ratio = 0.5 * (error * error - miss * miss) / total
        f.log_odds = min(max(f.log_odds + ratio, -LEVEL_LOG_ODDS_LIMIT), LEVEL_LOG_ODDS_LIMIT)
        if f.log_odds <= -LEVEL_LOG_ODDS_LIMIT:  # (discredited: it starts again from 0)
            f.mean = 0.0
            f.variance = f.drift * noise
            continue
        gain = f.variance / total
        f.mean += gain * miss
        f.variance = (1.0 - gain) * f.variance + f.drift * noise


@jit
def level_mixture(levels: np.ndarray) -> tuple[float, float]:
    """The average over the filters and the model without a level (weights from their
    log-odds; that model's are 0) of the level's predictive distribution for the next
    sample: its mean (the offset added to the model's prediction) and variance (added to
    the predictive variance), ``Σ wₖ(Pₖ + mₖ²) − (Σ wₖmₖ)²``."""
    top = 0.0
    for k in range(levels.shape[0]):
        top = max(top, levels[k].log_odds)
    total = math.exp(-top)  # (the model without a level)
    first = 0.0
    second = 0.0
    for k in range(levels.shape[0]):
        f = levels[k]
        w = math.exp(f.log_odds - top)
        total += w
        first += w * f.mean
        second += w * (f.variance + f.mean * f.mean)
    offset = first / total
    return offset, max(second / total - offset * offset, 0.0)
