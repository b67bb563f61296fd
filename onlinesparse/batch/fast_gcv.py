"""Fast generalised cross-validation, FGCV (Sundararajan, Shevade and Keerthi).

FGCV builds a sparse local-ridge model (one regularisation parameter per basis function)
from the empty model. Every candidate basis function is a tracked column of one
:class:`~onlinesparse.orr.ridge.IncrementalRidge`; at each iteration the GCV-optimal
regularisation of *every* column is computed with all the others held fixed — for a column
in the model from Orr's A.11 numbers (:func:`~onlinesparse.orr.criteria.basis_quantities`), for
a candidate from FGCV's r, γ, ξ, u of eqs. 16–19
(:func:`~onlinesparse.orr.criteria.candidate_quantities`) — and the one move that lowers GCV
(eq. 7) most is applied: add a candidate, delete a basis function (its optimal α is ∞) or
re-estimate one α (section 3.1, steps 5–9).

Units
-----
The paper writes ``α`` and ``σ²`` but notes (after eq. 7) that P, hence GCV, depends only
on ``ζ = ασ²``, which is Orr's ``λ``. Everything here is in λ units; ``σ²`` enters
through ``α_min``: ``λ_min = α_min·σ²`` with ``α_min = 1/N`` (section 3.2 point 7: "some
of the α_j may reach 0 … set such α_j to … α_min", so only an optimum at α = 0 is replaced;
``alpha_min_floor=True`` floors every α instead), the stopping rule (step 11), and its
re-estimation. ``σ²`` starts at ``0.1·var(y)`` (step 1)
and is re-estimated by eq. 8, ``σ̂² = yᵀP²y / tr(P)``, every ``noise_every`` iterations
(step 10). The paper's variables are the α's, so a new σ² moves every ``λⱼ = αⱼσ²`` with
it and P is recomputed afresh (3.2 point 6,
:meth:`~onlinesparse.orr.ridge.IncrementalRidge.scale_lambdas`).

GCV is invariant to the scale of y (section 2.2), but ``λ_min = σ²/N`` is not: it grows with
``y²`` while ``HᵀH`` does not. The paper's ``α_min = 1/N`` suits targets on the scale of
the basis functions (its Boston and Abalone partitions are normalised); scale other targets
first (divide by their standard deviation) — on raw Friedman 2 targets (≈ 500) the floor
holds most weights far from their optimum and the test error is tens of times larger.

Local minima
------------
Steps 5–9 are a coordinate descent on GCV over the set of basis functions and their α's;
its fixed points are only local minima, and which one a run reaches depends on the start.
With wide Gaussians (nearly collinear candidates) the run from the minimum-GCV first basis
vector (appendix II) can stop early, with few, heavily shrunk functions, while a run from
another first vector reaches a far lower GCV (measured on Friedman 2, z = 5.6: GCV 0.218
with 4 functions against 0.098 with 20; the test error follows, 0.137 against 0.0075 nMSE).
No single add, delete or re-estimation lowers GCV at such a point (checked against an
explicit-P implementation), so it is the algorithm's, not a numerical, limit. The paper
allows another first vector (3.2 point 1) but does not discuss restarts; ``n_starts > 1``
runs the algorithm from the ``n_starts`` best first vectors of appendix II and keeps the
run of lowest final GCV, the paper's own criterion (a documented choice, not the paper's).

Nothing forms a p × p matrix; the cost of one iteration is O(M²C) for C candidates and M
basis functions in the model (the quantities are recomputed from ``S = A⁻¹`` rather than
carried as the paper's rank-one updates, eqs. 36–47, so they do not accumulate rounding).
Step 5 is two compiled calls per iteration, :func:`~onlinesparse.orr.criteria.basis_optima`
and :func:`~onlinesparse.orr.criteria.candidate_scores`, the same case analysis
(:func:`~onlinesparse.orr.criteria.optimal_lambda`) the pruner uses.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg

from onlinesparse.batch.candidates import as_points, radial_candidates
from onlinesparse.batch.result import SelectionResult
from onlinesparse.orr.criteria import basis_optima, candidate_scores, gcv
from onlinesparse.orr.kernels import KERNELS, BasisSpec
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge

__all__ = ["fast_gcv", "fast_gcv_design"]

# A move is taken only if it lowers GCV by more than this fraction of its value: smaller
# "reductions" are rounding, and taking them could make the run wander without end.
_MIN_RELATIVE_REDUCTION = 1e-12
# γ_m = φᵀPφ and u_m = φᵀP²φ are ≥ 0 in exact arithmetic. Negative beyond this fraction of
# φᵀφ they signal a drifted S (FGCV 3.2 point 5); smaller negatives are rounding of a
# candidate that lies (numerically) in the span of the model and are clipped to 0.
_NEGATIVE_TOLERANCE = 1e-10


@dataclass(frozen=True)
class _Move:
    """One of step 5's candidate moves: ``kind`` is "add", "delete" or "reestimate"."""

    kind: str
    candidate: int  # column of the candidate design (= tracked column id)
    lam: float  # the new λ (inf for a deletion)
    gcv: float  # GCV after the move
    reduction: float  # current GCV − GCV after the move
    position: int  # position in the model (re-estimate / delete) or -1


