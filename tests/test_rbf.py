"""SparseRBFRegressor: river conformance, exactness against batch ridge, Orr's 6.5 example."""

from __future__ import annotations

import copy
import inspect
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import checks, datasets, preprocessing, proba
from scipy.stats import norm

from onlinesparse import SparseRBFRegressor, core
from onlinesparse.core.state import REFRESH_STATE
from onlinesparse.orr.criteria import global_lambda_reestimate
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.pruner import local_ridge
from onlinesparse.orr.ridge import IncrementalRidge
from onlinesparse.stream.baseline import lean_on_last
from tests.reference import averaged_prediction as _averaged
from tests.reference import from_scratch, shrunk_prediction
from tests.test_core_ops import _check_against_reference


def _stream(n: int, seed: int = 0, d: int = 3):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.uniform(-2, 2, d)
        y = np.sin(2 * x[0]) + 0.5 * x[1] ** 2 + 0.1 * rng.standard_normal()
        yield {f"x{i}": float(v) for i, v in enumerate(x)}, float(y)


def test_check_estimator_with_default_parameters():
    checks.check_estimator(SparseRBFRegressor())


def test_predicts_zero_before_any_data():
    model = SparseRBFRegressor()
    assert model.predict_one({"a": 1.0}) == 0.0
    dist = model.predict_one({"a": 1.0}, with_dist=True)
    assert isinstance(dist, proba.Gaussian) and dist.mu == 0.0 and dist.sigma > 0


def test_learns_a_nonlinear_function_with_calibrated_uncertainty():
    model = SparseRBFRegressor(max_basis=40, window_size=400)
    data = list(_stream(1500))
    for x, y in data[:1200]:
        model.learn_one(x, y)
    errors, z = [], []
    for x, y in data[1200:]:
        dist = model.predict_one(x, with_dist=True)
        errors.append(y - dist.mu)
        z.append((y - dist.mu) / dist.sigma)
    rmse = float(np.sqrt(np.mean(np.square(errors))))
    assert rmse < 0.25  # target std ≈ 0.75, noise 0.1
    assert 0.6 < float(np.std(z)) < 1.6
    diag = model.diagnostics()
    assert 1 <= diag["n_basis"] <= 40 and math.isfinite(diag["gcv"])
    relevance = model.input_relevance()
    assert relevance["x2"] < 0.2 * min(relevance["x0"], relevance["x1"])  # x2 is unused


def test_window_weights_equal_batch_ridge_on_the_last_patterns():
    """With the basis set and λ's frozen, learn_one over a bounded window W gives the batch
    ridge solution on the last W patterns (1e-8)."""
    model = SparseRBFRegressor(window_size=60, max_basis=15)
    data = list(_stream(400, seed=3))
    for x, y in data[:200]:
        model.learn_one(x, y)
    model.evaluations_per_sample = 0  # freeze the basis set: only patterns move now
    ridge = model.model
    assert ridge.size >= 3
    for x, y in data[200:]:
        model.learn_one(x, y)
    X = np.array([[x[k] for k in sorted(x)] for x, _ in data[-60:]])
    y = np.array([t for _, t in data[-60:]]) - model.target_reference  # (what it fits)
    H = ridge.window.basis.evaluate_many(X, 0, ridge.size)
    # The batch ridge solution by least squares on [H; √Λ] (cond(H), not cond(HᵀH)), and
    # the 1e-8 relative to the weight vector: the drift bounds of S bound ‖δw‖/‖w‖, so a
    # weight far smaller than the largest may carry more relative error than the vector.
    augmented = np.vstack([H, np.diag(np.sqrt(ridge.lambdas))])
    w = np.linalg.lstsq(augmented, np.concatenate([y, np.zeros(ridge.size)]), rcond=None)[0]
    assert np.linalg.norm(ridge.weights - w) <= 1e-8 * np.linalg.norm(w)


def test_pickling_mid_stream_continues_identically():
    model = SparseRBFRegressor(max_basis=20, window_size=100)
    data = list(_stream(300, seed=5))
    for x, y in data[:150]:
        model.learn_one(x, y)
    clone = pickle.loads(pickle.dumps(model))
    for x, y in data[150:]:
        model.learn_one(x, y)
        clone.learn_one(x, y)
    x_test = data[0][0]
    assert model.predict_one(x_test) == clone.predict_one(x_test)
    np.testing.assert_array_equal(model.model.weights, clone.model.weights)


@pytest.mark.parametrize("x, y, match", [
    ({"x0": float("nan"), "x1": 0.0, "x2": 0.0}, 1.0, "x0"),
    ({"x0": 0.0, "x1": float("inf"), "x2": 0.0}, 1.0, "x1"),
    ({"x0": "a", "x1": 0.0, "x2": 0.0}, 1.0, "x0"),
    ({"x0": 0.0, "x1": 0.0, "x2": 0.0}, float("nan"), "target"),
    ({"x0": 0.0, "x1": 0.0, "x2": 0.0}, None, "target"),
])
def test_bad_input_raises_naming_it_and_changes_nothing(x, y, match):
    model = SparseRBFRegressor(max_basis=10, window_size=50)
    for xx, yy in _stream(60):
        model.learn_one(xx, yy)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=match):
        model.learn_one(x, y)
    assert pickle.dumps(model) == before


def test_strict_mode_rejects_missing_and_new_features():
    model = SparseRBFRegressor(strict=True)
    model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'b' is missing"):
        model.learn_one({"a": 1.0}, 1.0)
    with pytest.raises(ValueError, match="'c' was not seen"):
        model.learn_one({"a": 1.0, "b": 2.0, "c": 3.0}, 1.0)
    with pytest.raises(ValueError, match="'b' is missing"):
        model.predict_one({"a": 1.0})
    assert pickle.dumps(model) == before


