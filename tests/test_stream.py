"""The stream layer's mechanisms, each alone, against a from-scratch or external reference:
the evidence against scipy's densities, the mixture against its definition, the calibration
against its recursion written out, the level filters against statsmodels' local-level
model, the running mean's weighing against scipy's Student-t, the adaptive memory against
a list that forgets, and the composed step against the steps called one by one."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from onlinesparse.stream import baseline, calibration, change, evidence, layer, level, mixture
from onlinesparse.stream.memory import MIN_MEMORY, AdaptiveMemory

finite = st.floats(-1e3, 1e3)


@settings(max_examples=80, deadline=None)
@given(error=finite, other=finite, variance=st.floats(1e-4, 1e4), dof=st.floats(1.0, 1e3))
def test_the_log_ratio_is_the_difference_of_scipys_log_densities(error, other, variance,
                                                                 dof):
    scale = math.sqrt(variance)
    t = evidence.log_ratio(error, other, variance, dof)
    assert t == pytest.approx(stats.t.logpdf(error / scale, dof)
                              - stats.t.logpdf(other / scale, dof), rel=1e-9, abs=1e-9)
    g = evidence.log_ratio(error, other, variance, evidence.GAUSSIAN)
    assert g == pytest.approx(stats.norm.logpdf(error, scale=scale)
                              - stats.norm.logpdf(other, scale=scale), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(ratios=st.lists(st.floats(-30.0, 30.0), min_size=1, max_size=60),
       forget=st.sampled_from([1.0, 0.95, 0.5]))
def test_the_accumulator_is_the_bounded_forgotten_sum_written_out(ratios, forget):
    prior = evidence.PRIOR_LOG_ODDS
    odds = expected = prior
    for ratio in ratios:
        odds = evidence.accumulate(odds, ratio, prior, forget)
        expected = min(max(prior + forget * (expected - prior) + ratio, -40.0), 40.0)
        assert odds == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert evidence.accumulate(odds, math.nan, prior, forget) == odds  # (NaN: nothing)
    assert evidence.weight(odds) == pytest.approx(1.0 / (1.0 + math.exp(-odds)))


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.tuples(st.floats(1e-6, 1e3), finite, st.floats(0.0, 1e3)),
                     min_size=1, max_size=8))
def test_the_mixture_is_its_definition(data):
    w, m, v = (np.array(c) for c in zip(*data, strict=True))
    mean, variance = mixture.mixture(w, m, v)
    p = w / w.sum()
    assert mean == pytest.approx(float(p @ m), rel=1e-9, abs=1e-9)
    assert variance == pytest.approx(float(p @ (v + m * m) - (p @ m) ** 2), rel=1e-6,
                                     abs=1e-6 * (1.0 + float(p @ (v + m * m))))
    assert variance >= 0.0
    far = mixture.mixture(np.array([0.5, 0.5]), np.array([1e200, -1e200]),
                          np.array([1.0, 1.0]))  # (a variance beyond floats)
    assert far == (0.0, mixture.FLOAT_MAX)


@pytest.mark.parametrize("coverage", [0.8, 0.9, 0.95, 0.99])
def test_one_coverage_sets_the_quantile_and_the_miss_rate_and_is_reached(coverage):
    """Errors four times wider than the model claims: after a few hundred samples the
    calibrated interval misses 1 − coverage of them, for every coverage."""
    record = calibration.new_calibration(coverage)
    assert record[0]["quantile"] == pytest.approx(stats.norm.ppf(0.5 + coverage / 2))
    assert record[0]["miss_rate"] == pytest.approx(1.0 - coverage, abs=1e-15)
    rng = np.random.default_rng(1)
    misses = []
    for k in range(20_000):
        error = 4.0 * rng.normal()
        spread = math.exp(2.0 * record[0]["log_scale"])  # (κ² times a claimed variance 1)
        if k >= 2_000:
            misses.append(abs(error) > record[0]["quantile"] * math.sqrt(spread))
        calibration.calibrate(record, spread, error, error, 0.0)
    assert np.mean(misses) == pytest.approx(1.0 - coverage, abs=0.01)
    with pytest.raises(ValueError, match="coverage"):
        calibration.new_calibration(1.0)


@settings(max_examples=40, deadline=None)
@given(errors=st.lists(st.tuples(st.floats(-50.0, 50.0), st.floats(-50.0, 50.0)),
                       min_size=1, max_size=50),
       level_variance=st.floats(0.0, 10.0))
def test_the_calibration_is_its_recursion_written_out(errors, level_variance):
    record = calibration.new_calibration(0.95)
    inner = outer = 0.0

    def step(s: float, e: float, d: float) -> float:
        return min(max(s + 0.1 * (float(abs(e) > 1.959963984540054 * d) - 0.05), -5.0), 5.0)

    for error, made in errors:
        spread = 2.0 * math.exp(2.0 * inner)
        outer_deviation = math.exp(outer) * math.sqrt(spread + level_variance)
        inner, outer = (step(inner, error, math.sqrt(spread)),
                        step(outer, made, outer_deviation))
        assert calibration.calibrate(record, spread, error, made, spread + level_variance)
        assert (record[0]["log_scale"], record[0]["outer_log_scale"]) == pytest.approx(
            (inner, outer), abs=1e-12)
    before = record.copy()
    assert not calibration.calibrate(record, 0.0, 1.0, 1.0, 0.0)  # (no spread: no step)
    np.testing.assert_array_equal(record, before)


def _cusum(zs: list[float]) -> list[int]:
    """Page's CUSUM written out: three statistics, restarted after each alarm; per step
    the samples the alarm says to keep (0: none)."""
    increments = (lambda z: z - 0.5, lambda z: -z - 0.5,
                  lambda z: 0.375 * z * z - math.log(2.0))
    sums, runs, keeps = [0.0] * 3, [0] * 3, []
    for z in zs:
        for i, increment in enumerate(increments):
            sums[i] = max(sums[i] + increment(z), 0.0)
            runs[i] = runs[i] + 1 if sums[i] > 0 else 0
        alarmed = [runs[i] for i in range(3) if sums[i] > change.CHANGE_THRESHOLD]
        keeps.append(max(max(alarmed), 1) if alarmed else 0)
        if alarmed:
            sums, runs = [0.0] * 3, [0] * 3
    return keeps


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-3.0, 3.0), min_size=1, max_size=300), st.floats(-3.0, 3.0))
def test_the_change_statistics_are_pages_cusum_and_the_hold_waits_for_half(zs, shift):
    zs = zs + [min(max(z + shift, -3.0), 3.0) for z in zs]
    record = change.new_change()
    keeps = []
    for z in zs:
        record[0]["keep"] = 0
        change.watch_for_change(record, z, 0.375 * z * z - math.log(2.0))
        keeps.append(int(record[0]["keep"]))
        top = max(record[0]["up"], record[0]["down"], record[0]["scale"])
        assert change.change_underway(record) == (top > 0.5 * change.CHANGE_THRESHOLD)
        assert change.hold_noise_estimate(record, 59.0, 1.0) is False  # (young memory)
        assert change.hold_noise_estimate(record, 60.0, 1.0) == (
            top > 0.5 * change.CHANGE_THRESHOLD)
    assert keeps == _cusum(zs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_level_filter_is_statsmodels_local_level_model(seed):
    """With a constant observation variance r, each filter's predicted level and variance
    for the next sample are statsmodels' local-level Kalman filter's (level known to be 0
    at the first sample, state variance qσ²); its evidence is the sum of Gaussian
    log-likelihood ratios of that filter's one-step predictions against 0's. (To 1e-7:
    statsmodels switches to the steady-state gain once the Riccati recursion has
    converged to its tolerance.)"""
    from statsmodels.tsa.statespace.mlemodel import MLEModel

    rng = np.random.default_rng(seed)
    noise, r, n = 0.7, 1.3, 60
    errors = np.cumsum(rng.normal(0.0, 0.3, n)) + rng.normal(0.0, math.sqrt(r), n)
    levels = level.new_levels()
    for e in errors:
        level.track_level(levels, float(e), r, noise)
    for k, drift in enumerate(level.LEVEL_DRIFTS):
        model = MLEModel(errors, k_states=1, initialization="known",
                         initial_state=[0.0], initial_state_cov=[[0.0]])
        model["design", 0, 0] = model["transition", 0, 0] = model["selection", 0, 0] = 1.0
        model["obs_cov", 0, 0] = r
        model["state_cov", 0, 0] = drift * noise
        result = model.filter([])
        assert levels[k]["mean"] == pytest.approx(result.predicted_state[0, -1], rel=1e-7,
                                                  abs=1e-9)
        assert levels[k]["variance"] == pytest.approx(result.predicted_state_cov[0, 0, -1],
                                                      rel=1e-7)
        means = result.predicted_state[0, :-1]
        totals = result.predicted_state_cov[0, 0, :-1] + r
        expected = 0.0
        for e, m, v in zip(errors, means, totals, strict=True):
            expected = min(max(expected + stats.norm.logpdf(e, m, math.sqrt(v))
                               - stats.norm.logpdf(e, 0.0, math.sqrt(v)), -40.0), 40.0)
        assert levels[k]["log_odds"] == pytest.approx(expected, rel=1e-7, abs=1e-7)


def test_the_running_mean_is_weighed_by_scipys_student_t():
    rng = np.random.default_rng(3)
    record = baseline.new_baseline()
    targets: list[float] = []
    expected = evidence.PRIOR_LOG_ODDS
    for _ in range(40):
        y = float(rng.normal(5.0, 2.0))
        error = float(rng.normal(0.0, 1.0))
        before = (record[0]["mean"], record[0]["variance"])
        targets.append(y)
        p = len(targets)
        variance = float(np.var(targets))
        baseline.weigh_baselines(record, y, error, float(p), float(sum(targets)), variance,
                                 True)
        if before[1] > 0.0:
            s = math.sqrt(before[1])
            expected += (stats.t.logpdf(error / s, p - 2.0)
                         - stats.t.logpdf((y - before[0]) / s, p - 2.0))
        assert record[0]["log_odds"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
        assert record[0]["mean"] == pytest.approx(np.mean(targets))
        assert record[0]["variance"] == pytest.approx(
            variance * (1.0 + 1.0 / p) if p >= baseline.MIN_WEIGHED else 0.0)


class _Forgetful:
    """A memory of patterns numbered in order: what the adaptive memory's protocol asks."""

    def __init__(self, parameters: int) -> None:
        self.patterns: list[int] = []
        self.n_parameters = parameters

    @property
    def n_stored(self) -> int:
        return len(self.patterns)

    def forget_oldest(self, k: int) -> None:
        del self.patterns[:k]


