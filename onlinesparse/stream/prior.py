"""Where a model knows little, its prediction returns toward the mean of the targets.

Precision weighting of two Gaussian estimates of f(x): the model's, with variance v, and
a prior ``f(x) ~ N(ȳ, s²)`` from the targets in memory. Inside the data v is a small
fraction of s² and the model's prediction stands; where the model extrapolates (basis
functions fitted on few patterns, linear terms far from the data) v grows beyond s² and
the prediction returns toward ȳ instead of running off to values no target came near.
"""

from __future__ import annotations

import math

from onlinesparse._jit import jit

__all__ = ["shrink_to_prior"]


@jit
def shrink_to_prior(mean: float, spread: float, noise: float, count: float,
                    prior_mean: float, prior_variance: float, log_scale: float
                    ) -> tuple[float, float]:
    """The model's prediction ``mean`` with relative spread ``spread`` (hᵀSh, so that the
    variance of its estimate is ``v = σ²·spread``, σ² = ``noise``) combined with the prior
    ``N(prior_mean, prior_variance)`` of ``count`` targets. Returns the posterior mean and
    the predictive variance before calibration, ``(ȳ + c·(mean − ȳ), σ² + c·v)`` with
    ``c = s²/(s² + κ²v)``, κ = e^``log_scale`` the calibration factor of the model's
    deviation (where its intervals have been too narrow, its estimate counts for less).
    Without a prior (no targets) or a finite spread, the model's own."""
    v = noise * max(spread, 0.0)
    if count <= 0.0 or not (v == v and prior_variance > 0.0):
        return mean, noise + v
    if math.isinf(v):  # (nothing known at x: the prior)
        return prior_mean, noise + prior_variance
    c = prior_variance / (prior_variance + v * math.exp(2.0 * log_scale))
    return prior_mean + c * (mean - prior_mean), noise + c * v