def test_budget_is_respected_and_refine_spends_idle_time():
    model = SparseRBFRegressor(max_basis=8, window_size=200, n_candidates=10)
    for x, y in _stream(400, seed=2):
        model.learn_one(x, y)
        assert model.n_basis <= 8
        # The pool (10 kernels + bias + 3 linear) may hold one returning basis function
        # until the next sample trims it.
        assert model.model.window.n_candidates <= 10 + 1 + 3 + 1
    gcv = model.diagnostics()["gcv"]
    assert model.refine(50) == 50
    assert model.diagnostics()["gcv"] <= gcv * (1 + 1e-9)  # every move lowers GCV


def test_learn_many_is_learn_one_then_refine_to_convergence_and_refuses_a_bad_batch():
    """learn_many's meaning in every estimator: the rows learned in order, then the model
    refined to convergence on its memory; a bad row refuses the batch with nothing
    changed. predict_many is predict_one row by row."""
    data = list(_stream(120, seed=8))
    X = pd.DataFrame([x for x, _ in data])
    y = pd.Series([t for _, t in data])
    one, many = SparseRBFRegressor(window_size=50), SparseRBFRegressor(window_size=50)
    for x, t in data:
        one.learn_one(x, t)
    while True:  # refine until a round changes nothing, as learn_many does
        pruner = one._pruner
        before = (pruner.n_added, pruner.n_deleted, pruner.n_reestimated)
        one.refine(2 * (one.model.size + one.model.window.n_candidates) + 2)
        if (pruner.n_added, pruner.n_deleted, pruner.n_reestimated) == before:
            break
    many.learn_many(X, y)
    np.testing.assert_array_equal(one.model.weights, many.model.weights)
    gcv = many.diagnostics()["gcv"]
    many.refine(50)
    assert many.diagnostics()["gcv"] == pytest.approx(gcv, rel=1e-9)  # converged
    predictions = many.predict_many(X)
    assert list(predictions) == [many.predict_one(x) for x, _ in data]
    before = pickle.dumps(many)
    bad = X.copy()
    bad.iloc[7, 1] = float("nan")
    with pytest.raises(ValueError, match="x1"):
        many.learn_many(bad, y)
    assert pickle.dumps(many) == before


def test_works_behind_a_standard_scaler_in_a_pipeline():
    # Six streams: on one, a small model's last 200 errors vary by ±0.2 with the details
    # of model selection; their mean is what the model's quality decides.
    scores = []
    for seed in (1, 2, 3, 4, 5, 6):
        pipeline = (preprocessing.StandardScaler()
                    | SparseRBFRegressor(max_basis=30, window_size=300))
        errors = []
        for i, (x, y) in enumerate(datasets.synth.Friedman(seed=seed).take(1200)):
            if i >= 1000:
                errors.append(y - pipeline.predict_one(x))
            pipeline.learn_one(x, y)
        scores.append(float(np.sqrt(np.mean(np.square(errors)))))
    # river's LinearRegression scores 2.92, 2.89, 2.75 on the first three streams; the
    # noise floor is 1. Measured: a mean of 2.38 (2.33 over streams 1-12; 2.26 there with
    # two evaluations per sample, which a budget this small can well afford).
    assert np.mean(scores) < 2.45, scores
    clone = copy.deepcopy(pipeline)
    assert clone.predict_one(x) == pipeline.predict_one(x)