def test_the_adaptive_memory_cuts_to_the_change_and_drops_what_it_held_back():
    model, memory = _Forgetful(25), AdaptiveMemory(window_size=1000)
    model.patterns = list(range(500))
    assert memory.after_alarm(model, since=12, learned=500)
    assert model.patterns == list(range(465, 500))  # (the floor: 25 parameters + 10)
    assert memory.stale == 35 - 12 and memory.holding
    for t in range(500, 530):
        model.patterns.append(t)
        memory.hold(model, t + 1)
    assert model.patterns[0] == 488  # (the stale ones left once the floor was reached)
    assert not memory.stale
    small = _Forgetful(1)
    small.patterns = list(range(100))
    memory = AdaptiveMemory(window_size=1000)
    memory.after_alarm(small, since=5, learned=100)
    assert small.n_stored == MIN_MEMORY


def test_a_stream_that_keeps_changing_keeps_its_memory_near_the_interval_between_changes():
    model, memory = _Forgetful(5), AdaptiveMemory(window_size=1000)
    model.patterns = list(range(400))
    memory.after_alarm(model, since=100, learned=400)
    model.patterns += list(range(400, 600))
    memory.after_alarm(model, since=100, learned=600)
    assert memory.cap == 200
    for t in range(600, 1000):
        model.patterns.append(t)
        memory.hold(model, t + 1)
        assert model.n_stored < 1.5 * 200 + 1


