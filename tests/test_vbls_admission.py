"""The kernel regressor's admission test and bordered weight solve against from-scratch
computations on an explicit design."""

from __future__ import annotations

import math
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.vbls import VBLSKernelRegressor, admission, proposals
from tests.reference import tipping_faul


def _design(seed: int, p: int, m: int, c: int):
    """A window of p patterns: the model's raw columns H (the constant first), candidates Φ
    (one of them, sometimes, a combination of the model's columns), targets y."""
    rng = np.random.default_rng(seed)
    H = np.column_stack([np.ones(p), rng.uniform(0.0, 1.0, (p, m - 1))])
    Phi = rng.uniform(0.0, 1.0, (p, c))
    if c and rng.random() < 0.3:
        Phi[:, 0] = H @ rng.normal(size=m)  # inside the model's span: scored 0
    used = rng.normal(size=c) * (rng.random(c) < 0.5)  # some candidates explain y
    y = H @ rng.normal(size=m) + Phi @ used + rng.normal(0.0, 0.3, p)
    alpha = np.exp(rng.uniform(-3.0, 3.0, m))
    s = float(np.exp(rng.uniform(-2.0, 1.0)))
    return H, Phi, y, alpha, s


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(1, 8))
def test_pool_scores_are_tipping_faul_on_the_design(seed, m, c):
    """t² = Q²/S with S = φᵀC⁻¹φ, Q = φᵀC⁻¹y, C = sI + HA⁻¹Hᵀ (the bias flat: C⁻¹ by
    Woodbury with A₀₀ = 0), from the window's cross products."""
    H, Phi, y, alpha, s = _design(seed, 60, m, c)
    pool = admission.score_pool(H.T @ H, H.T @ y, alpha, s, H.T @ Phi, Phi.T @ y,
                                np.einsum("ij,ij->j", Phi, Phi))
    S, Q = tipping_faul(H, Phi, y, alpha, s)
    inside = s * S <= 1e-8 * np.einsum("ij,ij->j", Phi, Phi)
    np.testing.assert_allclose(pool.t2[~inside], Q[~inside] ** 2 / S[~inside], rtol=1e-6)
    assert np.all(pool.t2[inside] < 1e-3 * max(1.0, float(np.max(pool.t2, initial=0.0))))
    np.testing.assert_allclose(pool.spread[~inside], s * S[~inside], rtol=1e-6)
    np.testing.assert_allclose(pool.corr, s * Q, rtol=1e-6, atol=1e-8 * np.abs(y).sum())


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(1, 8), st.floats(-3.0, 3.0))
def test_bordered_mean_is_the_posterior_mean_of_the_grown_model(seed, m, c, log_alpha):
    """After candidate j joins with precision α, the weights from the pool's factor
    bordered by one row equal a fresh solve of (G⁺ + s·diag(0, α_1, …, α)) μ = H⁺ᵀy."""
    H, Phi, y, alpha, s = _design(seed, 60, m, c)
    pool = admission.score_pool(H.T @ H, H.T @ y, alpha, s, H.T @ Phi, Phi.T @ y,
                                np.einsum("ij,ij->j", Phi, Phi))
    j = int(np.argmax(pool.t2))
    if not pool.t2[j] > 0.0:
        return  # every candidate inside the span: nothing to admit
    new_alpha = math.exp(log_alpha)
    grown = np.column_stack([H, Phi[:, j]])
    mean = admission.bordered_mean(pool, j, grown.T @ y, s, new_alpha)
    a = np.append(alpha, new_alpha)
    a[0] = 0.0
    expected = np.linalg.solve(grown.T @ grown + s * np.diag(a), grown.T @ y)
    np.testing.assert_allclose(grown @ mean, grown @ expected, rtol=1e-7,
                               atol=1e-9 * np.abs(y).max())