def _candidate_specs(centres: np.ndarray, radius: float, kernel: str,
                     constant: bool) -> list[BasisSpec]:
    specs = [BasisSpec.radial(centre, radius, kernel) for centre in centres]
    if constant:
        specs.append(BasisSpec.constant())
    return specs


def fast_gcv_design(inputs: np.ndarray, centres: np.ndarray, radius: float,
                    kernel: str = "gaussian", constant: bool = False) -> np.ndarray:
    """Values of every FGCV candidate at ``inputs``, in the candidates' order.

    Columns ``0 … C−1`` are the kernels ``φ(‖x − cⱼ‖²/r²)`` (Orr A.3) at the ``C`` centres;
    with ``constant`` the last column is 1. This is the matrix
    :meth:`SelectionResult.predict` expects for a result of :func:`fast_gcv` run with the
    same centres, radius, kernel and constant.
    """
    design = radial_candidates(as_points(inputs, "inputs"), as_points(centres, "centres"),
                               radius, kernel)
    if constant:
        design = np.column_stack([design, np.ones(len(design))])
    return design


@dataclass(frozen=True)
class _Scores:
    """Step 5 for every column: its GCV-optimal λ with the others fixed and the GCV after.

    Entries are the model's basis functions in position order, then the candidates in the
    window's order. ``lam`` is ∞ for a deletion (a basis function) or for a candidate that
    does not lower GCV at any λ (not a move); ``gcv`` is the GCV after the move.
    """

    columns: np.ndarray  # tracked column ids
    lam: np.ndarray
    gcv: np.ndarray
    n_basis: int  # the first n_basis entries are the model's basis functions

    def reductions(self, current: float, excluded: set[int]) -> np.ndarray:
        """GCV reduction of each move; −∞ where an entry is no move (a candidate of
        infinite λ, or one passed over as numerically dependent, ``excluded``)."""
        reduction = current - self.gcv
        not_a_move = np.isnan(reduction)
        not_a_move[self.n_basis:] |= np.isinf(self.lam[self.n_basis:])
        if excluded:
            not_a_move |= np.isin(self.columns, list(excluded))
        reduction[not_a_move] = -math.inf
        return reduction

    def move(self, index: int, current: float) -> _Move:
        """Entry ``index`` as a move."""
        column = int(self.columns[index])
        lam = float(self.lam[index])
        value = float(self.gcv[index])
        if index < self.n_basis:
            kind = "delete" if math.isinf(lam) else "reestimate"
            return _Move(kind, column, lam, value, current - value, index)
        return _Move("add", column, lam, value, current - value, -1)