def test_observe_and_predictive_are_the_steps_called_one_by_one():
    rng = np.random.default_rng(5)
    composed = layer.StreamLayer(0.9).bundle
    parts = layer.StreamLayer(0.9).bundle
    targets: list[float] = []
    for k in range(200):
        y, error, noise, leverage = (float(rng.normal(3.0, 1.0)), float(rng.normal()),
                                     0.8, float(rng.uniform(0.0, 0.5)))
        targets.append(y)
        count, total, variance = float(len(targets)), float(sum(targets)), float(
            np.var(targets))
        layer.observe(composed, error, noise, leverage, y, count, total, variance, k > 5)
        spread = math.exp(2.0 * parts.calibration[0]["log_scale"]) * noise * (1 + leverage)
        made = error - parts.level[0]["offset"]
        own = noise * (1 + leverage) + parts.level[0]["variance"] * math.exp(
            -2.0 * parts.calibration[0]["log_scale"])
        # (the prediction as returned, recomposed from the records before this step)
        lv = parts.level[0]
        own_var = spread + lv["variance"]
        b = parts.baseline
        mixed, mixed_var = mixture.mixture(
            np.array([1.0 - b["weight"].sum(), *b["weight"]]),
            np.array([y - error + lv["offset"], *b["mean"]]),
            np.array([own_var, *b["variance"]]))
        returned, returned_var = baseline.lean_on_last(b, y - error + lv["offset"], mixed,
                                                       mixed_var)
        if calibration.calibrate(parts.calibration, spread, error, y - returned,
                                 returned_var):
            c = parts.calibration[0]
            change.watch_errors(parts.change, made, own, c["quantile"], c["miss_rate"])
        baseline.weigh_baselines(parts.baseline, y, made, count, total, variance, True)
        if k > 5:
            level.track_level(parts.levels, error, spread, noise)
            parts.level[0] = level.level_mixture(parts.levels)
        for a, b in zip(composed, parts, strict=True):
            np.testing.assert_array_equal(a, b)
    mean, var = layer.predictive(composed, 1.5, 0.4, 0.1)
    c, lv, b = parts.calibration[0], parts.level[0], parts.baseline
    own = 0.4 * math.exp(2 * c["log_scale"]) + lv["variance"] + 0.1
    mixed, spread = mixture.mixture(np.array([1.0 - b["weight"].sum(), *b["weight"]]),
                                    np.array([1.5 + lv["offset"], *b["mean"]]),
                                    np.array([own, *b["variance"]]))
    returned, returned_var = baseline.lean_on_last(b, 1.5 + lv["offset"], mixed, spread)
    assert (mean, var) == pytest.approx(
        (returned, returned_var * math.exp(2 * c["outer_log_scale"])), rel=1e-12)


