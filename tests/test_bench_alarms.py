"""The counting rules of benchmarks/memory_alarms.py and its streams (benchmarks/alarm_streams.py).

The benchmark's table is judged against the issue "Memory that does not cry wolf": these
tests check that a delay, a miss and a false alarm are what its docstring says, that the
recorder dates a cut to the sample whose ``learn_one`` made it, and that the streams are
deterministic with the change points they claim. The Panda stream (pybullet) and the
models' runs are left to the script.
"""

from __future__ import annotations

import numpy as np

from tests.reference import import_benchmarks

alarm_streams, memory_alarms = import_benchmarks("alarm_streams", "memory_alarms")


def test_a_delay_is_the_first_cut_at_or_after_the_change_and_the_rest_are_false_alarms():
    cuts = [10, 100, 104, 130, 260, 400]
    delays, false = memory_alarms.score_changes(cuts, (100, 200, 300), 500)
    # 100 → cut at 100 (delay 0); 200 → the cut at 260 (60); 300 → none before the end
    assert delays == [0, 60, 100] and false == 3  # 10 (before), 104 and 130 (after 100's)
    delays, false = memory_alarms.score_changes([150, 199], (100, 200), 300)
    assert delays == [50, None] and false == 1


def test_on_a_stationary_stream_every_cut_is_a_false_alarm():
    assert memory_alarms.score_changes([5, 6, 7], (), 100) == ([], 3)
    assert memory_alarms.score_changes([], (), 100) == ([], 0)


class _Counter:
    n_memory_cuts = 0


def test_the_recorder_dates_each_cut_to_the_sample_that_made_it():
    model, recorder = _Counter(), memory_alarms.CutRecorder()
    for samples in range(1, 11):  # the harness calls it with the samples learned so far
        if samples in (3, 7):
            model.n_memory_cuts += 1
        recorder(samples, model)
    assert recorder.indices == [2, 6]
    recorder(11, object())  # (a baseline has no counter)
    assert recorder.indices == [2, 6]


def test_lag1_autocorrelation_skips_the_unscored_samples():
    e = np.r_[np.nan, np.tile([1.0, -1.0], 50)]
    assert np.isclose(memory_alarms.lag1(e), -1.0)


def test_the_drift_geometry_is_rivers_scaled_by_n_over_200000():
    assert alarm_streams.drift_geometry("gra", 200_000) == ((50_000, 100_000), 10_000)
    assert alarm_streams.drift_geometry("lea", 20_000) == ((5000, 10_000, 15_000), 1000)
    assert alarm_streams.build("gsg", 2000).changes == (500, 1000)


def test_the_stationary_streams_are_deterministic_and_have_no_change():
    for key in ("spikes", "emg", "hetero", "t3", "ar1"):
        a, b = alarm_streams.build(key, 300), alarm_streams.build(key, 300)
        assert a.data == b.data and a.changes == () and len(a.data) == 300
    for key in ("spikes", "emg"):
        counts = [v for x, _ in alarm_streams.build(key, 300).data for v in x.values()]
        assert all(v == int(v) >= 0 for v in counts)  # (emg: no NaN cell, no fault)


def test_the_ar1_noise_has_the_stated_persistence():
    stream = alarm_streams.build("ar1", 20_000)
    X = np.array([[x[i] for i in range(10)] for x, _ in stream.data])
    noise = np.array([y for _, y in stream.data]) - alarm_streams.friedman(X)
    assert abs(np.corrcoef(noise[:-1], noise[1:])[0, 1] - alarm_streams.AR_PHI) < 0.02
    assert abs(noise.std() - 1.0) < 0.15


class _Learned:
    """A regressor that predicts how many samples it has learned."""

    def __init__(self) -> None:
        self.n = 0

    def predict_one(self, x):
        return float(self.n)

    def learn_one(self, x, y) -> None:
        self.n += 1


def test_the_oracle_restarts_at_each_change_before_predicting_it():
    """RestartedAt is a fresh model from each change point on: sample i's prediction (made
    before sample i is learned) counts the samples learned since the last change at or
    before i; the RMSE after a change covers the 150 and the 1000 samples from it."""
    model = memory_alarms.RestartedAt(_Learned, (3, 7))
    seen = []
    for _ in range(10):
        seen.append(model.predict_one({}))
        model.learn_one({}, 0.0)
    assert seen == [0, 1, 2, 0, 1, 2, 3, 0, 1, 2]
    errors = np.arange(2000, dtype=float)
    run = type("Run", (), {"errors": errors})()
    got = memory_alarms.after_changes(run, (10, 500))
    expected = [np.sqrt(np.mean(errors[c:c + w] ** 2)) for c in (10, 500) for w in (150, 1000)]
    assert got == expected


