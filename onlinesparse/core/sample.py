"""One sample of :class:`~onlinesparse.rbf.SparseRBFRegressor` in one compiled call: the
pattern (Orr A.8 / A.11), the accounts, the pruner's evaluations and moves, the buffer
manager's test of the input; rare work is handed back to the caller by a status code.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse.core._jit import jit
from onlinesparse.core.basis import evaluate_rows, inner, nearest_sq_distance
from onlinesparse.core.criteria import error_and_gamma, noise_estimate
from onlinesparse.core.health import account, drift, is_healthy, measured_estimate, settle
from onlinesparse.core.linalg import swap_symmetric
from onlinesparse.core.selection import (
    CANDIDATE_MOVE,
    NO_MOVE,
    basis_move,
    candidate_move,
    evaluation_kind,
    lambda_min,
    model_budget,
    proposes,
)
from onlinesparse.core.statistics import (
    column_error,
    gram_rank_one,
    rolling_refresh,
    running_mean,
    swap_columns,
)
from onlinesparse.core.updates import (
    add_basis,
    remove_basis,
    replace_basis,
    sherman_morrison,
    slide_window,
)

# The scalars a sample reads and advances, by name: the window's position and counts,
# the rounding accounts, the pruner's cursors and counters, and what a call reports to
# its caller. SparseRBFRegressor keeps one record of this type while samples stay on the
# compiled path and writes it back to its objects when they leave it.
_INT_FIELDS = (
    "n_seen", "head", "since_refresh", "since_check", "round_start", "exact_since", "turn",
    "basis_cursor", "candidate_cursor", "n_reestimated", "updates", "done", "move_kind",
    "action", "move_basis", "protected", "healthy", "propose", "summary_valid", "committed",
    "n_columns", "n_stored", "full", "n_traded", "traded_now", "n_learned", "n_added",
    "n_deleted", "added_now", "at_budget", "evaluations", "resized", "n_model", "first")
_FLOAT_FIELDS = (
    "yy", "error_estimate", "statistics_error", "round_error", "credit", "error", "nearest",
    "training_error", "gamma", "count", "noise_variance")
SAMPLE_RECORD = np.dtype([(name, np.int64) for name in _INT_FIELDS]
                         + [(name, np.float64) for name in _FLOAT_FIELDS])


def new_record() -> np.ndarray:
    """A zeroed record of :data:`SAMPLE_RECORD` (an array of one, as the compiled calls
    take it)."""
    return np.zeros(1, dtype=SAMPLE_RECORD)


# What stream_sample returns: where it stopped.
SLIDE_REFUSED, DECIDE, MOVE, QUIET = range(4)


@jit
def account_move(record: np.ndarray, move: np.ndarray, estimate: float,
                 factor: float, move_kind: int, action: int, done: int, gram: np.ndarray,
                 variance: np.ndarray, weights: np.ndarray, lambdas: np.ndarray,
                 refresh_at: float, account_drift: float) -> float:
    """The accounts of a move :func:`stream_sample` has made (a trade, addition or
    deletion: ``move_kind`` 3, 4, 5): :func:`settle`, then the counters
    ``IncrementalRidge._after_update`` advances. Returns the new account; or −1 with the
    counters untouched and the registers saying what remains for the caller
    (``_after_update((factor, factor))``, which will refresh S)."""
    r = record[0]
    after = settle(estimate, factor, gram, variance, weights, lambdas, refresh_at,
                   account_drift)
    if after < 0.0:
        move[4] = factor
        r.move_kind = move_kind
        r.action = action
        r.done = done
        return -1.0
    r.error_estimate = after
    r.since_check += 1
    r.updates += 1
    return after


@jit
def stream_sample(x: np.ndarray, y: float, kinds: np.ndarray, centres: np.ndarray,
                  inv_r2: np.ndarray, features: np.ndarray, gram: np.ndarray,
                  cross_y: np.ndarray, HT: np.ndarray, XT: np.ndarray, targets: np.ndarray,
                  stamps: np.ndarray, traffic: np.ndarray, merit: np.ndarray, ids: np.ndarray,
                  capacity: int,
                  record: np.ndarray, row: np.ndarray, move: np.ndarray,
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
      ``r.resized`` and ``r.n_model``, the new M: the caller's state is then views
      of them (a second one in the same call is the caller's);
    * the buffer manager's test of the input as a centre (``BufferManager.consider``:
      novel by :func:`nearest_sq_distance`, or badly predicted);
    * on one sample in ``noise_every``, ``SparseRBFRegressor._update_noise`` (FGCV eq. 8,
      :func:`uev`), into ``r.noise_variance``, which the next samples read.

    At M = 100 the interpreter overhead of the dozen calls this replaces cost more than
    their arithmetic. A test holds both paths to the same bits.

    ``ints`` and ``floats`` carry the scalars it reads and advances (indices above), among
    them the number of tracked columns; ``row`` has room for them all. (The arguments that
    a move can replace come last.) Returns where it stopped:

    * ``SLIDE_REFUSED``: the oldest pattern cannot leave first (``_slide`` returns False);
      ``row[:n]`` and ``r.error`` are filled and nothing else has changed.
    * ``DECIDE``: the pattern is in; ``_decide(pattern=True)`` has something to do (a
      refresh, most likely)
      (``r.healthy`` carries the health check, ``r.full`` whether the window is
      full and ``r.exact_since`` the rolling refresh's answer).
    * ``MOVE``: the pruner stopped at a move for the caller to carry out:
      ``r.move_kind`` 1 (candidate move, ``move[:4]`` as :func:`candidate_move` leaves
      it), 2 (basis move on ``r.move_basis``, ``move`` as :func:`basis_move` leaves
      it), or a move made whose ``_after_update((f, f))`` remains, ``f = move[4]``: 3 a
      trade, 4 an addition, 5 a deletion; ``r.action`` is the action, ``r.done``
      the evaluations completed before.
    * ``QUIET``: all done; ``r.nearest`` is the novelty distance and
      ``r.propose`` whether the input is to be proposed as a centre.

    ``r.updates``, ``r.n_reestimated``, ``r.n_traded``, ``r.n_added`` and
    ``r.n_deleted`` accumulate over calls (versions of the model, λ's re-estimated,
    trades, additions, deletions) until the caller collects them; ``r.traded_now`` and
    ``r.added_now`` count this call's, ``r.at_budget`` whether the model was at
    ``max_basis`` when its evaluations began; ``r.evaluations`` is the number of
    evaluations the caller allows this sample and ``r.first`` their order
    (``TURN_ORDER``, ``CANDIDATE_FIRST``, ``BASIS_FIRST``); ``r.summary_valid`` says
    whether
    ``r.training_error`` and ``r.gamma`` are the current model's.
    """
    r = record[0]
    m = weights.shape[0]
    d = x.shape[0]
    n = r.n_columns
    row = row[:n]
    r.traded_now = 0  # (this call's counts, whatever it returns)
    r.added_now = 0
    r.resized = 0
    evaluate_rows(kinds, centres, inv_r2, features, x.reshape((1, d)), 0, n,
                  row.reshape((1, n)))
    error = y - inner(row, weights, m)
    r.error = error
    head = r.head
    n_stored = r.n_stored
    count = r.count
    yy = r.yy
    estimate = r.error_estimate
    statistics_error = r.statistics_error
    round_error = r.round_error
    n_seen = r.n_seen + 1
    if n_stored >= capacity:
        # IncrementalRidge._slide
        h_old = np.empty(n)
        for i in range(n):
            h_old[i] = HT[i, head]
        y_old = targets[head]
        out = np.empty(4)
        if not slide_window(gram, cross_y, traffic, n, variance, weights, m, row, y, h_old, y_old,
                            min_leverage, np.empty(m), out):
            return SLIDE_REFUSED
        # WindowStatistics.replace_oldest (the slot of the oldest takes the new pattern)
        yy -= y_old * y_old
        yy += y * y
        slot = head
        head = (head + 1) % capacity
        # The accounts of _slide, then those of _after_update(pattern=True)
        removal, addition, cancellation, healthy = out[0], out[1], out[2], out[3] > 0.0
        estimate = account(estimate, 1.0 / removal, 1.0 / removal)
        statistics_error += cancellation
        round_error += cancellation
        estimate = account(estimate, 1.0, cancellation)
        estimate = account(estimate, 1.0 / addition, addition)
    else:
        # A window still filling: WindowStatistics.push, then RidgeState.add_pattern.
        gram_rank_one(gram, cross_y, traffic, n, row, y, 1.0)
        yy += y * y
        count += 1.0
        slot = (head + n_stored) % capacity
        n_stored += 1
        addition = sherman_morrison(variance, weights, row[:m], y, 1.0, -math.inf,
                                    np.empty(m))
        estimate = account(estimate, 1.0 / addition, addition)
        healthy = is_healthy(variance, weights)
    for f in range(d):
        XT[f, slot] = x[f]
    targets[slot] = y
    for i in range(n):
        HT[i, slot] = row[i]
    r.n_seen = n_seen
    r.head = head
    r.n_stored = n_stored
    r.count = count
    r.committed += 1
    running_mean(means, x, r.committed)
    r.n_learned += 1
    r.summary_valid = 0
    r.updates += 1
    # IncrementalRidge._rolling_refresh (a full window only)
    r.full = 1 if n_stored >= capacity else 0
    if n_stored >= capacity:
        credit, fresh_yy, exact = rolling_refresh(HT, targets, gram, cross_y, stamps, traffic, n,
                                                  n_seen, r.credit, refresh_every)
        r.credit = credit
        if exact >= 0:
            yy = fresh_yy
            r.exact_since = exact
        if r.exact_since >= r.round_start:
            statistics_error = round_error
            round_error = 0.0
            r.round_start = n_seen
    r.yy = yy
    r.statistics_error = statistics_error
    r.round_error = round_error
    r.error_estimate = estimate
    r.healthy = 1 if healthy else 0
    # The quiet outcomes of _decide(pattern=True): no refresh is due, and the measurement
    # of S (when the account calls for one) and the periodic drift probe (when due) both
    # keep S. Otherwise the caller's _decide takes over from the accounts as they stood
    # (it repeats a measurement made here, to the same bits, before it refreshes).
    if (statistics_error > refresh_at or r.since_refresh + 1 >= refresh_every
            or not healthy or column_error(gram, traffic, m) > refresh_at):
        return DECIDE
    since_check = r.since_check + 1
    if estimate > refresh_at:
        estimate = measured_estimate(gram, variance, lambdas, account_drift)
        if estimate < 0.0:
            return DECIDE
    if since_check >= check_every:
        if not drift(gram, variance, lambdas) <= drift_tolerance:
            return DECIDE
        since_check = 0
    r.error_estimate = estimate
    r.since_refresh += 1
    r.since_check = since_check
    # GCVPruner.step
    noise_variance = r.noise_variance
    floor = lambda_min(noise_variance, count)
    training, gamma = error_and_gamma(gram, cross_y, weights, lambdas, variance, yy)
    stale = False  # whether a move has changed the model since (training, gamma)
    r.at_budget = 1 if m >= max_basis else 0
    done = 0
    first = r.first
    for k in range(r.evaluations):
        if stale:
            training, gamma = error_and_gamma(gram, cross_y, weights, lambdas, variance,
                                              yy)
            stale = False
        n_candidates = n - m
        kind, r.turn = evaluation_kind(first, k, r.turn, n_candidates, m)
        if kind == NO_MOVE:
            break
        # A move whose _after_update would reach the periodic drift probe is the caller's.
        settles = r.since_check + 1 < check_every
        if kind == CANDIDATE_MOVE:  # GCVPruner._candidate_move
            k = min(per_evaluation, n_candidates)
            cursor = r.candidate_cursor
            columns = np.empty(k, np.int64)
            for q in range(k):
                columns[q] = m + (cursor + q) % n_candidates
            r.candidate_cursor = (cursor + k - 1) % n_candidates + 1
            budget = model_budget(max_basis, count)
            action = candidate_move(variance, gram, cross_y, weights, lambdas, merit, yy,
                                    count, training, gamma, columns, floor, min_gain,
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
                    swap_columns(gram, HT, cross_y, ids, merit, stamps, traffic, kinds, inv_r2,
                                 features, centres, j, position, n)
                    estimate = account_move(record, move, estimate, factor, 3, action,
                                            done, gram, variance, weights, lambdas,
                                            refresh_at, account_drift)
                    if estimate < 0.0:
                        return MOVE
                    r.n_traded += 1
                    r.traded_now += 1
                    stale = True  # (recomputed only if something reads it)
                    done += 1
                    continue
                # factor < 0: nothing changed; the exact path is the caller's
            elif (action == 1 and settles and not r.resized
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
                    r.resized = 1
                    r.n_model = m + 1
                    grown_lambdas = spare_lambdas[:m + 1]
                    grown_lambdas[:m] = lambdas
                    grown_lambdas[m] = lam
                    variance, weights, lambdas = grown_variance, grown_weights, grown_lambdas
                    # WindowStatistics.promote
                    swap_columns(gram, HT, cross_y, ids, merit, stamps, traffic, kinds, inv_r2,
                                 features, centres, position, m, n)
                    m += 1
                    estimate = account_move(record, move, estimate,
                                            (g_jj + lam) / delta, 4, action, done, gram,
                                            variance, weights, lambdas, refresh_at,
                                            account_drift)
                    if estimate < 0.0:
                        return MOVE
                    r.n_added += 1
                    r.added_now += 1
                    stale = True  # (recomputed only if something reads it)
                    done += 1
                    continue
                # status < 0: hᵀPh is to come from the stored rows: the caller's
            if action != 0:
                r.move_kind = 1
                r.action = action
                r.done = done
                r.training_error = training
                r.gamma = gamma
                r.summary_valid = 1
                return MOVE
        else:  # GCVPruner._basis_move, reestimate_basis
            j = r.basis_cursor % m
            is_protected = False
            for p in range(protected.shape[0]):
                if protected[p] == ids[j]:
                    is_protected = True
            action = basis_move(variance, gram, cross_y, weights, lambdas, yy, count,
                                training, gamma, j, floor, relative_gain, move)
            quiet = action == 0
            if action == 1 and settles:  # λⱼ changed in place: _after_update((f, f))
                after = settle(estimate, move[2], gram, variance, weights, lambdas,
                               refresh_at, account_drift)
                if after >= 0.0:
                    quiet = True
                    estimate = after
                    r.error_estimate = estimate
                    r.since_check += 1
                    r.updates += 1
                    r.n_reestimated += 1
                    stale = True  # (recomputed only if something reads it)
            elif action == 2 and settles and m > 1 and not r.resized:
                # IncrementalRidge.remove_basis(j, keep_as_candidate=is_protected) and its
                # _after_update: j is moved last (RidgeState.swap and the window's), the
                # state shrinks, the column leaves the model (and the pool too unless it is
                # protected: WindowStatistics.drop_column).
                last = m - 1
                swap_symmetric(variance, j, last, m)
                weights[j], weights[last] = weights[last], weights[j]
                lambdas[j], lambdas[last] = lambdas[last], lambdas[j]
                swap_columns(gram, HT, cross_y, ids, merit, stamps, traffic, kinds, inv_r2,
                             features, centres, j, last, n)
                shrunk_variance = spare_variance[:last * last].reshape((last, last))
                shrunk_weights = spare_weights[:last]
                remove_basis(variance, weights, last, shrunk_variance, shrunk_weights)
                shrunk_lambdas = spare_lambdas[:last]
                shrunk_lambdas[:] = lambdas[:last]
                variance, weights, lambdas = shrunk_variance, shrunk_weights, shrunk_lambdas
                r.resized = 1
                r.n_model = last
                m = last
                if not is_protected:
                    swap_columns(gram, HT, cross_y, ids, merit, stamps, traffic, kinds, inv_r2,
                                 features, centres, m, n - 1, n)
                    n -= 1
                    r.n_columns = n
                estimate = account_move(record, move, estimate, 1.0, 5, action, done,
                                        gram, variance, weights, lambdas, refresh_at,
                                        account_drift)
                if estimate < 0.0:
                    return MOVE
                r.n_deleted += 1
                stale = True  # (recomputed only if something reads it)
                done += 1
                continue  # (the cursor stays: the basis function now at j is next)
            if not quiet:
                r.move_kind = 2
                r.action = action
                r.move_basis = j
                r.protected = 1 if is_protected else 0
                r.done = done
                if action != 1:  # (λⱼ changed in place leaves the criteria stale)
                    r.training_error = training
                    r.gamma = gamma
                    r.summary_valid = 1
                return MOVE
            merit[j] = move[1]
            r.basis_cursor = j + 1
        done += 1
    if r.n_learned % noise_every == 0 and stale:  # (the noise estimate reads them)
        training, gamma = error_and_gamma(gram, cross_y, weights, lambdas, variance, yy)
        stale = False
    if not stale:
        r.training_error = training
        r.gamma = gamma
        r.summary_valid = 1
    nearest = nearest_sq_distance(kinds, centres, n, x)
    r.nearest = nearest
    r.propose = proposes(nearest, novelty_sq, error, math.sqrt(noise_variance),
                         error_threshold)
    if r.n_learned % noise_every == 0:
        r.noise_variance = noise_estimate(training, gamma, count, noise_variance)
    return QUIET


