"""lin-1 (seed 004, DESIGN.md §5) as river estimators."""

from __future__ import annotations

import copy
import doctest
import importlib
import math
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from river import checks, proba

from onlinesparse.lin1 import Lin1MultiTargetRegressor, Lin1Regressor

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def as_dicts(X: np.ndarray, names: list[str] | None = None) -> list[dict[str, float]]:
    names = names or [f"x{j}" for j in range(X.shape[1])]
    return [dict(zip(names, row.tolist(), strict=True)) for row in X]


def fit(model, X: np.ndarray, y: np.ndarray, names: list[str] | None = None):
    for x, target in zip(as_dicts(X, names), y, strict=True):
        model.learn_one(x, float(target))
    return model


def direct_lin1(X: np.ndarray, y: np.ndarray, rcond: float = 1e-6) -> dict[str, object]:
    """Seed 004 written out from explicit data: SVD of A = XᵀX with the truncation rule."""
    Xa = np.column_stack([np.ones(len(X)), X])
    A = Xa.T @ Xa
    u, s, vt = np.linalg.svd(A)
    keep = s >= rcond * s.max()
    A_plus = (vt[keep].T / s[keep]) @ u[:, keep].T
    w = A_plus @ Xa.T @ y
    residual = y - Xa @ w
    k = int(keep.sum())
    noise_var = residual @ residual / (len(y) - k) if len(y) > k else math.inf
    return {"w": w, "A_plus": A_plus, "k": k, "noise_var": noise_var}


datasets = st.builds(
    lambda seed, n, d: (lambda rng: (rng.standard_normal((n, d)),
                                     rng.standard_normal(n)))(np.random.default_rng(seed)),
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(8, 40),
    d=st.integers(1, 5),
)

# --------------------------------------------------------------------------------------------
# the fit
# --------------------------------------------------------------------------------------------


@given(datasets)
def test_full_rank_equals_lstsq(data):
    X, y = data
    model = fit(Lin1Regressor(), X, y)
    Xa = np.column_stack([np.ones(len(X)), X])
    expected, *_ = np.linalg.lstsq(Xa, y, rcond=None)
    assert model.intercept == pytest.approx(expected[0], rel=1e-7, abs=1e-9)
    np.testing.assert_allclose(list(model.weights.values()), expected[1:], rtol=1e-7, atol=1e-9)
    assert model.diagnostics()["n_basis"] == X.shape[1] + 1
    x_new = {f"x{j}": 0.3 * j - 0.1 for j in range(X.shape[1])}
    x_arr = np.array([1.0] + list(x_new.values()))
    assert model.predict_one(x_new) == pytest.approx(float(x_arr @ expected), rel=1e-7,
                                                     abs=1e-9)


def test_rank_deficient_duplicate_column():
    """A duplicated input: one singular value is (numerically) 0, its reciprocal is zeroed,
    k = d (not d + 1), the weights are finite and split evenly between the twins (the
    minimum-norm solution), and predictions equal least squares."""
    rng = np.random.default_rng(4)
    base = rng.standard_normal((60, 2))
    X = np.column_stack([base, base[:, 0]])  # x2 == x0
    y = 1.0 + 3.0 * base[:, 0] - base[:, 1] + 0.1 * rng.standard_normal(60)
    model = fit(Lin1Regressor(), X, y)
    weights = model.weights
    assert all(math.isfinite(w) for w in weights.values())
    assert model.diagnostics()["n_basis"] == 3.0  # k = (d + 1) − 1
    assert weights["x0"] == pytest.approx(weights["x2"], rel=1e-6)
    assert weights["x0"] + weights["x2"] == pytest.approx(3.0, abs=0.05)
    reference = direct_lin1(X, y)
    np.testing.assert_allclose([model.intercept, *weights.values()], reference["w"],
                               rtol=1e-6, atol=1e-8)
    assert model.diagnostics()["noise_std"] == pytest.approx(math.sqrt(reference["noise_var"]),
                                                             rel=1e-6)
    Xa = np.column_stack([np.ones(60), base])
    lstsq_prediction = Xa[:5] @ np.linalg.lstsq(Xa, y, rcond=None)[0]
    ours = [model.predict_one(x) for x in as_dicts(X[:5])]
    np.testing.assert_allclose(ours, lstsq_prediction, rtol=1e-6)


