"""Validation, ridge refits, stopping rules and the greedy ridge path shared by the algorithms.

Nothing here forms a p × p matrix. The greedy path keeps ``P·F`` and ``P·y`` (Orr A.12–A.14)
and updates them by the rank-one formula of Orr eq. 7.5 / A.5.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import scipy.linalg

from onlinesparse.orr.criteria import bic, fpe, gcv, uev

__all__ = ["ridge_weights"]

# Model-selection criteria that can stop a run: each maps (training error, effective number of
# parameters, number of patterns) to an error prediction (Orr section 5).
STOP_CRITERIA: dict[str, Callable[[float, float, float], float]] = {
    "gcv": gcv,
    "uev": uev,
    "fpe": fpe,
    "bic": bic,
}

# A candidate whose part orthogonal to the current model has a squared norm below this fraction
# of its own squared norm is numerically inside the model's span: for unregularised selection its
# score would be 0/0, so it is not eligible.
SPAN_TOLERANCE = 1e-12


def validate_problem(candidates: np.ndarray, y: np.ndarray, centres: np.ndarray | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Check the shapes and values of a selection problem; return float copies."""
    candidates = np.array(candidates, dtype=float)
    y = np.array(y, dtype=float)
    if candidates.ndim != 2:
        raise ValueError(f"candidates must be a 2-d array (patterns × candidates), got "
                         f"{candidates.ndim} dimension(s)")
    n_patterns, n_candidates = candidates.shape
    if n_patterns < 2 or n_candidates < 1:
        raise ValueError(f"need at least 2 patterns and 1 candidate, got {candidates.shape}")
    if y.ndim != 1 or len(y) != n_patterns:
        raise ValueError(f"y must be a vector of {n_patterns} targets, got shape {y.shape}")
    if not np.all(np.isfinite(candidates)):
        raise ValueError("candidates contains NaN or infinite values")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    if centres is not None:
        centres = np.array(centres, dtype=float)
        if centres.ndim == 1:
            centres = centres[:, None]
        if centres.ndim != 2 or len(centres) != n_candidates:
            raise ValueError(f"centres must have one row per candidate ({n_candidates}), got "
                             f"shape {centres.shape}")
    return candidates, y, centres


def validate_lambda(lam: float, allow_zero: bool = False) -> float:
    lam = float(lam)
    if not math.isfinite(lam) or lam < 0.0 or (lam == 0.0 and not allow_zero):
        bound = "≥ 0" if allow_zero else "> 0"
        raise ValueError(f"the regularisation parameter must be finite and {bound}, got {lam}")
    return lam


def validate_max_basis(max_basis: int | None, n_patterns: int, n_candidates: int) -> int:
    """Default: as many functions as there are candidates, but fewer than patterns."""
    if max_basis is None:
        return min(n_candidates, n_patterns - 1)
    max_basis = int(max_basis)
    if not 1 <= max_basis <= n_candidates:
        raise ValueError(f"max_basis must be in [1, {n_candidates}], got {max_basis}")
    return max_basis


def validate_stop(stop: str | None) -> Callable[[float, float, float], float] | None:
    if stop is None:
        return None
    if stop not in STOP_CRITERIA:
        raise ValueError(f"stop must be None or one of {sorted(STOP_CRITERIA)}, got {stop!r}")
    return STOP_CRITERIA[stop]