def orr_section_6_5(seed: int) -> dict[str, float]:
    """Orr's 6.5 example: y = sin(12x) on [0, 1], 50 points, noise 0.1, 50 Gaussians at the
    inputs with r = 0.05; global λ by GCV re-estimation from 0.01, then local ridge sweeps."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, 50)
    y = np.sin(12 * x) + 0.1 * rng.standard_normal(50)
    model = IncrementalRidge(n_features=1, size=50)
    for xi, yi in zip(x, y, strict=True):
        model.add_pattern([xi], yi)
    H = np.exp(-((x[:, None] - x[None, :]) ** 2) / 0.05**2)
    lam, _ = global_lambda_reestimate(H.T @ H, H.T @ y, float(y @ y), 50, 0.01)
    for c in x:
        model.add_basis(BasisSpec.radial([c], 0.05), lam)
    gcv_global = model.gcv
    trace = local_ridge(model)
    return {"lambda": lam, "gcv_global": gcv_global, "gcv_local": trace[-1],
            "pruned": 50 - model.size, "trace": trace}


def test_orr_section_6_5_local_ridge_lowers_gcv_and_prunes():
    """Paper: GCV 0.016 → 0.009 and 18 of 50 basis functions pruned (one data set)."""
    results = [orr_section_6_5(seed) for seed in range(5)]
    for r in results:
        assert all(b <= a * (1 + 1e-9) for a, b in zip(r["trace"], r["trace"][1:], strict=False))
        assert r["gcv_local"] < 0.85 * r["gcv_global"]
        assert 0.005 < r["gcv_global"] < 0.03
    pruned = [r["pruned"] for r in results]
    assert 8 <= np.mean(pruned) <= 35


def test_from_batch_starts_from_the_selected_basis_and_keeps_streaming():
    from onlinesparse import batch

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"b": rng.uniform(0, 1, 80), "a": rng.uniform(0, 1, 80)})
    y = np.sin(6 * X["b"]) + 0.3 * X["a"] + 0.05 * rng.standard_normal(80)
    centres = X.to_numpy()
    F = batch.gaussian_candidates(X.to_numpy(), centres, 0.3)
    result = batch.regularised_forward_selection(F, y.to_numpy(), centres=centres)
    model = SparseRBFRegressor.from_batch(result, X, y, radius=0.3, window_size=200)
    assert model.n_basis == result.n_selected
    # The window holds exactly the batch data, so the weights are the batch ridge weights.
    np.testing.assert_allclose(model.model.weights, result.weights, rtol=1e-7,
                               atol=1e-9 * np.abs(result.weights).max())
    x0 = X.iloc[0].to_dict()
    vector = np.array([x0[name] for name in model._features.names])
    # (the batch's own prediction, returned toward the targets' mean by c ≈ 1)
    assert shrunk_prediction(model, vector) == pytest.approx(
        float(F[0, result.selected] @ result.weights), rel=1e-2)
    assert model.predict_one(x0) == pytest.approx(shrunk_prediction(model, vector), rel=1e-9)
    for _ in range(50):  # (the same stream goes on)
        a, b = float(rng.uniform()), float(rng.uniform())
        model.learn_one({"a": a, "b": b}, float(np.sin(6 * b) + 0.3 * a))
    assert model.n_basis >= 1


def test_inputs_on_a_curve_never_make_learn_one_raise_and_memory_stays_bounded():
    """Regression: periodic robot motion puts the inputs on a 1-D curve, where candidate
    columns are nearly collinear; a trade at the budget used to fail its undo and raise
    after the sample had been learned. Every pruner move is now atomic or skipped."""
    rng = np.random.default_rng(0)
    model = SparseRBFRegressor(max_basis=20, window_size=1000, evaluations_per_sample=1,
                               n_candidates=8)
    for k in range(3000):
        t = k * 1e-3
        q, qd = math.sin(math.pi * t), math.cos(math.pi * t)
        qdd = -q + 0.02 * rng.standard_normal()
        y = (0.35 * math.pi**2 * qdd + 6.9 * math.sin(q) + 0.4 * math.tanh(qd / 0.02)
             + 0.05 * rng.standard_normal())
        model.learn_one({"q": q, "qd": qd, "qdd": qdd}, y)
    assert model.diagnostics()["noise_std"] < 0.2
    # Verdicts live on the columns, so the pool is all the buffer manager keeps.
    assert model.model.window.n_candidates <= model._buffer.capacity
    assert len(model._buffer.queue) <= model._buffer.queue.maxlen


def test_snapshot_and_restore_undo_a_removal_bit_for_bit():
    model = SparseRBFRegressor(max_basis=6, window_size=200)
    for x, y in _stream(300, seed=4):
        model.learn_one(x, y)
    ridge = model.model
    ridge.swap_basis(1, ridge.size - 1)
    before = pickle.dumps((ridge.state.variance, ridge.state.weights, ridge.state.lambdas,
                           ridge.window.ids[: ridge.size].tolist()))
    gcv = ridge.gcv
    snapshot = ridge.snapshot()
    ridge.remove_basis(ridge.size - 1, keep_as_candidate=True)
    assert ridge.gcv != gcv
    ridge.restore(snapshot)
    after = pickle.dumps((ridge.state.variance, ridge.state.weights, ridge.state.lambdas,
                          ridge.window.ids[: ridge.size].tolist()))
    assert after == before and ridge.gcv == gcv
    with pytest.raises(ValueError, match="exactly one removal"):
        ridge.restore(snapshot)


def _curve_or_cloud(n: int, seed: int, d: int, on_curve: bool):
    """Inputs in a cloud, or on a 1-D curve (nearly collinear columns, ill-conditioned)."""
    rng = np.random.default_rng(seed)
    for k in range(n):
        x = (np.sin(0.05 * k + np.arange(d)) if on_curve else rng.uniform(-2, 2, d))
        y = np.sin(2 * x[0]) + 0.5 * x[-1] ** 2 + 0.1 * rng.standard_normal()
        yield {f"x{i}": float(v) for i, v in enumerate(x)}, float(y)


def _cond(ridge: IncrementalRidge) -> float:
    try:
        return from_scratch(ridge)["cond"] if ridge.size else 1.0
    except np.linalg.LinAlgError:  # singular to working precision: no reference exists
        return math.inf


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), max_basis=st.integers(2, 25),
       window=st.integers(10, 120), evaluations=st.integers(0, 4),
       candidate_every=st.integers(1, 4), n_candidates=st.integers(1, 12),
       d=st.integers(1, 4), on_curve=st.booleans(),
       kernel=st.sampled_from(["gaussian", "multiquadric", "inverse_multiquadric", "cauchy"]),
       linear=st.booleans(), refine_every=st.sampled_from([0, 13]),
       pickle_every=st.sampled_from([0, 29]))
def test_random_streams_through_the_estimator_match_the_reference(
        seed, max_basis, window, evaluations, candidate_every, n_candidates, d, on_curve,
        kernel, linear, refine_every, pickle_every):
    """Random streams and settings through SparseRBFRegressor (one compiled call per
    sample, with the pruner's moves, refreshes and new columns it hands back): at every
    check the model is the from-scratch ridge solution on its window, basis functions and
    λ's (tests/reference.py), its criteria match, and its predictions are h(x)ᵀw returned
    toward the targets' mean by the model's uncertainty (``shrunk_prediction``). A pickle
    round trip (pickle_every) and refine() between samples (refine_every) change nothing
    of that. Ill-conditioned states (inputs on a curve) are held to the health check."""
    params = dict(max_basis=max_basis, window_size=window, evaluations_per_sample=evaluations,
                  candidate_every=candidate_every, n_candidates=n_candidates, kernel=kernel,
                  linear=linear)
    model = SparseRBFRegressor(**params)
    well_conditioned = True
    last = 3 * window + 19
    for k, (x, y) in enumerate(_curve_or_cloud(last + 1, seed, d, on_curve)):
        model.learn_one(x, y)
        if refine_every and k % refine_every == 0:
            model.refine(3)
        if pickle_every and k % pickle_every == 0:
            model = pickle.loads(pickle.dumps(model))
        ridge = model.model
        vector = np.array([x[f"x{i}"] for i in range(d)])
        window = ridge.window
        expected = (_averaged(model, shrunk_prediction(model, vector), vector)
                    if ridge.size
                    else window.sum_y / window.count + model.target_reference)  # (the mean)
        assert model.predict_one(x) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert math.isfinite(model.predict_one(x, with_dist=True).sigma)
        if k % 17 == 0 or k == last:
            well_conditioned = well_conditioned and _cond(ridge) <= 1e4
            _check_against_reference(ridge, strict=well_conditioned)
    ridge.check_health()
    ridge.maintain()  # (the estimator's model defers the refresh a probe calls for)
    drift = ridge.drift()
    assert ridge.ill_conditioned or drift <= max(ridge.drift_tolerance, 1e-15 * _cond(ridge))


def test_a_slide_the_compiled_sample_refuses_takes_the_add_first_order(monkeypatch):
    """When the oldest pattern cannot leave first (the model would be singular without
    it), the compiled sample changes nothing and says so; the estimator then adds the
    pattern by the model's add-first operation and the rest of the sample runs as usual.
    Real streams almost never meet it, so a wrapper makes every fifth full-window sample
    refuse (after filling the row buffer, as the compiled call does)."""
    from onlinesparse.orr import sample as fused

    compiled = fused.stream_sample
    calls = {"k": 0, "refused": 0}
    names = list(inspect.signature(compiled.py_func).parameters)

    def refusing(*args):
        calls["k"] += 1
        a = dict(zip(names, args, strict=True))  # (by name, as stream_sample declares them)
        b, x = a["b"], a["x"]
        window_record, row, t = b.window, b.row, b.tracked
        full = window_record[0]["n_stored"] >= window_record[0]["store_capacity"]
        if full and calls["k"] % 5 == 0:
            calls["refused"] += 1
            n = int(window_record[0]["n_columns"])
            core.evaluate_rows(t.kinds, t.centres, t.inv_r2, t.features,
                               x.reshape(1, -1), 0, n, row[:n].reshape(1, n))
            return core.SLIDE_REFUSED
        return compiled(*args)

    monkeypatch.setattr(fused, "stream_sample", refusing)
    model = SparseRBFRegressor(max_basis=10, window_size=40)
    for x, y in _curve_or_cloud(200, 3, 2, False):
        model.learn_one(x, y)
    assert calls["refused"] >= 10
    assert model.model.window.n_seen == 200 and model._n_learned == 200
    assert model._features.n_committed == 200
    _check_against_reference(model.model, strict=_cond(model.model) <= 1e4)


def test_a_sample_does_at_most_one_heavy_piece_of_work_at_the_budget(monkeypatch):
    """The worst case of a learn_one is one heavy operation, not their sum: a sample that
    refreshes S (O(M³)) computes no candidate column (O(W·n)), and one that adds (or
    trades) computes no column. (A refresh sample selects as any other: its O(M²) moves
    are the light work every sample may do.)"""
    # Refreshes of S are rare by default (periodic ones every ten windows); one every
    # window makes enough of them happen here to test.
    monkeypatch.setattr("onlinesparse.orr.streaming._REFRESH_WINDOWS", 1)
    model = SparseRBFRegressor(max_basis=15, window_size=200)
    scaler = preprocessing.StandardScaler()
    seen = {"refresh": 0, "add": 0, "column": 0}
    for x, y in datasets.synth.Friedman(seed=3).take(1500):
        scaler.learn_one(x)
        x = scaler.transform_one(x)
        at_budget = model.n_basis >= model.max_basis
        before = (model.model.n_refreshes if model.model else 0, model._pruner.n_added,
                  model.model.window._next_id if model.model else 0)
        model.learn_one(x, y)
        refreshed = model.model.n_refreshes != before[0]
        added = model._pruner.n_added != before[1]
        column = model.model.window._next_id != before[2]
        if at_budget:
            assert not (refreshed and column)
            assert not (added and column)
            seen["refresh"] += refreshed
            seen["add"] += added
            seen["column"] += column
    assert min(seen.values()) >= 5, seen  # each kind of work did happen at the budget


def test_no_array_grows_and_the_gram_is_never_recomputed_whole_mid_stream(monkeypatch):
    """What used to make single samples slow once the stream runs: the stored window and
    the column arrays are reserved before the first sample (no growth copies them later),
    and a full window's statistics are renewed a column at a time (no sample recomputes
    the whole Gram matrix)."""
    from onlinesparse.orr.window import WindowStatistics

    calls = {"_grow_store": 0, "_ensure_columns_grew": 0, "refresh": 0}
    grow, ensure, refresh = (WindowStatistics._grow_store, WindowStatistics._ensure_columns,
                             WindowStatistics.refresh)

    def counting_ensure(self, needed):
        calls["_ensure_columns_grew"] += needed > self._gram.shape[0]
        return ensure(self, needed)

    model = SparseRBFRegressor(max_basis=15, window_size=120, n_candidates=10)
    scaler = preprocessing.StandardScaler()
    stream = list(datasets.synth.Friedman(seed=5).take(700))
    x0 = scaler.learn_one(stream[0][0]) or scaler.transform_one(stream[0][0])
    model.learn_one(x0, stream[0][1])  # the first sample reserves
    monkeypatch.setattr(WindowStatistics, "_grow_store",
                        lambda self, rows: calls.__setitem__("_grow_store", 1) or grow(self, rows))
    monkeypatch.setattr(WindowStatistics, "_ensure_columns", counting_ensure)
    monkeypatch.setattr(WindowStatistics, "refresh",
                        lambda self: calls.__setitem__("refresh", 1) or refresh(self))
    largest = 0
    for x, y in stream[1:]:
        scaler.learn_one(x)
        model.learn_one(scaler.transform_one(x), y)
        largest = max(largest, model._model.size)  # (._model: no write-back of registers)
    assert largest == 15 and model.model.window.is_full
    assert calls == {"_grow_store": 0, "_ensure_columns_grew": 0, "refresh": 0}


@pytest.mark.parametrize("params, match", [
    ({"max_basis": 0}, "max_basis must be an integer ≥ 1"),
    ({"max_basis": True}, "max_basis must be an integer"),
    ({"max_basis": 2.0}, "max_basis must be an integer"),
    ({"window_size": 1}, "window_size must be an integer ≥ 2"),
    ({"candidate_every": 0}, "candidate_every"),
    ({"noise_every": 0}, "noise_every"),
    ({"evaluations_per_sample": -1}, "evaluations_per_sample"),
    ({"kernel": "laplace"}, "kernel must be one of"),
    ({"radii": (0.5, -1.0)}, "radii"),
    ({"radii": (0.0,)}, "radii"),
    ({"radii": ()}, "radii"),
    ({"novelty": float("nan")}, "novelty"),
    ({"error_threshold": -1.0}, "error_threshold"),
    ({"metric": "mahalanobis"}, "metric must be one of"),
])
def test_bad_parameters_are_refused_naming_them(params, match):
    with pytest.raises(ValueError, match=match):
        SparseRBFRegressor(**params)


def test_when_s_is_refreshed_does_not_change_what_the_model_does():
    """Rounding decides when S is refreshed (the accounts, the drift probe), so two models
    of the same stream can call for refreshes at different samples (y in N·m and in mN·m
    did). A refresh changes S only by the rounding it removes, so a model made to refresh
    at a hundred more samples makes the same choices: the same basis functions, added and
    deleted at the same samples, and the same predictions to rounding. (A refresh sample
    that skipped its model selection and its candidate column parted the two at the first
    extra refresh; docs/numerics.md §10.)"""
    scaler = preprocessing.StandardScaler()
    a, b = (SparseRBFRegressor(max_basis=20, window_size=200) for _ in range(2))
    for k, (x, y) in enumerate(datasets.synth.Friedman(seed=5).take(1500)):
        scaler.learn_one(x)
        z = scaler.transform_one(x)
        if k % 13 == 5 and b.model is not None:  # call for a refresh, as rounding would
            b.model.record[0]["pending"] = REFRESH_STATE
        assert b.predict_one(z) == pytest.approx(a.predict_one(z), rel=1e-6, abs=1e-9)
        a.learn_one(z, y)
        b.learn_one(z, y)
        assert (b._pruner.n_added, b._pruner.n_deleted) == (a._pruner.n_added,
                                                             a._pruner.n_deleted)
    assert b.model.n_refreshes >= a.model.n_refreshes + 100
    assert ([f["centre"] for f in b.basis_functions()]
            == [f["centre"] for f in a.basis_functions()])


# Streams for the units test: (stream, the model's parameters). The last two use the
# defaults; before refreshes of S stopped deciding what a sample does, both parted at a
# refresh one model called for and the other did not (docs/numerics.md §10).
_UNITS_STREAMS = {
    "friedman-7-small": (lambda: datasets.synth.Friedman(seed=7).take(2000),
                         {"max_basis": 30, "window_size": 300}),
    "friedman-42": (lambda: datasets.synth.Friedman(seed=42).take(2000), {}),
    "chickweights": (datasets.ChickWeights, {}),
}


@pytest.mark.parametrize("stream", list(_UNITS_STREAMS))
@pytest.mark.parametrize("factor", [1000.0, 0.001])
def test_the_model_is_equivariant_to_the_units_of_its_target(factor, stream):
    """Issue 18: y in mN·m instead of N·m changes nothing but the unit of the predictions.
    Every place the target's scale enters (the noise level before its first estimate, the
    λ floor, the proposal threshold, the calibration) is relative to the target's own
    scale, so over 2000 samples of Friedman #1 (and all of ChickWeights) every prediction
    scales by the factor and the basis set is the same."""
    make, params = _UNITS_STREAMS[stream]
    # (the rounding of the two runs grows about tenfold per hundred samples on ChickWeights,
    # whose few distinct inputs make S ill-conditioned, since its memory is no longer cut:
    # 1.8e-5 relative at the end; Friedman #1 stays within 1e-6)
    rel = 1e-4 if stream == "chickweights" else 1e-6
    scaler_a, scaler_b = preprocessing.StandardScaler(), preprocessing.StandardScaler()
    a, b = SparseRBFRegressor(**params), SparseRBFRegressor(**params)
    for k, (x, y) in enumerate(make()):
        scaler_a.learn_one(x)
        scaler_b.learn_one(x)
        xa, xb = scaler_a.transform_one(x), scaler_b.transform_one(x)
        pa, pb = a.predict_one(xa, with_dist=True), b.predict_one(xb, with_dist=True)
        assert pb.mu == pytest.approx(factor * pa.mu, rel=rel, abs=1e-9 * factor)
        if k:  # (before any pattern there is no scale: σ = 1 in any unit)
            assert pb.sigma == pytest.approx(factor * pa.sigma, rel=rel)
        a.learn_one(xa, y)
        b.learn_one(xb, factor * y)
    # The same columns: kinds and centres exactly; radii and metrics to the rounding of
    # the weights they come from (the gradient weights' slopes scale with the target and
    # are normalised away; measured 1e-11 relative on Friedman #1, and ChickWeights' rounding
    # above).
    basis_a, basis_b = a.basis_functions(), b.basis_functions()
    assert [(f["kind"], f["centre"]) for f in basis_a] == [(f["kind"], f["centre"])
                                                           for f in basis_b]
    for fa, fb in zip(basis_a, basis_b, strict=True):
        assert fb["radius"] == pytest.approx(fa["radius"], rel=max(rel, 1e-8))
        assert len(fa["metric"]) == len(fb["metric"])
        np.testing.assert_allclose(fb["metric"], fa["metric"], rtol=max(rel, 1e-7))
    assert any(f["metric"] for f in basis_a)  # (the gradient metric is in use)
    assert a.n_memory_cuts == b.n_memory_cuts


@pytest.mark.parametrize("shift", [-37.5, 1e8])
def test_the_model_is_equivariant_to_a_shift_of_its_target(shift):
    """Issue 18, units: a target in K instead of °C, or an encoder count far from 0,
    changes nothing but the origin of the predictions. Targets enter the window as
    differences from the first one, so over 2000 samples of Friedman #1 every prediction
    moves by the shift (to the rounding of y + shift: 1.5e-8 at 1e8), every predictive
    deviation stays, and the basis set is the same. (Without the reference a shift of 1e8
    took the RMSE from 1.71 to 4.82 and the coverage to 100 %: docs/numerics.md §8.)"""
    scaler = preprocessing.StandardScaler()
    a, b = SparseRBFRegressor(max_basis=30, window_size=300), SparseRBFRegressor(max_basis=30,
                                                                           window_size=300)
    for k, (x, y) in enumerate(datasets.synth.Friedman(seed=7).take(2000)):
        scaler.learn_one(x)
        z = scaler.transform_one(x)
        pa, pb = a.predict_one(z, with_dist=True), b.predict_one(z, with_dist=True)
        if k:  # (before any pattern both predict 0: there is no origin yet)
            assert pb.mu - shift == pytest.approx(pa.mu, rel=1e-6, abs=1e-5)
            assert pb.sigma == pytest.approx(pa.sigma, rel=1e-6)
            assert b.predict_one(z) - shift == pytest.approx(a.predict_one(z), rel=1e-6,
                                                              abs=1e-5)
        a.learn_one(z, y)
        b.learn_one(z, y + shift)
    basis_a, basis_b = a.basis_functions(), b.basis_functions()
    assert [(f["kind"], f["centre"]) for f in basis_a] == [(f["kind"], f["centre"])
                                                           for f in basis_b]
    assert a.n_memory_cuts == b.n_memory_cuts


def test_the_first_predictions_start_at_the_mean_of_the_target():
    """Issue 18, cold start: after one pattern the model predicts that pattern's target
    (the constant joins at λ = 0), not 0, whatever the input."""
    model = SparseRBFRegressor()
    model.learn_one({"a": 0.3, "b": -1.0}, 43.0)
    assert model.predict_one({"a": 5.0, "b": 2.0}) == pytest.approx(43.0)
    model.learn_one({"a": -0.2, "b": 0.5}, 45.0)
    assert model.predict_one({"a": 5.0, "b": 2.0}) == pytest.approx(44.0, rel=0.05)


def test_intervals_are_calibrated_on_a_heavy_tailed_stream():
    """Issue 18: the 95 % interval covers 93–97 % after the first 100 samples even where
    the noise is Student-t with 3 degrees of freedom (stream.calibration.calibrate)."""
    rng = np.random.default_rng(3)
    model = SparseRBFRegressor(max_basis=20, window_size=200)
    covered = []
    for k in range(2000):
        x = rng.uniform(-2, 2, 2)
        y = math.sin(2 * x[0]) + 0.3 * rng.standard_t(3)
        d = model.predict_one({"a": x[0], "b": x[1]}, with_dist=True)
        if k >= 100:
            covered.append(abs(y - d.mu) <= 1.96 * d.sigma)
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, float(y))
    assert 0.93 <= np.mean(covered) <= 0.97


def _steps_and_jumps(n: int, seed: int) -> list[tuple[dict, float]]:
    """A sensor's level: small steps (sd 0.05) and, one sample in fifty, a jump of sd 5,
    read against the hour of a day: the last target carries the prediction, and the mean
    square of its steps is dominated by the jumps."""
    rng = np.random.default_rng(seed)
    level = np.cumsum(rng.normal(0.0, 0.05, n) + (rng.random(n) < 0.02) * rng.normal(0, 5, n))
    hours = np.arange(n) % 24
    return [({"sin": math.sin(2 * math.pi * h / 24), "cos": math.cos(2 * math.pi * h / 24)},
             float(v)) for h, v in zip(hours, level, strict=True)]


@pytest.mark.parametrize("coverage", [0.5, 0.9])
def test_the_interval_as_returned_is_calibrated_where_the_last_target_carries_it(coverage):
    """The interval a user gets is the calibrated one (stream.calibration, κ_o on the
    prediction as returned): on a stream of small steps and rare jumps the last target's
    variance, a mean square of the steps, made every interval cover 98 % or more of the
    errors whatever ``coverage`` asked for (a river user's sensor recording)."""
    model = SparseRBFRegressor(max_basis=20, window_size=200, coverage=coverage)
    quantile = float(norm.ppf(0.5 + coverage / 2))
    covered = []
    for k, (x, y) in enumerate(_steps_and_jumps(2000, 4)):
        d = model.predict_one(x, with_dist=True)
        if k >= 200:
            covered.append(abs(y - d.mu) <= quantile * d.sigma)
        model.learn_one(x, y)
    assert abs(np.mean(covered) - coverage) <= 0.04


def test_adaptive_memory_forgets_after_a_change_and_not_on_a_stationary_stream():
    """memory="adaptive": 3000 stationary samples make no cut; after the target function
    flips sign the model cuts its memory within 50 samples, keeping about the samples since
    the change, and its error returns to the stationary level sooner than a model with a
    fixed window's."""
    rng = np.random.default_rng(11)
    xs = rng.uniform(-2, 2, (4000, 2))
    ys = np.sin(2 * xs[:, 0]) * np.cos(xs[:, 1]) + 0.1 * rng.normal(size=4000)
    ys[3000:] *= -1.0
    adaptive = SparseRBFRegressor(max_basis=30, window_size=1000)
    fixed = SparseRBFRegressor(max_basis=30, window_size=1000, memory="window")
    errors = {"adaptive": [], "fixed": []}
    cut_at = None
    for k, (x, y) in enumerate(zip(xs, ys, strict=True)):
        sample = {"a": float(x[0]), "b": float(x[1])}
        for name, model in (("adaptive", adaptive), ("fixed", fixed)):
            errors[name].append(y - model.predict_one(sample))
            model.learn_one(sample, float(y))
        if k == 2999:
            assert adaptive.n_memory_cuts == 0
        if cut_at is None and adaptive.n_memory_cuts:
            cut_at = k
            kept, floor = adaptive.model.n_patterns, adaptive.n_basis + 10
    assert cut_at is not None and 3000 <= cut_at < 3050
    assert kept <= max(cut_at - 3000 + 1, floor, 30) + 1

    def rmse(name, start):
        return float(np.sqrt(np.mean(np.square(errors[name][start:start + 200]))))

    assert rmse("adaptive", 3200) < 0.5 * rmse("fixed", 3200)



def test_the_interval_widens_far_from_the_data_to_the_targets_spread():
    """Issue 18, novelty: the predictive variance adds the posterior variance of a new
    basis function's weight at x (SparseRBFRegressor._novelty_variance). Inside the data
    it changes the deviation by under 2 %; far from every stored input the deviation is
    at least the target's own spread, where without it only the linear functions' weight
    uncertainty widened the interval."""
    rng = np.random.default_rng(4)
    model = SparseRBFRegressor(max_basis=20, window_size=400)
    xs = rng.uniform(-1, 1, (600, 2))
    ys = np.sin(3 * xs[:, 0]) + 0.05 * rng.normal(size=600)
    for x, y in zip(xs, ys, strict=True):
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, float(y))
    inside = {"a": 0.1, "b": -0.2}
    d_inside = model.predict_one(inside, with_dist=True)
    assert model._novelty_variance(np.array([0.1, -0.2]))[0] < 0.04 * d_inside.sigma ** 2
    spread = float(np.std(ys[-400:]))
    far = model.predict_one({"a": 0.1, "b": 8.0}, with_dist=True)
    assert far.sigma >= 0.99 * spread
    assert far.sigma > 5 * d_inside.sigma


