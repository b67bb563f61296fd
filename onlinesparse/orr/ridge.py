"""Orr's incremental ridge regression over a window of patterns, kept exact in O(M²).

:class:`IncrementalRidge` composes a :class:`~onlinesparse.orr.window.WindowStatistics` (the
patterns, as ``G = HᵀH``, ``c = Hᵀy``, ``yᵀy``, ``p``) with a
:class:`~onlinesparse.orr.ridge_state.RidgeState` (``S = (G + Λ)⁻¹``, ``w``, ``λ``), validates
input at the boundary, keeps the two consistent through the five operations (add / remove
a pattern, add / remove a basis function, set one λⱼ), watches the numerical health of
``S`` and exposes the model-selection criteria (Orr section 5). Every formula and every
decision lives in :mod:`onlinesparse.core`; the scalars live in a named record
(:mod:`onlinesparse.core.state`) that the compiled code advances directly. No operation
forms a p × p matrix.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse import core
from onlinesparse.core.state import (
    NO_REFRESH,
    REFRESH_STATE,
    REFRESH_STATISTICS,
    RIDGE,
    Field,
    RecordOwner,
    new_record,
)
from onlinesparse.features import as_target as _as_target
from onlinesparse.orr import criteria
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.ridge_state import IllConditionedError, RidgeState
from onlinesparse.orr.window import WindowStatistics
from onlinesparse.stream.refit import RidgeView

__all__ = ["IllConditionedError", "RidgeState", "IncrementalRidge"]


def _as_input(x: np.ndarray | list[float], n_features: int) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1 or arr.shape[0] != n_features:
        raise ValueError(f"expected an input of shape ({n_features},), got shape {arr.shape}")
    if all(map(math.isfinite, arr.tolist())):  # cheaper than NumPy on a few numbers
        return arr
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        raise ValueError(f"input {int(bad[0])} is not finite ({arr[bad[0]]})")
    return arr


def _as_lambda(lam: float) -> float:
    lam = float(lam)
    if not (lam >= 0.0 and math.isfinite(lam)):
        raise ValueError(f"λ must be finite and ≥ 0, got {lam}")
    return lam


class IncrementalRidge(RecordOwner):
    """A ridge-regression model whose patterns and basis functions change one at a time.

    The five operations (add / remove a pattern, add / remove a basis function, set one λⱼ)
    cost O(M²) on the ridge state; a pattern also updates the Gram matrix of every tracked
    column, O((M + C)²) with C candidates; moving a column between model and pool swaps
    its stored rows, O(W); a basis function not yet tracked is first evaluated over the
    window, O(W·(M + C)). Each leaves the model equal to a from-scratch solve on the same
    patterns, basis functions and λ's. Criteria (training
    error, γ, GCV, UEV, FPE, BIC, noise) are available at any moment from the state alone;
    LOO over the stored window on demand.

    Parameters
    ----------
    n_features
        Input dimension.
    memory, size, factor
        Memory policy of the :class:`~onlinesparse.orr.window.WindowStatistics`.
    refresh_every
        Recompute the statistics from the stored window and ``S`` by Cholesky after this many
        added patterns (for a window the default is its size), so rounding never accumulates
        without bound. Once a window is full its statistics are recomputed a column at a time
        instead, every pattern paying its share (:meth:`WindowStatistics.refresh_step
        <onlinesparse.orr.window.WindowStatistics.refresh_step>`), and this refreshes ``S``
        alone.
    check_every
        Probe ``‖S(G + Λ)v − v‖`` every this many operations; a drift above
        ``drift_tolerance`` triggers a refresh (FGCV section 3.2, point 5).
    n_targets
        K, the targets that share the basis and S (1: a single-output model, whose
        ``weights`` is a vector and ``y`` a number; several: ``W`` has a column per target,
        ``y`` is a vector of K, and the criteria sum the targets' errors weighed by
        :meth:`set_target_scales`).
    defer_refreshes
        For real-time callers: a refresh that rounding calls for (not one that a broken
        state needs) is not done inside the operation that called for it but marked
        :attr:`refresh_pending`, for the caller to run with :meth:`maintain` at a time of
        its choosing (a streaming estimator runs it at the start of its next sample and
        does less model selection in that sample). Until then the state carries the drift
        that triggered it (about 1e-11 relative); nothing else changes.

    Examples
    --------
    Orr's section 4.5 example: a straight line through three points.

    >>> model = IncrementalRidge(n_features=1, size=10)
    >>> for x, y in [(1, 1.1), (2, 1.8), (3, 3.1)]:
    ...     _ = model.add_pattern([x], y)
    >>> _ = model.add_basis(BasisSpec.constant(), lam=0.0)
    >>> _ = model.add_basis(BasisSpec.linear(0), lam=0.0)
    >>> model.weights.round(12).tolist(), round(model.training_error, 12)
    ([0.0, 1.0], 0.06)
    """

    # Scalars live in `record` (core.state.RIDGE), where the compiled core reads and
    # advances them: the refresh and check counters, the rounding accounts, the model's
    # version and the criteria computed for it, and the settings the verdict on S reads.
    _since_refresh = Field()
    _since_check = Field()
    _round_start = Field()
    _version = Field()
    refresh_every = Field()
    check_every = Field()
    defer_refreshes = Field()
    _error_estimate = Field()
    _statistics_error = Field()
    _round_error = Field()
    drift_tolerance = Field()
    _pending_code = Field("pending")

    def __init__(self, n_features: int, memory: str = "window", size: int = 1000,
                 factor: float = 1.0, refresh_every: int | None = None,
                 check_every: int = 64, drift_tolerance: float = 1e-7,
                 defer_refreshes: bool = False, n_targets: int = 1) -> None:
        self.record = new_record(RIDGE)
        self.record[0]["pending"] = NO_REFRESH
        self.record[0]["summary_version"] = -1
        self.window = WindowStatistics(n_features, memory=memory, size=size, factor=factor,
                                       n_targets=n_targets)
        self.state = RidgeState(n_targets)
        self.refresh_every = (
            refresh_every if refresh_every is not None
            else (size if memory == "window" else 10_000)
        )
        self.check_every = int(check_every)
        self.drift_tolerance = float(drift_tolerance)
        self.n_refreshes = 0
        self.defer_refreshes = bool(defer_refreshes)
        self.ill_conditioned = False
        self._version = 0
        self._error_estimate = 1.0
        self._statistics_error = 0.0
        # The rolling refresh of a full window (WindowStatistics.refresh_step): the
        # statistics' rounding accumulated since the current round of it began, and the
        # pattern count at which it began.
        self._round_error = 0.0
        self._round_start = 0
        self._since_refresh = 0
        self._since_check = 0

    @property
    def _pending(self) -> bool | None:
        """A refresh called for but deferred: None when none is, else whether it must
        recompute the statistics too."""
        pending = self._pending_code
        return None if pending == NO_REFRESH else pending == REFRESH_STATISTICS

    @_pending.setter
    def _pending(self, value: bool | None) -> None:
        self._pending_code = (NO_REFRESH if value is None
                              else REFRESH_STATISTICS if value else REFRESH_STATE)

    # -- read-only views ------------------------------------------------------------------
    @property
    def n_features(self) -> int:
        return self.window.n_features

    @property
    def size(self) -> int:
        """Number of basis functions in the model, M."""
        return self.state.size

    @property
    def n_targets(self) -> int:
        return self.window.n_targets

    @property
    def weights(self) -> np.ndarray:
        """The weights (M × K; a vector for a single target)."""
        return self.window._per_target(self.state.weights)

    @property
    def target_scales(self) -> np.ndarray:
        """Each target's weight ω in the shared criteria (:meth:`set_target_scales`)."""
        return self.window.targets.scales

    def set_target_scales(self, scales: np.ndarray) -> None:
        """Weigh each target's error in the shared criteria by ``scales`` (ω, positive and
        finite; ``core.error_and_gamma``): ``ωₖ = 1/σₖ²`` puts every target in units of its
        own noise level. Every criterion is recomputed at its next read."""
        scales = np.asarray(scales, dtype=float).reshape(-1)
        if scales.shape != (self.n_targets,) or not np.all(np.isfinite(scales) & (scales > 0)):
            raise ValueError(f"expected {self.n_targets} positive finite target scales, "
                             f"got {scales!r}")
        self.window.targets.scales[:] = scales
        self.record[0]["summary_version"] = -1

    @property
    def lambdas(self) -> np.ndarray:
        return self.state.lambdas

    @property
    def variance(self) -> np.ndarray:
        """``A⁻¹ = (HᵀH + Λ)⁻¹``."""
        return self.state.variance

    @property
    def n_stored(self) -> int:
        """Patterns stored in the window (the adaptive memory's protocol,
        :class:`~onlinesparse.stream.memory.Forgetful`)."""
        return self.window.n_stored

    @property
    def n_parameters(self) -> int:
        """Basis functions in the model (the adaptive memory keeps at least ten patterns
        more)."""
        return self.size

    @property
    def n_patterns(self) -> float:
        """p: the number of patterns in memory (effective count when forgetting)."""
        return self.window.count

    # -- predictions ----------------------------------------------------------------------
    def model_row(self, x: np.ndarray) -> np.ndarray:
        """Values of the model's basis functions at ``x``."""
        return self.window.basis.evaluate(np.asarray(x, dtype=float), 0, self.size)

    def predict(self, x: np.ndarray) -> float | np.ndarray:
        """``h(x)ᵀW``: the prediction (per target)."""
        if not self.size:
            return self.window._per_target(np.zeros(self.n_targets))
        return self.window._per_target(self.model_row(x) @ self.state.weights)

    # -- the five operations --------------------------------------------------------------
    def add_pattern(self, x: np.ndarray | list[float], y: float | np.ndarray,
                    row: np.ndarray | None = None) -> np.ndarray:
        """Add one pattern (``y``: its target, or K of them); a full window first drops its
        oldest (Orr eqs. (A.8), (A.11)).

        ``row`` is the pattern's row over every tracked column if the caller already has it
        (``window.row(x)``). Returns that row. Invalid input raises ``ValueError`` and
        changes nothing.
        """
        x = _as_input(x, self.n_features)
        y = self._as_targets(y)
        window = self.window
        h = window.row(x) if row is None else row
        if window.memory == "window":
            window.make_room()
            status = core.learn_pattern(window.record, self.record, x, y, h,
                                        *window.pattern_arrays(), *self.state.arrays())
            if status == core.SLIDE_REFUSED:
                self._add_first(x, y, h)
            elif status == core.REFRESH:
                self._safe_refresh(bool(self._pending))
            return h
        if window.factor != 1.0:
            self.state.scale(window.factor)
        window.push(x, y, h)
        self._after_update(self.state.add_pattern(h[: self.size], y), pattern=True)
        return h

    def _as_targets(self, y: float | np.ndarray) -> np.ndarray:
        """A pattern's targets, validated, as a vector of K (``features.as_target`` each)."""
        if self.n_targets == 1 and np.ndim(y) == 0:
            return np.array([_as_target(y)])
        values = np.asarray(y, dtype=float).reshape(-1)
        if values.shape[0] != self.n_targets:
            raise ValueError(f"expected {self.n_targets} targets, got {values.shape[0]}")
        return np.array([_as_target(v) for v in values.tolist()])

    def _add_first(self, x: np.ndarray, y: np.ndarray, h: np.ndarray) -> None:
        """A full window whose oldest pattern is the only support of some direction: with
        the new pattern in, it may not be, so add first, then remove (Orr A.8, then A.11);
        restore and raise :class:`IllConditionedError` if the removal still fails."""
        m = self.size
        h_old, y_old = self.window.oldest()
        snapshot = (self.state.variance.copy(), self.state.weights.copy())
        addition = self.state.add_pattern(h[:m], y)
        try:
            removal = self.state.remove_pattern(h_old[:m], y_old)
        except IllConditionedError:
            self.state.variance, self.state.weights = snapshot
            raise
        self.window.pop_oldest()
        self.window.push(x, y, h)
        self._after_update(addition, removal, self._statistics_cancellation(h_old[:m]),
                           pattern=True)

    def rebuild_without_oldest(self, x: np.ndarray, y: float,
                               h: np.ndarray | None = None) -> None:
        """Slide a full window whose oldest pattern cannot leave by the incremental
        operations even after the new one is in (its leverage is 1 to rounding: one sample
        at the edge of the numeric domain can dominate every other): the statistics slide
        and are recomputed from the stored rows, and S is factorised afresh. Where G + Λ is
        then singular (a basis function only that pattern supported), the basis functions
        get the smallest λ that makes it positive definite, 1e-12 of G's largest diagonal.
        O(W·n² + M³): for a stream that must go on where :meth:`add_pattern` refuses."""
        x = _as_input(x, self.n_features)
        y = self._as_targets(y)
        window = self.window
        h = window.row(x) if h is None else h
        window.pop_oldest()
        window.push(x, y, h)
        self._refactor()

    def ridge_view(self) -> RidgeView:
        """The window as a ridge regression on the model's columns
        (:class:`~onlinesparse.stream.refit.RidgeView`): what the adaptive memory refits
        to judge a cut."""
        return self.window.ridge_view(self.state.lambdas[: self.size].copy(),
                                      self.target_scales)

    def stored_inputs(self) -> np.ndarray:
        """The window's stored inputs, oldest first (``stream.memory.StoresInputs``: what
        the adaptive memory measures its horizon on)."""
        return self.window.stored_inputs()

    def forget_oldest(self, count: int) -> None:
        """Forget the ``count`` oldest patterns of the window at once: the statistics are
        recomputed from the rest and S factorised afresh (O(W·n² + M³)), with the smallest
        λ that keeps G + Λ positive definite where a basis function lost its support. For
        a memory that shortens itself after a change of the stream."""
        self.window.drop_oldest(count)
        self._refactor(statistics=False)

    def forget_where(self, keep: np.ndarray) -> None:
        """Forget the stored patterns ``keep`` (booleans, oldest first) marks False, at
        once, as :meth:`forget_oldest` forgets the oldest: the statistics recomputed from
        the rest and S factorised afresh. State unchanged on a ``keep`` of the wrong
        shape or type."""
        self.window.drop_where(keep)
        self._refactor(statistics=False)

    def _refactor(self, statistics: bool = True) -> None:
        """Refresh (the statistics too unless ``statistics=False``); where G + Λ is
        singular, raise every λ to 1e-12 of G's largest diagonal first."""
        try:
            self.refresh(statistics)
        except IllConditionedError:
            gram = self.window.gram_model
            floor = 1e-12 * float(np.max(np.diag(gram))) if self.size else 0.0
            self.state.lambdas = np.maximum(self.state.lambdas, floor)
            self._safe_refresh(statistics)

    def remove_oldest(self) -> None:
        """Remove the oldest pattern of a window (Orr eq. (A.11)). State unchanged on error."""
        if self.window.memory != "window":
            raise ValueError(f"memory={self.window.memory!r} does not remove patterns")
        h_old, y_old = self.window.oldest()
        account = self.state.remove_pattern(h_old[: self.size], y_old)
        self.window.pop_oldest()
        self._after_update(account, self._statistics_cancellation(h_old[: self.size]))

    def add_candidate(self, spec: BasisSpec) -> int:
        """Track a candidate basis function (not in the model); returns its column id."""
        return self.window.add_column(spec)

    def add_basis(self, spec_or_id: BasisSpec | int, lam: float = 0.0) -> int:
        """Add a basis function to the model with regularisation ``lam`` (Orr eq. (A.4)).

        ``spec_or_id`` is a new :class:`BasisSpec` or the id of a tracked candidate. Returns
        the column id. State unchanged on error.
        """
        lam = _as_lambda(lam)
        window = self.window
        created = isinstance(spec_or_id, BasisSpec)
        column_id = window.add_column(spec_or_id) if created else int(spec_or_id)
        position = window.position_of(column_id)
        if position < window.n_model:
            raise ValueError(f"column {column_id} is already in the model")
        m = window.n_model
        gram = window.gram_buffer
        g = gram[position, :m].copy()  # row of the symmetric Gram: contiguous
        g_jj = float(gram[position, position])
        c_j = window.cross_y_buffer[position].copy()
        # A window that stores its rows can recompute a cancelled hᵀPh from them.
        project_below = core.PROJECT_BELOW if self._can_project() else 0.0
        try:
            account = self.state.add_basis(g, g_jj, c_j, lam, project_below=project_below)
            if account is None:
                # (with no projection after all, the Gram formula: project_below 0 never
                # asks for one)
                account = self.state.add_basis(g, g_jj, c_j, lam,
                                               self._projection(position, g, g_jj))
        except IllConditionedError:
            if created:
                window.forget_new_column(position)
            raise
        window.promote(position)
        self._after_update(account)
        return column_id

    def _projection(self, position: int, g: np.ndarray, g_jj: float
                    ) -> tuple[float, np.ndarray] | None:
        """``(hᵀPh, YᵀPh)`` of tracked column ``position`` from the stored rows, when the
        Gram formula ``g_jj − gᵀSg`` would lose more than four digits (None otherwise, and
        for memories that do not store their rows).

        With ``l = Sg`` and the residual ``r = h − Hl`` over the window,
        ``hᵀPh = ‖r‖² + lᵀΛl`` and ``yᵀPh = rᵀy`` (expand ``‖r‖²`` with ``S(G + Λ) = I``):
        sums of the residual, in which the near-cancellation of ``h`` against its
        projection on the model happened element by element and was not amplified. The
        first is stationary in l (it is the minimum over l of ``‖h − Hl‖² + lᵀΛl``), so the
        rounding already in S enters it only to second order. O(W·M), paid only for a
        nearly dependent column, where it spares an O(M³) refresh of S.
        """
        window, state = self.window, self.state
        if not (state.size and self._can_project()):
            return None
        l_vec = state.variance @ g
        if g_jj - float(g @ l_vec) >= core.PROJECT_BELOW * g_jj:
            return None
        # (over the ring's slots as stored: the sums need no order, and a full ring's rows
        # are read in place, not copied oldest first)
        HT, YT = window.pattern_arrays()[3], window.targets.values
        slots = (slice(0, window.n_stored) if window.n_stored == window.ring_size
                 else window._order())
        residual = HT[position, slots] - l_vec @ HT[: state.size, slots]
        return (float(residual @ residual + l_vec @ (state.lambdas * l_vec)),
                YT[:, slots] @ residual)

    def _can_project(self) -> bool:
        """Whether :meth:`_projection` can use the stored rows (an unweighted window)."""
        return self.window.memory == "window" and self.window.factor == 1.0

    def replace_basis(self, j: int, column_id: int, lam: float) -> None:
        """Exchange basis function ``j`` for the tracked candidate ``column_id`` at λ
        ``lam``: the candidate takes slot j, and j goes back to the pool (FGCV's trade).
        One O(M²) pass (:meth:`RidgeState.replace_basis`); a nearly dependent candidate goes
        the exact way instead (remove, then :meth:`add_basis` with the stored rows). Raises
        :class:`IllConditionedError` with nothing changed when the candidate is in the span
        of the other basis functions to rounding."""
        lam = _as_lambda(lam)
        self.state.check_index(j)
        window = self.window
        position = window.position_of(int(column_id))
        if position < window.n_model:
            raise ValueError(f"column {column_id} is already in the model")
        g = window.gram_buffer[position, : self.size].copy()  # row of the symmetric Gram
        account = self.state.replace_basis(j, g, float(window.gram_buffer[position, position]),
                                           window.cross_y_buffer[position].copy(), lam)
        if account is not None:
            window.swap_columns(j, position)
            self._after_update(account)
            return
        # Move j last so that the undo of a refused addition is a plain restore of a copy.
        last = self.size - 1
        self.swap_basis(j, last)
        snapshot = self.snapshot()
        self.remove_basis(last, keep_as_candidate=True)
        try:
            self.add_basis(int(column_id), lam)
        except IllConditionedError:
            self.restore(snapshot)
            raise

    def swap_basis(self, i: int, j: int) -> None:
        """Exchange the positions of basis functions ``i`` and ``j`` (nothing else changes)."""
        self.state.check_index(i)
        self.state.check_index(j)
        self.state.swap(i, j)
        self.window.swap_columns(i, j)
        self._version += 1  # the criteria's sums now run in another order

    def snapshot(self) -> tuple:
        """What :meth:`restore` needs to undo a removal of the last basis function exactly:
        O(M²) copies of the ridge state and the accounts."""
        # order="K" keeps the memory layout, so that BLAS sums in the same order after a
        # restore and every derived number is reproduced to the last bit.
        return (self.state.variance.copy(order="K"), self.state.weights.copy(order="K"),
                self.state.lambdas.copy(order="K"), self.window.n_model,
                self._error_estimate, self._statistics_error)

    def restore(self, snapshot: tuple) -> None:
        """Undo ``remove_basis(last, keep_as_candidate=True)`` taken after ``snapshot()``: the
        column steps back from the pool (it sits at the head of the pool) and the ridge
        state is the copy, bit for bit."""
        variance, weights, lambdas, n_model, error, statistics_error = snapshot
        if self.window.n_model != n_model - 1:
            raise ValueError("restore() undoes exactly one removal of the last basis function")
        self.window.promote(self.window.n_model)
        self.state.variance, self.state.weights, self.state.lambdas = variance, weights, lambdas
        self._error_estimate, self._statistics_error = error, statistics_error
        self._version += 1

    def remove_basis(self, j: int, keep_as_candidate: bool = False) -> int:
        """Remove basis function ``j`` (position in the model); returns its column id."""
        self.state.check_index(j)
        last = self.size - 1
        self.state.swap(j, last)
        self.window.swap_columns(j, last)
        account = self.state.remove_basis(last)
        self.window.demote(last)
        column_id = int(self.window.ids[last])
        if not keep_as_candidate:
            self.window.drop_column(last)
        self._after_update(account)
        return column_id

    def set_lambda(self, j: int, lam: float) -> None:
        """Set λⱼ of basis function ``j`` (rank one, FGCV App. V)."""
        lam = _as_lambda(lam)
        self.state.check_index(j)
        # Row j of the symmetric Gram is its column j, read contiguously and without a copy
        # (only the rare remove-and-add branch of RidgeState.set_lambda reads it).
        gram = self.window.gram_buffer
        account = self.state.set_lambda(j, lam, gram[j, : self.size], float(gram[j, j]),
                                        self.window.cross_y_buffer[j].copy())
        self._after_update(account)

    def scale_lambdas(self, factor: float) -> None:
        """Multiply every λⱼ by ``factor`` and recompute ``S`` and ``w`` (O(M³)).

        FGCV section 3.2 point 6: the algorithm holds αⱼ = λⱼ/σ² while σ² is re-estimated,
        so a new noise level changes every λⱼ at once and "all the relevant variables are
        calculated afresh" — here one Cholesky solve from the window statistics, which
        are untouched. λⱼ = 0 stays 0. On :class:`IllConditionedError` the model is left
        as it was.
        """
        factor = float(factor)
        if not (factor > 0.0 and math.isfinite(factor)):
            raise ValueError(f"the λ scale factor must be finite and > 0, got {factor}")
        if not self.size or factor == 1.0:
            return
        before = self.state.lambdas
        self.state.lambdas = before * factor
        try:
            # Fails before it assigns anything (RidgeState.refresh), so only λ needs undoing.
            self.refresh(statistics=False)
        except IllConditionedError:
            self.state.lambdas = before
            raise

    # -- numerical health (FGCV 3.2 point 5) ------------------------------------------------
    def condition_bound(self) -> float:
        """A cheap O(M) lower bound on cond(G + Λ): ``max(diag A)·max(diag S)``.

        ``λ_max(A) ≥ max Aᵢᵢ`` and ``λ_max(S) = 1/λ_min(A) ≥ max Sᵢᵢ``.
        """
        if not self.size:
            return 1.0
        return core.condition_bound(self.window.gram_buffer, self.state.variance,
                                      self.state.lambdas)

    def _statistics_cancellation(self, h_old: np.ndarray) -> tuple[float, float]:
        """Error account of subtracting a pattern from ``G``: its diagonal loses the digits
        by which ``hᵢ²`` exceeds what is left, ``max hᵢ²/Gᵢᵢ``. The statistics carry their
        own estimate (only recomputing them from the stored rows clears it); S inherits the
        same relative error."""
        if not len(h_old):
            return 1.0, 0.0
        fresh = core.cancellation_ratio(self.window.gram, h_old, len(h_old))
        self._add_statistics_error(fresh)
        return 1.0, fresh

    def _add_statistics_error(self, fresh: float) -> None:
        self._statistics_error += fresh
        self._round_error += fresh

    def _account(self, account: tuple[float, float]) -> None:
        propagation, fresh = account
        self._error_estimate = core.account(self._error_estimate, propagation, fresh)

    def _after_update(self, *accounts: tuple[float, float], pattern: bool = False,
                      healthy: bool | None = None) -> None:
        """Add an operation's rounding accounts, a pattern's share of the rolling refresh,
        and decide whether the incremental result can still be trusted, else refresh
        (``core.decide``, whose docstring gives the rules).

        A first-order estimate of the relative error in S, in units of machine ε, is
        carried from operation to operation (each reports how it propagates the old error
        and how much it adds, see :meth:`RidgeState.add_pattern`); past ``1e7`` ε (about
        2e-9) the residual of S is measured and S refreshed only if it exceeds half of
        that; the statistics are recomputed from the stored rows when their own accounts
        pass the same bound, and every ``refresh_every`` patterns (a full window's a column
        at a time instead, :meth:`~onlinesparse.orr.window.WindowStatistics.refresh_step`).
        """
        self._version += 1
        for account in accounts:
            self._account(account)
        exact_since = self._rolling_refresh() if pattern else None
        self._decide(pattern, exact_since, healthy)

    def _rolling_refresh(self) -> int | None:
        """A pattern's share of the window's rolling refresh (``core.close_round`` keeps
        the statistics' account). Returns what :meth:`WindowStatistics.refresh_step
        <onlinesparse.orr.window.WindowStatistics.refresh_step>` returns."""
        exact_since = self.window.refresh_step(self.refresh_every)
        if exact_since is not None:
            core.close_round(self.record, exact_since, self.window.n_seen)
        return exact_since

    def _decide(self, pattern: bool, exact_since: int | None, healthy: bool | None) -> None:
        """The verdict of ``core.decide`` on the current state, and the refresh it asks
        for now (a deferred one waits in ``_pending`` for :meth:`maintain`)."""
        window = self.window
        if core.decide(self.record, pattern, -1 if exact_since is None else exact_since,
                       -1 if healthy is None else int(healthy),
                       window.n_stored == 0 and window.memory == "window",
                       *window.health_arrays(), *self.state.arrays()) == core.REFRESH_NOW:
            self._safe_refresh(bool(self._pending))

    @property
    def refresh_pending(self) -> bool:
        """Whether a deferred refresh waits for :meth:`maintain` (``defer_refreshes``)."""
        return self._pending is not None

    def maintain(self) -> bool:
        """Run the refresh deferred by ``defer_refreshes``, if any; returns whether it did."""
        if self._pending_code == NO_REFRESH:
            return False
        self._safe_refresh(self._pending)
        return True

    def _safe_refresh(self, statistics: bool = True) -> None:
        self._pending = None  # attempted now, whatever the outcome
        try:
            self.refresh(statistics)
        except IllConditionedError:
            # The operation itself passed its checks; the system is singular to working
            # precision. Keep the incremental answer and say so rather than fail an update
            # that has already been applied.
            self.ill_conditioned = True
        else:
            self.ill_conditioned = False

    def check_health(self) -> float:
        """Probe the drift now and refresh if it exceeds the tolerance; returns the drift."""
        self._since_check = self.check_every
        self._after_update()
        return self.drift()

    def drift(self) -> float:
        """Relative residual ``‖S(G + Λ)v − v‖/‖v‖`` for a fixed probe v: O(M²)."""
        if self.size == 0:
            return 0.0
        return core.drift(self.window.gram_buffer, self.state.variance, self.state.lambdas)

    def refresh(self, statistics: bool = True) -> None:
        """Recompute ``S`` and ``w`` from the statistics by Cholesky (O(M³)), and first the
        window statistics from the stored rows (O(W·n²)) unless ``statistics=False``."""
        if statistics:
            # Periodic refreshes count from here whether or not the memory policy can
            # rebuild its statistics (only a window stores the rows to do so).
            self._since_refresh = 0
            if self.window.refresh():
                self._statistics_error = self._round_error = 0.0
                self._round_start = self.window.n_seen
        window = self.window
        self.state.refresh(window.gram_model, window.cross_y_buffer[: window.n_model])
        self._pending = None
        self._version += 1
        self.n_refreshes += 1
        self._error_estimate = 1.0 + self._statistics_error
        self._since_check = 0

    # -- criteria (Orr (1996) section 5) -----------------------------------------------
    def summary(self) -> tuple[float, float]:
        """``(yᵀP²y, γ)``, from which every criterion follows.

        Criteria are read many times between two changes of the model (the pruner compares
        against the current GCV at every move), and every change bumps the version; so both
        numbers are computed once per version, in one compiled call, and kept in the
        record (``core.criteria_now``, which the compiled pruner shares).
        """
        window = self.window
        return core.criteria_now(self.record, window.targets, window.gram_buffer,
                                 window.cross_y_buffer, *self.state.arrays())

    @property
    def training_error(self) -> float:
        """``yᵀP²y = yᵀy − 2wᵀc + wᵀGw`` (clipped at 0 against rounding); with several
        targets ``Σₖ ωₖyₖᵀP²yₖ``, each target's in :attr:`target_errors`."""
        return self.summary()[0]

    @property
    def target_errors(self) -> np.ndarray:
        """Each target's ``yₖᵀP²yₖ`` (a copy)."""
        self.summary()
        return self.window.targets.training.copy()

    @property
    def effective_parameters(self) -> float:
        """γ = tr(SG) = M − Σⱼ λⱼ Sⱼⱼ (Orr eq. 4.10, appendix A.8)."""
        return self.summary()[1]

    def _criterion(self, fn) -> float:
        error, gamma = self.summary()
        return fn(error, gamma, self.window.count)

    @property
    def gcv(self) -> float:
        return self._criterion(criteria.gcv)

    @property
    def uev(self) -> float:
        return self._criterion(criteria.uev)

    @property
    def fpe(self) -> float:
        return self._criterion(criteria.fpe)

    @property
    def bic(self) -> float:
        return self._criterion(criteria.bic)

    @property
    def noise_variance(self) -> float:
        """FGCV eq. 8: ``yᵀP²y / tr(P)``."""
        return self._criterion(criteria.noise_variance)

    def loo(self) -> float:
        """Leave-one-out error over the stored window, Orr 5.1 / A.9: O(pM²), on demand.

        ``(yᵢ − fᵢ)`` over ``Pᵢᵢ = 1 − hᵢᵀShᵢ``; ``inf`` when a pattern has leverage 1.
        """
        if self.window.memory != "window":
            raise ValueError("leave-one-out needs the stored patterns of memory='window'")
        if self.window.n_stored == 0:
            raise ValueError("leave-one-out of an empty window is undefined")
        H = self.window.stored_rows()
        Y = self.window.targets.values[:, self.window._order()].T
        residuals = Y - H @ self.state.weights if self.size else Y
        diag_p = 1.0 - np.einsum("ij,ij->i", H @ self.state.variance, H) if self.size else 1.0
        diag_p = np.broadcast_to(np.reshape(diag_p, (-1, 1)), residuals.shape)
        if np.any(diag_p <= core.MIN_RESIDUAL_LEVERAGE):
            return math.inf
        # (several targets: each target's weighed by ω, as every criterion)
        per_target = np.mean((residuals / diag_p) ** 2, axis=0)
        return float(per_target @ self.window.targets.scales)

    def predictive_variance(self, h: np.ndarray, noise_variance: float) -> float:
        """Variance of a prediction at a model row ``h``: ``σ²(1 + hᵀSh)``.

        With the ridge prior ``w ~ N(0, σ²Λ⁻¹)`` the weight posterior covariance is
        ``σ²A⁻¹``, so the predictive variance of a new observation is ``σ² + σ²hᵀA⁻¹h``.
        """
        if not self.size:
            return noise_variance
        h = np.ascontiguousarray(h, dtype=float)
        return noise_variance * (1.0 + core.symmetric_quadratic(self.state.variance, h,
                                                                self.size))
