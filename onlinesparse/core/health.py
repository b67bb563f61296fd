"""Numerical health of the incremental inverse: the O(M) check, the O(M²) drift probe
``‖S(G + Λ)v − v‖/‖v‖``, a cheap bound on cond(G + Λ), and the decision of whether a
rounding account that has passed its threshold keeps S (FGCV section 3.2, point 5: refresh
when the maintained quantities can no longer be trusted).
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import EPS, jit
from onlinesparse.core.linalg import symmetric_matvec
from onlinesparse.core.state import REFRESH_STATE, REFRESH_STATISTICS
from onlinesparse.core.statistics import column_error_exceeds

# Refresh once the estimated relative rounding error reaches this many machine epsilons
# (≈ 9e-9): far below anything a prediction or a GCV comparison can see, and rare enough
# that the O(M³) refresh stays off the typical sample's path.
REFRESH_AT = 4e7
# Past that estimate, the measured residual ‖S(G + Λ)v − v‖/‖v‖ decides: below this S is
# kept (and the estimate restarts from the measurement). It bounds the relative error of
# w = Sc, so half the level the estimate tolerates is kept (4.4e-9, below the 1e-8 to
# which a window model's weights are held to the batch solution): a stricter bar refreshes
# S for residuals no prediction can see, at O(M³) a time (docs/numerics.md).
ACCOUNT_DRIFT = 0.5 * REFRESH_AT * EPS
# What decide asks of its caller: nothing (S is kept, or its refresh is deferred and
# recorded as pending), or the refresh recorded as pending, now.
KEEP, REFRESH_NOW = 0, 1


@jit
def account(estimate: float, propagation: float, fresh: float) -> float:
    """The first-order rounding account of S, in units of machine ε, after one operation:
    the error already there times the factor by which the operation propagates it, plus
    the error it creates (each operation of :mod:`onlinesparse.core.updates` reports both;
    e.g. adding a pattern contracts the old error by ``1/(1 + hᵀSh)`` and creates
    ``1 + hᵀSh``)."""
    return estimate * propagation + fresh


@jit
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


@jit
def condition_bound(gram: np.ndarray, variance: np.ndarray, lambdas: np.ndarray) -> float:
    """``max(diag(G + Λ))·max(diag S)`` (``IncrementalRidge.condition_bound``)."""
    largest_a = -math.inf
    largest_s = -math.inf
    for i in range(lambdas.shape[0]):
        largest_a = max(largest_a, gram[i, i] + lambdas[i])
        largest_s = max(largest_s, variance[i, i])
    return largest_a * largest_s


@jit
def measured_estimate(gram: np.ndarray, variance: np.ndarray, lambdas: np.ndarray,
                      account_drift: float) -> float:
    """``IncrementalRidge._decide``'s measurement of S once its rounding account has passed
    its threshold: S is kept when its :func:`drift` is at most ``account_drift`` or within
    what a fresh factorisation would leave (``10·ε·``:func:`condition_bound`). Returns the
    account restarted from the measurement, ``max(1, drift/ε)``, or −1 when S is not kept."""
    if lambdas.shape[0] == 0:  # an empty model has nothing to drift
        return 1.0
    residual = drift(gram, variance, lambdas)
    if not residual <= max(account_drift, 10.0 * EPS * condition_bound(gram, variance,
                                                                        lambdas)):
        return -1.0
    return max(1.0, residual / EPS)


@jit
def is_healthy(variance: np.ndarray, weights: np.ndarray) -> bool:
    """The O(M·K) check after every update: ``diag S > 0`` and finite weights (M × K)."""
    for i in range(weights.shape[0]):
        if not variance[i, i] > 0.0:
            return False
        for k in range(weights.shape[1]):
            if not math.isfinite(weights[i, k]):
                return False
    return True


@jit
def close_round(ridge_record: np.ndarray, exact_since: int, n_seen: int) -> None:
    """The statistics' account under the window's rolling refresh: once every column has
    been recomputed from the stored rows since the current round began (``exact_since``,
    ``WindowStatistics.refresh_step``), only that round's rounding can remain in them, and
    a new round begins."""
    r = ridge_record[0]
    if exact_since >= r.round_start:
        r.statistics_error = r.round_error
        r.round_error = 0.0
        r.round_start = n_seen


@jit
def _call_for_refresh(ridge_record: np.ndarray, kind: int, broken: bool) -> int:
    """Record a refresh of ``kind`` (merged with one already pending); it runs now when
    the state is broken or the owner does not defer refreshes."""
    r = ridge_record[0]
    if kind > r.pending:
        r.pending = kind
    if broken or not r.defer_refreshes:
        return REFRESH_NOW
    return KEEP


@jit
def decide(ridge_record: np.ndarray, pattern: bool, exact_since: int, healthy: int,
           empty_window: bool, gram: np.ndarray, traffic: np.ndarray, variance: np.ndarray,
           weights: np.ndarray, lambdas: np.ndarray) -> int:
    """Whether the incremental S can still be trusted after an operation whose rounding
    accounts are already added (``IncrementalRidge._after_update``). Returns ``KEEP`` or
    ``REFRESH_NOW`` (``ridge_record.pending`` says what to refresh; a deferred refresh is
    recorded there and ``KEEP`` returned).

    * After a pattern (``pattern``): the statistics are recomputed when their own account
      or a column's bound (:func:`~onlinesparse.core.statistics.column_error`) passes
      ``REFRESH_AT``, and every ``refresh_every`` patterns (S alone while the window's
      rolling refresh keeps the statistics exact: ``exact_since`` ≥ 0).
    * An emptied window has exactly zero statistics: refresh now.
    * The O(M) check every time (``healthy`` −1 when the caller has not made it): positive
      diagonal of S, finite weights. Past ``REFRESH_AT`` the account is replaced by a
      measurement (:func:`measured_estimate`), and every ``check_every`` operations the
      drift probe runs (a backstop for what the first-order account misses).
    """
    r = ridge_record[0]
    m = weights.shape[0]
    if pattern:
        r.since_refresh += 1
        if (r.statistics_error > REFRESH_AT
                or column_error_exceeds(gram, traffic, m, REFRESH_AT)):
            return _call_for_refresh(ridge_record, REFRESH_STATISTICS, False)
        if r.since_refresh >= r.refresh_every:
            if exact_since >= 0:
                r.since_refresh = 0  # the statistics are kept by the rolling refresh
                return _call_for_refresh(ridge_record, REFRESH_STATE, False)
            return _call_for_refresh(ridge_record, REFRESH_STATISTICS, False)
    if empty_window:
        r.pending = REFRESH_STATISTICS
        return REFRESH_NOW
    r.since_check += 1
    ok = is_healthy(variance, weights) if healthy < 0 else healthy > 0
    if ok and r.error_estimate > REFRESH_AT:
        # The first-order estimate is pessimistic for near-collinear additions: measure
        # before paying O(M³).
        restarted = measured_estimate(gram, variance, lambdas, ACCOUNT_DRIFT)
        ok = restarted >= 0.0
        if ok:
            r.error_estimate = restarted
    if ok and r.since_check >= r.check_every:
        r.since_check = 0
        ok = m == 0 or drift(gram, variance, lambdas) <= r.drift_tolerance
    if not ok:
        return _call_for_refresh(ridge_record, REFRESH_STATE,
                                 not is_healthy(variance, weights))
    return KEEP
