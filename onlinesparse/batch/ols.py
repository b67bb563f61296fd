"""Orthogonal least squares and regularised OLS (Orr sections 7.1 and 7.3, A.13 and A.15).

The candidate matrix is kept orthogonalised against the chosen columns,
``F̃_{m+1} = F̃_m − f̃_J f̃_Jᵀ F̃_m / (f̃_Jᵀ f̃_J)`` (Orr section 7.1), so that scoring a candidate
needs only its orthogonalised column: O(p) per candidate (Orr eq. 7.4). The chosen columns
factor as ``H_m = H̃_m U_m`` with ``U_m`` unit upper triangular (Orr eq. 7.3) and the weights
are recovered by back substitution, ``ŵ = U_m⁻¹ w̃`` (Orr A.13, A.15).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import scipy.linalg

from onlinesparse.batch._common import (
    SPAN_TOLERANCE,
    SelectionTrace,
    condition_number,
    grow_gram,
    validate_choice,
    validate_lambda,
    validate_max_basis,
    validate_problem,
)
from onlinesparse.batch.result import SelectionResult
from onlinesparse.orr.criteria import global_lambda_reestimate

__all__ = ["orthogonal_least_squares", "regularised_orthogonal_least_squares"]

StopCriterion = Literal["gcv", "uev", "fpe", "bic"] | None


class _OrthogonalPath:
    """``F̃`` (p × M), the chosen orthogonal columns ``h̃ⱼ`` and the rows of ``U``."""

    def __init__(self, candidates: np.ndarray, y: np.ndarray) -> None:
        self.candidates = candidates
        self.y = y
        self.norms = np.einsum("ij,ij->j", candidates, candidates)
        self.orthogonal = candidates.copy()  # F̃_m
        self.residual = y.copy()  # y with its components along h̃₁ … h̃_m removed
        self.selected: list[int] = []
        self.columns: list[np.ndarray] = []  # h̃ⱼ
        self.projections: list[float] = []  # yᵀh̃ⱼ
        self.squared_norms: list[float] = []  # h̃ⱼᵀh̃ⱼ
        self.couplings: list[np.ndarray] = []  # row j of U against every candidate

    def scores(self) -> tuple[np.ndarray, np.ndarray]:
        """``yᵀf̃`` and ``f̃ᵀf̃`` for every candidate, O(p) each.

        ``yᵀf̃`` is taken against the residual of y (equal in exact arithmetic, since
        ``f̃ ⊥ h̃ⱼ``), the modified Gram–Schmidt form, which keeps its accuracy when the
        candidates are strongly correlated.
        """
        ft = self.orthogonal
        return self.residual @ ft, np.einsum("ij,ij->j", ft, ft)

    def eligible(self, squared: np.ndarray) -> np.ndarray:
        mask = (self.norms > 0.0) & (squared > SPAN_TOLERANCE * self.norms)
        mask[self.selected] = False
        return mask

    def add(self, index: int) -> None:
        h = self.orthogonal[:, index].copy()
        d = float(h @ h)
        # Orr section 7.1: F̃ ← F̃ − h̃ (h̃ᵀF̃)/(h̃ᵀh̃); the coefficients are row m of U.
        coupling = (h @ self.orthogonal) / d
        self.orthogonal -= np.outer(h, coupling)
        self.orthogonal[:, index] = 0.0
        self.residual -= h * (float(h @ self.residual) / d)
        self.selected.append(int(index))
        self.columns.append(h)
        self.projections.append(float(h @ self.y))
        self.squared_norms.append(d)
        self.couplings.append(coupling)

    def upper(self, m: int) -> np.ndarray:
        """``U_m``: unit upper triangular with ``U[i, j] = h̃ᵢᵀf_{path j} / (h̃ᵢᵀh̃ᵢ)``."""
        chosen = self.selected[:m]
        upper = np.eye(m)
        for i in range(m):
            upper[i, i + 1:] = self.couplings[i][chosen[i + 1:]]
        return upper

    def orthogonal_weights(self, m: int, lam: float) -> np.ndarray:
        """``w̃ⱼ = yᵀh̃ⱼ / (λ + h̃ⱼᵀh̃ⱼ)`` (Orr A.13, A.15)."""
        z = np.array(self.projections[:m])
        return z / (lam + np.array(self.squared_norms[:m]))

    def weights(self, m: int, lam: float) -> np.ndarray:
        """``ŵ = U_m⁻¹ w̃`` by back substitution."""
        if m == 0:
            return np.zeros(0)
        return scipy.linalg.solve_triangular(self.upper(m), self.orthogonal_weights(m, lam),
                                             unit_diagonal=True)

    def errors(self, lam: float) -> tuple[float, float, float]:
        """SSE, cost (Orr eq. 7.8) and γ of the current model with parameter λ (Orr A.15).

        The SSE is ``‖y − H̃w̃‖²``, evaluated directly rather than as Orr's
        ``yᵀy − Σ (yᵀh̃ⱼ)²(2λ + dⱼ)/(λ + dⱼ)²``, which loses digits by cancellation once the
        model fits well; the two are equal in exact arithmetic.
        """
        m = len(self.selected)
        if m == 0:
            yy = float(self.y @ self.y)
            return yy, yy, 0.0
        basis = np.column_stack(self.columns)
        w_orth = self.orthogonal_weights(m, lam)
        residual = self.y - basis @ w_orth
        sse = float(residual @ residual)
        d = np.array(self.squared_norms)
        gamma = float(np.sum(d / (lam + d)))
        return sse, sse + lam * float(w_orth @ w_orth), gamma


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
    path = _OrthogonalPath(F, y)
    gram = np.zeros((0, 0))  # HᵀH of the chosen columns, grown by one row per step

    for _ in range(max_basis):
        projection, squared = path.scores()
        eligible = path.eligible(squared)
        if not eligible.any():
            break
        current = path_lambda = trace.lam[-1]
        if criterion == "cost":
            # Orr eq. 7.10 (A.15); with λ = 0 this is Orr eq. 7.4 (A.13).
            score = projection ** 2 / (current + squared)
        else:
            # Orr eq. 7.9 (A.15): (yᵀf̃)² (2λ + f̃ᵀf̃) / (λ + f̃ᵀf̃)²; λ = 0 gives eq. 7.4.
            with np.errstate(divide="ignore", invalid="ignore"):
                score = projection ** 2 * (2.0 * current + squared) / (current + squared) ** 2
        best = int(np.argmax(np.where(eligible, score, -np.inf)))
        gram = grow_gram(gram, F, path.selected, best, path.norms[best])
        path.add(best)

        if reestimate:
            # In the orthogonal coordinates Orr's modified ridge (eq. 7.8) is standard ridge on
            # H̃, whose Gram matrix is diag(h̃ⱼᵀh̃ⱼ): one pass of Orr eq. 6.5 applies exactly.
            d = np.array(path.squared_norms)
            new_lam, _ = global_lambda_reestimate(np.diag(d), np.array(path.projections), yy,
                                                  n_patterns, path_lambda, iterations=1)
            floor = np.finfo(float).eps * max(float(d.sum()), np.finfo(float).tiny)
            path_lambda = max(new_lam, floor) if math.isfinite(new_lam) else path_lambda

        m = len(path.selected)
        step_sse, step_cost, gamma = path.errors(path_lambda)
        if not regularised:
            gamma = float(m)  # tr(P) = p − m exactly (Orr A.13)
        upper = path.upper(m)
        if trace.record(step_sse, step_cost, gamma, path_lambda,
                        condition_number(gram + path_lambda * upper.T @ upper)):
            break

    m = trace.chosen_size(len(path.selected))
    final_lam = trace.lam[m]
    details = trace.details(criterion)
    details["orthogonal_weights"] = path.orthogonal_weights(m, final_lam)
    chosen_indices = path.selected[:m]
    return SelectionResult(
        method=method,
        selected=np.array(chosen_indices, dtype=np.int64),
        lambdas=np.full(m, final_lam),
        weights=path.weights(m, final_lam),
        path=np.array(path.selected, dtype=np.int64),
        sse=np.array(trace.sse),
        gcv=np.array(trace.gcv),
        cost=np.array(trace.cost) if regularised else None,
        centres=None if centres is None else centres[chosen_indices],
        details=details,
    )


def orthogonal_least_squares(candidates: np.ndarray, y: np.ndarray, *,
                             max_basis: int | None = None, stop: StopCriterion = "gcv",
                             centres: np.ndarray | None = None, wait: int = 1,
                             min_decrease: float = 0.0) -> SelectionResult:
    """Forward selection by orthogonal least squares (Orr section 7.1, appendix A.13).

    Chooses the same functions as :func:`~onlinesparse.batch.forward_selection` (in exact
    arithmetic the two SSE paths coincide) but scores each candidate in O(p) from its
    orthogonalised column: ``Ŝ_m − Ŝ_{m+1} = (yᵀf̃_J)² / (f̃_Jᵀf̃_J)`` (Orr eq. 7.4). GCV is
    ``p·SSE/(p − m)²`` (Orr A.13) and the weights are ``U_m⁻¹w̃`` with
    ``w̃ⱼ = yᵀh̃ⱼ/(h̃ⱼᵀh̃ⱼ)``.

    Parameters
    ----------
    candidates
        Full candidate design matrix ``F`` (p × M).
    y
        Targets, length p.
    max_basis
        Largest number of functions to add (default ``min(M, p − 1)``).
    stop
        ``"gcv"`` (default), ``"uev"``, ``"fpe"``, ``"bic"`` or ``None`` (see
        :func:`~onlinesparse.batch.forward_selection`).
    centres
        Optional candidate centres, carried into the result.
    wait
        Additions without a new minimum of ``stop`` after which the run stops, keeping the
        model of that minimum (default 1, as in
        :func:`~onlinesparse.batch.forward_selection`; Orr's Matlab ``rbf_fs_2`` waits 2).
    min_decrease
        Relative decrease of ``stop`` below its smallest value so far that an addition needs
        to count as a new minimum (default 0; ``rbf_fs_2``: 10⁻⁴, its ``thresh = 10⁴``).

    Returns
    -------
    SelectionResult
        ``details["orthogonal_weights"]`` holds ``w̃``.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinesparse.batch import gaussian_candidates, orthogonal_least_squares
    >>> rng = np.random.default_rng(0)
    >>> x = np.sort(rng.uniform(-10, 10, 50))
    >>> y = (1 - np.exp(-x)) / (1 + np.exp(-x)) + 0.1 * rng.standard_normal(50)
    >>> result = orthogonal_least_squares(gaussian_candidates(x, x, 2.0), y)
    >>> result.n_selected
    11
    """
    return _run(candidates, y, lam=0.0, criterion="sse", reestimate=False,
                max_basis=max_basis, stop=stop, centres=centres,
                method="orthogonal_least_squares", wait=wait, min_decrease=min_decrease)


def regularised_orthogonal_least_squares(
    candidates: np.ndarray, y: np.ndarray, *, lam: float = 1e-2,
    criterion: Literal["sse", "cost"] = "sse", reestimate: bool = True,
    max_basis: int | None = None, stop: StopCriterion = "gcv",
    centres: np.ndarray | None = None, wait: int = 1, min_decrease: float = 0.0,
) -> SelectionResult:
    """Regularised orthogonal least squares (Orr section 7.3, appendix A.15).

    Ridge regression on the orthogonalised columns: the cost is Orr's modified
    ``(y − Hw)ᵀ(y − Hw) + λ wᵀUᵀU w`` (eq. 7.8), which keeps the variance matrix diagonal in
    the orthogonal coordinates. Candidates are scored by the decrease in SSE,
    ``(yᵀf̃)²(2λ + f̃ᵀf̃)/(λ + f̃ᵀf̃)²`` (eq. 7.9), or in cost, ``(yᵀf̃)²/(λ + f̃ᵀf̃)``
    (eq. 7.10); ``γ = Σⱼ h̃ⱼᵀh̃ⱼ/(λ + h̃ⱼᵀh̃ⱼ)`` (A.15). With ``reestimate``, λ gets one pass of
    the GCV re-estimation formula (Orr eq. 6.5) after each selection, as in regularised forward
    selection (section 7.2) — in the orthogonal coordinates the modified cost is standard ridge,
    so the formula applies unchanged.

    Parameters
    ----------
    candidates
        Full candidate design matrix ``F`` (p × M).
    y
        Targets, length p.
    lam
        Initial (or, with ``reestimate=False``, fixed) regularisation parameter, ``> 0``.
    criterion
        ``"sse"`` (Orr eq. 7.9) or ``"cost"`` (Orr eq. 7.10).
    reestimate
        Re-estimate λ once after each selection.
    max_basis
        Largest number of functions to add (default ``min(M, p − 1)``).
    stop
        Stopping criterion, or ``None``.
    centres
        Optional candidate centres, carried into the result.
    wait
        Additions without a new minimum of ``stop`` after which the run stops, keeping the
        model of that minimum (default 1, as in
        :func:`~onlinesparse.batch.forward_selection`; Orr's Matlab ``rbf_fs_2`` waits 2).
    min_decrease
        Relative decrease of ``stop`` below its smallest value so far that an addition needs
        to count as a new minimum (default 0; ``rbf_fs_2``: 10⁻⁴, its ``thresh = 10⁴``).

    Returns
    -------
    SelectionResult
        ``lambdas`` is the λ of the returned model (it regularises the orthogonalised weights,
        eq. 7.8); ``cost`` traces eq. 7.8.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinesparse.batch import gaussian_candidates, regularised_orthogonal_least_squares
    >>> rng = np.random.default_rng(0)
    >>> x = np.sort(rng.uniform(-10, 10, 50))
    >>> y = (1 - np.exp(-x)) / (1 + np.exp(-x)) + 0.1 * rng.standard_normal(50)
    >>> result = regularised_orthogonal_least_squares(gaussian_candidates(x, x, 2.0), y)
    >>> 5 <= result.n_selected <= 20
    True
    """
    lam = validate_lambda(lam)
    validate_choice("criterion", criterion, ("sse", "cost"))
    return _run(candidates, y, lam=lam, criterion=criterion, reestimate=bool(reestimate),
                max_basis=max_basis, stop=stop, centres=centres,
                method="regularised_orthogonal_least_squares", wait=wait,
                min_decrease=min_decrease)
