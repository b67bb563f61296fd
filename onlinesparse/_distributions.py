"""The river distributions the estimators return, built in one place."""

from __future__ import annotations

import math

from river import proba

__all__ = ["gaussian"]


def gaussian(mean: float, variance: float) -> proba.Gaussian:
    """A river ``proba.Gaussian`` with this mean and variance (``with_dist=True``).

    River's public interface builds a Gaussian from samples only; river's own predictive
    Gaussians (``linear_model.BayesianLinearRegression``) use the classmethod
    ``Gaussian._from_state``, which sets the moments exactly. It is used here, the one place
    in the package, so that a river release without it costs one fallback: the public
    path, two samples ``mean ± σ/√2`` (whose sample variance is σ²), exact to rounding.
    """
    from_state = getattr(proba.Gaussian, "_from_state", None)
    if from_state is not None:
        return from_state(n=1, m=mean, var=variance, ddof=0)
    distribution = proba.Gaussian()
    half = math.sqrt(variance / 2.0)
    distribution.update(mean - half)
    distribution.update(mean + half)
    return distribution
