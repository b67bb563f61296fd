"""Model-selection criteria from the maintained quantities, never a p × p matrix.

GCV and UEV from ``(yᵀP²y, γ)`` (Orr (1996) 5.2, 5.3; γ by Orr eq. 4.10); the five numbers of
Orr A.11 for a basis function in the model and its closed-form GCV-optimal λⱼ (the case
analysis of Orr A.11 / FGCV appendix I); FGCV's r, γ, ξ, u for a candidate column
(eqs. 16–19) and its optimal λ.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.linalg import symmetric_matvec, symmetric_matvec_pair
from onlinesparse.core.updates import without_basis

# Which branch of the case analysis decided, as ``criteria.LocalOptimum.case`` names them.
CASES = ("interior", "zero", "infinite", "boundary")
_INTERIOR, _ZERO, _INFINITE, _BOUNDARY = 0, 1, 2, 3


# The slots of basis_quantities' `out` (Orr A.11's numbers for basis function j, the
# arguments of optimal_lambda first, then target k's yᵀPh and yᵀP²h at Q_Y_PH + 2k and
# Q_Y_P2H + 2k), and of basis_optimum's (its decision).
Q_A, Q_B, Q_C, Q_ALPHA, Q_BETA, Q_PSI, Q_Y_PH, Q_Y_P2H = range(8)
OPT_LAMBDA, OPT_GCV, OPT_WITHOUT, OPT_CASE = range(4)
# The rows of candidate_quantities' `out`: γ, u, then r of each target, then ξ of each.
CAND_GAMMA, CAND_U, CAND_R = range(3)


@jit
def quantity_slots(n_targets: int) -> int:
    """The room :func:`basis_quantities` (and the optima built on it) needs for K
    targets."""
    return 6 + 2 * n_targets

@jit
def gcv(error: float, gamma: float, count: float) -> float:
    """``p·e/(p − γ)²``, ∞ without degrees of freedom (``criteria.gcv``, Orr eq. 5.6, which
    calls this)."""
    dof = count - gamma
    if dof <= 0.0:
        return math.inf
    # (divided twice: dof² can underflow to 0 where dof does not, and a compiled division
    # by 0 raises)
    return count * error / dof / dof


@jit
def uev(error: float, gamma: float, count: float) -> float:
    """``e/(p − γ)``, ∞ without degrees of freedom (``criteria.uev``, Orr eq. 5.3, and the
    noise estimate of FGCV eq. 8, which call this)."""
    dof = count - gamma
    if dof <= 0.0:
        return math.inf
    return error / dof



@jit
def noise_estimate(error: float, gamma: float, count: float, current: float) -> float:
    """FGCV eq. 8, ``σ² = yᵀP²y / (p − γ)`` (:func:`uev`), where it is finite and positive;
    ``current`` otherwise (no degrees of freedom yet, or an exact fit)."""
    estimate = uev(error, gamma, count)
    if math.isfinite(estimate) and estimate > 0:
        return estimate
    return current


@jit
def training_error(gram: np.ndarray, cross_y: np.ndarray, weights: np.ndarray,
                   yy: np.ndarray, k: int) -> float:
    """``yₖᵀyₖ − wₖᵀ(2cₖ − Gwₖ)`` for target k (``IncrementalRidge.training_error``, Orr's
    yᵀP²y)."""
    m = weights.shape[0]
    w = weights[:, k].copy()
    g_w = np.empty(m)
    symmetric_matvec(gram, w, m, g_w)
    total = 0.0
    for i in range(m):
        total += w[i] * (2.0 * cross_y[i, k] - g_w[i])
    return yy[k] - total


@jit
def error_and_gamma(gram: np.ndarray, cross_y: np.ndarray, weights: np.ndarray,
                    lambdas: np.ndarray, variance: np.ndarray, yy: np.ndarray,
                    scales: np.ndarray, errors: np.ndarray) -> tuple[float, float]:
    """The two numbers every criterion needs (``IncrementalRidge.summary``): the training
    error ``Σₖ ωₖ yₖᵀP²yₖ`` of the K targets, each target's (:func:`training_error`,
    clipped at 0 against rounding, into ``errors``) weighed by ``scales`` (ω; 1 for a
    single target), and ``γ = M − Σⱼ λⱼSⱼⱼ`` (Orr eq. 4.10), which P alone decides.

    Several targets share the basis by the sum of their GCVs in units of their noise
    levels, ``ωₖ = 1/σₖ²``: P is the same for every target, so the sum is GCV with the
    error ``Σₖ ωₖ eₖ``, and no target's unit decides the basis."""
    m = weights.shape[0]
    total = 0.0
    for k in range(scales.shape[0]):
        error = yy[k] if m == 0 else training_error(gram, cross_y, weights, yy, k)
        errors[k] = max(error, 0.0)
        total += scales[k] * errors[k]
    if m == 0:
        return total, 0.0
    trace = 0.0
    for i in range(m):
        trace += lambdas[i] * variance[i, i]
    return total, m - trace


