"""Numerical health of the incremental inverse: the O(M) check, the O(M²) drift probe
``‖S(G + Λ)v − v‖/‖v‖``, a cheap bound on cond(G + Λ), and the decision of whether a
rounding account that has passed its threshold keeps S (FGCV section 3.2, point 5: refresh
when the maintained quantities can no longer be trusted).
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse.core._jit import EPS, jit
from onlinesparse.core.linalg import symmetric_matvec


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
    """The O(M) check after every update: ``diag S > 0`` and finite weights."""
    for i in range(weights.shape[0]):
        if not (variance[i, i] > 0.0 and math.isfinite(weights[i])):
            return False
    return True


@jit
def settle(estimate: float, factor: float, gram: np.ndarray, variance: np.ndarray,
           weights: np.ndarray, lambdas: np.ndarray, refresh_at: float,
           account_drift: float) -> float:
    """``IncrementalRidge._after_update((factor, factor))`` after a move of the pruner,
    when the periodic drift probe is not due: the account ``E·f + f``, the O(M) health
    check and, past ``refresh_at``, the measurement of S (:func:`measured_estimate`).
    Returns the account to carry on with, or −1 when S is to be refreshed (the caller's
    ``_decide``)."""
    after = account(estimate, factor, factor)
    if not is_healthy(variance, weights):
        return -1.0
    if after > refresh_at:
        return measured_estimate(gram, variance, lambdas, account_drift)
    return after


