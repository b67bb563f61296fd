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
from onlinesparse.stream.memory import Horizon

PIECES = ("move", "column", "refresh", "measure")  # (the heavy pieces, orr.upkeep)


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
        self.counts = {"learn": dict.fromkeys(PIECES, 0),
                       "maintain": dict.fromkeys(PIECES, 0)}
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
        measure = Horizon.measure

        def measured(horizon, window):
            done = measure(horizon, window)
            if done:
                self._count("measure")
            return done
        monkeypatch.setattr(Horizon, "measure", measured)

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
    assert learn == dict.fromkeys(PIECES, 0)
    assert maintain["move"] > 10 and maintain["column"] > 10 and maintain["measure"] >= 2
    assert max(counter.per_call) <= 1  # (one piece per call, as asked)
    assert model.n_basis > 5


def test_an_unmaintained_model_does_them_in_learn_one_as_before(monkeypatch):
    counter = _Counter(monkeypatch)
    model = SparseRBFRegressor(max_basis=15, window_size=200)
    for x, y in _friedman(1500):
        counter.learn(model, x, y)
    assert counter.counts["learn"]["move"] > 10 and counter.counts["learn"]["column"] > 10
    assert counter.counts["maintain"] == dict.fromkeys(PIECES, 0)
    assert counter.counts["learn"]["measure"] >= 2  # (the stride: at 199 patterns and full)
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
        for since in (upkeep.move_since, upkeep.column_since, upkeep.measure_since):
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


# -- prepare(): a fresh model's state built before the loop ----------------------------------

def _samples(n: int, multi: bool):
    """Friedman samples with a step of the target halfway (an alarm)."""
    for i, (x, y) in enumerate(_friedman(n, seed=3)):
        y += 8.0 * (i >= n // 2)
        yield x, ({"a": y, "b": -2.0 * y + x["x0"]} if multi else y)


def _moments(prediction) -> list[tuple[float, float]]:
    """A predictive distribution's (or a dict of them's) means and deviations."""
    dists = prediction.values() if isinstance(prediction, dict) else [prediction]
    return [(d.mu, d.sigma) for d in dists]


@pytest.mark.parametrize("multi", [False, True])
def test_a_prepared_model_learns_as_an_unprepared_one(multi, monkeypatch):
    """prepare() changes when the state is built, never what the model does: every
    prediction equal, and the first learn_one builds nothing (the ridge is made once, in
    prepare)."""
    cls = SparseRBFMultiTargetRegressor if multi else SparseRBFRegressor
    plain, prepared = cls(max_basis=20, window_size=150), cls(max_basis=20, window_size=150)
    samples = list(_samples(600, multi))
    built = []
    original = IncrementalRidge.__init__

    def counted(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)
    monkeypatch.setattr(IncrementalRidge, "__init__", counted)
    prepared.prepare(samples[0][0], samples[0][1] if multi else None)
    assert len(built) == 1 and prepared.model is None
    prepared.maintain(0)  # (a loop's mode, set before the first sample, is kept)
    plain.maintain(0)
    for x, y in samples:
        assert _moments(prepared.predict_one(x, with_dist=True)) == _moments(
            plain.predict_one(x, with_dist=True))
        prepared.learn_one(x, y)
        plain.learn_one(x, y)
    assert len(built) == 2  # (the plain model's; the prepared one took its own)
    assert prepared.model is built[0]
    # (the step raises an alarm; a refit judges it a shift of level, not worth a cut:
    # stream.refit. Prepared or not, the same decisions)
    assert prepared.n_memory_cuts == plain.n_memory_cuts
    assert prepared._adaptive.vetoed == plain._adaptive.vetoed
    assert plain.n_memory_cuts + plain._adaptive.vetoed >= 1
    assert prepared._upkeep.maintained


def test_a_first_sample_unlike_the_prepared_one_builds_anew():
    """Other inputs (another number, or as many under other names: the features prepare
    declared give way to the first sample's), another number of targets, or a parameter
    set since: the first sample builds as a fresh model does, and learns as one; a
    prediction before it is a fresh model's."""
    samples = list(_samples(300, True))
    for change in ("inputs", "names", "targets", "parameter"):
        plain = SparseRBFMultiTargetRegressor(max_basis=10, window_size=100)
        model = SparseRBFMultiTargetRegressor(max_basis=10, window_size=100)
        x, y = samples[0]
        first = {**x, "extra": 1.0} if change == "inputs" else x
        if change == "names":
            first = {f"renamed {k}": v for k, v in x.items()}
        model.prepare(first, {**y, "c": 0.0} if change == "targets" else y)
        if change == "parameter":
            model.window_size = plain.window_size = 80
        assert model.predict_one(x) == plain.predict_one(x)
        for x, y in samples:
            model.learn_one(x, y)
            plain.learn_one(x, y)
        assert model.model.window.store_capacity == (80 if change == "parameter" else 100)
        assert model.predict_one(samples[0][0]) == plain.predict_one(samples[0][0])


def test_prepare_refuses_bad_input_and_a_model_that_learned():
    model = SparseRBFMultiTargetRegressor()
    with pytest.raises(ValueError, match="x1"):
        model.prepare({"x1": float("nan")}, {"a": 1.0})
    with pytest.raises(ValueError, match="dict of targets"):
        model.prepare({"x1": 1.0})
    assert "_staged" not in vars(model) and model.model is None
    model.learn_one({"x1": 1.0}, {"a": 1.0})
    with pytest.raises(ValueError, match="not learned yet"):
        model.prepare({"x1": 1.0}, {"a": 1.0})
