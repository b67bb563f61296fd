"""GCV-driven model selection between samples: re-estimate, delete and add basis functions.

The moves are those of Orr's local ridge regression (6.3–6.4, A.11) and of the fast GCV
algorithm (FGCV section 3.1, steps 5–9), each applied to an
:class:`~onlinesparse.ridge.IncrementalRidge` by its exact O(M²) operations:

* **re-estimate** basis function j: set λⱼ to its GCV-optimal value with the other λ's held
  fixed (Orr appendix A.11); GCV cannot increase.
* **delete** basis function j when that optimum is λⱼ = ∞ (Orr 6.4: "the j-th basis
  function can be removed").
* **add** the candidate whose GCV-optimal λ lowers GCV most (FGCV steps 5 and 7).

:func:`reestimate_basis` and :func:`evaluate_candidates` are the two evaluations; the
streaming :class:`GCVPruner` spends a fixed number of them per sample (so the worst case of a
``learn_one`` is known in advance), and :func:`local_ridge` sweeps to convergence for batch
use (Orr's section 6.5 example).
"""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

from onlinesparse import criteria
from onlinesparse.ridge import IllConditionedError, IncrementalRidge

__all__ = ["reestimate_basis", "evaluate_candidates", "local_ridge", "GCVPruner"]

# A move must lower GCV by this relative amount to count: below it, rounding decides.
_RELATIVE_GAIN = 1e-9


def reestimate_basis(model: IncrementalRidge, j: int, lambda_min: float = 0.0,
                     protected: bool = False) -> tuple[str, float]:
    """Set λⱼ to its GCV optimum (Orr appendix A.11), deleting basis function j if that is ∞.

    ``protected`` basis functions (e.g. the bias) go back to the candidate pool instead of
    being forgotten. Returns the action taken (``"reestimated"``, ``"deleted"`` or
    ``"unchanged"``) and the GCV increase that deleting j would cause (its usefulness).
    """
    q = criteria.basis_quantities(model, j)
    opt = criteria.optimal_lambda(q["a"], q["b"], q["c"], q["alpha"], q["beta"], q["psi"],
                                  model.n_patterns, lambda_min)
    current = model.gcv
    usefulness = opt.gcv_removed - current
    if math.isinf(opt.lam):
        if opt.gcv_removed <= current * (1 + _RELATIVE_GAIN):
            model.remove_basis(j, keep_as_candidate=protected)
            return "deleted", usefulness
        return "unchanged", usefulness
    old = model.lambdas[j]
    if opt.gcv < current * (1 - _RELATIVE_GAIN) and opt.lam != old:
        try:
            model.set_lambda(j, opt.lam)
        except IllConditionedError:
            # λ this small makes the column a combination of the others to rounding; the
            # operation refused and changed nothing, so the move is simply not made.
            return "unchanged", usefulness
        return "reestimated", usefulness
    return "unchanged", usefulness


@dataclass
class CandidateScore:
    """The best of a batch of evaluated candidates."""

    column_id: int
    lam: float
    gcv: float
    gain: float  # current GCV − GCV with the candidate at its optimal λ