def _scores(model: IncrementalRidge, lambda_min: float, zeros_only: bool
            ) -> tuple[_Scores, dict[str, np.ndarray] | None]:
    """Step 5: the GCV-optimal λ of every column, the others fixed, and the GCV it gives.

    Columns in the model use Orr A.11 / FGCV appendix I
    (:func:`~onlinesparse.orr.criteria.basis_optima`: for a deletion the GCV is that of the
    model without the function); candidates use FGCV eqs. 16–19 with ``Pⱼ = P`` (appendix
    IV: a column outside the model has ``Δⱼ = ∞``), i.e. ``a = q = yᵀP²y``, ``b = ξr``,
    ``c = ur²``, ``tr Pⱼ = v``, ``β = u`` and ``ψ = γ``
    (:func:`~onlinesparse.orr.criteria.candidate_scores`). A candidate with ``b ≤ 0`` gets
    ``λ = ∞`` (section 2.2: ``b ≤ 0`` is sufficient for irrelevance), as does one with
    ``γ ≤ 0`` or ``u ≤ 0`` (in the model's span to rounding). Both are compiled loops over
    every column. Also returns the candidates' r, γ, ξ, u (``None`` without candidates).
    """
    window = model.window
    lam_basis, gcv_basis, removed = basis_optima(model, lambda_min, zeros_only)
    # A deletion's GCV is that of the model without the function.
    deleted = np.isinf(lam_basis)
    gcv_basis[deleted] = removed[deleted]
    columns = [np.asarray(window.ids[: model.size], dtype=np.int64)]
    lams, values = [lam_basis], [gcv_basis]
    quantities = None
    if window.n_candidates:
        quantities = candidate_scores(model, lambda_min, zeros_only)
        columns.append(np.asarray(window.ids[window.n_model:window.n_columns], dtype=np.int64))
        lams.append(quantities["lam"])
        values.append(quantities["gcv"])
    return _Scores(np.concatenate(columns), np.concatenate(lams), np.concatenate(values),
                   model.size), quantities


def _healthy(model: IncrementalRidge, quantities: dict[str, np.ndarray] | None) -> bool:
    """FGCV 3.2 point 5: γ_m = φᵀPφ or u_m = φᵀP²φ clearly negative means S has drifted."""
    if quantities is None:
        return True
    floor = -_NEGATIVE_TOLERANCE * np.maximum(model.window.candidate_sq_norms,
                                              np.finfo(float).tiny)
    return not (np.any(quantities["gamma"] < floor) or np.any(quantities["u"] < floor))


def _prefix_traces(gram: np.ndarray, cross_y: np.ndarray, yy: float, lambdas: np.ndarray,
                   n_patterns: int) -> tuple[np.ndarray, np.ndarray]:
    """SSE and GCV (Orr 5.2) of each prefix of the final model, each with its final λ's.

    ``SSE = yᵀy − 2wᵀc + wᵀGw`` and ``γ = tr(A⁻¹G)`` from one Cholesky factor per prefix
    (a pseudo-inverse if a prefix is singular to working precision, possible when a λ is 0
    or, under point 7 as written, a tiny positive optimum).
    """
    sse, gcv_trace = [yy], [gcv(yy, 0.0, n_patterns)]
    for m in range(1, len(lambdas) + 1):
        G = gram[:m, :m]
        A = G + np.diag(lambdas[:m])
        try:
            factor = linalg.cho_factor(A, lower=True)
            w = linalg.cho_solve(factor, cross_y[:m])
            gamma = float(np.trace(linalg.cho_solve(factor, G)))
        except linalg.LinAlgError:
            inverse = np.linalg.pinv(A, hermitian=True)
            w = inverse @ cross_y[:m]
            gamma = float(np.trace(inverse @ G))
        error = max(yy - float(w @ (2.0 * cross_y[:m] - G @ w)), 0.0)
        sse.append(error)
        gcv_trace.append(gcv(error, gamma, n_patterns))
    return np.array(sse), np.array(gcv_trace)


