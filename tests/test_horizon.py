"""Which samples a full memory holds (stream.memory.Horizon): the stride measured on the
stream, the patterns a full window of the RBF model keeps, what a sample it does not take
still moves, and a trajectory's young memory left uncut."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse import (
    SparseRBFMultiTargetRegressor,
    SparseRBFRegressor,
    VBLSMultiTargetRegressor,
    VBLSRegressor,
)
from onlinesparse.stream import change
from onlinesparse.stream.memory import AdaptiveMemory, Horizon, decorrelation_stride
from tests.reference import from_scratch


def _trajectory(n: int, seed: int = 0, d: int = 3, rate: float = 1000.0, noise: float = 0.05):
    """A smooth periodic trajectory sampled at ``rate`` Hz (period 4 s), its target a
    nonlinear function of it plus noise: consecutive inputs nearly the same."""
    rng = np.random.default_rng(seed)
    phases = rng.uniform(0.0, 2.0 * math.pi, d)
    for k in range(n):
        t = k / rate
        x = np.sin(2.0 * math.pi * t / 4.0 * np.arange(1, d + 1) + phases)
        y = math.sin(2.0 * x[0]) + 0.5 * x[1] ** 2 + noise * rng.standard_normal()
        yield {f"x{i}": float(v) for i, v in enumerate(x)}, float(y)


def _shuffled(n: int, seed: int = 0, d: int = 3):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.uniform(-1.0, 1.0, d)
        yield ({f"x{i}": float(v) for i, v in enumerate(x)},
               float(math.sin(2.0 * x[0]) + 0.5 * x[1] ** 2 + 0.05 * rng.standard_normal()))


def test_the_stride_is_one_on_independent_inputs_and_the_longest_on_a_trajectory():
    rng = np.random.default_rng(0)
    assert decorrelation_stride(rng.standard_normal((1000, 5)), 20) == 1
    smooth = _inputs(_trajectory(1000))
    assert decorrelation_stride(smooth, 20) == 20
    # The same trajectory at 100 Hz returns within half the memory (period 400 samples):
    # the memory spans its cycle already.
    assert decorrelation_stride(_inputs(_trajectory(1000, rate=100.0)), 20) == 1
    # Noise on one input in four does not hide the others' smoothness (pooled); noise on
    # all of them does.
    noisy = np.hstack([smooth, rng.standard_normal((1000, 1)) * smooth.std()])
    assert decorrelation_stride(noisy, 20) == 20
    assert decorrelation_stride(smooth + 3.0 * rng.standard_normal(smooth.shape), 20) == 1
    # White noise averaged over 6 samples (autocorrelation (6 − ℓ)/6) first decorrelates
    # at lag 4 and never returns: one sample in 4.
    smoothed = np.apply_along_axis(lambda c: np.convolve(c, np.ones(6), "valid"), 0,
                                   rng.standard_normal((2000, 4)))
    assert decorrelation_stride(smoothed, 20) == 4
    assert decorrelation_stride(smoothed, 3) == 3
    # An hourly cycle decorrelates in 8 samples and returns in 24: stride 1.
    hours = np.arange(300.0)[:, None] % 24.0
    assert decorrelation_stride(hours, 20) == 1
    assert decorrelation_stride(np.ones((50, 2)), 20) == 1  # (nothing varies)


def _inputs(stream) -> np.ndarray:
    return np.array([[x[k] for k in sorted(x)] for x, _ in stream])


class _Window:
    """Stored inputs to measure a stride on (whatever the memory's count)."""

    def __init__(self, inputs: np.ndarray):
        self.inputs = inputs

    def stored_inputs(self) -> np.ndarray:
        return self.inputs


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(20, 60), st.integers(0, 200), st.integers(1, 400),
       st.one_of(st.none(), st.tuples(st.integers(0, 300), st.integers(1, 30))))
def test_a_full_memory_takes_one_sample_in_the_stride_and_counts_them(stride, size, extra,
                                                                      samples, alarm):
    """Every sample enters until the memory is full, then one in ``stride`` (the first
    after it, and every stride-th), and every one of the ``dense`` after an alarm;
    patterns_in counts the patterns of the last samples exactly."""
    horizon = Horizon(size, max_stride=stride)
    smooth = _Window(_inputs(_trajectory(1000)))  # (alike at every lag)
    stored, entered = 0, []
    for learned in range(size + extra + stride * size):
        if alarm is not None and learned == size + alarm[0]:
            horizon.alarm(learned - 1, dense=alarm[1])
        if horizon.admits(min(stored, size), learned, smooth):
            entered.append(learned)
            stored += 1
    assert horizon.stride == stride
    assert entered[:size] == list(range(size))
    assert entered[size] == size
    if alarm is None:
        assert np.all(np.diff(entered[size:]) == stride)
    learned = size + extra + stride * size
    recent = [k for k in entered if k >= learned - samples]
    assert horizon.patterns_in(samples, learned) == len(recent)


