"""The compiled VBLS regression sweep against the NumPy reference sweep (engine module)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.vbls import engine


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 25), st.integers(1, 80),
       st.sampled_from(["ard", "shared", "none"]), st.sampled_from([math.inf, 10.0, 1.0]),
       st.integers(0, 1), st.integers(0, 6))
def test_compiled_sweep_equals_the_reference(seed, m, n, prior, cap, n_flat, warm):
    rng = np.random.default_rng(seed)
    H = rng.normal(size=(n, m))
    if n_flat:
        H[:, 0] = 1.0
    y = H @ rng.normal(size=m) + rng.normal(size=n)
    gram, cross, yy = H.T @ H, H.T @ y, float(y @ y)
    fast = engine.initial_state(m, yy / n, prior, n_flat=n_flat)
    for _ in range(warm):
        engine.sweep_regression_reference(fast, gram, cross, yy, float(n), prior, cap)
    slow = fast.copy()
    change_fast = engine.sweep_regression(fast, gram, cross, yy, float(n), prior, cap)
    change_slow = engine.sweep_regression_reference(slow, gram, cross, yy, float(n), prior, cap)
    for name in ("weights", "weight_variances", "precision_rate", "branch_noise"):
        np.testing.assert_allclose(getattr(fast, name), getattr(slow, name), rtol=1e-10,
                                   atol=1e-12, err_msg=name)
    assert fast.output_noise == np.float64(slow.output_noise) or math.isclose(
        fast.output_noise, slow.output_noise, rel_tol=1e-10)
    assert math.isclose(fast.noise_precision, slow.noise_precision, rel_tol=1e-12)
    assert math.isclose(change_fast, change_slow, rel_tol=1e-9, abs_tol=1e-15)
    assert fast.n_sweeps == slow.n_sweeps


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 30))
def test_centred_statistics_equal_the_centred_design(seed, m):
    """G' and c' of [1, f_1 − μ_1, …] from G and c equal the products of the centred design."""
    from onlinesparse.vbls import _compiled

    rng = np.random.default_rng(seed)
    H = np.hstack([np.ones((50, 1)), rng.normal(size=(50, m - 1))])
    y = rng.normal(size=50)
    means = rng.normal(size=m)
    means[0] = 0.0
    centred = H - np.outer(np.ones(50), means)
    gram, cross = _compiled.centred_statistics(H.T @ H, H.T @ y, means)
    np.testing.assert_allclose(gram, centred.T @ centred, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cross, centred.T @ y, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 30))
def test_recentre_equals_the_design_centred_on_its_window_means(seed, m):
    """The re-centring from a view of a larger Gram array: the new means are the columns'
    window means, G' and c' the products of the design centred on them (G'_0m = 0), and the
    moved bias keeps every prediction of the old parametrisation."""
    from onlinesparse.vbls import _compiled

    rng = np.random.default_rng(seed)
    H = np.hstack([np.ones((50, 1)), rng.uniform(size=(50, m - 1))])
    y = rng.normal(size=50)
    old = np.append(0.0, rng.uniform(size=m - 1))
    weights = rng.normal(size=m)
    before = (np.hstack([np.ones((50, 1)), (H - old)[:, 1:]])) @ weights
    big = np.zeros((m + 3, m + 3))
    big[:m, :m] = H.T @ H
    gram, cross, means = _compiled.recentre(big[:m, :m], H.T @ y, 50.0, old, weights)
    np.testing.assert_allclose(means[1:], H[:, 1:].mean(axis=0), rtol=1e-12)
    assert means[0] == 0.0
    centred = np.hstack([np.ones((50, 1)), (H - means)[:, 1:]])
    np.testing.assert_allclose(gram, centred.T @ centred, rtol=1e-9, atol=1e-9)
    assert np.all(gram[0, 1:] == 0.0) and np.all(gram[1:, 0] == 0.0)
    np.testing.assert_allclose(cross, centred.T @ y, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(centred @ weights, before, rtol=1e-9, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 20), st.floats(0.5, 20.0))
def test_count_at_cap_follows_the_precision_ratio(seed, m, threshold):
    from onlinesparse.vbls import _compiled

    rng = np.random.default_rng(seed)
    state = engine.initial_state(m, 1.0, n_flat=int(rng.integers(0, 2)))
    state.precision_rate = state.precision_shape / rng.uniform(0.01, 100.0, m)
    state.noise_precision = float(rng.uniform(0.1, 10.0))
    diag = np.where(rng.random(m) < 0.2, 0.0, rng.uniform(0.1, 50.0, m))
    radial = rng.random(m) < 0.7
    counts = rng.integers(0, 4, m).astype(np.int64)
    expected = np.where(radial & (engine.precision_ratio(state, diag) >= threshold),
                        counts + 1, 0)
    largest = _compiled.count_at_cap(state.precision_shape, state.precision_rate,
                                     state.n_flat, diag, state.noise_precision, radial,
                                     counts, threshold)
    np.testing.assert_array_equal(counts, expected)
    assert largest == expected.max()


def test_a_sweep_the_floats_cannot_hold_leaves_the_state_as_it_was() -> None:
    """Finite or unchanged (issue 21), in the compiled sweep as in the reference: a weight of
    1e300 on a feature of order 1e-160 beside targets of 1e50 makes ⟨b⟩² and the rates
    overflow; the sweep is refused and the state (its floors already met) stays as it was."""
    import pickle
    import warnings

    H = np.array([[1.0, 1e-160], [1.0, -1e-160], [1.0, 2e-160]])
    y = np.array([1e50, -1e50, 3e49])
    gram, cross, yy = H.T @ H, H.T @ y, float(y @ y)
    for sweep in (engine.sweep_regression, engine.sweep_regression_reference):
        for prior in ("ard", "shared", "none"):
            state = engine.initial_state(2, yy / 3.0, prior, n_flat=1)
            state.weights = np.array([0.0, 1e300])
            before = pickle.dumps(state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                assert sweep(state, gram, cross, yy, 3.0, prior) == 0.0
            assert pickle.dumps(state) == before, (sweep.__name__, prior)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 20), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from([10.0, 1.0, 0.1]))
def test_online_sweeps_equal_the_sweeps_and_clock_in_turn(seed, m, n, prune_after, cap):
    """The kernel regressor's fused call: the engine's sweep then the pruning clock, n times,
    stopping after the sweep that makes a unit due."""
    from onlinesparse.vbls import _compiled

    rng = np.random.default_rng(seed)
    H = rng.normal(size=(40, m))
    y = H @ np.where(rng.random(m) < 0.5, rng.normal(size=m), 0.0) + rng.normal(size=40)
    gram, cross, yy = H.T @ H, H.T @ y, float(y @ y)
    slow = engine.initial_state(m, yy / 40, "ard")
    for _ in range(int(rng.integers(0, 4))):
        engine.sweep_regression(slow, gram, cross, yy, 40.0, "ard", cap)
    fast = slow.copy()
    radial = rng.random(m) < 0.8
    counts_slow = rng.integers(0, prune_after, m).astype(np.int64)
    counts_fast = counts_slow.copy()
    threshold = cap * (1.0 - 1e-6)
    run_slow = 0
    for _ in range(n):
        engine.sweep_regression(slow, gram, cross, yy, 40.0, "ard", cap)
        run_slow += 1
        largest = _compiled.count_at_cap(slow.precision_shape, slow.precision_rate, 0,
                                         np.ascontiguousarray(np.diagonal(gram)),
                                         slow.noise_precision, radial, counts_slow,
                                         threshold)
        if largest >= prune_after:
            break
    weights, variances = fast.weights.copy(), fast.weight_variances.copy()
    rate, psi = fast.precision_rate.copy(), fast.branch_noise.copy()
    run, kept, psi_y, precision, _, kept_change = _compiled.online_sweeps(
        n, weights, variances, fast.precision_shape, rate, psi, fast.output_noise,
        fast.noise_precision, gram, cross, yy, 40.0, cap, engine.noise_floor(yy / 40),
        engine.PRIOR_RATE, radial, counts_fast, threshold, prune_after)
    assert run == run_slow and kept == run_slow  # (nothing here overflows)
    np.testing.assert_array_equal(counts_fast, counts_slow)
    for name, value in (("weights", weights), ("weight_variances", variances),
                        ("precision_rate", rate), ("branch_noise", psi)):
        np.testing.assert_allclose(value, getattr(slow, name), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
    assert math.isclose(psi_y, slow.output_noise, rel_tol=1e-12)
    assert math.isclose(precision, slow.noise_precision, rel_tol=1e-12)
    assert math.isclose(kept_change, slow.last_change, rel_tol=1e-9, abs_tol=1e-15)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 30))
def test_pool_scores_equal_their_numpy_form(seed, c):
    """The kernel regressor's pool scores against the NumPy expression they replace (bit
    for bit)."""
    from onlinesparse.vbls import _compiled

    rng = np.random.default_rng(seed)
    corr, sq = rng.normal(size=c), rng.uniform(0.0, 5.0, c)
    spread = np.where(rng.random(c) < 0.2, 1e-14 * sq, rng.uniform(0.0, 1.0, c) * sq)
    s = float(rng.uniform(0.1, 3.0))
    expected = np.zeros(c)
    np.divide(corr * corr, s * spread, out=expected,
              where=spread > 1e-10 * np.maximum(sq, np.finfo(float).tiny))
    np.testing.assert_array_equal(
        _compiled.pool_scores(corr, spread, sq, s, float(np.finfo(float).tiny)), expected)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 30), st.integers(0, 5))
def test_centred_predictive_equals_the_engines_on_the_centred_row(seed, m, extra):
    """The kernel regressor's predictive (engine.predictive_regression with the window
    means) against the same on the centred row [1, f_m − μ_m] formed beforehand (a row
    longer than the model: candidates follow)."""
    from onlinesparse.vbls import engine

    rng = np.random.default_rng(seed)
    state = engine.initial_state(m, 2.0, "ard")
    state.weights = rng.normal(size=m)
    state.weight_variances = rng.uniform(0.0, 1.0, m)
    state.branch_noise = rng.uniform(0.01, 1.0, m)
    state.output_noise = float(rng.uniform(0.01, 1.0))
    row = rng.uniform(0.0, 1.0, m + extra)
    row[0] = 1.0
    means = np.append(0.0, rng.uniform(0.0, 1.0, m - 1))
    centred = row[:m] - means
    centred[0] = 1.0
    expected = engine.predictive_regression(state, centred)
    got = engine.predictive_regression(state, row, means)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
