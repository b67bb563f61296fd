"""How much each input matters to the model: gradient weights for the kernels it proposes.

An isotropic kernel treats an input that the target ignores like one it depends on: with
five irrelevant inputs among ten (Friedman #1), every kernel spends its width on them, and
a centre is novel for differences that do not change the target. The gradient weights of
Kpotufe and Boularias (*Gradient weights help nonparametric regressors*, NIPS 2012) put the
metric where the function varies: input f is weighed by how fast the regression function
changes along it, estimated from the function learned so far. Here the model's own gradient
at each learned input, ``g = ∇f(x)`` (:func:`model_gradient`), feeds a running mean of
``g_f²`` over about the model's memory (:func:`track_relevance`); a new kernel is proposed
with the diagonal metric :func:`input_metric` makes of it (each input weighed by its RMS
slope, the weights averaging 1 so that the proposed radii keep their meaning). Columns keep
the metric they were born with; only the proposals follow the relevance, so the
incremental operations stay exact and the pruner decides by GCV, as for any other column,
whether a kernel of the new metric is worth its place.

A floor (``METRIC_FLOOR`` of the mean weight) keeps an input that looks irrelevant visible:
after a change of concept the inputs that start to matter must be able to earn weight back.

Cost: O(M·d) per sample, as the row of the input.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse.core._jit import jit
from onlinesparse.core.basis import CONSTANT, LINEAR, profile_slope

__all__ = ["METRIC_FLOOR", "model_gradient", "track_relevance", "input_metric"]

# The smallest weight an input keeps, as a fraction of the mean: its kernels are then at
# most 1/√METRIC_FLOOR times wider along it than along an average input.
METRIC_FLOOR = 0.1


@jit
def model_gradient(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                   features: np.ndarray, weights: np.ndarray, x: np.ndarray,
                   row: np.ndarray, out: np.ndarray) -> None:
    """``out = ∇f(x)`` for ``f = Σ_k w_k h_k`` over the model's columns (the first
    ``len(weights)``), ``row`` their values at x: a linear column adds its weight to its
    input's slope, a radial one ``w·φ'(z)·2·inv_r2[k, f]·(x_f − c_f)`` with φ' from the
    value (:func:`~onlinesparse.core.basis.profile_slope`)."""
    d = x.shape[0]
    out[:] = 0.0
    for k in range(weights.shape[0]):
        kind = kinds[k]
        if kind == CONSTANT:
            continue
        if kind == LINEAR:
            out[features[k]] += weights[k]
            continue
        slope = 2.0 * weights[k] * profile_slope(kind, row[k])
        for f in range(d):
            out[f] += slope * inv_r2[k, f] * (x[f] - centres[k, f])


@jit
def track_relevance(relevance: np.ndarray, gradient: np.ndarray, memory: float) -> None:
    """``relevance_f ← relevance_f + (g_f² − relevance_f)/memory``: the mean squared slope
    along each input over about the last ``memory`` samples (≥ 1). A gradient with a
    squared slope that is not finite (an input far out, a model polluted by one) is
    skipped: it would leave the relevance infinite, and the metric isotropic, for good."""
    for f in range(gradient.shape[0]):
        if not math.isfinite(gradient[f] * gradient[f]):
            return
    rate = 1.0 / max(memory, 1.0)
    for f in range(relevance.shape[0]):
        relevance[f] += (gradient[f] * gradient[f] - relevance[f]) * rate


@jit
def input_metric(relevance: np.ndarray, out: np.ndarray) -> bool:
    """The metric of a proposed kernel: each input weighed by its RMS slope, floored at
    ``METRIC_FLOOR`` of the mean, the weights rescaled to average 1 (Kpotufe and
    Boularias's gradient weights). Returns False, leaving ``out`` alone, when there is no
    slope to go by yet (a model without columns, a flat function): the isotropic metric."""
    d = relevance.shape[0]
    total = 0.0
    for f in range(d):
        out[f] = np.sqrt(max(relevance[f], 0.0))
        total += out[f]
    if not (total > 0.0 and np.isfinite(total)):
        return False
    floor = METRIC_FLOOR * total / d
    total = 0.0
    for f in range(d):
        out[f] = max(out[f], floor)
        total += out[f]
    for f in range(d):
        out[f] *= d / total
    return True
