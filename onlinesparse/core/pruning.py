"""The pruner's evaluations, compiled: the loop of ``GCVPruner.step`` with its moves
carried out in place (Orr (1996) 6.4 local ridge; FGCV section 3's add / delete /
re-estimate).

Each evaluation is a candidate move or a basis move in the turn order of
:func:`~onlinesparse.core.selection.evaluation_kind`. The decisions are
:func:`~onlinesparse.core.selection.candidate_move` and
:func:`~onlinesparse.core.selection.basis_move`; the moves are the exact operations of
:mod:`onlinesparse.core.updates` on the ridge state and swaps of the window's columns; after
each one its rounding account is added and :func:`~onlinesparse.core.health.decide`
judges S. A move that needs what only the caller has (the stored rows for a nearly
dependent column, a second change of the model's size in one call) or a refresh of S now
stops the loop and is reported in the pruner's record.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from onlinesparse._jit import jit
from onlinesparse.core.basis import CONSTANT
from onlinesparse.core.criteria import error_and_gamma
from onlinesparse.core.health import REFRESH_NOW, account, decide
from onlinesparse.core.linalg import swap_rows, swap_symmetric
from onlinesparse.core.selection import (
    BASIS_FACTOR,
    BASIS_USEFULNESS,
    CANDIDATE_MOVE,
    DELETE,
    MOVE_COLUMN,
    MOVE_LAMBDA,
    MOVE_TRADED,
    NO_CANDIDATE,
    NO_MOVE,
    REESTIMATED,
    TRADE,
    basis_move,
    candidate_move,
    evaluation_kind,
    intercept_move,
    model_budget,
)
from onlinesparse.core.state import YY, Targets
from onlinesparse.core.statistics import swap_columns
from onlinesparse.core.updates import (
    MIN_RELATIVE_DELTA,
    PROJECT_BELOW,
    add_basis,
    remove_basis,
    replace_basis,
)

# Why evaluate stopped (PRUNER.stop): its evaluations are done; a move is the caller's to
# carry out (PRUNER.action and the `move` array say which); a move is made and accounted
# but S is to be refreshed now (RIDGE.pending says what).
FINISHED, HAND_BACK, REFRESH = 0, 1, 2
# A move must lower GCV by this relative amount to count (a re-estimation), or may raise
# it by at most this much (a deletion): below it, rounding decides.
RELATIVE_GAIN = 1e-9


class Tracked(NamedTuple):
    """The window's arrays that travel with a tracked column (``WindowStatistics``)."""

    gram: np.ndarray
    cross_y: np.ndarray
    traffic: np.ndarray
    HT: np.ndarray
    ids: np.ndarray
    merit: np.ndarray
    stamps: np.ndarray
    kinds: np.ndarray
    centres: np.ndarray
    inv_r2: np.ndarray
    features: np.ndarray


class Ridge(NamedTuple):
    """The ridge state ``S``, ``w``, ``λ`` (``RidgeState``)."""

    variance: np.ndarray
    weights: np.ndarray
    lambdas: np.ndarray


@jit
def swap_tracked(t: Tracked, i: int, j: int, n: int) -> None:
    """Exchange tracked columns i and j (``WindowStatistics.swap_columns``)."""
    swap_columns(t.gram, t.HT, t.cross_y, t.ids, t.merit, t.stamps, t.traffic, t.kinds,
                 t.inv_r2, t.features, t.centres, i, j, n)


@jit
def criteria_now(ridge_record: np.ndarray, targets: Targets, gram: np.ndarray,
                 cross_y: np.ndarray, variance: np.ndarray, weights: np.ndarray,
                 lambdas: np.ndarray) -> tuple[float, float]:
    """``(Σₖ ωₖyₖᵀP²yₖ, γ)`` of the current model (:func:`error_and_gamma`; each target's
    error into ``targets.training``), computed once per version of it and kept in the
    ridge's record (``IncrementalRidge.summary``)."""
    r = ridge_record[0]
    if r.summary_version != r.version:
        r.training_error, r.gamma = error_and_gamma(gram, cross_y, weights, lambdas,
                                                    variance, targets.moments[YY],
                                                    targets.scales, targets.training)
        r.summary_version = r.version
    return r.training_error, r.gamma


@jit
def _after_move(ridge_record: np.ndarray, window_record: np.ndarray, t: Tracked, s: Ridge,
                factor: float) -> bool:
    """A move's rounding account ``(factor, factor)`` and the verdict on S
    (``IncrementalRidge._after_update``); True when S is to be refreshed now."""
    r = ridge_record[0]
    r.version += 1
    r.error_estimate = account(r.error_estimate, factor, factor)
    return decide(ridge_record, False, -1, -1, False, t.gram, t.traffic, s.variance,
                  s.weights, s.lambdas) == REFRESH_NOW


@jit
def _is_protected(protected: np.ndarray, column_id: int) -> bool:
    for p in range(protected.shape[0]):
        if protected[p] == column_id:
            return True
    return False


