"""SparseRBFMultiTargetRegressor: one basis for several targets, as a river estimator."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from river import base, checks, datasets

from onlinesparse import SparseRBFMultiTargetRegressor, SparseRBFRegressor


def _arm(n: int, seed: int = 0, units=(1.0, 1000.0, 0.01)):
    """A toy arm: three 'joint torques' from the same four inputs, each in its own unit."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 4))
    clean = np.column_stack([np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2],
                             np.cos(X[:, 1]) * X[:, 3], X[:, 0] ** 2 - X[:, 2]])
    Y = (clean + 0.05 * rng.standard_normal(clean.shape)) * np.array(units)
    xs = [{f"x{i}": float(v) for i, v in enumerate(row)} for row in X]
    ys = [{f"tau{k}": float(v) for k, v in enumerate(row)} for row in Y]
    return xs, ys


@pytest.mark.parametrize("seed", [1, 2])
def test_one_target_is_the_single_output_model(seed):
    """K = 1 gives SparseRBFRegressor's predictions and intervals exactly (same stream)."""
    single, multi = SparseRBFRegressor(), SparseRBFMultiTargetRegressor()
    for x, y in datasets.synth.Friedman(seed=seed).take(1500):
        a, b = single.predict_one(x, with_dist=True), multi.predict_one(x, with_dist=True)
        if b:
            assert (a.mu, a.sigma) == (b["y"].mu, b["y"].sigma)
        single.learn_one(x, y)
        multi.learn_one(x, {"y": y})
    assert single.n_basis == multi.n_basis > 10


def test_one_targets_unit_scales_its_predictions_and_nothing_else():
    """Scaling one target by 1000 scales its predictions and intervals by 1000 and leaves
    the basis set and the other targets' predictions as they were — to rounding, which an
    ill-conditioned basis amplifies: on this stream the single-output model's own
    predictions in two units drift apart by up to 1e-2 (measured: 1.2e-2 at 1100 samples,
    the multi-target model's 5e-4), so the bound is 1e-3 and the basis sets are equal."""
    xs, ys = _arm(1200)
    a, b = SparseRBFMultiTargetRegressor(max_basis=30), SparseRBFMultiTargetRegressor(max_basis=30)
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        scaled = {**y, "tau0": 1000.0 * y["tau0"]}
        if i % 97 == 0 and i:
            pa, pb = a.predict_one(x, with_dist=True), b.predict_one(x, with_dist=True)
            assert pb["tau0"].mu == pytest.approx(1000 * pa["tau0"].mu, rel=1e-3)
            assert pb["tau0"].sigma == pytest.approx(1000 * pa["tau0"].sigma, rel=1e-3)
            for k in ("tau1", "tau2"):
                assert pb[k].mu == pytest.approx(pa[k].mu, rel=1e-3)
                assert pb[k].sigma == pytest.approx(pa[k].sigma, rel=1e-3)
        a.learn_one(x, y)
        b.learn_one(x, scaled)
    centres = [f["centre"] for f in a.basis_functions()]
    assert centres == [f["centre"] for f in b.basis_functions()]


def test_several_targets_share_one_basis_and_fit_each():
    """Three targets of different shapes and units: one basis, each fitted (normalised
    error well below the target's variance), each interval near its coverage."""
    xs, ys = _arm(3000)
    model = SparseRBFMultiTargetRegressor(max_basis=40)
    errors, covered = {k: [] for k in ys[0]}, {k: [] for k in ys[0]}
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        prediction = model.predict_one(x, with_dist=True)
        if i >= 1500:
            for k, dist in prediction.items():
                errors[k].append(y[k] - dist.mu)
                covered[k].append(abs(y[k] - dist.mu) <= 1.96 * dist.sigma)
        model.learn_one(x, y)
    for k in ys[0]:
        variance = np.var([y[k] for y in ys[1500:]])
        assert np.mean(np.square(errors[k])) < 0.1 * variance, k
        assert 0.9 < np.mean(covered[k]) < 0.99, k
    assert model.model.n_targets == 3 and model.n_basis > 10
    assert set(model.target_diagnostics()) == set(ys[0])


@pytest.mark.parametrize("bad", [{"tau0": 1.0, "tau1": 2.0}, {"tau0": 1.0, "tau1": 2.0,
                                                              "tau2": float("nan")},
                                 {"tau0": 1.0, "tau1": 2.0, "tau2": 3.0, "tau9": 0.0}, 5.0])
def test_a_missing_or_bad_target_is_refused_and_loses_nothing(bad):
    """A sample without one of the targets (a sensor that dropped out), with a new one or a
    value that is not a number: a ValueError naming the problem, the model as it was."""
    xs, ys = _arm(300)
    model = SparseRBFMultiTargetRegressor(max_basis=10)
    for x, y in zip(xs, ys, strict=True):
        model.learn_one(x, y)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="tau2|tau9|dict"):
        model.learn_one(xs[0], bad)
    assert pickle.dumps(model) == before


def test_pickling_cloning_and_the_many_forms():
    """A pickled or copied model predicts as the original and goes on learning as it does
    (the stream layer's per-target views are made again); clone is a fresh model;
    predict_many is predict_one per row; learn_many refines after learning."""
    xs, ys = _arm(600)
    model = SparseRBFMultiTargetRegressor(max_basis=15)
    for x, y in zip(xs[:500], ys[:500], strict=True):
        model.learn_one(x, y)
    twin = pickle.loads(pickle.dumps(model))
    deep = copy.deepcopy(model)
    for x, y in zip(xs[500:], ys[500:], strict=True):
        expected = model.predict_one(x)
        assert twin.predict_one(x) == expected == deep.predict_one(x)
        for m in (model, twin, deep):
            m.learn_one(x, y)
    assert model.clone().n_targets == 0
    frame = pd.DataFrame(xs[:5])
    many = model.predict_many(frame)
    assert list(many.columns) == ["tau0", "tau1", "tau2"]
    assert many.iloc[2].to_dict() == pytest.approx(model.predict_one(xs[2]))
    batch = SparseRBFMultiTargetRegressor(max_basis=15)
    batch.learn_many(pd.DataFrame(xs[:300]), pd.DataFrame(ys[:300]))
    assert batch.n_basis > 3 and math.isfinite(batch.diagnostics()["gcv"])


def test_river_checks():
    model = SparseRBFMultiTargetRegressor()
    assert isinstance(model, base.MultiTargetRegressor)
    checks.check_estimator(model)