def test_an_alarm_lets_the_next_samples_in_and_a_cut_restarts_the_filling():
    horizon = Horizon(10, max_stride=4)
    smooth = _Window(_inputs(_trajectory(1000)))
    for learned in range(10):
        assert horizon.admits(learned, learned, smooth)
    assert horizon.admits(10, 10, smooth) and not horizon.admits(10, 11, smooth)
    horizon.alarm(11, dense=3)
    assert [horizon.admits(10, k, smooth) for k in range(12, 17)] == [True, True, True,
                                                                      False, False]
    horizon.restart()
    assert horizon.admits(7, 17, smooth) and horizon.admits(8, 18, smooth)
    assert not horizon.spans(18)


def test_a_deferred_measurement_keeps_the_stride_in_force_until_it_is_made():
    """admits(defer=True) (a maintained model's) owes the measurement: the memory goes on
    at the stride last measured (here none: every sample) until measure() makes it."""
    horizon = Horizon(10, max_stride=4)
    smooth = _Window(_inputs(_trajectory(1000)))
    for learned in range(10):
        assert horizon.admits(learned, learned, smooth, defer=True)
    assert horizon.due and horizon.admits(10, 10, smooth, defer=True)
    assert horizon.admits(10, 11, smooth, defer=True)  # (stride 1 until measured)
    assert horizon.measure(smooth) and not horizon.due and horizon.stride == 4
    assert not horizon.measure(smooth)  # (nothing owed: nothing done)
    assert [horizon.admits(10, k, smooth, defer=True) for k in range(12, 15)] == [
        False, False, True]  # (on the stride counted from when the memory was full: 10)


