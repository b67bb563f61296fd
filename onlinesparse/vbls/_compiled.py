"""The VBLS regression sweep compiled (numba), for the small models of a stream.

:func:`onlinesparse.vbls.engine.sweep_regression` is about thirty NumPy calls on vectors of
length M; at the M ≈ 10–20 of a kernel model on a stream each call's interpreter and
allocation overhead is larger than its arithmetic, so a sweep cost ~80 µs of which a few were
arithmetic. This is the same sweep (the engine's docstrings carry the equations and their
references: Ting et al. 3.1, 4.3 / 4.7, 4.8) written as loops and compiled once
(``cache=True``), in place. ``error_model="numpy"`` keeps NumPy's division semantics
(inf / NaN rather than an exception), so that it agrees with the NumPy reference
(:func:`onlinesparse.vbls.engine.sweep_regression_reference`) to rounding; the tests check
that.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse import core

__all__ = ["sweep_regression"]

from onlinesparse._jit import jit_numpy_errors as _jit

PRIOR_CODES = {"ard": 0, "shared": 1, "none": 2}


@_jit
def sweep_regression(weights: np.ndarray, variances: np.ndarray, shape: np.ndarray,
                     rate: np.ndarray, psi: np.ndarray, psi_y: float, gram: np.ndarray,
                     cross: np.ndarray, yy: float, count: float, prior: int, cap: float,
                     n_flat: int, floor: float, prior_rate: float
                     ) -> tuple[float, float, float, float]:
    """One sweep in place on the state's arrays; returns ``(ψ_y, Σκ/p, change, held)``,
    ``held`` a sum that is finite exactly when the new posterior is (⟨b⟩ᵀ⟨b⟩ + Σψ + ψ_y,
    plus rateᵀψ with a prior: the finite-or-unchanged check of engine.update_posteriors).
    Every ψ is first raised to ``floor`` (engine.raise_noise_floor)."""
    m = weights.shape[0]
    psi_y = max(psi_y, floor)
    s = psi_y
    for j in range(m):
        psi[j] = max(psi[j], floor)
        s += psi[j]
    # E-step (regression_terms): ρ = (c − G⟨b⟩)/s, RSS, Σe² = RSS/s², Σκ = p/s.
    corr = np.empty(m)
    fit = 0.0
    for j in range(m):
        acc = 0.0
        for k in range(m):
            acc += gram[j, k] * weights[k]
        corr[j] = cross[j] - acc
        fit += weights[j] * (cross[j] + corr[j])
    rss = max(yy - fit, 0.0)
    for j in range(m):
        corr[j] /= s
    sq_sum = rss / s / s  # (not rss/(s·s): s² underflows for targets of order 1e-80)
    curvature = count / s
    # Q(b), Q(α) (update_posteriors).
    new_mu = np.empty(m)
    new_var = np.zeros(m)
    if prior == 2:
        for j in range(m):
            g = gram[j, j]
            step = psi[j] * corr[j] / g if g > 0.0 else 0.0
            new_mu[j] = weights[j] + step
    else:
        total = 0.0
        for j in range(m):
            g = gram[j, j]
            alpha = 0.0 if j < n_flat else shape[j] / rate[j]
            denom = g + psi[j] * alpha
            new_mu[j] = (g * weights[j] + psi[j] * corr[j]) / denom
            new_var[j] = psi[j] / denom
            if j >= n_flat:
                total += new_mu[j] * new_mu[j] + new_var[j]
        mean_precision = 0.0
        if prior == 1 and m > n_flat:
            for j in range(n_flat, m):
                mean_precision += gram[j, j] * (curvature / count)
            mean_precision /= m - n_flat
        for j in range(m):
            if prior == 0:
                new_rate = prior_rate + 0.5 * (new_mu[j] * new_mu[j] + new_var[j])
            else:
                new_rate = prior_rate + 0.5 * total
            if math.isfinite(cap):
                data_precision = gram[j, j] * (curvature / count)
                if prior == 1 and m > n_flat:
                    data_precision = mean_precision
                limit = cap * data_precision
                low = shape[j] / limit if limit > 0.0 else 0.0
                new_rate = max(new_rate, low)
            rate[j] = new_rate
    # ψ_zm (the M-step of 3.1 under Q(Z)Q(b)), then the weights.
    top = 0.0
    biggest = 0.0
    for j in range(m):
        g = gram[j, j]
        delta = weights[j] - new_mu[j]
        p = psi[j]
        value = (delta * delta * g + 2.0 * delta * p * corr[j] + p * p * sq_sum + count * p
                 - p * p * curvature + new_var[j] * g) / count
        psi[j] = max(value, floor)
        weights[j] = new_mu[j]
        variances[j] = new_var[j]
        top = max(top, abs(new_mu[j]))
        biggest = max(biggest, abs(delta))
    change = biggest / top if top > 0.0 else 0.0
    new_psi_y = max((psi_y / s) ** 2 * rss / count + psi_y * (s - psi_y) / s, floor)
    # (max() passes a NaN on, as np.maximum does; every term is ≥ 0, so no inf cancels)
    held = new_psi_y
    for j in range(m):
        held += weights[j] * weights[j] + psi[j]
        if prior != 2:
            held += rate[j] * psi[j]
    return new_psi_y, curvature / count, change, held


@_jit
def _noise_excess(s: float, alpha: np.ndarray, gram_diag: np.ndarray, rss: float,
                  count: float, floor: float) -> tuple[float, float]:
    """``ψ_y + Σψ_zm(k(s)) − s`` and its derivative in s (schedule module docstring); the
    excess is +inf where k ≤ 0.

    In units of the noise: ``t = 1/k = s/(p − RSS/s)``, a variance like s, and
    ``ψ_zm = 2G t/(G + √(G² + 4αG t))`` (the root of the schedule module times t/t), so
    that nothing is formed in units of 1/s² (s² underflows, k·G overflows, for targets
    whose squares are near the smallest float)."""
    excess = count - rss / s  # k·s
    if not excess > 0.0:
        return math.inf, math.nan
    t = s / excess
    # t·dk/ds, with dk/ds = (2RSS/s − p)/s²: the slope of ψ in k becomes one in s.
    t_dk = (2.0 * rss / s - count) / excess / s
    total = floor
    slope = 0.0
    for j in range(alpha.shape[0]):
        g = gram_diag[j]
        if g > 0.0:
            psi = 2.0 * g * t / (g + math.sqrt(g * g + 4.0 * alpha[j] * g * t))
            if psi > floor:
                a_psi = alpha[j] * psi
                # dψ/dk = −ψ(αψ + G)/(k(2αψ + G))
                slope += -psi * (a_psi + g) / (2.0 * a_psi + g)
            else:
                psi = floor
        else:
            psi = floor
        total += psi
    return total - s, slope * t_dk - 1.0


@_jit
def noise_root(alpha: np.ndarray, gram_diag: np.ndarray, rss: float, count: float,
               floor: float, current: float, lowest: float) -> float:
    """The root of the noise equation the EM moves s towards from ``current`` (schedule
    module): bracketed on the side the excess's sign points to (between RSS/p and s, or
    above s by doubling), then Newton's method kept inside the bracket, bisection where a
    Newton step would leave it. NaN when there is no such root."""
    value, _ = _noise_excess(current, alpha, gram_diag, rss, count, floor)
    if value == 0.0:
        return current
    if value < 0.0:
        # (scale-free: ``lowest`` is at least the noise floor, a positive normal float)
        low = lowest * (1.0 + 1e-12)
        if not _noise_excess(low, alpha, gram_diag, rss, count, floor)[0] > 0.0:
            return math.nan
        high = current
    else:
        low = current
        high = current
        found = False
        for _ in range(60):
            high *= 2.0
            if _noise_excess(high, alpha, gram_diag, rss, count, floor)[0] < 0.0:
                found = True
                break
            low = high
        if not found:
            return math.nan
    # The excess is positive at `low`, negative at `high`.
    s = current if low < current < high else 0.5 * (low + high)
    for _ in range(200):
        f, df = _noise_excess(s, alpha, gram_diag, rss, count, floor)
        if f == 0.0:
            return s
        if f > 0.0:
            low = s
        else:
            high = s
        step = f / df if df < 0.0 else math.nan
        candidate = s - step
        if not (low < candidate < high):
            candidate = 0.5 * (low + high)
        if abs(candidate - s) <= 1e-13 * candidate or high - low <= 1e-13 * high:
            return candidate
        s = candidate
    return s


@_jit
def centred_statistics(gram: np.ndarray, cross: np.ndarray, means: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``G' = TGTᵀ`` and ``c' = Tc`` for the basis ``[1, f_1 − μ_1, …]`` (``T`` subtracts μ_m
    times the constant column 0 from column m): the kernel regressor's centred
    parametrisation (its ``_statistics``), without the three M × M temporaries of
    ``np.outer``. ``G'_jk = G_jk − μ_j G_0k − G_j0 μ_k + G_00 μ_j μ_k``."""
    m = means.shape[0]
    out = np.empty((m, m))
    g00 = gram[0, 0]
    for j in range(m):
        mj = means[j]
        for k in range(m):
            mk = means[k]
            out[j, k] = gram[j, k] - mj * gram[0, k] - gram[j, 0] * mk + g00 * mj * mk
    c = np.empty(m)
    for j in range(m):
        c[j] = cross[j] - means[j] * cross[0]
    return out, c


