"""Orr's incremental ridge regression: ``A⁻¹ = (G + Λ)⁻¹`` and ``w`` kept exact in O(M²).

:class:`RidgeState` holds the variance matrix ``S = A⁻¹``, the weights ``w = S c`` and one
regularisation parameter λⱼ per basis function, and implements the incremental operations
of Orr appendix A.7 and FGCV appendices V–VI on them:

========================  =====================================  ==========================
operation                 formula                                reference
========================  =====================================  ==========================
add a pattern             ``S ← S − uuᵀ/(1 + hᵀu)``, ``u = Sh``  Orr eq. (A.8)
remove a pattern          ``S ← S + uuᵀ/(1 − hᵀu)``              Orr eq. (A.11)
add a basis function      partitioned inverse                    Orr eq. (A.4), FGCV (48)
remove a basis function   ``S ← S − sⱼsⱼᵀ/sⱼⱼ`` (λⱼ → ∞)         FGCV App. V, Kⱼ = 1/sⱼⱼ
change one λⱼ             rank one, ``Kⱼ = (sⱼⱼ + 1/δ)⁻¹``        FGCV App. V
========================  =====================================  ==========================

:class:`IncrementalRidge` composes a :class:`~onlinesparse.window.WindowStatistics` with a
:class:`RidgeState`, keeps them consistent, validates input at the boundary, watches the
numerical health of ``S`` (DESIGN.md §4) and exposes the model-selection criteria. No
operation forms a p × p matrix.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from onlinesparse import core, criteria
from onlinesparse.features import as_target as _as_target
from onlinesparse.kernels import BasisSpec
from onlinesparse.window import WindowStatistics

__all__ = ["IllConditionedError", "RidgeState", "IncrementalRidge"]


class IllConditionedError(np.linalg.LinAlgError):
    """``HᵀH + Λ`` is (numerically) singular, so the requested model does not exist.

    A subclass of :class:`numpy.linalg.LinAlgError` and hence of :class:`ValueError`.
    """


# Refresh once the estimated relative rounding error reaches this many machine epsilons
# (≈ 2e-9): far below anything a prediction or a GCV comparison can see, and rare enough
# that the O(M³) refresh stays off the typical sample's path.
_REFRESH_AT = 1e7
_EPS = core.EPS
# Past that estimate, the measured residual ‖S(G + Λ)v − v‖/‖v‖ decides: below this S is
# kept (and the estimate restarts from the measurement). It bounds the relative error of
# w = Sc, so half the level the estimate tolerates is kept (1.1e-9, an order below the
# 1e-8 to which a window model's weights are held to the batch solution); the estimate
# then has to double before the next measurement. (Stricter bars refreshed S for
# residuals no prediction can see: keeping S only where a new factorisation could not do
# better, ~1e-11, refreshed every 27 samples of a streaming model at M = 100, each an
# O(M³) sample; a quarter of the level, 5.6e-10, 14 times in 5000 samples, for measured
# residuals of 5.6e-10 to 9.1e-10.)
_ACCOUNT_DRIFT = 0.5 * _REFRESH_AT * _EPS
# A pattern whose leverage hᵀSh is this close to 1 carries a direction no other pattern
# supports; removing it would leave HᵀH + Λ singular.
_MIN_RESIDUAL_LEVERAGE = 1e-10
# A new column whose Δ = λ + hᵀPh is this small relative to hᵀh + λ is a combination of the
# model's columns (to rounding) and cannot be added without regularisation.
_MIN_RELATIVE_DELTA = 1e-12
# Below this hᵀPh/hᵀh the Gram formula for hᵀPh has lost four digits to cancellation, and
# a window model recomputes it from the stored rows (IncrementalRidge._projection).
_PROJECT_BELOW = 1e-4


class RidgeState:
    """Variance matrix, weights and regularisation parameters of a linear model.

    The state knows nothing about the data: every operation receives the numbers it needs
    (a row ``h``, a Gram column ``g``…), which :class:`IncrementalRidge` reads from the window
    statistics. Operations either complete or raise before changing anything.
    """

    def __init__(self) -> None:
        self.variance = np.zeros((0, 0))
        self.weights = np.zeros(0)
        self.lambdas = np.zeros(0)

    @property
    def size(self) -> int:
        return len(self.weights)

    # -- patterns (Orr A.7.3, A.7.4) -------------------------------------------------------
    def add_pattern(self, h: np.ndarray, y: float) -> tuple[float, float]:
        """Orr eq. (A.8): ``S ← S − uuᵀ/(1 + hᵀu)`` with ``u = Sh``;
        ``w ← w + u(y − hᵀw)/(1 + hᵀu)``.

        Every operation returns a first-order rounding-error account ``(propagation, fresh)``:
        the factor by which it multiplies the relative error already in ``S``, and the new
        relative error it creates, in units of machine ε. Adding a pattern contracts the old
        error by ``1/(1 + hᵀSh)`` but computes a result ``1 + hᵀSh`` times smaller than the
        terms it subtracts, so the fresh error is ``1 + hᵀSh``.
        """
        if self.size == 0:
            return 1.0, 0.0
        denom = core.sherman_morrison(self.variance, self.weights, h, y, 1.0, -math.inf,
                                        np.empty(self.size))
        return 1.0 / denom, denom

    def remove_pattern(self, h: np.ndarray, y: float) -> tuple[float, float]:
        """Orr eq. (A.11): ``S ← S + uuᵀ/(1 − hᵀu)``; ``w ← w − u(y − hᵀw)/(1 − hᵀu)``.

        Raises :class:`IllConditionedError` (state unchanged) when the pattern's leverage is 1
        to rounding: without it ``HᵀH + Λ`` would be singular. Both error factors are
        ``1/(1 − hᵀSh)``: the denominator is a difference.
        """
        if self.size == 0:
            return 1.0, 0.0
        # The compiled loop changes nothing when the denominator fails the test.
        denom = core.sherman_morrison(self.variance, self.weights, h, y, -1.0,
                                        _MIN_RESIDUAL_LEVERAGE, np.empty(self.size))
        if not denom > _MIN_RESIDUAL_LEVERAGE:
            raise IllConditionedError(
                "removing this pattern leaves HᵀH + Λ singular (its leverage is "
                f"{1 - denom:.12g}); give the basis functions λ > 0 or keep more patterns "
                "than basis functions"
            )
        return 1.0 / denom, 1.0 / denom

    def scale(self, factor: float) -> None:
        """Forgetting: ``A ← factor·A`` (data and regularisation fade together), ``w`` unchanged."""
        self.variance /= factor
        self.lambdas *= factor

    # -- basis functions (Orr A.7.1, A.7.2; FGCV appendices V and VI) ----------------------
    def add_basis(self, g: np.ndarray, g_jj: float, c_j: float, lam: float,
                  projection: tuple[float, float] | None = None, project_below: float = 0.0
                  ) -> tuple[float, float] | None:
        """Orr eq. (A.4): append a column with ``g = Hᵀh``, ``g_jj = hᵀh``, ``c_j = hᵀy`` and λ.

        With ``l = Sg`` and ``Δ = λ + hᵀPh = λ + g_jj − gᵀl`` the new variance matrix is
        ``[[S + llᵀ/Δ, −l/Δ], [−lᵀ/Δ, 1/Δ]]``; the new weight is ``yᵀPh/Δ`` with
        ``yᵀPh = c_j − gᵀw`` and the old weights move by ``−l·wⱼ``. The error account is
        ``(g_jj + λ)/Δ`` for both factors: the cancellation in ``Δ``.

        ``projection = (hᵀPh, yᵀPh)`` computed without that cancellation (from the stored
        rows, :meth:`IncrementalRidge._projection`) replaces the two differences; the
        cancellation left is then the square root of the Gram formula's. Without it, when
        the Gram formula's ``hᵀPh`` falls below ``project_below·g_jj`` nothing changes and
        None is returned, for the caller to compute the projection.
        """
        if not (lam >= 0.0 and math.isfinite(lam)):
            raise ValueError(f"λ must be finite and ≥ 0, got {lam}")
        m = self.size
        variance, weights = np.empty((m + 1, m + 1)), np.empty(m + 1)
        hph, yph = projection if projection is not None else (math.nan, math.nan)
        delta, status = core.add_basis(self.variance, self.weights, g, g_jj, c_j, lam,
                                         hph, yph, _MIN_RELATIVE_DELTA, project_below,
                                         variance, weights)
        if status < 0:
            return None
        if not status:
            raise IllConditionedError(
                "this basis function is (numerically) a linear combination of the model's "
                f"columns over the window (hᵀPh + λ = {delta:.3g}); add it with λ > 0"
            )
        self.variance, self.weights = variance, weights
        self.lambdas = np.append(self.lambdas, lam)
        amplification = (g_jj + lam) / delta
        if projection is not None:
            amplification = math.sqrt(amplification)
        return amplification, amplification

    def remove_basis(self, j: int) -> tuple[float, float]:
        """λⱼ → ∞ then drop j: ``S ← S − sⱼsⱼᵀ/sⱼⱼ``, ``w ← w − sⱼwⱼ/sⱼⱼ`` (FGCV App. V)."""
        self._check_index(j)
        m = self.size
        variance, weights = np.empty((m - 1, m - 1)), np.empty(m - 1)
        core.remove_basis(self.variance, self.weights, j, variance, weights)
        self.variance, self.weights = variance, weights
        self.lambdas = np.delete(self.lambdas, j)
        return 1.0, 1.0

    def set_lambda(self, j: int, lam: float, g: np.ndarray, g_jj: float, c_j: float
                   ) -> tuple[float, float]:
        """Change λⱼ, FGCV App. V re-estimation: with ``δ = λ_new − λ_old`` and
        ``Kⱼ = δ/(1 + δsⱼⱼ)``, ``S ← S − Kⱼsⱼsⱼᵀ`` and ``w ← w − Kⱼwⱼsⱼ``.

        When λ falls by a lot (``−δ·sⱼⱼ > ½``) the denominator ``1 + δsⱼⱼ`` is a difference
        of nearly equal numbers, so the column is instead removed and added back in place
        (Orr eq. (A.4) on ``S' = S − sⱼsⱼᵀ/sⱼⱼ``), which is exact whatever the change. ``g``,
        ``g_jj`` and ``c_j`` are the column's Gram column, squared norm and ``hⱼᵀy``.
        """
        self._check_index(j)
        if not (lam >= 0.0 and math.isfinite(lam)):
            raise ValueError(
                f"λ must be finite and ≥ 0 (remove the basis function for ∞), got {lam}")
        delta_lam = lam - self.lambdas[j]
        if delta_lam == 0.0:
            return 1.0, 0.0
        # Raising λ shrinks Sⱼⱼ and wⱼ by 1 + δsⱼⱼ through a subtraction, lowering it
        # divides by that: either way the error factor is the larger of the two.
        factor = core.lambda_rank_one(self.variance, self.weights, self.lambdas, j, lam)
        if factor > 0.0:
            return factor, factor
        # Remove j (λⱼ → ∞), then add it back in its slot with the new λ.
        amplification = core.replace_basis(self.variance, self.weights, self.lambdas, j, g,
                                             g_jj, c_j, lam, _MIN_RELATIVE_DELTA, 0.0,
                                             np.empty(self.size))
        if amplification == 0.0:
            raise IllConditionedError(
                f"with λ = {lam:g} basis function {j} is a combination of the others")
        return amplification, amplification

    def replace_basis(self, j: int, g: np.ndarray, g_kk: float, c_k: float, lam: float
                      ) -> tuple[float, float] | None:
        """Exchange basis function j for a new column in its slot, FGCV's trade: remove j
        (appendix V with λⱼ → ∞) and add the column (Orr eq. (A.4)) in one O(M²) pass
        (``core.replace_basis`` has the formulas). ``g``, ``g_kk``, ``c_k`` are the new
        column's Gram row over the model (entry j ignored), squared norm and ``hᵀy``.

        Raises :class:`IllConditionedError` (state unchanged) when the column is in the span
        of the others to rounding; returns None (state unchanged) when the Gram formula for
        its ``hᵀPh`` would lose more than four digits and the caller should take the exact
        path. The error account is the addition's, ``(g_kk + λ)/Δ``.
        """
        self._check_index(j)
        if not (lam >= 0.0 and math.isfinite(lam)):
            raise ValueError(f"λ must be finite and ≥ 0, got {lam}")
        amplification = core.replace_basis(self.variance, self.weights, self.lambdas, j, g,
                                             g_kk, c_k, lam, _MIN_RELATIVE_DELTA,
                                             _PROJECT_BELOW, np.empty(self.size))
        if amplification == 0.0:
            raise IllConditionedError(
                "this basis function is (numerically) a linear combination of the model's "
                "other columns over the window; add it with λ > 0")
        if amplification < 0.0:
            return None
        return amplification, amplification

    def swap(self, i: int, j: int) -> None:
        """Exchange basis functions ``i`` and ``j`` (S is permutation-equivariant)."""
        if i == j:
            return
        core.swap_symmetric(self.variance, i, j, self.size)
        weights, lambdas = self.weights, self.lambdas
        weights[i], weights[j] = weights[j], weights[i]
        lambdas[i], lambdas[j] = lambdas[j], lambdas[i]

    def refresh(self, gram: np.ndarray, cross_y: np.ndarray) -> None:
        """Recompute ``S`` and ``w`` from the statistics by a Cholesky factorisation."""
        m = self.size
        if m == 0:
            return
        A = gram + np.diag(self.lambdas)
        if not np.all(np.isfinite(A)):
            raise IllConditionedError("HᵀH + Λ has non-finite entries")
        # LAPACK: Cholesky A = LLᵀ (potrf), then A⁻¹ from L (potri: half the work of
        # solving against the identity), then w = A⁻¹c.
        chol, info = lapack.dpotrf(A, lower=True)
        if info != 0:
            raise IllConditionedError(
                "HᵀH + Λ is not positive definite: some basis functions are linear "
                "combinations of others with λ = 0; raise their λ or remove them")
        inverse, info = lapack.dpotri(chol, lower=True)
        if info != 0:
            raise IllConditionedError("HᵀH + Λ could not be inverted")
        core.mirror_lower(inverse)
        # A symmetric Fortran-ordered matrix is its own C-ordered transpose: no copy.
        self.variance = inverse.T if inverse.flags.f_contiguous else inverse
        self.weights = self.variance @ cross_y

    def _check_index(self, j: int) -> None:
        if not (isinstance(j, int | np.integer) and 0 <= j < self.size):
            raise ValueError(f"basis index {j!r} is not in the model (it has {self.size})")


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


class IncrementalRidge:
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
        Memory policy of the :class:`~onlinesparse.window.WindowStatistics`.
    refresh_every
        Recompute the statistics from the stored window and ``S`` by Cholesky after this many
        added patterns (for a window the default is its size), so rounding never accumulates
        without bound. Once a window is full its statistics are recomputed a column at a time
        instead, every pattern paying its share (:meth:`WindowStatistics.refresh_step
        <onlinesparse.window.WindowStatistics.refresh_step>`), and this refreshes ``S``
        alone.
    check_every
        Probe ``‖S(G + Λ)v − v‖`` every this many operations; a drift above
        ``drift_tolerance`` triggers a refresh (DESIGN.md §4).
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

    # Class-level defaults, so that checkpoints written before deferral existed load.
    defer_refreshes = False
    _pending: bool | None = None
    _round_error = 0.0
    _round_start = 0

    def __init__(self, n_features: int, memory: str = "window", size: int = 1000,
                 factor: float = 1.0, refresh_every: int | None = None,
                 check_every: int = 64, drift_tolerance: float = 1e-7,
                 defer_refreshes: bool = False) -> None:
        self.window = WindowStatistics(n_features, memory=memory, size=size, factor=factor)
        self.state = RidgeState()
        self.refresh_every = (
            refresh_every if refresh_every is not None
            else (size if memory == "window" else 10_000)
        )
        self.check_every = int(check_every)
        self.drift_tolerance = float(drift_tolerance)
        self.n_refreshes = 0
        self.defer_refreshes = bool(defer_refreshes)
        # (statistics too?) of a refresh called for but deferred; None when none is.
        self._pending: bool | None = None
        self.ill_conditioned = False
        self._version = 0
        # (version, training error, γ): see _summary.
        self._summary_cache: tuple[int, float, float] = (-1, 0.0, 0.0)
        self._error_estimate = 1.0
        self._statistics_error = 0.0
        # The rolling refresh of a full window (WindowStatistics.refresh_step): the
        # statistics' rounding accumulated since the current round of it began, and the
        # pattern count at which it began.
        self._round_error = 0.0
        self._round_start = 0
        self._since_refresh = 0
        self._since_check = 0

    # -- read-only views ------------------------------------------------------------------
    @property
    def n_features(self) -> int:
        return self.window.n_features

    @property
    def size(self) -> int:
        """Number of basis functions in the model, M."""
        return self.state.size

    @property
    def weights(self) -> np.ndarray:
        return self.state.weights

    @property
    def lambdas(self) -> np.ndarray:
        return self.state.lambdas

    @property
    def variance(self) -> np.ndarray:
        """``A⁻¹ = (HᵀH + Λ)⁻¹``."""
        return self.state.variance

    @property
    def n_patterns(self) -> float:
        """p: the number of patterns in memory (effective count when forgetting)."""
        return self.window.count

    # -- predictions ----------------------------------------------------------------------
    def model_row(self, x: np.ndarray) -> np.ndarray:
        """Values of the model's basis functions at ``x``."""
        return self.window.basis.evaluate(np.asarray(x, dtype=float), 0, self.size)

    def predict(self, x: np.ndarray) -> float:
        return float(self.model_row(x) @ self.state.weights) if self.size else 0.0

    # -- the five operations --------------------------------------------------------------
    def add_pattern(self, x: np.ndarray | list[float], y: float,
                    row: np.ndarray | None = None) -> np.ndarray:
        """Add one pattern; a full window first drops its oldest (Orr eqs. (A.8), (A.11)).

        ``row`` is the pattern's row over every tracked column if the caller already has it
        (``window.row(x)``). Returns that row. Invalid input raises ``ValueError`` and
        changes nothing.
        """
        x = _as_input(x, self.n_features)
        y = _as_target(y)
        h = self.window.row(x) if row is None else row
        m = self.size
        if m and self.window.is_full and self._slide(x, y, h):
            return h
        if self.window.is_full:
            h_old, y_old = self.window.oldest()
            try:
                removal = self.state.remove_pattern(h_old[:m], y_old)
            except IllConditionedError:
                # The oldest pattern is the only support of some direction; with the new
                # pattern in, it may not be. Add first, then remove; restore if not.
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
                return h
            self.window.pop_oldest()
            self._account(removal)
            self._account(self._statistics_cancellation(h_old[:m]))
        if self.window.factor != 1.0:
            self.state.scale(self.window.factor)
        self.window.push(x, y, h)
        self._after_update(self.state.add_pattern(h[:m], y), pattern=True)
        return h

    def _slide(self, x: np.ndarray, y: float, h: np.ndarray) -> bool:
        """The steady state of a full window in one compiled call: the operations of the
        general path of :meth:`add_pattern` (remove the oldest pattern from S and the
        statistics, add the new one), with the two rank-one changes of S fused into one
        rank-two pass and those of G into one pass (``core.slide_window``), and without
        the interpreter overhead of a dozen calls. Returns False, with nothing changed,
        when the removal must wait for the addition (the general path's ill-conditioned
        case)."""
        window, state = self.window, self.state
        h_old, y_old = window.oldest()
        out = np.empty(4)
        if not core.slide_window(window._gram, window._cross_y, window.traffic,
                                 window.n_columns, state.variance, state.weights, state.size,
                                 h, y, h_old, y_old, _MIN_RESIDUAL_LEVERAGE,
                                 np.empty(state.size), out):
            return False
        window.replace_oldest(x, y, h, y_old)
        removal, addition, cancellation, healthy = out.tolist()
        self._account((1.0 / removal, 1.0 / removal))
        self._add_statistics_error(cancellation)
        self._account((1.0, cancellation))
        self._after_update((1.0 / addition, addition), pattern=True, healthy=healthy > 0.0)
        return True

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
        gram = window._gram
        g = gram[position, :m].copy()  # row of the symmetric Gram: contiguous
        g_jj = float(gram[position, position])
        c_j = float(window._cross_y[position])
        # A window that stores its rows can recompute a cancelled hᵀPh from them.
        project_below = _PROJECT_BELOW if self._can_project() else 0.0
        try:
            account = self.state.add_basis(g, g_jj, c_j, lam, project_below=project_below)
            if account is None:
                # (with no projection after all, the Gram formula: project_below 0 never
                # asks for one)
                account = self.state.add_basis(g, g_jj, c_j, lam,
                                               self._projection(position, g, g_jj))
        except IllConditionedError:
            if created:
                window.drop_column(position)
                window._next_id -= 1
            raise
        window.promote(position)
        self._after_update(account)
        return column_id

    def _projection(self, position: int, g: np.ndarray, g_jj: float
                    ) -> tuple[float, float] | None:
        """``(hᵀPh, yᵀPh)`` of tracked column ``position`` from the stored rows, when the
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
        if g_jj - float(g @ l_vec) >= _PROJECT_BELOW * g_jj:
            return None
        slots = (slice(None) if window.n_stored == len(window._y) else window._order())
        rows = window._HT
        residual = rows[position, slots] - l_vec @ rows[: state.size, slots]
        return (float(residual @ residual + l_vec @ (state.lambdas * l_vec)),
                float(residual @ window._y[slots]))

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
        self.state._check_index(j)
        window = self.window
        position = window.position_of(int(column_id))
        if position < window.n_model:
            raise ValueError(f"column {column_id} is already in the model")
        g = window._gram[position, : self.size].copy()  # row of the symmetric Gram
        account = self.state.replace_basis(j, g, float(window._gram[position, position]),
                                           float(window._cross_y[position]), lam)
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
        self.state._check_index(i)
        self.state._check_index(j)
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
        self.state._check_index(j)
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
        self.state._check_index(j)
        # Row j of the symmetric Gram is its column j, read contiguously and without a copy
        # (only the rare remove-and-add branch of RidgeState.set_lambda reads it).
        gram = self.window._gram
        account = self.state.set_lambda(j, lam, gram[j, : self.size], float(gram[j, j]),
                                        float(self.window._cross_y[j]))
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

    # -- numerical health (DESIGN.md §4) --------------------------------------------------
    def condition_bound(self) -> float:
        """A cheap O(M) lower bound on cond(G + Λ): ``max(diag A)·max(diag S)``.

        ``λ_max(A) ≥ max Aᵢᵢ`` and ``λ_max(S) = 1/λ_min(A) ≥ max Sᵢᵢ``.
        """
        if not self.size:
            return 1.0
        return core.condition_bound(self.window._gram, self.state.variance,
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
        """Decide whether the incremental result can be trusted, else refresh.

        * A first-order estimate of the relative error in S, in units of machine ε, is
          carried from operation to operation (each reports how it propagates the old error
          and how much it adds, see :meth:`RidgeState.add_pattern`). Past ``1e7`` ε
          (about 2e-9) the residual of S is measured (O(M²)) and S is refreshed from the
          statistics only if the residual exceeds both half of that (1.1e-9) and
          10·ε·cond(A) (about what a fresh factorisation leaves); the statistics themselves are
          recomputed from the stored rows when their own cancellation estimate passes the
          same bound, and every ``refresh_every`` patterns — for a full window a column at
          a time instead (:meth:`~onlinesparse.window.WindowStatistics.refresh_step`), so
          that no sample pays for the whole O(W·n²) recomputation; once every column has
          been recomputed since a round began, only that round's rounding can remain.
        * Cheap O(M) checks every time: positive diagonal of S, finite weights.
        * The O(M²) drift probe every ``check_every`` operations, a backstop for what the
          first-order account misses.
        * A full refresh every ``refresh_every`` patterns (of S alone while the rolling
          refresh keeps the statistics).
        """
        self._version += 1
        for account in accounts:
            self._account(account)
        exact_since = self._rolling_refresh() if pattern else None
        self._decide(pattern, exact_since, healthy)

    def _rolling_refresh(self) -> int | None:
        """A pattern's share of the window's rolling refresh; once every column has been
        recomputed since the current round began, the statistics' account drops to that
        round's sum. Returns what :meth:`WindowStatistics.refresh_step
        <onlinesparse.window.WindowStatistics.refresh_step>` returns."""
        exact_since = self.window.refresh_step(self.refresh_every)
        if exact_since is not None and exact_since >= self._round_start:
            self._statistics_error, self._round_error = self._round_error, 0.0
            self._round_start = self.window.n_seen
        return exact_since

    def _decide(self, pattern: bool, exact_since: int | None, healthy: bool | None) -> None:
        """The decisions of :meth:`_after_update` once the accounts are up to date.

        ``SparseRBFRegressor``'s fused sample (``core.stream_sample``) takes the quiet
        outcome itself — every test below passes without action, so only the counters
        move — and calls this whenever one would not."""
        if pattern:
            self._since_refresh += 1
            if (self._statistics_error > _REFRESH_AT
                    or self.window.column_error() > _REFRESH_AT):
                self._refresh_or_defer(statistics=True)
                return
            if self._since_refresh >= self.refresh_every:
                if exact_since is not None:
                    self._since_refresh = 0  # the statistics are kept by the rolling refresh
                self._refresh_or_defer(statistics=exact_since is None)
                return
        if self.window.n_stored == 0 and self.window.memory == "window":
            # An empty window has exactly zero statistics and the weights exactly zero.
            self._safe_refresh()
            return
        self._since_check += 1
        if healthy is None:  # (a fused update may have checked already)
            healthy = core.is_healthy(self.state.variance, self.state.weights)
        if healthy and self._error_estimate > _REFRESH_AT:
            # The first-order estimate is pessimistic for near-collinear additions; measure
            # before paying O(M³). A residual well inside what the estimate tolerates, or
            # within what a fresh factorisation would leave (≈ cond(A)·ε), keeps S.
            restarted = core.measured_estimate(self.window._gram, self.state.variance,
                                                 self.state.lambdas, _ACCOUNT_DRIFT)
            healthy = restarted >= 0.0
            if healthy:
                self._error_estimate = restarted
        if healthy and self._since_check >= self.check_every:
            self._since_check = 0
            healthy = self.drift() <= self.drift_tolerance
        if not healthy:
            self._refresh_or_defer(statistics=False, broken=not core.is_healthy(
                self.state.variance, self.state.weights))

    def _refresh_or_defer(self, statistics: bool, broken: bool = False) -> None:
        if broken or not self.defer_refreshes:
            self._safe_refresh(statistics or bool(self._pending))
            return
        self._pending = statistics or bool(self._pending)

    @property
    def refresh_pending(self) -> bool:
        """Whether a deferred refresh waits for :meth:`maintain` (``defer_refreshes``)."""
        return self._pending is not None

    def maintain(self) -> bool:
        """Run the refresh deferred by ``defer_refreshes``, if any; returns whether it did."""
        if self._pending is None:
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
        return core.drift(self.window._gram, self.state.variance, self.state.lambdas)

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
        self.state.refresh(self.window.gram_model, self.window.cross_y_model)
        self._pending = None
        self._version += 1
        self.n_refreshes += 1
        self._error_estimate = 1.0 + self._statistics_error
        self._since_check = 0

    # -- criteria (Orr section 5; DESIGN.md §3) -------------------------------------------
    def _summary(self) -> tuple[float, float]:
        """``(yᵀP²y, γ)``, from which every criterion follows.

        Criteria are read many times between two changes of the model (the pruner compares
        against the current GCV at every move), and every change goes through
        ``_after_update`` or ``refresh``, which bump the version; so both numbers are
        computed once per version, in one compiled call.
        """
        version, error, gamma = self._summary_cache
        if version != self._version:
            window, state = self.window, self.state
            error, gamma = core.error_and_gamma(window._gram, window._cross_y,
                                                  state.weights, state.lambdas,
                                                  state.variance, window.yy)
            self._summary_cache = (self._version, error, gamma)
        return error, gamma

    @property
    def training_error(self) -> float:
        """``yᵀP²y = yᵀy − 2wᵀc + wᵀGw`` (clipped at 0 against rounding)."""
        return self._summary()[0]

    @property
    def effective_parameters(self) -> float:
        """γ = tr(SG) = M − Σⱼ λⱼ Sⱼⱼ (Orr eq. 4.10, appendix A.8)."""
        return self._summary()[1]

    def _criterion(self, fn) -> float:
        error, gamma = self._summary()
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
        y = self.window.stored_targets()
        residuals = y - H @ self.state.weights if self.size else y
        diag_p = 1.0 - np.einsum("ij,ij->i", H @ self.state.variance, H) if self.size else 1.0
        diag_p = np.broadcast_to(diag_p, residuals.shape)
        if np.any(diag_p <= _MIN_RESIDUAL_LEVERAGE):
            return math.inf
        return float(np.mean((residuals / diag_p) ** 2))

    def predictive_variance(self, h: np.ndarray, noise_variance: float) -> float:
        """Variance of a prediction at a model row ``h``: ``σ²(1 + hᵀSh)``.

        With the ridge prior ``w ~ N(0, σ²Λ⁻¹)`` the weight posterior covariance is
        ``σ²A⁻¹``, so the predictive variance of a new observation is ``σ² + σ²hᵀA⁻¹h``.
        """
        if not self.size:
            return noise_variance
        return noise_variance * (1.0 + float(h @ self.state.variance @ h))
