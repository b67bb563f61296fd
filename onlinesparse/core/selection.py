"""The pruner's decisions (Orr (1996) 6.4 local ridge; FGCV section 3): re-estimate or
delete a basis function, add or trade a candidate, and the order of a sample's evaluations.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.criteria import (
    OPT_GCV,
    OPT_LAMBDA,
    OPT_WITHOUT,
    Q_A,
    Q_ALPHA,
    Q_B,
    Q_BETA,
    Q_C,
    Q_PSI,
    basis_optimum,
    basis_quantities,
    candidate_optima,
    gcv,
    optimal_lambda,
    quantity_slots,
)
from onlinesparse.core.updates import lambda_rank_one

# The order of a sample's evaluations (ints[FIRST], GCVPruner.step's `first`): by the
# pruner's turn counter, or alternating from a candidate move or from a basis move.
TURN_ORDER, CANDIDATE_FIRST, BASIS_FIRST = range(3)

# What an evaluation does (evaluation_kind): nothing left to evaluate, a candidate move, a
# basis move.
NO_MOVE, CANDIDATE_MOVE, BASIS_MOVE = 0, 1, 2
# What candidate_move decides, and where it leaves the move in its `out` buffer (the
# pruner's `move`): the candidate's column position, its λ, the basis function a trade
# removes, and the candidate's gain in GCV.
NO_CANDIDATE, ADD, TRADE = 0, 1, 2
MOVE_COLUMN, MOVE_LAMBDA, MOVE_TRADED, MOVE_GAIN = 0, 1, 2, 3
# What basis_move (and intercept_move) decides — leave λⱼ, λⱼ re-estimated in place,
# delete j, set λⱼ by the exact remove-and-add path — and where it leaves the new λ, j's
# usefulness (its merit) and the re-estimation's rounding-error factor.
KEEP_LAMBDA, REESTIMATED, DELETE, EXACT_LAMBDA = 0, 1, 2, 3
BASIS_LAMBDA, BASIS_USEFULNESS, BASIS_FACTOR = 0, 1, 2


@jit
def evaluation_kind(first: int, k: int, turn: int, n_candidates: int, n_model: int
                    ) -> tuple[int, int]:
    """The pruner's turn order, for evaluation ``k`` of a sample: returns ``(kind, turn)``.

    Evaluations alternate between candidate moves and basis moves, by the pruner's turn
    counter (``first = TURN_ORDER``, which advances ``turn``) or, for a caller that
    schedules them around its heavy work, starting from ``CANDIDATE_FIRST`` or
    ``BASIS_FIRST``. A turn whose side has nothing to evaluate goes to the other side.
    """
    if first == TURN_ORDER:
        turn += 1
        candidate_turn = turn % 2 == 1
    else:
        candidate_turn = (k % 2 == 0) == (first == CANDIDATE_FIRST)
    if candidate_turn and n_candidates > 0:
        return CANDIDATE_MOVE, turn
    if n_model > 0:
        return BASIS_MOVE, turn
    if n_candidates > 0:
        return CANDIDATE_MOVE, turn
    return NO_MOVE, turn


def continued_order(first: int, done: int) -> int:
    """The order for the rest of a sample's evaluations after ``done + 1`` of them ran
    elsewhere (a sample handed back by the compiled call continues where it stopped)."""
    if first != TURN_ORDER and (done + 1) % 2:
        return BASIS_FIRST + CANDIDATE_FIRST - first
    return first


@jit
def intercept_move(variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray, j: int,
                   out: np.ndarray) -> int:
    """The move of basis function j when it is the model's intercept (the constant basis
    function, with ``GCVPruner(free_intercept=True)``): λⱼ = 0, never deleted, never
    traded.

    Ridge regression leaves the intercept unpenalised (Hastie, Tibshirani and Friedman
    (2009) section 3.4.1): with λⱼ = 0 on the constant column, P·1 = 0, so every residual,
    GCV and each candidate's optimum are the same for y and y + c, and the model's choices
    do not depend on where the target's unit has its zero. A GCV-chosen λ there shrinks the
    level toward an arbitrary 0, and the penalised kernels then carry the level instead.

    Returns what :func:`basis_move` returns: ``KEEP_LAMBDA`` (λⱼ is 0 already), ``REESTIMATED``
    (set to 0 here by :func:`lambda_rank_one`; ``out[BASIS_FACTOR]`` its rounding-error
    factor) or ``EXACT_LAMBDA`` (set λⱼ to ``out[BASIS_LAMBDA]`` = 0 by the exact path).
    ``out[BASIS_USEFULNESS]`` is NaN: a basis function never re-estimated is never traded
    (:func:`candidate_move`).
    """
    out[BASIS_LAMBDA] = 0.0
    out[BASIS_USEFULNESS] = math.nan
    if lambdas[j] == 0.0:
        return KEEP_LAMBDA
    factor = lambda_rank_one(variance, weights, lambdas, j, 0.0)
    if factor > 0.0:
        out[BASIS_FACTOR] = factor
        return REESTIMATED
    return EXACT_LAMBDA


@jit
def lambda_min(noise_variance: float, count: float, target_variance: float) -> float:
    """The floor on every λ: FGCV section 3.2, point 7, α_min = 1/N on weights in the
    target's units, i.e. λ_min = (σ²/s²)/N with s² the target's variance. (FGCV's data are
    standardised; read on raw targets, λ_min = σ²/N would scale with the square of their
    unit, and a model in mN·m would be regularised 10⁶ times harder than one in N·m.)"""
    ratio = noise_variance / target_variance if target_variance > 0.0 else 1.0
    return ratio / max(count, 1.0)


@jit
def proposes(nearest: float, novelty_sq: float, error: float, noise_std: float,
             error_threshold: float) -> bool:
    """The buffer manager's test of a learned input as a new centre: novel (its squared
    distance to every centre, ``nearest``, exceeds ``novelty_sq``) or badly predicted (its
    error exceeds ``error_threshold`` predictive standard deviations)."""
    badly_predicted = noise_std > 0 and abs(error) > error_threshold * noise_std
    return nearest > novelty_sq or badly_predicted


@jit
def model_budget(max_basis: int, count: float) -> int:
    """``GCVPruner.budget``: at most ``max_basis`` basis functions, and no more than half
    as many as there are patterns (``count``)."""
    return min(max_basis, int(count // 2))


@jit
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


@jit
def candidate_move(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
                   weights: np.ndarray, lambdas: np.ndarray, merit: np.ndarray,
                   yy: np.ndarray, scales: np.ndarray, count: float, error: float,
                   gamma: float, columns: np.ndarray,
                   lambda_min: float, min_gain: float, at_budget: bool, keep: int,
                   out: np.ndarray) -> int:
    """The decision of ``GCVPruner._candidate_move``, whose docstring gives the rules:
    score ``columns`` (:func:`candidate_optima`), record each gain in ``merit``, and
    choose the best one that lowers GCV by more than ``min_gain``; at the budget, price
    trading the least useful basis function for it (its usefulness refreshed first, then
    the candidate's optimum without it, :func:`candidate_quantities` with ``removed``).
    ``error`` and ``gamma`` are the current model's (``IncrementalRidge.summary``, computed
    once per change of the model and shared with :func:`basis_move`); ``yy`` and
    ``scales`` each target's ``yᵀy`` and weight in the shared criteria
    (:func:`~onlinesparse.core.criteria.error_and_gamma`).

    Returns ``NO_CANDIDATE``, ``ADD`` (add column ``out[MOVE_COLUMN]`` with λ
    ``out[MOVE_LAMBDA]``) or ``TRADE`` (remove basis function ``out[MOVE_TRADED]`` and add
    the column); ``out[MOVE_GAIN]`` is the chosen candidate's gain. Basis function ``keep``
    (the intercept, −1 for none) is never traded.
    """
    m = weights.shape[0]
    current = gcv(error, gamma, count)
    k = columns.shape[0]
    quantities = np.empty((2 + 2 * scales.shape[0], k))
    optima = np.empty((2, k))
    candidate_optima(variance, gram, m, cross_y, weights, scales, columns, -1, error,
                     count - gamma, count, lambda_min, quantities, optima)
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
        return NO_CANDIDATE
    out[MOVE_COLUMN] = columns[best]
    out[MOVE_LAMBDA] = optima[0, best]
    out[MOVE_GAIN] = best_gain
    if not at_budget:
        return ADD
    # The least useful basis function; NaN (never re-estimated) is never traded.
    j = -1
    lowest = math.inf
    for i in range(m):
        value = merit[i]
        if i != keep and value == value and value < lowest:
            lowest = value
            j = i
    # To first order the trade changes GCV by (usefulness − gain).
    if j < 0 or best_gain <= lowest + threshold:
        return NO_CANDIDATE
    # That usefulness may be many samples old: refresh it, so that a stale low value does
    # not invite the same failing trade again and again.
    basis = np.empty(quantity_slots(scales.shape[0]))
    basis_quantities(variance, gram, cross_y, weights, lambdas, yy, scales, count, j, basis)
    _, _, without_j, _ = optimal_lambda(basis[Q_A], basis[Q_B], basis[Q_C], basis[Q_ALPHA],
                                        basis[Q_BETA], basis[Q_PSI], count, lambda_min)
    merit[j] = without_j - current
    if best_gain <= merit[j] + threshold:
        return NO_CANDIDATE
    # The exact price: the candidate's optimum in the model without j.
    candidate_optima(variance, gram, m, cross_y, weights, scales, columns[best:best + 1],
                     j, basis[Q_A], basis[Q_ALPHA], count, lambda_min, quantities, optima)
    if not (math.isfinite(optima[0, 0]) and optima[1, 0] < current - threshold):
        return NO_CANDIDATE
    out[MOVE_LAMBDA] = optima[0, 0]
    out[MOVE_TRADED] = j
    return TRADE


@jit
def basis_move(variance: np.ndarray, gram: np.ndarray, cross_y: np.ndarray,
               weights: np.ndarray, lambdas: np.ndarray, yy: np.ndarray,
               scales: np.ndarray, count: float, error: float, gamma: float, j: int,
               lambda_min: float, relative_gain: float, out: np.ndarray) -> int:
    """The decision of ``pruner.reestimate_basis`` for basis function j, whose docstring
    gives the rules, with the common outcome carried out in place.

    ``error`` and ``gamma`` are the current model's (its GCV is compared against).
    ``out`` (room for :func:`~onlinesparse.core.criteria.quantity_slots`) receives the new λ
    (``BASIS_LAMBDA``), j's usefulness
    (``BASIS_USEFULNESS``) and the re-estimation's rounding-error factor
    (``BASIS_FACTOR``). Returns ``KEEP_LAMBDA`` (leave j as it is), ``REESTIMATED`` (λⱼ
    re-estimated here by :func:`lambda_rank_one`), ``DELETE`` (its optimum is ∞ and GCV
    does not rise) or ``EXACT_LAMBDA`` (set λⱼ through the exact remove-and-add path,
    which the caller takes).
    """
    current = gcv(error, gamma, count)
    basis_optimum(variance, gram, cross_y, weights, lambdas, yy, scales, count, j,
                  lambda_min, out)
    lam = out[OPT_LAMBDA]
    value = out[OPT_GCV]
    removed = out[OPT_WITHOUT]
    out[BASIS_USEFULNESS] = removed - current
    if math.isinf(lam):
        return DELETE if removed <= current * (1.0 + relative_gain) else KEEP_LAMBDA
    if not (value < current * (1.0 - relative_gain) and lam != lambdas[j]):
        return KEEP_LAMBDA
    factor = lambda_rank_one(variance, weights, lambdas, j, lam)
    if factor > 0.0:
        out[BASIS_FACTOR] = factor
        return REESTIMATED
    return EXACT_LAMBDA