def validate_choice(name: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def ridge_weights(candidates: np.ndarray, y: np.ndarray, selected: Sequence[int],
                  lam: float = 0.0) -> np.ndarray:
    """Weights of the ridge model on the chosen columns, Orr eq. 4.5 / 6.3.

    ``ŵ = (HᵀH + λI)⁻¹Hᵀy`` with ``H = candidates[:, selected]``, computed as the least-squares
    solution of the stacked system ``[H; √λ I] w ≈ [y; 0]``. That avoids squaring the condition
    number of ``H`` (forming ``HᵀH``), which matters for unregularised forward selection near
    the point where Orr's example (section 7.4) becomes ill-conditioned.

    Parameters
    ----------
    candidates
        Candidate design matrix ``F`` (p × M).
    y
        Targets (p,).
    selected
        Columns of ``F`` in the model.
    lam
        Global regularisation parameter ``λ ≥ 0``.
    """
    selected = np.asarray(selected, dtype=np.int64)
    if selected.size == 0:
        return np.zeros(0)
    design = np.asarray(candidates, dtype=float)[:, selected]
    targets = np.asarray(y, dtype=float)
    if lam > 0.0:
        design = np.vstack([design, math.sqrt(lam) * np.eye(len(selected))])
        targets = np.concatenate([targets, np.zeros(len(selected))])
    weights, *_ = scipy.linalg.lstsq(design, targets, lapack_driver="gelsd")
    return weights


def condition_number(gram: np.ndarray) -> float:
    """2-norm condition number of a symmetric positive semi-definite ``A`` (∞ if singular)."""
    if gram.size == 0:
        return 1.0
    eigenvalues = np.linalg.eigvalsh(gram)
    smallest, largest = float(eigenvalues[0]), float(eigenvalues[-1])
    if smallest <= 0.0:
        return math.inf
    return largest / smallest


def validate_wait(wait: int, min_decrease: float) -> tuple[int, float]:
    """Check the patience of the stopping rule (see :func:`stopping_point`)."""
    if isinstance(wait, bool) or not isinstance(wait, int | np.integer) or wait < 1:
        raise ValueError(f"wait must be an integer ≥ 1, got {wait!r}")
    min_decrease = float(min_decrease)
    if not (math.isfinite(min_decrease) and 0.0 <= min_decrease < 1.0):
        raise ValueError(f"min_decrease must be in [0, 1), got {min_decrease}")
    return int(wait), min_decrease


def _running_minimum(values: Sequence[float], min_decrease: float
                     ) -> Iterator[tuple[int, int]]:
    """``(m, best)`` for each ``m ≥ 1``: ``best`` is the last model up to m that set a new
    minimum, one lowering the smallest value so far by more than the fraction
    ``min_decrease`` of it (0: any decrease counts). The rule :func:`best_point` and
    :func:`stopping_point` share."""
    best = 0
    for m in range(1, len(values)):
        if values[m] < values[best] * (1.0 - min_decrease):
            best = m
        yield m, best


def best_point(values: Sequence[float], min_decrease: float = 0.0) -> int:
    """Size of the last model that set a new minimum of the criterion (Orr section 7.4).

    ``values[i]`` is the criterion of the model with ``i`` functions; a model counts as a new
    minimum only if it lowers the smallest value so far by more than the fraction
    ``min_decrease`` of it (0: any decrease counts).
    """
    minima = [best for _, best in _running_minimum(values, min_decrease)]
    return minima[-1] if minima else 0


def stopping_point(values: Sequence[float], wait: int = 1,
                   min_decrease: float = 0.0) -> int | None:
    """Number of functions to keep once the criterion has stopped decreasing (Orr section 7.4).

    ``values[i]`` is the criterion of the model with ``i`` functions. The run stops when
    ``wait`` consecutive additions have failed to set a new minimum (one that lowers the
    smallest value so far by more than the fraction ``min_decrease`` of it), and the model of
    that minimum is kept: the function returns its size, or ``None`` if the run has not
    stopped. ``wait = 1, min_decrease = 0`` stops at the first non-decrease (Orr section
    7.4). Orr's Matlab ``rbf_fs_2`` (rbf2.zip, 1999) waits ``wait = 2`` additions and needs a
    relative decrease of ``1/thresh = 10⁻⁴`` by default.
    """
    for m, best in _running_minimum(values, min_decrease):
        if m - best >= wait:
            return best
    return None


def grow_gram(gram: np.ndarray, candidates: np.ndarray, selected: Sequence[int],
              column: int, norm: float) -> np.ndarray:
    """HᵀH of the chosen columns with ``column`` (squared norm ``norm``) joined, O(p·m): the
    matrix the λ re-estimation (Orr A.10) and the condition number of A need."""
    coupling = candidates[:, selected].T @ candidates[:, column]
    return np.block([[gram, coupling[:, None]], [coupling[None, :], np.array([[norm]])]])


class SelectionTrace:
    """What a greedy selection records after each addition (Orr section 7) and its stopping
    rule (section 7.4), shared by forward selection and OLS in both their forms.

    Traces are indexed by model size from the empty model (SSE = cost = yᵀy, γ = 0):
    SSE, cost, GCV, λ, the condition number of A and, with a stopping criterion, that
    criterion. :meth:`record` returns True once the criterion says stop.
    """

    def __init__(self, yy: float, n_patterns: int, lam: float, stop: str | None,
                 wait: int, min_decrease: float) -> None:
        self.n_patterns = n_patterns
        self.stop = stop
        self.criterion = validate_stop(stop)
        self.wait, self.min_decrease = validate_wait(wait, min_decrease)
        self.sse, self.cost, self.gcv = [yy], [yy], [gcv(yy, 0.0, n_patterns)]
        self.lam, self.condition = [lam], [1.0]
        self.stop_trace = [self.criterion(yy, 0.0, n_patterns)] if self.criterion else []
        self.n_selected: int | None = None

    def record(self, sse: float, cost: float, gamma: float, lam: float,
               condition: float) -> bool:
        """Add the model one function larger; True when the run is to stop here."""
        self.sse.append(sse)
        self.cost.append(cost)
        self.gcv.append(gcv(sse, gamma, self.n_patterns))
        self.lam.append(lam)
        self.condition.append(condition)
        if self.criterion is None:
            return False
        self.stop_trace.append(self.criterion(sse, gamma, self.n_patterns))
        self.n_selected = stopping_point(self.stop_trace, self.wait, self.min_decrease)
        return self.n_selected is not None

    def chosen_size(self, path_length: int) -> int:
        """The size of the model to return: where the criterion stopped the run, else (the
        path ran out first) its last minimum, or the whole path without a criterion."""
        if self.n_selected is None and self.criterion is not None:
            self.n_selected = best_point(self.stop_trace, self.min_decrease)
        return path_length if self.n_selected is None else self.n_selected

    def details(self, criterion: str) -> dict[str, object]:
        """The traces a SelectionResult carries in ``details``."""
        details: dict[str, object] = {"lambda": np.array(self.lam),
                                      "condition": np.array(self.condition),
                                      "stop": self.stop, "criterion": criterion}
        if self.criterion is not None and self.stop != "gcv":
            details[self.stop] = np.array(self.stop_trace)
        return details


class RidgePath:
    """``P·F``, ``P·y``, ``tr(P)`` and optionally ``diag(P)`` along a greedy ridge path.

    With the global ridge λ the projection matrix of the model ``H`` (Orr eq. 6.4) obeys the
    rank-one update of Orr eq. 7.5 (A.5) when a column ``f`` joins:
    ``P⁺ = P − P f fᵀP / (λ + fᵀP f)``. It is applied here to the stacked (augmented) candidate
    matrix ``F̂ = [F; √λ I_M]`` and target ``ŷ = [y; 0]``: ridge on ``F`` is least squares on
    ``F̂``, the top-left p × p block of the (true, idempotent) projector of the augmented
    problem is Orr's ``P``, and the update above becomes a modified Gram–Schmidt step —
    numerically stable even when λ is tiny or 0. From the kept matrices
    ``R = P̂F̂`` ((p + M) × M) and ``r = P̂ŷ``, for every candidate not in the model:

    * ``yᵀPf = rᵀR`` and ``λ + fᵀPf = ‖R_f‖²`` (Orr A.12, A.14),
    * ``P f`` is the top block of ``R_f``, so ``yᵀP²f = r_topᵀR_top`` and ``fᵀP²f = ‖R_top‖²``,
    * ``P y = r_top``: SSE ``= ‖r_top‖²`` (Orr 4.8), cost ``= yᵀPy = ‖r‖²`` (Orr 4.7).

    Each step costs O((p + M) M); no p × p matrix is formed. When λ = 0 the augmented block is
    omitted and this is the orthogonalisation of Orr's forward selection / OLS.
    """

    def __init__(self, candidates: np.ndarray, y: np.ndarray, lam: float,
                 track_diagonal: bool = False) -> None:
        self.candidates = candidates
        self.y = y
        self.n_patterns, self.n_candidates = candidates.shape
        self.track_diagonal = track_diagonal
        self.norms = np.einsum("ij,ij->j", candidates, candidates)
        self.selected: list[int] = []
        self._reset(lam)

    def _reset(self, lam: float) -> None:
        self.lam = lam
        p, m = self.n_patterns, self.n_candidates
        if lam > 0.0:
            self.residual_candidates = np.vstack([self.candidates, math.sqrt(lam) * np.eye(m)])
            self.residual_y = np.concatenate([self.y, np.zeros(m)])
        else:
            self.residual_candidates = self.candidates.copy()
            self.residual_y = self.y.copy()
        self.trace = float(p)  # tr(P) = p − γ (Orr 4.10)
        self.diagonal = np.ones(p) if self.track_diagonal else None

    # -- quantities -------------------------------------------------------------------------
    def scores(self) -> dict[str, np.ndarray]:
        """Per-candidate ``yPf``, ``delta = λ + fᵀPf``, ``fPf``, ``yP2f`` and ``fP2f``."""
        p = self.n_patterns
        R, r = self.residual_candidates, self.residual_y
        top = R[:p]
        delta = np.einsum("ij,ij->j", R, R)
        return {
            "yPf": r @ R,
            "delta": delta,
            "fPf": np.maximum(delta - self.lam, 0.0),
            "yP2f": r[:p] @ top,
            "fP2f": np.einsum("ij,ij->j", top, top),
        }

    def eligible(self, fPf: np.ndarray) -> np.ndarray:
        """Candidates not yet in the model and (for λ = 0) not numerically in its span."""
        mask = self.norms > 0.0
        if self.lam == 0.0:
            mask &= fPf > SPAN_TOLERANCE * self.norms
        mask[self.selected] = False
        return mask

    @property
    def residual(self) -> np.ndarray:
        """``P y`` (p,)."""
        return self.residual_y[: self.n_patterns]

    @property
    def sse(self) -> float:
        return float(self.residual @ self.residual)

    @property
    def cost(self) -> float:
        return float(self.residual_y @ self.residual_y)

    @property
    def effective_parameters(self) -> float:
        return self.n_patterns - self.trace

    # -- updates ----------------------------------------------------------------------------
    def add(self, index: int) -> None:
        """Orr eq. 7.5 with ``f = F[:, index]``: rank-one update of ``P·F``, ``P·y``, ``tr P``."""
        self._project_out(index)
        self.selected.append(int(index))

    def _project_out(self, index: int) -> None:
        R = self.residual_candidates
        u = R[:, index].copy()  # P̂ f̂
        delta = float(u @ u)  # λ + fᵀPf
        if delta <= 0.0:
            raise ValueError(f"candidate {index} lies in the span of the model")
        # R ← R − u (uᵀR)/δ: one BLAS rank-one update. With P̂ idempotent uᵀR = f̂ᵀP̂F̂, which
        # is the modified-Gram–Schmidt form of Orr 7.5.
        R -= np.outer(u, (u @ R) / delta)
        self.residual_y -= u * (float(u @ self.residual_y) / delta)
        top = u[: self.n_patterns]
        self.trace -= float(top @ top) / delta
        if self.diagonal is not None:
            self.diagonal -= top * top / delta

    def set_lambda(self, lam: float) -> None:
        """Recompute the path for a new λ (every P changes with λ), from scratch.

        With ``Ĥ = [F_S; √λ E_S]`` the chosen augmented columns and ``Ĥ = Q̂R̂`` its thin QR
        factorisation, ``P̂ = I − Q̂Q̂ᵀ``. The bottom block of ``Ĥ`` is non-zero only in the
        rows of the chosen candidates, so the QR is of the compact ``(p + m) × m`` matrix
        ``[F_S; √λ I_m]``; then ``R = F̂ − Q̂(Q̂ᵀF̂)`` and ``r = ŷ − Q̂(Q̂ᵀŷ)`` are two matrix
        products, O((p + M) m M) in BLAS-3 rather than m rank-one updates.
        """
        if lam == self.lam:
            return
        self._reset(lam)
        if not self.selected or lam == 0.0:
            for index in self.selected:
                self._project_out(index)
            return
        p, m = self.n_patterns, len(self.selected)
        chosen = np.asarray(self.selected)
        root = math.sqrt(lam)
        compact = np.vstack([self.candidates[:, chosen], root * np.eye(m)])
        q, _ = scipy.linalg.qr(compact, mode="economic")
        q_top, q_bottom = q[:p], q[p:]
        # Q̂ᵀF̂ = Q̂_topᵀF + √λ Q̂_bottomᵀ E_Sᵀ: the identity block only touches chosen columns.
        coefficients = q_top.T @ self.candidates
        coefficients[:, chosen] += root * q_bottom.T
        R = self.residual_candidates
        R[:p] -= q_top @ coefficients
        R[p + chosen] -= q_bottom @ coefficients
        projection_y = q_top.T @ self.y
        self.residual_y[:p] -= q_top @ projection_y
        self.residual_y[p + chosen] -= q_bottom @ projection_y
        self.trace = float(p - np.einsum("ij,ij->", q_top, q_top))
        if self.diagonal is not None:
            self.diagonal = 1.0 - np.einsum("ij,ij->i", q_top, q_top)