def _discounts(n: int) -> np.ndarray:
    """What the blend's recursive means weigh n samples by: sample i its rate times what
    the later rates left of it."""
    rates = np.maximum(1.0 / np.arange(1, n + 1), baseline.BLEND_RATE)
    return rates * np.append(np.cumprod((1.0 - rates)[::-1])[::-1][1:], 1.0)


def _share(e: np.ndarray, d: np.ndarray) -> float:
    """α from scratch: weighted least squares of e on d (np.linalg.lstsq, no intercept),
    in [0, 1]; 0 while its sums are not both positive or there are too few samples."""
    w = _discounts(len(e))
    if len(e) <= baseline.MIN_WEIGHED or not (w @ (d * e) > 0.0 and w @ (d * d) > 0.0):
        return 0.0
    root = np.sqrt(w)
    fit = np.linalg.lstsq((root * d)[:, None], root * e, rcond=None)[0][0]
    return float(min(max(fit, 0.0), 1.0))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 0.99), st.integers(10, 400))
def test_the_blend_is_least_squares_of_the_models_errors_on_the_last_targets(seed, phi, n):
    """stream.baseline's blend from scratch: the share α of weighted least squares of the
    model's errors on the last target's departures from the model, the prediction q made
    with the share in force weighed against the mixture's mean as made by scipy's
    Student-t of the mixture's recent mean square error, and lean_on_last moving a
    prediction toward q by that evidence, its variance by q's mean square error over the
    mixture's."""
    rng = np.random.default_rng(seed)
    record = baseline.new_baseline()
    e, d, made, y_seen, misses = [], [], [], [], []
    odds = evidence.PRIOR_LOG_ODDS
    y = 0.0
    for k in range(n):
        y = phi * y + float(rng.normal())
        error = float(rng.normal(0.0, 0.7))
        b = record.copy()
        if k > baseline.MIN_WEIGHED:
            f, last = y - error, float(b[1]["mean"])
            p = (1.0 - b["weight"].sum()) * f + float(np.dot(b["weight"], b["mean"]))
            miss = (y - f) - _share(np.array(e), np.array(d)) * (last - f)
            if len(e) > baseline.MIN_WEIGHED:
                scale = math.sqrt(_discounts(len(e)) @ (np.array(y_seen) - made) ** 2)
                dof = len(e) - 2.0
                odds += (stats.t.logpdf(miss / scale, dof)
                         - stats.t.logpdf((y - p) / scale, dof))
                odds = min(max(odds, -40.0), 40.0)
            e.append(y - f)
            d.append(last - f)
            made.append(p)
            y_seen.append(y)
            misses.append(miss)
        baseline.weigh_baselines(record, y, error, float(k + 1), 0.0, 1.0, True)
        assert record[1]["blend_odds"] == pytest.approx(odds, rel=1e-7, abs=1e-7)
    e_, d_ = np.array(e), np.array(d)
    alpha = _share(e_, d_)
    assert baseline.blend_share(record) == pytest.approx(alpha, rel=1e-9, abs=1e-12)
    w = _discounts(len(e))
    p_square = w @ (np.array(y_seen) - made) ** 2
    mean, var = baseline.lean_on_last(record, 0.25, 0.5, 2.0)
    share = evidence.weight(odds)
    assert mean == pytest.approx(0.5 + share * (0.25 + alpha * (y - 0.25) - 0.5), rel=1e-9)
    ratio = (w @ np.square(misses)) / p_square
    assert var == pytest.approx(2.0 * (1.0 - share + share * ratio), rel=1e-9)


