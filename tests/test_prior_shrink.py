"""Predictions return toward the targets' mean where the model knows little
(stream.prior.shrink_to_prior): the formula from scratch, and the faults it is for."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse import SparseRBFRegressor
from onlinesparse.stream.prior import shrink_to_prior
from tests.reference import averaged_prediction, shrunk_prediction


@settings(max_examples=60, deadline=None)
@given(mean=st.floats(-1e3, 1e3), spread=st.floats(1e-3, 1e4), noise=st.floats(1e-4, 1e2),
       prediction=st.floats(-1e4, 1e4), factor=st.floats(0.0, 1e8), count=st.integers(1, 999))
def test_the_shrink_is_precision_weighting_against_the_targets_spread(
        mean, spread, noise, prediction, factor, count):
    """``(ȳ + c(f − ȳ), σ² + c·σ²·hᵀSh)`` with ``c = s²/(s² + κ²σ²·hᵀSh)``, against the
    formula written out; without targets, the prediction as it is."""
    shrunk, variance = shrink_to_prior(prediction, factor, noise, float(count), mean, spread,
                                       math.log(1.3))
    v = noise * factor
    c = spread / (spread + 1.3**2 * v)
    assert shrunk == pytest.approx(mean + c * (prediction - mean), rel=1e-9, abs=1e-9)
    assert variance == pytest.approx(noise + c * v, rel=1e-9)
    assert min(prediction, mean) - 1e-6 <= shrunk <= max(prediction, mean) + 1e-6
    alone = shrink_to_prior(prediction, factor, noise, 0.0, mean, spread, 0.0)
    assert alone == (prediction, noise + v)


def test_a_model_that_knows_nothing_at_x_predicts_the_mean():
    assert shrink_to_prior(1e6, math.inf, 1.0, 10.0, 4.0, 9.0, 0.0) == (4.0, 1.0 + 9.0)
    assert shrink_to_prior(7.0, math.nan, 1.0, 10.0, 4.0, 9.0, 0.0)[0] == 7.0


def _steep_line(n: int, seed: int) -> list[tuple[dict, float]]:
    """y = 100·x + noise on x in [0, 0.1] (targets 0…10), with a second input that
    varies little: the linear functions are fitted on a sliver of the input space."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = {"a": float(rng.uniform(0, 0.1)), "b": float(rng.uniform(0, 0.01))}
        out.append((x, 100 * x["a"] + 0.3 * rng.normal()))
    return out


def test_far_from_the_data_the_prediction_returns_toward_the_targets_mean():
    """Inside the data the prediction is the model's own to 0.1 %; along an input the
    data barely covered, the model's linear extrapolation runs far beyond every target
    seen and is uncertain there, and the prediction comes back toward their mean, with
    with_dist=True centred on the same value."""
    model = SparseRBFRegressor(max_basis=10, window_size=200)
    data = _steep_line(200, 1)
    for x, y in data:
        model.learn_one(x, y)
    names = model._features.names
    centre = float(np.mean(model.model.window.stored_targets()))
    inside = np.array([{"a": 0.05, "b": 0.005}[n] for n in names])
    raw = model.model.predict(inside)
    assert shrunk_prediction(model, inside) == pytest.approx(raw, rel=1e-3)
    far = {"a": 0.05, "b": 3.0}
    vector = np.array([far[n] for n in names])
    raw, shrunk = model.model.predict(vector), shrunk_prediction(model, vector)
    assert abs(shrunk - centre) < 0.5 * abs(raw - centre)
    assert model.predict_one(far) == pytest.approx(averaged_prediction(model, shrunk),
                                                   rel=1e-9)
    assert model.predict_one(far, with_dist=True).mu == pytest.approx(
        model.predict_one(far), rel=1e-12)


def _hourly(n: int, outages: tuple[int, ...], seed: int) -> list[tuple[dict, float]]:
    """A daily cycle around 100 (hour of day and day of week as inputs) whose sensor
    sticks at 24 for 10 hours from each of ``outages``: WaterFlow's fault."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        hour, day = t % 24, (t // 24) % 7
        y = 100 + 3 * math.sin(2 * math.pi * hour / 24) + 0.3 * rng.normal()
        if any(start <= t < start + 10 for start in outages):
            y = 24.0
        out.append(({"hour": float(hour), "day": float(day)}, y))
    return out


def test_a_stuck_sensor_rarely_sends_the_predictions_off_the_scale():
    """After an outage the adaptive memory keeps few patterns, mostly stuck ones, and the
    fit on them knows little about other hours of the day. Over ten such streams:

    * the predictions leave the targets' range widened by half of it on under 0.5 % of
      the samples, and at most half as often as the unshrunk fit (not never: a fit that
      is sure of itself on a few patterns has a small variance and is not shrunk; a
      version of this test that asked for none on one stream held for 6 of these 10
      streams before the refresh schedule's change, docs/rbf_on_streams.md);
    * errors beyond five predictive deviations stay under 1.5 % of the samples after the
      first 50 (measured 0.8 %; 2.9 % when the noise was re-estimated one sample in
      twenty, whose estimate from before an outage kept the intervals narrow in it)."""
    from river import preprocessing

    shrunk = raw_out = samples = wild = scored = 0
    for seed in range(10):
        model = preprocessing.StandardScaler() | SparseRBFRegressor()
        data = _hourly(600, (100, 220, 400), seed)
        low, high = min(y for _, y in data), max(y for _, y in data)
        margin = 0.5 * (high - low)
        for k, (x, y) in enumerate(data):
            prediction = model.predict_one(x, with_dist=True)
            shrunk += not low - margin <= prediction.mu <= high + margin
            if k >= 50:
                wild += abs(y - prediction.mu) > 5.0 * prediction.sigma
                scored += 1
            rbf = model[-1]
            if rbf.n_basis:
                vector = np.array([model[0].transform_one(x)[n] for n in rbf._features.names])
                raw = rbf.model.predict(vector) + rbf.target_reference
                raw_out += not low - margin <= raw <= high + margin
            model.learn_one(x, y)
        samples += len(data)
        # (an outage raises an alarm at least once a stream; the one at 100 comes before
        # the detector's 100 in-control samples, and one of the later two may build its
        # statistic too slowly for h = 12 before the sensor recovers. A refit judges
        # whether the alarm is worth a cut: stream.refit)
        assert rbf.n_memory_cuts + rbf._adaptive.vetoed >= 1
    # (the raw fit left the range 20 times and more when the memory was cut at every
    # outage, 2 when only some were; with the cuts refused as shifts of level, none)
    assert raw_out <= 2
    assert shrunk <= 0.005 * samples
    assert 2 * shrunk <= raw_out
    assert wild <= 0.015 * scored
