"""The online schedule (vbls/schedule.py): each operation against a from-scratch computation,
the batch fit is a fixed point of the paper's sweep, and refine() after any stream reaches
the fixed point learn_many reaches on the same memory."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.vbls import VBLSRegressor, engine, schedule


def _problem(seed: int, n: int, d: int, noise: float):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.where(rng.random(d) < 0.5, rng.normal(0.0, 2.0, d), 0.0)
    y = X @ w + 0.3 + noise * rng.normal(size=n)
    H = np.hstack([np.ones((n, 1)), X])
    return H, y, H.T @ H, H.T @ y, float(y @ y), float(n)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 90), st.booleans())
def test_solve_weights_solves_the_fixed_point_system(seed, d, exact):
    """Exact, and by conjugate gradients when run long enough, ⟨b⟩ solves
    (G + s·diag⟨α⟩)⟨b⟩ = c (eq. 4.8 at its fixed point), computed here with numpy."""
    _, _, gram, cross, yy, count = _problem(seed, 3 * d, d, 0.5)
    rng = np.random.default_rng(seed + 1)
    state = engine.initial_state(d + 1, yy / count, n_flat=1)
    state.precision_rate = state.precision_shape / rng.uniform(0.01, 10.0, d + 1)
    state.branch_noise = rng.uniform(0.01, 1.0, d + 1)
    alpha = state.precisions
    expected = np.linalg.solve(gram + state.total_noise * np.diag(alpha), cross)
    schedule.solve_weights(state, gram, cross, None if exact else 4 * (d + 1))
    assert np.allclose(state.weights, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 30), st.floats(0.05, 3.0))
def test_noise_fixed_point_is_a_fixed_point_of_the_m_step(seed, d, noise):
    """After noise_fixed_point, the M-step of Ting et al. 3.1 (written out here from the
    E-step's sums, engine module docstring) leaves every ψ_zm where it is."""
    _, _, gram, cross, yy, count = _problem(seed, 4 * d + 10, d, noise)
    state = engine.initial_state(d + 1, yy / count, n_flat=1)
    schedule.solve_weights(state, gram, cross, None)
    mu = state.weights
    rss = float(yy - 2 * mu @ cross + mu @ gram @ mu)
    if not schedule.noise_fixed_point(state, np.diagonal(gram), rss, count):
        return  # no root (the caller then keeps the EM's noise)
    psi, s, g = state.branch_noise, state.total_noise, np.diagonal(gram)
    sigma2 = psi / (g + psi * state.precisions)
    sq_sum, curvature = rss / s**2, count / s
    psi_new = (psi * psi * sq_sum + count * psi - psi * psi * curvature + sigma2 * g) / count
    assert np.allclose(psi_new, psi, rtol=1e-8)
    assert s > rss / count  # on the branch where ψ_y's update has its fixed point at 0


def test_batch_fit_is_a_fixed_point_of_the_paper_sweep():
    _, _, gram, cross, yy, count = _problem(3, 400, 40, 0.5)
    state = engine.initial_state(41, yy / count, n_flat=1)
    sweeps = schedule.fit_fixed_point(state, gram, cross, yy, count, "ard", 10.0, 1e-12)
    assert sweeps < 500
    before = state.weights.copy()
    engine.sweep_regression(state, gram, cross, yy, count, "ard", 10.0)
    assert np.max(np.abs(state.weights - before)) <= 1e-8 * np.max(np.abs(before))


def test_fixed_point_sweeps_reach_the_plain_em_limit_sooner():
    """Same fixed point as the paper's sweeps run long, in far fewer sweeps (small problem,
    where the plain EM does converge)."""
    _, _, gram, cross, yy, count = _problem(5, 200, 4, 0.3)
    fast = engine.initial_state(5, yy / count, n_flat=1)
    n_fast = schedule.fit_fixed_point(fast, gram, cross, yy, count, "ard", 10.0, 1e-12)
    slow = engine.initial_state(5, yy / count, n_flat=1)
    n_slow = engine.fit_regression(slow, gram, cross, yy, count, "ard", 10.0, 1e-13, 400_000)
    assert n_fast * 20 < n_slow
    assert np.allclose(fast.weights, slow.weights, rtol=1e-4, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(5, 120),
       st.sampled_from(["forgetting", "unbounded", "window"]))
def test_refine_after_any_stream_reaches_the_learn_many_fixed_point(seed, d, n, memory):
    """After any stream, refine() from the online state reaches the fixed point learn_many
    reaches on the same memory (weights 1e-6 relative), unless refine found a fixed point
    with a strictly higher lower bound (ARD has several; refine keeps the better one)."""
    H, y, *_ = _problem(seed, n, d, 0.5)
    names = [f"x{i}" for i in range(d)]
    rows = [dict(zip(names, r[1:].tolist(), strict=True)) for r in H]
    kwargs = dict(memory=memory, window_size=50, tol=1e-12)
    online = VBLSRegressor(**kwargs)
    for row, target in zip(rows, y, strict=True):
        online.learn_one(row, float(target))
    online.refine()
    batch = VBLSRegressor(**kwargs)  # the same patterns pushed the same way: same memory
    batch.learn_many(pd.DataFrame(rows), pd.Series(y))
    w_online = np.array([online.intercept, *online.weights.values()])
    w_batch = np.array([batch.intercept, *batch.weights.values()])
    same = np.linalg.norm(w_online - w_batch) <= 1e-6 * max(np.linalg.norm(w_batch), 1e-12)
    bound_online = online.diagnostics()["lower_bound"]
    bound_batch = batch.diagnostics()["lower_bound"]
    assert same or bound_online > bound_batch + 1e-9 * abs(bound_batch), (
        w_online, w_batch, bound_online, bound_batch)


def test_one_pass_matches_the_batch_fit_when_inputs_outnumber_early_patterns():
    """A design in the style of Ting et al. 6.1 with 60 inputs (8 relevant, 10 redundant
    mixtures, the rest irrelevant) and n < d for the first 60 samples: one pass of learn_one
    with default parameters ends within 1.2× the batch fit's test error and flags the
    irrelevant inputs. (The 200-input run is benchmarks/vbls_synthetic.py.)"""
    rng = np.random.default_rng(11)
    rotation = np.linalg.qr(rng.normal(size=(8, 8)))[0]
    weights = rng.normal(0.0, 10.0, 8)
    mixing = rng.random((8, 10))
    mixing /= mixing.sum(axis=0)

    def inputs(m):
        latent = rng.normal(size=(m, 8))
        relevant = latent @ rotation.T
        return np.hstack([relevant, relevant @ mixing, rng.normal(size=(m, 42))]), latent @ weights

    X, clean = inputs(500)
    y = clean + rng.normal(0.0, math.sqrt(0.15 / 0.85 * clean.var()), 500)
    X_test, y_test = inputs(300)
    names = [f"x{i:02d}" for i in range(60)]
    frame = pd.DataFrame(X, columns=names)
    online, batch = VBLSRegressor(), VBLSRegressor()
    for row, target in zip(frame.to_dict(orient="records"), y, strict=True):
        online.learn_one(row, float(target))
    batch.learn_many(frame, pd.Series(y))
    test = pd.DataFrame(X_test, columns=names)

    def nmse(model):
        return float(np.mean((model.predict_many(test).to_numpy() - y_test) ** 2)
                     / np.var(y_test))

    assert nmse(online) <= 1.2 * nmse(batch)
    flags = online.relevance()
    assert np.mean([not flags[n] for n in names[18:]]) >= 0.95


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(20, 80))
def test_readmission_is_tipping_and_faul_from_scratch(seed, m, n):
    """A capped unit's t² = Q²/S with S = hᵀC⁻¹h, Q = hᵀC⁻¹y and C = sI + Σ_{k≠m} h_k h_kᵀ/α_k
    formed explicitly; it comes back, at ⟨α⟩ = S/(t² − 1), exactly when t² > 4."""
    rng = np.random.default_rng(seed)
    H = rng.normal(size=(n, m))
    y = H @ rng.normal(0.0, 1.0, m) + rng.normal(size=n)
    gram, cross = H.T @ H, H.T @ y
    state = engine.initial_state(m, float(y @ y) / n, "ard")
    state.branch_noise = np.full(m, rng.uniform(0.05, 0.5))
    state.output_noise = float(rng.uniform(0.05, 0.5))
    s = state.total_noise
    cap = 10.0
    ratio = np.where(rng.random(m) < 0.5, cap, rng.uniform(0.01, 5.0, m))
    alpha = ratio * np.diagonal(gram) / s
    state.precision_rate = state.precision_shape / alpha
    state.noise_precision = 1.0 / s
    rate = state.precision_rate.copy()
    out = schedule.readmission(state, gram, cross, cap)
    expected = alpha.copy()
    for j in np.flatnonzero(ratio == cap):
        others = [k for k in range(m) if k != j]
        C = s * np.eye(n) + (H[:, others] / alpha[others]) @ H[:, others].T
        S = float(H[:, j] @ np.linalg.solve(C, H[:, j]))
        Q = float(H[:, j] @ np.linalg.solve(C, y))
        if Q * Q / S > schedule.READMIT_T2:
            expected[j] = S / (Q * Q / S - 1.0)
    if out is None:
        np.testing.assert_allclose(expected, alpha)
    else:
        np.testing.assert_allclose(out.precisions, expected, rtol=1e-7)
        np.testing.assert_array_equal(state.precision_rate, rate)  # the state is left alone


