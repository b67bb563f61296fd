"""The VBLS engine against explicit per-pattern formulas of Ting et al. and against OLS."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.vbls import engine


def _problem(seed: int, n: int, m: int, noise: float = 0.3):
    rng = np.random.default_rng(seed)
    H = np.hstack([np.ones((n, 1)), rng.normal(size=(n, m - 1))])
    w = rng.normal(size=m)
    y = H @ w + noise * rng.normal(size=n)
    return H, y


def _stats(H, y):
    return H.T @ H, H.T @ y, float(y @ y), float(len(y))


def _warm_state(H, y, prior, sweeps=7):
    G, c, yy, p = _stats(H, y)
    state = engine.initial_state(H.shape[1], yy / p, prior)
    for _ in range(sweeps):
        engine.sweep_regression(state, G, c, yy, p, prior)
    return state


@settings(max_examples=30)
@given(seed=st.integers(0, 10_000), n=st.integers(30, 80), m=st.integers(1, 4))
def test_backfitting_without_prior_converges_to_ols(seed, n, m):
    """Section 3.3: the fixed point of probabilistic backfitting is least squares."""
    H, y = _problem(seed, n, m)
    G, c, yy, p = _stats(H, y)
    state = engine.initial_state(m, yy / p, "none")
    engine.fit_regression(state, G, c, yy, p, "none", tol=1e-14, max_sweeps=200_000)
    ols = np.linalg.lstsq(H, y, rcond=None)[0]
    assert np.linalg.norm(state.weights - ols) <= 1e-7 * np.linalg.norm(ols)


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), m=st.integers(1, 6),
       prior=st.sampled_from(["ard", "shared", "none"]))
def test_sweep_equals_explicit_e_and_m_steps(seed, n, m, prior):
    """One sweep from the statistics equals 3.1 / 4.7 / 4.8 written per pattern with an
    explicit ⟨Z⟩ matrix."""
    H, y = _problem(seed, n, m)
    G, c, yy, p = _stats(H, y)
    before = _warm_state(H, y, prior, sweeps=3)
    after = before.copy()
    engine.sweep_regression(after, G, c, yy, p, prior)

    psi, psi_y, mu, alpha = (before.branch_noise, before.output_noise, before.weights,
                             before.precisions)
    s = psi_y + psi.sum()
    residual = y - H @ mu
    z_mean = H * mu + np.outer(residual, psi / s)           # E-step of 3.1
    z_var = psi * (1.0 - psi / s)
    sq = np.sum(H * H, axis=0)
    if prior == "none":
        var = np.zeros(m)
        new_mu = np.sum(H * z_mean, axis=0) / sq             # M-step of 3.1
    else:
        var = 1.0 / (sq / psi + alpha)                       # eq. 4.7
        new_mu = var * np.sum(H * z_mean, axis=0) / psi
    new_psi = (np.mean((z_mean - H * new_mu) ** 2, axis=0) + z_var + var * sq / p)
    ones_cov = psi.sum() * (1.0 - psi.sum() / s)
    new_psi_y = np.mean((y - z_mean.sum(axis=1)) ** 2) + ones_cov
    np.testing.assert_allclose(after.weights, new_mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(after.weight_variances, var, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(after.branch_noise, new_psi, rtol=1e-9)
    assert math.isclose(after.output_noise, new_psi_y, rel_tol=1e-9)
    if prior == "ard":
        np.testing.assert_allclose(
            after.precisions, (1e-8 + 0.5) / (1e-8 + 0.5 * (new_mu ** 2 + var)), rtol=1e-9)
    elif prior == "shared":
        expected = (1e-8 + 0.5 * m) / (1e-8 + 0.5 * np.sum(new_mu ** 2 + var))
        np.testing.assert_allclose(after.precisions, expected, rtol=1e-9)


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), m=st.integers(1, 6))
def test_classification_sweep_equals_explicit_jaakkola_jordan_e_step(seed, n, m):
    """Section 4.6: E-step with s_i = 1 + 2φ(ξ_i)Σψ, mean update eq. 4.15, ψ and ξ."""
    rng = np.random.default_rng(seed)
    H = np.hstack([np.ones((n, 1)), rng.normal(size=(n, m - 1))])
    signs = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    state = engine.initial_state(m, 4.0, "ard", output_noise=False)
    xi = np.abs(rng.normal(size=n))
    for _ in range(3):
        _, xi = engine.sweep_classification(state, H, signs, xi)
    before = state.copy()
    _, new_xi = engine.sweep_classification(state, H, signs, xi)

    psi, mu, alpha = before.branch_noise, before.weights, before.precisions
    phi = np.tanh(xi / 2) / (4 * xi)
    s_i = 1.0 + 2.0 * phi * psi.sum()
    drive = signs / 2 - 2 * phi * (H @ mu)
    z_mean = H * mu + np.outer(drive / s_i, psi)
    z_var = psi * (1.0 - 2.0 * np.outer(phi / s_i, psi))
    sq = np.sum(H * H, axis=0)
    expected_mu = (sq * mu + psi * ((drive / s_i) @ H)) / (sq + psi * alpha)  # eq. 4.15
    var = 1.0 / (sq / psi + alpha)
    expected_psi = np.mean((z_mean - H * expected_mu) ** 2 + z_var, axis=0) + var * sq / n
    ones = z_mean.sum(axis=1)
    expected_xi = np.sqrt(ones ** 2 + psi.sum() * (1 - 2 * phi * psi.sum() / s_i))
    np.testing.assert_allclose(state.weights, expected_mu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state.branch_noise, expected_psi, rtol=1e-9)
    np.testing.assert_allclose(new_xi, expected_xi, rtol=1e-9)


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), n=st.integers(10, 60), m=st.integers(1, 6),
       prior=st.sampled_from(["ard", "shared", "none"]))
def test_lower_bound_never_decreases(seed, n, m, prior):
    """EM is coordinate ascent on F (3.9): without the precision cap F never goes down."""
    H, y = _problem(seed, n, m, noise=1.0)
    G, c, yy, p = _stats(H, y)
    state = engine.initial_state(m, yy / p, prior)
    previous = engine.lower_bound_regression(state, G, c, yy, p, prior)
    for _ in range(60):
        engine.sweep_regression(state, G, c, yy, p, prior)
        bound = engine.lower_bound_regression(state, G, c, yy, p, prior)
        assert bound >= previous - 1e-9 * abs(previous)
        previous = bound


def test_fixed_point_is_a_ridge_solution():
    """Setting ⟨b⟩ unchanged in eq. 4.8 gives (G + s·diag⟨α⟩)⟨b⟩ = c."""
    H, y = _problem(3, 200, 5)
    G, c, yy, p = _stats(H, y)
    state = engine.initial_state(5, yy / p, "ard")
    engine.fit_regression(state, G, c, yy, p, "ard", precision_cap=10.0, tol=1e-13,
                          max_sweeps=10_000)
    lhs = (G + state.total_noise * np.diag(state.precisions)) @ state.weights
    np.testing.assert_allclose(lhs, c, rtol=1e-7, atol=1e-7 * np.abs(c).max())


def test_precision_cap_bounds_the_ratio_and_prunes_irrelevant_units():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=300)
    H = np.hstack([np.ones((300, 1)), X])
    G, c, yy, p = _stats(H, y)
    state = engine.initial_state(7, yy / p, "ard")
    engine.fit_regression(state, G, c, yy, p, "ard", precision_cap=10.0, tol=1e-12)
    ratio = engine.precision_ratio(state, np.diagonal(G))
    assert np.all(ratio <= 10.0 * (1 + 1e-9))
    assert np.all(ratio[[1, 2]] < 1.0)
    assert np.all(ratio[[0, 3, 4, 5, 6]] >= 1.0)


def test_predictive_is_eq_4_12():
    H, y = _problem(1, 50, 3)
    state = _warm_state(H, y, "ard")
    h = np.array([1.0, 0.5, -2.0])
    mean, var = engine.predictive_regression(state, h)
    assert math.isclose(mean, float(h @ state.weights))
    expected = state.output_noise + state.branch_noise.sum() + np.sum(
        h * h * state.weight_variances)
    assert math.isclose(var, expected)


def test_jaakkola_jordan_bound_holds_and_touches():
    """g(x) ≥ g(ξ)exp((x − ξ)/2 − φ(ξ)(x² − ξ²)), with equality at x = ±ξ (4.6)."""
    xs = np.linspace(-8, 8, 161)
    for xi in (0.0, 0.5, 3.0, 7.0):
        phi = engine.jaakkola_jordan_phi(np.array([xi]))[0]
        bound = 1 / (1 + np.exp(-xi)) * np.exp((xs - xi) / 2 - phi * (xs ** 2 - xi ** 2))
        assert np.all(1 / (1 + np.exp(-xs)) >= bound - 1e-12)
        for x in (xi, -xi):
            touch = 1 / (1 + np.exp(-xi)) * np.exp((x - xi) / 2 - phi * (x ** 2 - xi ** 2))
            assert math.isclose(touch, 1 / (1 + np.exp(-x)), rel_tol=1e-12)


def test_add_and_drop_units_keep_shapes():
    state = engine.initial_state(3, 2.0, "ard")
    state.add_units(2)
    assert state.n_units == 5 and np.all(state.precisions[3:] == 1.0)
    state.drop_unit(1)
    assert state.n_units == 4 and len(state.branch_noise) == 4
