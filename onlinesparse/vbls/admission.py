"""The kernel regressor's admission test and the weights after an admission, on one factor.

Tipping and Faul's (2003) inclusion statistic of a candidate basis function φ against the
current model, read from the window statistics: with ``P = G + s·diag⟨α⟩`` the posterior
precision of the model's weights (Ting et al. eq. 5.2 with ``⟨1/ψ_y⟩ → 1/s``; the bias with
a flat prior, ``α_0 = 0``), the marginal covariance of the targets ``C = sI + HA⁻¹Hᵀ`` has
``C⁻¹ = (I − HP⁻¹Hᵀ)/s`` (Woodbury), so

* ``S = φᵀC⁻¹φ = (φᵀφ − kᵀP⁻¹k)/s`` with ``k = Hᵀφ``,
* ``Q = φᵀC⁻¹y = φᵀ(y − Hμ)/s`` with ``μ = P⁻¹c`` the posterior mean, ``c = Hᵀy``,

and ``t² = Q²/S`` is φ's squared t-statistic on the residual with the model's columns
projected out. Everything is in the raw basis ``[1, f_1, …]``: with a flat prior on the bias
the statistic is the same in the kernel regressor's centred basis (the change of basis only
moves the bias), so the raw window statistics serve without re-centring.

One Cholesky factor ``P = LLᵀ`` (O(M³)) and ``L⁻¹K`` for the candidates' ``K = HᵀΦ``
(O(M²C)) give every score. They also give the model's weights after an admission in O(M²):
the new precision ``P⁺ = [[P, k], [kᵀ, φᵀφ + sα]]`` has the factor
``[[L, 0], [lᵀ, d]]`` with ``l = L⁻¹k`` (already computed for the score) and
``d² = φᵀφ + sα − lᵀl = s·S + sα``, so the fixed point of eq. 4.8 for the new precisions,
``P⁺μ⁺ = [c; φᵀy]``, is two triangular solves instead of a new factorisation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from onlinesparse.vbls import _compiled, kernel_batch

__all__ = ["PoolScores", "bordered_mean", "score_pool"]

_TINY = float(np.finfo(float).tiny)


@dataclass(frozen=True)
class PoolScores:
    """The admission statistics of a candidate pool and what the admission reuses.

    ``t2`` Tipping and Faul's ``Q²/S`` per candidate (0 for one inside the model's span),
    ``corr`` ``φᵀ(y − Hμ)``, ``spread`` ``s·S = φᵀφ − kᵀP⁻¹k``; ``factor`` the lower
    Cholesky factor L of P, ``half`` ``L⁻¹K`` (model × candidates)."""

    t2: np.ndarray
    corr: np.ndarray
    spread: np.ndarray
    factor: np.ndarray
    half: np.ndarray


def score_pool(gram: np.ndarray, cross_y: np.ndarray, alpha: np.ndarray, s: float,
               cross: np.ndarray, cross_y_candidates: np.ndarray,
               sq_norms: np.ndarray) -> PoolScores:
    """Tipping and Faul's statistic of every candidate (module docstring), O(M³ + M²C).

    ``gram`` ``G = HᵀH`` and ``cross_y`` ``c = Hᵀy`` of the model's raw columns, ``alpha``
    their precisions (``alpha[0]``, the bias's, is taken as 0: a flat prior), ``s`` the
    noise variance, ``cross`` ``K = HᵀΦ`` of the candidates, ``cross_y_candidates``
    ``Φᵀy`` and ``sq_norms`` ``φᵀφ``. Raises ``LinAlgError`` if P is not positive definite
    even with jitter."""
    m, c = cross.shape
    system = np.array(gram, dtype=float)  # (a copy: the window's block is a view)
    diagonal = system.ravel()[:: m + 1]
    diagonal[1:] += s * alpha[1:]
    # LAPACK directly: at a stream's small M the wrappers cost more than the work.
    factor = kernel_batch.cholesky_with_jitter(system)
    # One triangular solve for L⁻¹[K c]: kᵀμ = kᵀL⁻ᵀL⁻¹c = (L⁻¹k)ᵀ(L⁻¹c).
    both = np.empty((m, c + 1), order="F")
    both[:, :c] = cross
    both[:, c] = cross_y
    solved = lapack.dtrtrs(factor, both, lower=1, overwrite_b=1)[0]
    half = solved[:, :c]
    corr = cross_y_candidates - half.T @ solved[:, c]
    spread = sq_norms - np.einsum("ij,ij->j", half, half)
    t2 = _compiled.pool_scores(corr, spread, sq_norms, s, _TINY)
    return PoolScores(t2, corr, spread, factor, half)


def bordered_mean(pool: PoolScores, best: int, cross_y: np.ndarray, s: float,
                  new_alpha: float) -> np.ndarray | None:
    """The posterior mean ``μ⁺ = P⁺⁻¹[c; φᵀy]`` (raw basis, bias flat) after candidate
    ``best`` of ``pool`` joins the model, last, with precision ``new_alpha``, from the
    pool's factor bordered by one row (module docstring), O(M²). ``cross_y`` is
    ``[c; φᵀy]``, the model's ``Hᵀy`` after the admission. None when the bordered factor
    would not be positive definite."""
    m = pool.factor.shape[0]
    corner = float(pool.spread[best]) + s * new_alpha  # d² = φᵀφ + sα − lᵀl
    if not (corner > 0.0 and math.isfinite(corner)):
        return None
    factor = np.zeros((m + 1, m + 1))
    factor[:m, :m] = pool.factor
    factor[m, :m] = pool.half[:, best]
    factor[m, m] = math.sqrt(corner)
    return lapack.dpotrs(factor, np.asarray(cross_y, dtype=float), lower=1)[0]
