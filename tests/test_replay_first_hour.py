"""What a new user meets first in ``onlinesparse replay``: ISO-8601 time columns under pandas 3,
the features printed and recorded, warnings about suspicious features, a non-zero exit when
nothing was scored, and latency measured after the model's warm-up."""

import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay.cli import main


@pytest.fixture
def iso_csv(tmp_path):
    rng = np.random.default_rng(3)
    n = 300
    x = rng.normal(size=n)
    frame = pd.DataFrame({
        "stamp": pd.date_range("2024-03-01", periods=n, freq="10s").strftime(
            "%Y-%m-%dT%H:%M:%S"),
        "x": x,
        "y": 2.0 * x + 0.1 * rng.normal(size=n),
    })
    path = tmp_path / "iso.csv"
    frame.to_csv(path, index=False)
    return path


def test_an_iso_8601_text_time_column_replays_under_the_installed_pandas(iso_csv, tmp_path,
                                                                         capsys):
    out = tmp_path / "out"
    rc = main(["replay", str(iso_csv), "--target", "y", "--time", "stamp", "--model", "lin1",
               "--warmup", "20", "--out", str(out), "--no-report", "--workers", "1"])
    assert rc == 0, capsys.readouterr().err
    pred = pd.read_parquet(out / "predictions.parquet")
    assert len(pred) == 300
    np.testing.assert_allclose(np.diff(pred["time"]), 10.0)  # seconds between the stamps