def test_predict_one_agrees_with_the_ridge_after_every_kind_of_update():
    """predict_one's fast path reuses the last learn_one's arrays while the window's layout
    and the weights array stay: after learn_one, refine (which may overfill and grow the
    pool), learn_many and a pickle round trip it gives the ridge's own prediction."""
    rng = np.random.default_rng(8)
    model = SparseRBFRegressor(max_basis=12, window_size=80, n_candidates=2)
    probe = {"a": 0.2, "b": -0.4}

    def agree():
        vector = np.array([probe["a"], probe["b"]])
        expected = (_averaged(model, shrunk_prediction(model, vector), vector) if model.n_basis
                    else model.predict_one(probe))
        assert model.predict_one(probe) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert model.predict_one(probe, with_dist=True).mu == pytest.approx(
            model.predict_one(probe), rel=1e-12, abs=1e-12)

    for k in range(400):
        x = rng.uniform(-1, 1, 2)
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, float(np.sin(3 * x[0])))
        agree()
        if k % 37 == 0:
            model.refine(40)
            agree()
        if k % 101 == 0:
            frame = pd.DataFrame(rng.uniform(-1, 1, (5, 2)), columns=["a", "b"])
            model.learn_many(frame, pd.Series(np.sin(3 * frame["a"])))
            agree()
            model = pickle.loads(pickle.dumps(model))
            agree()


