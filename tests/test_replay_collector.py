"""Python's garbage collector never runs inside a timed ``predict_one`` or ``learn_one`` of a
replay: it runs between rows, and its pauses are counted apart from the model's latency."""

import gc

import numpy as np
import pandas as pd
import pytest
from river import linear_model

from onlinesparse.replay import models
from onlinesparse.replay.collector import RowCollector
from onlinesparse.replay.metrics import LatencyHistogram
from onlinesparse.replay.runner import ReplayConfig, run_replay


class CyclicGarbage(linear_model.LinearRegression):
    """river's linear regression that leaves cyclic garbage behind in every timed call (as
    models that build small object graphs do), and says which instance is inside one."""

    open = None  # the instance whose predict_one or learn_one is running
    seen: dict = {}  # every instance that was called, by id

    def predict_one(self, x):
        return self._timed(super().predict_one, x)

    def learn_one(self, x, y, w=1.0):
        self.n_learned = getattr(self, "n_learned", 0) + 1
        return self._timed(super().learn_one, x, y, w)

    def _timed(self, call, *args):
        CyclicGarbage.seen[id(self)] = self
        CyclicGarbage.open = self
        try:
            for _ in range(150):
                loop = []
                loop.append(loop)  # only the cyclic collector frees these
            return call(*args)
        finally:
            CyclicGarbage.open = None


@pytest.fixture
def watched(monkeypatch):
    """The model registered as ``garbage``, and the start of every collection recorded with
    the instance whose call was open then (``None``: between calls)."""
    monkeypatch.setitem(models.MODELS, "garbage", models.ModelSpec(
        "garbage", "tests.test_replay_collector:CyclicGarbage", "test model"))
    CyclicGarbage.seen.clear()
    starts: list = []

    def record(phase, info):
        if phase == "start":
            starts.append(CyclicGarbage.open)

    gc.callbacks.append(record)
    yield starts
    gc.callbacks.remove(record)


def _recording(path, n=2000):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 2))
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x[:, 0] - x[:, 1]}).to_csv(path, index=False)
    return path


def test_no_collection_starts_inside_a_timed_call(watched, tmp_path):
    assert gc.isenabled()
    outcome = run_replay(ReplayConfig(_recording(tmp_path / "r.csv"), ["y"], model="garbage",
                                      workers=1, progress=False, out=tmp_path / "out"))
    assert outcome.exit_code == 0
    # The replayed model learned every row; the others are the warm-up's throwaway clone.
    replayed = max(CyclicGarbage.seen.values(), key=lambda m: m.n_learned)
    assert replayed.n_learned == 2000
    pauses = outcome.results[0].metrics["gc_pauses_us"]
    # 2000 rows × 300 cycles: hundreds of collections were due, and each ran between rows.
    assert pauses["n"] >= 100
    assert sum(model is replayed for model in watched) == 0
    assert watched.count(None) >= pauses["n"]
    page = (tmp_path / "out" / "report.html").read_text()
    assert f"<td>{pauses['n']} (" in page  # the report counts the pauses apart from latency
    # The collector is left as it was found: on, and nothing frozen.
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_without_the_row_collector_the_same_model_is_interrupted(watched):
    """The counting above would catch the collector's return: left alone, it starts inside
    the timed calls."""
    model = CyclicGarbage()
    for i in range(300):
        model.predict_one({"a": float(i)})
        model.learn_one({"a": float(i)}, 1.0)
    assert sum(m is model for m in watched) > 0


def test_a_process_that_turned_the_collector_off_keeps_it_off():
    pauses = LatencyHistogram()
    gc.disable()
    try:
        with RowCollector(pauses) as collector:
            for _ in range(3000):
                loop = []
                loop.append(loop)
                collector.between_rows()
        assert not gc.isenabled() and pauses.n == 0
    finally:
        gc.enable()


def test_nested_collectors_restore_the_collector_once_the_last_leaves():
    with RowCollector() as outer:
        with RowCollector():
            assert not gc.isenabled()
        assert not gc.isenabled() and outer.active
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_the_collection_due_follows_cpython_thresholds():
    with RowCollector() as collector:
        collector.between_rows()
        # Every generation's count back to zero: a collection of generation 0 alone raises
        # generation 1's count, and one left at its threshold by whatever ran before made
        # the next due collection generation 1's (the suite's order decided the outcome).
        gc.collect()
        assert collector.due() is None
        junk = [[] for _ in range(gc.get_threshold()[0] + 1)]
        assert collector.due() == 0
        del junk
