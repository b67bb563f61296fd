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

The model's slopes alone can lock an input out. A model whose kernels are wide along an
input has no slope along it, so it keeps proposing kernels wide along it, and never learns
the structure there. Friedman #1's 20(x₂ − ½)² stayed at the floor for 1500 samples at
some seeds. The errors show what the model misses: along such an input they follow a
curve. :func:`track_residual` keeps, per input, the running projections of the errors on
the first three Hermite polynomials of the input's standardised value (clipped, so that a
heavy-tailed input cannot dominate). :func:`residual_structure` turns them into a squared
slope, net of what noise alone would give. A proposal's metric weighs each input by its
squared slope plus ``RESIDUAL_WEIGHT`` times that structure. Once the model has learned the
structure, the errors lose it and the slope takes over.

Cost: O(M·d) per sample, as the row of the input.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.basis import CONSTANT, LINEAR, profile_slope

__all__ = ["METRIC_FLOOR", "RESIDUAL_WEIGHT", "RESIDUAL_CLIP", "model_gradient",
           "track_relevance", "track_residual", "residual_structure", "input_metric"]

# The smallest weight an input keeps, as a fraction of the mean: its kernels are then at
# most 1/√METRIC_FLOOR times wider along it than along an average input.
METRIC_FLOOR = 0.1
# The weight of the errors' structure along an input against the model's squared slope
# along it: large enough that an input the model has not learned yet is not locked out,
# small enough not to widen kernels along noise (docs/rbf_on_streams.md, "The inputs'
# metric").
RESIDUAL_WEIGHT = 10.0
# A standardised input is clipped here before its Hermite polynomials are taken: z³ of an
# input 9 standard deviations out would otherwise outweigh every other sample.
RESIDUAL_CLIP = 2.5


@jit
def model_gradient(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                   features: np.ndarray, weights: np.ndarray, target: int, x: np.ndarray,
                   row: np.ndarray, out: np.ndarray) -> None:
    """``out = ∇f(x)`` for target ``target``'s ``f = Σ_k w_k h_k`` over the model's columns
    (the rows of ``weights``, M × K), ``row`` their values at x: a linear column adds its
    weight to its input's slope, a radial one ``w·φ'(z)·2·inv_r2[k, f]·(x_f − c_f)`` with
    φ' from the value (:func:`~onlinesparse.core.basis.profile_slope`)."""
    d = x.shape[0]
    out[:] = 0.0
    for k in range(weights.shape[0]):
        kind = kinds[k]
        weight = weights[k, target]
        if kind == CONSTANT:
            continue
        if kind == LINEAR:
            out[features[k]] += weight
            continue
        slope = 2.0 * weight * profile_slope(kind, row[k])
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
def track_residual(residual: np.ndarray, input_mean: np.ndarray, input_var: np.ndarray,
                   x: np.ndarray, error: float, error_square: float, memory: float,
                   with_error: bool) -> float:
    """Advance, over about the last ``memory`` samples (≥ 1), each input's running mean and
    variance, and (``with_error``) the running means ``residual[f, k]`` of
    ``error·He_{k+1}(z_f)``, with ``z_f`` input f standardised by them and clipped at
    ``RESIDUAL_CLIP``, and He the orthonormal Hermite polynomials z, (z² − 1)/√2,
    (z³ − 3z)/√6. Returns the running mean of error² (``error_square`` advanced). An error
    or input that is not finite leaves everything as it was."""
    if not math.isfinite(error * error):
        return error_square
    for f in range(x.shape[0]):
        if not math.isfinite(x[f] * x[f]):
            return error_square
    rate = 1.0 / max(memory, 1.0)
    for f in range(x.shape[0]):
        step = x[f] - input_mean[f]
        input_mean[f] += step * rate
        input_var[f] += (step * (x[f] - input_mean[f]) - input_var[f]) * rate
    if not with_error:
        return error_square
    for f in range(x.shape[0]):
        z = 0.0
        if input_var[f] > 0.0:
            z = (x[f] - input_mean[f]) / math.sqrt(input_var[f])
            z = min(max(z, -RESIDUAL_CLIP), RESIDUAL_CLIP)
        residual[f, 0] += (error * z - residual[f, 0]) * rate
        residual[f, 1] += (error * (z * z - 1.0) / math.sqrt(2.0) - residual[f, 1]) * rate
        residual[f, 2] += (error * (z * z * z - 3.0 * z) / math.sqrt(6.0)
                           - residual[f, 2]) * rate
    return error_square + (error * error - error_square) * rate


@jit
def residual_structure(residual: np.ndarray, input_var: np.ndarray, error_square: float,
                       memory: float, out: np.ndarray) -> None:
    """``out[f]``: the errors' structure along input f as a squared slope,
    ``max(Σ_k residual[f, k]² − 3·error_square/memory, 0) / input_var[f]``. A running mean
    over about ``memory`` samples of ``error·He_k`` has variance about ``error_square /
    memory`` when the errors do not depend on the input. The subtraction removes that, so
    an input the errors ignore scores about 0. Dividing by the input's variance makes the
    number a squared slope in the same units as the model's (:func:`track_relevance`)."""
    noise = 3.0 * error_square / max(memory, 1.0)
    for f in range(out.shape[0]):
        total = 0.0
        for k in range(residual.shape[1]):
            total += residual[f, k] * residual[f, k]
        excess = total - noise
        out[f] = excess / input_var[f] if excess > 0.0 and input_var[f] > 0.0 else 0.0


@jit
def input_metric(relevance: np.ndarray, structure: np.ndarray, out: np.ndarray) -> bool:
    """The metric of a proposed kernel: each input weighed by its RMS slope (the root of
    ``relevance`` plus ``RESIDUAL_WEIGHT`` times the errors' ``structure`` along it, when
    ``structure`` has an entry per input), floored at ``METRIC_FLOOR`` of the mean, the
    weights rescaled to average 1 (Kpotufe and Boularias's gradient weights). Returns
    False, leaving ``out`` alone, when there is nothing to go by yet (a model without
    columns, a flat function): the isotropic metric."""
    d = relevance.shape[0]
    with_structure = structure.shape[0] == d
    total = 0.0
    for f in range(d):
        squared = max(relevance[f], 0.0)
        if with_structure:
            squared += RESIDUAL_WEIGHT * max(structure[f], 0.0)
        out[f] = np.sqrt(squared)
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
