"""Compiled inner loops of the per-sample path.

Every per-sample operation of the Orr family is a handful of O(M²) loops over matrices of
about a hundred rows. Written with NumPy each loop is one or two calls, but each call costs
microseconds of interpreter and allocation overhead (``np.outer`` alone allocates an M × M
temporary), so at M = 100 a sample spent ~90 % of its time outside arithmetic. These
functions are the same loops compiled once by numba (``cache=True``: the machine code is
kept next to this file and reused by later processes) and run in place, without
temporaries.

This module holds loops, not mathematics: each function's docstring names the operation
of the numerical core it serves, whose docstring carries the formula and its reference
(Orr's appendix equations, FGCV's appendices). ``fastmath`` stays off so that results are
reproducible to the last bit and NaN / inf behave as IEEE says; the loops are written row
by row over C-ordered arrays so that the inner loop runs over contiguous memory.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = [
    "profile", "evaluate_rows", "nearest_sq_distance", "symmetric_matvec",
    "symmetric_matvec_pair", "rank_one_update",
    "sherman_morrison", "symmetric_rank_one", "gram_rank_one", "cancellation_ratio",
    "slide_window", "new_column", "refresh_column", "rolling_refresh", "drift",
    "condition_bound", "measured_estimate", "is_healthy", "training_error",
    "error_and_gamma", "basis_quantities", "candidate_quantities", "swap_symmetric",
    "swap_rows", "swap_columns", "gcv_of_delta", "optimal_lambda",
    "basis_optimum", "candidate_optima", "lambda_rank_one", "basis_move", "mirror_lower",
    "least_useful", "replace_basis", "basis_optima", "running_mean", "inner", "predict_mean",
    "stream_sample", "uev", "add_basis", "remove_basis", "settle", "account_move", "model_budget",
]

_jit = numba.njit(cache=True, nogil=True)

_EPS = float(np.finfo(np.float64).eps)

# Column kinds, as in :mod:`onlinesparse.kernels` (kept equal by a test).
_CONSTANT, _LINEAR, _GAUSSIAN, _MULTIQUADRIC, _INVERSE_MULTIQUADRIC, _CAUCHY = 0, 1, 2, 3, 4, 5


# -- basis functions (kernels.py) ---------------------------------------------------------
@_jit
def profile(kind: int, z: float) -> float:
    """φ(z) of one radial type at ``z = ‖x − c‖²/r²`` (the table of Orr A.3 in kernels.py)."""
    if kind == _GAUSSIAN:
        return math.exp(-z)
    if kind == _MULTIQUADRIC:
        return math.sqrt(1.0 + z)
    if kind == _INVERSE_MULTIQUADRIC:
        return 1.0 / math.sqrt(1.0 + z)
    return 1.0 / (1.0 + z)  # Cauchy


@_jit
def profile_array(kind: int, z: np.ndarray, out: np.ndarray) -> None:
    """:func:`profile` elementwise over a flat array."""
    for i in range(z.shape[0]):
        out[i] = profile(kind, z[i])


@_jit
def evaluate_rows(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                  features: np.ndarray, X: np.ndarray, start: int, stop: int,
                  out: np.ndarray) -> None:
    """``out[i, k − start]`` = value of column k at input ``X[i]`` (``Basis.evaluate``)."""
    d = X.shape[1]
    for i in range(X.shape[0]):
        for k in range(start, stop):
            kind = kinds[k]
            if kind == _CONSTANT:
                value = 1.0
            elif kind == _LINEAR:
                value = X[i, features[k]]
            else:
                z = 0.0
                for f in range(d):
                    diff = X[i, f] - centres[k, f]
                    z += diff * diff
                value = profile(kind, z * inv_r2[k])
            out[i, k - start] = value


@_jit
def nearest_sq_distance(kinds: np.ndarray, centres: np.ndarray, stop: int,
                        x: np.ndarray) -> float:
    """Smallest ``‖x − c‖²`` over the radial columns ``0 … stop−1`` (∞ if there are none):
    the buffer manager's novelty test."""
    best = math.inf
    d = x.shape[0]
    for k in range(stop):
        if kinds[k] < _GAUSSIAN:
            continue
        z = 0.0
        for f in range(d):
            diff = x[f] - centres[k, f]
            z += diff * diff
        if z < best:
            best = z
    return best


# -- the buffer manager (buffer.py) -------------------------------------------------------
@_jit
def least_useful(merit: np.ndarray, ids: np.ndarray, start: int, stop: int,
                 protected: np.ndarray) -> int:
    """Position in ``start … stop−1`` of the column ``BufferManager._evict`` drops, or −1
    when every one is protected (its id is in ``protected``).

    The order is ``(merit, never evaluated, id)``: the lowest GCV verdict first; a column
    never evaluated (NaN) counts as 0 but goes after an evaluated one of equal merit;
    among equals the oldest (lowest id).
    """
    best = -1
    best_value = math.inf
    best_unseen = True
    best_id = 0
    for position in range(start, stop):
        column_id = ids[position]
        is_protected = False
        for k in range(protected.shape[0]):
            if protected[k] == column_id:
                is_protected = True
                break
        if is_protected:
            continue
        value = merit[position]
        unseen = value != value
        if unseen:
            value = 0.0
        if best < 0 or value < best_value or (value == best_value and (
                (not unseen and best_unseen)
                or (unseen == best_unseen and column_id < best_id))):
            best = position
            best_value = value
            best_unseen = unseen
            best_id = column_id
    return best


# -- window statistics (window.py) --------------------------------------------------------
@_jit
def new_column(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
               features: np.ndarray, XT: np.ndarray, y: np.ndarray, HT: np.ndarray,
               gram: np.ndarray, cross_y: np.ndarray, i: int, n: int, head: int,
               n_stored: int, factor: float) -> None:
    """The statistics of column ``i`` of the basis (just written there, ``i < n``) over
    the stored ring of patterns (``WindowStatistics.add_column`` / ``replace_column``):
    its values go to line ``i`` of ``HT``, its cross products with the ``n`` tracked
    columns (itself included) to row and column ``i`` of the Gram matrix, ``φᵀy`` to
    ``cross_y[i]``. With forgetting, a pattern of age a weighs ``factor**a``.

    The values are computed for every slot of the ring (``XT`` holds the inputs feature
    by feature, so each pass is over contiguous memory and vectorises; a slot that holds
    no pattern is weighted 0 below), each squared distance summed over the inputs in
    order, as :func:`evaluate_rows` does. The sums are order-free: a full window is
    walked in storage order, and the products with the tracked columns are one
    matrix-vector product over contiguous lines of ``HT``.
    """
    cap = y.shape[0]
    line = HT[i]
    kind = kinds[i]
    full = n_stored == cap
    if kind == _CONSTANT:
        for slot in range(cap):
            line[slot] = 1.0
    elif kind == _LINEAR:
        line[:] = XT[features[i]]
    else:
        centre = centres[i]
        z = np.zeros(cap)
        for f in range(XT.shape[0]):
            inputs = XT[f]
            c = centre[f]
            for slot in range(cap):
                diff = inputs[slot] - c
                z[slot] += diff * diff
        scale = inv_r2[i]
        for slot in range(cap):
            line[slot] = profile(kind, z[slot] * scale)
    if factor == 1.0 and full:
        # Every slot holds an unweighted pattern: the weights are the values themselves.
        cross = np.dot(HT[:n], line)
        with_y = np.dot(line, y)
    else:
        weighted = np.zeros(cap)
        with_y = 0.0
        for t in range(n_stored):
            slot = (head + t) % cap
            weight = line[slot] if factor == 1.0 else (
                line[slot] * factor ** (n_stored - 1 - t))
            weighted[slot] = weight
            with_y += weight * y[slot]
        cross = np.dot(HT[:n], weighted)
    for k in range(n):
        gram[k, i] = cross[k]
        gram[i, k] = cross[k]
    cross_y[i] = with_y


@_jit
def refresh_column(HT: np.ndarray, y: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                   n: int, i: int) -> None:
    """Recompute column ``i``'s statistics from the stored rows of a full window
    (``WindowStatistics.refresh_step``): row and column ``i`` of the Gram matrix and
    ``φᵢᵀy``, with every slot of the ring holding a pattern. One matrix-vector product
    over contiguous lines of ``HT``, as in :func:`new_column`."""
    line = HT[i]
    cross = np.dot(HT[:n], line)
    for k in range(n):
        gram[k, i] = cross[k]
        gram[i, k] = cross[k]
    cross_y[i] = np.dot(line, y)


