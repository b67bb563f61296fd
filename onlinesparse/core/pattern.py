"""A pattern into a window that stores its patterns: Orr (1996) A.8 and A.11 with the
window's bookkeeping, in one compiled call.

``IncrementalRidge.add_pattern`` and the fused sample of
:class:`~onlinesparse.orr.rbf.SparseRBFRegressor` (:mod:`onlinesparse.orr.sample`) both call
:func:`learn_pattern`: the slide (or the growth) of S and G, the ring, the rounding
accounts, the rolling refresh and the verdict on S.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.health import REFRESH_NOW, account, close_round, decide, is_healthy
from onlinesparse.core.state import SUM, YY
from onlinesparse.core.statistics import gram_rank_one, rolling_refresh
from onlinesparse.core.updates import (
    MIN_RESIDUAL_LEVERAGE,
    SLIDE_ADDITION,
    SLIDE_CANCELLATION,
    SLIDE_HEALTHY,
    SLIDE_LEVERAGE,
    SLIDE_REMOVAL,
    sherman_morrison,
    slide_window,
)

# What learn_pattern returns: the pattern is in; nothing changed, because the oldest
# pattern cannot leave first (the caller adds first, then removes); the pattern is in and
# S is to be refreshed now (RIDGE.pending says what).
LEARNED, SLIDE_REFUSED, REFRESH = 0, 1, 2

__all__ = ["LEARNED", "SLIDE_REFUSED", "REFRESH", "learn_pattern", "target_mean",
           "target_variance"]


@jit
def learn_pattern(window_record: np.ndarray, ridge_record: np.ndarray, x: np.ndarray,
                  y: np.ndarray, row: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                  traffic: np.ndarray, HT: np.ndarray, XT: np.ndarray, YT: np.ndarray,
                  moments: np.ndarray, stamps: np.ndarray, variance: np.ndarray,
                  weights: np.ndarray, lambdas: np.ndarray) -> int:
    """Add a pattern (its K targets ``y``) to a window that stores its patterns, the oldest
    leaving a full one (``IncrementalRidge.add_pattern``); ``row`` is its row over every
    tracked column; ``YT`` the ring's targets and ``moments`` their Σy², Σy
    (``core.state.Targets``).

    A full window slides (:func:`~onlinesparse.core.updates.slide_window`: Orr A.11 for the
    oldest pattern and A.8 for the new one in one rank-two pass over S and G); a filling
    one takes the pattern (Orr A.8). The new pattern takes the oldest one's slot of the
    ring. Then the rounding accounts, a full window's share of the rolling refresh
    (:func:`~onlinesparse.core.statistics.rolling_refresh`) and the verdict on S
    (:func:`~onlinesparse.core.health.decide`). Returns ``LEARNED``, ``SLIDE_REFUSED``
    (nothing changed) or ``REFRESH``.
    """
    w = window_record[0]
    r = ridge_record[0]
    n = w.n_columns
    m = weights.shape[0]
    capacity = w.store_capacity
    head = w.head
    ring = YT.shape[1]
    if w.n_stored >= capacity:
        h_old = HT[:n, head].copy()
        y_old = YT[:, head].copy()
        out = np.empty(5)
        if not slide_window(gram, cross_y, traffic, n, variance, weights, m, row, y, h_old,
                            y_old, MIN_RESIDUAL_LEVERAGE, np.empty(m), out):
            return SLIDE_REFUSED
        for k in range(y.shape[0]):
            moments[YY, k] -= y_old[k] * y_old[k]
            moments[YY, k] += y[k] * y[k]
            moments[SUM, k] += y[k] - y_old[k]
        slot = head
        w.head = (head + 1) % ring
        removal, addition = out[SLIDE_REMOVAL], out[SLIDE_ADDITION]
        cancellation = out[SLIDE_CANCELLATION]
        healthy = out[SLIDE_HEALTHY] > 0.0
        r.leverage = out[SLIDE_LEVERAGE]
        if m > 0:  # (a model without basis functions has no S to account for)
            r.error_estimate = account(r.error_estimate, 1.0 / removal, 1.0 / removal)
            r.statistics_error += cancellation
            r.round_error += cancellation
            r.error_estimate = account(r.error_estimate, 1.0, cancellation)
            r.error_estimate = account(r.error_estimate, 1.0 / addition, addition)
    else:
        gram_rank_one(gram, cross_y, traffic, n, row, y, 1.0)
        for k in range(y.shape[0]):
            moments[YY, k] += y[k] * y[k]
            moments[SUM, k] += y[k]
        w.count += 1.0
        slot = (head + w.n_stored) % ring  # (a ring still growing: its size)
        w.n_stored += 1
        healthy = True
        r.leverage = 0.0
        if m > 0:
            addition = sherman_morrison(variance, weights, row[:m], y, 1.0, -math.inf,
                                        np.empty(m))
            r.leverage = addition - 1.0
            r.error_estimate = account(r.error_estimate, 1.0 / addition, addition)
            healthy = is_healthy(variance, weights)
    XT[:, slot] = x
    YT[:, slot] = y
    HT[:n, slot] = row[:n]
    w.n_seen += 1
    r.version += 1
    exact_since = -1
    if w.n_stored >= capacity:
        credit, exact = rolling_refresh(HT, YT, gram, cross_y, stamps, traffic, n, w.n_seen,
                                        w.refresh_credit, r.refresh_every, moments)
        w.refresh_credit = credit
        if exact >= 0:
            w.exact_since = exact
        exact_since = w.exact_since
        close_round(ridge_record, exact_since, w.n_seen)
    if decide(ridge_record, True, exact_since, 1 if healthy else 0, False, gram, traffic,
              variance, weights, lambdas) == REFRESH_NOW:
        return REFRESH
    return LEARNED



@jit
def target_variance(window_record: np.ndarray, moments: np.ndarray, k: int) -> float:
    """The variance of target k in memory, ``yᵀy/p − (Σy/p)²`` (at least 1e-12 of the
    second moment): the target's scale, which makes the model's decisions independent of
    the unit of y."""
    count = window_record[0].count
    if count <= 0.0:
        return 0.0
    mean = moments[SUM, k] / count
    second = moments[YY, k] / count
    return max(second - mean * mean, 1e-12 * second)


@jit
def target_mean(window_record: np.ndarray, moments: np.ndarray, k: int) -> float:
    """The mean of target k in memory (0 before any)."""
    count = window_record[0].count
    return moments[SUM, k] / count if count > 0.0 else 0.0

