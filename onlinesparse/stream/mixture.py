"""The mean and variance of a mixture of predictive distributions: Bayesian model
averaging's prediction, written once for every average the stream layer makes (the model
and the running mean, the errors' level filters, the live model and its kept concepts)."""

from __future__ import annotations

import numpy as np

from onlinesparse._jit import jit

FLOAT_MAX = float(np.finfo(np.float64).max)

__all__ = ["mixture"]


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
