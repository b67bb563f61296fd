"""The inputs' relevance (core.relevance) and the diagonal metric of a kernel column
(kernels.Basis): each against a computation from scratch, and what it does for the
estimator on a stream with irrelevant inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse import SparseRBFRegressor, core
from onlinesparse.orr.kernels import KERNELS, Basis, BasisSpec
from onlinesparse.orr.window import WindowStatistics
from tests.reference import prequential_errors

_PROFILES = {
    "gaussian": lambda z: np.exp(-z),
    "multiquadric": lambda z: np.sqrt(1.0 + z),
    "inverse_multiquadric": lambda z: 1.0 / np.sqrt(1.0 + z),
    "cauchy": lambda z: 1.0 / (1.0 + z),
}


def _random_columns(rng: np.random.Generator, d: int, spread: float) -> list[tuple]:
    """A constant, one linear column and one radial column of every kind, each with a
    metric whose weights span ``spread`` decades: ``(kind, centre or input, radius,
    weights)`` as drawn, before the basis rescales anything."""
    columns = [("constant", None, None, None), ("linear", int(rng.integers(d)), None, None)]
    for kind in KERNELS:
        columns.append((kind, rng.normal(size=d), float(rng.uniform(0.3, 3.0)),
                        10.0 ** rng.uniform(-spread, spread, d)))
    return columns


def _basis(columns: list[tuple], d: int) -> Basis:
    basis = Basis(d)
    for kind, where, radius, weights in columns:
        if kind == "constant":
            basis.append(BasisSpec.constant())
        elif kind == "linear":
            basis.append(BasisSpec.linear(where))
        else:
            basis.append(BasisSpec.radial(where, radius, kind, metric=weights))
    return basis


def _values_from_scratch(columns: list[tuple], X: np.ndarray) -> np.ndarray:
    """The design matrix by the formula ``φ(Σ_f a_f (x_f − c_f)²/r²)``, ``a`` the drawn
    weights over their mean, from what the columns were built with."""
    values = []
    for kind, where, radius, weights in columns:
        if kind == "constant":
            values.append(np.ones(len(X)))
        elif kind == "linear":
            values.append(X[:, where])
        else:
            a = weights / weights.mean()
            values.append(_PROFILES[kind](((X - where) ** 2 * a).sum(axis=1) / radius ** 2))
    return np.column_stack(values)


def _spec_values(basis: Basis, X: np.ndarray) -> np.ndarray:
    """:func:`_values_from_scratch` of the columns a basis describes (its specs, which the
    test below checks against what the columns were built with)."""
    columns = []
    for i in range(len(basis)):
        spec = basis.spec(i)
        where = spec.feature if spec.kind == "linear" else np.asarray(spec.centre)
        weights = np.asarray(spec.metric or (1.0,) * X.shape[1])
        columns.append((spec.kind, where, spec.radius, weights))
    return _values_from_scratch(columns, X)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 6), spread=st.sampled_from([0.0, 1.0, 3.0]))
def test_a_metric_column_is_its_formula_and_survives_its_spec(seed, d, spread):
    """Evaluation with a diagonal metric (weights up to six decades apart) is the formula
    of the weights and radius the column was built with; its spec gives them back (the
    weights averaging 1), and a basis rebuilt from the specs evaluates the same."""
    rng = np.random.default_rng(seed)
    columns = _random_columns(rng, d, spread)
    basis = _basis(columns, d)
    X = rng.normal(size=(7, d))
    np.testing.assert_allclose(basis.evaluate_many(X), _values_from_scratch(columns, X),
                               rtol=1e-12, atol=1e-300)
    rebuilt = Basis(d)
    for i, (_, _, radius, weights) in enumerate(columns):
        spec = basis.spec(i)
        if weights is not None:
            assert spec.radius == pytest.approx(radius, rel=1e-12)
            a = spec.metric or (1.0,) * d
            np.testing.assert_allclose(a, weights / weights.mean(), rtol=1e-12)
        rebuilt.append(spec)
    np.testing.assert_allclose(rebuilt.evaluate_many(X), basis.evaluate_many(X), rtol=1e-12)
    np.testing.assert_allclose(basis.metrics.mean(axis=1), 1.0, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(1, 6), spread=st.sampled_from([0.0, 1.0, 2.0]))
def test_the_model_gradient_is_the_derivative_of_its_prediction(seed, d, spread):
    """model_gradient against central differences of h(x)ᵀw, every kind of column."""
    rng = np.random.default_rng(seed)
    basis = _basis(_random_columns(rng, d, spread), d)
    weights = rng.normal(size=len(basis))
    x = rng.normal(size=d)
    gradient = np.empty(d)
    core.model_gradient(*basis.arrays(), weights.reshape(-1, 1), 0, x, basis.evaluate(x),
                        gradient)
    step = 1e-6
    numeric = [(basis.evaluate(x + step * e) @ weights - basis.evaluate(x - step * e) @ weights)
               / (2 * step) for e in np.eye(d)]
    scale = np.abs(weights).sum() * 10.0 ** spread
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-7 * scale)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 8))
def test_window_statistics_of_metric_columns_are_those_of_their_rows(seed, d):
    """A window's Gram matrix and cross products over columns with diagonal metrics
    (added, replaced, swapped) equal HᵀH and Hᵀy of the rows computed from scratch."""
    rng = np.random.default_rng(seed)
    window = WindowStatistics(n_features=d, memory="window", size=100)
    window.add_column(BasisSpec.constant())
    for _ in range(40):
        window.push(rng.normal(size=d), float(rng.normal()))
    for kind in KERNELS:
        window.add_radial(rng.normal(size=d), 1.5, kind)
        window.add_radial(rng.normal(size=d), 1.5, kind,
                          (m := rng.uniform(0.1, 3.0, d)) / m.mean())
    window.replace_radial(window.n_columns - 1, rng.normal(size=d), 0.7, "gaussian",
                          np.r_[d - 0.1 * (d - 1), np.full(d - 1, 0.1)])
    window.swap_columns(1, window.n_columns - 1)
    for _ in range(12):
        window.push(rng.normal(size=d), float(rng.normal()))
    X, y = window.stored_inputs(), window.stored_targets()
    H = _spec_values(window.basis, X)
    np.testing.assert_allclose(window.gram, H.T @ H, rtol=1e-10, atol=1e-10)
    cross = np.r_[window.cross_y_model, window.cross_y_candidates]
    np.testing.assert_allclose(cross, H.T @ y, rtol=1e-10, atol=1e-10)


def test_the_input_metric_floors_and_averages_one():
    """Weights ∝ RMS slope, floored at METRIC_FLOOR of their mean, averaging 1; nothing
    to go by (no slopes, non-finite) leaves the isotropic metric."""
    out = np.empty(4)
    none = np.empty(0)  # (no errors' structure: the slopes alone)
    assert core.input_metric(np.array([4.0, 1.0, 0.0, 0.0]), none, out)
    raw = np.array([2.0, 1.0, 0.0, 0.0])
    floored = np.maximum(raw, core.METRIC_FLOOR * raw.mean())
    np.testing.assert_allclose(out, floored / floored.mean(), rtol=1e-12)
    assert out.mean() == pytest.approx(1.0)
    assert not core.input_metric(np.zeros(4), none, out)
    assert not core.input_metric(np.array([np.inf, 1.0, 0.0, 0.0]), none, out)
    # With the errors' structure: RMS of slope² + RESIDUAL_WEIGHT·structure.
    structure = np.array([0.0, 0.0, 0.9, -1.0])  # (a negative entry counts as 0)
    assert core.input_metric(np.array([4.0, 1.0, 0.0, 0.0]), structure, out)
    raw = np.sqrt(np.array([4.0, 1.0, core.RESIDUAL_WEIGHT * 0.9, 0.0]))
    floored = np.maximum(raw, core.METRIC_FLOOR * raw.mean())
    np.testing.assert_allclose(out, floored / floored.mean(), rtol=1e-12)


def test_a_slope_that_is_not_finite_leaves_the_relevance_as_it_was():
    relevance = np.array([1.0, 2.0])
    core.track_relevance(relevance, np.array([3.0, 1e200]), 10.0)
    core.track_relevance(relevance, np.array([np.nan, 0.0]), 10.0)
    np.testing.assert_array_equal(relevance, [1.0, 2.0])
    core.track_relevance(relevance, np.array([3.0, 0.0]), 10.0)
    np.testing.assert_allclose(relevance, [1.0 + (9.0 - 1.0) / 10, 2.0 - 2.0 / 10])


def test_a_metric_must_be_positive_and_of_the_inputs_length():
    with pytest.raises(ValueError, match="positive finite"):
        BasisSpec.radial([0.0, 0.0], 1.0, metric=[1.0, 0.0])
    with pytest.raises(ValueError, match="2 positive finite"):
        BasisSpec.radial([0.0, 0.0], 1.0, metric=[1.0, 1.0, 1.0])
    assert BasisSpec.radial([0.0, 0.0], 1.0, metric=[3.0, 3.0]).metric == ()


def _friedman(n: int, seed: int):
    """Friedman #1 on ten standardised-scale inputs, five of which it ignores."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        u = rng.uniform(size=10)
        y = (10 * np.sin(np.pi * u[0] * u[1]) + 20 * (u[2] - 0.5) ** 2 + 10 * u[3]
             + 5 * u[4] + rng.normal())
        yield {f"x{i}": float(3.46 * (v - 0.5)) for i, v in enumerate(u)}, float(y)