def test_admitted_weights_are_the_fixed_point_of_the_grown_model():
    """In a stream, the weights right after an admission are the posterior mean of eq. 5.2
    for the new precisions (bias flat) computed from the stored rows, in the centred basis
    the state uses."""
    rng = np.random.default_rng(5)
    model = VBLSKernelRegressor(window_size=200)
    stream = [({"x": v}, math.sin(3.0 * v) + rng.normal(0.0, 0.1))
              for v in rng.uniform(-1.5, 1.5, 600)]
    for x, y in stream[:150]:
        model.learn_one(x, y)
    model.sweeps_per_sample = 0  # nothing moves the weights after the admission
    checked = 0
    for x, y in stream[150:]:
        admitted = model.n_admitted
        model.learn_one(x, y)
        if model.n_admitted == admitted:
            continue
        stats, state = model._stats, model._state
        H = stats.stored_rows()
        centred = H - model._means
        centred[:, 0] = 1.0
        a = state.precisions
        a[0] = 0.0
        expected = np.linalg.solve(centred.T @ centred + state.total_noise * np.diag(a),
                                   centred.T @ stats.stored_targets())
        np.testing.assert_allclose(centred @ state.weights, centred @ expected, rtol=1e-8,
                                   atol=1e-10)
        checked += 1
    assert checked >= 2


def _pool(stats) -> list[tuple]:
    """The candidates as (radius, centre, φᵀφ, φᵀy, Hᵀφ), in a canonical order."""
    out = []
    cross = stats.cross_candidates
    for k, j in enumerate(range(stats.n_model, stats.n_columns)):
        spec = stats.basis.spec(j)
        out.append((spec.radius, tuple(np.round(spec.centre, 12)),
                    float(stats.candidate_sq_norms[k]), float(stats.cross_y_candidates[k]),
                    tuple(cross[:, k])))
    return sorted(out, key=lambda item: (item[0], item[1]))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 3), st.integers(20, 120), st.integers(3, 12),
       st.floats(0.0, 2.0))
def test_skipping_evicted_columns_leaves_the_buffer_managers_pool(seed, d, n, capacity,
                                                                  novelty):
    """From any state of a stream, proposals.consider leaves the pool the buffer manager's
    own step leaves (same candidates, same statistics), computing fewer columns."""
    rng = np.random.default_rng(seed)
    model = VBLSKernelRegressor(n_candidates=capacity, novelty=novelty, window_size=80)
    for _ in range(n):
        x = rng.normal(size=d)
        model.learn_one(dict(enumerate(x)), float(np.sin(x).sum() + rng.normal(0.0, 0.1)))
    x = rng.normal(size=d)
    error, std = float(rng.normal(0.0, 2.0)), 1.0
    mine, theirs = pickle.loads(pickle.dumps(model)), pickle.loads(pickle.dumps(model))
    proposals.consider(mine._buffer, mine._stats, x, error, std)
    theirs._buffer.consider(theirs._stats, x, error, std)
    assert mine._buffer.max_new_per_sample == theirs._buffer.max_new_per_sample
    ours, reference = _pool(mine._stats), _pool(theirs._stats)
    assert len(ours) == len(reference)
    for a, b in zip(ours, reference, strict=True):
        assert a[:2] == b[:2]
        np.testing.assert_allclose(a[2:4], b[2:4], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a[4], b[4], rtol=1e-12, atol=1e-12)
    def queue(m):
        return [(tuple(c), r) for c, r in m._buffer.queue]

    assert queue(mine) == queue(theirs)  # the same proposals still wait
    # (ids count the columns computed: never more than the buffer manager's)
    assert mine._stats.ids[: mine._stats.n_columns].max() <= theirs._stats.ids[
        : theirs._stats.n_columns].max()


def test_a_full_pool_computes_one_column_per_proposal():
    """With the pool full of scored candidates, a novel input's three columns (one per
    radius) would evict each other: only the last is computed."""
    rng = np.random.default_rng(3)
    model = VBLSKernelRegressor(n_candidates=6, window_size=100)
    for _ in range(150):
        x = rng.normal(size=10)
        model.learn_one(dict(enumerate(x)), float(np.sin(x[0] * x[1]) + x[2]))
    stats, buffer = model._stats, model._buffer
    assert stats.n_candidates == buffer.capacity and not np.isnan(
        stats.merit[stats.n_model: stats.n_columns]).any()
    reference = pickle.loads(pickle.dumps(model))
    x = rng.normal(size=10) + 5.0  # far from every centre: novel
    last = int(stats.ids[: stats.n_columns].max())
    proposals.consider(buffer, stats, x, 0.0, 1.0)
    reference._buffer.consider(reference._stats, x, 0.0, 1.0)
    assert int(stats.ids[: stats.n_columns].max()) == last + 1
    assert int(reference._stats.ids[: reference._stats.n_columns].max()) == last + 3
    assert _pool(stats)[-1][:2] == _pool(reference._stats)[-1][:2]