@_jit
def rolling_refresh(HT: np.ndarray, y: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                    stamps: np.ndarray, n: int, n_seen: int, credit: float,
                    period: int) -> tuple[float, float, int]:
    """One pattern's share of the rolling refresh (``WindowStatistics.refresh_step``, whose
    docstring gives the rule): ``n/period`` columns' worth of credit, and for each whole
    column owed, the stalest column (lowest stamp) recomputed by :func:`refresh_column`.

    Returns ``(credit left, yᵀy recomputed, pattern count since which every column is
    exact)``, the last two ``(nan, −1)`` when no column was due.
    """
    credit += n / period
    if credit < 1.0:
        return credit, math.nan, -1
    while credit >= 1.0:
        credit -= 1.0
        i = np.argmin(stamps[:n])
        refresh_column(HT, y, gram, cross_y, n, i)
        stamps[i] = n_seen
    return credit, np.dot(y, y), stamps[:n].min()


@_jit
def gram_rank_one(gram: np.ndarray, cross_y: np.ndarray, n: int, h: np.ndarray, y: float,
                  sign: float) -> None:
    """``G[:n, :n] += sign·hhᵀ`` and ``c[:n] += sign·y·h``: a pattern enters (sign = 1) or
    leaves (sign = −1) the statistics (``WindowStatistics.push`` / ``pop_oldest``)."""
    for i in range(n):
        hi = sign * h[i]
        row = gram[i]
        for j in range(n):
            row[j] += hi * h[j]
        cross_y[i] += hi * y


@_jit
def cancellation_ratio(gram: np.ndarray, h: np.ndarray, m: int) -> float:
    """``max hᵢ²/Gᵢᵢ`` over the model's columns, where ``Gᵢᵢ > 0`` (the rounding-error
    account of subtracting a pattern, ``IncrementalRidge._statistics_cancellation``)."""
    worst = 0.0
    for i in range(m):
        left = gram[i, i]
        if left > 0.0:
            ratio = h[i] * h[i] / left
            if ratio > worst:
                worst = ratio
    return worst


@_jit
def swap_symmetric(matrix: np.ndarray, i: int, j: int, n: int) -> None:
    """Exchange rows i, j and columns i, j of the leading n × n block in place."""
    for k in range(n):
        tmp = matrix[i, k]
        matrix[i, k] = matrix[j, k]
        matrix[j, k] = tmp
    for k in range(n):
        tmp = matrix[k, i]
        matrix[k, i] = matrix[k, j]
        matrix[k, j] = tmp


@_jit
def swap_columns(gram: np.ndarray, HT: np.ndarray, cross_y: np.ndarray, ids: np.ndarray,
                 merit: np.ndarray, stamps: np.ndarray, kinds: np.ndarray,
                 inv_r2: np.ndarray, features: np.ndarray, centres: np.ndarray, i: int,
                 j: int, n: int) -> None:
    """Exchange tracked columns i and j everywhere they live
    (``WindowStatistics.swap_columns``): the symmetric Gram matrix, the stored rows, the
    per-column numbers and the basis description (kind, centre, radius, input)."""
    swap_symmetric(gram, i, j, n)
    # Unused slots of the ring hold zeros or stale rows: swapping them too is harmless.
    swap_rows(HT, i, j)
    cross_y[i], cross_y[j] = cross_y[j], cross_y[i]
    ids[i], ids[j] = ids[j], ids[i]
    merit[i], merit[j] = merit[j], merit[i]
    stamps[i], stamps[j] = stamps[j], stamps[i]
    kinds[i], kinds[j] = kinds[j], kinds[i]
    inv_r2[i], inv_r2[j] = inv_r2[j], inv_r2[i]
    features[i], features[j] = features[j], features[i]
    swap_rows(centres, i, j)


@_jit
def swap_rows(matrix: np.ndarray, i: int, j: int) -> None:
    """Exchange rows i and j of a 2-D array in place."""
    for k in range(matrix.shape[1]):
        tmp = matrix[i, k]
        matrix[i, k] = matrix[j, k]
        matrix[j, k] = tmp


# -- ridge state (ridge.py) ---------------------------------------------------------------
@_jit
def symmetric_matvec(matrix: np.ndarray, x: np.ndarray, m: int, out: np.ndarray) -> None:
    """``out[:m] = A[:m, :m] x`` for a symmetric A, as a sum of rows ``Σᵢ xᵢ A[i]``: the
    inner loop is then an axpy over contiguous memory, which vectorises, where a row-times-
    vector dot product is a serial reduction (IEEE order forbids reassociating it)."""
    for j in range(m):
        out[j] = 0.0
    for i in range(m):
        xi = x[i]
        row = matrix[i]
        for j in range(m):
            out[j] += xi * row[j]


@_jit
def mirror_lower(matrix: np.ndarray) -> None:
    """Copy the strict lower triangle onto the upper one in place (LAPACK's symmetric
    routines fill one triangle: ``RidgeState.refresh``)."""
    for i in range(matrix.shape[0]):
        for j in range(i):
            matrix[j, i] = matrix[i, j]


@_jit
def symmetric_matvec_pair(matrix: np.ndarray, x: np.ndarray, z: np.ndarray, m: int,
                          out_x: np.ndarray, out_z: np.ndarray) -> None:
    """``out_x = A x`` and ``out_z = A z`` for a symmetric A in one sweep over its rows
    (:func:`symmetric_matvec` twice, at half the memory traffic)."""
    for j in range(m):
        out_x[j] = 0.0
        out_z[j] = 0.0
    for i in range(m):
        xi = x[i]
        zi = z[i]
        row = matrix[i]
        for j in range(m):
            out_x[j] += xi * row[j]
            out_z[j] += zi * row[j]


@_jit
def rank_one_update(matrix: np.ndarray, u: np.ndarray, v: np.ndarray, coef: float) -> None:
    """``matrix += coef·uvᵀ`` in place."""
    for i in range(u.shape[0]):
        ui = coef * u[i]
        row = matrix[i]
        for j in range(v.shape[0]):
            row[j] += ui * v[j]


@_jit
def symmetric_rank_one(variance: np.ndarray, weights: np.ndarray, j: int, coef: float
                       ) -> None:
    """``S += coef·sⱼsⱼᵀ`` and ``w += coef·wⱼ·sⱼ`` with ``sⱼ`` column j of S, taken before
    the update (``RidgeState.set_lambda``'s rank-one branch)."""
    s_j = variance[j].copy()  # row j of the symmetric S: contiguous
    rank_one_update(variance, s_j, s_j, coef)
    step = coef * weights[j]
    for i in range(weights.shape[0]):
        weights[i] += s_j[i] * step


@_jit
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


@_jit
def replace_basis(variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray, j: int,
                  g: np.ndarray, g_kk: float, c_k: float, lam: float, min_relative: float,
                  project_below: float, work: np.ndarray) -> float:
    """``RidgeState.replace_basis`` in place: remove basis function j (λⱼ → ∞, FGCV
    appendix V) and add a column in its slot (Orr A.4), in one rank-two pass over S.

    With ``S' = S − sⱼsⱼᵀ/sⱼⱼ`` and ``w' = w − sⱼwⱼ/sⱼⱼ`` (never formed), the new column's
    ``l = S'g = Sg − sⱼ(Sg)ⱼ/sⱼⱼ`` (``g`` is its Gram row over the model, entry j ignored),
    ``Δ = λ + g_kk − gᵀl``, its weight ``(c_k − gᵀw')/Δ``; then
    ``S ← S − sⱼsⱼᵀ/sⱼⱼ + llᵀ/Δ`` with row and column j set to ``−l/Δ`` and ``1/Δ``, and
    ``w ← w' − l·w_new`` with ``w_new`` at j.

    Returns the error factor ``(g_kk + λ)/Δ``; or, with nothing changed, 0 when
    ``Δ ≤ min_relative·(g_kk + λ)`` (in the span of the others to rounding) and −1 when
    ``Δ − λ < project_below·g_kk`` (the caller recomputes Δ from the stored rows).
    """
    m = weights.shape[0]
    s_jj = variance[j, j]
    s_j = variance[j].copy()  # row j of the symmetric S: contiguous
    u = work  # S g, with g's entry j taken as 0
    for i in range(m):
        u[i] = 0.0
    for i in range(m):
        if i == j:
            continue
        gi = g[i]
        row = variance[i]
        for k in range(m):
            u[k] += gi * row[k]
    correction = u[j] / s_jj
    ratio = weights[j] / s_jj
    l_vec = np.empty(m)
    g_l = 0.0
    g_w = 0.0
    for i in range(m):
        l_vec[i] = u[i] - s_j[i] * correction
        if i != j:
            g_l += g[i] * l_vec[i]
            g_w += g[i] * (weights[i] - s_j[i] * ratio)
    l_vec[j] = 0.0
    delta = lam + g_kk - g_l
    if not (delta > min_relative * (g_kk + lam)) or not math.isfinite(delta):
        return 0.0
    if delta - lam < project_below * g_kk:
        return -1.0
    w_new = (c_k - g_w) / delta
    inv_s = 1.0 / s_jj
    inv_delta = 1.0 / delta
    for i in range(m):
        row = variance[i]
        a = inv_s * s_j[i]
        b = inv_delta * l_vec[i]
        for k in range(m):
            row[k] += b * l_vec[k] - a * s_j[k]
    for i in range(m):
        variance[i, j] = -l_vec[i] * inv_delta
        variance[j, i] = -l_vec[i] * inv_delta
        weights[i] -= s_j[i] * ratio + l_vec[i] * w_new
    variance[j, j] = inv_delta
    weights[j] = w_new
    lambdas[j] = lam
    return (g_kk + lam) * inv_delta