def test_irrelevant_inputs_lose_weight_and_the_metric_pays():
    """On Friedman #1 the five ignored inputs end with the smallest relevance, kernels
    proposed late carry a metric that weighs them least, and the prequential RMSE over
    the second half is at least 10 % below the isotropic model's on the same stream."""
    gradient, isotropic = SparseRBFRegressor(), SparseRBFRegressor(metric="isotropic")
    errors = prequential_errors(gradient, _friedman(3000, 1))
    baseline = prequential_errors(isotropic, _friedman(3000, 1))
    relevance = gradient._inputs.relevance
    assert relevance[5:].max() < relevance[:5].min()
    metric = gradient._proposal_metric()
    assert metric[5:].max() < metric[:5].min()
    assert metric.mean() == pytest.approx(1.0)
    ours, theirs = (float(np.sqrt(np.mean(e[1500:] ** 2))) for e in (errors, baseline))
    assert ours < 0.9 * theirs, (ours, theirs)
    assert isotropic._proposal_metric() is None



def test_holding_the_noise_estimate_waits_for_a_window_in_control():
    """The noise estimate is held while a change statistic builds, but not in a young
    window: there the model is still learning and its errors are biased, and holding its
    first estimates made a false alarm at sample 56 of a stationary stream (river's
    Friedman #1, seed 42, behind a scaler). No cut in its first 500 samples."""
    from river import datasets, preprocessing

    scaler, model = preprocessing.StandardScaler(), SparseRBFRegressor()
    for x, y in datasets.synth.Friedman(seed=42).take(500):
        scaler.learn_one(x)
        model.learn_one(scaler.transform_one(x), y)
    assert model.n_memory_cuts == 0


def test_a_stream_without_inputs_is_learned_without_a_metric():
    """No features at all (every input dropped, a target alone): kernels have no inputs to
    weigh, every centre is at distance 0 in its metric, and the model predicts about the
    target's mean (the novelty test once divided by the metric's mean, 0 here)."""
    model = SparseRBFRegressor()
    # (in no order: the last target says nothing of the next)
    targets = [float(v) for v in np.random.default_rng(7).integers(0, 7, 300)]
    for y in targets:
        model.learn_one({}, y)
    assert model.predict_one({}) == pytest.approx(np.mean(targets), abs=0.1)
    assert all(f["metric"] == () for f in model.basis_functions())