@jit
def basis_quantities(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                     weights: np.ndarray, lambdas: np.ndarray, yy: np.ndarray,
                     scales: np.ndarray, count: float, j: int, out: np.ndarray) -> None:
    """The products of ``criteria.basis_quantities`` (Orr appendix A.11 for basis function
    j, with S', w' the state without j): two passes over M × M shared by the targets, two
    per target.

    ``out`` (room for 6 + 2K) receives ``[a, b, c, alpha, beta, psi]``, the arguments of
    :func:`optimal_lambda`, then ``yₖᵀPⱼhⱼ, yₖᵀPⱼ²hⱼ`` of each target. With K targets
    weighed by ω (:func:`error_and_gamma`), GCV as a function of λⱼ keeps Orr's form
    ``p(aΔ² − 2bΔ + c)/(αΔ − β)²``: its numerator is each target's error, quadratic in
    yₖ, so ``a = Σ ωₖaₖ``, ``b = Σ ωₖbₖ``, ``c = Σ ωₖcₖ`` of the single-target numbers,
    while α, β, ψ depend on P alone.
    """
    m = weights.shape[0]
    s_jj = variance[j, j]
    s_g = np.empty(m)  # S'gⱼ
    g_j = gram[j]  # gⱼ, read along the (symmetric) Gram's row: contiguous
    # pass 1: S gⱼ, then S'gⱼ and W'; pass 2: G S'gⱼ and Gw₁' in one sweep over G's rows
    symmetric_matvec(variance, g_j, m, s_g)
    without_basis(variance, s_g.reshape((m, 1)), j)
    w_rem = weights.copy()  # W'
    without_basis(variance, w_rem, j)
    w_k = w_rem[:, 0].copy()
    g_w_rem = np.empty(m)  # Gwₖ'
    g_s_g = np.empty(m)
    symmetric_matvec_pair(gram, w_k, s_g, m, g_w_rem, g_s_g)
    g_sg = 0.0  # gⱼᵀS'gⱼ
    sg_g_sg = 0.0  # (S'gⱼ)ᵀG(S'gⱼ)
    trace = 0.0
    for i in range(m):
        sg_g_sg += s_g[i] * g_s_g[i]
        g_sg += g_j[i] * s_g[i]
        s_ij = variance[i, j]
        trace += lambdas[i] * (variance[i, i] - s_ij * s_ij / s_jj)
    g_jj = gram[j, j]
    beta = g_jj - 2.0 * g_sg + sg_g_sg
    a = b = c = 0.0
    for k in range(scales.shape[0]):
        if k > 0:  # (target 0's came with pass 2)
            w_k[:] = w_rem[:, k]
            symmetric_matvec(gram, w_k, m, g_w_rem)
        y_ph = cross_y[j, k] - g_w_rem[j]
        residual_sg = 0.0
        w_c = 0.0
        w_g_w = 0.0
        for i in range(m):
            residual_sg += (cross_y[i, k] - g_w_rem[i]) * s_g[i]
            w_c += w_k[i] * cross_y[i, k]
            w_g_w += w_k[i] * g_w_rem[i]
        y_p2h = y_ph - residual_sg
        a += scales[k] * max(yy[k] - 2.0 * w_c + w_g_w, 0.0)  # (rounding can take it below 0)
        b += scales[k] * y_p2h * y_ph
        c += scales[k] * beta * y_ph * y_ph
        out[Q_Y_PH + 2 * k] = y_ph
        out[Q_Y_P2H + 2 * k] = y_p2h
    out[Q_A] = a
    out[Q_B] = b
    out[Q_C] = c
    out[Q_ALPHA] = count - ((m - 1) - trace)
    out[Q_BETA] = max(beta, 0.0)
    out[Q_PSI] = max(g_jj - g_sg, 0.0)


