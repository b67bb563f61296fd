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
