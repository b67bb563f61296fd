"""The compiled loops against NumPy, and the fused window step against the general path."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse import core
from onlinesparse.orr import kernels
from onlinesparse.orr.kernels import KERNELS, Basis, BasisSpec
from onlinesparse.orr.ridge import IncrementalRidge


def test_kind_codes_match_the_kernels_module():
    assert (core.CONSTANT, core.LINEAR) == (kernels.CONSTANT, kernels.LINEAR)
    assert {core.GAUSSIAN: "gaussian", core.MULTIQUADRIC: "multiquadric",
            core.INVERSE_MULTIQUADRIC: "inverse_multiquadric",
            core.CAUCHY: "cauchy"} == {v: k for k, v in KERNELS.items()}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 6), n=st.integers(1, 40))
def test_evaluate_rows_matches_the_formulas(seed, d, n):
    rng = np.random.default_rng(seed)
    basis = Basis(d)
    expected_columns = []
    X = rng.normal(size=(7, d))
    for _ in range(n):
        kind = rng.integers(0, 6)
        if kind == 0:
            basis.append(BasisSpec.constant())
            expected_columns.append(np.ones(len(X)))
        elif kind == 1:
            feature = int(rng.integers(d))
            basis.append(BasisSpec.linear(feature))
            expected_columns.append(X[:, feature])
        else:
            name = {2: "gaussian", 3: "multiquadric", 4: "inverse_multiquadric",
                    5: "cauchy"}[int(kind)]
            centre, radius = rng.normal(size=d), float(rng.uniform(0.2, 3.0))
            basis.append(BasisSpec.radial(centre, radius, name))
            z = np.sum((X - centre) ** 2, axis=1) / radius**2
            expected_columns.append({"gaussian": np.exp(-z),
                                     "multiquadric": np.sqrt(1 + z),
                                     "inverse_multiquadric": 1 / np.sqrt(1 + z),
                                     "cauchy": 1 / (1 + z)}[name])
    expected = np.column_stack(expected_columns)
    np.testing.assert_allclose(basis.evaluate_many(X), expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(basis.evaluate(X[3], 1, n), expected[3, 1:], rtol=1e-13,
                               atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 30))
def test_symmetric_matvec_and_rank_one(seed, m):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(m, m))
    A = B + B.T
    x = rng.normal(size=m)
    out = np.empty(m)
    core.symmetric_matvec(A, x, m, out)
    np.testing.assert_allclose(out, A @ x, rtol=1e-12, atol=1e-12 * np.abs(A).sum())
    u, v = rng.normal(size=m), rng.normal(size=m)
    updated = A.copy()
    core.rank_one_update(updated, u, v, -0.7)
    np.testing.assert_allclose(updated, A - 0.7 * np.outer(u, v), rtol=1e-13, atol=1e-13)


def _stream_model(seed: int) -> tuple[IncrementalRidge, np.random.Generator]:
    rng = np.random.default_rng(seed)
    model = IncrementalRidge(n_features=2, size=15)
    model.add_candidate(BasisSpec.constant())
    for _ in range(20):
        x = rng.normal(size=2)
        model.add_pattern(x, float(np.sin(x[0]) + 0.1 * rng.normal()))
    for k in range(5):
        model.add_basis(BasisSpec.radial(rng.normal(size=2), 1.0), lam=10.0 ** -k)
    model.add_basis(model.window.ids[model.window.n_model], lam=1e-3)  # the constant
    return model, rng


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_the_slide_is_the_four_rank_one_operations(seed):
    """A full window's step in the compiled core (core.learn_pattern: one rank-two pass over
    S, one pass over G) against the four operations one by one — the oldest pattern out of
    S (Orr A.11) and of the statistics, the new one into both (A.8): equal to rounding, the
    same ring. The refresh counter is checked so that a refresh (which would make both
    exact) cannot hide a difference."""
    fused, rng = _stream_model(seed)
    fused.refresh()
    general = copy.deepcopy(fused)
    refreshes = fused.n_refreshes
    for _ in range(8):
        x = rng.normal(size=2)
        y = float(np.sin(x[0]) + 0.1 * rng.normal())
        fused.add_pattern(x, y)
        window, state, m = general.window, general.state, general.size
        h = window.row(x)
        h_old, y_old = window.oldest()
        state.remove_pattern(h_old[:m], y_old)
        window.pop_oldest()
        window.push(x, y, h)
        state.add_pattern(h[:m], y)
        if fused.n_refreshes != refreshes:
            break
        np.testing.assert_allclose(fused.variance, general.variance, rtol=1e-9,
                                   atol=1e-12 * np.abs(general.variance).max())
        np.testing.assert_allclose(fused.weights, general.weights, rtol=1e-9,
                                   atol=1e-12 * np.abs(general.weights).max())
        np.testing.assert_allclose(fused.window.gram, general.window.gram, rtol=1e-13,
                                   atol=1e-13 * np.abs(general.window.gram).max())
        assert fused.window.yy == pytest.approx(general.window.yy, rel=1e-13)
        assert np.array_equal(fused.window.stored_rows(False),
                              general.window.stored_rows(False))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(0, 30), start=st.integers(0, 5))
def test_least_useful_follows_the_eviction_order(seed, n, start):
    """Lowest verdict first; a NaN (never evaluated) counts as 0 after an evaluated 0; the
    lowest id among equals; protected ids never; −1 when nothing may go."""
    rng = np.random.default_rng(seed)
    size = start + n
    # Few distinct values, so that ties (and ties with the NaN's 0) really occur.
    merit = rng.choice([np.nan, 0.0, -1.0, 0.5, 2.0], size=size)
    ids = rng.permutation(3 * size + 1)[:size].astype(np.int64)
    protected = rng.choice(ids, size=min(size, int(rng.integers(0, 4))), replace=False)
    keys = [((0.0 if np.isnan(merit[p]) else merit[p]), bool(np.isnan(merit[p])), ids[p], p)
            for p in range(start, size) if ids[p] not in set(protected.tolist())]
    expected = min(keys)[3] if keys else -1
    assert core.least_useful(merit, ids, start, size, protected.astype(np.int64)) == expected


def test_the_kernel_table_refuses_an_unknown_code():
    """An unknown radial code is an error, not the last kernel of the table."""
    for kind in range(core.GAUSSIAN, core.CAUCHY + 1):
        assert np.isfinite(core.profile(kind, 0.5))
    with pytest.raises(ValueError, match="unknown radial kind"):
        core.profile(core.CAUCHY + 1, 0.5)
    with pytest.raises(ValueError, match="unknown radial kind"):
        core.basis.profile_slope(99, 0.5)


@pytest.mark.parametrize("kernel", ["gaussian", "multiquadric", "inverse_multiquadric",
                                    "cauchy"])
def test_the_novelty_support_is_the_models_own_kernel_squared(kernel):
    """Σᵢ φ(‖xᵢ − x‖²/r²)² over the stored inputs, φ the model's kernel (kernels.py's
    table written out), not the Gaussian whatever the kernel."""
    from onlinesparse.orr.kernels import KERNELS, radial_profile
    from onlinesparse.orr.window import WindowStatistics

    rng = np.random.default_rng(3)
    window = WindowStatistics(2, memory="window", size=20)
    for _ in range(25):
        if window.is_full:
            window.pop_oldest()
        window.push(rng.normal(size=2), float(rng.normal()))
    x, radius = np.array([0.2, -0.1]), 1.3
    z = np.sum((window.stored_inputs() - x) ** 2, axis=1) / radius**2
    expected = float(np.sum(radial_profile(KERNELS[kernel], z) ** 2))
    assert window.support(x, radius, KERNELS[kernel]) == pytest.approx(expected, rel=1e-12)
