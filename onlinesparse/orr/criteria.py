"""Model-selection criteria and the GCV-optimal regularisation of one basis function.

Every criterion here is a function of a handful of numbers that the ridge state keeps at all
times (Orr (1996) section 5): the training error ``e = yᵀP²y``, the effective number of
parameters ``γ`` and the number of patterns ``p``. Nothing in this module forms a p × p
matrix; leave-one-out, which needs the diagonal of P, is computed over the stored window only
when asked for.

Conventions
-----------
Where a criterion is undefined because the model has used up every degree of freedom
(``p − γ ≤ 0``), it is ``inf`` rather than ``nan``: such a model is never preferred by a
minimising search, which is what a caller wants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onlinesparse import core

if TYPE_CHECKING:  # pragma: no cover
    from onlinesparse.orr.ridge import IncrementalRidge

__all__ = [
    "gcv",
    "uev",
    "fpe",
    "bic",
    "noise_variance",
    "LocalOptimum",
    "optimal_lambda",
    "basis_quantities",
    "basis_optimum",
    "candidate_quantities",
    "candidate_optima",
    "global_lambda_reestimate",
    "basis_optima",
    "candidate_scores",
]


def _dof(effective_parameters: float, n_patterns: float) -> float:
    return n_patterns - effective_parameters


def gcv(training_error: float, effective_parameters: float, n_patterns: float) -> float:
    """Generalised cross-validation, Orr eq. 5.6: ``p·yᵀP²y / (p − γ)²`` (∞ when p ≤ γ).

    The formula is written once, in the compiled layer, because the pruner's compiled
    decision (``core.candidate_move``) needs it too.
    """
    return core.gcv(float(training_error), float(effective_parameters), float(n_patterns))


def uev(training_error: float, effective_parameters: float, n_patterns: float) -> float:
    """Unbiased estimate of variance, Orr eq. 5.3: ``yᵀP²y / (p − γ)`` (written in the
    compiled layer, as :func:`gcv` is, for the streaming regressor's fused sample)."""
    return core.uev(float(training_error), float(effective_parameters), float(n_patterns))


def fpe(training_error: float, effective_parameters: float, n_patterns: float) -> float:
    """Final prediction error, Orr eq. 5.4: ``(p + γ)/(p − γ) · yᵀP²y / p``."""
    dof = _dof(effective_parameters, n_patterns)
    if dof <= 0.0 or n_patterns <= 0.0:
        return math.inf
    return (n_patterns + effective_parameters) / dof * training_error / n_patterns


def bic(training_error: float, effective_parameters: float, n_patterns: float) -> float:
    """Bayesian information criterion, Orr eq. 5.5:
    ``(p + (ln p − 1)γ)/(p − γ) · yᵀP²y / p``."""
    dof = _dof(effective_parameters, n_patterns)
    if dof <= 0.0 or n_patterns <= 1.0:
        return math.inf
    factor = n_patterns + (math.log(n_patterns) - 1.0) * effective_parameters
    return factor / dof * training_error / n_patterns


def noise_variance(training_error: float, effective_parameters: float, n_patterns: float) -> float:
    """Noise estimate of FGCV eq. 8, ``yᵀP²y / tr(P)`` with ``tr(P) = p − γ``.

    It is the same number as Orr's UEV (eq. 5.3); both names are kept because the papers use
    both.
    """
    return uev(training_error, effective_parameters, n_patterns)


# --------------------------------------------------------------------------------------------
# GCV as a function of one regularisation parameter (Orr appendix A.11 / FGCV appendix I)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalOptimum:
    """The GCV-optimal λ of one basis function with all other λ's held fixed.

    Attributes
    ----------
    lam
        The optimal λ in ``[lambda_min, ∞]``; ``math.inf`` means the basis function should be
        removed (or, for a candidate, not added).
    gcv
        GCV of the model after setting that λ.
    gcv_removed
        GCV of the model without the basis function (λ = ∞).
    case
        Which branch of the case analysis decided (for tests and diagnostics):
        ``"interior"``, ``"zero"``, ``"infinite"`` or ``"boundary"`` (both ends compared).
    """

    lam: float
    gcv: float
    gcv_removed: float
    case: str


def optimal_lambda(a: float, b: float, c: float, alpha: float, beta: float, psi: float,
                   n_patterns: float, lambda_min: float = 0.0,
                   zeros_only: bool = False) -> LocalOptimum:
    """Minimise GCV over one λⱼ ∈ [lambda_min, ∞], Orr appendix A.11 (FGCV appendix I).

    ``zeros_only=True`` reads ``lambda_min`` as FGCV 3.2 point 7 states it ("some of the
    α_j may reach 0 … set such α_j to … α_min"): the minimum over ``[0, ∞]``, unless it is
    at λ = 0, in which case the minimum over ``[lambda_min, ∞]``. An optimum inside
    ``(0, lambda_min)`` then stands, where the default floor would raise it.

    Parameters follow Orr appendix A.11 with ``Pⱼ`` the projection matrix without basis
    function j:
    ``a = yᵀPⱼ²y``, ``b = (yᵀPⱼ²hⱼ)(yᵀPⱼhⱼ)``, ``c = (hⱼᵀPⱼ²hⱼ)(yᵀPⱼhⱼ)²``,
    ``alpha = tr(Pⱼ)``, ``beta = hⱼᵀPⱼ²hⱼ`` and ``psi = hⱼᵀPⱼhⱼ`` (so that ``Δ = λ + ψ``).

    GCV is ``p(aΔ² − 2bΔ + c)/(αΔ − β)²`` and its derivative has the sign of
    ``kΔ − m`` with ``k = bα − aβ`` and ``m = cα − bβ`` on the whole domain ``Δ ≥ ψ``
    (the pole ``β/α`` lies below ψ). The cases:

    * ``k > 0``: the stationary point ``Δ̂ = m/k`` is a minimum; if it lies below
      ``ψ + lambda_min`` the derivative is positive on the domain and the optimum is the
      lower end.
    * ``k < 0``: a stationary point inside the domain is a *maximum*, so the minimum is at
      one end; both ends are evaluated (FGCV appendix I case 4). With no stationary point in
      the domain GCV falls all the way and the optimum is ∞.
    * ``k = 0`` (to rounding): the sign of ``−m`` decides; a flat GCV prefers ∞, the simpler
      model. Orr's first case (``aβ = αb`` ⇒ ∞) is the ``m ≥ 0`` half of this.
    """
    # The case analysis runs compiled (the pruner calls it for every evaluation); this
    # wrapper names the case.
    lam, value, removed, case = core.floored_optimum(
        float(a), float(b), float(c), float(alpha), float(beta), float(psi),
        float(n_patterns), float(lambda_min), bool(zeros_only))
    return LocalOptimum(lam, value, removed, core.CASES[case])


# The quantities of basis functions in and out of the model, and the global re-estimation
# formula, need the ridge state; they are defined below the state classes' import to keep
# this module importable on its own for the scalar criteria.


def basis_quantities(model: IncrementalRidge, j: int) -> dict[str, float]:
    """The five numbers of Orr appendix A.11 and ψⱼ for basis function ``j`` of the model,
    in O(M²).

    ``S' = S − sⱼsⱼᵀ/sⱼⱼ`` and ``w' = w − sⱼwⱼ/sⱼⱼ`` are the variance matrix and weights
    with j removed (its λ → ∞ limit, FGCV appendix V with Kⱼ = 1/sⱼⱼ), kept at full size
    with a zero row and column j. With ``gⱼ = G[:, j]`` (Orr (1996) A.11):

    * ``yᵀPⱼhⱼ = cⱼ − (Gw')ⱼ``
    * ``ψ = hⱼᵀPⱼhⱼ = Gⱼⱼ − gⱼᵀS'gⱼ``
    * ``β = hⱼᵀPⱼ²hⱼ = Gⱼⱼ − 2gⱼᵀS'gⱼ + gⱼᵀS'GS'gⱼ``
    * ``yᵀPⱼ²hⱼ = yᵀPⱼhⱼ − (c − Gw')ᵀS'gⱼ``
    * ``a = yᵀPⱼ²y = s − 2w'ᵀc + w'ᵀGw'``
    * ``α = tr(Pⱼ) = p − γⱼ`` with ``γⱼ = (M − 1) − Σ_{i≠j} λᵢ S'ᵢᵢ``.

    Returns a dict with ``a, b, c, alpha, beta, psi`` (the arguments of
    :func:`optimal_lambda`) and ``yPh``, ``yP2h``.
    """
    window, state = model.window, model.state
    size = state.size
    if not 0 <= j < size:
        raise ValueError(f"basis index {j} is not in the model (it has {size} basis functions)")
    # S' and w' are never formed: each product with them is a product with S or G plus a
    # correction along sⱼ, so the cost is four M × M matrix-vector products, run as one
    # compiled loop (the formulas above, in the same order).
    out = np.empty(core.quantity_slots(model.n_targets))
    targets = window.targets
    core.basis_quantities(state.variance, window.gram_buffer, window.cross_y_buffer,
                          state.weights, state.lambdas, targets.moments[core.YY],
                          targets.scales, window.count, int(j), out)
    quantities = dict(zip(("a", "b", "c", "alpha", "beta", "psi"), out[:6].tolist(),
                          strict=True))
    quantities["yPh"] = window._per_target(out[core.Q_Y_PH::2])
    quantities["yP2h"] = window._per_target(out[core.Q_Y_P2H::2])
    return quantities


def basis_optimum(model: IncrementalRidge, j: int, lambda_min: float = 0.0,
                  zeros_only: bool = False) -> LocalOptimum:
    """:func:`optimal_lambda` of :func:`basis_quantities` for basis function ``j``, in one
    compiled call: the pruner's evaluation of a basis function (Orr 6.4, A.11).
    ``zeros_only`` as in :func:`optimal_lambda`."""
    window, state = model.window, model.state
    if not 0 <= j < state.size:
        raise ValueError(f"basis index {j} is not in the model (it has {state.size} basis "
                         "functions)")
    out = np.empty(core.quantity_slots(model.n_targets))
    targets = window.targets
    core.basis_optimum(state.variance, window.gram_buffer, window.cross_y_buffer,
                       state.weights, state.lambdas, targets.moments[core.YY],
                       targets.scales, window.count, int(j), float(lambda_min), out,
                       bool(zeros_only))
    return LocalOptimum(float(out[core.OPT_LAMBDA]), float(out[core.OPT_GCV]),
                        float(out[core.OPT_WITHOUT]), core.CASES[int(out[core.OPT_CASE])])


def candidate_quantities(model: IncrementalRidge, positions: np.ndarray | None = None,
                         without: int | None = None) -> dict[str, np.ndarray]:
    """FGCV's r, γ, ξ, u (eqs. 16–19) for candidate columns not in the model, vectorised.

    With ``k = Hᵀφ`` (the candidate's cross statistics with the model columns):
    ``r = yᵀPφ = φᵀy − kᵀw``, ``γ = φᵀPφ = φᵀφ − kᵀSk``,
    ``ξ = yᵀP²φ = φᵀy − wᵀk − (c − Gw)ᵀSk``, ``u = φᵀP²φ = φᵀφ − 2kᵀSk + kᵀSGSk``.
    O(M²) per candidate. ``positions`` index the window's candidate block (0-based within
    it); the default is every candidate. ``without = j`` gives the quantities in the model
    without basis function j (``S``, ``w`` replaced by ``S'``, ``w'`` of
    :func:`basis_quantities`), for pricing a trade without making it.
    """
    columns, removed = _candidate_columns(model, positions, without)
    n_targets = model.n_targets
    out = np.empty((2 + 2 * n_targets, len(columns)))
    core.candidate_quantities(model.state.variance, model.window.gram_buffer, model.state.size,
                              model.window.cross_y_buffer, model.state.weights, columns,
                              removed, out)
    r = out[core.CAND_R:core.CAND_R + n_targets]
    xi = out[core.CAND_R + n_targets:]
    per_target = model.window._per_target
    return {"r": per_target(r.T).T, "gamma": out[core.CAND_GAMMA],
            "xi": per_target(xi.T).T, "u": out[core.CAND_U]}


def candidate_optima(model: IncrementalRidge, positions: np.ndarray,
                     lambda_min: float = 0.0, without: int | None = None,
                     zeros_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """GCV-optimal λ of each candidate and the model's GCV with it added at that λ (FGCV
    appendix IV, Orr A.11 with ``Pⱼ = P``: a = yᵀP²y, b = ξr, c = ur², α = tr(P), β = u,
    ψ = γ), in one compiled call. ``λ = ∞`` means the candidate does not lower GCV (or is
    in the model's span). ``without = j``: the same for the model without basis function
    j, i.e. the GCV of trading j for the candidate. ``zeros_only`` as in
    :func:`optimal_lambda`."""
    columns, removed = _candidate_columns(model, positions, without)
    if removed >= 0:
        q = basis_quantities(model, removed)
        error, trace_p = q["a"], q["alpha"]
    else:
        error, trace_p = model.training_error, model.n_patterns - model.effective_parameters
    out = np.empty((2, len(columns)))
    core.candidate_optima(model.state.variance, model.window.gram_buffer, model.state.size,
                          model.window.cross_y_buffer, model.state.weights,
                          model.target_scales, columns, removed, float(error),
                          float(trace_p), float(model.n_patterns), float(lambda_min),
                          np.empty((2 + 2 * model.n_targets, len(columns))), out,
                          bool(zeros_only))
    return out[0], out[1]


def _candidate_columns(model: IncrementalRidge, positions: np.ndarray | None,
                       without: int | None) -> tuple[np.ndarray, int]:
    window = model.window
    columns = np.arange(window.n_model, window.n_columns)
    if positions is not None:
        columns = columns[np.asarray(positions, dtype=np.int64)]
    if without is None:
        return columns, -1
    if not 0 <= without < model.size:
        raise ValueError(f"basis index {without} is not in the model (it has {model.size})")
    return columns, int(without)


def global_lambda_reestimate(gram: np.ndarray, cross_y: np.ndarray, yy: float,
                             n_patterns: float, lam: float, iterations: int = 100,
                             tol: float = 1e-6) -> tuple[float, list[float]]:
    """Iterate Orr's GCV re-estimation formula for one global λ (eq. 6.5 / A.10).

    ``λ̂ = yᵀP²y · tr(A⁻¹ − λA⁻²) / (ŵᵀA⁻¹ŵ · tr(P))``. One symmetric eigendecomposition of
    ``G = HᵀH = V diag(μ) Vᵀ`` makes every iteration O(M): with ``z = Vᵀc``,
    ``ŵᵀA⁻¹ŵ = Σ zᵢ²/(λ+μᵢ)³``, ``tr(A⁻¹ − λA⁻²) = Σ μᵢ/(λ+μᵢ)²``,
    ``γ = Σ μᵢ/(λ+μᵢ)`` and ``yᵀP²y = yᵀy − 2Σ zᵢ²/(λ+μᵢ) + Σ μᵢzᵢ²/(λ+μᵢ)²``.

    Returns the final λ and the GCV value after each iteration.
    """
    if lam <= 0.0:
        raise ValueError("global re-estimation needs a positive starting λ")
    mu, V = np.linalg.eigh(gram)
    mu = np.clip(mu, 0.0, None)
    z = V.T @ cross_y
    z2 = z * z
    trace: list[float] = []
    for _ in range(iterations):
        d = lam + mu
        # e = yᵀy − 2wᵀc + wᵀGw with w = V z/d: Σ z²(μ/d² − 2/d) + s
        error = max(yy + float(np.sum(z2 * (mu / (d * d) - 2.0 / d))), 0.0)
        gamma = float(np.sum(mu / d))
        trace.append(gcv(error, gamma, n_patterns))
        wAw = float(np.sum(z2 / (d * d * d)))
        tr_term = float(np.sum(mu / (d * d)))
        tr_P = n_patterns - gamma
        if wAw <= 0.0 or tr_P <= 0.0:
            break
        new = error * tr_term / (wAw * tr_P)
        converged = abs(new - lam) <= tol * lam
        lam = new
        if converged or lam <= 0.0:
            break
    d = lam + mu
    error = max(yy + float(np.sum(z2 * (mu / (d * d) - 2.0 / d))), 0.0)
    trace.append(gcv(error, float(np.sum(mu / d)), n_patterns))
    return lam, trace


def basis_optima(model: IncrementalRidge, lambda_min: float = 0.0,
                 zeros_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`basis_optimum` of every basis function of the model, in one compiled call.

    Returns three arrays indexed by position in the model: the optimal λ (``inf``: remove
    it), the GCV at that λ and the GCV without the basis function. This is FGCV's step 5
    for the basis functions in the model (appendices I and IV), O(M³) in all.
    ``zeros_only`` as in :func:`optimal_lambda`.
    """
    window, state = model.window, model.state
    out = np.empty((state.size, core.quantity_slots(model.n_targets)))
    core.basis_optima(state.variance, window.gram_buffer, window.cross_y_buffer,
                      state.weights, state.lambdas, window.targets.moments[core.YY],
                      window.targets.scales, window.count, float(lambda_min), out,
                      bool(zeros_only))
    return out[:, 0].copy(), out[:, 1].copy(), out[:, 2].copy()


def candidate_scores(model: IncrementalRidge, lambda_min: float = 0.0,
                     zeros_only: bool = False) -> dict[str, np.ndarray]:
    """:func:`candidate_optima` of every candidate together with the
    :func:`candidate_quantities` it was computed from, in one compiled call.

    Returns ``"lam"`` and ``"gcv"`` (as :func:`candidate_optima`) and ``"r"``, ``"gamma"``,
    ``"xi"``, ``"u"`` (as :func:`candidate_quantities`), for the window's candidate block in
    order: FGCV's step 5 for the columns outside the model, with the quantities its
    numerical-health check (section 3.2 point 5) looks at. ``zeros_only`` as in
    :func:`optimal_lambda`.
    """
    columns, _ = _candidate_columns(model, None, None)
    n_targets = model.n_targets
    quantities = np.empty((2 + 2 * n_targets, len(columns)))
    out = np.empty((2, len(columns)))
    core.candidate_optima(model.state.variance, model.window.gram_buffer, model.state.size,
                          model.window.cross_y_buffer, model.state.weights,
                          model.target_scales, columns, -1, float(model.training_error),
                          float(model.n_patterns - model.effective_parameters),
                          float(model.n_patterns), float(lambda_min), quantities, out,
                          bool(zeros_only))
    per_target = model.window._per_target
    r = quantities[core.CAND_R:core.CAND_R + n_targets]
    xi = quantities[core.CAND_R + n_targets:]
    return {"lam": out[0], "gcv": out[1], "r": per_target(r.T).T,
            "gamma": quantities[core.CAND_GAMMA], "xi": per_target(xi.T).T,
            "u": quantities[core.CAND_U]}