@given(datasets)
def test_predictive_distribution_matches_direct_formula(data):
    """Seed 004 eq. 9: Gaussian, mean wᵀx*, variance σ̂²(1 + x*ᵀA⁺x*), σ̂² = SSE/(n − k)."""
    X, y = data
    model = fit(Lin1Regressor(), X, y)
    reference = direct_lin1(X, y)
    x_new = np.linspace(-1.0, 1.0, X.shape[1])
    dist = model.predict_one(as_dicts(x_new[None, :])[0], with_dist=True)
    assert isinstance(dist, proba.Gaussian)
    xa = np.concatenate([[1.0], x_new])
    variance = reference["noise_var"] * (1.0 + xa @ reference["A_plus"] @ xa)
    assert dist.mu == pytest.approx(float(xa @ reference["w"]), rel=1e-7, abs=1e-9)
    assert dist.sigma**2 == pytest.approx(variance, rel=1e-6)


def test_noise_comes_from_statistics_even_with_a_large_target_offset():
    """SSE from XᵀX, Xᵀy, yᵀy (no stored data) stays accurate when yᵀy ≫ SSE."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((500, 3))
    y = 1e6 + X @ np.array([1.0, -2.0, 0.5]) + 0.01 * rng.standard_normal(500)
    model = fit(Lin1Regressor(), X, y)
    reference = direct_lin1(X, y)
    assert model.diagnostics()["noise_std"] == pytest.approx(math.sqrt(reference["noise_var"]),
                                                             rel=1e-6)


def test_heavy_truncation_matches_direct_formula():
    """With a large cut-off (rcond = 0.3) directions carrying real signal are zeroed; the fit
    is then not a least-squares solution and every term of SSE = yᵀy − 2wᵀXᵀy + wᵀXᵀXw counts."""
    rng = np.random.default_rng(12)
    X = np.column_stack([3.0 + rng.standard_normal(80), 0.2 * rng.standard_normal(80)])
    y = 2.0 + X @ np.array([1.0, 4.0]) + 0.1 * rng.standard_normal(80)
    model = fit(Lin1Regressor(rcond=0.3), X, y)
    reference = direct_lin1(X, y, rcond=0.3)
    assert reference["k"] < 3
    assert model.diagnostics()["n_basis"] == reference["k"]
    np.testing.assert_allclose([model.intercept, *model.weights.values()], reference["w"],
                               rtol=1e-8)
    assert model.diagnostics()["noise_std"] == pytest.approx(math.sqrt(reference["noise_var"]),
                                                             rel=1e-8)


def test_too_few_samples_give_an_infinite_predictive_spread():
    """n ≤ k: σ̂² is undefined; documented as +inf (mean still wᵀx*)."""
    model = Lin1Regressor()
    model.learn_one({"a": 1.0, "b": 2.0}, 3.0)
    model.learn_one({"a": 2.0, "b": 0.5}, 1.0)
    diagnostics = model.diagnostics()
    assert diagnostics["n_basis"] == 2.0 and diagnostics["n_samples"] == 2.0
    assert diagnostics["noise_std"] == math.inf
    dist = model.predict_one({"a": 1.0, "b": 2.0}, with_dist=True)
    assert dist.sigma == math.inf
    assert dist.mu == pytest.approx(3.0)  # interpolates the data it has
    model.learn_one({"a": 0.0, "b": 1.0}, 0.0)
    model.learn_one({"a": 1.0, "b": 1.0}, 2.5)  # n = 4 > k = 3
    assert math.isfinite(model.diagnostics()["noise_std"])


def test_before_any_data():
    model = Lin1Regressor()
    assert model.predict_one({"a": 1.0}) == 0.0
    assert model.predict_one({"a": 1.0}, with_dist=True).sigma == math.inf
    assert model.diagnostics() == {"n_basis": 0.0, "n_samples": 0.0, "noise_std": math.inf}
    assert model.input_relevance() == {}


def test_decomposition_is_lazy(monkeypatch):
    calls = []
    svd = np.linalg.svd

    def counting_svd(*args, **kwargs):
        calls.append(1)
        return svd(*args, **kwargs)

    monkeypatch.setattr(np.linalg, "svd", counting_svd)
    rng = np.random.default_rng(0)
    model = fit(Lin1Regressor(), rng.standard_normal((20, 2)), rng.standard_normal(20))
    assert calls == []  # learning alone never decomposes
    for _ in range(3):
        model.predict_one({"x0": 0.1, "x1": 0.2}, with_dist=True)
    model.diagnostics()
    assert len(calls) == 1  # one decomposition for every query after the same data
    model.learn_one({"x0": 0.0, "x1": 1.0}, 2.0)
    model.predict_one({"x0": 0.1, "x1": 0.2})
    assert len(calls) == 2


def test_input_relevance_is_weight_times_std():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 2)) * np.array([1.0, 10.0])
    y = 2.0 * X[:, 0] + 0.1 * X[:, 1] + 0.01 * rng.standard_normal(200)
    model = fit(Lin1Regressor(), X, y)
    relevance = model.input_relevance()
    weights = model.weights
    assert relevance["x0"] == pytest.approx(abs(weights["x0"]) * X[:, 0].std(), rel=1e-9)
    assert relevance["x1"] == pytest.approx(abs(weights["x1"]) * X[:, 1].std(), rel=1e-9)


def test_pickle_roundtrip_keeps_predictions():
    rng = np.random.default_rng(5)
    model = fit(Lin1Regressor(), rng.standard_normal((30, 3)), rng.standard_normal(30))
    clone = pickle.loads(pickle.dumps(model))
    x = {"x0": 0.5, "x1": -1.0, "x2": 2.0}
    assert clone.predict_one(x) == model.predict_one(x)
    assert clone.predict_one(x, with_dist=True).sigma == model.predict_one(x, with_dist=True).sigma


def test_missing_feature_takes_its_running_mean_and_new_features_are_ignored():
    """The library-wide input policy (FeatureMap, non-strict default): a feature missing from
    a sample is imputed with its running mean over the samples learnt before it, and a
    feature first seen after the first sample is ignored. The fit then equals least squares
    on the imputed data."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((40, 3))
    y = X @ np.array([1.0, -1.0, 2.0]) + 0.5 + 0.05 * rng.standard_normal(40)
    model = Lin1Regressor()
    imputed = X.copy()
    for i, (row, target) in enumerate(zip(X, y, strict=True)):
        x = {"x0": row[0], "x1": row[1], "x2": row[2]}
        if i % 5 == 4:
            del x["x2"]  # imputed with the mean of x2 over the samples learnt so far
            imputed[i, 2] = imputed[:i, 2].mean()
        if i % 7 == 3:
            x["late"] = 100.0 * target  # first seen after the first sample: ignored
        model.learn_one(x, target)
    assert model.features == ["x0", "x1", "x2"]
    Xa = np.column_stack([np.ones(40), imputed])
    expected = np.linalg.lstsq(Xa, y, rcond=None)[0]
    np.testing.assert_allclose([model.intercept, *(model.weights[f"x{j}"] for j in range(3))],
                               expected, rtol=1e-8)
    mean_x2 = imputed[:, 2].mean()
    assert model.predict_one({"x0": 1.0, "x1": 0.0, "zzz": 5.0}) == pytest.approx(
        expected[0] + expected[1] + expected[3] * mean_x2, rel=1e-8)