def test_the_blend_beats_the_model_and_the_last_target_where_they_err_apart():
    """A slowly moving target seen by a model whose errors are independent of the last
    target's step: the evidence alone settles on one of the two, the blend beats both;
    on a shuffled stream (the last target says nothing) the blend costs under 1 %."""
    for phi, wins in ((0.98, True), (0.0, False)):
        rng = np.random.default_rng(11)
        bundle = layer.StreamLayer().bundle
        y, ours, model, last = 0.0, [], [], []
        for k in range(4000):
            prediction = y  # (this sample's last target)
            y = phi * y + float(rng.normal(0.0, 0.3 if phi else 1.0))
            f = y + float(rng.normal(0.0, 0.3))
            made, _ = layer.predictive(bundle, f, 0.09, 0.0)
            if k >= 100:
                ours.append((y - made) ** 2)
                model.append((y - f) ** 2)
                last.append((y - prediction) ** 2)
            layer.observe(bundle, y - f, 0.09, 0.0, y, float(k + 1), 0.0, 1.0, True)
        best = min(np.mean(model), np.mean(last))
        if wins:
            assert np.mean(ours) < 0.8 * best
        else:
            assert np.mean(ours) < 1.01 * best


def test_the_last_target_is_weighed_by_scipys_student_t_on_its_differences():
    """stream.baseline's persistence expert from scratch: its prediction is the last target,
    its scale² the mean square of the successive differences (a running mean, then
    exponentially weighted at PERSISTENCE_RATE), its evidence the Student-t log-likelihood
    ratio with one degree of freedom fewer than the differences, from even odds; the
    mixture's shares are the three-way posterior of the two pairwise odds."""
    rng = np.random.default_rng(4)
    record = baseline.new_baseline()
    targets: list[float] = []
    square, expected = 0.0, 0.0
    for k in range(300):
        y = float(np.sin(k / 20.0) + 0.1 * rng.normal())
        error = float(rng.normal(0.0, 0.5))
        before = (record[1]["mean"], record[1]["variance"], k)
        targets.append(y)
        baseline.weigh_baselines(record, y, error, float(k + 1), float(sum(targets)),
                                 float(np.var(targets)), True)
        if k > baseline.MIN_WEIGHED:
            s = math.sqrt(before[1])
            expected += (stats.t.logpdf(error / s, k - 2.0)
                         - stats.t.logpdf((y - before[0]) / s, k - 2.0))
            expected = min(max(expected, -40.0), 40.0)
        if k:
            step = y - targets[-2]
            square += max(1.0 / k, baseline.PERSISTENCE_RATE) * (step * step - square)
        assert record[1]["log_odds"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
        assert record[1]["mean"] == y
        assert record[1]["variance"] == pytest.approx(square, rel=1e-12)
        odds = [math.exp(-record[0]["log_odds"]) if record[0]["variance"] > 0 else 0.0,
                math.exp(-record[1]["log_odds"]) if k + 1 > baseline.MIN_WEIGHED else 0.0]
        total = 1.0 + sum(odds)
        assert list(record["weight"]) == pytest.approx([o / total for o in odds])
        assert baseline.model_share(record) == pytest.approx(1.0 / total)
    assert baseline.model_share(record) < 1e-6  # (the slow sine: persistence wins)


def _persistence_from_scratch(values: np.ndarray, mean: float, variance: float) -> float:
    a = change.RECENT_RATE
    centre, recent = mean, 0.0
    recent_square, square = variance * a / (2.0 - a), variance
    for k, v in enumerate(values):
        b = max(1.0 / (k + 1 + change.PRIOR_SAMPLES), change.IN_CONTROL_RATE)
        d = v - centre
        centre += b * d
        recent += a * (d - recent)
        recent_square += b * (recent * recent - recent_square)
        square += b * (d * d - square)
    return min(max(recent_square * (2.0 - a) / (a * square), 1.0), change.MAX_PERSISTENCE)


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.95])
def test_persistence_is_the_long_run_variance_ratio_it_is_written_as(phi):
    """change.persistence from scratch, and what it measures: about 1 for independent
    errors, about the AR(1) long-run variance ratio over a window of 1/RECENT_RATE samples
    for autocorrelated ones."""
    rng = np.random.default_rng(1)
    z = np.zeros(20_000)
    for t in range(1, z.size):
        z[t] = phi * z[t - 1] + math.sqrt(1 - phi * phi) * rng.normal()
    tracker = change.new_change()[0]["persistence"][0].copy()
    for v in z:
        change.track_persistence(tracker, v)
    assert change.persistence(tracker) == pytest.approx(
        _persistence_from_scratch(z, 0.0, 1.0), rel=1e-9)
    ratio = change.persistence(tracker)
    # (an exponentially weighted mean of an AR(1) varies (1 + rφ)/(1 − rφ) times as much
    # as one of independent values, r = 1 − RECENT_RATE)
    rphi = (1.0 - change.RECENT_RATE) * phi
    assert 0.7 * (1 + rphi) / (1 - rphi) < ratio < 1.3 * (1 + rphi) / (1 - rphi) + 0.1