@_jit
def recentre(gram: np.ndarray, cross: np.ndarray, count: float, means: np.ndarray,
             weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel regressor's re-centring (its ``_centred``) in one pass over the raw
    statistics ``gram`` (any layout: the window's block is a view): the window means
    ``μ_m = G_0m/p`` (μ_0 = 0), the bias weight moved by ``Σ_m b_m(μ_m^new − μ_m^old)`` in
    place so that the prediction stays, and :func:`centred_statistics` for the new means
    with ``G'_0m = G'_m0 = 0`` exactly. Returns ``G'``, ``c'`` and the new means."""
    m = means.shape[0]
    new = np.empty(m)
    new[0] = 0.0
    shift = 0.0
    for j in range(1, m):
        new[j] = gram[0, j] / count
        shift += weights[j] * (new[j] - means[j])
    weights[0] += shift
    out, c = centred_statistics(gram, cross, new)
    for j in range(1, m):  # (zero in exact arithmetic: the columns are centred)
        out[0, j] = 0.0
        out[j, 0] = 0.0
    return out, c, new


@_jit
def count_at_cap(shape: np.ndarray, rate: np.ndarray, n_flat: int, gram_diag: np.ndarray,
                 noise_precision: float, radial: np.ndarray, counts: np.ndarray,
                 threshold: float) -> int:
    """The kernel regressor's pruning clock, in place: a radial unit whose precision ratio
    ``⟨α_m⟩/(G_mm Σκ/p)`` (engine.precision_ratio; ∞ without data) is at least ``threshold``
    gains one sweep at the cap, any other unit restarts from 0. Returns the largest count."""
    largest = 0
    for j in range(counts.shape[0]):
        alpha = 0.0 if j < n_flat else shape[j] / rate[j]
        data = gram_diag[j] * noise_precision
        ratio = alpha / data if data > 0.0 else math.inf
        if radial[j] and ratio >= threshold:
            counts[j] += 1
        else:
            counts[j] = 0
        largest = max(largest, counts[j])
    return largest


@_jit
def online_sweeps(n: int, weights: np.ndarray, variances: np.ndarray, shape: np.ndarray,
                  rate: np.ndarray, psi: np.ndarray, psi_y: float, precision: float,
                  gram: np.ndarray, cross: np.ndarray, yy: float, count: float, cap: float,
                  floor: float, prior_rate: float, radial: np.ndarray, counts: np.ndarray,
                  threshold: float, prune_after: int
                  ) -> tuple[int, int, float, float, float, float]:
    """The kernel regressor's sweeps in one call: up to ``n`` ARD sweeps
    (:func:`sweep_regression`, no flat unit) in place, each followed by the pruning clock
    (:func:`count_at_cap`), stopping after the sweep that leaves a unit due for pruning
    (a count of ``prune_after``). A sweep whose posterior is not finite is undone and only
    raises every ψ to ``floor`` (engine.sweep_regression's "finite or unchanged").

    Returns ``(sweeps run, sweeps kept, ψ_y, Σκ/p, change, kept change)``: the relative
    change of the weights over the last sweep (0 for an undone one) and over the last kept
    one (NaN if none was kept). The same arithmetic as
    engine.sweep_regression and count_at_cap called in turn, without the interpreter
    between them (the tests check that)."""
    m = weights.shape[0]
    backup = np.empty((5, m))
    kept = 0
    change = 0.0
    kept_change = math.nan
    gram_diag = np.empty(m)
    for j in range(m):
        gram_diag[j] = gram[j, j]
    for i in range(n):
        backup[0, :] = weights
        backup[1, :] = variances
        backup[2, :] = rate
        backup[3, :] = psi
        new_psi_y, new_precision, new_change, held = sweep_regression(
            weights, variances, shape, rate, psi, psi_y, gram, cross, yy, count, 0, cap, 0,
            floor, prior_rate)
        if math.isfinite(held):
            psi_y, precision, change = new_psi_y, new_precision, new_change
            kept_change = change
            kept += 1
        else:
            weights[:] = backup[0, :]
            variances[:] = backup[1, :]
            rate[:] = backup[2, :]
            for j in range(m):
                psi[j] = max(backup[3, j], floor)
            psi_y = max(psi_y, floor)
            change = 0.0
        largest = count_at_cap(shape, rate, 0, gram_diag, precision, radial, counts,
                               threshold)
        if largest >= prune_after:
            return i + 1, kept, psi_y, precision, change, kept_change
    return n, kept, psi_y, precision, change, kept_change


@_jit
def pool_scores(corr: np.ndarray, spread: np.ndarray, sq: np.ndarray, s: float,
                tiny: float) -> np.ndarray:
    """``t² = corr²/(s·spread)`` of every candidate, 0 where its projected norm ``spread``
    is below 1e-10 of its norm ``sq`` (a candidate inside the model's span)."""
    out = np.zeros(corr.shape[0])
    for i in range(corr.shape[0]):
        if spread[i] > 1e-10 * max(sq[i], tiny):
            out[i] = corr[i] * corr[i] / (s * spread[i])
    return out


@_jit
def surviving_columns(merit: np.ndarray, ids: np.ndarray, start: int, stop: int,
                      capacity: int, due: int, protected: np.ndarray) -> int:
    """How many of ``due`` new candidate columns, computed one after the other into the
    pool ``start … stop−1`` of at most ``capacity`` candidates, the buffer manager's
    eviction rule (``core.least_useful``: a new column never scored, newest id) leaves in
    the pool; ``due`` when the survivors are not the last ones computed (the kernel
    regressor's ``proposals.surviving_columns``)."""
    n = stop
    work_merit = np.empty(stop + due)
    work_ids = np.empty(stop + due, dtype=ids.dtype)
    holder = np.full(stop + due, -1)
    next_id = 0
    for j in range(stop):
        work_merit[j] = merit[j]
        work_ids[j] = ids[j]
        next_id = max(next_id, ids[j] + 1)
    for k in range(due):
        if n - start < capacity:
            position = n
            n += 1
        else:
            position = core.least_useful(work_merit, work_ids, start, n, protected)
            if position < 0:
                return due
        work_merit[position] = np.nan
        work_ids[position] = next_id + k
        holder[position] = k
    kept = 0
    first = due
    for j in range(n):
        if holder[j] >= 0:
            kept += 1
            first = min(first, holder[j])
    # Skipping is exact only when the survivors are the last `kept` of the due columns.
    return kept if first == due - kept else due


@_jit
def predictive(row: np.ndarray, means: np.ndarray, weights: np.ndarray,
               variances: np.ndarray, psi_y: float, psi: np.ndarray) -> tuple[float, float]:
    """The predictive distribution of Ting et al. eq. 4.12,
    ``y | x ~ N(⟨b⟩ᵀf, ψ_y + Σψ_zm + Σ_m f_m² σ²_bm)``, in one pass over the first
    ``len(weights)`` entries of ``row``: ``f = row`` (``means`` empty, the regressor's raw
    basis) or ``f_m = row_m − μ_m`` (the kernel regressor's centred basis, μ_0 = 0)."""
    centred = means.shape[0] > 0
    mean = 0.0
    var = psi_y
    for j in range(weights.shape[0]):
        f = row[j] - means[j] if centred else row[j]
        mean += weights[j] * f
        var += psi[j] + f * f * variances[j]
    return mean, var