@_jit
def add_basis(variance: np.ndarray, weights: np.ndarray, g: np.ndarray, g_jj: float,
              c_j: float, lam: float, projected_hph: float, projected_yph: float,
              min_relative: float, project_below: float, out_variance: np.ndarray,
              out_weights: np.ndarray) -> tuple[float, int]:
    """``RidgeState.add_basis`` (Orr eq. (A.4)) into arrays one larger than the state's:
    with ``l = Sg``, ``Δ = λ + g_jj − gᵀl`` (or ``λ + projected_hph`` when the caller
    computed ``hᵀPh`` from the stored rows; NaN otherwise),
    ``out_variance = [[S + llᵀ/Δ, −l/Δ], [−lᵀ/Δ, 1/Δ]]`` and
    ``out_weights = [w − l·w_new, w_new]`` with ``w_new = (c_j − gᵀw)/Δ`` (or
    ``projected_yph/Δ``), in one pass over S.

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
        w_new = (c_j - (np.dot(g, weights) if m else 0.0)) / delta
    inv_delta = 1.0 / delta
    for i in range(m):
        source = variance[i]
        row = out_variance[i]
        li = inv_delta * l_vec[i]
        for k in range(m):
            row[k] = source[k] + li * l_vec[k]
        row[m] = -l_vec[i] / delta
        out_variance[m, i] = row[m]
        out_weights[i] = weights[i] - l_vec[i] * w_new
    out_variance[m, m] = inv_delta
    out_weights[m] = w_new
    return delta, 1


@_jit
def remove_basis(variance: np.ndarray, weights: np.ndarray, j: int,
                 out_variance: np.ndarray, out_weights: np.ndarray) -> None:
    """``RidgeState.remove_basis`` (FGCV appendix V with λⱼ → ∞) into arrays one smaller:
    the kept block of ``S − sⱼsⱼᵀ/sⱼⱼ`` and ``w − sⱼwⱼ/sⱼⱼ``, row and column j dropped, in
    one pass over S."""
    m = weights.shape[0]
    s_j = variance[j].copy()  # row j of the symmetric S: contiguous
    coef = -1.0 / s_j[j]
    ratio = weights[j] / s_j[j]
    a = 0
    for i in range(m):
        if i == j:
            continue
        source = variance[i]
        row = out_variance[a]
        si = coef * s_j[i]
        for k in range(j):  # (two loops without a test inside: they vectorise)
            row[k] = source[k] + si * s_j[k]
        for k in range(j + 1, m):
            row[k - 1] = source[k] + si * s_j[k]
        out_weights[a] = weights[i] - s_j[i] * ratio
        a += 1


@_jit
def sherman_morrison(variance: np.ndarray, weights: np.ndarray, h: np.ndarray, y: float,
                     sign: float, min_denominator: float, work: np.ndarray) -> float:
    """The pattern update of ``RidgeState.add_pattern`` (sign = 1, Orr eq. (A.8)) and
    ``remove_pattern`` (sign = −1, Orr eq. (A.11)), in place.

    ``u = Sh`` goes to ``work``; the denominator is ``1 + sign·hᵀu``. Returns it; when it is
    not above ``min_denominator`` nothing is changed (the caller raises).
    """
    m = h.shape[0]
    symmetric_matvec(variance, h, m, work)
    hu = 0.0
    hw = 0.0
    for i in range(m):
        hu += h[i] * work[i]
        hw += h[i] * weights[i]
    denom = 1.0 + sign * hu
    if not denom > min_denominator:
        return denom
    coef = -sign / denom
    rank_one_update(variance, work, work, coef)
    step = sign * (y - hw) / denom
    for i in range(m):
        weights[i] += work[i] * step
    return denom


@_jit
def slide_window(gram: np.ndarray, cross_y: np.ndarray, n: int, variance: np.ndarray,
                 weights: np.ndarray, m: int, h_new: np.ndarray, y_new: float,
                 h_old: np.ndarray, y_old: float, min_denominator: float,
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
    cancellation ratio of the removal, healthy (1/0, see :func:`is_healthy`)]``. Returns
    False, with nothing changed, when removing the old pattern first would leave
    ``HᵀH + Λ`` singular (the caller then takes the add-first path).
    """
    u_old = work  # S h_old
    u_new = np.empty(m)  # S h_new, then S₁ h_new
    symmetric_matvec_pair(variance, h_old, h_new, m, u_old, u_new)
    leverage = 0.0
    fit_old = 0.0
    for i in range(m):
        leverage += h_old[i] * u_old[i]
        fit_old += h_old[i] * weights[i]
    removal = 1.0 - leverage
    if not removal > min_denominator:
        return False
    # A.11: the weights without the old pattern, and u₂ = S₁h_new.
    step = (y_old - fit_old) / removal
    u1_h = 0.0
    for i in range(m):
        weights[i] -= u_old[i] * step
        u1_h += u_old[i] * h_new[i]
    scale = u1_h / removal
    h_u2 = 0.0
    fit_new = 0.0
    for i in range(m):
        u_new[i] += u_old[i] * scale
        h_u2 += h_new[i] * u_new[i]
        fit_new += h_new[i] * weights[i]
    addition = 1.0 + h_u2
    # A.8 for the weights, then S₂ = S + u₁u₁ᵀ/d₁ − u₂u₂ᵀ/d₂ in one pass.
    step = (y_new - fit_new) / addition
    for i in range(m):
        weights[i] += u_new[i] * step
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
    worst = 0.0
    for i in range(m):
        left = gram[i, i] - h_old[i] * h_old[i]
        if left > 0.0:
            ratio = h_old[i] * h_old[i] / left
            if ratio > worst:
                worst = ratio
    for i in range(n):
        a = h_new[i]
        b = h_old[i]
        row = gram[i]
        for j in range(n):
            row[j] += a * h_new[j] - b * h_old[j]
        cross_y[i] += a * y_new - b * y_old
    out[0] = removal
    out[1] = addition
    out[2] = worst
    out[3] = 1.0 if is_healthy(variance, weights) else 0.0
    return True


@_jit
def drift(gram: np.ndarray, variance: np.ndarray, lambdas: np.ndarray) -> float:
    """``‖S(G + Λ)v − v‖/‖v‖`` for the fixed probe ``v = (cos 1, …, cos M)``, deterministic
    and aligned with no axis (``IncrementalRidge.drift``): two symmetric products."""
    m = lambdas.shape[0]
    probe = np.cos(np.arange(1.0, m + 1.0))
    applied = np.empty(m)
    symmetric_matvec(gram, probe, m, applied)
    for i in range(m):
        applied[i] += lambdas[i] * probe[i]
    back = np.empty(m)
    symmetric_matvec(variance, applied, m, back)
    residual = 0.0
    norm = 0.0
    for i in range(m):
        residual += (back[i] - probe[i]) ** 2
        norm += probe[i] * probe[i]
    return math.sqrt(residual / norm)


@_jit
def condition_bound(gram: np.ndarray, variance: np.ndarray, lambdas: np.ndarray) -> float:
    """``max(diag(G + Λ))·max(diag S)`` (``IncrementalRidge.condition_bound``)."""
    largest_a = -math.inf
    largest_s = -math.inf
    for i in range(lambdas.shape[0]):
        largest_a = max(largest_a, gram[i, i] + lambdas[i])
        largest_s = max(largest_s, variance[i, i])
    return largest_a * largest_s


@_jit
def measured_estimate(gram: np.ndarray, variance: np.ndarray, lambdas: np.ndarray,
                      account_drift: float) -> float:
    """``IncrementalRidge._decide``'s measurement of S once its rounding account has passed
    its threshold: S is kept when its :func:`drift` is at most ``account_drift`` or within
    what a fresh factorisation would leave (``10·ε·``:func:`condition_bound`). Returns the
    account restarted from the measurement, ``max(1, drift/ε)``, or −1 when S is not kept."""
    if lambdas.shape[0] == 0:  # an empty model has nothing to drift
        return 1.0
    residual = drift(gram, variance, lambdas)
    if not residual <= max(account_drift, 10.0 * _EPS * condition_bound(gram, variance,
                                                                        lambdas)):
        return -1.0
    return max(1.0, residual / _EPS)


