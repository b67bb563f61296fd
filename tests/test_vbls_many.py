"""predict_many / predict_proba_many of the VBLS family: river's meaning (a Series or a
DataFrame on the frame's index), equal to the one-at-a-time predictions, nothing learned."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from onlinesparse.vbls import VBLSClassifier, VBLSKernelRegressor, VBLSRegressor


def _frame(seed: int, n: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"],
                     index=pd.Index(rng.permutation(1000)[:n] + 7, name="id"))
    y = np.sin(X["a"].to_numpy()) + 0.5 * X["b"].to_numpy() + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("make", [VBLSRegressor, lambda: VBLSKernelRegressor(max_basis=10)])
def test_predict_many_is_predict_one_on_every_row(make):
    X, y = _frame(0, 150)
    model = make()
    for row, target in zip(X.to_dict(orient="records"), y, strict=True):
        model.learn_one(row, float(target))
    before = pickle.dumps(model)
    out = model.predict_many(X)
    assert isinstance(out, pd.Series)
    assert out.index.equals(X.index)
    expected = [model.predict_one(row) for row in X.to_dict(orient="records")]
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=0, atol=0)
    assert pickle.dumps(model) == before  # nothing learned


def test_predict_many_before_any_data_is_zero():
    X, _ = _frame(1, 5)
    assert VBLSRegressor().predict_many(X).tolist() == [0.0] * 5


def test_predict_proba_many_is_predict_proba_one_on_every_row():
    X, y = _frame(2, 200)
    labels = np.where(y > 0, "up", "down")
    model = VBLSClassifier()
    for row, label in zip(X.to_dict(orient="records"), labels, strict=True):
        model.learn_one(row, label)
    before = pickle.dumps(model)
    proba = model.predict_proba_many(X)
    assert isinstance(proba, pd.DataFrame)
    assert proba.index.equals(X.index)
    assert set(proba.columns) == {"up", "down"}
    for (_, got), row in zip(proba.iterrows(), X.to_dict(orient="records"), strict=True):
        want = model.predict_proba_one(row)
        assert {k: got[k] for k in want} == want
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    classes = model.predict_many(X)
    assert classes.index.equals(X.index)
    assert classes.tolist() == [model.predict_one(r) for r in X.to_dict(orient="records")]
    assert (classes == proba.idxmax(axis=1)).all()
    assert pickle.dumps(model) == before


def test_predict_many_rejects_bad_rows_naming_the_feature():
    X, y = _frame(3, 30)
    model = VBLSRegressor(strict=True)
    model.learn_many(X, pd.Series(y, index=X.index))
    bad = X.copy()
    bad["zzz"] = 1.0
    with pytest.raises(ValueError, match="zzz"):
        model.predict_many(bad)