@jit
def candidate_quantities(variance: np.ndarray, gram: np.ndarray, n_model: int,
                         cross_y: np.ndarray, weights: np.ndarray, columns: np.ndarray,
                         removed: int, out: np.ndarray) -> None:
    """FGCV's r, γ, ξ, u (eqs. 16–19) of ``criteria.candidate_quantities`` for the tracked
    columns ``columns`` (positions in the Gram matrix), O(M²) each and O(M) more per
    target: γ and u depend on P alone, r and ξ on each target.

    With ``removed = j ≥ 0`` they are those of the model without basis function j, through
    ``S' = S − sⱼsⱼᵀ/sⱼⱼ`` and ``W' = W − sⱼ(row j of W)/sⱼⱼ`` (as in
    :func:`basis_quantities`): ``S'k = Sk − sⱼ(Sk)ⱼ/sⱼⱼ`` is one more O(M) pass, and the
    model is not touched.

    ``out[:, q]`` (2 + 2K rows) receives ``[γ, u, r₁ … r_K, ξ₁ … ξ_K]`` of ``columns[q]``
    (``CAND_GAMMA``, ``CAND_U``, ``CAND_R``; ξ from ``CAND_R + K``).
    """
    m = n_model
    n_targets = weights.shape[1]
    w = weights.copy()
    if removed >= 0:
        without_basis(variance, w, removed)
    residual = np.empty((m, n_targets))  # C − GW
    column = np.empty(m)
    g_col = np.empty(m)
    for k in range(n_targets):
        column[:] = w[:, k]
        symmetric_matvec(gram, column, m, g_col)
        for i in range(m):
            residual[i, k] = cross_y[i, k] - g_col[i]
    sk = np.empty(m)  # S k
    g_sk = np.empty(m)  # G S k
    for q in range(columns.shape[0]):
        col = columns[q]
        k_col = gram[col]  # k = Hᵀφ, read along the (symmetric) Gram's row: contiguous
        symmetric_matvec(variance, k_col, m, sk)
        if removed >= 0:
            without_basis(variance, sk.reshape((m, 1)), removed)
        symmetric_matvec(gram, sk, m, g_sk)
        k_sk = 0.0
        sk_g_sk = 0.0
        for i in range(m):
            k_sk += k_col[i] * sk[i]
            sk_g_sk += sk[i] * g_sk[i]
        phi_phi = gram[col, col]
        out[CAND_GAMMA, q] = phi_phi - k_sk
        out[CAND_U, q] = phi_phi - 2.0 * k_sk + sk_g_sk
        for k in range(n_targets):
            k_w = 0.0
            res_sk = 0.0
            for i in range(m):
                k_w += w[i, k] * k_col[i]
                res_sk += residual[i, k] * sk[i]
            r = cross_y[col, k] - k_w
            out[CAND_R + k, q] = r
            out[CAND_R + n_targets + k, q] = r - res_sk


@jit
def gcv_of_delta(delta: float, a: float, b: float, c: float, alpha: float, beta: float,
                 n_patterns: float) -> float:
    """``p(aΔ² − 2bΔ + c)/(αΔ − β)²``, GCV at ``Δ = λ + ψ`` (``criteria.optimal_lambda``)."""
    denom = alpha * delta - beta
    if denom <= 0.0:
        return math.inf
    num = (a * delta - 2.0 * b) * delta + c
    return n_patterns * max(num, 0.0) / denom / denom  # (denom² can underflow: see gcv)


@jit
def optimal_lambda(a: float, b: float, c: float, alpha: float, beta: float, psi: float,
                   n_patterns: float, lambda_min: float) -> tuple[float, float, float, int]:
    """The case analysis of ``criteria.optimal_lambda`` (Orr A.11, FGCV appendix I), whose
    docstring derives it. Returns ``(λ, GCV at λ, GCV at λ = ∞, case)``."""
    gcv_removed = n_patterns * a / alpha / alpha if alpha > 0.0 else math.inf
    lower = psi + lambda_min
    k = b * alpha - a * beta
    m = c * alpha - b * beta
    # A relative tolerance on k: it is a difference of two products of the same magnitude.
    scale = abs(b * alpha) + abs(a * beta)
    if abs(k) <= 1e-13 * scale:
        if m < 0.0:
            return (lambda_min, gcv_of_delta(lower, a, b, c, alpha, beta, n_patterns),
                    gcv_removed, _ZERO)
        return math.inf, gcv_removed, gcv_removed, _INFINITE
    delta_hat = m / k
    if k > 0.0:
        if delta_hat > lower:
            value = gcv_of_delta(delta_hat, a, b, c, alpha, beta, n_patterns)
            if value <= gcv_removed:
                return delta_hat - psi, value, gcv_removed, _INTERIOR
            # Rounding can leave a "minimum" worse than the limit; keep the better end.
            return math.inf, gcv_removed, gcv_removed, _INFINITE
        return (lambda_min, gcv_of_delta(lower, a, b, c, alpha, beta, n_patterns),
                gcv_removed, _ZERO)
    if delta_hat > lower:
        at_lower = gcv_of_delta(lower, a, b, c, alpha, beta, n_patterns)
        if at_lower < gcv_removed:
            return lambda_min, at_lower, gcv_removed, _BOUNDARY
        return math.inf, gcv_removed, gcv_removed, _BOUNDARY
    return math.inf, gcv_removed, gcv_removed, _INFINITE