@_jit
def is_healthy(variance: np.ndarray, weights: np.ndarray) -> bool:
    """The O(M) check after every update: ``diag S > 0`` and finite weights."""
    for i in range(weights.shape[0]):
        if not (variance[i, i] > 0.0 and math.isfinite(weights[i])):
            return False
    return True


# -- criteria (criteria.py) ---------------------------------------------------------------
@_jit
def training_error(gram: np.ndarray, cross_y: np.ndarray, weights: np.ndarray,
                   yy: float) -> float:
    """``yᵀy − wᵀ(2c − Gw)`` (``IncrementalRidge.training_error``, Orr's yᵀP²y)."""
    m = weights.shape[0]
    g_w = np.empty(m)
    symmetric_matvec(gram, weights, m, g_w)
    total = 0.0
    for i in range(m):
        total += weights[i] * (2.0 * cross_y[i] - g_w[i])
    return yy - total


@_jit
def error_and_gamma(gram: np.ndarray, cross_y: np.ndarray, weights: np.ndarray,
                    lambdas: np.ndarray, variance: np.ndarray, yy: float
                    ) -> tuple[float, float]:
    """The two numbers every criterion needs (``IncrementalRidge._summary``): the training
    error ``yᵀP²y`` of :func:`training_error` clipped at 0 against rounding, and
    ``γ = M − Σⱼ λⱼSⱼⱼ`` (Orr eq. 4.10)."""
    m = weights.shape[0]
    if m == 0:
        return max(yy, 0.0), 0.0
    trace = 0.0
    for i in range(m):
        trace += lambdas[i] * variance[i, i]
    return max(training_error(gram, cross_y, weights, yy), 0.0), m - trace


@_jit
def basis_quantities(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                     weights: np.ndarray, lambdas: np.ndarray, yy: float, count: float,
                     j: int, out: np.ndarray) -> None:
    """The products of ``criteria.basis_quantities`` (Orr appendix A.11 for basis function
    j, with S', w' the state without j), in four passes over M × M.

    ``out`` receives ``[a, b, c, alpha, beta, psi, yPh, yP2h]``, the arguments of
    :func:`optimal_lambda` first.
    """
    m = weights.shape[0]
    s_jj = variance[j, j]
    ratio = weights[j] / s_jj
    s_g = np.empty(m)  # S'gⱼ
    w_rem = np.empty(m)  # w'
    g_w_rem = np.empty(m)  # Gw'
    g_j = gram[j]  # gⱼ, read along the (symmetric) Gram's row: contiguous
    # pass 1: S gⱼ, then S'gⱼ and w'
    symmetric_matvec(variance, g_j, m, s_g)
    correction = s_g[j] / s_jj
    for i in range(m):
        s_g[i] -= variance[i, j] * correction
        w_rem[i] = weights[i] - variance[i, j] * ratio
    s_g[j] = 0.0
    w_rem[j] = 0.0
    # pass 2: Gw' and G S'gⱼ in one sweep over G's rows
    g_s_g = np.empty(m)
    symmetric_matvec_pair(gram, w_rem, s_g, m, g_w_rem, g_s_g)
    g_sg = 0.0  # gⱼᵀS'gⱼ
    sg_g_sg = 0.0  # (S'gⱼ)ᵀG(S'gⱼ)
    for i in range(m):
        sg_g_sg += s_g[i] * g_s_g[i]
        g_sg += g_j[i] * s_g[i]
    y_ph = cross_y[j] - g_w_rem[j]
    residual_sg = 0.0
    w_c = 0.0
    w_g_w = 0.0
    trace = 0.0
    for i in range(m):
        residual_sg += (cross_y[i] - g_w_rem[i]) * s_g[i]
        w_c += w_rem[i] * cross_y[i]
        w_g_w += w_rem[i] * g_w_rem[i]
        s_ij = variance[i, j]
        trace += lambdas[i] * (variance[i, i] - s_ij * s_ij / s_jj)
    g_jj = gram[j, j]
    y_p2h = y_ph - residual_sg
    beta = g_jj - 2.0 * g_sg + sg_g_sg
    out[0] = max(yy - 2.0 * w_c + w_g_w, 0.0)  # a (rounding can take it below 0)
    out[1] = y_p2h * y_ph  # b
    out[2] = beta * y_ph * y_ph  # c
    out[3] = count - ((m - 1) - trace)  # α
    out[4] = max(beta, 0.0)  # β
    out[5] = max(g_jj - g_sg, 0.0)  # ψ
    out[6] = y_ph
    out[7] = y_p2h


@_jit
def candidate_quantities(variance: np.ndarray, gram: np.ndarray, n_model: int,
                         cross_y: np.ndarray, weights: np.ndarray, columns: np.ndarray,
                         removed: int, out: np.ndarray) -> None:
    """FGCV's r, γ, ξ, u (eqs. 16–19) of ``criteria.candidate_quantities`` for the tracked
    columns ``columns`` (positions in the Gram matrix), O(M²) each.

    With ``removed = j ≥ 0`` they are those of the model without basis function j, through
    ``S' = S − sⱼsⱼᵀ/sⱼⱼ`` and ``w' = w − sⱼwⱼ/sⱼⱼ`` (as in :func:`basis_quantities`):
    ``S'k = Sk − sⱼ(Sk)ⱼ/sⱼⱼ`` is one more O(M) pass, and the model is not touched.

    ``out[:, q]`` receives ``[r, γ, ξ, u]`` of ``columns[q]``.
    """
    m = n_model
    w = weights.copy()
    if removed >= 0:
        s_jj = variance[removed, removed]
        ratio = w[removed] / s_jj
        s_j = variance[removed]
        for i in range(m):
            w[i] -= s_j[i] * ratio
        w[removed] = 0.0
    residual = np.empty(m)  # c − Gw
    symmetric_matvec(gram, w, m, residual)
    for i in range(m):
        residual[i] = cross_y[i] - residual[i]
    sk = np.empty(m)  # S k
    g_sk = np.empty(m)  # G S k
    for q in range(columns.shape[0]):
        col = columns[q]
        k_col = gram[col]  # k = Hᵀφ, read along the (symmetric) Gram's row: contiguous
        symmetric_matvec(variance, k_col, m, sk)
        if removed >= 0:
            correction = sk[removed] / variance[removed, removed]
            s_j = variance[removed]
            for i in range(m):
                sk[i] -= s_j[i] * correction
            sk[removed] = 0.0
        symmetric_matvec(gram, sk, m, g_sk)
        k_w = 0.0
        k_sk = 0.0
        res_sk = 0.0
        sk_g_sk = 0.0
        for i in range(m):
            k_w += w[i] * k_col[i]
            k_sk += k_col[i] * sk[i]
            res_sk += residual[i] * sk[i]
            sk_g_sk += sk[i] * g_sk[i]
        phi_phi = gram[col, col]
        r = cross_y[col] - k_w
        out[0, q] = r
        out[1, q] = phi_phi - k_sk
        out[2, q] = r - res_sk
        out[3, q] = phi_phi - 2.0 * k_sk + sk_g_sk


# -- the GCV-optimal λ of one column (criteria.optimal_lambda) ----------------------------
# Which branch of the case analysis decided, as ``criteria.LocalOptimum.case`` names them.
CASES = ("interior", "zero", "infinite", "boundary")
_INTERIOR, _ZERO, _INFINITE, _BOUNDARY = 0, 1, 2, 3


@_jit
def gcv_of_delta(delta: float, a: float, b: float, c: float, alpha: float, beta: float,
                 n_patterns: float) -> float:
    """``p(aΔ² − 2bΔ + c)/(αΔ − β)²``, GCV at ``Δ = λ + ψ`` (``criteria.optimal_lambda``)."""
    denom = alpha * delta - beta
    if denom <= 0.0:
        return math.inf
    num = (a * delta - 2.0 * b) * delta + c
    return n_patterns * max(num, 0.0) / (denom * denom)