def test_a_trajectorys_memory_is_not_cut_until_it_spans_its_horizon():
    class _Model:
        n_parameters = 5
        n_stored = 200

        def forget_oldest(self, k: int) -> None:
            self.n_stored -= k

    horizon = Horizon(200, max_stride=3)
    smooth = _Window(_inputs(_trajectory(1000)))
    memory = AdaptiveMemory(200, horizon)
    model = _Model()
    assert horizon.admits(200, 200, smooth) and horizon.stride == 3
    assert not memory.after_alarm(model, since=20, learned=500)  # (spans from 800 on)
    assert model.n_stored == 200
    assert memory.after_alarm(model, since=30, learned=800)
    assert model.n_stored == max(10 + 20 // 3 + 1, 30)  # (the floor: MIN_MEMORY)
    assert horizon.full_since < 0  # (cut: every sample enters until full again)
    # Inputs that decorrelate within the longest stride revisit what the memory holds:
    # cut as before.
    cycle = Horizon(200, max_stride=20)
    smoothed = np.convolve(np.random.default_rng(1).standard_normal(205), np.ones(6),
                           "valid")[:, None]
    assert cycle.admits(200, 200, _Window(smoothed)) and 1 < cycle.stride < 20
    assert cycle.spans(201)
    # A stream whose inputs are independent (stride 1) is cut as before.
    independent = AdaptiveMemory(200, Horizon(200, max_stride=3))
    rough = _Window(np.random.default_rng(0).standard_normal((200, 2)))
    assert independent.horizon.admits(200, 200, rough) and independent.horizon.stride == 1
    model.n_stored = 200
    assert independent.after_alarm(model, since=40, learned=300)
    assert model.n_stored == 40


def test_an_alarm_before_the_first_measurement_measures_the_memory_as_it_is():
    # Before MEASURED patterns the stride is unknown: the stored inputs are measured at
    # the alarm (and not kept), and a memory whose inputs never decorrelate is not cut.
    class _Stored(_Window):
        n_parameters, n_stored = 5, 150

        def forget_oldest(self, k: int) -> None:
            self.n_stored -= k

    young = _Stored(_inputs(_trajectory(150)))
    horizon = Horizon(1000, max_stride=20)
    assert not horizon.spans(150, young.stored_inputs()) and not horizon.measured
    assert horizon.spans(150)  # (nothing to measure: as before)
    assert not AdaptiveMemory(1000, horizon).after_alarm(young, since=20, learned=150)
    assert young.n_stored == 150
    shuffled = _Stored(_inputs(_shuffled(150)))  # (independent inputs: cut as before)
    assert AdaptiveMemory(1000, Horizon(1000, max_stride=20)).after_alarm(
        shuffled, since=40, learned=150)
    assert shuffled.n_stored == 40
    # A step of independent inputs (a covariate shift of 5 sd, 50 patterns back) reads as
    # smoothness over the whole memory: the inputs before the change are measured.
    stepped = _Stored(_inputs(_shuffled(150)) + 10.0 * (np.arange(150) >= 100)[:, None])
    assert decorrelation_stride(stepped.stored_inputs(), 20) == 20
    assert AdaptiveMemory(1000, Horizon(1000, max_stride=20)).after_alarm(
        stepped, since=50, learned=150)
    assert stepped.n_stored == 50


def _moving_arm(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A 7-joint arm's (q, q̇, q̈), scaled by their amplitudes, and noisy torques (gravity,
    inertia, coupling, Coriolis-like and friction terms) at 1 kHz along a 4 s periodic
    trajectory, already moving at the first sample (learning switched on mid-motion)."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(-0.5, 0.5, 7)
    amplitude = rng.uniform(0.3, 0.8, (7, 3)) / np.arange(1, 4)
    phase = rng.uniform(0.0, 2.0 * math.pi, (7, 3))
    rate = 2.0 * math.pi * np.arange(1, 4) / 4.0
    angle = rate * (np.arange(n) * 1e-3)[:, None, None] + phase
    q = centre + (amplitude * np.sin(angle)).sum(-1)
    qd = (amplitude * rate * np.cos(angle)).sum(-1)
    qdd = -(amplitude * rate ** 2 * np.sin(angle)).sum(-1)
    inertia = np.array([3, 3, 1.5, 1.5, 0.2, 0.2, 0.05])
    ahead = [np.roll(v, -1, axis=-1) for v in (q, qd, qdd)]
    torque = (np.array([5, 40, 15, 20, 2, 3, 0.2]) * np.sin(np.cumsum(q, axis=-1))
              + inertia * (1 + 0.3 * np.cos(ahead[0])) * qdd
              + 0.1 * inertia * np.cos(q - ahead[0]) * ahead[2]
              + 0.2 * inertia * np.sin(ahead[0]) * qd * ahead[1]
              + np.array([0.5, 0.5, 0.3, 0.3, 0.05, 0.05, 0.01]) * qd
              + np.array([1, 1, 0.5, 0.5, 0.1, 0.1, 0.02]) * np.tanh(qd / 0.05))
    rng = np.random.default_rng(seed + 1)
    sensed = [v + s * rng.standard_normal(v.shape) for v, s in ((q, 1e-3), (qd, 1e-2),
                                                                (qdd, 0.1))]
    torque = torque + 0.01 * np.maximum(np.abs(torque).std(0), 0.1) * rng.standard_normal(
        torque.shape)
    scale = np.concatenate([amplitude.sum(1), (amplitude * rate).sum(1),
                            (amplitude * rate ** 2).sum(1)])
    offset = np.concatenate([centre, np.zeros(14)])
    return (np.concatenate(sensed, axis=1) - offset) / scale, torque


def test_an_arm_already_moving_keeps_its_young_memory(monkeypatch):
    """A 1 kHz loop whose arm moves from the first sample: its young memory meets new
    states, and the refit finds the last few dozen patterns predicting them better; cut
    then (as before the measurement at the alarm), the memory never reached the
    measurement and was cut again and again."""
    def cuts(n: int = 400, seed: int = 1) -> int:
        inputs, torques = _moving_arm(n, seed)
        model = SparseRBFMultiTargetRegressor(last_target=False)
        for row, tau in zip(inputs, torques, strict=True):
            x = {f"s{j:02d}": float(v) for j, v in enumerate(row)}
            model.predict_one(x)
            model.learn_one(x, {f"tau{j}": float(v) for j, v in enumerate(tau)})
        return model.n_memory_cuts

    assert cuts() == 0
    unmeasured = Horizon.spans
    monkeypatch.setattr(Horizon, "spans",
                        lambda self, learned, window=None: unmeasured(self, learned))
    assert cuts() >= 1  # (the stream does raise the alarms the measurement answers)


def test_a_full_window_on_a_trajectory_holds_one_sample_in_the_stride_exactly():
    """SparseRBFRegressor on a 1 kHz trajectory: once the window is full it holds one sample
    in the stride, spread over stride × window samples, and the weights are the exact ridge
    solution on the patterns it holds; the skipped samples move the stream layer (the
    calibration and the count of samples learned) but not the window."""
    data = list(_trajectory(3000))
    model = SparseRBFRegressor(window_size=100, max_basis=12, horizon=1000, memory="window")
    for x, y in data[:100]:
        model.learn_one(x, y)
    ridge = model.model
    assert ridge.n_stored == 100
    x, y = data[100]
    model.learn_one(x, y)  # (the first sample after the memory is full enters)
    assert model._horizon.stride == 10
    seen = ridge.window.n_seen
    inputs = ridge.window.stored_inputs().copy()
    layer = model._stream.bundle.calibration.copy()
    x, y = data[101]
    model.learn_one(x, y)
    assert ridge.window.n_seen == seen
    np.testing.assert_array_equal(ridge.window.stored_inputs(), inputs)
    assert model._n_learned == 102
    assert not np.array_equal(model._stream.bundle.calibration, layer)
    for x, y in data[102:]:
        model.learn_one(x, y)
    stored = ridge.window.stored_inputs()
    expected = np.array([[x[k] for k in sorted(x)] for x, _ in data[100::10]])[-100:]
    np.testing.assert_array_equal(stored, expected)
    # (kernels along a curve are nearly collinear: rounding in the incremental state is
    # amplified by the conditioning — 1e-11 to 4e-7 of the weights' norm over six seeds)
    reference = np.ravel(from_scratch(ridge)["w"])
    weights = np.ravel(ridge.weights)
    assert np.linalg.norm(weights - reference) <= 1e-6 * np.linalg.norm(reference)


def test_independent_inputs_keep_the_last_window_exactly_as_before():
    """On shuffled inputs the stride is 1: the model is the one with the horizon off
    (``horizon=window_size``), prediction for prediction."""
    data = list(_shuffled(700))
    default = SparseRBFRegressor(window_size=200, max_basis=15)
    off = SparseRBFRegressor(window_size=200, max_basis=15, horizon=200)
    for x, y in data:
        assert default.predict_one(x) == off.predict_one(x)
        default.learn_one(x, y)
        off.learn_one(x, y)
    assert default._horizon.stride == 1


def test_the_multi_output_model_spreads_its_window_too():
    model = SparseRBFMultiTargetRegressor(window_size=100, max_basis=10)
    for x, y in _trajectory(2500):
        model.learn_one(x, {"a": y, "b": 3.0 * y})
    assert model._horizon.stride == 20
    assert model.model.window.n_seen == 100 + (2500 - 100 + 19) // 20


@pytest.mark.parametrize("multi", [False, True])
def test_vbls_windows_spread_over_a_trajectory_and_keep_the_last_samples_otherwise(multi):
    """The same memory for the Bayesian family: on a 1 kHz trajectory a full window of
    VBLS holds one sample in the stride (its statistics equal to those of the strided
    samples recomputed from scratch); on shuffled inputs it is the model with the horizon
    off (its default), prediction for prediction."""
    cls = VBLSMultiTargetRegressor if multi else VBLSRegressor

    def target(y):
        return {"a": y, "b": -y} if multi else y

    model = cls(window_size=100, horizon=1000, memory="window")
    data = list(_trajectory(2000))
    for x, y in data:
        model.learn_one(x, target(y))
    assert model._horizon.stride == 10
    stats = model._stats
    expected = np.array([[x[k] for k in sorted(x)] for x, _ in data[100::10]])[-100:]
    np.testing.assert_array_equal(stats.stored_inputs(), expected)
    rows = np.column_stack([np.ones(100), expected])
    np.testing.assert_allclose(stats.gram_model, rows.T @ rows, rtol=1e-9, atol=1e-9)

    spread, off = cls(window_size=150, horizon=3000), cls(window_size=150)
    for x, y in _shuffled(500):
        assert spread.predict_one(x) == off.predict_one(x)
        spread.learn_one(x, target(y))
        off.learn_one(x, target(y))
    assert spread._horizon.stride == 1 and off._horizon.max_stride == 1


def test_a_cut_makes_the_detector_learn_its_reference_again():
    """After a cut the refitted model's errors are measured in a deviation learned from
    them: the statistics wait WARM_UP samples again."""
    record = change.new_change()
    record[0]["persistence"][:, change.SAMPLES] = 500.0
    change.restart_reference(record)
    assert np.all(record[0]["persistence"][:, change.SAMPLES] == 0.0)
    model = SparseRBFRegressor(window_size=300, max_basis=10)
    rng = np.random.default_rng(1)
    for k in range(1200):
        x = rng.uniform(-1.0, 1.0, 2)
        y = math.sin(3.0 * x[0]) + (4.0 if k >= 700 else 0.0) + 0.05 * rng.standard_normal()
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, y)
        if model.n_memory_cuts:
            break
    assert model.n_memory_cuts == 1
    persistence = model._stream.bundle.change[0]["persistence"]
    assert np.all(persistence[:, change.SAMPLES] == 0.0)
