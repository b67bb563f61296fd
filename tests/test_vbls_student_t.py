"""The Student-t factorisation of Ting et al. section 4.3 (vbls/student_t.py): the sweep on the
statistics against the equations written out over the patterns, the centring, the t-test
relevance and the Student-t predictive."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from onlinesparse.vbls import VBLSRegressor, engine, student_t


def _explicit_sweep(state, F, y, prior):
    """Eq. 4.11 (ARD) / 4.10 (shared) and the M-steps, computed pattern by pattern: the E-step
    of 3.1 with branch noise ψ_zm/⟨α_m⟩ and b → μ, then the sums over i."""
    n, m = F.shape
    alpha = state.precisions
    psi = state.branch_noise
    psi_eff = psi / alpha
    psi_y = state.output_noise
    s = psi_y + psi_eff.sum()
    z_mean = np.empty((n, m))
    z_var = psi_eff - psi_eff**2 / s  # diagonal of Cov(z_i), the same for every i
    for i in range(n):
        r = y[i] - F[i] @ state.weights
        z_mean[i] = state.weights * F[i] + psi_eff / s * r
    zf = np.einsum("im,im->m", z_mean, F)
    zz = np.sum(z_mean**2, axis=0) + n * z_var
    g = np.einsum("im,im->m", F, F)
    mu = zf / (g + psi)
    spread = (zz - zf**2 / (g + psi)) / (2 * psi)
    if prior == "ard":
        shape = np.full(m, engine.PRIOR_SHAPE + n / 2)
        rate = engine.PRIOR_RATE + spread
    else:
        shape = np.full(m, engine.PRIOR_SHAPE + n * m / 2)
        rate = np.full(m, engine.PRIOR_RATE + spread.sum())
    new_alpha = shape / rate
    # ψ_zm: ⟨α⟩Σ_i⟨(z_im − μ_m f_im)²⟩/N + ψ_zm G_mm/(N(G_mm + ψ_zm))
    branch = np.sum((z_mean - mu * F) ** 2, axis=0) + n * z_var
    psi_new = new_alpha * branch / n + psi * g / (n * (g + psi))
    # ψ_y: Σ_i⟨(y_i − 1ᵀz_i)²⟩/N
    out = y - z_mean.sum(axis=1)
    psi_y_new = np.mean(out**2) + (psi_eff.sum() - psi_eff.sum() ** 2 / s)
    sigma2 = rate * psi / shape / (g + psi)
    return mu, shape, rate, psi_new, psi_y_new, sigma2


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 8), st.integers(2, 60),
       st.sampled_from(["ard", "shared"]), st.integers(0, 5))
def test_sweep_on_statistics_equals_the_explicit_equations(seed, m, n, prior, warm):
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, m))
    y = F @ rng.normal(size=m) + rng.normal(size=n)
    gram, cross, yy = F.T @ F, F.T @ y, float(y @ y)
    state = student_t.initial_state(m, yy / n, prior)
    for _ in range(warm):  # from a state the sweeps reached, not only the start
        student_t.sweep(state, gram, cross, yy, float(n), prior)
    expected = _explicit_sweep(state, F, y, prior)
    student_t.sweep(state, gram, cross, yy, float(n), prior)
    floor = engine._NOISE_FLOOR * state.scale
    got = (state.weights, state.precision_shape, state.precision_rate, state.branch_noise,
           state.output_noise, state.weight_variances)
    want = (*expected[:3], np.maximum(expected[3], floor), max(expected[4], floor),
            expected[5])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(1, 40))
def test_centre_equals_centring_the_data(seed, d, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(3.0, 2.0, size=(n, d))
    y = rng.normal(5.0, 1.0, size=n)
    H = np.hstack([np.ones((n, 1)), X])
    g, c, yy, sums, total = student_t.centre(H.T @ H, H.T @ y, float(y @ y))
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    np.testing.assert_allclose(g, Xc.T @ Xc, rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(c, Xc.T @ yc, rtol=1e-9, atol=1e-8)
    assert yy == pytest.approx(float(yc @ yc), rel=1e-9, abs=1e-8)
    np.testing.assert_allclose(sums, X.sum(axis=0))
    assert total == pytest.approx(y.sum())


def _linear(seed, n, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = 2.0 * X[:, 0] - 1.5 * X[:, 1] + 0.8 * X[:, 2] + 4.0 + noise * rng.normal(size=n)
    return pd.DataFrame(X, columns=list("abcdef")), y


def test_student_t_regressor_finds_the_relevant_inputs_and_is_calibrated():
    X, y = _linear(0, 1500)
    model = VBLSRegressor(factorisation="student_t", memory="unbounded")
    model.learn_many(X[:1000], pd.Series(y[:1000]))
    assert model.relevance() == {"a": True, "b": True, "c": True, "d": False, "e": False,
                                 "f": False}
    scores = model.input_relevance()
    assert {k: v > 0.95 for k, v in scores.items()} == model.relevance()
    assert model.intercept == pytest.approx(4.0, abs=0.1)
    assert model.weights["a"] == pytest.approx(2.0, abs=0.1)
    inside = []
    for row, target in zip(X[1000:].to_dict(orient="records"), y[1000:], strict=True):
        dist = model.predict_one(row, with_dist=True)
        assert isinstance(dist, student_t.StudentT)
        low, high = dist.interval(0.95)
        inside.append(low <= target <= high)
    assert 0.93 <= np.mean(inside) <= 0.97
    assert math.isnan(model.diagnostics()["lower_bound"])


def test_student_t_distribution_matches_scipy():
    dist = student_t.StudentT(1.0, 2.0, 7.0)
    assert dist.cdf(2.5) == pytest.approx(stats.t.cdf(2.5, 7.0, loc=1.0, scale=2.0))
    assert dist(0.3) == pytest.approx(stats.t.pdf(0.3, 7.0, loc=1.0, scale=2.0))
    assert dist.sigma == pytest.approx(stats.t.std(7.0, loc=1.0, scale=2.0))
    low, high = dist.interval(0.9)
    assert (low, high) == pytest.approx(stats.t.interval(0.9, 7.0, loc=1.0, scale=2.0))


def test_student_t_online_learns_and_pickles():
    X, y = _linear(1, 400)
    model = VBLSRegressor(factorisation="student_t")
    for row, target in zip(X.to_dict(orient="records"), y, strict=True):
        model.learn_one(row, float(target))
    clone = pickle.loads(pickle.dumps(model))
    row = X.iloc[0].to_dict()
    assert clone.predict_one(row) == model.predict_one(row)
    assert abs(model.predict_one(row) - (2.0 * row["a"] - 1.5 * row["b"] + 0.8 * row["c"]
                                         + 4.0)) < 1.0


@pytest.mark.parametrize("kwargs", [dict(factorisation="t"),
                                    dict(factorisation="student_t", prior="none")])
def test_bad_factorisation_is_rejected(kwargs):
    with pytest.raises(ValueError, match="factorisation"):
        VBLSRegressor(**kwargs)