def fast_gcv(inputs: np.ndarray, y: np.ndarray, *, radius: float,
             centres: np.ndarray | None = None, kernel: str = "gaussian",
             constant: bool = False, noise_variance: float | None = None,
             alpha_min: float | None = None, noise_every: int = 5,
             max_iterations: int = 2000, tol: float = 1e-3,
             n_starts: int = 1, alpha_min_floor: bool = False) -> SelectionResult:
    """Sparse local-ridge model by the fast GCV algorithm (FGCV section 3.1).

    Candidates are the kernels ``φ(‖x − cⱼ‖²/r²)`` (Orr A.3; FGCV's Gaussian
    ``exp(−‖x − c‖²/2z²)`` is ``radius = √2·z``) at ``centres`` (default: the training
    inputs, FGCV's ``M = N``), plus a constant when ``constant`` (``M = N + 1``).

    1. ``σ² ← noise_variance`` (default ``0.1·var(y)``, step 1).
    2. From the empty model: the first basis function is the candidate of minimum GCV at its
       optimal α (appendix II; step 5 below on the empty model, where ``P = I``).
    3. Each iteration (steps 4–9): for every column, its optimal λ ∈ [0, ∞] (λ_min where
       that is 0, point 7) with the others fixed (appendices I and IV via
       :func:`~onlinesparse.orr.criteria.optimal_lambda`); the move of largest GCV reduction
       is applied — ``add_basis`` (step 7, appendix VI), ``remove_basis`` (step 8,
       appendix V with ``Kⱼ = 1/sⱼⱼ``) or ``set_lambda`` (step 6, appendix V). Only moves
       that lower GCV are taken.
    4. Every ``noise_every`` iterations ``σ² ← yᵀP²y / tr(P)`` (step 10, eq. 8), which
       moves ``λ_min = α_min·σ²`` and, at fixed α, every λ (3.2 point 6).
    5. Stop (step 11) when α and σ² no longer change significantly: the best move is a
       re-estimation changing λ by a factor within ``1 ± tol`` (or no move lowers GCV), and
       re-estimating σ² then changes it by less than ``tol`` relatively; or after
       ``max_iterations`` moves.

    Numerical health (section 3.2 point 5): :class:`~onlinesparse.orr.ridge.IncrementalRidge`
    refreshes ``S`` by Cholesky whenever its rounding-error account or drift probe says so;
    in addition, a candidate with clearly negative ``γ_m`` or ``u_m`` forces a refresh, and
    if that does not cure it the run stops (``details["stop_reason"] == "ill_conditioned"``),
    as it does when the λ's of a new σ² (point 6) would make ``HᵀH + Λ`` singular.
    A candidate that ``add_basis`` rejects as numerically dependent on the model is passed
    over until the model next changes.

    Parameters
    ----------
    inputs
        Training inputs, shape ``(N,)`` or ``(N, d)``.
    y
        Targets, length N.
    radius
        Kernel radius r > 0.
    centres
        Kernel centres, shape ``(C,)`` or ``(C, d)``; default ``inputs``.
    kernel
        ``"gaussian"`` (default), ``"multiquadric"``, ``"inverse_multiquadric"``,
        ``"cauchy"``.
    constant
        Add a constant (bias) candidate after the kernels.
    noise_variance
        Initial σ² (step 1); default ``0.1·var(y)``.
    alpha_min
        Section 3.2 point 7's ``α_min``; default ``1/N``. An α whose optimum is 0 is set to
        it (λ = ``α_min·σ²``, or ∞ if that is better); an optimum inside ``(0, α_min)``
        stands (see the module notes on the scale of y).
    alpha_min_floor
        Hold every α at or above ``α_min`` instead (the streaming pruner's reading, and
        this function's before): the optimum over ``[α_min, ∞]``.
    noise_every
        Re-estimate σ² by eq. 8 every this many iterations (step 10 suggests five).
    max_iterations
        Cap on the number of moves.
    tol
        Relative change of λ and σ² below which they count as converged (step 11).
    n_starts
        Number of runs, each from a different first basis vector: the ``n_starts`` candidates
        of lowest one-function GCV (appendix II). The run of lowest final GCV (eq. 7) is
        returned (the first, i.e. the paper's own start, on a tie). The default 1 is the
        paper's algorithm. See the module notes on local minima.

    Returns
    -------
    SelectionResult
        ``selected`` are candidate indices (columns of :func:`fast_gcv_design`) of the final
        model in the order they (last) joined it; ``lambdas`` their λ = ασ²; ``weights``
        from a final Cholesky solve. ``path == selected``: ``sse`` and ``gcv`` are those of
        its prefixes, each function keeping its final λ (the last entry is the returned
        model). ``centres`` are the chosen centres (a row of NaN for the constant).
        ``details``: ``"gcv_trace"``, ``"noise_variance_trace"`` and ``"n_basis_trace"``
        (index 0 the empty model, then after every move and after every new σ² that ended
        a settled stretch; the last entry is the returned model), ``"moves"`` (tuple of
        ``(kind, candidate, λ)``), ``"iterations"``, ``"converged"``, ``"stop_reason"``,
        ``"noise_variance"`` (final σ²), ``"alphas"`` (λ/σ²), ``"lambda_min"``,
        ``"refreshes"`` (Cholesky refreshes of ``S`` during the run) and
        ``"drift_refreshes"`` (those forced by negative γ_m / u_m); all of the returned run.
        With ``n_starts > 1`` also ``"starts"`` (``(first candidate, final GCV)`` of every
        run, in the order of appendix II) and ``"start"`` (the first candidate of the run
        returned).

    Examples
    --------
    Orr's example (section 6.4): ``sin(12x)`` with noise 0.1, Gaussians of radius 0.05 at
    the inputs.

    >>> import numpy as np
    >>> from onlinesparse.batch import fast_gcv, fast_gcv_design
    >>> rng = np.random.default_rng(0)
    >>> x = np.sort(rng.uniform(0.0, 1.0, 50))
    >>> y = np.sin(12 * x) + 0.1 * rng.standard_normal(50)
    >>> result = fast_gcv(x, y, radius=0.05)
    >>> result.n_selected < 25, result.details["converged"]
    (True, True)
    >>> x_test = np.linspace(0.0, 1.0, 200)
    >>> error = result.predict(fast_gcv_design(x_test, x, 0.05)) - np.sin(12 * x_test)
    >>> bool(np.sqrt(np.mean(error ** 2)) < 0.1)
    True
    """
    X = as_points(inputs, "inputs")
    y = np.asarray(y, dtype=float)
    n_patterns, n_features = X.shape
    if y.ndim != 1 or len(y) != n_patterns:
        raise ValueError(f"y must be a vector of {n_patterns} targets, got shape {y.shape}")
    if n_patterns < 2:
        raise ValueError(f"need at least 2 patterns, got {n_patterns}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    C = X if centres is None else as_points(centres, "centres")
    if C.shape[1] != n_features:
        raise ValueError(f"inputs have {n_features} coordinates but centres have {C.shape[1]}")
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {sorted(KERNELS)}")
    if not (math.isfinite(radius) and radius > 0.0):
        raise ValueError(f"radius must be positive and finite, got {radius}")
    variance = float(np.var(y)) if noise_variance is None else float(noise_variance)
    if noise_variance is None:
        variance *= 0.1
    if not (math.isfinite(variance) and variance >= 0.0):
        raise ValueError(f"noise_variance must be finite and ≥ 0, got {noise_variance}")
    alpha_min = 1.0 / n_patterns if alpha_min is None else float(alpha_min)
    if not (math.isfinite(alpha_min) and alpha_min >= 0.0):
        raise ValueError(f"alpha_min must be finite and ≥ 0, got {alpha_min}")
    if not (isinstance(noise_every, int) and noise_every >= 1):
        raise ValueError(f"noise_every must be an integer ≥ 1, got {noise_every!r}")
    if not (isinstance(max_iterations, int) and max_iterations >= 1):
        raise ValueError(f"max_iterations must be an integer ≥ 1, got {max_iterations!r}")
    if not (math.isfinite(tol) and tol > 0.0):
        raise ValueError(f"tol must be positive and finite, got {tol}")
    if not (isinstance(n_starts, int) and n_starts >= 1):
        raise ValueError(f"n_starts must be an integer ≥ 1, got {n_starts!r}")

    zeros_only = not alpha_min_floor
    specs = _candidate_specs(C, radius, kernel, constant)
    # The empty model over the training set, built once: every run starts from a copy.
    built = _build_model(X, y, specs)
    if n_starts == 1:
        return _single_run(X, C, built, variance, alpha_min, zeros_only, noise_every,
                           max_iterations, tol, None)
    # Several runs, each from one of the best first basis vectors of appendix II; the model
    # of lowest final GCV (eq. 7) is kept (the earliest start on a tie).
    starts = _first_ranking(built, variance, alpha_min, zeros_only)[:n_starts]
    if not starts:  # no single function lowers GCV: every run gives the empty model
        return _single_run(X, C, built, variance, alpha_min, zeros_only, noise_every,
                           max_iterations, tol, None)
    runs = [_single_run(X, C, _copy(built), variance, alpha_min, zeros_only, noise_every,
                        max_iterations, tol, start) for start in starts]
    finals = [float(run.details["gcv_trace"][-1]) for run in runs]
    best = min(range(len(runs)), key=lambda i: (finals[i], i))
    return replace(runs[best], details={
        **runs[best].details,
        "starts": tuple((int(start), final) for start, final in zip(starts, finals,
                                                                     strict=True)),
        "start": int(starts[best]),
    })


_Built = tuple[IncrementalRidge, list[int]]


def _copy(built: _Built) -> _Built:
    """An independent copy of a built model (the same numbers to the last bit)."""
    return copy.deepcopy(built[0]), list(built[1])


def _build_model(X: np.ndarray, y: np.ndarray, specs: list[BasisSpec]
                 ) -> tuple[IncrementalRidge, list[int]]:
    """The empty model over the whole training set, every spec a tracked candidate column."""
    # A window as large as the data set evicts nothing: the statistics are those of the
    # whole training set, and they can be refreshed exactly from the stored rows.
    model = IncrementalRidge(X.shape[1], memory="window", size=len(X))
    for x_i, y_i in zip(X, y, strict=True):
        model.add_pattern(x_i, float(y_i))
    return model, [model.add_candidate(spec) for spec in specs]


def _first_ranking(built: _Built, variance: float, alpha_min: float,
                   zeros_only: bool) -> list[int]:
    """Candidates (indices into ``specs``) ordered by the GCV of the one-function model at
    their optimal α (appendix II), best first; candidates that do not lower GCV are left out.
    ``built`` is the empty model of :func:`_build_model` (not changed)."""
    model, column_ids = built
    candidate_of = {column: index for index, column in enumerate(column_ids)}
    scores, _ = _scores(model, alpha_min * variance, zeros_only)
    current = model.gcv
    reduction = scores.reductions(current, set())
    order = np.argsort(-reduction, kind="stable")
    return [candidate_of[int(scores.columns[i])] for i in order
            if reduction[i] > _MIN_RELATIVE_REDUCTION * current]


def _single_run(X: np.ndarray, C: np.ndarray, built: _Built, variance: float,
                alpha_min: float, zeros_only: bool, noise_every: int, max_iterations: int,
                tol: float, first: int | None) -> SelectionResult:
    """Section 3.1, steps 1–11, from one first basis vector (``first``, an index into the
    candidates; ``None``: the minimum-GCV candidate of appendix II), on ``built`` (the empty
    model of :func:`_build_model`, which the run changes). See :func:`fast_gcv`."""
    run = _Run(built, variance, alpha_min, zeros_only, tol)
    run.loop(noise_every, max_iterations, first)
    return run.result(X, C)


class _Run:
    """The state of one run of section 3.1: the model, σ², the traces and the moves."""

    def __init__(self, built: _Built, variance: float, alpha_min: float, zeros_only: bool,
                 tol: float) -> None:
        self.model, self.column_ids = built
        self.candidate_of = {column: index for index, column in enumerate(self.column_ids)}
        self.variance, self.alpha_min, self.zeros_only, self.tol = (
            variance, alpha_min, zeros_only, tol)
        self.gcv_trace = [self.model.gcv]
        self.noise_trace = [variance]
        self.size_trace = [0]
        self.moves: list[tuple[str, int, float]] = []
        self.joined: dict[int, int] = {}  # column id → iteration at which it (last) joined
        self.excluded: set[int] = set()
        self.drift_refreshes = 0
        self.converged = False
        self.stop_reason = "max_iterations"
        self.iteration = 0

    def reestimate_noise(self, stop_below: float = -1.0) -> float:
        """Eq. 8 and 3.2 point 6; returns the relative change of σ² (NaN, with nothing
        changed, if the λ's at the new σ² make HᵀH + Λ singular). A change of at most
        ``stop_below`` ends the run (step 11) and is not applied, so that the model returned
        is the one the last GCV of the trace describes."""
        new, variance = self.model.noise_variance, self.variance
        if not (math.isfinite(new) and new > 0.0):
            return 0.0  # no degrees of freedom left or a perfect fit: keep the old value
        change = abs(new - variance) / variance if variance > 0.0 else math.inf
        if change <= stop_below:
            return change
        if variance > 0.0:
            # The paper's variables are αⱼ = λⱼ/σ², held while σ² changes: every λⱼ moves
            # with σ² and P is computed afresh (point 6).
            try:
                self.model.scale_lambdas(new / variance)
            except IllConditionedError:
                # HᵀH + Λ is singular at the new λ's: keep σ² and the model, and say so.
                return math.nan
        self.variance = new
        return change

    def record(self) -> None:
        """One entry of each trace for the model as it is now."""
        self.gcv_trace.append(self.model.gcv)
        self.noise_trace.append(self.variance)
        self.size_trace.append(self.model.size)

    def _scores(self):
        """The scores of every move, after a refresh if the quantities look unhealthy
        (3.2 point 5); None when even a refresh does not cure them."""
        lambda_min = self.alpha_min * self.variance
        scores, quantities = _scores(self.model, lambda_min, self.zeros_only)
        if _healthy(self.model, quantities):
            return scores
        self.model.refresh()
        self.drift_refreshes += 1
        scores, quantities = _scores(self.model, lambda_min, self.zeros_only)
        return scores if _healthy(self.model, quantities) else None

    def _best(self, scores, first: int | None):
        """Step 9: the move that lowers GCV most (a prescribed first basis vector on the
        first iteration, see ``n_starts``), or None when none is left."""
        current = self.model.gcv
        reduction = scores.reductions(current, self.excluded)
        best = None
        if len(reduction) and reduction.max() > -math.inf:
            # The first of the largest reductions (basis functions before candidates).
            best = scores.move(int(np.argmax(reduction)), current)
        if first is not None and self.iteration == 0 and self.model.size == 0:
            forced = np.flatnonzero(scores.columns == self.column_ids[first])
            if len(forced) and reduction[forced[0]] > -math.inf:
                best = scores.move(int(forced[0]), current)
        return best

    def _settled(self, best) -> bool:
        return (best is None
                or best.reduction <= _MIN_RELATIVE_REDUCTION * self.model.gcv
                or (best.kind == "reestimate"
                    and abs(best.lam - self.model.lambdas[best.position])
                    <= self.tol * best.lam))

    def _apply(self, best) -> bool:
        """Make the move; False when it is refused (numerically in the model's span at
        that λ: passed over until the model changes, the state unchanged)."""
        model = self.model
        try:
            if best.kind == "add":
                model.add_basis(best.candidate, best.lam)
                self.joined[best.candidate] = self.iteration
            elif best.kind == "delete":
                model.remove_basis(best.position, keep_as_candidate=True)
                del self.joined[best.candidate]
            else:
                model.set_lambda(best.position, best.lam)
        except IllConditionedError:
            self.excluded.add(best.candidate)
            return False
        self.excluded.clear()
        self.moves.append((best.kind, self.candidate_of[best.candidate], float(best.lam)))
        return True

    def loop(self, noise_every: int, max_iterations: int, first: int | None) -> None:
        """Steps 5–11 until α and σ² settle, ``max_iterations`` moves, or ill-conditioning."""
        since_noise = 0
        while self.iteration < max_iterations:
            scores = self._scores()
            if scores is None:  # 3.2 point 5: P too ill-conditioned to go on
                self.stop_reason = "ill_conditioned"
                return
            best = self._best(scores, first)
            if self._settled(best):
                # α has settled for this σ²; σ² must settle too (step 11).
                change = self.reestimate_noise(stop_below=self.tol)
                if math.isnan(change):
                    self.stop_reason = "ill_conditioned"
                    return
                if change <= self.tol:
                    self.converged, self.stop_reason = True, "converged"
                    return
                since_noise = 0
                self.record()  # the new σ² moved every λ: the traces record that state too
                continue
            if not self._apply(best):
                if len(self.excluded) > len(self.column_ids):  # pragma: no cover - defensive
                    self.stop_reason = "ill_conditioned"
                    return
                continue
            self.iteration += 1
            since_noise += 1
            if since_noise >= noise_every:
                self.reestimate_noise()
                since_noise = 0
            self.record()

    def result(self, X: np.ndarray, C: np.ndarray) -> SelectionResult:
        """The selection in the order the basis functions (last) joined, with weights from
        a fresh Cholesky solve on the final model (identical to the incremental ones up to
        the drift the health checks allow)."""
        model, n_patterns, n_features = self.model, X.shape[0], X.shape[1]
        refreshes = model.n_refreshes
        if model.size:
            model.refresh()
        window = model.window
        model_ids = [int(c) for c in window.ids[: model.size]]
        order = sorted(range(model.size), key=lambda position: self.joined[model_ids[position]])
        selected = np.array([self.candidate_of[model_ids[position]] for position in order],
                            dtype=np.int64)
        lambdas = np.asarray(model.lambdas)[order]
        sse, gcv_prefix = _prefix_traces(window.gram_model[np.ix_(order, order)],
                                         window.cross_y_model[order], window.yy, lambdas,
                                         n_patterns)
        chosen_centres = np.full((len(selected), n_features), np.nan)
        is_kernel = selected < len(C)
        chosen_centres[is_kernel] = C[selected[is_kernel]]
        variance = self.variance
        return SelectionResult(
            method="fast_gcv", selected=selected, lambdas=lambdas,
            weights=np.asarray(model.weights)[order], path=selected, sse=sse,
            gcv=gcv_prefix, centres=chosen_centres,
            details={
                "gcv_trace": np.array(self.gcv_trace),
                "noise_variance_trace": np.array(self.noise_trace),
                "n_basis_trace": np.array(self.size_trace, dtype=float),
                "moves": tuple(self.moves),
                "iterations": self.iteration,
                "converged": self.converged,
                "stop_reason": self.stop_reason,
                "noise_variance": variance,
                "alphas": (lambdas / variance if variance > 0.0
                           else np.full(len(lambdas), np.inf)),
                "lambda_min": self.alpha_min * variance,
                "refreshes": refreshes,
                "drift_refreshes": self.drift_refreshes,
            },
        )