@_jit
def optimal_lambda(a: float, b: float, c: float, alpha: float, beta: float, psi: float,
                   n_patterns: float, lambda_min: float) -> tuple[float, float, float, int]:
    """The case analysis of ``criteria.optimal_lambda`` (Orr A.11, FGCV appendix I), whose
    docstring derives it. Returns ``(λ, GCV at λ, GCV at λ = ∞, case)``."""
    gcv_removed = n_patterns * a / (alpha * alpha) if alpha > 0.0 else math.inf
    lower = psi + lambda_min
    k = b * alpha - a * beta
    m = c * alpha - b * beta
    # A relative tolerance on k: it is a difference of two products of the same magnitude.
    scale = abs(b * alpha) + abs(a * beta)
    if abs(k) <= 1e-13 * scale:
        if m < 0.0:
            return (lambda_min, gcv_of_delta(lower, a, b, c, alpha, beta, n_patterns),
                    gcv_removed, _ZERO)
        return math.inf, gcv_removed, gcv_removed, _INFINITE
    delta_hat = m / k
    if k > 0.0:
        if delta_hat > lower:
            value = gcv_of_delta(delta_hat, a, b, c, alpha, beta, n_patterns)
            if value <= gcv_removed:
                return delta_hat - psi, value, gcv_removed, _INTERIOR
            # Rounding can leave a "minimum" worse than the limit; keep the better end.
            return math.inf, gcv_removed, gcv_removed, _INFINITE
        return (lambda_min, gcv_of_delta(lower, a, b, c, alpha, beta, n_patterns),
                gcv_removed, _ZERO)
    if delta_hat > lower:
        at_lower = gcv_of_delta(lower, a, b, c, alpha, beta, n_patterns)
        if at_lower < gcv_removed:
            return lambda_min, at_lower, gcv_removed, _BOUNDARY
        return math.inf, gcv_removed, gcv_removed, _BOUNDARY
    return math.inf, gcv_removed, gcv_removed, _INFINITE


@_jit
def floored_optimum(a: float, b: float, c: float, alpha: float, beta: float, psi: float,
                    n_patterns: float, lambda_min: float, zeros_only: bool
                    ) -> tuple[float, float, float, int]:
    """:func:`optimal_lambda` with ``lambda_min`` read one of two ways
    (``criteria.optimal_lambda``): a floor on the domain (``zeros_only=False``), or FGCV
    3.2 point 7 as written (``zeros_only=True``): the optimum over ``[0, ∞]``, where only an
    optimum *at* λ = 0 is replaced by the best λ over ``[lambda_min, ∞]``."""
    if zeros_only and lambda_min > 0.0:
        result = optimal_lambda(a, b, c, alpha, beta, psi, n_patterns, 0.0)
        if result[0] != 0.0:
            return result
    return optimal_lambda(a, b, c, alpha, beta, psi, n_patterns, lambda_min)


@_jit
def basis_optimum(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                  weights: np.ndarray, lambdas: np.ndarray, yy: float, count: float, j: int,
                  lambda_min: float, out: np.ndarray, zeros_only: bool = False) -> None:
    """:func:`basis_quantities` then :func:`floored_optimum` for basis function j, in one
    call (``criteria.basis_optimum``). ``out`` receives ``[λ, GCV, GCV without j, case]``
    and needs room for the eight quantities."""
    basis_quantities(variance, gram, cross_y, weights, lambdas, yy, count, j, out)
    lam, value, removed, case = floored_optimum(out[0], out[1], out[2], out[3], out[4],
                                                out[5], count, lambda_min, zeros_only)
    out[0] = lam
    out[1] = value
    out[2] = removed
    out[3] = case


@_jit
def candidate_optima(variance: np.ndarray, gram: np.ndarray, n_model: int,
                     cross_y: np.ndarray, weights: np.ndarray, columns: np.ndarray,
                     removed: int, error: float, trace_p: float, count: float,
                     lambda_min: float, quantities: np.ndarray, out: np.ndarray,
                     zeros_only: bool = False) -> None:
    """:func:`candidate_quantities` then :func:`floored_optimum` for each column
    (``criteria.candidate_optima``): FGCV appendix IV's a = yᵀP²y (``error``), b = ξr,
    c = ur², α = tr(P) (``trace_p``), β = u, ψ = γ. ``out[:, q]`` receives
    ``[λ, GCV]``; a column in the model's span to rounding (γ ≤ 0 or u ≤ 0) gets
    ``[∞, ∞]``: adding it changes nothing."""
    candidate_quantities(variance, gram, n_model, cross_y, weights, columns, removed,
                         quantities)
    for q in range(columns.shape[0]):
        r = quantities[0, q]
        gamma = quantities[1, q]
        xi = quantities[2, q]
        u = quantities[3, q]
        if gamma <= 0.0 or u <= 0.0:
            out[0, q] = math.inf
            out[1, q] = math.inf
            continue
        lam, value, _, _ = floored_optimum(error, xi * r, u * r * r, trace_p, u, gamma,
                                           count, lambda_min, zeros_only)
        out[0, q] = lam
        out[1, q] = value


# -- the pruner's moves (pruner.py) -------------------------------------------------------
@_jit
def gcv(error: float, gamma: float, count: float) -> float:
    """``p·e/(p − γ)²``, ∞ without degrees of freedom (``criteria.gcv``, Orr eq. 5.6, which
    calls this)."""
    dof = count - gamma
    if dof <= 0.0:
        return math.inf
    return count * error / (dof * dof)


@_jit
def uev(error: float, gamma: float, count: float) -> float:
    """``e/(p − γ)``, ∞ without degrees of freedom (``criteria.uev``, Orr eq. 5.3, and the
    noise estimate of FGCV eq. 8, which call this)."""
    dof = count - gamma
    if dof <= 0.0:
        return math.inf
    return error / dof


@_jit
def candidate_move(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                   weights: np.ndarray, lambdas: np.ndarray, merit: np.ndarray, yy: float,
                   count: float, error: float, gamma: float, columns: np.ndarray,
                   lambda_min: float, min_gain: float, at_budget: bool, out: np.ndarray
                   ) -> int:
    """The decision of ``GCVPruner._candidate_move``, whose docstring gives the rules:
    score ``columns`` (:func:`candidate_optima`), record each gain in ``merit``, and
    choose the best one that lowers GCV by more than ``min_gain``; at the budget, price
    trading the least useful basis function for it (its usefulness refreshed first, then
    the candidate's optimum without it, :func:`candidate_quantities` with ``removed``).
    ``error`` and ``gamma`` are the current model's (``IncrementalRidge._summary``, computed
    once per change of the model and shared with :func:`basis_move`).

    Returns 0 (no move), 1 (add column ``out[0]`` with λ ``out[1]``) or 2 (remove basis
    function ``out[2]`` and add column ``out[0]`` with λ ``out[1]``); ``out[3]`` is the
    chosen candidate's gain.
    """
    m = weights.shape[0]
    current = gcv(error, gamma, count)
    k = columns.shape[0]
    quantities = np.empty((4, k))
    optima = np.empty((2, k))
    candidate_optima(variance, gram, m, cross_y, weights, columns, -1, error, count - gamma,
                     count, lambda_min, quantities, optima)
    threshold = min_gain * current
    best = -1
    best_gain = threshold
    for q in range(k):
        finite = math.isfinite(optima[0, q])
        gain = current - optima[1, q] if finite else 0.0
        merit[columns[q]] = gain
        if finite and gain > best_gain:
            best = q
            best_gain = gain
    if best < 0:
        return 0
    out[0] = columns[best]
    out[1] = optima[0, best]
    out[3] = best_gain
    if not at_budget:
        return 1
    # The least useful basis function; NaN (never re-estimated) is never traded.
    j = -1
    lowest = math.inf
    for i in range(m):
        value = merit[i]
        if value == value and value < lowest:
            lowest = value
            j = i
    # To first order the trade changes GCV by (usefulness − gain).
    if j < 0 or best_gain <= lowest + threshold:
        return 0
    # That usefulness may be many samples old: refresh it, so that a stale low value does
    # not invite the same failing trade again and again.
    basis = np.empty(8)
    basis_quantities(variance, gram, cross_y, weights, lambdas, yy, count, j, basis)
    _, _, without_j, _ = optimal_lambda(basis[0], basis[1], basis[2], basis[3], basis[4],
                                        basis[5], count, lambda_min)
    merit[j] = without_j - current
    if best_gain <= merit[j] + threshold:
        return 0
    # The exact price: the candidate's optimum in the model without j.
    candidate_optima(variance, gram, m, cross_y, weights, columns[best:best + 1], j,
                     basis[0], basis[3], count, lambda_min, quantities, optima)
    if not (math.isfinite(optima[0, 0]) and optima[1, 0] < current - threshold):
        return 0
    out[1] = optima[0, 0]
    out[2] = j
    return 2