def test_the_evidence_against_the_running_mean_is_the_prequential_log_likelihood_ratio():
    """stream.baseline.weigh_baselines from scratch: after every sample, the running mean's
    log_odds grow (from the prior, −4) by the log-likelihood ratio of the model's error
    against the running mean's miss (both before learning; the model's as made, the
    errors' level included) under the mean's Student-t predictive, scale² v = s²(1 + 1/p)
    as it stood and ν = p − 1 degrees of freedom, p the patterns before this one —
    ``−(ν+1)/2·[log(1 + e²/(νv)) − log(1 + m²/(νv))]`` — bounded by ±40; and predict_one
    is the mixture of f(x) + b (b the level), ȳ and the last target by the shares the odds
    give (1 for the model, e^−odds for each expert), moved toward the blend of f(x) + b and
    the last target (stream.baseline.lean_on_last, tested in test_stream), f and ȳ
    measured from the first target (the model fits the differences from it)."""
    rng = np.random.default_rng(6)
    model = SparseRBFRegressor(max_basis=10, window_size=60)
    expected = -4.0  # (the prior odds: the model earns its weight)
    reference = None
    for _ in range(150):
        x = {"a": float(rng.uniform(-2, 2)), "b": float(rng.uniform(-2, 2))}
        y = float(3.0 + np.sin(2 * x["a"]) + 0.3 * rng.normal())
        reference = y if reference is None else reference
        experts, level = model._stream.bundle.baseline, model._stream.bundle.level[0]
        before = (float(experts[0]["mean"]), float(experts[0]["variance"]))
        offset = float(level["offset"])
        fitted = model.n_basis > 0
        model.learn_one(x, y)
        if before[1] > 0.0 and fitted:
            error = model._error - offset
            miss = y - reference - before[0]
            nu = max(model.model.window.count - 2.0, 1.0)
            expected += -0.5 * (nu + 1.0) * (math.log1p(error ** 2 / (nu * before[1]))
                                             - math.log1p(miss ** 2 / (nu * before[1])))
            expected = min(max(expected, -40.0), 40.0)
            assert experts[0]["log_odds"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
        odds = [math.exp(-float(e["log_odds"])) if w > 0 else 0.0
                for e, w in zip(experts, experts["weight"], strict=True)]
        if experts[0]["variance"] > 0.0:  # (the mean predicts once its variance is one)
            assert odds[0] == pytest.approx(math.exp(-expected), rel=1e-12)
        shares = np.array([1.0, *odds]) / (1.0 + sum(odds))
        if model.n_basis:
            f = shrunk_prediction(model, np.array([0.3, -0.1])) + float(level["offset"])
            means = np.array([f, *experts["mean"]])
            mixed, _ = lean_on_last(experts, f, float(shares @ means), 1.0)
            assert model.predict_one({"a": 0.3, "b": -0.1}) == pytest.approx(
                mixed + reference, rel=1e-9)


def test_one_sample_cannot_settle_the_evidence_while_the_variance_rests_on_few():
    """stream.evidence.log_ratio is the Student-t log-likelihood ratio: the Gaussian
    (m² − e²)/(2v) in the limit of many degrees of freedom, and bounded by its tails on
    few. The case it was made for (Friedman #1 with its first target at 0): at the fourth
    sample a variance of 0.37 from three targets, the mean missing by 10.48 and the model
    by 9.80; the Gaussian ratio gave the model 18.7 nats at once."""
    from onlinesparse.stream.evidence import log_ratio

    assert 0 < log_ratio(9.80, 10.48, 0.367, 2.0) < 1
    for e, m, v in ((0.3, 1.2, 0.5), (2.0, -0.1, 3.0), (5.0, 5.0, 1.0)):
        assert log_ratio(e, m, v, 1e9) == pytest.approx(
            (m * m - e * e) / (2 * v), rel=1e-6, abs=1e-12)


def test_the_first_predictions_are_as_good_as_the_running_mean():
    """Issue 18, cold start: behind a young StandardScaler on Friedman #1, whose first
    scaled inputs lie far out, the first 50 predictions are at least as good as the running
    mean's, the first 10 and 20 within 1 % (and the first 200 clearly better): the model
    earns its weight against the mean sample by sample, from prior odds of e^−4."""
    from river import stats

    model = preprocessing.StandardScaler() | SparseRBFRegressor()
    mean, ours, baseline = stats.Mean(), [], []
    for k, (x, y) in enumerate(datasets.synth.Friedman(seed=42).take(200)):
        ours.append(y - model.predict_one(x))
        baseline.append(y - (mean.get() if k else 0.0))
        model.learn_one(x, y)
        mean.update(y)
    ours, baseline = np.array(ours[1:]), np.array(baseline[1:])
    assert np.sqrt(np.mean(ours[:49] ** 2)) <= np.sqrt(np.mean(baseline[:49] ** 2))
    for first in (9, 19):  # (from the prior odds of e^−4: within 1 % of the mean's)
        assert (np.sqrt(np.mean(ours[:first] ** 2))
                <= 1.01 * np.sqrt(np.mean(baseline[:first] ** 2)))
    assert np.sqrt(np.mean(ours ** 2)) < 0.85 * np.sqrt(np.mean(baseline ** 2))


def test_a_stream_that_keeps_changing_is_fitted_on_the_stretch_between_its_changes():
    """memory="adaptive" on a target that flips sign every 150 samples: each change is
    caught (a cut each), and from the second on the window refills only to about the
    interval between changes (half as much again at most) instead of to window_size; once
    the stream settles the cap relaxes and the window refills."""
    rng = np.random.default_rng(12)
    model = SparseRBFRegressor(max_basis=20, window_size=1000)
    largest_while_changing = 0
    for k in range(6000):
        x = rng.uniform(-2, 2, 2)
        sign = -1.0 if k < 1800 and (k // 150) % 2 else 1.0
        y = sign * np.sin(2 * x[0]) + 0.1 * rng.normal()
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, float(y))
        if 900 <= k < 1800:
            largest_while_changing = max(largest_while_changing, model.model.n_patterns)
        if k == 1799:
            assert model.n_memory_cuts >= 11  # (eleven changes)
    assert largest_while_changing <= 1.5 * 160
    assert model.model.n_patterns >= 600  # (settled: the cap relaxed)



def test_patterns_from_before_a_change_leave_once_enough_new_ones_have_come():
    """A cut keeps at least max(M + 10, 30) patterns, older ones included when the change
    was only a few samples ago; those leave as soon as as many new ones are in."""
    rng = np.random.default_rng(13)
    xs = rng.uniform(-2, 2, (3200, 1))
    ys = np.sin(2 * xs[:, 0]) + 0.05 * rng.normal(size=3200)
    ys[3000:] = -ys[3000:]
    model = SparseRBFRegressor(max_basis=10, window_size=500)
    for k in range(3200):
        model.learn_one({"a": float(xs[k, 0])}, float(ys[k]))
    assert model.n_memory_cuts >= 1
    stored = model.model.window.stored_inputs()[:, 0]
    assert np.all(np.isin(stored, xs[3000:, 0]))


def test_the_compiled_bundle_keeps_its_numba_type_over_a_stream():
    """The entry points of the compiled calls are resolved once per model and reused for
    every rebuilt bundle (``orr.streaming._Compiled``): that is sound only while the bundle's
    numba type — every array's dtype, dimensions and layout — stays the same through
    growth, resizes, refreshes, trades and memory cuts."""
    import numba

    rng = np.random.default_rng(8)
    model = SparseRBFRegressor(max_basis=8, window_size=60, n_candidates=4)
    types, rebuilds = set(), 0
    for k in range(900):
        x = rng.uniform(-2, 2, 2)
        y = float(np.sin(2 * x[0]) * (1 if k < 450 else -3) + 0.05 * rng.normal())
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, y)
        compiled = model._cached_bundle[4]
        if compiled.bundle is not getattr(model, "_last_seen", None):
            rebuilds += 1
            model._last_seen = compiled.bundle
            types.add(numba.typeof(compiled.bundle))
    assert rebuilds > 10 and model.n_memory_cuts >= 1
    assert len(types) == 1