@pytest.fixture
def emg_csv(tmp_path):
    """A recording with the traps of the issue: sibling targets, a trial counter, a code."""
    rng = np.random.default_rng(11)
    n = 400
    a = rng.normal(size=n)
    frame = pd.DataFrame({
        "t": np.arange(n) * 0.01,
        "n1": a,
        "n2": rng.normal(size=n),
        "trial": np.repeat(np.arange(8), n // 8),
        # A direction code is held for a trial (not changed every row as counts are).
        "direction": np.repeat([3, 0, 5, 1, 7, 2, 6, 4], n // 8),
        "emg_biceps": 2.0 * a + 0.1 * rng.normal(size=n),
        "emg_triceps": -a + 0.1 * rng.normal(size=n),
    })
    path = tmp_path / "emg.csv"
    frame.to_csv(path, index=False)
    return path


def _replay(path, out, *extra):
    return main(["replay", str(path), "--target", "emg_biceps", "--time", "t", "--model",
                 "lin1", "--workers", "1", "--out", str(out), *extra])


def test_the_features_are_printed_recorded_and_suspicious_ones_named(emg_csv, tmp_path,
                                                                     capsys):
    out = tmp_path / "out"
    assert _replay(emg_csv, out) == 0
    std = capsys.readouterr()
    assert "features (5): n1, n2, trial, direction, emg_triceps" in std.out
    # One line for all the feature warnings, grouped by what is wrong.
    (line,) = [w for w in std.err.splitlines() if w.startswith("warning:")]
    assert "3 features look wrong as inputs: named like a target: emg_triceps; " \
           "identifiers or time stamps: trial; codes: direction" in line
    assert "n1" not in line and "n2" not in line  # real measurements: no warning
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["features"] == ["n1", "n2", "trial", "direction", "emg_triceps"]
    warnings = metrics["warnings"]  # each in full
    assert any("emg_triceps named like target 'emg_biceps'" in w for w in warnings)
    assert any("'trial' is named like an identifier" in w for w in warnings)
    assert any("'direction' takes 8 integer values only" in w for w in warnings)
    assert not any("'time'" in w for w in warnings)  # given as --time, so not a feature
    assert metrics["command"].startswith("onlinesparse replay ")
    page = (out / "report.html").read_text()
    assert "n1, n2, trial, direction, emg_triceps" in page
    assert metrics["command"].replace("'", "&#x27;") in page


def test_chosen_features_give_no_warning(emg_csv, tmp_path, capsys):
    assert _replay(emg_csv, tmp_path / "o", "--features", "n1,n2", "--no-report") == 0
    std = capsys.readouterr()
    assert "features (2): n1, n2" in std.out and "warning" not in std.err


def test_nothing_scored_exits_non_zero_and_names_the_column_that_broke_every_row(tmp_path,
                                                                                 capsys):
    frame = pd.DataFrame({"Time": pd.date_range("2022-03-20", periods=50, freq="h").astype(str),
                          "y": np.linspace(0, 1, 50)})
    frame.to_csv(tmp_path / "flow.csv", index=False)
    rc = main(["replay", str(tmp_path / "flow.csv"), "--target", "y", "--model", "linear",
               "--workers", "1"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "nothing was scored: all 50 rows of flow.csv are corrupt; column 'Time' made every " \
           "row corrupt" in err
    assert "give it as --time" in err
    assert "'Time' has no number in the first 50 rows" in err  # said before the replay too


def test_a_warm_up_longer_than_the_recording_is_a_failure_that_says_so(emg_csv, capsys):
    rc = main(["replay", str(emg_csv), "--target", "emg_biceps", "--features", "n1",
               "--model", "linear", "--workers", "1", "--warmup", "1000"])
    assert rc == 1
    assert "all 400 samples were in the warm-up (--warmup 1000)" in capsys.readouterr().err


class FirstCallCost:
    """A model whose code, like numba's, costs something the first time it runs in a process:
    the class records which instance ran first."""

    calls: list[int] = []

    def __init__(self):
        self.n = 0

    def clone(self):
        return FirstCallCost()

    def learn_one(self, x, y):
        FirstCallCost.calls.append(id(self))
        self.n += 1

    def predict_one(self, x):
        return 0.0


def test_the_replay_warms_a_copy_of_the_model_before_timing_and_measures_cpu_and_deadline(
        emg_csv, tmp_path, monkeypatch, capsys):
    from onlinesparse.replay import models
    from onlinesparse.replay.runner import ReplayConfig, run_replay

    monkeypatch.setitem(models.MODELS, "first", models.ModelSpec(
        "first", f"{__name__}:FirstCallCost", "test"))
    FirstCallCost.calls.clear()
    cfg = ReplayConfig(emg_csv, ["emg_biceps"], features=["n1"], time="t", model="first",
                       standardize=False, warmup=10, workers=1, budget_us=1e-3)
    metrics = run_replay(cfg).results[0].metrics
    first = FirstCallCost.calls[0]
    replayed = max(set(FirstCallCost.calls), key=FirstCallCost.calls.count)
    assert first != replayed  # the first (costly) call was the throwaway copy's
    assert FirstCallCost.calls.count(replayed) == 400
    assert metrics["warm_up_s"] > 0
    for kind in ("latency_us", "cpu_us"):
        lat = metrics[kind]
        assert lat["n"] == 390 and 0 < lat["median"] <= lat["p99"] <= lat["max"]
    assert metrics["budget_us"] == 1e-3
    assert metrics["deadline_misses"] == 390  # nothing runs in a nanosecond


def test_the_summary_prints_cpu_time_worst_case_and_misses(emg_csv, tmp_path, capsys):
    assert _replay(emg_csv, tmp_path / "o", "--features", "n1", "--no-report",
                   "--budget-us", "0.001") == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("target"))
    for column in ("µs med", "µs p99", "µs max", "CPU med", "CPU p99", "CPU max", "misses",
                   "rows/s"):
        assert column in header
    assert "samples over the 0.001 µs budget" in out


def test_a_checkpoint_state_without_the_cpu_fields_resumes(emg_csv, tmp_path, monkeypatch):
    """A state pickled before the CPU timing existed (no cpu_latency, deadline_misses,
    window_* attributes) is completed on resume instead of failing mid-replay."""
    from onlinesparse.replay import target
    from onlinesparse.replay.runner import ReplayConfig, run_replay

    cfg = dict(targets=["emg_biceps"], features=["n1"], time="t", model="lin1", warmup=10,
               workers=1, checkpoint=tmp_path / "ck.pkl")
    assert run_replay(ReplayConfig(emg_csv, max_rows=200, **cfg)).exit_code == 0
    real_load = target.load_checkpoint

    def old_style(*args, **kwargs):
        state = real_load(*args, **kwargs)
        for name in ("cpu_latency", "deadline_misses", "window_wall", "window_cpu"):
            delattr(state, name)
        return state

    monkeypatch.setattr(target, "load_checkpoint", old_style)
    outcome = run_replay(ReplayConfig(emg_csv, resume=True, **cfg))
    assert outcome.exit_code == 0
    metrics = outcome.results[0].metrics
    assert metrics["n_scored"] == 390
    assert metrics["cpu_us"]["n"] == 200  # the samples after the resume


def test_a_time_column_left_among_the_features_is_pointed_to_time(emg_csv, capsys):
    from onlinesparse.replay.checks import feature_warnings

    rows = np.column_stack([np.arange(50) * 0.01, np.random.default_rng(1).normal(size=50)])
    (warning,) = feature_warnings(["t", "n1"], ["y"], rows)
    assert warning.startswith("feature 't' is named like the time: give it as --time")
