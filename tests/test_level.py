"""The errors' level (stream.level): Kalman filters of a random-walk offset, averaged by
their evidence against the model without a level, and what it does for the estimator."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onlinesparse import SparseRBFRegressor
from onlinesparse.stream import level as core
from onlinesparse.stream.baseline import lean_on_last
from tests.reference import prequential_errors, shrunk_prediction


def _from_scratch(errors: np.ndarray, spreads: np.ndarray, drift: float,
                  noise: float) -> tuple[list[float], list[float]]:
    """The local-level model's one-step predictions written as one joint Gaussian: the
    level is 0 at the first sample and walks by N(0, qσ²) after each, the error is the
    level plus N(0, r_t). The prediction of the level at sample t + 1 given the errors
    up to t is the Gaussian conditional ``c ᵀC⁻¹e``, ``var(b) − cᵀC⁻¹c``. Returns the
    means and variances of the predictions for samples 1 … T + 1."""
    means, variances = [], []
    for t in range(len(errors) + 1):
        # Cov(b_i, b_j) = qσ²·min(i, j), samples numbered from 0
        steps = np.arange(t + 1, dtype=float)
        level_cov = drift * noise * np.minimum.outer(steps, steps)
        if t == 0:
            means.append(0.0)
            variances.append(0.0)
            continue
        C = level_cov[:t, :t] + np.diag(spreads[:t])
        c = level_cov[t, :t]
        solved = np.linalg.solve(C, c)
        means.append(float(solved @ errors[:t]))
        variances.append(float(level_cov[t, t] - c @ solved))
    return means, variances


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 25),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), walk=st.floats(0.0, 3.0))
def test_each_filter_is_the_local_level_models_exact_posterior(seed, n, scale, walk):
    """track_level from scratch: after any errors, every filter's mean and variance are
    the joint Gaussian's prediction of the next level, its log-odds the sum of
    (e² − (e − m)²)/(2(P + r)) over the samples (bounded by ±40), and level_mixture the
    evidence-weighted mixture of the filters and of the model without a level. Errors of
    any scale, with or without a level in them, and spreads that vary."""
    rng = np.random.default_rng(seed)
    noise = scale**2
    spreads = noise * rng.uniform(0.5, 3.0, n)
    level = np.cumsum(np.r_[0.0, rng.normal(0.0, walk * scale, n - 1)])
    errors = level + rng.normal(0.0, np.sqrt(spreads))
    levels = core.new_levels()
    for e, r in zip(errors, spreads, strict=True):
        core.track_level(levels, float(e), float(r), noise)
    weights = [1.0]
    first = second = 0.0
    for k, drift in enumerate(core.LEVEL_DRIFTS):
        means, variances = _from_scratch(errors, spreads, drift, noise)
        log_odds = 0.0
        for t, e in enumerate(errors):
            total = variances[t] + spreads[t]
            log_odds += (e * e - (e - means[t]) ** 2) / (2.0 * total)
            log_odds = min(max(log_odds, -40.0), 40.0)
            # A filter discredited on the way restarted from 0 and is no longer the joint
            # Gaussian's posterior (the next test); the margin keeps a from-scratch sum
            # within rounding of the bound out of the comparison.
            assume(log_odds > -39.9)
        assert levels[k]["mean"] == pytest.approx(means[-1], rel=1e-7, abs=1e-9 * scale)
        assert levels[k]["variance"] == pytest.approx(variances[-1], rel=1e-7,
                                                      abs=1e-12 * noise)
        assert levels[k]["log_odds"] == pytest.approx(log_odds, rel=1e-7, abs=1e-9)
        weights.append(math.exp(log_odds))
        first += weights[-1] * means[-1]
        second += weights[-1] * (variances[-1] + means[-1] ** 2)
    total = sum(weights)
    offset, variance = core.level_mixture(levels)
    assert offset == pytest.approx(first / total, rel=1e-6, abs=1e-9 * scale)
    assert variance == pytest.approx(max(second / total - (first / total) ** 2, 0.0),
                                     rel=1e-6, abs=1e-9 * noise)


def test_a_discredited_filter_starts_again_from_zero():
    """A level sent far out (a wild error, then errors near 0 again) loses its evidence;
    at the lower bound it restarts at mean 0 and variance qσ² instead of carrying its
    mean, times e^(−40), into every later prediction."""
    levels = core.new_levels()
    core.track_level(levels, 1e6, 1.0, 1.0)  # (variance 0 at first: no level moves)
    core.track_level(levels, 1e6, 1.0, 1.0)
    assert np.all(levels["mean"] > 500.0)
    for _ in range(5):
        core.track_level(levels, 0.0, 1.0, 1.0)
    assert np.all(levels["log_odds"] == -40.0)
    np.testing.assert_array_equal(levels["mean"], 0.0)
    np.testing.assert_allclose(levels["variance"], levels["drift"])
    offset, variance = core.level_mixture(levels)
    assert abs(offset) == 0.0 and variance < 1e-17


def _stream(n: int, seed: int, wander: float):
    """y = sin(2a) + b·c/2 + noise 0.1, plus a level that walks by ``wander`` a sample."""
    rng = np.random.default_rng(seed)
    level = 0.0
    for _ in range(n):
        x = {"a": float(rng.uniform(-2, 2)), "b": float(rng.uniform(-2, 2)),
             "c": float(rng.uniform(-2, 2))}
        level += wander * rng.normal()
        yield x, float(np.sin(2 * x["a"]) + 0.5 * x["b"] * x["c"] + level
                       + 0.1 * rng.normal())


def _without_level(model: SparseRBFRegressor, stream) -> np.ndarray:
    """The same model with its level held at 0 after every sample (what it was before
    the level existed: the weighing, calibration and memory see the model's own error)."""
    errors = []
    for x, y in stream:
        errors.append(y - model.predict_one(x))
        model.learn_one(x, y)
        model._stream.bundle.levels["mean"] = 0.0
        model._stream.bundle.levels["variance"] = 0.0
        model._stream.bundle.levels["log_odds"] = -40.0
        model._stream.bundle.level[0] = (0.0, 0.0)
    return np.array(errors)


def test_a_wandering_level_is_followed_and_a_still_one_left_alone():
    """On a stream whose target carries a random walk (steps of 0.03 against noise 0.1)
    the level takes the prequential RMSE at least 5 % below the same model's without it; on the
    same stream without the walk it changes the RMSE by under 1 % and the offset stays
    within a fraction of the noise."""
    rmse = lambda e: float(np.sqrt(np.mean(e[200:] ** 2)))  # noqa: E731
    kwargs = dict(max_basis=30, window_size=300)
    wandering = rmse(prequential_errors(SparseRBFRegressor(**kwargs), _stream(1500, 1, 0.03)))
    held = rmse(_without_level(SparseRBFRegressor(**kwargs), _stream(1500, 1, 0.03)))
    assert wandering < 0.95 * held
    model = SparseRBFRegressor(**kwargs)
    still = rmse(prequential_errors(model, _stream(1500, 2, 0.0)))
    still_held = rmse(_without_level(SparseRBFRegressor(**kwargs), _stream(1500, 2, 0.0)))
    assert still <= 1.01 * still_held
    assert abs(model._stream.bundle.level[0]["offset"]) < 0.05


def test_the_interval_carries_the_levels_variance_and_survives_a_pickle():
    """predict_one(with_dist=True) is centred on f(x) + b with the level's variance in
    its spread; a pickle keeps the filters."""
    model = SparseRBFRegressor(max_basis=20, window_size=200)
    for x, y in _stream(600, 3, 0.05):
        model.learn_one(x, y)
    level = model._stream.bundle.level[0]
    assert level["variance"] > 0.0 and level["offset"] != 0.0
    assert model.diagnostics()["level"] == level["offset"]
    probe = {"a": 0.2, "b": -0.4, "c": 1.0}
    f = shrunk_prediction(model, np.array([0.2, -0.4, 1.0])) + model.target_reference
    # (the model's weight is 1; the blend with the last target acts on f + b)
    made = f + level["offset"] - model.target_reference
    made = lean_on_last(model._stream.bundle.baseline, made, made, 1.0)[0]
    assert model.predict_one(probe) == pytest.approx(made + model.target_reference, rel=1e-9)
    dist = model.predict_one(probe, with_dist=True)
    assert dist.mu == pytest.approx(made + model.target_reference, rel=1e-9)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.predict_one(probe) == model.predict_one(probe)
    np.testing.assert_array_equal(copy._stream.bundle.levels, model._stream.bundle.levels)


def test_a_memory_cut_restarts_the_level():
    """After a change the refitted model makes errors of its own: the sample whose alarm
    cuts the memory leaves the filters as new (the level is 0 until the errors move it)."""
    model = SparseRBFRegressor(max_basis=20, window_size=400)
    cuts = 0
    for k, (x, y) in enumerate(_stream(1200, 5, 0.02)):
        model.learn_one(x, y if k < 600 else -y + 3.0)
        if model.n_memory_cuts > cuts:
            cuts = model.n_memory_cuts
            fresh = core.new_levels()
            np.testing.assert_array_equal(model._stream.bundle.levels, fresh)
            assert model._stream.bundle.level[0]["offset"] == 0.0
    assert cuts >= 1
