"""Accumulators of the replay against direct computations."""

import math
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onlinesparse.replay.metrics import LatencyHistogram, RegressionAccumulator, Trace

finite = st.floats(-1e3, 1e3, allow_nan=False)


@given(st.lists(st.tuples(finite, finite, st.floats(0.01, 100)), min_size=2, max_size=60))
def test_accumulator_equals_batch_formulas(samples):
    acc = RegressionAccumulator(z=1.5)
    for y, mu, sigma in samples:
        acc.update(y, mu, sigma)
    y, mu, sigma = (np.array(c) for c in zip(*samples, strict=True))
    err = y - mu
    assert acc.mae == pytest.approx(np.abs(err).mean(), rel=1e-9, abs=1e-9)
    assert acc.rmse == pytest.approx(np.sqrt((err**2).mean()), rel=1e-9, abs=1e-9)
    if y.var() > 1e-6:
        assert acc.nmse == pytest.approx((err**2).mean() / y.var(), rel=1e-6)
        assert acc.r2 == pytest.approx(1 - acc.nmse)
    assert acc.coverage == pytest.approx(np.mean(np.abs(err) <= 1.5 * sigma))


@given(st.lists(st.tuples(finite, finite), min_size=3, max_size=60))
def test_the_trivial_predictors_are_scored_on_the_same_samples(samples):
    # The running mean of the targets before each one and the last target, from the
    # second sample on, over the variance of every scored target.
    acc = RegressionAccumulator()
    for y, mu in samples:
        acc.update(y, mu)
    y = np.array([s[0] for s in samples])
    before = np.cumsum(y)[:-1] / np.arange(1, len(y))
    if y.var() > 1e-6:
        assert acc.nmse_running_mean == pytest.approx(
            np.mean((y[1:] - before) ** 2) / y.var(), rel=1e-6, abs=1e-9)
        assert acc.nmse_last_target == pytest.approx(
            np.mean((y[1:] - y[:-1]) ** 2) / y.var(), rel=1e-6, abs=1e-9)
    restored = pickle.loads(pickle.dumps(acc))
    assert restored.as_dict() == pytest.approx(acc.as_dict(), nan_ok=True)


def test_an_accumulator_from_before_the_trivial_predictors_scores_them_from_its_resumption():
    acc = RegressionAccumulator()
    for y in (1.0, 2.0, 4.0):
        acc.update(y, 0.0)
    for name in ("last_y", "n_trivial", "mean_sq_sum", "last_sq_sum"):
        del acc.__dict__[name]  # (as a checkpoint written before them unpickles)
    assert math.isnan(acc.nmse_last_target)
    acc.update(3.0, 0.0)  # (no last target known yet: neither is scored)
    acc.update(5.0, 0.0)
    assert acc.n_trivial == 1 and math.isfinite(acc.nmse_last_target)


def test_coverage_is_none_without_a_predictive_distribution():
    acc = RegressionAccumulator()
    acc.update(1.0, 2.0)
    assert acc.coverage is None
    assert acc.mae == 1.0
    assert math.isnan(acc.nmse)  # one sample has no variance


def test_latency_quantiles_match_numpy_within_the_bin_width():
    rng = np.random.default_rng(0)
    values = rng.lognormal(mean=3.0, sigma=0.8, size=20_000)
    h = LatencyHistogram()
    for v in values:
        h.add(float(v))
    for q in (0.5, 0.9, 0.99):
        assert h.quantile(q) == pytest.approx(np.quantile(values, q), rel=0.05)
    assert h.as_dict()["mean"] == pytest.approx(values.mean())
    assert h.max == values.max()
    assert h.counts.sum() == len(values)


def test_trace_stays_bounded_evenly_spaced_and_picklable():
    tr = Trace(every=3, capacity=16)
    for i in range(1000):
        tr.offer(float(i), {"n_basis": float(i)} if i < 500 else {"n_basis": 1.0, "gcv": 2.0})
    times, values = tr.as_arrays()
    assert 8 <= len(times) < 16
    steps = np.diff(times)
    assert np.all(steps == steps[0]) and steps[0] % 3 == 0
    assert len(values["gcv"]) == len(times)  # a late key is padded, not misaligned
    assert np.isnan(values["gcv"][0]) and values["gcv"][-1] == 2.0
    clone = pickle.loads(pickle.dumps(tr))
    assert clone.times == tr.times and clone.every == tr.every