def test_strict_inputs_reject_missing_and_new_features():
    model = Lin1Regressor(strict=True)
    model.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    model.learn_one({"a": 2.0, "b": 0.0}, 3.0)
    before = pickle.dumps(model)
    for x, named in (({"a": 1.0}, "'b'"), ({"a": 1.0, "b": 2.0, "c": 3.0}, "'c'")):
        with pytest.raises(ValueError, match=named):
            model.learn_one(x, 1.0)
        assert pickle.dumps(model) == before
        with pytest.raises(ValueError, match=named):
            model.predict_one(x)
        assert pickle.dumps(model) == before


# --------------------------------------------------------------------------------------------
# bad input: ValueError naming the feature, model unchanged
# --------------------------------------------------------------------------------------------

GOOD = {"a": 1.0, "b": 2.0}


@pytest.mark.parametrize(
    ("x", "y", "named"),
    [
        ({"a": math.nan, "b": 2.0}, 1.0, "'a'"),
        ({"a": 1.0, "b": math.inf}, 1.0, "'b'"),
        ({"a": "1.0", "b": 2.0}, 1.0, "'a'"),
        ({"a": None, "b": 2.0}, 1.0, "'a'"),
        ({"a": 1.0, "b": 2.0, "c": math.nan}, 1.0, "'c'"),  # checked even if it would be ignored
        ({"a": 1.0, "b": True, "c": [1]}, 1.0, "'c'"),
        (GOOD, math.nan, "target"),
        (GOOD, "3", "target"),
        ([1.0, 2.0], 1.0, "dict"),
    ],
)
def test_bad_input_raises_and_leaves_the_model_unchanged(x, y, named):
    model = Lin1Regressor()
    for t in range(5):
        model.learn_one({"a": float(t), "b": float(t % 2)}, float(t))
    model.predict_one(GOOD)  # so that the cached decomposition is part of the state too
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=named):
        model.learn_one(x, y)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("x", [{"a": math.nan, "b": 2.0}, {"a": "1", "b": 2.0},
                               {"a": 1.0, "c": math.inf}, [1.0, 2.0]])