def test_the_detector_runs_pages_statistics_on_errors_shrunk_by_their_persistence():
    """change.watch_errors composed by hand: z is the error in units of the in-control
    deviation (clipped), z and the scale increment shrunk by their persistence step
    watch_for_change, and only while no change is underway do the factor and the trackers
    learn — a change's errors do not teach the detector that they are normal; before the
    statistics start the factor learns at the interval's rate."""
    rng = np.random.default_rng(2)
    composed, parts = change.new_change(), change.new_change()
    q, alpha = calibration.aim(0.95)
    alarms = 0
    for k in range(600):
        error = float(rng.normal(0.0, 1.0 if k < 400 else 4.0))
        variance = 0.8
        composed[0]["keep"] = parts[0]["keep"] = 0
        change.watch_errors(composed, error, variance, q, alpha)
        p = parts[0]
        deviation = math.exp(p["log_scale"]) * math.sqrt(variance)
        z = p["z"] = min(max(error / deviation, -3.0), 3.0)
        increment = 0.375 * z * z - math.log(2.0)
        f_z, f_s = (change.persistence(p["persistence"][i]) for i in range(2))
        if p["persistence"][0][change.SAMPLES] >= change.WARM_UP:
            change.watch_for_change(parts, z / math.sqrt(f_z), change.SCALE_MEAN
                                    + (increment - change.SCALE_MEAN) / math.sqrt(f_s))
        held = change.change_underway(parts)
        if not held:
            # (while the statistics wait for their reference, at the interval's own rate)
            warming = p["persistence"][0][change.SAMPLES] < change.WARM_UP
            step = calibration.CALIBRATION_STEP if warming else change.IN_CONTROL_STEP
            p["log_scale"] = calibration.calibration_step(p["log_scale"], error, deviation,
                                                          q, alpha, step)
            change.track_persistence(p["persistence"][0], z)
            change.track_persistence(p["persistence"][1], increment)
        np.testing.assert_array_equal(composed, parts)
        assert composed[0]["z"] == z
        alarms += bool(composed[0]["keep"])
    assert alarms >= 1  # (the errors four times wider from sample 400)