@jit
def _is_intercept(pruner_record: np.ndarray, kinds: np.ndarray, j: int) -> bool:
    """Whether basis function j is the model's intercept: the constant basis function,
    when ``PRUNER.free_intercept`` is set (:func:`~onlinesparse.core.selection.intercept_move`)."""
    return pruner_record[0].free_intercept != 0 and kinds[j] == CONSTANT


@jit
def intercept_position(pruner_record: np.ndarray, kinds: np.ndarray, m: int) -> int:
    """The position of the intercept among the model's m basis functions
    (:func:`_is_intercept`), −1 without one."""
    for j in range(m):
        if _is_intercept(pruner_record, kinds, j):
            return j
    return -1


@jit
def evaluate(pruner_record: np.ndarray, ridge_record: np.ndarray, window_record: np.ndarray,
             targets: Targets, t: Tracked, s: Ridge, spare: Ridge, protected: np.ndarray,
             move: np.ndarray, lambda_min: float, evaluations: int, first: int) -> int:
    """Run up to ``evaluations`` of the pruner's evaluations in the order ``first``
    (``TURN_ORDER``, ``CANDIDATE_FIRST`` or ``BASIS_FIRST``); returns why it stopped
    (``FINISHED``, ``HAND_BACK``, ``REFRESH``), with ``pruner_record.done`` the
    evaluations completed.

    ``targets`` is the window's targets (``core.state.Targets``: their moments and
    weights in the criteria), ``t`` its tracked columns, ``s`` the ridge state. The first
    addition or
    deletion of a call writes the new state into the ``spare`` arrays (its ``variance``
    flat, with room for (M + 1)² numbers) and sets
    ``pruner_record.resized``: the caller's state is then views of them, M being
    ``window_record.n_model``. A second one in the same call is handed back.
    ``protected`` holds the ids of columns that return to the pool when deleted (the
    constant and linear functions); ``move`` (eight numbers) receives the decision of a
    handed-back move.
    """
    p = pruner_record[0]
    w = window_record[0]
    p.stop = FINISHED
    p.done = 0
    p.traded_now = 0
    p.added_now = 0
    p.resized = 0
    p.at_budget = 1 if w.n_model >= p.max_basis else 0
    for k in range(evaluations):
        m = w.n_model
        kind, p.turn = evaluation_kind(first, k, p.turn, w.n_columns - m, m)
        if kind == NO_MOVE:
            break
        if kind == CANDIDATE_MOVE:
            stop, s = _candidate_step(pruner_record, ridge_record, window_record, targets,
                                      t, s, spare, move, lambda_min)
        else:
            stop, s = _basis_step(pruner_record, ridge_record, window_record, targets, t, s,
                                  spare, protected, move, lambda_min)
        if stop == HAND_BACK:
            p.stop = HAND_BACK
            p.move_kind = kind
            return HAND_BACK
        p.done += 1
        if stop == REFRESH:
            p.stop = REFRESH
            return REFRESH
    return FINISHED


@jit
def _candidate_step(pruner_record: np.ndarray, ridge_record: np.ndarray,
                    window_record: np.ndarray, targets: Targets, t: Tracked, s: Ridge,
                    spare: Ridge, move: np.ndarray, lambda_min: float) -> tuple[int, Ridge]:
    """One candidate move (``GCVPruner``'s candidate turn): score the next few
    candidates round robin (:func:`candidate_move`), then add the best or trade it for the
    least useful basis function. Returns ``(FINISHED | HAND_BACK | REFRESH, ridge)``."""
    p = pruner_record[0]
    w = window_record[0]
    m, n = w.n_model, w.n_columns
    n_candidates = n - m
    count = min(p.candidates_per_evaluation, n_candidates)
    columns = np.empty(count, np.int64)
    for q in range(count):
        columns[q] = m + (p.candidate_cursor + q) % n_candidates
    p.candidate_cursor = (p.candidate_cursor + count - 1) % n_candidates + 1
    training, gamma = criteria_now(ridge_record, targets, t.gram, t.cross_y,
                                   s.variance, s.weights, s.lambdas)
    budget = model_budget(p.max_basis, w.count)
    action = candidate_move(s.variance, t.gram, t.cross_y, s.weights, s.lambdas, t.merit,
                            targets.moments[YY], targets.scales, w.count, training, gamma,
                            columns, lambda_min, p.min_gain, m >= budget,
                            intercept_position(pruner_record, t.kinds, m), move)
    p.action = action
    if action == NO_CANDIDATE:
        return FINISHED, s
    position = int(move[MOVE_COLUMN])
    lam = move[MOVE_LAMBDA]
    g = t.gram[position, :m].copy()  # (its row of the symmetric Gram: contiguous)
    g_jj = t.gram[position, position]
    if action == TRADE:  # basis function j for the candidate (FGCV's trade)
        j = int(move[MOVE_TRADED])
        factor = replace_basis(s.variance, s.weights, s.lambdas, j, g, g_jj,
                               t.cross_y[position], lam, MIN_RELATIVE_DELTA, PROJECT_BELOW,
                               np.empty(m))
        if factor == 0.0:  # in the span of the others after all: no trade
            return FINISHED, s
        if factor < 0.0:  # hᵀPh is to come from the stored rows
            return HAND_BACK, s
        swap_tracked(t, j, position, n)
        p.n_added += 1
        p.n_deleted += 1
        p.traded_now += 1
        refresh = _after_move(ridge_record, window_record, t, s, factor)
        return (REFRESH if refresh else FINISHED), s
    # add the candidate at λ (Orr A.4), into the spare arrays
    if p.resized or (m + 1) * (m + 1) > spare.variance.shape[0]:
        return HAND_BACK, s
    grown = Ridge(spare.variance[:(m + 1) * (m + 1)].reshape((m + 1, m + 1)),
                  spare.weights[:m + 1], spare.lambdas[:m + 1])
    c_j = t.cross_y[position]
    delta, status = add_basis(s.variance, s.weights, g, g_jj, c_j, lam, math.nan, c_j,
                              MIN_RELATIVE_DELTA, PROJECT_BELOW, grown.variance,
                              grown.weights)
    if status == 0:  # in the span after all: it stays in the pool
        return FINISHED, s
    if status < 0:  # hᵀPh is to come from the stored rows
        return HAND_BACK, s
    grown.lambdas[:m] = s.lambdas
    grown.lambdas[m] = lam
    p.resized = 1
    swap_tracked(t, position, m, n)  # WindowStatistics.promote
    w.n_model = m + 1
    p.n_added += 1
    p.added_now += 1
    refresh = _after_move(ridge_record, window_record, t, grown, (g_jj + lam) / delta)
    return (REFRESH if refresh else FINISHED), grown