def _concept_free(kind: str, X: np.ndarray, concept: np.ndarray) -> np.ndarray:
    """river's noise-free targets of ``kind`` for each concept index (0: the first)."""
    x = [X[:, j] for j in range(10)]
    f0 = 10 * np.sin(np.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3] + 5 * x[4]
    if kind == "gsg":
        f1 = 10 * np.sin(np.pi * x[3] * x[4]) + 20 * (x[1] - 0.5) ** 2 + 10 * x[0] + 5 * x[2]
        f2 = 10 * np.sin(np.pi * x[1] * x[4]) + 20 * (x[3] - 0.5) ** 2 + 10 * x[2] + 5 * x[0]
        return np.choose(concept, [f0, f1, f2])
    out = f0.copy()  # lea: river's two regions, expanding with the concept
    for c in (1, 2, 3):
        at = concept == c
        region = alarm_streams.lea_region(X, c) & at
        low, high = region & (x[1] < 0.3), region & (x[1] > 0.7)
        out[low] = (10 * x[0] * x[1] + 20 * (x[2] - 0.5) + 10 * x[3] + 5 * x[4])[low]
        out[high] = (10 * np.cos(x[0] * x[1]) + 20 * (x[2] - 0.5) + np.exp(x[3])
                     + 5 * x[4] ** 2)[high]
    return out


def test_the_samples_a_change_alters_are_those_whose_target_left_the_old_concept():
    """``Stream.altered`` against river's own targets: an altered sample is within the noise
    (sd 1) of the concept after the last change and, where the two differ by more, not of
    the one before; every other sample after a change is of the one before. gsg's flags
    must reproduce river's own random bits in its transition windows."""
    for kind in ("gsg", "lea"):
        stream = alarm_streams.build(kind, 8000)
        X = np.array([[x[j] for j in range(10)] for x, _ in stream.data])
        y = np.array([t for _, t in stream.data])
        index = np.arange(len(y))
        concept = np.searchsorted(np.array(stream.changes), index, side="right")
        before = np.maximum(concept - 1, 0)
        new, old = _concept_free(kind, X, concept), _concept_free(kind, X, before)
        drawn = np.where(stream.altered, new, old)
        assert np.max(np.abs(y - drawn)) < 5.5  # (noise N(0, 1): 8000 draws stay within)
        apart = (np.abs(new - old) > 12) & (concept > 0)
        assert np.all(np.abs(y - np.where(stream.altered, old, new))[apart] > 6)
        assert not stream.altered[:stream.changes[0]].any()
    gra = alarm_streams.build("gra", 4000)
    assert np.array_equal(gra.altered, np.arange(4000) >= gra.changes[0])


def test_the_recorder_dates_each_judged_alarm_to_the_sample_that_raised_it():
    """An alarm refused at once counts where ``vetoed`` rises; one left to a second look
    counts where the look is set (``review_at``), and its later refusal adds nothing."""
    memory = type("Memory", (), {"vetoed": 0, "review_at": -1})()
    model, recorder = _Counter(), memory_alarms.CutRecorder()
    model._adaptive = memory
    for samples in range(1, 21):
        if samples == 4:
            memory.vetoed += 1  # (refused at once)
        if samples == 9:
            memory.review_at = 30  # (a second look owed at sample 30)
        if samples == 15:
            memory.review_at, memory.vetoed = -1, memory.vetoed + 1  # (the look refused)
        recorder(samples, model)
    assert recorder.alarm_indices == [3, 8] and recorder.refused == 2


def test_the_local_oracle_forgets_exactly_the_old_patterns_in_the_altered_region():
    from onlinesparse import SparseRBFRegressor

    stream = alarm_streams.build("lea", 1200)  # (changes at 300, 600, 900)
    model = memory_alarms.ForgetsAlteredAt(SparseRBFRegressor, stream.changes, delay=15)
    X = np.array([[x[j] for j in range(10)] for x, _ in stream.data])
    for x, y in stream.data[:615]:
        model.learn_one(x, y)
    # (the window, of 1000, holds every sample learned but those forgotten 15 samples
    # after each change: the ones before it whose target the change alters)
    first = alarm_streams.lea_altered(X[:300], 1)
    second = alarm_streams.lea_altered(X[:600], 2) & ~np.r_[first, np.zeros(300, bool)]
    assert first.sum() > 0 and second.sum() > 0
    ridge = model.model.model
    assert ridge.n_stored == 615 - int(first.sum()) - int(second.sum())
    assert model.model.n_memory_cuts == 0


def test_the_local_oracles_raw_inputs_stay_those_of_the_stored_patterns():
    """Through the window's slide (1000 patterns) and the forgetting 15 samples after each
    change, the raw inputs the oracle keeps are the stored patterns', in order: each
    stored (scaled) row is the one the scaler made of that raw input when it was learned."""
    from onlinesparse import SparseRBFRegressor

    stream = alarm_streams.build("lea", 1600)  # (changes at 400, 800, 1200)
    model = memory_alarms.ForgetsAlteredAt(SparseRBFRegressor, stream.changes, delay=15)
    scaled = {}
    for x, y in stream.data[:1300]:
        model.learn_one(x, y)
        scaled[tuple(x[k] for k in sorted(x))] = model.scaler.transform_one(x)
    ridge, names = model.model.model, model.model._features.names
    assert model.seen == 1300 and ridge.n_stored == len(model.raw) < 1000
    expected = np.array([[scaled[tuple(r)][n] for n in names] for r in model.raw])
    np.testing.assert_array_equal(ridge.stored_inputs(), expected)