def evaluate_candidates(model: IncrementalRidge, positions: np.ndarray,
                        lambda_min: float = 0.0) -> list[CandidateScore]:
    """GCV-optimal λ and resulting GCV of candidates (FGCV appendix IV, Orr appendix A.11 with
    ``Pⱼ = P``: a = yᵀP²y, b = ξr, c = ur², α = tr(P), β = u, ψ = γ)."""
    if not len(positions):
        return []
    q = criteria.candidate_quantities(model, positions)
    error = model.training_error
    trace_p = model.n_patterns - model.effective_parameters
    current = model.gcv
    scores = []
    window = model.window
    for k, pos in enumerate(positions):
        r, psi, xi, u = q["r"][k], q["gamma"][k], q["xi"][k], q["u"][k]
        if psi <= 0.0 or u <= 0.0:
            continue  # in the span of the model to rounding: adding it changes nothing
        opt = criteria.optimal_lambda(error, xi * r, u * r * r, trace_p, u, psi,
                                      model.n_patterns, lambda_min)
        scores.append(CandidateScore(int(window.ids[window.n_model + pos]), opt.lam, opt.gcv,
                                     current - opt.gcv if math.isfinite(opt.lam) else 0.0))
    return scores


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
    usefulness: dict[int, float] = field(default_factory=dict)
    n_added: int = 0
    n_deleted: int = 0
    n_reestimated: int = 0

    def step(self, model: IncrementalRidge, evaluations: int, lambda_min: float,
             protected: AbstractSet[int] = frozenset(), scores: dict[int, float] | None = None
             ) -> int:
        """Do up to ``evaluations`` evaluations; returns how many were done."""
        done = 0
        for _ in range(evaluations):
            self._turn += 1
            if self._turn % 2 and model.window.n_candidates:
                self._candidate_move(model, lambda_min, scores)
            elif model.size:
                self._basis_move(model, lambda_min, protected)
            elif model.window.n_candidates:
                self._candidate_move(model, lambda_min, scores)
            else:
                break
            done += 1
        return done

    def _basis_move(self, model: IncrementalRidge, lambda_min: float,
                    protected: AbstractSet[int]) -> None:
        j = self._basis_cursor % model.size
        column_id = int(model.window.ids[j])
        action, usefulness = reestimate_basis(model, j, lambda_min, column_id in protected)
        if action == "deleted":
            self.n_deleted += 1
            self.usefulness.pop(column_id, None)
        else:
            self.n_reestimated += action == "reestimated"
            self.usefulness[column_id] = usefulness
            self._basis_cursor = j + 1

    def _candidate_move(self, model: IncrementalRidge, lambda_min: float,
                        scores: dict[int, float] | None) -> None:
        n = model.window.n_candidates
        k = min(self.candidates_per_evaluation, n)
        positions = (self._candidate_cursor + np.arange(k)) % n
        self._candidate_cursor = int(positions[-1]) + 1
        evaluated = evaluate_candidates(model, positions, lambda_min)
        if scores is not None:
            for score in evaluated:
                scores[score.column_id] = score.gain
        viable = [s for s in evaluated if math.isfinite(s.lam)
                  and s.gain > self.min_gain * model.gcv]
        if not viable:
            return
        best = max(viable, key=lambda s: s.gain)
        if model.size < self.max_basis:
            self._add(model, best)
        else:
            self._swap_in(model, best, lambda_min)

    def _add(self, model: IncrementalRidge, best: CandidateScore) -> None:
        try:
            model.add_basis(best.column_id, best.lam)
        except IllConditionedError:
            return  # numerically in the model's span after all; leave it in the pool
        self.n_added += 1

    def _swap_in(self, model: IncrementalRidge, best: CandidateScore,
                 lambda_min: float) -> None:
        """At the budget: trade the least useful basis function for ``best`` if GCV falls."""
        # Basis functions not re-estimated yet have no usefulness and are never traded.
        if not self.usefulness:
            return
        least_id, usefulness = min(self.usefulness.items(), key=lambda item: item[1])
        # To first order the trade changes GCV by (usefulness − gain); try it (and pay for
        # the exact check) only when that promises a fall.
        if best.gain <= usefulness + self.min_gain * model.gcv:
            return
        try:
            j = model.window.position_of(least_id)
        except ValueError:  # removed from the model behind the pruner's back
            self.usefulness.pop(least_id)
            return
        if j >= model.size:
            self.usefulness.pop(least_id)
            return
        before = model.gcv
        # Move j to the end so that an undo is a plain restore of a copy (exact, and it
        # cannot fail the way re-adding the column could).
        last = model.size - 1
        model.swap_basis(j, last)
        snapshot = model.snapshot()
        removed_id = model.remove_basis(last, keep_as_candidate=True)
        position = model.window.position_of(best.column_id) - model.window.n_model
        rescored = evaluate_candidates(model, np.array([position]), lambda_min)
        if rescored and math.isfinite(rescored[0].lam) and rescored[0].gcv < before * (
                1 - self.min_gain):
            try:
                model.add_basis(best.column_id, rescored[0].lam)
            except IllConditionedError:
                pass
            else:
                self.n_added += 1
                self.n_deleted += 1
                self.usefulness.pop(removed_id, None)
                return
        model.restore(snapshot)  # the trade did not pay