def test_readmission_never_lowers_the_batch_fits_lower_bound(monkeypatch):
    """refine() keeps a re-admission only when its fixed point has the higher lower bound."""
    from onlinesparse.vbls import regressor

    H, y, *_ = _problem(3, 60, 40, 2.0)
    frame = pd.DataFrame(H[:, 1:], columns=[f"x{i}" for i in range(40)])
    with_readmission = VBLSRegressor()
    with_readmission.learn_many(frame, pd.Series(y))
    monkeypatch.setattr(regressor, "_READMIT_ROUNDS", 0)
    without = VBLSRegressor()
    without.learn_many(frame, pd.Series(y))
    assert (with_readmission.diagnostics()["lower_bound"]
            >= without.diagnostics()["lower_bound"])


def test_online_restarts_alternate_the_neutral_point_and_a_readmission():
    """Every other restart is the model's state with its capped inputs re-admitted (when the
    test re-admits any), the others start from the neutral point."""
    H, y, gram, cross, yy, n = _problem(5, 80, 6, 0.3)
    state = engine.initial_state(7, yy / n, "ard", n_flat=1)
    schedule.fit_fixed_point(state, gram, cross, yy, n, "ard", 10.0)
    # Push the input with the strongest signal to the cap: the data want it back.
    strongest = 1 + int(np.argmax(np.abs(state.weights[1:])))
    s = state.total_noise
    state.precision_rate[strongest] = (state.precision_shape[strongest] * s
                                       / (10.0 * gram[strongest, strongest]))
    online = schedule.OnlineSchedule("ard", 10.0, 1, 20)
    first = online._new_restart(state, gram, cross, yy, n)
    second = online._new_restart(state, gram, cross, yy, n)
    neutral = schedule.neutral_state(7, yy, n, "ard", 1)
    np.testing.assert_array_equal(first.precisions, neutral.precisions)
    expected = schedule.readmission(state, gram, cross, 10.0)
    assert expected is not None
    np.testing.assert_array_equal(second.precisions, expected.precisions)
    assert second.precisions[strongest] < state.precisions[strongest]


def test_online_readmission_stops_above_its_unit_limit():
    """Above READMIT_ONLINE_UNITS weights every restart starts from the neutral point (the
    test's O(M³) would dominate that sample)."""
    m = schedule.READMIT_ONLINE_UNITS + 1
    rng = np.random.default_rng(2)
    H = rng.normal(size=(2 * m, m))
    y = H[:, 0] * 3.0 + rng.normal(size=2 * m)
    gram, cross, yy, n = H.T @ H, H.T @ y, float(y @ y), float(2 * m)
    state = engine.initial_state(m, yy / n, "ard")
    state.precision_rate = state.precision_shape * state.total_noise / (10.0 * np.diagonal(gram))
    assert schedule.readmission(state, gram, cross, 10.0) is not None  # it would re-admit
    online = schedule.OnlineSchedule("ard", 10.0, 1, 20)
    neutral = schedule.neutral_state(m, yy, n, "ard")
    for _ in range(2):
        restart = online._new_restart(state, gram, cross, yy, n)
        np.testing.assert_array_equal(restart.precisions, neutral.precisions)
