"""Prequential evidence between two predictors: one log-likelihood ratio, one bounded
accumulator.

Every choice the stream layer makes between predictors — the model against the running
mean (:mod:`~onlinesparse.stream.baseline`), a level of the errors against none
(:mod:`~onlinesparse.stream.level`), a kept concept against the live model
(:mod:`~onlinesparse.stream.concepts`) — is Dawid's prequential principle: each sample adds
the log-likelihood ratio of the two predictions for its target (:func:`log_ratio`) to
bounded log-odds, optionally forgetting part of the old evidence (:func:`accumulate`;
dynamic model averaging, Raftery, Kárný and Ettler 2010), and the posterior probability
(:func:`weight`) weighs the two (:mod:`~onlinesparse.stream.mixture`).
"""

from __future__ import annotations

import math

from onlinesparse._jit import jit

__all__ = ["LOG_ODDS_LIMIT", "PRIOR_LOG_ODDS", "GAUSSIAN", "log_ratio", "accumulate",
           "weight"]

# The bound on the evidence for either side: past it the losing side's weight is below
# e^(−40) ≈ 4e-18, and some forty nats of contrary evidence (a dozen errors of three
# deviations) hand the prediction back.
LOG_ODDS_LIMIT = 40.0
# The prior odds of a challenger before any evidence: e^(−4), a weight of 2 %. A model fitted
# to a handful of patterns can extrapolate wildly; it has to earn its weight.
PRIOR_LOG_ODDS = -4.0
# The degrees of freedom that select Gaussian scoring in log_ratio.
GAUSSIAN = math.inf


@jit
def log_ratio(error: float, other: float, variance: float, dof: float) -> float:
    """``log p(error) − log p(other)``: the evidence of one sample for the prediction whose
    error is ``error`` against the one whose error is ``other``, both scored by one
    predictive of scale² ``variance`` so that the ratio compares what they predict, not how
    confident either claims to be.

    ``dof = GAUSSIAN`` scores by a Gaussian, ``(other² − error²)/(2v)``; finite ``dof`` (at
    least 1) by a Student-t, ``−(ν+1)/2·[log(1 + e²/(νv)) − log(1 + o²/(νv))]``, the
    predictive of a Gaussian whose mean and variance are estimated from ``ν + 1`` values:
    its tails bound what one surprising sample can say while the variance rests on a few
    of them. NaN when both errors overflow the scale (it then says nothing)."""
    if dof == GAUSSIAN:
        return 0.5 * (other * other - error * error) / variance
    nu = max(dof, 1.0)
    scale = nu * variance
    return -0.5 * (nu + 1.0) * (math.log1p(error * error / scale)
                                - math.log1p(other * other / scale))


@jit
def accumulate(log_odds: float, ratio: float, prior: float, forget: float) -> float:
    """The log-odds after one more sample's ``ratio``: the old evidence first returns toward
    the ``prior`` by the factor ``forget`` (1: nothing forgotten; below 1 the odds weigh
    about the last ``1/(1 − forget)`` samples), then the ratio is added, the sum bounded
    by ±``LOG_ODDS_LIMIT`` so that either side can take over again. A NaN ratio leaves the
    odds as they were."""
    if ratio != ratio:
        return log_odds
    if forget != 1.0:
        log_odds = prior + forget * (log_odds - prior)
    return min(max(log_odds + ratio, -LOG_ODDS_LIMIT), LOG_ODDS_LIMIT)


@jit
def weight(log_odds: float) -> float:
    """The posterior probability of the side whose log-odds these are."""
    return 1.0 / (1.0 + math.exp(-log_odds))
