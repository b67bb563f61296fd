"""Thresholding of the cost reduction, TCR (Hagiwara, sections 2.2, 3.1 and 3.3).

TCR runs the greedy regularised forward selection of Hagiwara section 2.2 (Orr section 7.2
with a small fixed λ, choosing by cost reduction) for ``k̄`` steps, picks ``k̂_LCV`` by
leave-one-out cross-validation (eq. 30), and then keeps only the prefix up to the last step
whose cost reduction exceeds the noise level ``σ·√(2 log n_k)`` (eq. 28 with ε = 0) — a bound
on what the largest of ``n_k`` pure-noise reductions would reach.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse.batch._common import (
    RidgePath,
    ridge_weights,
    validate_lambda,
    validate_max_basis,
    validate_problem,
)
from onlinesparse.batch.result import SelectionResult
from onlinesparse.orr.criteria import gcv

__all__ = ["tcr"]


def _loo_error(residual: np.ndarray, diagonal: np.ndarray) -> float:
    """Hagiwara eq. 30 (Orr eq. 5.1 times p): ``Σᵢ (rᵢ / (1 − hᵢᵢ))²`` with
    ``rᵢ = (P y)ᵢ`` and ``1 − hᵢᵢ = Pᵢᵢ``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = residual / diagonal
    total = float(errors @ errors)
    return total if math.isfinite(total) else math.inf


