"""Basis functions in compiled form: kind codes, radial profiles (Orr (1996) A.3), rows of the
design matrix over an input, the novelty distance, and ``h(x)ᵀw``.

The kind codes are defined here once; :mod:`onlinesparse.orr.kernels` names them for users.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.linalg import symmetric_quadratic

# Column kinds: the one definition (kernels.py names them for users).
CONSTANT, LINEAR, GAUSSIAN, MULTIQUADRIC, INVERSE_MULTIQUADRIC, CAUCHY = 0, 1, 2, 3, 4, 5


@jit
def profile(kind: int, z: float) -> float:
    """φ(z) of one radial type at ``z = ‖x − c‖²/r²`` (the table of Orr A.3 in kernels.py);
    an unknown code raises ``ValueError`` rather than passing for one of them."""
    if kind == GAUSSIAN:
        return math.exp(-z)
    if kind == MULTIQUADRIC:
        return math.sqrt(1.0 + z)
    if kind == INVERSE_MULTIQUADRIC:
        return 1.0 / math.sqrt(1.0 + z)
    if kind == CAUCHY:
        return 1.0 / (1.0 + z)
    raise ValueError("unknown radial kind code")


@jit
def profile_slope(kind: int, value: float) -> float:
    """dφ/dz of one radial type, written in its value φ(z) (the row already holds it, so a
    slope costs no second exp): ``−φ`` (Gaussian), ``1/(2φ)`` (multiquadric), ``−φ³/2``
    (inverse multiquadric), ``−φ²`` (Cauchy)."""
    if kind == GAUSSIAN:
        return -value
    if kind == MULTIQUADRIC:
        return 0.5 / value
    if kind == INVERSE_MULTIQUADRIC:
        return -0.5 * value * value * value
    if kind == CAUCHY:
        return -value * value
    raise ValueError("unknown radial kind code")


@jit
def profile_array(kind: int, z: np.ndarray, out: np.ndarray) -> None:
    """:func:`profile` elementwise over a flat array."""
    for i in range(z.shape[0]):
        out[i] = profile(kind, z[i])


@jit
def evaluate_rows(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                  features: np.ndarray, X: np.ndarray, start: int, stop: int,
                  out: np.ndarray) -> None:
    """``out[i, k − start]`` = value of column k at input ``X[i]`` (``Basis.evaluate``).

    A radial column's metric is diagonal: ``z = Σ_f inv_r2[k, f]·(x_f − c_f)²``, one
    ``1/r²`` per input (Orr (1996) A.3 allows a metric per basis function; the isotropic
    column has every entry equal)."""
    d = X.shape[1]
    for i in range(X.shape[0]):
        for k in range(start, stop):
            kind = kinds[k]
            if kind == CONSTANT:
                value = 1.0
            elif kind == LINEAR:
                value = X[i, features[k]]
            else:
                z = 0.0
                for f in range(d):
                    diff = X[i, f] - centres[k, f]
                    z += diff * diff * inv_r2[k, f]
                value = profile(kind, z)
            out[i, k - start] = value


@jit
def nearest_sq_distance(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                        stop: int, x: np.ndarray) -> float:
    """Smallest ``Σ_f a_f (x_f − c_f)²`` over the radial columns ``0 … stop−1``, ``a`` each
    column's metric (its 1/r² per input over their mean; all 1 for an isotropic column),
    ∞ if there are none: the buffer manager's novelty test. An input that differs from a
    centre only along inputs the kernel barely sees is not novel."""
    best = math.inf
    d = x.shape[0]
    for k in range(stop):
        if kinds[k] < GAUSSIAN:
            continue
        z = 0.0
        total = 0.0
        for f in range(d):
            diff = x[f] - centres[k, f]
            z += diff * diff * inv_r2[k, f]
            total += inv_r2[k, f]
        if total > 0.0:  # (no inputs, d = 0: every centre is at distance 0)
            z *= d / total
        if z < best:
            best = z
    return best


@jit
def support(XT: np.ndarray, head: int, count: int, x: np.ndarray, inv_r2: float,
            kind: int) -> float:
    """``Σᵢ φ(xᵢ)²`` over the ``count`` stored inputs of the ring ``XT`` (one column per
    pattern, the oldest at ``head``), φ the radial function of type ``kind`` and
    1/r² = ``inv_r2`` centred at x: the evidence a new basis function there would have
    (``SparseRBFRegressor``'s novelty variance), for the model's own kernel."""
    d, capacity = XT.shape[0], XT.shape[1]
    total = 0.0
    for k in range(count):
        slot = (head + k) % capacity
        z = 0.0
        for f in range(d):
            diff = x[f] - XT[f, slot]
            z += diff * diff
        if kind == GAUSSIAN:  # (φ² in one exp)
            total += math.exp(-2.0 * z * inv_r2)
        else:
            value = profile(kind, z * inv_r2)
            total += value * value
    return total


@jit
def fit(h: np.ndarray, weights: np.ndarray, m: int, k: int) -> float:
    """``Σᵢ<m hᵢwᵢₖ`` summed in order: target k's output ``hᵀwₖ`` (``weights`` M × K, a
    column per target), the same bits on every path (predictions, the error before
    learning, the slide's fits)."""
    total = 0.0
    for i in range(m):
        total += h[i] * weights[i, k]
    return total


@jit
def model_row(x: np.ndarray, kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
              features: np.ndarray, m: int) -> np.ndarray:
    """``h(x)``: the first m columns' values at one input x (:func:`evaluate_rows`)."""
    row = np.empty((1, m))
    evaluate_rows(kinds, centres, inv_r2, features, x.reshape((1, x.shape[0])), 0, m, row)
    return row[0]


@jit
def predict_mean(x: np.ndarray, kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                 features: np.ndarray, weights: np.ndarray) -> float:
    """``h(x)ᵀw`` of a one-target model (``weights`` M × 1): the prediction of a model whose
    basis and weights are all that is kept (a concept the stream has left,
    :mod:`onlinesparse.stream.concepts`). O(M·d)."""
    m = weights.shape[0]
    return fit(model_row(x, kinds, centres, inv_r2, features, m), weights, m, 0)


@jit
def predict_means_and_spread(x: np.ndarray, kinds: np.ndarray, centres: np.ndarray,
                             inv_r2: np.ndarray, features: np.ndarray, weights: np.ndarray,
                             variance: np.ndarray, means: np.ndarray) -> float:
    """``h(x)ᵀwₖ`` of each target (``weights`` M × K, a column per target) into ``means``,
    and ``h(x)ᵀSh(x)``, which the targets share, returned, in one call
    (``SparseRBFRegressor.predict_one``): the predictions, and the factor of σ² in their
    variance from the weights' uncertainty (σ²A⁻¹, the covariance of w: Orr (1996) appendix
    A.5). O(M² + M·K)."""
    m = weights.shape[0]
    h = model_row(x, kinds, centres, inv_r2, features, m)
    for k in range(weights.shape[1]):
        means[k] = fit(h, weights, m, k)
    return symmetric_quadratic(variance, h, m)


