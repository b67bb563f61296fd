"""The running mean as an expert beside the model: the prediction every stream can make.

The prequential evidence for the model against the simplest predictor, the mean of the
targets in memory (Dawid's prequential principle; Bayesian model averaging of the two):
both are scored by the mean's own predictive, a Student-t of scale² s²(1 + 1/p) with
p − 1 degrees of freedom (:func:`~onlinesparse.stream.evidence.log_ratio`), so that one
surprising sample cannot settle it while s² rests on a few patterns. From prior odds of
e^``PRIOR_LOG_ODDS`` the model has to earn its weight; predictions are the two-component
mixture (:mod:`~onlinesparse.stream.mixture`), so that on the first samples, or after a
change the model has not caught up with, a stream is predicted at least about as well as
by its running mean, and the model takes over as its evidence grows.
"""

from __future__ import annotations

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.stream.evidence import PRIOR_LOG_ODDS, accumulate, log_ratio, weight

__all__ = ["BASELINE", "MIN_WEIGHED", "new_baseline", "weigh_against_mean"]

BASELINE = np.dtype([("log_odds", np.float64), ("weight", np.float64),
                     ("mean", np.float64), ("variance", np.float64)])
# The mean is not judged before the memory holds this many targets: before that its
# variance is no estimate.
MIN_WEIGHED = 3


def new_baseline() -> np.ndarray:
    record = np.zeros(1, dtype=BASELINE)
    record[0]["log_odds"] = PRIOR_LOG_ODDS
    return record


@jit
def weigh_against_mean(baseline: np.ndarray, y: float, error: float, count: float,
                       total: float, variance: float) -> None:
    """One target's evidence for the model (whose prediction missed ``y`` by ``error``)
    against the mean's prediction made for it, then the mean's prediction for the next
    sample from the targets in memory: ``count`` of them (y included), summing to
    ``total``, of variance ``variance``."""
    b = baseline[0]
    if b.variance > 0.0:
        ratio = log_ratio(error, y - b.mean, b.variance, count - 2.0)
        b.log_odds = accumulate(b.log_odds, ratio, PRIOR_LOG_ODDS, 1.0)
    b.weight = weight(b.log_odds)
    b.mean = total / count if count > 0.0 else 0.0
    b.variance = variance * (1.0 + 1.0 / count) if count >= MIN_WEIGHED else 0.0
