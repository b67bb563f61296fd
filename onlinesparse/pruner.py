"""GCV-driven model selection between samples: re-estimate, delete and add basis functions.

The moves are those of Orr's local ridge regression (6.3–6.4, A.11) and of the fast GCV
algorithm (FGCV section 3.1, steps 5–9), each applied to an
:class:`~onlinesparse.ridge.IncrementalRidge` by its exact O(M²) operations:

* **re-estimate** basis function j: set λⱼ to its GCV-optimal value with the other λ's held
  fixed (Orr appendix A.11); GCV cannot increase.
* **delete** basis function j when that optimum is λⱼ = ∞ (Orr 6.4: "the j-th basis
  function can be removed").
* **add** the candidate whose GCV-optimal λ lowers GCV most (FGCV steps 5 and 7).

:func:`reestimate_basis` and :func:`~onlinesparse.criteria.candidate_optima` are the two
evaluations; the streaming :class:`GCVPruner` spends a fixed number of them per sample (so
the worst case of a ``learn_one`` is known in advance), and :func:`local_ridge` sweeps to
convergence for batch use (Orr's section 6.5 example).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from onlinesparse import core
from onlinesparse.ridge import IllConditionedError, IncrementalRidge

__all__ = ["reestimate_basis", "local_ridge", "GCVPruner"]

# A move must lower GCV by this relative amount to count: below it, rounding decides.
_RELATIVE_GAIN = 1e-9


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
    model.state._check_index(j)  # the compiled loop does not check bounds
    error, gamma = model._summary()
    state, window = model.state, model.window
    out = np.empty(8)
    action = core.basis_move(state.variance, window._gram, window._cross_y, state.weights,
                               state.lambdas, window.yy, window.count, error, gamma, int(j),
                               float(lambda_min), _RELATIVE_GAIN, out)
    return _apply_basis_move(model, j, action, out, protected)


def _apply_basis_move(model: IncrementalRidge, j: int, action: int, out: np.ndarray,
                      protected: bool) -> tuple[str, float]:
    """Carry out the outcome of ``core.basis_move`` (action and ``out`` as it returns
    them) and report it as :func:`reestimate_basis` does."""
    usefulness = float(out[1])
    if action == 1:  # λⱼ was changed in place: the model's accounts follow
        model._after_update((float(out[2]), float(out[2])))
        return "reestimated", usefulness
    if action == 2:
        model.remove_basis(j, keep_as_candidate=protected)
        return "deleted", usefulness
    if action == 3:
        try:
            model.set_lambda(j, float(out[0]))
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


@dataclass
class GCVPruner:
    """Spends a fixed number of GCV evaluations per sample on the model and its candidates.

    Each call of :meth:`step` alternates between (a) re-estimating one basis function of the
    model, round robin, deleting it when its optimal λ is ∞, and (b) scoring a few candidates
    and adding the best if it lowers GCV. With the model at ``max_basis``, a candidate is
    added only if removing the least useful basis function and adding it lowers GCV; the
    removal is undone otherwise.

    Parameters
    ----------
    max_basis
        Cap on the number of basis functions M.
    candidates_per_evaluation
        Candidates scored together in one evaluation slot (a single vectorised O(M²k) call).
    min_gain
        A candidate enters only if it lowers GCV by this fraction: hysteresis, so that
        basis functions are not traded back and forth for gains rounding or the next sample
        would undo.
    """

    max_basis: int = 100
    candidates_per_evaluation: int = 2
    min_gain: float = 1e-4
    _basis_cursor: int = 0
    _candidate_cursor: int = 0
    _turn: int = 0
    n_added: int = 0
    n_deleted: int = 0
    n_reestimated: int = 0

    def step(self, model: IncrementalRidge, evaluations: int, lambda_min: float,
             protected: AbstractSet[int] = frozenset(), first: int = core.TURN_ORDER
             ) -> int:
        """Do up to ``evaluations`` evaluations; returns how many were done. They alternate
        between candidate moves and basis moves: by the turn counter (``first`` =
        ``core.TURN_ORDER``), or starting with a candidate move (``CANDIDATE_FIRST``) or
        a basis move (``BASIS_FIRST``), for a caller that schedules them."""
        done = 0
        for k in range(evaluations):
            kind, self._turn = core.evaluation_kind(first, k, self._turn,
                                                    model.window.n_candidates, model.size)
            if kind == core.CANDIDATE_MOVE:
                self._candidate_move(model, lambda_min)
            elif kind == core.BASIS_MOVE:
                self._basis_move(model, lambda_min, protected)
            else:
                break
            done += 1
        return done

    def budget(self, model: IncrementalRidge) -> int:
        """The most basis functions the model may have now: ``max_basis``, and no more than
        half as many as there are patterns (GCV on fewer patterns than parameters picks
        models that interpolate and extrapolate wildly)."""
        return core.model_budget(self.max_basis, float(model.n_patterns))

    def _basis_move(self, model: IncrementalRidge, lambda_min: float,
                    protected: AbstractSet[int]) -> None:
        j = self._basis_cursor % model.size
        column_id = int(model.window.ids[j])
        action, usefulness = reestimate_basis(model, j, lambda_min, column_id in protected)
        self._record_basis_move(model, j, action, usefulness)

    def _record_basis_move(self, model: IncrementalRidge, j: int, action: str,
                           usefulness: float) -> None:
        if action == "deleted":
            self.n_deleted += 1
        else:
            self.n_reestimated += action == "reestimated"
            model.window.merit[j] = usefulness
            self._basis_cursor = j + 1

    def _candidate_move(self, model: IncrementalRidge, lambda_min: float) -> None:
        """Score the next few candidates (round robin) and add the best if it lowers GCV by
        more than ``min_gain``; at ``max_basis``, trade the least useful basis function for
        it if the exact GCV of the trade is lower.

        The least useful basis function is the one whose last re-estimation found the
        smallest GCV increase on removal. The trade is first screened to first order
        (usefulness − gain), then that usefulness is refreshed, then the trade is priced
        exactly without being made; only a trade that pays is carried out.
        """
        window = model.window
        n = window.n_candidates
        k = min(self.candidates_per_evaluation, n)
        positions = (self._candidate_cursor + np.arange(k)) % n
        self._candidate_cursor = int(positions[-1]) + 1
        columns = window.n_model + positions
        # One compiled call for the scoring and the decision: at M = 100 the interpreter
        # overhead of doing it step by step cost several times the arithmetic.
        out = np.empty(4)
        error, gamma = model._summary()  # shared with the basis move of the same sample
        action = core.candidate_move(
            model.state.variance, window._gram, window._cross_y, model.state.weights,
            model.state.lambdas, window.merit, window.yy, window.count, error, gamma,
            columns, float(lambda_min), self.min_gain, model.size >= self.budget(model), out)
        self._apply_candidate_move(model, action, out)

    def _apply_candidate_move(self, model: IncrementalRidge, action: int, out: np.ndarray
                              ) -> None:
        """Carry out the outcome of ``core.candidate_move`` (action and ``out``)."""
        if action == 0:
            return
        column_id, lam = int(model.window.ids[int(out[0])]), float(out[1])
        if action == 1:
            self._add(model, column_id, lam)
        else:
            self._trade(model, int(out[2]), column_id, lam)

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
