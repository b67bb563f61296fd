"""The ridge state of the Orr family: ``S = A⁻¹ = (G + Λ)⁻¹``, ``w = Sc`` and one λⱼ per
basis function, with the exact incremental operations of Orr (1996) appendix A.7 and FGCV
appendix V on them:

========================  =====================================  ==========================
operation                 formula                                reference
========================  =====================================  ==========================
add a pattern             ``S ← S − uuᵀ/(1 + hᵀu)``, ``u = Sh``  Orr eq. (A.8)
remove a pattern          ``S ← S + uuᵀ/(1 − hᵀu)``              Orr eq. (A.11)
add a basis function      partitioned inverse                    Orr eq. (A.4), FGCV (48)
remove a basis function   ``S ← S − sⱼsⱼᵀ/sⱼⱼ`` (λⱼ → ∞)         FGCV App. V, Kⱼ = 1/sⱼⱼ
change one λⱼ             rank one, ``Kⱼ = (sⱼⱼ + 1/δ)⁻¹``        FGCV App. V
========================  =====================================  ==========================

Each method validates its arguments and calls the one compiled implementation of its
operation in :mod:`onlinesparse.core.updates`; it returns the operation's rounding-error
account for :class:`~onlinesparse.orr.ridge.IncrementalRidge`, which owns the state.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from onlinesparse import core

__all__ = ["IllConditionedError", "RidgeState"]


class IllConditionedError(np.linalg.LinAlgError):
    """``HᵀH + Λ`` is (numerically) singular, so the requested model does not exist.

    A subclass of :class:`numpy.linalg.LinAlgError` and hence of :class:`ValueError`.
    """


def _columns(value: float | np.ndarray, n_targets: int, what: str) -> np.ndarray:
    """A per-target number (``y``, ``hᵀy``) as the compiled core takes it: a vector of K
    (a single-output caller may pass a number)."""
    values = np.asarray(value, dtype=float).reshape(-1)
    if values.shape[0] != n_targets:
        raise ValueError(f"expected {what} for {n_targets} targets, got {values.shape[0]}")
    return values


class RidgeState:
    """Variance matrix, weights and regularisation parameters of a linear model.

    The state knows nothing about the data: every operation receives the numbers it needs
    (a row ``h``, a Gram column ``g``…), which :class:`IncrementalRidge` reads from the window
    statistics. Operations either complete or raise before changing anything.
    """

    def __init__(self, n_targets: int = 1) -> None:
        self.variance = np.zeros((0, 0))
        self.weights = np.zeros((0, n_targets))  # W: a column per target
        self.lambdas = np.zeros(0)

    @property
    def size(self) -> int:
        return self.weights.shape[0]

    @property
    def n_targets(self) -> int:
        return self.weights.shape[1]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(S, w, λ)``, in the order the compiled core takes them."""
        return self.variance, self.weights, self.lambdas

    def adopt(self, variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray) -> None:
        """Take arrays the compiled core wrote a resized state into (an addition or a
        deletion made in a compiled call) as the state."""
        self.variance, self.weights, self.lambdas = variance, weights, lambdas

    # -- patterns (Orr A.7.3, A.7.4) -------------------------------------------------------
    def add_pattern(self, h: np.ndarray, y: np.ndarray) -> tuple[float, float]:
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
        y = _columns(y, self.n_targets, "y")
        denom = core.sherman_morrison(self.variance, self.weights, h, y, 1.0, -math.inf,
                                        np.empty(self.size))
        return 1.0 / denom, denom

    def remove_pattern(self, h: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """Orr eq. (A.11): ``S ← S + uuᵀ/(1 − hᵀu)``; ``w ← w − u(y − hᵀw)/(1 − hᵀu)``.

        Raises :class:`IllConditionedError` (state unchanged) when the pattern's leverage is 1
        to rounding: without it ``HᵀH + Λ`` would be singular. Both error factors are
        ``1/(1 − hᵀSh)``: the denominator is a difference.
        """
        if self.size == 0:
            return 1.0, 0.0
        # The compiled loop changes nothing when the denominator fails the test.
        y = _columns(y, self.n_targets, "y")
        denom = core.sherman_morrison(self.variance, self.weights, h, y, -1.0,
                                        core.MIN_RESIDUAL_LEVERAGE, np.empty(self.size))
        if not denom > core.MIN_RESIDUAL_LEVERAGE:
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
    def add_basis(self, g: np.ndarray, g_jj: float, c_j: np.ndarray, lam: float,
                  projection: tuple[float, np.ndarray] | None = None,
                  project_below: float = 0.0
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
        c_j = _columns(c_j, self.n_targets, "hᵀy")
        variance, weights = np.empty((m + 1, m + 1)), np.empty((m + 1, self.n_targets))
        hph, yph = projection if projection is not None else (math.nan, c_j)
        delta, status = core.add_basis(self.variance, self.weights, g, g_jj, c_j, lam,
                                         hph, yph, core.MIN_RELATIVE_DELTA, project_below,
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
        self.check_index(j)
        m = self.size
        variance, weights = np.empty((m - 1, m - 1)), np.empty((m - 1, self.n_targets))
        core.remove_basis(self.variance, self.weights, j, variance, weights)
        self.variance, self.weights = variance, weights
        self.lambdas = np.delete(self.lambdas, j)
        return 1.0, 1.0

    def set_lambda(self, j: int, lam: float, g: np.ndarray, g_jj: float, c_j: np.ndarray
                   ) -> tuple[float, float]:
        """Change λⱼ, FGCV App. V re-estimation: with ``δ = λ_new − λ_old`` and
        ``Kⱼ = δ/(1 + δsⱼⱼ)``, ``S ← S − Kⱼsⱼsⱼᵀ`` and ``w ← w − Kⱼwⱼsⱼ``.

        When λ falls by a lot (``−δ·sⱼⱼ > ½``) the denominator ``1 + δsⱼⱼ`` is a difference
        of nearly equal numbers, so the column is instead removed and added back in place
        (Orr eq. (A.4) on ``S' = S − sⱼsⱼᵀ/sⱼⱼ``), which is exact whatever the change. ``g``,
        ``g_jj`` and ``c_j`` are the column's Gram column, squared norm and ``hⱼᵀy``.
        """
        self.check_index(j)
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
        c_j = _columns(c_j, self.n_targets, "hᵀy")
        amplification = core.replace_basis(self.variance, self.weights, self.lambdas, j, g,
                                           g_jj, c_j, lam, core.MIN_RELATIVE_DELTA, 0.0,
                                           np.empty(self.size))
        if amplification == 0.0:
            raise IllConditionedError(
                f"with λ = {lam:g} basis function {j} is a combination of the others")
        return amplification, amplification

    def replace_basis(self, j: int, g: np.ndarray, g_kk: float, c_k: np.ndarray, lam: float
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
        self.check_index(j)
        if not (lam >= 0.0 and math.isfinite(lam)):
            raise ValueError(f"λ must be finite and ≥ 0, got {lam}")
        amplification = core.replace_basis(self.variance, self.weights, self.lambdas, j, g,
                                             g_kk, _columns(c_k, self.n_targets, "hᵀy"), lam,
                                             core.MIN_RELATIVE_DELTA,
                                             core.PROJECT_BELOW, np.empty(self.size))
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
        core.swap_rows(self.weights, i, j)
        lambdas = self.lambdas
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
        self.weights = np.ascontiguousarray(self.variance @ cross_y)

    def check_index(self, j: int) -> None:
        if not (isinstance(j, int | np.integer) and 0 <= j < self.size):
            raise ValueError(f"basis index {j!r} is not in the model (it has {self.size})")
