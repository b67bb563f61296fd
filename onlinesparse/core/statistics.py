"""Window statistics ``G = HᵀH``, ``C = HᵀY`` of every tracked column: a pattern entering or
leaving (rank one), a new column over the stored patterns, the rolling recomputation of
one column from the stored rows, swaps of two columns, and the inputs' running means.

The targets carry a trailing axis (K of them; a single-output model is K = 1): ``C`` is
n × K, a pattern's target a vector of K, the stored ring's targets ``YT`` K × W (one line
per target, as ``HT`` keeps one per column).
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.basis import CONSTANT, LINEAR, profile
from onlinesparse.core.linalg import swap_rows, swap_symmetric


@jit
def new_column(kinds: np.ndarray, centres: np.ndarray, inv_r2: np.ndarray,
               features: np.ndarray, XT: np.ndarray, YT: np.ndarray, HT: np.ndarray,
               gram: np.ndarray, cross_y: np.ndarray, i: int, n: int, head: int,
               n_stored: int, factor: float) -> None:
    """The statistics of column ``i`` of the basis (just written there, ``i < n``) over
    the stored ring of patterns (``WindowStatistics.add_column`` / ``replace_column``):
    its values go to line ``i`` of ``HT``, its cross products with the ``n`` tracked
    columns (itself included) to row and column ``i`` of the Gram matrix, ``φᵀyₖ`` of each
    target (the lines of ``YT``) to ``cross_y[i]``. With forgetting, a pattern of age a weighs
    ``factor**a``.

    The values are computed for every slot of the ring (``XT`` holds the inputs feature
    by feature, so each pass is over contiguous memory and vectorises; a slot that holds
    no pattern is weighted 0 below), each squared distance summed over the inputs in
    order, as :func:`evaluate_rows` does. The sums are order-free: a full window is
    walked in storage order, and the products with the tracked columns are one
    matrix-vector product over contiguous lines of ``HT``.
    """
    cap = YT.shape[1]
    line = HT[i]
    kind = kinds[i]
    full = n_stored == cap
    if kind == CONSTANT:
        for slot in range(cap):
            line[slot] = 1.0
    elif kind == LINEAR:
        line[:] = XT[features[i]]
    else:
        centre = centres[i]
        metric = inv_r2[i]
        z = np.zeros(cap)
        for f in range(XT.shape[0]):
            inputs = XT[f]
            c = centre[f]
            scale = metric[f]
            for slot in range(cap):
                diff = inputs[slot] - c
                z[slot] += diff * diff * scale
        for slot in range(cap):
            line[slot] = profile(kind, z[slot])
    if factor == 1.0 and full:
        # Every slot holds an unweighted pattern: the weights are the values themselves.
        cross = np.dot(HT[:n], line)
        with_y = np.dot(YT, line)
    else:
        weighted = np.zeros(cap)
        for t in range(n_stored):
            slot = (head + t) % cap
            weight = line[slot] if factor == 1.0 else (
                line[slot] * factor ** (n_stored - 1 - t))
            weighted[slot] = weight
        cross = np.dot(HT[:n], weighted)
        with_y = np.dot(YT, weighted)
    for k in range(n):
        gram[k, i] = cross[k]
        gram[i, k] = cross[k]
    cross_y[i] = with_y


@jit
def refresh_column(HT: np.ndarray, YT: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                   traffic: np.ndarray, n: int, i: int) -> None:
    """Recompute column ``i``'s statistics from the stored rows of a full window
    (``WindowStatistics.refresh_step``): row and column ``i`` of the Gram matrix and
    ``φᵢᵀyₖ`` of each target, with every slot of the ring holding a pattern. One matrix-vector
    product
    over contiguous lines of ``HT``, as in :func:`new_column`."""
    line = HT[i]
    cross = np.dot(HT[:n], line)
    for k in range(n):
        gram[k, i] = cross[k]
        gram[i, k] = cross[k]
    cross_y[i] = np.dot(YT, line)
    traffic[i] = 0.0


@jit
def rolling_refresh(HT: np.ndarray, YT: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                    stamps: np.ndarray, traffic: np.ndarray, n: int, n_seen: int,
                    credit: float, period: int, moments: np.ndarray) -> tuple[float, int]:
    """One pattern's share of the rolling refresh (``WindowStatistics.refresh_step``, whose
    docstring gives the rule): ``n/period`` columns' worth of credit, and for each whole
    column owed, the stalest column (lowest stamp) recomputed by :func:`refresh_column`;
    then each target's ``yₖᵀyₖ`` and ``Σyₖ`` recomputed into ``moments`` (2 × K) from the
    stored ring (full: every slot holds a pattern).

    Returns ``(credit left, pattern count since which every column is exact)``, the last
    −1 (and ``moments`` untouched) when no column was due.
    """
    credit += n / period
    if credit < 1.0:
        return credit, -1
    while credit >= 1.0:
        credit -= 1.0
        i = np.argmin(stamps[:n])
        refresh_column(HT, YT, gram, cross_y, traffic, n, i)
        stamps[i] = n_seen
    for k in range(YT.shape[0]):
        moments[0, k] = np.dot(YT[k], YT[k])
        moments[1, k] = np.sum(YT[k])
    return credit, stamps[:n].min()


@jit
def gram_rank_one(gram: np.ndarray, cross_y: np.ndarray, traffic: np.ndarray, n: int,
                  h: np.ndarray, y: np.ndarray, sign: float) -> None:
    """``G[:n, :n] += sign·hhᵀ`` and ``C[:n] += sign·h yᵀ`` (y: the pattern's K targets): a
    pattern enters (sign = 1) or
    leaves (sign = −1) the statistics (``WindowStatistics.push`` / ``pop_oldest``); each
    column's ``traffic`` grows by what passed through its diagonal (:func:`column_error`)."""
    for i in range(n):
        hi = sign * h[i]
        row = gram[i]
        traffic[i] += h[i] * h[i] + abs(row[i])
        for j in range(n):
            row[j] += hi * h[j]
        for k in range(y.shape[0]):  # (indexed: a view per row costs a refcount pair)
            cross_y[i, k] += hi * y[k]


@jit
def column_error_exceeds(gram: np.ndarray, traffic: np.ndarray, m: int, limit: float
                         ) -> bool:
    """Whether :func:`column_error` exceeds ``limit``, without a division per column (it
    runs on every pattern)."""
    for i in range(m):
        if traffic[i] > limit * gram[i, i]:
            return True
    return False


@jit
def column_error(gram: np.ndarray, traffic: np.ndarray, m: int) -> float:
    """``max traffic_i/Gᵢᵢ`` over the model's columns: a bound on the relative rounding
    error of each Gram diagonal in units of ε. Every rank-one update of ``Gᵢᵢ`` rounds it
    by at most ε·(hᵢ² + |Gᵢᵢ|), and ``traffic_i`` sums those since the column was last
    computed from the stored rows; dividing by today's ``Gᵢᵢ`` keeps the bound honest when
    subtractions have made ``Gᵢᵢ`` collapse. (∞ for a non-positive diagonal that has seen
    traffic.)"""
    worst = 0.0
    for i in range(m):
        left = gram[i, i]
        if traffic[i] == 0.0:
            continue
        if not left > 0.0:
            return math.inf
        ratio = traffic[i] / left
        if ratio > worst:
            worst = ratio
    return worst


@jit
def cancellation_ratio(gram: np.ndarray, h: np.ndarray, m: int, pending: bool = False
                       ) -> float:
    """``max hᵢ²/Gᵢᵢ`` over the model's columns, where ``Gᵢᵢ > 0``: the rounding-error
    account of subtracting a pattern from the statistics (``Gᵢᵢ`` after the subtraction;
    ``pending``: the subtraction of ``h`` is still to be made, as in a slide)."""
    worst = 0.0
    for i in range(m):
        left = gram[i, i] - h[i] * h[i] if pending else gram[i, i]
        if left > 0.0:
            ratio = h[i] * h[i] / left
            if ratio > worst:
                worst = ratio
    return worst


@jit
def swap_columns(gram: np.ndarray, HT: np.ndarray, cross_y: np.ndarray, ids: np.ndarray,
                 merit: np.ndarray, stamps: np.ndarray, traffic: np.ndarray,
                 kinds: np.ndarray,
                 inv_r2: np.ndarray, features: np.ndarray, centres: np.ndarray, i: int,
                 j: int, n: int) -> None:
    """Exchange tracked columns i and j everywhere they live
    (``WindowStatistics.swap_columns``): the symmetric Gram matrix, the stored rows, the
    per-column numbers and the basis description (kind, centre, radius, input)."""
    swap_symmetric(gram, i, j, n)
    # Unused slots of the ring hold zeros or stale rows: swapping them too is harmless.
    swap_rows(HT, i, j)
    swap_rows(cross_y, i, j)
    ids[i], ids[j] = ids[j], ids[i]
    merit[i], merit[j] = merit[j], merit[i]
    stamps[i], stamps[j] = stamps[j], stamps[i]
    traffic[i], traffic[j] = traffic[j], traffic[i]
    kinds[i], kinds[j] = kinds[j], kinds[i]
    features[i], features[j] = features[j], features[i]
    swap_rows(inv_r2, i, j)
    swap_rows(centres, i, j)


@jit
def running_mean(means: np.ndarray, vector: np.ndarray, count: int) -> None:
    """``means += (vector − means)/count`` in place (``FeatureMap.commit``)."""
    for i in range(means.shape[0]):
        means[i] += (vector[i] - means[i]) / count