# -- fast GCV's step 5 over the whole model (criteria.basis_optima) -----------------------
@_jit
def basis_optima(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                 weights: np.ndarray, lambdas: np.ndarray, yy: float, count: float,
                 lambda_min: float, out: np.ndarray, zeros_only: bool = False) -> None:
    """:func:`basis_optimum` of every basis function of the model, in one call
    (``criteria.basis_optima``). Row j of ``out`` (M × 8) receives
    ``[λ, GCV, GCV without j, case]`` of basis function j (the rest is working room)."""
    for j in range(weights.shape[0]):
        basis_optimum(variance, gram, cross_y, weights, lambdas, yy, count, j, lambda_min,
                      out[j], zeros_only)


@_jit
def basis_move(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
               weights: np.ndarray, lambdas: np.ndarray, yy: float, count: float,
               error: float, gamma: float, j: int, lambda_min: float,
               relative_gain: float, out: np.ndarray) -> int:
    """The decision of ``pruner.reestimate_basis`` for basis function j, whose docstring
    gives the rules, with the common outcome carried out in place.

    ``error`` and ``gamma`` are the current model's (its GCV is compared against).
    ``out`` (room for eight) receives ``[λ, usefulness, error factor]``. Returns 0 (leave
    j as it is), 1 (λⱼ re-estimated here by :func:`lambda_rank_one`; ``out[2]`` is the
    rounding-error factor), 2 (remove j: its optimum is ∞ and GCV does not rise) or 3 (set
    λⱼ to ``out[0]`` through the exact remove-and-add path, which the caller takes).
    """
    current = gcv(error, gamma, count)
    basis_optimum(variance, gram, cross_y, weights, lambdas, yy, count, j, lambda_min, out)
    lam = out[0]
    value = out[1]
    removed = out[2]
    out[1] = removed - current
    if math.isinf(lam):
        return 2 if removed <= current * (1.0 + relative_gain) else 0
    if not (value < current * (1.0 - relative_gain) and lam != lambdas[j]):
        return 0
    factor = lambda_rank_one(variance, weights, lambdas, j, lam)
    if factor > 0.0:
        out[2] = factor
        return 1
    return 3


# -- the steady-state sample of SparseRBFRegressor (rbf.py) -------------------------------
@_jit
def running_mean(means: np.ndarray, vector: np.ndarray, count: int) -> None:
    """``means += (vector − means)/count`` in place (``FeatureMap.commit``)."""
    for i in range(means.shape[0]):
        means[i] += (vector[i] - means[i]) / count


@_jit
def inner(a: np.ndarray, b: np.ndarray, m: int) -> float:
    """``Σᵢ<m aᵢbᵢ`` summed in order: a model's output ``hᵀw``, the same bits on every path
    (predictions, and the error the buffer manager judges a sample by)."""
    total = 0.0
    for i in range(m):
        total += a[i] * b[i]
    return total


@_jit
def predict_mean(x: np.ndarray, kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
                 features: np.ndarray, weights: np.ndarray) -> float:
    """``h(x)ᵀw`` over the model's columns in one call (``SparseRBFRegressor.predict_one``)."""
    m = weights.shape[0]
    row = np.empty((1, m))
    evaluate_rows(kinds, centres, inv_r2, features, x.reshape((1, x.shape[0])), 0, m, row)
    return inner(row[0], weights, m)