def test_a_change_of_scale_is_caught_although_the_interval_widens_at_once():
    """The interval's own factor κ follows a change of scale within a few dozen samples;
    the detector's factor is held while the change builds, so a mixture of old and new
    errors (half of the samples four times wider, gsg's transition) still raises an
    alarm within a hundred samples, and independent errors of one scale raise none in
    20 000."""
    rng = np.random.default_rng(7)
    record = change.new_change()
    q, alpha = calibration.aim(0.95)
    alarms = []
    for k in range(21_000):
        wide = k >= 20_000 and rng.random() < 0.5
        record[0]["keep"] = 0
        change.watch_errors(record, float(rng.normal(0.0, 4.0 if wide else 1.0)), 1.0, q,
                            alpha)
        if record[0]["keep"]:
            alarms.append(k)
    assert alarms and 20_000 <= alarms[0] < 20_100


def test_without_the_last_target_expert_it_never_predicts():
    """``last_target=False`` (a model queried at inputs of its owner's choosing, a control
    loop): the last target is never judged nor given a share, whatever the stream."""
    rng = np.random.default_rng(4)
    record = baseline.new_baseline(False)
    targets: list[float] = []
    for k in range(300):
        y = float(np.sin(k / 20.0) + 0.01 * rng.normal())  # (persistence would win)
        targets.append(y)
        baseline.weigh_baselines(record, y, float(rng.normal(0.0, 0.5)), float(k + 1),
                                 float(sum(targets)), float(np.var(targets)), True)
        assert record[1]["weight"] == 0.0 and record[1]["log_odds"] == 0.0
    assert baseline.model_share(record) == pytest.approx(1.0 - record[0]["weight"])
