"""VBLSClassifier: river conformance, labels, atomic rejection, kernel basis."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from river import checks

from onlinesparse.vbls import VBLSClassifier


def _data(seed: int, n: int = 200):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    logit = 3.0 * X[:, 0] - 2.0 * X[:, 1]
    labels = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    rows = [dict(zip("uvw", row.tolist(), strict=True)) for row in X]
    return rows, labels.tolist()


def test_check_estimator():
    checks.check_estimator(VBLSClassifier())


def test_uniform_before_any_data():
    assert VBLSClassifier().predict_proba_one({"u": 1.0}) == {False: 0.5, True: 0.5}


def test_learns_a_linear_boundary_and_flags_the_irrelevant_input():
    rows, labels = _data(0, n=400)
    model = VBLSClassifier()
    for x, label in zip(rows, labels, strict=True):
        model.learn_one(x, label)
    model.refine()
    test_rows, test_labels = _data(1, n=400)
    accuracy = np.mean([model.predict_one(x) == y for x, y in
                        zip(test_rows, test_labels, strict=True)])
    assert accuracy > 0.8
    assert model.relevance() == {"u": True, "v": True, "w": False}
    probs = model.predict_proba_one(test_rows[0])
    assert set(probs) == {0, 1} and math.isclose(sum(probs.values()), 1.0)


@pytest.mark.parametrize("encode", [str, lambda v: bool(v), lambda v: v + 10])
def test_label_types_give_the_same_model(encode):
    rows, labels = _data(2, n=80)
    reference, other = VBLSClassifier(), VBLSClassifier()
    for x, label in zip(rows, labels, strict=True):
        reference.learn_one(x, label)
        other.learn_one(x, encode(label))
    p_ref = reference.predict_proba_one(rows[0])[1]
    p_other = other.predict_proba_one(rows[0])[encode(1)]
    assert math.isclose(p_ref, p_other, rel_tol=1e-12)


def test_negative_class_is_the_smaller_label_whatever_comes_first():
    rows, labels = _data(3, n=80)
    first = labels[0]
    # Relabel so that the first label seen sorts last: the encoding flips at the second.
    relabel = {first: "z", 1 - first: "a"}
    model, reference = VBLSClassifier(), VBLSClassifier()
    for x, label in zip(rows, labels, strict=True):
        model.learn_one(x, relabel[label])
        reference.learn_one(x, label)
    assert model._classes[0] == "a"
    assert math.isclose(model.predict_proba_one(rows[5])[relabel[1]],
                        reference.predict_proba_one(rows[5])[1], rel_tol=1e-9)


def test_third_label_and_bad_input_leave_the_model_unchanged():
    rows, labels = _data(4, n=20)
    model = VBLSClassifier()
    for x, label in zip(rows, labels, strict=True):
        model.learn_one(x, label)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="third"):
        model.learn_one(rows[0], 7)
    with pytest.raises(ValueError, match="'v'"):
        model.learn_one(dict(rows[0], v=float("nan")), 1)
    with pytest.raises(ValueError, match="'v'"):
        model.predict_proba_one(dict(rows[0], v="x"))
    with pytest.raises(ValueError, match="'v'"):
        model.learn_many([rows[1], dict(rows[0], v=None)], [0, 1])
    assert pickle.dumps(model) == before


def test_bad_centre_is_rejected_before_anything_changes():
    model = VBLSClassifier(centres=[{"u": 0.0}])
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="'v'"):
        model.learn_one({"u": 1.0, "v": 2.0}, True)
    assert pickle.dumps(model) == before


def test_kernel_basis_learns_a_circle():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(300, 2))
    labels = (np.sum(X ** 2, axis=1) < 0.5).tolist()
    rows = [{"p": float(a), "q": float(b)} for a, b in X]
    centres = rows[:60]
    model = VBLSClassifier(centres=centres, radius=0.5, window_size=200)
    model.learn_many(pd.DataFrame(rows[:200]), pd.Series(labels[:200]))
    accuracy = np.mean([model.predict_one(x) == y for x, y in
                        zip(rows[200:], labels[200:], strict=True)])
    assert accuracy > 0.85
    assert 1.0 <= model.diagnostics()["n_basis"] < 61
    assert len(model.basis_relevance()) == 61


def test_pickled_mid_stream_continues_identically():
    rows, labels = _data(6, n=60)
    model = VBLSClassifier(window_size=25)
    for x, label in zip(rows[:30], labels[:30], strict=True):
        model.learn_one(x, label)
    copy = pickle.loads(pickle.dumps(model))
    for x, label in zip(rows[30:], labels[30:], strict=True):
        model.learn_one(x, label)
        copy.learn_one(x, label)
    assert model.predict_proba_one(rows[0]) == copy.predict_proba_one(rows[0])
