"""VBLSKernelRegressor: river conformance, sinc (online and batch), sparsity, budget, pickling,
atomic rejection of bad input, the VBLS fixed point and the centred parametrisation."""

from __future__ import annotations

import doctest
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from river import checks, proba

from onlinesparse.kernels import radial_profile
from onlinesparse.vbls import VBLSKernelRegressor
from onlinesparse.vbls import kernel_regressor as module

# x is standardised the way a StandardScaler would: the uniform grid on [−10, 10] has std ≈ 5.8.
SCALE = 20.0 / math.sqrt(12.0)


def _sinc_stream(n: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.uniform(-10.0, 10.0)
        yield {"x": x / SCALE}, math.sin(x) / x + rng.uniform(-0.2, 0.2)


def _sinc_grid(seed: int, n: int = 100):
    """Tipping's sinc data: n uniformly spaced inputs on [−10, 10], uniform noise ±0.2."""
    rng = np.random.default_rng(seed)
    x = np.linspace(-10.0, 10.0, n)
    y = np.sinc(x / np.pi) + rng.uniform(-0.2, 0.2, n)
    return pd.DataFrame({"x": x / SCALE}), pd.Series(y)


def _sinc_nmse(model: VBLSKernelRegressor) -> float:
    x = np.linspace(-10.0, 10.0, 400)
    truth = np.sinc(x / np.pi)
    pred = np.array([model.predict_one({"x": v / SCALE}) for v in x])
    return float(np.mean((pred - truth) ** 2) / np.var(truth))


def test_check_estimator():
    checks.check_estimator(VBLSKernelRegressor())


def test_docstring_example():
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_predicts_zero_before_any_data():
    model = VBLSKernelRegressor()
    assert model.predict_one({"x": 1.0}) == 0.0
    dist = model.predict_one({"x": 1.0}, with_dist=True)
    assert isinstance(dist, proba.Gaussian) and dist.mu == 0.0 and dist.sigma == 1.0
    assert model.diagnostics()["n_basis"] == 0.0 and model.basis_functions() == []


@pytest.mark.parametrize("bad", [{"max_basis": 0}, {"window_size": 1}, {"kernel": "box"},
                                 {"radii": (1.0, -1.0)}, {"radii": ()},
                                 {"precision_cap": 0.0}, {"admit_threshold": -1.0},
                                 {"sweeps_per_sample": 1.5}])
def test_invalid_parameters_are_rejected(bad):
    with pytest.raises(ValueError):
        VBLSKernelRegressor(**bad)


def test_learns_sinc_online_with_calibrated_uncertainty():
    model = VBLSKernelRegressor()
    for x, y in _sinc_stream(1500, seed=0):
        model.learn_one(x, y)
    assert _sinc_nmse(model) < 0.03
    z = [(y - d.mu) / d.sigma for x, y in _sinc_stream(500, seed=1)
         for d in [model.predict_one(x, with_dist=True)]]
    assert 0.8 < float(np.std(z)) < 1.25  # noise std 0.4/√12 ≈ 0.115
    diag = model.diagnostics()
    assert abs(diag["noise_std"] - 0.4 / math.sqrt(12.0)) < 0.02
    assert diag["n_pruned"] > 0  # kernels were admitted and pruned back out
    assert 3 <= diag["n_relevance_vectors"] <= 15


def test_prunes_sinc_to_few_relevance_vectors():
    """Ting et al. figure 9 / table 3: a handful of relevance vectors fit Tipping's sinc."""
    counts, errors = [], []
    for seed in range(3):
        X, y = _sinc_grid(seed)
        model = VBLSKernelRegressor()
        model.learn_many(X, y)
        counts.append(model.diagnostics()["n_relevance_vectors"])
        errors.append(_sinc_nmse(model))
        kernels = [b for b in model.basis_functions() if b["kind"] == "gaussian"]
        assert len(kernels) == counts[-1]
        assert all(b["ratio"] < model.precision_cap for b in kernels)
    assert all(2 <= c <= 8 for c in counts)
    assert np.mean(errors) < 0.03


def test_batch_fit_is_the_vbls_fixed_point():
    """After learn_many the weights solve (G' + s·diag⟨α⟩)⟨b⟩ = c' (engine module) on the
    centred statistics of the window."""
    X, y = _sinc_grid(5)
    model = VBLSKernelRegressor(tol=1e-12, max_sweeps=200_000)
    model.learn_many(X, y)
    state = model._state
    gram, cross = model._statistics()
    fixed = np.linalg.solve(gram + state.total_noise * np.diag(state.precisions), cross)
    np.testing.assert_allclose(state.weights, fixed, rtol=1e-5,
                               atol=1e-6 * np.abs(fixed).max())


def test_admission_score_is_tipping_faul_q2_over_s():
    """The pool's score is Q²/S of Tipping and Faul with the model projected out:
    S = φᵀC⁻¹φ, Q = φᵀC⁻¹y, C = sI + HA⁻¹Hᵀ (the bias with a flat prior), computed here from
    the explicit design matrix of the window."""
    X, y = _sinc_grid(3)
    model = VBLSKernelRegressor(max_sweeps=300)
    model.learn_many(X, y)
    model._propose_from_window()
    stats, state = model._stats, model._state
    assert stats.n_candidates > 0 and stats.n_model > 2
    t2, _, _ = model._score_pool()
    rows = stats.stored_rows(model_only=False)
    H, Phi = rows[:, : stats.n_model], rows[:, stats.n_model:]
    targets = stats.stored_targets()
    s = state.total_noise
    # C⁻¹ by Woodbury, C⁻¹ = (I − H(HᵀH + sA)⁻¹Hᵀ)/s, on the raw (uncentred) design, the
    # bias with a flat prior (A₀₀ = 0).
    alpha = state.precisions.copy()
    alpha[0] = 0.0
    inner = np.linalg.inv(H.T @ H + s * np.diag(alpha))

    def c_inv(v):
        return (v - H @ (inner @ (H.T @ v))) / s

    S = np.einsum("ij,ij->j", Phi, c_inv(Phi))
    Q = Phi.T @ c_inv(targets)
    np.testing.assert_allclose(t2, Q * Q / S, rtol=1e-5)


def test_prediction_is_the_raw_kernel_expansion():
    """The centred parametrisation is internal: the prediction is b₀ + Σ b_m k(x, c_m) with
    the weights basis_functions() reports, and re-centring never moves it."""
    model = VBLSKernelRegressor(window_size=150)
    data = list(_sinc_stream(430, seed=2))
    for x, y in data[:400]:
        model.learn_one(x, y)
    model.sweeps_per_sample = 0  # the window moves on, the state keeps its old centring
    for x, y in data[400:]:
        model.learn_one(x, y)
    old_means = model._means.copy()
    basis = model.basis_functions()
    for v in np.linspace(-2.0, 2.0, 7):
        expected = basis[0]["weight"] + sum(
            b["weight"] * float(radial_profile(2, np.array((v - b["centre"]["x"]) ** 2
                                                        / b["radius"] ** 2)))
            for b in basis[1:])
        before = model.predict_one({"x": v})
        model._centred()
        assert before == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert model.predict_one({"x": v}) == pytest.approx(before, rel=1e-12, abs=1e-14)
    assert not np.allclose(model._means, old_means)  # the re-centring did move the means


def test_budget_is_respected():
    model = VBLSKernelRegressor(max_basis=4, n_candidates=6)
    for x, y in _sinc_stream(600, seed=3):
        model.learn_one(x, y)
        assert model.n_basis <= 4
        assert model._stats.n_candidates <= 6
    assert model.n_basis == 4
    X, y = _sinc_grid(4)
    batch = VBLSKernelRegressor(max_basis=3)
    batch.learn_many(X, y)
    assert batch.diagnostics()["n_basis"] <= 3


def test_kernels_without_data_are_pruned_when_the_window_moves_on():
    """A narrow kernel whose data have left the window has no data precision (G_mm → 0):
    its precision ratio is infinite and it is pruned."""
    model = VBLSKernelRegressor(window_size=200, radii=(0.3,))
    rng = np.random.default_rng(6)
    for _ in range(400):
        x = rng.uniform(-2.0, -1.0)
        model.learn_one({"x": x}, math.sin(3 * x) + 0.05 * rng.normal())
    for _ in range(800):
        x = rng.uniform(1.0, 2.0)
        model.learn_one({"x": x}, math.cos(3 * x) + 0.05 * rng.normal())
    centres = [b["centre"]["x"] for b in model.basis_functions()[1:]]
    assert centres and all(c > -0.5 for c in centres)
    assert abs(model.predict_one({"x": 1.5}) - math.cos(4.5)) < 0.1


def test_pickled_mid_stream_continues_identically():
    model = VBLSKernelRegressor(window_size=120)
    data = list(_sinc_stream(400, seed=7))
    for x, y in data[:200]:
        model.learn_one(x, y)
    clone = pickle.loads(pickle.dumps(model))
    for x, y in data[200:]:
        model.learn_one(x, y)
        clone.learn_one(x, y)
    for x, _ in data[:20]:
        assert model.predict_one(x) == clone.predict_one(x)
    assert model.diagnostics() == clone.diagnostics()
    model.refine(500)
    clone.refine(500)
    assert model.predict_one(data[0][0]) == clone.predict_one(data[0][0])


NAMES = ["a", "b", "c"]
BAD_VALUES = [float("nan"), float("inf"), "oops", None]


@settings(max_examples=20)
@given(bad=st.sampled_from(BAD_VALUES), n_before=st.integers(0, 12),
       feature=st.sampled_from(NAMES))
def test_rejected_input_leaves_the_model_unchanged(bad, n_before, feature):
    rng = np.random.default_rng(8)
    rows = [dict(zip(NAMES, rng.normal(size=3).tolist(), strict=True)) for _ in range(13)]
    targets = [float(np.sin(r["a"]) + r["b"]) for r in rows]
    model = VBLSKernelRegressor()
    for x, y in zip(rows[:n_before], targets[:n_before], strict=True):
        model.learn_one(x, y)
    before = pickle.dumps(model)
    x = dict(rows[-1], **{feature: bad})
    with pytest.raises(ValueError, match=repr(feature)):
        model.learn_one(x, 1.0)
    with pytest.raises(ValueError, match=repr(feature)):
        model.predict_one(x)
    with pytest.raises(ValueError):
        model.learn_one(rows[-1], bad if bad is not None else float("nan"))
    with pytest.raises(ValueError, match=repr(feature)):
        model.learn_many(pd.DataFrame([rows[0], x]), pd.Series([1.0, 2.0]))
    assert pickle.dumps(model) == before


def test_input_relevance_finds_the_used_input():
    rng = np.random.default_rng(9)
    model = VBLSKernelRegressor()
    for _ in range(800):
        a, b = rng.normal(size=2)
        model.learn_one({"a": a, "b": b}, math.sin(2 * a) + 0.05 * rng.normal())
    relevance = model.input_relevance()
    assert set(relevance) == {"a", "b"}
    assert relevance["b"] < 0.2 * relevance["a"]
