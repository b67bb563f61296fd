"""The exact incremental operations on the ridge state ``S = A⁻¹``, ``w = Sc``, ``λ``.

========================  ======================================  ========================
operation                 formula                                 reference
========================  ======================================  ========================
add / remove a pattern    ``S ← S ∓ uuᵀ/(1 ± hᵀu)``, ``u = Sh``   Orr (1996) A.8, A.11
slide a full window       the same, rank two in one pass          Orr (1996) A.8 + A.11
add a basis function      partitioned inverse                     Orr (1996) A.4
remove a basis function   ``S ← S − sⱼsⱼᵀ/sⱼⱼ`` (λⱼ → ∞)          FGCV App. V
change one λⱼ             rank one, ``Kⱼ = δ/(1 + δsⱼⱼ)``         FGCV App. V
trade a basis function    remove j, add a column in its slot      FGCV App. V + Orr A.4
========================  ======================================  ========================

The weights are ``W = SC``, a column per target (M × K; a single-output model is K = 1):
S depends on the basis and the patterns only, so every operation updates S once and each
target's weights by the same vector, ``W ← W + u·stepᵀ`` with a step per target.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.basis import fit
from onlinesparse.core.health import is_healthy
from onlinesparse.core.linalg import rank_one_update, symmetric_matvec, symmetric_matvec_pair
from onlinesparse.core.statistics import cancellation_ratio

# A pattern whose leverage hᵀSh is this close to 1 carries a direction no other pattern
# supports; removing it would leave HᵀH + Λ singular.
MIN_RESIDUAL_LEVERAGE = 1e-10
# A new column whose Δ = λ + hᵀPh is this small relative to hᵀh + λ is a combination of the
# model's columns (to rounding) and cannot be added without regularisation.
MIN_RELATIVE_DELTA = 1e-12
# Below this hᵀPh/hᵀh the Gram formula for hᵀPh has lost four digits to cancellation, and
# a window model recomputes it from the stored rows (IncrementalRidge._projection).
PROJECT_BELOW = 1e-4

# The slots of slide_window's `out`: 1 − the old pattern's leverage, 1 + hᵀSh of the new
# one, the removal's cancellation ratio, whether S is healthy after it (1.0 / 0.0), and
# the new pattern's hᵀSh before the step.
SLIDE_REMOVAL, SLIDE_ADDITION, SLIDE_CANCELLATION, SLIDE_HEALTHY, SLIDE_LEVERAGE = range(5)

@jit
def sherman_morrison(variance: np.ndarray, weights: np.ndarray, h: np.ndarray,
                     y: np.ndarray, sign: float, min_denominator: float, work: np.ndarray
                     ) -> float:
    """The pattern update of ``RidgeState.add_pattern`` (sign = 1, Orr eq. (A.8)) and
    ``remove_pattern`` (sign = −1, Orr eq. (A.11)), in place; ``y`` the pattern's K
    targets.

    ``u = Sh`` goes to ``work``; the denominator is ``1 + sign·hᵀu``. Returns it; when it is
    not above ``min_denominator`` nothing is changed (the caller raises).
    """
    m = h.shape[0]
    symmetric_matvec(variance, h, m, work)
    hu = 0.0
    for i in range(m):
        hu += h[i] * work[i]
    denom = 1.0 + sign * hu
    if not denom > min_denominator:
        return denom
    coef = -sign / denom
    rank_one_update(variance, work, work, coef)
    for k in range(y.shape[0]):
        hw = 0.0
        for i in range(m):
            hw += h[i] * weights[i, k]
        step = sign * (y[k] - hw) / denom
        for i in range(m):
            weights[i, k] += work[i] * step
    return denom


@jit
def slide_window(gram: np.ndarray, cross_y: np.ndarray, traffic: np.ndarray, n: int,
                 variance: np.ndarray,
                 weights: np.ndarray, m: int, h_new: np.ndarray, y_new: np.ndarray,
                 h_old: np.ndarray, y_old: np.ndarray, min_denominator: float,
                 work: np.ndarray, out: np.ndarray) -> bool:
    """One step of a full window in one call: the oldest pattern leaves the ridge state
    (Orr A.11) and the statistics, the new one enters both (A.8) — what
    ``IncrementalRidge.add_pattern`` does with four calls.

    The two rank-one changes of S are fused into one rank-two pass, and those of G into
    one pass, which halves the memory traffic of the step. With ``u₁ = Sh_old``,
    ``d₁ = 1 − h_oldᵀu₁``, the removal gives ``S₁ = S + u₁u₁ᵀ/d₁``; then
    ``u₂ = S₁h_new = Sh_new + u₁(u₁ᵀh_new)/d₁`` (no second pass over S₁),
    ``d₂ = 1 + h_newᵀu₂`` and ``S₂ = S + u₁u₁ᵀ/d₁ − u₂u₂ᵀ/d₂``; the weights follow A.11 then
    A.8 in O(M).

    ``out`` receives ``[1 − leverage of the old pattern, 1 + hᵀSh of the new one,
    cancellation ratio of the removal, healthy (1/0, see :func:`is_healthy`), the new
    pattern's hᵀSh before the step]`` (the last is the prediction's variance factor). Returns
    False, with nothing changed, when removing the old pattern first would leave
    ``HᵀH + Λ`` singular (the caller then takes the add-first path).
    """
    u_old = work  # S h_old
    u_new = np.empty(m)  # S h_new, then S₁ h_new
    symmetric_matvec_pair(variance, h_old, h_new, m, u_old, u_new)
    leverage = 0.0
    prior = 0.0  # hᵀSh of the new pattern before anything changes
    for i in range(m):
        leverage += h_old[i] * u_old[i]
        prior += h_new[i] * u_new[i]
    removal = 1.0 - leverage
    if not removal > min_denominator:
        return False
    n_targets = y_new.shape[0]
    # A.11: the weights without the old pattern, and u₂ = S₁h_new.
    for k in range(n_targets):
        step = (y_old[k] - fit(h_old, weights, m, k)) / removal
        for i in range(m):
            weights[i, k] -= u_old[i] * step
    u1_h = 0.0
    for i in range(m):
        u1_h += u_old[i] * h_new[i]
    scale = u1_h / removal
    h_u2 = 0.0
    for i in range(m):
        u_new[i] += u_old[i] * scale
        h_u2 += h_new[i] * u_new[i]
    addition = 1.0 + h_u2
    # A.8 for the weights, then S₂ = S + u₁u₁ᵀ/d₁ − u₂u₂ᵀ/d₂ in one pass.
    for k in range(n_targets):
        step = (y_new[k] - fit(h_new, weights, m, k)) / addition
        for i in range(m):
            weights[i, k] += u_new[i] * step
    c_old = 1.0 / removal
    c_new = -1.0 / addition
    for i in range(m):
        a = c_old * u_old[i]
        b = c_new * u_new[i]
        row = variance[i]
        for j in range(m):
            row[j] += a * u_old[j] + b * u_new[j]
    # The statistics: G += h_new h_newᵀ − h_old h_oldᵀ in one pass. The cancellation of
    # the removal is read from the diagonal as it would be after the removal alone.
    worst = cancellation_ratio(gram, h_old, m, True)
    for i in range(n):
        a = h_new[i]
        b = h_old[i]
        row = gram[i]
        traffic[i] += a * a + b * b + 2.0 * abs(row[i])
        for j in range(n):
            row[j] += a * h_new[j] - b * h_old[j]
        for k in range(n_targets):  # (indexed: a view per row costs a refcount pair)
            cross_y[i, k] += a * y_new[k] - b * y_old[k]
    out[SLIDE_REMOVAL] = removal
    out[SLIDE_ADDITION] = addition
    out[SLIDE_CANCELLATION] = worst
    out[SLIDE_HEALTHY] = 1.0 if is_healthy(variance, weights) else 0.0
    out[SLIDE_LEVERAGE] = prior
    return True


@jit
def symmetric_rank_one(variance: np.ndarray, weights: np.ndarray, j: int, coef: float
                       ) -> None:
    """``S += coef·sⱼsⱼᵀ`` and ``W += coef·sⱼ·(row j of W)`` with ``sⱼ`` column j of S,
    taken before the update (``RidgeState.set_lambda``'s rank-one branch)."""
    s_j = variance[j].copy()  # row j of the symmetric S: contiguous
    rank_one_update(variance, s_j, s_j, coef)
    steps = coef * weights[j]
    for i in range(weights.shape[0]):
        for k in range(steps.shape[0]):
            weights[i, k] += s_j[i] * steps[k]


@jit
def lambda_rank_one(variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray, j: int,
                    lam: float) -> float:
    """The rank-one branch of ``RidgeState.set_lambda`` (FGCV appendix V), in place.

    Returns the rounding-error factor ``max(1 + δsⱼⱼ, 1/(1 + δsⱼⱼ))``, or 0 with nothing
    changed when λ falls so far (``−δsⱼⱼ > ½``) that the caller must take the exact
    remove-and-add branch instead.
    """
    delta_lam = lam - lambdas[j]
    denom = 1.0 + delta_lam * variance[j, j]
    if denom < 0.5:
        return 0.0
    symmetric_rank_one(variance, weights, j, -delta_lam / denom)
    lambdas[j] = lam
    return max(denom, 1.0 / denom)


@jit
def without_basis(variance: np.ndarray, vectors: np.ndarray, j: int) -> None:
    """The λⱼ → ∞ downdate applied to the columns of ``vectors`` (M × K), in place:
    ``v ← v − sⱼvⱼ/sⱼⱼ`` with ``sⱼ`` row j of S, and ``vⱼ ← 0`` (FGCV appendix V with
    Kⱼ = 1/sⱼⱼ); a single vector is passed as M × 1 (``v.reshape((m, 1))``).

    On ``V = W`` it gives the weights of the model without basis function j,
    ``W' = W − sⱼ(row j of W)/sⱼⱼ``; on ``v = Sx`` it gives ``S'x`` with
    ``S' = S − sⱼsⱼᵀ/sⱼⱼ``, without forming S'. (The matrix form is
    :func:`symmetric_rank_one` with ``coef = −1/sⱼⱼ``.)"""
    s_j = variance[j]  # row j of the symmetric S: contiguous
    for k in range(vectors.shape[1]):
        ratio = vectors[j, k] / s_j[j]
        for i in range(vectors.shape[0]):
            vectors[i, k] -= s_j[i] * ratio
        vectors[j, k] = 0.0


@jit
def insert_column(variance: np.ndarray, weights: np.ndarray, l_vec: np.ndarray,
                  delta: float, w_new: np.ndarray, out_variance: np.ndarray,
                  out_weights: np.ndarray, slot: int) -> None:
    """Orr (1996) A.4, the partitioned inverse of a model with one more column: with
    ``l = Sg`` and ``Δ = λ + hᵀPh``, ``S ← [[S + llᵀ/Δ, −l/Δ], [−lᵀ/Δ, 1/Δ]]`` and
    ``W ← [W − l·w_newᵀ; w_newᵀ]`` (``w_new``: the new column's weight for each target),
    the new column at index ``slot``.

    ``slot = m`` (the state's size) appends into arrays one larger; ``slot = j < m``
    writes in place into the row and column of a basis function just removed (its
    ``lⱼ = 0``, so the block update leaves them alone before they are overwritten): the
    second half of a trade."""
    m = l_vec.shape[0]
    inv_delta = 1.0 / delta
    for i in range(m):
        source = variance[i]
        row = out_variance[i]
        li = inv_delta * l_vec[i]
        for k in range(m):
            row[k] = source[k] + li * l_vec[k]
        for k in range(w_new.shape[0]):
            out_weights[i, k] = weights[i, k] - l_vec[i] * w_new[k]
    for i in range(m):
        value = -l_vec[i] / delta
        out_variance[i, slot] = value
        out_variance[slot, i] = value
    out_variance[slot, slot] = inv_delta
    out_weights[slot] = w_new


@jit
def add_basis(variance: np.ndarray, weights: np.ndarray, g: np.ndarray, g_jj: float,
              c_j: np.ndarray, lam: float, projected_hph: float, projected_yph: np.ndarray,
              min_relative: float, project_below: float, out_variance: np.ndarray,
              out_weights: np.ndarray) -> tuple[float, int]:
    """Add a column (Orr (1996) A.4, :func:`insert_column`) into arrays one larger than
    the state's: ``g = Hᵀh`` over the model, ``g_jj = hᵀh``, ``c_j = hᵀyₖ`` per target;
    ``l = Sg``, ``Δ = λ + g_jj − gᵀl`` (or ``λ + projected_hph`` when the caller computed
    ``hᵀPh`` from the stored rows; NaN otherwise) and ``w_new = (c_j − Wᵀg)/Δ`` (or
    ``projected_yph/Δ``).

    Returns ``(Δ, status)``: 1 when done; with nothing written, 0 when
    ``Δ ≤ min_relative·(g_jj + λ)`` or Δ is not finite (the column is in the span of the
    model's to rounding) and −1 when ``project_below`` > 0 and the Gram formula
    ``g_jj − gᵀl`` is below ``project_below·g_jj`` (it has lost that many digits: the
    caller computes ``hᵀPh`` from the stored rows, ``IncrementalRidge._projection``, and
    calls again with it).
    """
    m = weights.shape[0]
    # (BLAS products, as NumPy's `S @ g` and `g @ w`: for a nearly dependent column the
    # result carries cond(A)·ε, and these orders are the ones the tests were tuned on.)
    l_vec = np.dot(variance, g) if m else np.zeros(0)
    projected = not math.isnan(projected_hph)
    if projected:
        delta = lam + projected_hph
    else:
        g_l = np.dot(g, l_vec) if m else 0.0
        if project_below > 0.0 and g_jj - g_l < project_below * g_jj:
            return lam + g_jj - g_l, -1
        delta = lam + g_jj - g_l
    if not (delta > min_relative * (g_jj + lam)) or not math.isfinite(delta):
        return delta, 0
    if projected:
        w_new = projected_yph / delta
    else:
        w_new = (c_j - np.dot(g, weights)) / delta if m else c_j / delta
    insert_column(variance, weights, l_vec, delta, w_new, out_variance, out_weights, m)
    return delta, 1


@jit
def remove_basis(variance: np.ndarray, weights: np.ndarray, j: int,
                 out_variance: np.ndarray, out_weights: np.ndarray) -> None:
    """Remove basis function j (FGCV appendix V with λⱼ → ∞): the downdate
    ``S ← S − sⱼsⱼᵀ/sⱼⱼ``, ``w ← w − sⱼwⱼ/sⱼⱼ`` in place (:func:`symmetric_rank_one`),
    then the kept block, row and column j dropped, into arrays one smaller. The input
    arrays are consumed."""
    m = weights.shape[0]
    symmetric_rank_one(variance, weights, j, -1.0 / variance[j, j])
    a = 0
    for i in range(m):
        if i == j:
            continue
        source = variance[i]
        row = out_variance[a]
        for k in range(j):  # (two loops without a test inside: they vectorise)
            row[k] = source[k]
        for k in range(j + 1, m):
            row[k - 1] = source[k]
        out_weights[a] = weights[i]
        a += 1


@jit
def replace_basis(variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray, j: int,
                  g: np.ndarray, g_kk: float, c_k: np.ndarray, lam: float,
                  min_relative: float, project_below: float, work: np.ndarray) -> float:
    """FGCV's trade in place: remove basis function j (λⱼ → ∞, FGCV appendix V) and add a
    column in its slot (Orr (1996) A.4).

    The new column's ``l = S'g`` and the weights ``w'`` of the model without j come from
    :func:`without_basis` (``g`` is its Gram row over the model, entry j ignored), so
    that ``Δ = λ + g_kk − gᵀl`` and the column's weights ``(c_k − W'ᵀg)/Δ`` are known
    before anything changes; then the downdate (:func:`symmetric_rank_one`) and
    :func:`insert_column` into slot j.

    Returns the error factor ``(g_kk + λ)/Δ``; or, with nothing changed, 0 when
    ``Δ ≤ min_relative·(g_kk + λ)`` (in the span of the others to rounding) and −1 when
    ``Δ − λ < project_below·g_kk`` (the caller recomputes Δ from the stored rows).
    """
    m = weights.shape[0]
    l_vec = work  # S g with g's entry j taken as 0, then S'g
    for i in range(m):
        l_vec[i] = 0.0
    for i in range(m):
        if i == j:
            continue
        gi = g[i]
        row = variance[i]
        for k in range(m):
            l_vec[k] += gi * row[k]
    without_basis(variance, l_vec.reshape((m, 1)), j)
    w_rem = weights.copy()
    without_basis(variance, w_rem, j)
    g_l = 0.0
    g_w = np.zeros(weights.shape[1])
    for i in range(m):
        if i != j:
            g_l += g[i] * l_vec[i]
            g_w += g[i] * w_rem[i]
    delta = lam + g_kk - g_l
    if not (delta > min_relative * (g_kk + lam)) or not math.isfinite(delta):
        return 0.0
    if delta - lam < project_below * g_kk:
        return -1.0
    symmetric_rank_one(variance, weights, j, -1.0 / variance[j, j])
    insert_column(variance, weights, l_vec, delta, (c_k - g_w) / delta, variance, weights,
                  j)
    lambdas[j] = lam
    return (g_kk + lam) / delta
