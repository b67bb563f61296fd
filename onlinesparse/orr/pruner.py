"""GCV-driven model selection between samples: re-estimate, delete and add basis functions.

The moves are those of Orr's local ridge regression (6.3–6.4, A.11) and of the fast GCV
algorithm (FGCV section 3.1, steps 5–9), each applied to an
:class:`~onlinesparse.orr.ridge.IncrementalRidge` by its exact O(M²) operations:

* **re-estimate** basis function j: set λⱼ to its GCV-optimal value with the other λ's held
  fixed (Orr appendix A.11); GCV cannot increase.
* **delete** basis function j when that optimum is λⱼ = ∞ (Orr 6.4: "the j-th basis
  function can be removed").
* **add** the candidate whose GCV-optimal λ lowers GCV most (FGCV steps 5 and 7).

:func:`reestimate_basis` and :func:`~onlinesparse.orr.criteria.candidate_optima` are the two
evaluations; the streaming :class:`GCVPruner` spends a fixed number of them per sample (so
the worst case of a ``learn_one`` is known in advance), and :func:`local_ridge` sweeps to
convergence for batch use (Orr's section 6.5 example).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import numpy as np

from onlinesparse import core
from onlinesparse.core.state import (
    PRUNER,
    Field,
    RecordOwner,
    new_record,
)
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge

__all__ = ["reestimate_basis", "local_ridge", "GCVPruner"]


def reestimate_basis(model: IncrementalRidge, j: int, lambda_min: float = 0.0,
                     protected: bool = False) -> tuple[str, float]:
    """Set λⱼ to its GCV optimum (Orr appendix A.11), deleting basis function j if that is ∞.

    ``protected`` basis functions (e.g. the bias) go back to the candidate pool instead of
    being forgotten. Returns the action taken (``"reestimated"``, ``"deleted"`` or
    ``"unchanged"``) and the GCV increase that deleting j would cause (its usefulness).
    """
    # One compiled call evaluates j, decides, and makes the common move (a rank-one change
    # of λⱼ) in place: at M = 100 the interpreter overhead of doing it step by step cost
    # more than the arithmetic.
    model.state.check_index(j)  # the compiled loop does not check bounds
    error, gamma = model.summary()
    state, window = model.state, model.window
    out = np.empty(core.quantity_slots(model.n_targets))
    targets = window.targets
    action = core.basis_move(state.variance, window.gram_buffer, window.cross_y_buffer,
                             state.weights, state.lambdas, targets.moments[core.YY],
                             targets.scales, window.count, error, gamma, int(j),
                             float(lambda_min), core.RELATIVE_GAIN, out)
    return _apply_basis_move(model, j, action, out, protected)


def _apply_basis_move(model: IncrementalRidge, j: int, action: int, out: np.ndarray,
                      protected: bool) -> tuple[str, float]:
    """Carry out the outcome of ``core.basis_move`` (action and ``out`` as it returns
    them) and report it as :func:`reestimate_basis` does."""
    usefulness = float(out[core.BASIS_USEFULNESS])
    if action == core.REESTIMATED:  # λⱼ was changed in place: the model's accounts follow
        factor = float(out[core.BASIS_FACTOR])
        model._after_update((factor, factor))
        return "reestimated", usefulness
    if action == core.DELETE:
        model.remove_basis(j, keep_as_candidate=protected)
        return "deleted", usefulness
    if action == core.EXACT_LAMBDA:
        try:
            model.set_lambda(j, float(out[core.BASIS_LAMBDA]))
        except IllConditionedError:
            # λ this small makes the column a combination of the others to rounding; the
            # operation refused and changed nothing, so the move is simply not made.
            return "unchanged", usefulness
        return "reestimated", usefulness
    return "unchanged", usefulness


def local_ridge(model: IncrementalRidge, max_sweeps: int = 100, tol: float = 1e-6,
                lambda_min: float = 0.0) -> list[float]:
    """Orr's local ridge regression (6.4): sweep through the λⱼ, each set to its GCV optimum,
    until GCV stops decreasing by more than ``tol`` (relative). Returns GCV after each sweep.
    """
    trace = [model.gcv]
    for _ in range(max_sweeps):
        j = 0
        while j < model.size:
            action, _ = reestimate_basis(model, j, lambda_min)
            if action != "deleted":
                j += 1  # a deletion moves the last basis function into position j
        trace.append(model.gcv)
        if trace[-2] - trace[-1] <= tol * trace[-2]:
            break
    return trace


class GCVPruner(RecordOwner):
    """Spends a fixed number of GCV evaluations per sample on the model and its candidates.

    Each call of :meth:`step` alternates between (a) re-estimating one basis function of the
    model, round robin, deleting it when its optimal λ is ∞, and (b) scoring a few candidates
    and adding the best if it lowers GCV. With the model at ``max_basis``, a candidate is
    added only if removing the least useful basis function and adding it lowers GCV (the
    trade is priced exactly before it is made).

    The evaluations run in one compiled call (``core.evaluate``, which carries out the
    common moves in place); a move that needs the stored rows or a second change of the
    model's size in one call comes back here and is made by the model's own operations.

    Parameters
    ----------
    max_basis
        Cap on the number of basis functions M.
    candidates_per_evaluation
        Candidates scored together in one evaluation slot (a single O(M²k) call).
    min_gain
        A candidate enters only if it lowers GCV by this fraction: hysteresis, so that
        basis functions are not traded back and forth for gains rounding or the next sample
        would undo.
    free_intercept
        Treat the constant basis function as the model's intercept: λ = 0, never deleted,
        never traded (``core.selection.intercept_move``). The model's choices then do not
        depend on the origin of the target's unit; without it the constant is a basis
        function like any other, as in Orr's local ridge.
    """

    # Scalars live in `record` (core.state.PRUNER), where the compiled pruner advances
    # them; it also reports there how far a call got and the move it stopped at.
    max_basis = Field()
    candidates_per_evaluation = Field()
    min_gain = Field()
    _turn = Field()
    _basis_cursor = Field()
    _candidate_cursor = Field()
    n_added = Field()
    n_deleted = Field()
    n_reestimated = Field()
    free_intercept = Field()
    resized = Field()  # (what the last call of core.evaluate reported)

    def __init__(self, max_basis: int = 100, candidates_per_evaluation: int = 2,
                 min_gain: float = 1e-4, free_intercept: bool = False) -> None:
        self.record = new_record(PRUNER)
        self.max_basis = max_basis
        self.free_intercept = int(free_intercept)
        self.candidates_per_evaluation = candidates_per_evaluation
        self.min_gain = min_gain
        self.move = np.empty(8)  # (the decision of a move handed back)

    def make_room(self, n_targets: int) -> None:
        """Size the buffer a handed-back move's numbers go to for K targets
        (``core.quantity_slots``)."""
        if self.move.shape[0] < core.quantity_slots(n_targets):
            self.move = np.empty(core.quantity_slots(n_targets))

    def __repr__(self) -> str:
        return (f"GCVPruner(max_basis={self.max_basis}, "
                f"candidates_per_evaluation={self.candidates_per_evaluation}, "
                f"min_gain={self.min_gain}, free_intercept={bool(self.free_intercept)})")

    def step(self, model: IncrementalRidge, evaluations: int, lambda_min: float,
             protected: AbstractSet[int] = frozenset(), first: int = core.TURN_ORDER
             ) -> int:
        """Do up to ``evaluations`` evaluations; returns how many were done. They alternate
        between candidate moves and basis moves: by the turn counter (``first`` =
        ``core.TURN_ORDER``), or starting with a candidate move (``CANDIDATE_FIRST``) or
        a basis move (``BASIS_FIRST``), for a caller that schedules them."""
        ids = np.fromiter(protected, dtype=np.int64, count=len(protected))
        self.make_room(model.n_targets)
        done = 0
        while done < evaluations:
            size = model.size + 1
            spares = (np.empty(size * size), np.empty((size, model.n_targets)),
                      np.empty(size))
            stop = core.evaluate(self.record, model.record, model.window.record,
                                 model.window.targets, model.window.tracked(),
                                 core.Ridge(*model.state.arrays()),
                                 core.Ridge(*spares), ids, self.move, float(lambda_min),
                                 evaluations - done, first)
            ran = self.finish(model, spares)
            done += ran
            if stop == core.pruning.FINISHED:
                break
            first = core.continued_order(first, ran - 1)
        return done

    def adopt(self, model: IncrementalRidge,
              spares: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        """Take the state a call of ``core.evaluate`` resized into the spare arrays (an
        addition or a deletion made in place) as the model's."""
        if not self.resized:
            return
        self.resized = 0
        window = model.window
        m = window.n_model
        variance, weights, lambdas = spares
        model.state.adopt(variance[: m * m].reshape(m, m), weights[:m], lambdas[:m])
        window.basis.truncate(window.n_columns)

    def finish(self, model: IncrementalRidge,
               spares: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> int:
        """What the caller of ``core.evaluate`` does after it: :meth:`adopt` a resized
        state, carry out a move it handed back or the refresh it asked for. Returns the
        evaluations done, the handed-back one included."""
        self.adopt(model, spares)
        record = self.record[0]
        ran = int(record["done"])
        stop = int(record["stop"])
        if stop == core.pruning.HAND_BACK:
            self._carry_out(model, int(record["move_kind"]), int(record["action"]),
                            int(record["move_basis"]), bool(record["protected"]))
            ran += 1
        elif stop == core.pruning.REFRESH:
            model.maintain()
        return ran

    def carry_out(self, model: IncrementalRidge, kind: int, action: int, j: int,
                  protected: bool, numbers: np.ndarray) -> None:
        """A move the compiled pruner handed back earlier and its caller held
        (``orr.upkeep``), made now with the ``numbers`` it was decided with."""
        self.move[: numbers.shape[0]] = numbers
        self._carry_out(model, kind, action, j, protected)

    def _carry_out(self, model: IncrementalRidge, kind: int, action: int, j: int,
                   protected: bool) -> None:
        """A move the compiled pruner handed back, made by the model's own operations."""
        move = self.move
        if kind == core.CANDIDATE_MOVE:
            column_id = int(model.window.ids[int(move[core.MOVE_COLUMN])])
            lam = float(move[core.MOVE_LAMBDA])
            if action == core.ADD:
                self._add(model, column_id, lam)
            else:
                self._trade(model, int(move[core.MOVE_TRADED]), column_id, lam)
            return
        outcome, usefulness = _apply_basis_move(model, j, action, move, protected)
        if outcome == "deleted":
            self.n_deleted += 1
        else:
            self.n_reestimated += outcome == "reestimated"
            model.window.merit[j] = usefulness
            self._basis_cursor = j + 1

    def budget(self, model: IncrementalRidge) -> int:
        """The most basis functions the model may have now: ``max_basis``, and no more than
        half as many as there are patterns (GCV on fewer patterns than parameters picks
        models that interpolate and extrapolate wildly)."""
        return core.model_budget(self.max_basis, float(model.n_patterns))

    def _add(self, model: IncrementalRidge, column_id: int, lam: float) -> None:
        try:
            model.add_basis(column_id, lam)
        except IllConditionedError:
            return  # numerically in the model's span after all; leave it in the pool
        self.n_added += 1

    def _trade(self, model: IncrementalRidge, j: int, column_id: int, lam: float) -> None:
        """Replace basis function ``j`` by candidate ``column_id`` at λ ``lam``."""
        try:
            model.replace_basis(j, column_id, lam)
        except IllConditionedError:
            return  # numerically in the span after all; the model is as it was
        self.n_added += 1
        self.n_deleted += 1