def tcr(candidates: np.ndarray, y: np.ndarray, *, lam: float = 1e-6, max_basis: int = 50,
        epsilon: float = 0.0, centres: np.ndarray | None = None) -> SelectionResult:
    """Sparse regularised forward selection by thresholding the cost reduction (Hagiwara).

    1. Greedy procedure (Hagiwara section 2.2 = Orr 7.2 with fixed λ): for ``k = 1 … k̄`` add
       the candidate with the largest cost reduction ``c²_k = (yᵀP_{k−1}g)² /
       (λ + gᵀP_{k−1}g)`` (eqs. 5–6), updating ``P_k`` by eq. 7 (Orr 7.5).
    2. LOOCV (eq. 30): ``LCVE(k) = Σᵢ (rᵢ/(1 − hᵢᵢ))²`` from ``P_k y`` and ``diag(P_k)``,
       both maintained in O(p) per step; ``k̂_LCV = argmin_{1≤k≤k̄} LCVE(k)``.
    3. Noise level (section 3.3): ``σ² = LCVE(k̂_LCV)/n`` — the mean leave-one-out squared
       error (Orr eq. 5.1). The paper writes "LCVE(k̂_LCV)", but its eq. 30 is a sum; the
       variance estimate has to be the mean.
    4. Threshold (eq. 28): ``θ_k = σ·√((2 + ε) log n_k)`` with ``n_k = M − (k − 1)``, the
       number of candidates competing at step k (the count in the union bound of eq. 26; it is
       Hagiwara's ``n − (k − 1)`` when, as in the paper, there is one candidate per data
       point). ``K = {k ≤ k̂_LCV : |c_k| ≥ θ_k}``; the model is the prefix up to
       ``k̂_TCR = max K`` (the empty model if K is empty).

    The weights are the ridge weights with the same λ on the chosen prefix (Hagiwara eq. 4),
    which are exactly the greedy procedure's weights at step ``k̂_TCR``.

    Parameters
    ----------
    candidates
        Candidate design matrix ``G`` (n patterns × M candidates), e.g. Gaussian functions
        centred on the training inputs.
    y
        Targets, length n.
    lam
        Fixed, small regularisation parameter (the paper uses 10⁻⁶ throughout), ``> 0``.
    max_basis
        ``k̄``, the number of greedy steps (the paper uses 50 for its small data sets); capped
        at ``min(M, n − 1)``.
    epsilon
        ε of the threshold; the paper sets 0 (section 3.3). Must be ``> −2``.
    centres
        Optional candidate centres, carried into the result.

    Returns
    -------
    SelectionResult
        ``details`` holds ``"k_lcv"`` (k̂_LCV), ``"noise_std"`` (σ), ``"loo"`` (LCVE(k) for
        ``k = 0 … k̄``), ``"cost_reduction"`` (``c²_k``, ``k = 1 … k̄``) and ``"threshold"``
        (``θ_k``). The LOOCV model of the paper is ``path[:k_lcv]`` with the same λ
        (:func:`~onlinesparse.batch.ridge_weights` refits it).

    Examples
    --------
    >>> import numpy as np
    >>> from onlinesparse.batch import gaussian_candidates, tcr
    >>> rng = np.random.default_rng(1)
    >>> x = rng.uniform(-1, 1, (100, 2))
    >>> y = np.sin(3 * x[:, 0]) * x[:, 1] + 0.1 * rng.standard_normal(100)
    >>> result = tcr(gaussian_candidates(x, x, radius=0.7), y, max_basis=40, centres=x)
    >>> result.n_selected < result.details["k_lcv"]
    True
    """
    F, y, centres = validate_problem(candidates, y, centres)
    n_patterns, n_candidates = F.shape
    lam = validate_lambda(lam)
    # k̄ is capped at what the data allow (fewer functions than patterns) so that the
    # paper's default of 50 works on small problems too.
    max_basis = validate_max_basis(min(int(max_basis), n_candidates, n_patterns - 1),
                                   n_patterns, n_candidates)
    if not (math.isfinite(epsilon) and epsilon > -2.0):
        raise ValueError(f"epsilon must be finite and > −2, got {epsilon}")
    yy = float(y @ y)

    path = RidgePath(F, y, lam, track_diagonal=True)
    sse, cost, gcv_trace = [yy], [yy], [gcv(yy, 0.0, n_patterns)]
    loo = [yy]  # the empty model: P = I
    reductions: list[float] = []
    for _ in range(max_basis):
        q = path.scores()
        eligible = path.eligible(q["fPf"])
        if not eligible.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):  # δ = 0 only for chosen columns
            reduction = q["yPf"] ** 2 / q["delta"]  # Hagiwara eq. 5 (Orr eq. 7.7)
        best = int(np.argmax(np.where(eligible, reduction, -np.inf)))
        reductions.append(float(reduction[best]))
        path.add(best)
        sse.append(path.sse)
        cost.append(path.cost)
        gcv_trace.append(gcv(path.sse, path.effective_parameters, n_patterns))
        loo.append(_loo_error(path.residual, path.diagonal))

    steps = len(reductions)
    if steps == 0:
        raise ValueError("no candidate could be selected (all candidate columns are zero)")
    loo_arr = np.array(loo)
    k_lcv = int(np.argmin(loo_arr[1:])) + 1
    noise_std = math.sqrt(loo_arr[k_lcv] / n_patterns)
    competing = n_candidates - np.arange(steps)  # n_k = M − (k − 1), k = 1 … steps
    threshold = noise_std * np.sqrt((2.0 + epsilon) * np.log(competing))
    magnitude = np.sqrt(np.array(reductions))
    significant = np.flatnonzero(magnitude[:k_lcv] >= threshold[:k_lcv])
    k_tcr = int(significant[-1]) + 1 if significant.size else 0

    chosen = path.selected[:k_tcr]
    return SelectionResult(
        method="tcr",
        selected=np.array(chosen, dtype=np.int64),
        lambdas=np.full(k_tcr, lam),
        weights=ridge_weights(F, y, chosen, lam),
        path=np.array(path.selected, dtype=np.int64),
        sse=np.array(sse),
        gcv=np.array(gcv_trace),
        cost=np.array(cost),
        centres=None if centres is None else centres[chosen],
        details={
            "k_lcv": k_lcv,
            "noise_std": noise_std,
            "loo": loo_arr,
            "cost_reduction": np.array(reductions),
            "threshold": threshold,
            "lambda": lam,
        },
    )
