"""The errors' structure along each input (core.relevance.track_residual,
residual_structure) and what it does to a proposal's metric: each against a computation
from scratch, and the lock-out it is there to break."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse import core
from onlinesparse.orr.input_metric import InputMetric

_HERMITE = (lambda z: z, lambda z: (z * z - 1) / math.sqrt(2),
            lambda z: (z**3 - 3 * z) / math.sqrt(6))


def _reference(samples: list[tuple[np.ndarray, float, float, bool]], d: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The running statistics written out plainly, sample by sample."""
    mean, var, residual, square = np.zeros(d), np.zeros(d), np.zeros((d, 3)), 0.0
    for x, error, memory, with_error in samples:
        with np.errstate(over="ignore", invalid="ignore"):
            finite = bool(np.all(np.isfinite(x * x)))
        if not (finite and math.isfinite(error * error)):
            continue
        rate = 1 / max(memory, 1)
        new_mean = mean + (x - mean) * rate
        var = var + ((x - mean) * (x - new_mean) - var) * rate
        mean = new_mean
        if not with_error:
            continue
        for f in range(d):
            z = (x[f] - mean[f]) / math.sqrt(var[f]) if var[f] > 0 else 0.0
            z = min(max(z, -core.RESIDUAL_CLIP), core.RESIDUAL_CLIP)
            for k, he in enumerate(_HERMITE):
                residual[f, k] += (error * he(z) - residual[f, k]) * rate
        square += (error * error - square) * rate
    return mean, var, residual, square


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 4), n=st.integers(1, 60),
       scale=st.sampled_from([1e-3, 1.0, 1e4]))
def test_the_running_statistics_match_a_computation_from_scratch(seed, d, n, scale):
    """Means, variances, projections and the errors' mean square, with heavy-tailed
    inputs (clipped), samples without an error, and non-finite ones that change nothing."""
    rng = np.random.default_rng(seed)
    samples = []
    for k in range(n):
        x = scale * rng.standard_t(3, size=d)
        error = float(rng.normal())
        if rng.random() < 0.1:
            x[rng.integers(d)] = rng.choice([np.inf, np.nan, 1e200])
        if rng.random() < 0.05:
            error = math.nan
        samples.append((x, error, float(min(k + 1, 25)), bool(rng.random() < 0.8)))
    mean, var, residual = np.zeros(d), np.zeros(d), np.zeros((d, 3))
    square = 0.0
    for x, error, memory, with_error in samples:
        square = core.track_residual(residual, mean, var, x, error, square, memory,
                                     with_error)
    ref_mean, ref_var, ref_residual, ref_square = _reference(samples, d)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(var, ref_var, rtol=1e-9, atol=1e-12 * scale**2)
    np.testing.assert_allclose(residual, ref_residual, rtol=1e-9, atol=1e-12)
    assert square == pytest.approx(ref_square, rel=1e-10, abs=1e-300)


def test_the_structure_is_the_projections_net_of_noise_per_unit_variance():
    residual = np.array([[0.3, 0.4, 0.0], [0.01, 0.0, 0.0], [0.0, 0.0, 0.0]])
    var = np.array([4.0, 1.0, 0.0])
    out = np.empty(3)
    core.residual_structure(residual, var, 2.0, 100.0, out)
    noise = 3 * 2.0 / 100
    np.testing.assert_allclose(out, [(0.25 - noise) / 4.0, 0.0, 0.0])


def _feed(metric: InputMetric, errors_of, n: int, seed: int) -> float:
    """``n`` standard normal inputs with errors ``errors_of(x, rng)``, memory 300."""
    rng = np.random.default_rng(seed)
    d = len(metric.relevance)
    square = 0.0
    for k in range(n):
        x = rng.normal(size=d)
        square = core.track_residual(metric.residual, metric.input_mean, metric.input_var,
                                     x, errors_of(x, rng), square, min(k + 1.0, 300.0),
                                     True)
    return square


def test_errors_that_follow_a_curve_along_one_input_single_it_out():
    """Errors that are a quadratic of input 2 plus noise score input 2's structure near
    the curve's variance; pure noise scores every input near 0."""
    curved = InputMetric(5)
    square = _feed(curved, lambda x, rng: 2.0 * (x[2] ** 2 - 1) + rng.normal(), 3000, 1)
    structure = np.empty(5)
    core.residual_structure(curved.residual, curved.input_var, square, 300.0, structure)
    # (the clip at 2.5 σ and the running estimates: about 8 of the curve's 8)
    assert 4.0 < structure[2] < 10.0
    assert np.delete(structure, 2).max() < 0.1
    noise = InputMetric(5)
    square = _feed(noise, lambda x, rng: rng.normal(), 3000, 2)
    core.residual_structure(noise.residual, noise.input_var, square, 300.0, structure)
    # (net of the noise: the projections of pure noise are at most what noise gives)
    assert (structure == 0.0).sum() >= 4 and structure.max() < 0.01


def test_the_structure_lifts_an_input_the_models_slopes_leave_at_the_floor():
    """The lock-out: a model flat along input 2 has no slope there, so the slopes alone
    would propose kernels at the floor's width along it for ever. Errors that follow a
    curve along it give it weight above the average instead."""
    metric = InputMetric(5)
    metric.relevance[:] = [1.0, 1.0, 0.0, 1.0, 1.0]
    square = _feed(metric, lambda x, rng: 1.0 * (x[2] ** 2 - 1) + rng.normal(), 2000, 3)
    slopes_alone = np.empty(5)
    assert core.input_metric(metric.relevance, np.empty(0), slopes_alone)
    assert slopes_alone[2] == pytest.approx(slopes_alone.min())
    assert slopes_alone[2] < 0.2
    proposed = metric.for_proposal(2000, 300.0, square)
    assert proposed[2] > 1.0
    assert proposed.mean() == pytest.approx(1.0)
