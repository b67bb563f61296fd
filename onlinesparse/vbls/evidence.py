"""The evidence of a Gaussian process, the kernel regressor's rule for its input metric.

Ting et al. (5.2, after eq. 5.4) caution against maximising the RVM's own likelihood over the
distance metric of its kernels (it favours narrow kernels that fit the noise) and recommend
the Gaussian-process route instead: treat the metric as the hyper-parameters of a model with
few of them and maximise that model's marginal likelihood. This module is that computation,
independent of VBLS: the log marginal likelihood of a squared-exponential Gaussian process
with its analytic gradient (Rasmussen and Williams, eq. 5.9), and the L-BFGS-B searches over
one length scale for all inputs or one per input.
:class:`~onlinesparse.vbls.VBLSKernelRegressor` calls it from its batch fit.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg, optimize
from scipy.linalg import lapack

__all__ = ["gp_log_evidence", "evidence_hyperparameters", "evidence_length_scale"]

# The length scales are searched within this factor either side of √d (isotropic, for
# standardised inputs) and, with one length per input, between 1/_LENGTH_RANGE and
# _LENGTH_CEILING times the input's standard deviation (an input whose length reaches the
# ceiling is all but ignored: its kernel factor varies by less than 10⁻⁶ over the data); at
# most this many stored patterns (evenly spaced over the window) are used: every evaluation
# of the evidence costs O(n³) (about 6 ms at n = 404, d = 13, one BLAS thread). The metric is
# estimated from these patterns alone, so the more the better.
_LENGTH_RANGE = 20.0
_LENGTH_CEILING = 1e3
_LENGTH_POINTS = 512
# With one length per input, the isotropic search that gives the start uses at most this many.
_START_POINTS = 128
# Bounds on the signal variance σ_f² and the noise variance σ_n² as multiples of the targets'
# variance, and the start grid of the isotropic search (lengths × noise shares).
_SIGNAL_RANGE = (1e-4, 1e4)
_NOISE_RANGE = (1e-6, 10.0)
_START_LENGTHS = 9
_START_NOISE = (0.01, 0.1, 0.5)
_LOG_2PI = math.log(2.0 * math.pi)
# L-BFGS-B stops when the log evidence improves by less than this fraction per step: with a
# log evidence of order n = 100s, steps of 10⁻⁴ or less, far below its sampling noise (which
# is of order one).
_EVIDENCE_FTOL = 1e-6
# Restarts of L-BFGS-B that stopped with a clear slope left (_minimise).
_RESTARTS = 3
_TINY = float(np.finfo(float).tiny)


def _evenly_spaced(n: int, k: int) -> np.ndarray:
    """Indices of at most ``k`` of ``n`` items spread evenly from the first to the last (all
    of them when ``n ≤ k``)."""
    if n <= k:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, k).round().astype(int))


def gp_log_evidence(X: np.ndarray, y: np.ndarray, lengths: np.ndarray | float,
                    signal: float, noise: float, gradient: bool = True
                    ) -> tuple[float, np.ndarray | None]:
    """The log marginal likelihood of a Gaussian process with the squared-exponential
    covariance ``σ_f²·exp(−½Σ_i (x_i − x'_i)²/ℓ_i²) + σ_n²δ`` on ``(X, y)`` (``y`` as given:
    centre it first for a constant mean), and its gradient with respect to
    ``(log ℓ_1, …, log ℓ_k, log σ_f, log σ_n)``; ``lengths`` holds one ℓ per input (ARD) or a
    single one (isotropic, k = 1); ``signal`` = σ_f, ``noise`` = σ_n.

    With ``C = K + σ_n²I = LLᵀ`` and ``a = C⁻¹y``: ``log p(y) = −½yᵀa − Σ log L_jj −
    ½n log 2π`` and ``∂ log p/∂θ = ½ tr((aaᵀ − C⁻¹)∂C/∂θ)`` (Rasmussen and Williams 5.9). With
    ``W = C⁻¹ − aaᵀ``, ``A = W∘K`` and the scaled inputs ``z = x/ℓ``:
    ``∂/∂log σ_f = −Σ_jk A_jk``, ``∂/∂log σ_n = −σ_n² tr W`` and
    ``∂/∂log ℓ_i = −½Σ_jk A_jk (z_ji − z_ki)² = −(Σ_j (A1)_j z_ji² − (ZᵀAZ)_ii)``: O(n³ + n²d)
    for all of them. Without ``gradient`` only the Cholesky factor is needed (O(n³/3))."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(y)
    lengths = np.atleast_1d(np.asarray(lengths, dtype=float))
    Z = X / lengths
    sq = np.einsum("ij,ij->i", Z, Z)
    kernel = Z @ Z.T  # −½‖z_j − z_k‖², in place (n² work, no temporaries)
    kernel -= 0.5 * sq[:, None]
    kernel -= 0.5 * sq[None, :]
    np.minimum(kernel, 0.0, out=kernel)
    np.exp(kernel, out=kernel)
    kernel *= signal * signal
    covariance = kernel.copy()
    covariance[np.diag_indices(n)] += noise * noise
    factor = linalg.cholesky(covariance, lower=True, check_finite=False)
    weights = linalg.cho_solve((factor, True), y, check_finite=False)
    value = -0.5 * float(y @ weights) - float(np.sum(np.log(np.diagonal(factor)))) \
        - 0.5 * n * _LOG_2PI
    if not gradient:
        return value, None
    # C⁻¹ from the factor (LAPACK potri fills the lower triangle; the upper one of the
    # lower factor is zero).
    inverse, info = lapack.dpotri(factor, lower=1)
    if info != 0:
        raise linalg.LinAlgError(f"potri failed ({info})")
    diagonal = np.diagonal(inverse).copy()
    inverse += inverse.T
    inverse[np.diag_indices(n)] = diagonal
    spread = inverse
    spread -= np.outer(weights, weights)
    product = spread * kernel
    per_input = product.sum(axis=1) @ (Z * Z) - np.einsum("ij,ij->j", Z, product @ Z)
    out = np.empty(len(lengths) + 2)
    out[:-2] = -per_input if len(lengths) > 1 else -per_input.sum()
    out[-2] = -float(product.sum())
    out[-1] = -(noise * noise) * float(np.trace(spread))
    return value, out


def _minimise(start: np.ndarray, X: np.ndarray, y: np.ndarray,
              bounds: list[tuple[float, float]]) -> np.ndarray:
    """L-BFGS-B on the negative log evidence from ``start``, restarted (at most
    ``_RESTARTS`` times) while it has stopped on a small relative step with a gradient
    still large: the ftol stop can fire on a flat stretch of a badly scaled search (lengths
    of switched-off inputs near their ceiling) with a clear slope left in another
    coordinate. The projected gradient counts as small below 1 % of √max(1, |F|), the
    evidence's sampling noise."""
    best = optimize.minimize(_negative_log_evidence, start, args=(X, y), jac=True,
                             method="L-BFGS-B", bounds=bounds,
                             options={"ftol": _EVIDENCE_FTOL})
    low, high = np.array(bounds).T
    for _ in range(_RESTARTS):
        grad = np.asarray(best.jac, dtype=float)
        # Held by a bound it pushes against: no slope left there.
        grad = np.where(((best.x <= low + 1e-9) & (grad > 0.0))
                        | ((best.x >= high - 1e-9) & (grad < 0.0)), 0.0, grad)
        if np.max(np.abs(grad), initial=0.0) <= 0.01 * math.sqrt(max(1.0, abs(best.fun))):
            break
        again = optimize.minimize(_negative_log_evidence, best.x, args=(X, y), jac=True,
                                  method="L-BFGS-B", bounds=bounds,
                                  options={"ftol": _EVIDENCE_FTOL})
        if not again.fun < best.fun:
            break
        best = again
    return best.x


def _negative_log_evidence(theta: np.ndarray, X: np.ndarray, y: np.ndarray,
                           gradient: bool = True):
    """``−log p(y)`` of :func:`gp_log_evidence` at ``θ = (log ℓ…, log σ_f, log σ_n)``, with
    its gradient for L-BFGS-B (a numerically indefinite covariance counts as impossible)."""
    lengths, signal, noise = np.exp(theta[:-2]), math.exp(theta[-2]), math.exp(theta[-1])
    try:
        value, grad = gp_log_evidence(X, y, lengths, signal, noise, gradient)
    except linalg.LinAlgError:
        return (1e300, np.zeros_like(theta)) if gradient else 1e300
    return (-value, -grad) if gradient else -value


def evidence_hyperparameters(X: np.ndarray, y: np.ndarray, ard: bool = False,
                             max_points: int = _LENGTH_POINTS
                             ) -> tuple[np.ndarray, float, float]:
    """The hyper-parameters ``(ℓ, σ_f, σ_n)`` of the Gaussian process with the largest
    marginal likelihood on ``(X, y)`` (:func:`gp_log_evidence`, constant mean: the targets are
    centred); ``ℓ`` has one length per input, all equal unless ``ard``.

    Ting et al. (5.2, after eq. 5.4) caution against maximising the RVM's own likelihood over
    the distance metric and recommend the Gaussian-process route: treat the metric as the
    hyper-parameters of a model with few of them. Isotropic (``ard=False``): L-BFGS-B over
    ``(log ℓ, log σ_f, log σ_n)`` with the analytic gradient, started from the best point of a
    small grid (9 lengths spread over ``[√d/20, 20√d]``, the range searched, for standardised
    inputs, × 3 noise shares). With ``ard``: the same isotropic search, with more than one
    input on at most 128 of the patterns (it only finds a start), with the inputs divided by
    their standard deviations (so the result does not depend on the inputs' units), then
    L-BFGS-B over ``(log ℓ_1, …, log ℓ_d, log σ_f, log σ_n)`` from there, each ℓ_i within
    ``[1/20, 1000]`` standard deviations of its input (an irrelevant input's length runs to the
    ceiling, where it no longer matters). At most ``max_points`` patterns, evenly spaced, are
    used; every evaluation costs O(n³ + n²d). Degenerate data (fewer than two patterns,
    constant targets) give ``ℓ = √d`` (times the standard deviations with ``ard``)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    if n > max_points:
        picks = _evenly_spaced(n, max_points)
        X, y = X[picks], y[picks]
        n = len(y)
    units = np.ones(d)
    if ard and n > 1:
        spread = X.std(axis=0)
        units = np.where(spread > 0.0, spread, 1.0)
    Z = X / units
    centred = y - y.mean() if n else y
    # With ``ard`` (and several inputs) the isotropic search only finds a start, and on a
    # subset it costs a fraction: (128/404)³ ≈ 3 % per evaluation on Boston housing. With
    # one input it is the answer, so it sees every pattern.
    if ard and d > 1 and n > _START_POINTS:
        picks = _evenly_spaced(n, _START_POINTS)
        Z_start, y_start = Z[picks], centred[picks]
    else:
        Z_start, y_start = Z, centred
    variance = float(centred @ centred) / max(n, 1)
    scale = math.sqrt(max(d, 1))
    if n < 2 or not variance > 0.0:
        return np.full(d, scale) * units, 0.0, 0.0
    half_log_var = 0.5 * math.log(variance)
    bounds_sigma = [(half_log_var + 0.5 * math.log(_SIGNAL_RANGE[0]),
                     half_log_var + 0.5 * math.log(_SIGNAL_RANGE[1])),
                    (half_log_var + 0.5 * math.log(_NOISE_RANGE[0]),
                     half_log_var + 0.5 * math.log(_NOISE_RANGE[1]))]
    low, high = math.log(scale / _LENGTH_RANGE), math.log(scale * _LENGTH_RANGE)
    # The isotropic search: grid start, then L-BFGS-B.
    starts = [np.array([log_length, half_log_var + 0.5 * math.log(1.0 - share),
                        half_log_var + 0.5 * math.log(share)])
              for log_length in np.linspace(low, high, _START_LENGTHS)
              for share in _START_NOISE]
    start = min(starts,
                key=lambda theta: _negative_log_evidence(theta, Z_start, y_start, False))
    theta = _minimise(start, Z_start, y_start, [(low, high), *bounds_sigma])
    if ard and d > 1:
        start = np.concatenate([np.full(d, theta[0]), theta[1:]])
        bounds = [(-math.log(_LENGTH_RANGE), math.log(_LENGTH_CEILING))] * d
        start[:d] = np.clip(start[:d], bounds[0][0], bounds[0][1])
        theta = _minimise(start, Z, centred, [*bounds, *bounds_sigma])
    lengths = np.exp(theta[:-2]) * np.ones(d) * units
    return lengths, math.exp(theta[-2]), math.exp(theta[-1])


def evidence_length_scale(X: np.ndarray, y: np.ndarray,
                          max_points: int = _LENGTH_POINTS) -> float:
    """The length scale ℓ of the isotropic Gaussian process (covariance
    ``σ_f²·exp(−‖x − x'‖²/(2ℓ²)) + σ_n²``, constant mean) with the largest marginal likelihood
    on ``(X, y)``: :func:`evidence_hyperparameters` with ``ard=False``."""
    return float(evidence_hyperparameters(X, y, ard=False, max_points=max_points)[0][0])