@_jit
def model_budget(max_basis: int, count: float) -> int:
    """``GCVPruner.budget``: at most ``max_basis`` basis functions, and no more than half
    as many as there are patterns (``count``)."""
    return min(max_basis, int(count // 2))


@_jit
def settle(estimate: float, factor: float, gram: np.ndarray, variance: np.ndarray,
           weights: np.ndarray, lambdas: np.ndarray, refresh_at: float,
           account_drift: float) -> float:
    """``IncrementalRidge._after_update((factor, factor))`` after a move of the pruner,
    when the periodic drift probe is not due: the account ``E·f + f``, the O(M) health
    check and, past ``refresh_at``, the measurement of S (:func:`measured_estimate`).
    Returns the account to carry on with, or −1 when S is to be refreshed (the caller's
    ``_decide``)."""
    after = estimate * factor + factor
    if not is_healthy(variance, weights):
        return -1.0
    if after > refresh_at:
        return measured_estimate(gram, variance, lambdas, account_drift)
    return after


# Registers of stream_sample: the scalars of the objects whose state it advances
# (SparseRBFRegressor keeps them in two arrays while samples stay on the fused path and
# writes them back to the objects when they leave it). Integers:
N_SEEN, HEAD, SINCE_REFRESH, SINCE_CHECK, ROUND_START, EXACT_SINCE, TURN, BASIS_CURSOR, \
    CANDIDATE_CURSOR, N_REESTIMATED, UPDATES, DONE, MOVE_KIND, ACTION, MOVE_BASIS, \
    PROTECTED, HEALTHY, PROPOSE, SUMMARY_VALID, COMMITTED, N_COLUMNS, N_STORED, \
    FULL, N_TRADED, TRADED_NOW, N_LEARNED, N_ADDED, N_DELETED, ADDED_NOW, AT_BUDGET, \
    EVALUATIONS, RESIZED, N_MODEL, FIRST = range(34)
# …and floats:
YY, ERROR_ESTIMATE, STATISTICS_ERROR, ROUND_ERROR, CREDIT, ERROR, NEAREST, TRAINING_ERROR, \
    GAMMA, COUNT, NOISE_VARIANCE = range(11)
INT_REGISTERS, FLOAT_REGISTERS = FIRST + 1, NOISE_VARIANCE + 1
# The order of a sample's evaluations (ints[FIRST], GCVPruner.step's `first`): by the
# pruner's turn counter, or alternating from a candidate move or from a basis move.
TURN_ORDER, CANDIDATE_FIRST, BASIS_FIRST = range(3)
# What stream_sample returns: where it stopped.
SLIDE_REFUSED, DECIDE, MOVE, QUIET = range(4)


@_jit
def account_move(ints: np.ndarray, floats: np.ndarray, move: np.ndarray, estimate: float,
                 factor: float, move_kind: int, action: int, done: int, gram: np.ndarray,
                 variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray,
                 refresh_at: float, account_drift: float) -> float:
    """The accounts of a move :func:`stream_sample` has made (a trade, addition or
    deletion: ``move_kind`` 3, 4, 5): :func:`settle`, then the counters
    ``IncrementalRidge._after_update`` advances. Returns the new account; or −1 with the
    counters untouched and the registers saying what remains for the caller
    (``_after_update((factor, factor))``, which will refresh S)."""
    after = settle(estimate, factor, gram, variance, weights, lambdas, refresh_at,
                   account_drift)
    if after < 0.0:
        move[4] = factor
        ints[MOVE_KIND] = move_kind
        ints[ACTION] = action
        ints[DONE] = done
        return -1.0
    floats[ERROR_ESTIMATE] = after
    ints[SINCE_CHECK] += 1
    ints[UPDATES] += 1
    return after


@_jit
def stream_sample(x: np.ndarray, y: float, kinds: np.ndarray, centres: np.ndarray,
                  inv_r2: np.ndarray, features: np.ndarray, gram: np.ndarray,
                  cross_y: np.ndarray, HT: np.ndarray, XT: np.ndarray, targets: np.ndarray,
                  stamps: np.ndarray, merit: np.ndarray, ids: np.ndarray, capacity: int,
                  ints: np.ndarray, floats: np.ndarray, row: np.ndarray, move: np.ndarray,
                  refresh_every: int, check_every: int, refresh_at: float,
                  min_leverage: float, per_evaluation: int,
                  min_gain: float, relative_gain: float, protected: np.ndarray,
                  means: np.ndarray, novelty_sq: float, error_threshold: float,
                  noise_every: int, min_relative_delta: float, project_below: float,
                  account_drift: float, drift_tolerance: float, max_basis: int,
                  variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray,
                  spare_variance: np.ndarray, spare_weights: np.ndarray,
                  spare_lambdas: np.ndarray) -> int:
    """A sample of ``SparseRBFRegressor.learn_one`` in one call, as long as nothing
    unusual happens; it stops and reports where, for the caller to finish the sample on
    the general path, whenever something does.

    Every step is the general path's, in its order, through the same compiled loops:

    * the row over every tracked column (:func:`evaluate_rows`) and the error before
      learning;
    * in a full window ``IncrementalRidge._slide`` (:func:`slide_window`, the ring
      bookkeeping of ``WindowStatistics.replace_oldest`` and the rounding accounts), in a
      filling one ``WindowStatistics.push`` and ``RidgeState.add_pattern``
      (:func:`gram_rank_one`, :func:`sherman_morrison`); then the inputs' running means
      (``FeatureMap.commit``) and ``IncrementalRidge._rolling_refresh``
      (:func:`rolling_refresh`);
    * the quiet outcomes of ``IncrementalRidge._decide``: no refresh is due, and S is kept
      by its measurement (:func:`measured_estimate`) when the account calls for one and by
      the drift probe (:func:`drift`) when that is due;
    * ``GCVPruner.step``'s evaluations (:func:`candidate_move`, :func:`basis_move`) and
      their moves, as long as each move's own ``_decide`` keeps S (:func:`settle`) without
      the periodic probe: a λ changed in place; a trade at the budget
      (``IncrementalRidge.replace_basis``: :func:`replace_basis`, :func:`swap_columns`);
      an addition (``IncrementalRidge.add_basis``: :func:`add_basis` and the promotion
      of the candidate) and a deletion (``IncrementalRidge.remove_basis``:
      :func:`remove_basis`, the column moved out of the model and, unless protected, out
      of the pool). The first addition or deletion of a call writes the new state into
      the spare arrays (``spare_variance`` flat, of at least (M + 1)² numbers) and sets
      ``ints[RESIZED]`` and ``ints[N_MODEL]``, the new M: the caller's state is then views
      of them (a second one in the same call is the caller's);
    * the buffer manager's test of the input as a centre (``BufferManager.consider``:
      novel by :func:`nearest_sq_distance`, or badly predicted);
    * on one sample in ``noise_every``, ``SparseRBFRegressor._update_noise`` (FGCV eq. 8,
      :func:`uev`), into ``floats[NOISE_VARIANCE]``, which the next samples read.

    At M = 100 the interpreter overhead of the dozen calls this replaces cost more than
    their arithmetic. A test holds both paths to the same bits.

    ``ints`` and ``floats`` carry the scalars it reads and advances (indices above), among
    them the number of tracked columns; ``row`` has room for them all. (The arguments that
    a move can replace come last.) Returns where it stopped:

    * ``SLIDE_REFUSED``: the oldest pattern cannot leave first (``_slide`` returns False);
      ``row[:n]`` and ``floats[ERROR]`` are filled and nothing else has changed.
    * ``DECIDE``: the pattern is in; ``_decide(pattern=True)`` has something to do (a
      refresh, most likely)
      (``ints[HEALTHY]`` carries the health check, ``ints[FULL]`` whether the window is
      full and ``ints[EXACT_SINCE]`` the rolling refresh's answer).
    * ``MOVE``: the pruner stopped at a move for the caller to carry out:
      ``ints[MOVE_KIND]`` 1 (candidate move, ``move[:4]`` as :func:`candidate_move` leaves
      it), 2 (basis move on ``ints[MOVE_BASIS]``, ``move`` as :func:`basis_move` leaves
      it), or a move made whose ``_after_update((f, f))`` remains, ``f = move[4]``: 3 a
      trade, 4 an addition, 5 a deletion; ``ints[ACTION]`` is the action, ``ints[DONE]``
      the evaluations completed before.
    * ``QUIET``: all done; ``floats[NEAREST]`` is the novelty distance and
      ``ints[PROPOSE]`` whether the input is to be proposed as a centre.

    ``ints[UPDATES]``, ``ints[N_REESTIMATED]``, ``ints[N_TRADED]``, ``ints[N_ADDED]`` and
    ``ints[N_DELETED]`` accumulate over calls (versions of the model, λ's re-estimated,
    trades, additions, deletions) until the caller collects them; ``ints[TRADED_NOW]`` and
    ``ints[ADDED_NOW]`` count this call's, ``ints[AT_BUDGET]`` whether the model was at
    ``max_basis`` when its evaluations began; ``ints[EVALUATIONS]`` is the number of
    evaluations the caller allows this sample and ``ints[FIRST]`` their order
    (``TURN_ORDER``, ``CANDIDATE_FIRST``, ``BASIS_FIRST``); ``ints[SUMMARY_VALID]`` says
    whether
    ``floats[TRAINING_ERROR]`` and ``floats[GAMMA]`` are the current model's.
    """
    m = weights.shape[0]
    d = x.shape[0]
    n = ints[N_COLUMNS]
    row = row[:n]
    ints[TRADED_NOW] = 0  # (this call's counts, whatever it returns)
    ints[ADDED_NOW] = 0
    ints[RESIZED] = 0
    evaluate_rows(kinds, centres, inv_r2, features, x.reshape((1, d)), 0, n,
                  row.reshape((1, n)))
    error = y - inner(row, weights, m)
    floats[ERROR] = error
    head = ints[HEAD]
    n_stored = ints[N_STORED]
    count = floats[COUNT]
    yy = floats[YY]
    estimate = floats[ERROR_ESTIMATE]
    statistics_error = floats[STATISTICS_ERROR]
    round_error = floats[ROUND_ERROR]
    n_seen = ints[N_SEEN] + 1
    if n_stored >= capacity:
        # IncrementalRidge._slide
        h_old = np.empty(n)
        for i in range(n):
            h_old[i] = HT[i, head]
        y_old = targets[head]
        out = np.empty(4)
        if not slide_window(gram, cross_y, n, variance, weights, m, row, y, h_old, y_old,
                            min_leverage, np.empty(m), out):
            return SLIDE_REFUSED
        # WindowStatistics.replace_oldest (the slot of the oldest takes the new pattern)
        yy -= y_old * y_old
        yy += y * y
        slot = head
        head = (head + 1) % capacity
        # The accounts of _slide, then those of _after_update(pattern=True)
        removal, addition, cancellation, healthy = out[0], out[1], out[2], out[3] > 0.0
        estimate = estimate * (1.0 / removal) + 1.0 / removal
        statistics_error += cancellation
        round_error += cancellation
        estimate = estimate * 1.0 + cancellation
        estimate = estimate * (1.0 / addition) + addition
    else:
        # A window still filling: WindowStatistics.push, then RidgeState.add_pattern.
        gram_rank_one(gram, cross_y, n, row, y, 1.0)
        yy += y * y
        count += 1.0
        slot = (head + n_stored) % capacity
        n_stored += 1
        addition = sherman_morrison(variance, weights, row[:m], y, 1.0, -math.inf,
                                    np.empty(m))
        estimate = estimate * (1.0 / addition) + addition
        healthy = is_healthy(variance, weights)
    for f in range(d):
        XT[f, slot] = x[f]
    targets[slot] = y
    for i in range(n):
        HT[i, slot] = row[i]
    ints[N_SEEN] = n_seen
    ints[HEAD] = head
    ints[N_STORED] = n_stored
    floats[COUNT] = count
    ints[COMMITTED] += 1
    running_mean(means, x, ints[COMMITTED])
    ints[N_LEARNED] += 1
    ints[SUMMARY_VALID] = 0
    ints[UPDATES] += 1
    # IncrementalRidge._rolling_refresh (a full window only)
    ints[FULL] = 1 if n_stored >= capacity else 0
    if n_stored >= capacity:
        credit, fresh_yy, exact = rolling_refresh(HT, targets, gram, cross_y, stamps, n,
                                                  n_seen, floats[CREDIT], refresh_every)
        floats[CREDIT] = credit
        if exact >= 0:
            yy = fresh_yy
            ints[EXACT_SINCE] = exact
        if ints[EXACT_SINCE] >= ints[ROUND_START]:
            statistics_error = round_error
            round_error = 0.0
            ints[ROUND_START] = n_seen
    floats[YY] = yy
    floats[STATISTICS_ERROR] = statistics_error
    floats[ROUND_ERROR] = round_error
    floats[ERROR_ESTIMATE] = estimate
    ints[HEALTHY] = 1 if healthy else 0
    # The quiet outcomes of _decide(pattern=True): no refresh is due, and the measurement
    # of S (when the account calls for one) and the periodic drift probe (when due) both
    # keep S. Otherwise the caller's _decide takes over from the accounts as they stood
    # (it repeats a measurement made here, to the same bits, before it refreshes).
    if (statistics_error > refresh_at or ints[SINCE_REFRESH] + 1 >= refresh_every
            or not healthy):
        return DECIDE
    since_check = ints[SINCE_CHECK] + 1
    if estimate > refresh_at:
        estimate = measured_estimate(gram, variance, lambdas, account_drift)
        if estimate < 0.0:
            return DECIDE
    if since_check >= check_every:
        if not drift(gram, variance, lambdas) <= drift_tolerance:
            return DECIDE
        since_check = 0
    floats[ERROR_ESTIMATE] = estimate
    ints[SINCE_REFRESH] += 1
    ints[SINCE_CHECK] = since_check
    # GCVPruner.step, with SparseRBFRegressor._lambda_min
    noise_variance = floats[NOISE_VARIANCE]
    lambda_min = noise_variance / max(count, 1.0)
    training, gamma = error_and_gamma(gram, cross_y, weights, lambdas, variance, yy)
    stale = False  # whether a move has changed the model since (training, gamma)
    ints[AT_BUDGET] = 1 if m >= max_basis else 0
    done = 0
    first = ints[FIRST]
    for k in range(ints[EVALUATIONS]):
        if stale:
            training, gamma = error_and_gamma(gram, cross_y, weights, lambdas, variance,
                                              yy)
            stale = False
        if first == TURN_ORDER:
            turn = ints[TURN] + 1
            ints[TURN] = turn
            candidate_turn = turn % 2 == 1
        else:  # the caller's schedule: alternate, starting with `first`
            candidate_turn = (k % 2 == 0) == (first == CANDIDATE_FIRST)
        n_candidates = n - m
        if candidate_turn and n_candidates > 0:
            kind = 1
        elif m > 0:
            kind = 2
        elif n_candidates > 0:
            kind = 1
        else:
            break
        # A move whose _after_update would reach the periodic drift probe is the caller's.
        settles = ints[SINCE_CHECK] + 1 < check_every
        if kind == 1:  # GCVPruner._candidate_move
            k = min(per_evaluation, n_candidates)
            cursor = ints[CANDIDATE_CURSOR]
            columns = np.empty(k, np.int64)
            for q in range(k):
                columns[q] = m + (cursor + q) % n_candidates
            ints[CANDIDATE_CURSOR] = (cursor + k - 1) % n_candidates + 1
            budget = model_budget(max_basis, count)
            action = candidate_move(variance, gram, cross_y, weights, lambdas, merit, yy,
                                    count, training, gamma, columns, lambda_min, min_gain,
                                    m >= budget, move)
            position = int(move[0])
            if action == 2 and settles:
                # GCVPruner._trade: IncrementalRidge.replace_basis and its _after_update.
                j = int(move[2])
                factor = replace_basis(variance, weights, lambdas, j,
                                       gram[position, :m].copy(), gram[position, position],
                                       cross_y[position], move[1], min_relative_delta,
                                       project_below, np.empty(m))
                if factor == 0.0:  # in the span after all: no trade, nothing changed
                    done += 1
                    continue
                if factor > 0.0:
                    swap_columns(gram, HT, cross_y, ids, merit, stamps, kinds, inv_r2,
                                 features, centres, j, position, n)
                    estimate = account_move(ints, floats, move, estimate, factor, 3, action,
                                            done, gram, variance, weights, lambdas,
                                            refresh_at, account_drift)
                    if estimate < 0.0:
                        return MOVE
                    ints[N_TRADED] += 1
                    ints[TRADED_NOW] += 1
                    stale = True  # (recomputed only if something reads it)
                    done += 1
                    continue
                # factor < 0: nothing changed; the exact path is the caller's
            elif (action == 1 and settles and not ints[RESIZED]
                  and (m + 1) * (m + 1) <= spare_variance.shape[0]):
                # GCVPruner._add: IncrementalRidge.add_basis (the candidate at `position`
                # joins the model at λ = move[1]) and its _after_update, into the spare
                # arrays.
                lam = move[1]
                g_jj = gram[position, position]
                grown_variance = spare_variance[:(m + 1) * (m + 1)].reshape((m + 1, m + 1))
                grown_weights = spare_weights[:m + 1]
                delta, status = add_basis(variance, weights, gram[position, :m].copy(),
                                          g_jj, cross_y[position], lam, math.nan, math.nan,
                                          min_relative_delta, project_below,
                                          grown_variance, grown_weights)
                if status == 0:  # in the span after all: it stays in the pool
                    done += 1
                    continue
                if status > 0:
                    ints[RESIZED] = 1
                    ints[N_MODEL] = m + 1
                    grown_lambdas = spare_lambdas[:m + 1]
                    grown_lambdas[:m] = lambdas
                    grown_lambdas[m] = lam
                    variance, weights, lambdas = grown_variance, grown_weights, grown_lambdas
                    # WindowStatistics.promote
                    swap_columns(gram, HT, cross_y, ids, merit, stamps, kinds, inv_r2,
                                 features, centres, position, m, n)
                    m += 1
                    estimate = account_move(ints, floats, move, estimate,
                                            (g_jj + lam) / delta, 4, action, done, gram,
                                            variance, weights, lambdas, refresh_at,
                                            account_drift)
                    if estimate < 0.0:
                        return MOVE
                    ints[N_ADDED] += 1
                    ints[ADDED_NOW] += 1
                    stale = True  # (recomputed only if something reads it)
                    done += 1
                    continue
                # status < 0: hᵀPh is to come from the stored rows: the caller's
            if action != 0:
                ints[MOVE_KIND] = 1
                ints[ACTION] = action
                ints[DONE] = done
                floats[TRAINING_ERROR] = training
                floats[GAMMA] = gamma
                ints[SUMMARY_VALID] = 1
                return MOVE
        else:  # GCVPruner._basis_move, reestimate_basis
            j = ints[BASIS_CURSOR] % m
            is_protected = False
            for p in range(protected.shape[0]):
                if protected[p] == ids[j]:
                    is_protected = True
            action = basis_move(variance, gram, cross_y, weights, lambdas, yy, count,
                                training, gamma, j, lambda_min, relative_gain, move)
            quiet = action == 0
            if action == 1 and settles:  # λⱼ changed in place: _after_update((f, f))
                after = settle(estimate, move[2], gram, variance, weights, lambdas,
                               refresh_at, account_drift)
                if after >= 0.0:
                    quiet = True
                    estimate = after
                    floats[ERROR_ESTIMATE] = estimate
                    ints[SINCE_CHECK] += 1
                    ints[UPDATES] += 1
                    ints[N_REESTIMATED] += 1
                    stale = True  # (recomputed only if something reads it)
            elif action == 2 and settles and m > 1 and not ints[RESIZED]:
                # IncrementalRidge.remove_basis(j, keep_as_candidate=is_protected) and its
                # _after_update: j is moved last (RidgeState.swap and the window's), the
                # state shrinks, the column leaves the model (and the pool too unless it is
                # protected: WindowStatistics.drop_column).
                last = m - 1
                swap_symmetric(variance, j, last, m)
                weights[j], weights[last] = weights[last], weights[j]
                lambdas[j], lambdas[last] = lambdas[last], lambdas[j]
                swap_columns(gram, HT, cross_y, ids, merit, stamps, kinds, inv_r2, features,
                             centres, j, last, n)
                shrunk_variance = spare_variance[:last * last].reshape((last, last))
                shrunk_weights = spare_weights[:last]
                remove_basis(variance, weights, last, shrunk_variance, shrunk_weights)
                shrunk_lambdas = spare_lambdas[:last]
                shrunk_lambdas[:] = lambdas[:last]
                variance, weights, lambdas = shrunk_variance, shrunk_weights, shrunk_lambdas
                ints[RESIZED] = 1
                ints[N_MODEL] = last
                m = last
                if not is_protected:
                    swap_columns(gram, HT, cross_y, ids, merit, stamps, kinds, inv_r2,
                                 features, centres, m, n - 1, n)
                    n -= 1
                    ints[N_COLUMNS] = n
                estimate = account_move(ints, floats, move, estimate, 1.0, 5, action, done,
                                        gram, variance, weights, lambdas, refresh_at,
                                        account_drift)
                if estimate < 0.0:
                    return MOVE
                ints[N_DELETED] += 1
                stale = True  # (recomputed only if something reads it)
                done += 1
                continue  # (the cursor stays: the basis function now at j is next)
            if not quiet:
                ints[MOVE_KIND] = 2
                ints[ACTION] = action
                ints[MOVE_BASIS] = j
                ints[PROTECTED] = 1 if is_protected else 0
                ints[DONE] = done
                if action != 1:  # (λⱼ changed in place leaves the criteria stale)
                    floats[TRAINING_ERROR] = training
                    floats[GAMMA] = gamma
                    ints[SUMMARY_VALID] = 1
                return MOVE
            merit[j] = move[1]
            ints[BASIS_CURSOR] = j + 1
        done += 1
    if ints[N_LEARNED] % noise_every == 0 and stale:  # (the noise estimate reads them)
        training, gamma = error_and_gamma(gram, cross_y, weights, lambdas, variance, yy)
        stale = False
    if not stale:
        floats[TRAINING_ERROR] = training
        floats[GAMMA] = gamma
        ints[SUMMARY_VALID] = 1
    nearest = nearest_sq_distance(kinds, centres, n, x)
    floats[NEAREST] = nearest
    noise_std = math.sqrt(noise_variance)
    badly_predicted = noise_std > 0 and abs(error) > error_threshold * noise_std
    ints[PROPOSE] = 1 if nearest > novelty_sq or badly_predicted else 0
    if ints[N_LEARNED] % noise_every == 0:
        estimate = uev(training, gamma, count)
        if math.isfinite(estimate) and estimate > 0:
            floats[NOISE_VARIANCE] = estimate
    return QUIET
