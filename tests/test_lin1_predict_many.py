"""``predict_many`` of the lin-1 regressors: the rows' ``predict_one``, in one product."""

import numpy as np
import pandas as pd
import pytest

from onlinesparse.lin1 import Lin1MultiTargetRegressor, Lin1Regressor


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"],
                     index=[f"r{i}" for i in range(n)])
    y = 1.0 + X["a"] * 2.0 - X["c"] + 0.1 * rng.normal(size=n)
    return X, y


def test_predict_many_equals_predict_one_row_by_row_and_keeps_the_index():
    X, y = _data()
    model = Lin1Regressor()
    for x, target in zip(X.iloc[:40].to_dict(orient="records"), y.iloc[:40], strict=True):
        model.learn_one(x, target)
    test = X.iloc[40:]
    many = model.predict_many(test)
    assert list(many.index) == list(test.index)
    one = [model.predict_one(x) for x in test.to_dict(orient="records")]
    np.testing.assert_array_equal(many.to_numpy(), one)  # the same path, the same floats
    assert np.abs(many - y.iloc[40:]).max() < 0.5


def test_before_learning_it_predicts_zero_like_predict_one():
    X, _ = _data(5)
    many = Lin1Regressor().predict_many(X)
    assert many.tolist() == [0.0] * 5


def test_a_bad_value_names_the_row_and_feature_and_changes_nothing():
    X, y = _data()
    model = Lin1Regressor()
    for x, target in zip(X.to_dict(orient="records"), y, strict=True):
        model.learn_one(x, target)
    before = model.predict_many(X)
    bad = X.copy()
    bad.loc["r3", "b"] = np.nan
    with pytest.raises(ValueError, match=r"row 'r3'.*'b'"):
        model.predict_many(bad)
    pd.testing.assert_series_equal(model.predict_many(X), before)
    with pytest.raises(ValueError, match="DataFrame"):
        model.predict_many(X.to_numpy())


def test_multi_target_predict_many_has_one_column_per_target():
    X, y = _data()
    model = Lin1MultiTargetRegressor()
    assert model.predict_many(X).shape == (len(X), 0)
    for x, target in zip(X.to_dict(orient="records"), y, strict=True):
        model.learn_one(x, {"y": target, "twice": 2 * target})
    many = model.predict_many(X.iloc[:7])
    assert sorted(many.columns) == ["twice", "y"]
    for label, x in zip(many.index, X.iloc[:7].to_dict(orient="records"), strict=True):
        one = model.predict_one(x)
        assert many.loc[label, "y"] == pytest.approx(one["y"], abs=1e-12)
        assert many.loc[label, "twice"] == pytest.approx(one["twice"], abs=1e-12)