def test_bad_input_at_prediction_raises(x):
    model = Lin1Regressor()
    model.learn_one(GOOD, 1.0)
    before = pickle.dumps(model)
    with pytest.raises(ValueError):
        model.predict_one(x)
    assert pickle.dumps(model) == before


def test_bad_first_sample_leaves_an_empty_model():
    model = Lin1Regressor()
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'b'"):
        model.learn_one({"a": 1.0, "b": "x"}, 1.0)
    assert pickle.dumps(model) == before
    model.learn_one({"a": 1.0}, 1.0)  # the schema was not fixed by the rejected sample
    assert model.features == ["a"]


@pytest.mark.parametrize("strict", [False, True])
def test_first_sample_without_features_fixes_an_empty_input_space(strict):
    """The first sample fixes the inputs even when it has none: the model is the constant
    ȳ, later features are new features (ignored, or rejected when strict)."""
    model = Lin1Regressor(strict=strict)
    model.learn_one({}, 1.0)
    model.learn_one({}, 3.0)
    if strict:
        before = pickle.dumps(model)
        with pytest.raises(ValueError, match="'a'"):
            model.learn_one({"a": 1.0}, 2.0)
        assert pickle.dumps(model) == before
        model.learn_one({}, 2.0)
    else:
        model.learn_one({"a": 1.0}, 2.0)
    assert model.features == []
    assert model.n_samples == 3
    dist = model.predict_one({}, with_dist=True)
    assert dist.mu == pytest.approx(2.0)
    # σ̂² = SSE/(n − k) = 2/2 and A⁺ = 1/n: variance 1·(1 + 1/3).
    assert dist.sigma ** 2 == pytest.approx(4.0 / 3.0)


# --------------------------------------------------------------------------------------------
# several outputs share one decomposition
# --------------------------------------------------------------------------------------------


def test_multi_target_equals_one_model_per_target():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((50, 3))
    Y = np.column_stack([X @ [1.0, 2.0, 0.0] + 0.1 * rng.standard_normal(50),
                         X @ [0.0, -1.0, 3.0] + 1.0 + 0.3 * rng.standard_normal(50)])
    multi = Lin1MultiTargetRegressor()
    singles = {"u": Lin1Regressor(), "v": Lin1Regressor()}
    for x, targets in zip(as_dicts(X), Y, strict=True):
        multi.learn_one(x, {"u": targets[0], "v": targets[1]})
        singles["u"].learn_one(x, targets[0])
        singles["v"].learn_one(x, targets[1])
    x_new = {"x0": 0.2, "x1": -0.4, "x2": 1.0}
    means = multi.predict_one(x_new)
    dists = multi.predict_one(x_new, with_dist=True)
    for name, single in singles.items():
        assert means[name] == pytest.approx(single.predict_one(x_new), rel=1e-10)
        assert dists[name].sigma == pytest.approx(
            single.predict_one(x_new, with_dist=True).sigma, rel=1e-10)
        assert multi.diagnostics()[f"noise_std[{name}]"] == pytest.approx(
            single.diagnostics()["noise_std"], rel=1e-10)
    assert multi.diagnostics()["n_basis"] == 4.0


def test_multi_target_rejects_target_changes():
    model = Lin1MultiTargetRegressor()
    model.learn_one({"a": 1.0}, {"u": 1.0, "v": 2.0})
    before = pickle.dumps(model)
    for bad in ({"u": 1.0}, {"u": 1.0, "v": 2.0, "w": 0.0}, {"u": 1.0, "v": math.nan}, 3.0):
        with pytest.raises(ValueError):
            model.learn_one({"a": 2.0}, bad)
        assert pickle.dumps(model) == before
    assert Lin1MultiTargetRegressor().predict_one({"a": 1.0}) == {}


# --------------------------------------------------------------------------------------------
# river conformance
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model", [Lin1Regressor(), Lin1MultiTargetRegressor()], ids=["single", "multi-target"])
def test_river_check_estimator(model):
    """River's whole conformance suite with the default parameters, nothing skipped —
    including the checks that feed a changing set of features."""
    assert model._unit_test_skips() == set()
    checks.check_estimator(copy.deepcopy(model))


def test_strict_model_passes_every_other_river_check():
    """With ``strict=True`` the model rejects a changing feature set by design; it passes every
    other check of river's suite."""
    drift = {"check_emerging_features", "check_disappearing_features",
             "check_radically_disappearing_features"}
    model = Lin1Regressor(strict=True)
    names = set()
    for check in checks.yield_checks(model):
        names.add(check.__name__)
        if check.__name__ in drift:
            with pytest.raises(ValueError):
                check(model.clone())
        else:
            check(model.clone())
    assert drift <= names


def test_docstring_examples():
    module = importlib.import_module("onlinesparse.lin1")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
