"""The mean and variance of a mixture of predictive distributions: Bayesian model
averaging's prediction, written once for every average the stream layer makes (the model
and the running mean, the errors' level filters, the live model and its kept concepts)."""

from __future__ import annotations

import numpy as np

from onlinesparse._jit import jit

FLOAT_MAX = float(np.finfo(np.float64).max)

__all__ = ["mixture", "mixture_of_two"]


@jit
def mixture(weights: np.ndarray, means: np.ndarray, variances: np.ndarray
            ) -> tuple[float, float]:
    """The mixture's mean ``μ = Σ wᵢμᵢ / Σ wᵢ`` and variance ``Σ wᵢ(vᵢ + (μᵢ − μ)²) / Σ wᵢ``
    for unnormalised weights ``wᵢ`` (the second form has no cancellation, unlike
    ``E[x²] − μ²``). A variance beyond the floats (components more than about 1e154
    apart, a model extrapolated far past its data) is held at the largest float, so that
    the prediction's deviation stays a number."""
    total = 0.0
    first = 0.0
    for i in range(weights.shape[0]):
        total += weights[i]
        first += weights[i] * means[i]
    mean = first / total
    spread = 0.0
    for i in range(weights.shape[0]):
        gap = means[i] - mean
        spread += weights[i] * (variances[i] + gap * gap)
    return mean, min(spread / total, FLOAT_MAX)


@jit
def mixture_of_two(w: float, mean: float, variance: float, other: float,
                   other_variance: float) -> tuple[float, float]:
    """:func:`mixture` of two components with weights ``w`` and ``1 − w``."""
    weights = np.empty(2)
    means = np.empty(2)
    variances = np.empty(2)
    weights[0], weights[1] = w, 1.0 - w
    means[0], means[1] = mean, other
    variances[0], variances[1] = variance, other_variance
    return mixture(weights, means, variances)