@jit
def floored_optimum(a: float, b: float, c: float, alpha: float, beta: float, psi: float,
                    n_patterns: float, lambda_min: float, zeros_only: bool
                    ) -> tuple[float, float, float, int]:
    """:func:`optimal_lambda` with ``lambda_min`` read one of two ways
    (``criteria.optimal_lambda``): a floor on the domain (``zeros_only=False``), or FGCV
    3.2 point 7 as written (``zeros_only=True``): the optimum over ``[0, ∞]``, where only an
    optimum *at* λ = 0 is replaced by the best λ over ``[lambda_min, ∞]``."""
    if zeros_only and lambda_min > 0.0:
        result = optimal_lambda(a, b, c, alpha, beta, psi, n_patterns, 0.0)
        if result[0] != 0.0:
            return result
    return optimal_lambda(a, b, c, alpha, beta, psi, n_patterns, lambda_min)


@jit
def basis_optimum(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                  weights: np.ndarray, lambdas: np.ndarray, yy: np.ndarray,
                  scales: np.ndarray, count: float, j: int, lambda_min: float,
                  out: np.ndarray, zeros_only: bool = False) -> None:
    """:func:`basis_quantities` then :func:`floored_optimum` for basis function j, in one
    call (``criteria.basis_optimum``). ``out`` receives ``[λ, GCV, GCV without j, case]``
    and needs room for the quantities (:func:`quantity_slots`)."""
    basis_quantities(variance, gram, cross_y, weights, lambdas, yy, scales, count, j, out)
    lam, value, removed, case = floored_optimum(out[Q_A], out[Q_B], out[Q_C],
                                                out[Q_ALPHA], out[Q_BETA], out[Q_PSI],
                                                count, lambda_min, zeros_only)
    out[OPT_LAMBDA] = lam
    out[OPT_GCV] = value
    out[OPT_WITHOUT] = removed
    out[OPT_CASE] = case


@jit
def candidate_optima(variance: np.ndarray, gram: np.ndarray, n_model: int,
                     cross_y: np.ndarray, weights: np.ndarray, scales: np.ndarray,
                     columns: np.ndarray, removed: int, error: float, trace_p: float,
                     count: float,
                     lambda_min: float, quantities: np.ndarray, out: np.ndarray,
                     zeros_only: bool = False) -> None:
    """:func:`candidate_quantities` then :func:`floored_optimum` for each column
    (``criteria.candidate_optima``): FGCV appendix IV's a = yᵀP²y (``error``), b = ξr,
    c = ur², α = tr(P) (``trace_p``), β = u, ψ = γ. ``out[:, q]`` receives
    ``[λ, GCV]``; a column in the model's span to rounding (γ ≤ 0 or u ≤ 0) gets
    ``[∞, ∞]``: adding it changes nothing. With K targets weighed by ``scales`` (ω,
    :func:`error_and_gamma`; ``error`` is the weighed sum) the same form holds with
    ``b = Σ ωₖξₖrₖ`` and ``c = u·Σ ωₖrₖ²`` (each target's numerator is quadratic in it,
    as in :func:`basis_quantities`); ``quantities`` has 2 + 2K rows."""
    candidate_quantities(variance, gram, n_model, cross_y, weights, columns, removed,
                         quantities)
    n_targets = scales.shape[0]
    for q in range(columns.shape[0]):
        gamma = quantities[CAND_GAMMA, q]
        u = quantities[CAND_U, q]
        if gamma <= 0.0 or u <= 0.0:
            out[0, q] = math.inf
            out[1, q] = math.inf
            continue
        b = 0.0
        r2 = 0.0
        for k in range(n_targets):
            r = quantities[CAND_R + k, q]
            b += scales[k] * quantities[CAND_R + n_targets + k, q] * r
            r2 += scales[k] * r * r
        lam, value, _, _ = floored_optimum(error, b, u * r2, trace_p, u, gamma,
                                           count, lambda_min, zeros_only)
        out[0, q] = lam
        out[1, q] = value


@jit
def basis_optima(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                 weights: np.ndarray, lambdas: np.ndarray, yy: np.ndarray,
                 scales: np.ndarray, count: float, lambda_min: float, out: np.ndarray,
                 zeros_only: bool = False) -> None:
    """:func:`basis_optimum` of every basis function of the model, in one call
    (``criteria.basis_optima``). Row j of ``out`` (M × :func:`quantity_slots`) receives
    ``[λ, GCV, GCV without j, case]`` of basis function j (the rest is working room)."""
    for j in range(weights.shape[0]):
        basis_optimum(variance, gram, cross_y, weights, lambdas, yy, scales, count, j,
                      lambda_min, out[j], zeros_only)


