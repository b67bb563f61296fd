"""A control loop's budget (orr.upkeep): once maintain() has been called, learn_one leaves
the heavy pieces — a move of the pruner with the stored rows, a deferred refresh of S, a
new candidate's column — to it, and a piece owed too long is done by learn_one again.
Work is counted, never timed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from onlinesparse import SparseRBFMultiTargetRegressor, SparseRBFRegressor
from onlinesparse.orr.buffer import BufferManager
from onlinesparse.orr.pruner import GCVPruner
from onlinesparse.orr.ridge import IncrementalRidge
from onlinesparse.orr.upkeep import MAX_DEFERRAL


def _friedman(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.uniform(0.0, 1.0, 5)
        y = (10 * math.sin(math.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3]
             + 5 * x[4] + rng.standard_normal())
        yield {f"x{i}": float(v) for i, v in enumerate(x)}, float(y)


class _Counter:
    """Counts the heavy pieces, and whether each ran inside learn_one."""

    def __init__(self, monkeypatch):
        self.inside = False
        self.counts = {"learn": {"move": 0, "column": 0, "refresh": 0},
                       "maintain": {"move": 0, "column": 0, "refresh": 0}}
        self.per_call: list[int] = []
        for cls, name, piece in ((GCVPruner, "_carry_out", "move"),
                                 (BufferManager, "add_columns", "column")):
            monkeypatch.setattr(cls, name, self._wrap(getattr(cls, name), piece))
        original = IncrementalRidge.maintain

        def maintain(ridge):
            refreshed = original(ridge)
            if refreshed:
                self._count("refresh")
            return refreshed
        monkeypatch.setattr(IncrementalRidge, "maintain", maintain)

    def _count(self, piece: str) -> None:
        self.counts["learn" if self.inside else "maintain"][piece] += 1

    def _wrap(self, function, piece):
        def wrapped(*args, **kwargs):
            self._count(piece)
            return function(*args, **kwargs)
        return wrapped

    def learn(self, model, x, y) -> None:
        self.inside = True
        try:
            model.learn_one(x, y)
        finally:
            self.inside = False

    def maintain(self, model, pieces: int | None = 1) -> None:
        before = sum(self.counts["maintain"].values())
        done = model.maintain(pieces)
        after = sum(self.counts["maintain"].values())
        assert after - before >= done  # (a piece it reports was done)
        self.per_call.append(after - before)


def test_a_maintained_model_leaves_the_heavy_pieces_to_maintain(monkeypatch):
    counter = _Counter(monkeypatch)
    model = SparseRBFRegressor(max_basis=15, window_size=200)
    model.maintain()  # (the caller has idle time: from now on learn_one owes the pieces)
    for x, y in _friedman(1500):
        counter.learn(model, x, y)
        counter.maintain(model, 1)
    learn, maintain = counter.counts["learn"], counter.counts["maintain"]
    assert learn == {"move": 0, "column": 0, "refresh": 0}
    assert maintain["move"] > 10 and maintain["column"] > 10
    assert max(counter.per_call) <= 1  # (one piece per call, as asked)
    assert model.n_basis > 5


def test_an_unmaintained_model_does_them_in_learn_one_as_before(monkeypatch):
    counter = _Counter(monkeypatch)
    model = SparseRBFRegressor(max_basis=15, window_size=200)
    for x, y in _friedman(1500):
        counter.learn(model, x, y)
    assert counter.counts["learn"]["move"] > 10 and counter.counts["learn"]["column"] > 10
    assert counter.counts["maintain"] == {"move": 0, "column": 0, "refresh": 0}
    upkeep = model._upkeep
    assert not upkeep.maintained and upkeep.move is None and upkeep.column_since < 0


@pytest.mark.parametrize("cls", [SparseRBFRegressor, SparseRBFMultiTargetRegressor])
def test_a_piece_owed_too_long_is_done_by_learn_one(monkeypatch, cls):
    """A loop that called maintain() once and then stopped: no piece waits more than
    MAX_DEFERRAL samples, and learn_one does what maintain() no longer does."""
    counter = _Counter(monkeypatch)
    model = cls(max_basis=15, window_size=200)
    model.maintain()
    for x, y in _friedman(1500):
        counter.learn(model, x, y if cls is SparseRBFRegressor else {"a": y, "b": -y})
        upkeep, learned = model._upkeep, model._n_learned
        for since in (upkeep.move_since, upkeep.column_since):
            assert since < 0 or learned - since <= MAX_DEFERRAL
    assert counter.counts["learn"]["move"] > 0 and counter.counts["learn"]["column"] > 0
    assert model.n_basis > 5


def test_deferring_the_pieces_fits_as_well():
    """Same decisions a few samples later: the maintained model predicts about as well."""
    def rmse(maintained: bool) -> float:
        model = SparseRBFRegressor(max_basis=20, window_size=300)
        if maintained:
            model.maintain()
        errors = []
        for x, y in _friedman(2500, seed=1):
            errors.append(y - model.predict_one(x))
            model.learn_one(x, y)
            if maintained:
                model.maintain(1)
        return float(np.sqrt(np.mean(np.square(errors[500:]))))

    inline, deferred = rmse(False), rmse(True)
    assert deferred <= 1.1 * inline
