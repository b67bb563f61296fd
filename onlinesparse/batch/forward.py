"""Forward selection and regularised forward selection (Orr sections 7 and 7.2, A.12, A.14).

Both grow the model one candidate at a time, choosing the candidate whose addition most reduces
the sum-squared error (or, for the regularised version, optionally the cost), and stop when a
model-selection criterion — GCV by default (Orr section 7.4) — stops decreasing.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from onlinesparse.batch._common import (
    RidgePath,
    SelectionTrace,
    condition_number,
    grow_gram,
    ridge_weights,
    validate_choice,
    validate_lambda,
    validate_max_basis,
    validate_problem,
)
from onlinesparse.batch.result import SelectionResult
from onlinesparse.orr.criteria import global_lambda_reestimate

__all__ = ["forward_selection", "regularised_forward_selection"]

StopCriterion = Literal["gcv", "uev", "fpe", "bic"] | None


def _sse_reduction_unregularised(q: dict[str, np.ndarray]) -> np.ndarray:
    """Orr eq. 7.2 (A.12): ``Ŝ_m − Ŝ_{m+1} = (yᵀP f)² / (fᵀP f)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return q["yPf"] ** 2 / q["fPf"]


def _sse_reduction_ridge(q: dict[str, np.ndarray]) -> np.ndarray:
    """Orr eq. 7.6 (A.14), with ``δ = λ + fᵀP f``:
    ``2 (yᵀP²f)(yᵀP f)/δ − (yᵀP f)² (fᵀP²f)/δ²``."""
    y_pf, delta = q["yPf"], q["delta"]
    with np.errstate(divide="ignore", invalid="ignore"):  # δ = 0 only for chosen columns
        return 2.0 * q["yP2f"] * y_pf / delta - y_pf * y_pf * q["fP2f"] / (delta * delta)


def _cost_reduction(q: dict[str, np.ndarray]) -> np.ndarray:
    """Orr eq. 7.7 (A.14), Hagiwara eq. 5: ``Ĉ_m − Ĉ_{m+1} = (yᵀP f)² / (λ + fᵀP f)``."""
    with np.errstate(divide="ignore", invalid="ignore"):  # δ = 0 only for chosen columns
        return q["yPf"] ** 2 / q["delta"]


def _run(candidates: np.ndarray, y: np.ndarray, *, lam: float, criterion: str,
         reestimate: bool, max_basis: int | None, stop: StopCriterion,
         centres: np.ndarray | None, method: str, wait: int = 1,
         min_decrease: float = 0.0) -> SelectionResult:
    F, y, centres = validate_problem(candidates, y, centres)
    n_patterns, n_candidates = F.shape
    max_basis = validate_max_basis(max_basis, n_patterns, n_candidates)
    regularised = lam > 0.0
    yy = float(y @ y)
    trace = SelectionTrace(yy, n_patterns, lam, stop, wait, min_decrease)
    path = RidgePath(F, y, lam)
    # Gram matrix HᵀH and Hᵀy of the chosen columns (m × m, grown by one row per step): the
    # λ re-estimation (Orr A.10) and the condition number of A need nothing more.
    gram = np.zeros((0, 0))
    cross = np.zeros(0)

    for _ in range(max_basis):
        q = path.scores()
        eligible = path.eligible(q["fPf"])
        if not eligible.any():
            break
        if criterion == "cost":
            score = _cost_reduction(q)
        elif regularised:
            score = _sse_reduction_ridge(q)
        else:
            score = _sse_reduction_unregularised(q)
        best = int(np.argmax(np.where(eligible, score, -np.inf)))

        gram = grow_gram(gram, F, path.selected, best, path.norms[best])
        cross = np.append(cross, F[:, best] @ y)
        path.add(best)

        if reestimate:
            # Orr section 7.2: one pass of the GCV re-estimation formula (eq. 6.5) after each
            # selection; every P changes with λ, so the path is recomputed for the new value.
            new_lam, _ = global_lambda_reestimate(gram, cross, yy, n_patterns, path.lam,
                                                  iterations=1)
            floor = np.finfo(float).eps * max(float(np.trace(gram)), np.finfo(float).tiny)
            if not math.isfinite(new_lam):
                new_lam = path.lam
            path.set_lambda(max(new_lam, floor))

        m = len(path.selected)
        # Without regularisation P is a true projection and γ = m exactly (Orr A.8).
        gamma = path.effective_parameters if regularised else float(m)
        if trace.record(path.sse, path.cost, gamma, path.lam,
                        condition_number(gram + path.lam * np.eye(m))):
            break

    chosen = path.selected[:trace.chosen_size(len(path.selected))]
    final_lam = trace.lam[len(chosen)]
    return SelectionResult(
        method=method,
        selected=np.array(chosen, dtype=np.int64),
        lambdas=np.full(len(chosen), final_lam),
        weights=ridge_weights(F, y, chosen, final_lam),
        path=np.array(path.selected, dtype=np.int64),
        sse=np.array(trace.sse),
        gcv=np.array(trace.gcv),
        cost=np.array(trace.cost) if regularised else None,
        centres=None if centres is None else centres[chosen],
        details=trace.details(criterion),
    )