@jit
def _basis_step(pruner_record: np.ndarray, ridge_record: np.ndarray,
                window_record: np.ndarray, targets: Targets, t: Tracked, s: Ridge,
                spare: Ridge, protected: np.ndarray, move: np.ndarray, lambda_min: float
                ) -> tuple[int, Ridge]:
    """One basis move (``pruner.reestimate_basis`` on the next basis function, round
    robin): re-estimate its λ in place, or delete it when its optimum is λ = ∞; the
    intercept's λ is held at 0 instead (:func:`intercept_move`). Returns
    ``(FINISHED | HAND_BACK | REFRESH, ridge)``."""
    p = pruner_record[0]
    w = window_record[0]
    m = w.n_model
    j = p.basis_cursor % m
    p.move_basis = j
    is_protected = _is_protected(protected, t.ids[j])
    p.protected = 1 if is_protected else 0
    if _is_intercept(pruner_record, t.kinds, j):
        action = intercept_move(s.variance, s.weights, s.lambdas, j, move)
    else:
        training, gamma = criteria_now(ridge_record, targets, t.gram, t.cross_y,
                                       s.variance, s.weights, s.lambdas)
        action = basis_move(s.variance, t.gram, t.cross_y, s.weights, s.lambdas,
                            targets.moments[YY], targets.scales, w.count, training, gamma,
                            j, lambda_min, RELATIVE_GAIN, move)
    p.action = action
    if action == DELETE and m > 1 and not p.resized:
        return _delete(pruner_record, ridge_record, window_record, t, s, spare, j,
                       is_protected)
    if action >= DELETE:  # the last basis function, a second resize, or the exact λ path
        return HAND_BACK, s
    refresh = False
    if action == REESTIMATED:  # λⱼ changed in place by basis_move
        p.n_reestimated += 1
        refresh = _after_move(ridge_record, window_record, t, s, move[BASIS_FACTOR])
    t.merit[j] = move[BASIS_USEFULNESS]
    p.basis_cursor = j + 1
    return (REFRESH if refresh else FINISHED), s


@jit
def _delete(pruner_record: np.ndarray, ridge_record: np.ndarray,
            window_record: np.ndarray, t: Tracked, s: Ridge, spare: Ridge, j: int,
            is_protected: bool) -> tuple[int, Ridge]:
    """Delete basis function j (``IncrementalRidge.remove_basis``): it is moved last
    (``RidgeState.swap`` and the window's), the state shrinks into the spare arrays, the
    column leaves the model, and the pool too unless it is protected
    (``WindowStatistics.drop_column``). The cursor stays: the basis function now at j is
    next."""
    p = pruner_record[0]
    w = window_record[0]
    m, n = w.n_model, w.n_columns
    last = m - 1
    swap_symmetric(s.variance, j, last, m)
    swap_rows(s.weights, j, last)
    s.lambdas[j], s.lambdas[last] = s.lambdas[last], s.lambdas[j]
    swap_tracked(t, j, last, n)
    shrunk = Ridge(spare.variance[:last * last].reshape((last, last)),
                   spare.weights[:last], spare.lambdas[:last])
    remove_basis(s.variance, s.weights, last, shrunk.variance, shrunk.weights)
    shrunk.lambdas[:] = s.lambdas[:last]
    p.resized = 1
    w.n_model = last
    if not is_protected:
        swap_tracked(t, last, n - 1, n)
        w.n_columns = n - 1
    p.n_deleted += 1
    refresh = _after_move(ridge_record, window_record, t, shrunk, 1.0)
    return (REFRESH if refresh else FINISHED), shrunk
