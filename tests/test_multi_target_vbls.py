"""VBLSMultiTargetRegressor: the window statistics shared, a posterior per target."""

from __future__ import annotations

import copy
import pickle
import random

import pandas as pd
import pytest
from river import checks

from onlinesparse import VBLSMultiTargetRegressor, VBLSRegressor


def _samples(n: int, seed: int = 0, shift: int | None = None):
    """Two targets of three inputs, in units a thousand apart; ``shift``: from that sample
    on the second target's slope changes sign (a change the adaptive memory should cut)."""
    rng = random.Random(seed)
    for i in range(n):
        x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1), "c": rng.gauss(0, 1)}
        slope = -1000 if shift is not None and i >= shift else 1000
        yield x, {"u": 2 * x["a"] + rng.gauss(0, 0.1), "v": slope * x["b"] + rng.gauss(0, 1)}


@pytest.mark.parametrize("params", [{}, {"memory": "window", "window_size": 300},
                                    {"factorisation": "student_t", "coverage": 0.9}])
def test_each_target_is_the_single_target_model(params):
    """Without a memory cut, each target's predictions and intervals are those of a
    VBLSRegressor of the same parameters on that target alone, to rounding (the shared
    statistics are the same numbers, summed by BLAS over two targets at once)."""
    multi = VBLSMultiTargetRegressor(**params)
    singles = {"u": VBLSRegressor(**params), "v": VBLSRegressor(**params)}
    for i, (x, y) in enumerate(_samples(1500)):
        got = multi.predict_one(x, with_dist=True)
        for name, single in singles.items():
            expected = single.predict_one(x, with_dist=True)
            if i:
                assert got[name].mu == pytest.approx(expected.mu, rel=1e-7, abs=1e-7)
                assert got[name].sigma == pytest.approx(expected.sigma, rel=1e-7)
            single.learn_one(x, y[name])
        multi.learn_one(x, y)
    assert multi.n_memory_cuts == 0


def test_a_change_in_one_target_cuts_the_shared_memory_and_both_refit():
    """The adaptive memory watches every target: the second target's slope flips, the
    shared window is cut, and both targets predict well afterwards."""
    model = VBLSMultiTargetRegressor()
    errors = []
    for i, (x, y) in enumerate(_samples(3000, shift=1500)):
        if i >= 2000:
            p = model.predict_one(x)
            errors.append(abs(p["v"] - y["v"]) / 1000 + abs(p["u"] - y["u"]))
        model.learn_one(x, y)
    assert model.n_memory_cuts >= 1
    assert sum(errors) / len(errors) < 0.1


def test_bad_targets_are_refused_and_the_model_survives_copies():
    model = VBLSMultiTargetRegressor()
    data = list(_samples(200))
    for x, y in data:
        model.learn_one(x, y)
    before = pickle.dumps(model)
    for bad in ({"u": 1.0}, {"u": 1.0, "v": float("inf")}, {"u": 1.0, "v": 1.0, "w": 0.0}):
        with pytest.raises(ValueError, match="v|w"):
            model.learn_one(data[0][0], bad)
        assert pickle.dumps(model) == before
    twin, deep = pickle.loads(before), copy.deepcopy(model)
    for x, y in data[:50]:
        assert twin.predict_one(x) == model.predict_one(x) == deep.predict_one(x)
        for m in (model, twin, deep):
            m.learn_one(x, y)
    frame = pd.DataFrame([x for x, _ in data[:4]])
    assert list(model.predict_many(frame).columns) == ["u", "v"]
    batch = VBLSMultiTargetRegressor()
    batch.learn_many(frame, pd.DataFrame([y for _, y in data[:4]]))
    assert batch.targets == ("u", "v")


def test_river_checks():
    checks.check_estimator(VBLSMultiTargetRegressor())
