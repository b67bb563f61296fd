"""The heavy work of a streaming RBF model, and when it is done: in ``learn_one`` (at most
one piece per sample), or, once the caller has shown it has idle time by calling
``maintain()``, there.

Three pieces of a sample's work are heavy at M = 100: a refresh of S (LAPACK, O(M³)), a
new candidate's column over the stored window (O(W·n)), and a move of the pruner that
needs the stored rows (a trade or an addition whose candidate is nearly in the model's
span: O(W·M)); a fourth is rare, the memory's measurement of its stride when it fills
(O(W·d log W), ``stream.memory.Horizon``). Each is 0.3–1.3 ms on a 1 kHz Panda loop,
and a tick that carries one misses its millisecond. A loop that calls
:meth:`Upkeep.run` (the estimators' ``maintain()``) in the time between its ticks tells
the model so; from then on
``learn_one`` owes those pieces instead of doing them — a held move stops the pruner
until it is made — and ``maintain()`` does them. Nothing is decided differently: the
same move on the same column, the same refresh, the same candidate, a few samples later.
A piece owed for ``MAX_DEFERRAL`` samples (a loop that stopped calling ``maintain()``) is
done by ``learn_one`` again.

Not deferred: a refresh of S that a pattern's verdict calls for at once (S is unhealthy;
the sample cannot go on without it), and the memory's response to an alarm
(:mod:`~onlinesparse.stream.memory`, rare: a change of the stream) — the refit that judges
it (:mod:`~onlinesparse.stream.refit`, O(W·M² + M³), at the alarm and at most once more at
its second look) and the cut (O(W·n² + M³)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onlinesparse import core

if TYPE_CHECKING:
    from onlinesparse.orr.buffer import BufferManager
    from onlinesparse.orr.pruner import GCVPruner
    from onlinesparse.orr.ridge import IncrementalRidge
    from onlinesparse.stream.memory import Horizon

__all__ = ["MAX_DEFERRAL", "HeldMove", "Upkeep"]

# The most samples a piece of heavy work waits for maintain() before learn_one does it.
MAX_DEFERRAL = 100


@dataclass
class HeldMove:
    """A move the pruner handed back, held for ``maintain()``: what
    ``GCVPruner.carry_out`` needs, the candidate named by its column id (a position may
    change while the move waits)."""

    kind: int
    action: int
    basis: int
    protected: bool
    numbers: np.ndarray
    column_id: int


@dataclass
class Upkeep:
    """What heavy work is owed, and since which sample (−1: none).

    Attributes
    ----------
    maintained
        Whether the caller has called ``maintain()``: then ``learn_one`` owes the heavy
        pieces rather than doing them.
    move, move_since
        A move held for ``maintain()``.
    refresh_since, column_since, measure_since
        Since when a refresh of S, a candidate column, a measurement of the memory's
        stride (``stream.memory.Horizon.measure``) has been owed.
    """

    maintained: bool = False
    move: HeldMove | None = None
    move_since: int = -1
    refresh_since: int = -1
    column_since: int = -1
    measure_since: int = -1

    def overdue(self, learned: int) -> bool:
        """Whether a piece has been owed for ``MAX_DEFERRAL`` samples (``learned`` so far):
        then ``learn_one`` does the owed pieces first."""
        if not self.maintained:  # (nothing is ever owed: the common case, every sample)
            return False
        owed = [s for s in (self.move_since, self.refresh_since, self.column_since,
                            self.measure_since) if s >= 0]
        return bool(owed) and learned - min(owed) >= MAX_DEFERRAL

    def owe_measurement(self, learned: int) -> None:
        """Note a measurement of the stride that the memory deferred as owed."""
        if self.measure_since < 0:
            self.measure_since = learned

    def refresh_inline(self, model: IncrementalRidge, free: bool, learned: int) -> bool:
        """Whether ``learn_one`` runs a deferred refresh of S now: at the first sample
        ``free`` of a candidate column, as always, unless the caller maintains the model;
        then it is owed."""
        if not self.maintained:
            return free
        if model.refresh_pending and self.refresh_since < 0:
            self.refresh_since = learned
        return False

    def evaluations(self, evaluations: int) -> int:
        """The pruner's evaluations for this sample: none while a move is held (a newer
        decision would be made on a state the held move is about to change)."""
        return evaluations if self.move is None else 0

    def holds(self, pruner: GCVPruner) -> bool:
        """Whether a move the compiled pruner just handed back waits for ``maintain()``."""
        return (self.maintained and self.move is None
                and int(pruner.record[0]["stop"]) == core.pruning.HAND_BACK)

    def hold(self, pruner: GCVPruner, ids: np.ndarray, learned: int) -> None:
        """Keep the move the compiled pruner handed back (its record and numbers)."""
        record = pruner.record[0]
        numbers = pruner.move.copy()
        column_id = -1
        if int(record["move_kind"]) == core.CANDIDATE_MOVE:
            column_id = int(ids[int(numbers[core.MOVE_COLUMN])])
        self.move = HeldMove(int(record["move_kind"]), int(record["action"]),
                             int(record["move_basis"]), bool(record["protected"]),
                             numbers, column_id)
        self.move_since = learned

    def columns_inline(self, due: bool, learned: int) -> bool:
        """Whether ``learn_one`` computes a candidate column that is ``due`` now: always
        unless the caller maintains the model; then it is owed."""
        if not self.maintained:
            return True
        if due and self.column_since < 0:
            self.column_since = learned
        return False

    def run(self, model: IncrementalRidge, pruner: GCVPruner, buffer: BufferManager,
            horizon: Horizon, max_pieces: int | None = None) -> int:
        """Do the owed pieces, at most ``max_pieces`` (all by default): the stride's
        measurement first (it decides which samples enter), then the held move, the
        refresh and a candidate column; returns how many were done."""
        self.maintained = True
        budget = max_pieces if max_pieces is not None else 4  # (4: every kind of piece)
        done = 0
        if done < budget and horizon.measure(model.window):
            done += 1
        if not horizon.due:
            self.measure_since = -1
        if self.move is not None and done < budget:
            self._make_held_move(model, pruner)
            done += 1
        if done < budget and model.maintain():
            done += 1
        if not model.refresh_pending:
            self.refresh_since = -1
        if self.column_since >= 0 and done < budget:
            buffer.add_columns(model.window)
            self.column_since = -1
            done += 1
        return done

    def _make_held_move(self, model: IncrementalRidge, pruner: GCVPruner) -> None:
        held, self.move, self.move_since = self.move, None, -1
        numbers = held.numbers
        if held.kind == core.CANDIDATE_MOVE:
            try:  # (the candidate's position now; a candidate evicted meanwhile is gone)
                numbers[core.MOVE_COLUMN] = model.window.position_of(held.column_id)
            except ValueError:
                return
        pruner.carry_out(model, held.kind, held.action, held.basis, held.protected, numbers)