def forward_selection(candidates: np.ndarray, y: np.ndarray, *, max_basis: int | None = None,
                      stop: StopCriterion = "gcv", centres: np.ndarray | None = None,
                      wait: int = 1, min_decrease: float = 0.0) -> SelectionResult:
    """Plain forward selection of basis functions (Orr section 7, eq. 7.2, appendix A.12).

    Starting from the empty model, each step adds the candidate ``f_J`` with the largest
    reduction in sum-squared error ``(yᵀP_m f_J)² / (f_Jᵀ P_m f_J)`` (Orr eq. 7.2) and updates
    ``P_m F`` and ``P_m y`` by Orr eq. 7.1; the run stops at the first step where the stopping
    criterion (GCV, Orr eq. 5.2, by default) does not decrease, and the model before that step
    is returned (Orr section 7.4). Candidates numerically in the span of the model (squared
    residual norm below 10⁻¹² of their own) are not eligible.

    Parameters
    ----------
    candidates
        Full candidate design matrix ``F`` (p patterns × M candidates), Orr's ``F``.
    y
        Targets, length p.
    max_basis
        Largest number of functions to add (default ``min(M, p − 1)``).
    stop
        Criterion whose failure to decrease stops the run (see ``wait``): ``"gcv"``
        (default), ``"uev"``, ``"fpe"``, ``"bic"`` (Orr 5.3–5.6, from
        ``onlinesparse.orr.criteria``), or ``None`` to add ``max_basis`` functions (or until no
        candidate is eligible) and return them all.
    centres
        Optional centres of the candidates (one row per column of ``F``), carried into the
        result for the chosen functions.
    wait
        Additions without a new minimum of ``stop`` after which the run stops, keeping the
        model of that minimum (default 1: stop at the first non-decrease, Orr section 7.4;
        Orr's Matlab ``rbf_fs_2`` waits 2).
    min_decrease
        Relative decrease of ``stop`` below its smallest value so far that an addition needs
        to count as a new minimum (default 0; ``rbf_fs_2``: 10⁻⁴, its ``thresh = 10⁴``).

    Returns
    -------
    SelectionResult
        ``cost`` is ``None`` (the cost is the SSE); ``details["condition"]`` is the condition
        number of ``A = HᵀH`` after each step.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinesparse.batch import forward_selection, gaussian_candidates
    >>> rng = np.random.default_rng(0)
    >>> x = np.sort(rng.uniform(-10, 10, 50))
    >>> y = (1 - np.exp(-x)) / (1 + np.exp(-x)) + 0.1 * rng.standard_normal(50)
    >>> F = gaussian_candidates(x, centres=x, radius=2.0)
    >>> result = forward_selection(F, y, centres=x)
    >>> result.n_selected
    11
    >>> bool(np.all(np.diff(result.sse) <= 0))
    True
    """
    return _run(candidates, y, lam=0.0, criterion="sse", reestimate=False,
                max_basis=max_basis, stop=stop, centres=centres, method="forward_selection",
                wait=wait, min_decrease=min_decrease)


def regularised_forward_selection(
    candidates: np.ndarray, y: np.ndarray, *, lam: float = 1e-2,
    criterion: Literal["sse", "cost"] = "sse", reestimate: bool = True,
    max_basis: int | None = None, stop: StopCriterion = "gcv",
    centres: np.ndarray | None = None, wait: int = 1, min_decrease: float = 0.0,
) -> SelectionResult:
    """Regularised forward selection with a global ridge λ (Orr section 7.2, appendix A.14).

    Each step adds the candidate with the largest decrease in sum-squared error (Orr eq. 7.6)
    or in the cost ``SSE + λ‖w‖²`` (Orr eq. 7.7), using ``P_{m+1} = P_m − P_m f fᵀP_m /
    (λ + fᵀP_m f)`` (eq. 7.5); then, if ``reestimate``, λ gets one pass of the GCV
    re-estimation formula (Orr eq. 6.5, appendix A.10, via
    ``onlinesparse.orr.criteria.global_lambda_reestimate``), as Orr recommends. The run stops when
    the criterion (GCV by default, computed with ``γ = p − tr(P)``) stops decreasing.

    Parameters
    ----------
    candidates
        Full candidate design matrix ``F`` (p × M).
    y
        Targets, length p.
    lam
        Initial (or, with ``reestimate=False``, fixed) regularisation parameter, ``> 0``.
    criterion
        ``"sse"`` (Orr eq. 7.6) or ``"cost"`` (Orr eq. 7.7).
    reestimate
        Re-estimate λ once after each selection (Orr section 7.2).
    max_basis
        Largest number of functions to add (default ``min(M, p − 1)``).
    stop
        Stopping criterion as in :func:`forward_selection`, or ``None``.
    centres
        Optional candidate centres, carried into the result.
    wait
        Additions without a new minimum of ``stop`` after which the run stops, keeping the
        model of that minimum (default 1, as in :func:`forward_selection`; Orr's
        Matlab ``rbf_fs_2`` waits 2).
    min_decrease
        Relative decrease of ``stop`` below its smallest value so far that an addition needs
        to count as a new minimum (default 0; ``rbf_fs_2``: 10⁻⁴, its ``thresh = 10⁴``).

    Returns
    -------
    SelectionResult
        ``lambdas`` holds the λ of the returned model; ``details["lambda"]`` the λ after each
        step and ``details["condition"]`` the condition number of ``A = HᵀH + λI``.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinesparse.batch import gaussian_candidates, regularised_forward_selection
    >>> rng = np.random.default_rng(0)
    >>> x = np.sort(rng.uniform(-10, 10, 50))
    >>> y = (1 - np.exp(-x)) / (1 + np.exp(-x)) + 0.1 * rng.standard_normal(50)
    >>> F = gaussian_candidates(x, centres=x, radius=2.0)
    >>> result = regularised_forward_selection(F, y, stop=None, max_basis=50)
    >>> len(result.path), bool(result.details["condition"].max() < 1e8)
    (50, True)
    """
    lam = validate_lambda(lam)
    validate_choice("criterion", criterion, ("sse", "cost"))
    return _run(candidates, y, lam=lam, criterion=criterion, reestimate=bool(reestimate),
                max_basis=max_basis, stop=stop, centres=centres,
                method="regularised_forward_selection", wait=wait, min_decrease=min_decrease)
