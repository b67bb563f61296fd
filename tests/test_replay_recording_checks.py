"""Feature checks that tell spike counts from codes, and recording checks made on the rows as
they stream (stuck channels, duplicated rows, timestamps, missing values), said once."""

import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.datasets import make_motor_cortex_session
from onlinesparse.replay.check_report import check_lines
from onlinesparse.replay.checks import corrupt_column_hint, feature_warnings, fold_warnings
from onlinesparse.replay.cli import main
from onlinesparse.replay.runner import ReplayConfig, run_replay
from onlinesparse.replay.stream_checks import RecordingChecks, stuck_length

STUCK = ("n17", 2500, 3999)  # a channel at 0 for 1500 rows, after having fired
DUPLICATE = 3001  # a copy of row 3000, its time stamp included
REPEATED_TIME = 4500  # a row whose time stamp is the row before's
NAN_CELLS = ((100, "n05"), (2200, "n40"), (2201, "n40"))


def faulty_session(n_neurons=80, n_trials=30):
    """A simulated recording as the neuroscientist's: spike counts of ``n_neurons`` channels
    in 10 ms bins, EMG and velocity targets, with the faults of the user study."""
    session = make_motor_cortex_session(n_neurons=n_neurons, n_muscles=2, n_trials=n_trials,
                                        seed=4)
    f = session.counts_frame().astype({n: float for n in session.neurons})
    name, lo, hi = STUCK
    f.loc[lo:hi, name] = 0.0
    for row, col in NAN_CELLS:
        f.loc[row, col] = np.nan
    f.loc[REPEATED_TIME, "time"] = f.loc[REPEATED_TIME - 1, "time"]
    f = pd.concat([f.iloc[:DUPLICATE], f.iloc[DUPLICATE - 1:]], ignore_index=True)
    return session, f


@pytest.fixture(scope="module")
def faulty_csv(tmp_path_factory):
    d = tmp_path_factory.mktemp("faulty")
    _, frame = faulty_session()
    frame.to_csv(d / "session.csv", index=False)
    return d / "session.csv", frame


# ---------------------------------------------------------------------------------------
# Counts are not codes


def test_eighty_spike_count_channels_are_not_codes_but_a_held_code_is():
    session, frame = faulty_session()
    rows = frame[session.neurons].to_numpy()[:2000]
    assert feature_warnings(session.neurons, ["emg_biceps"], rows) == []
    # A single count channel, not in an array, is not a code either: its values change often.
    for j in (0, 16, 79):
        assert feature_warnings([session.neurons[j]], ["y"], rows[:, [j]]) == []
    # A direction code held for each 170-row trial, next to the counts, is.
    direction = np.repeat(np.random.default_rng(0).permutation(8), 250)[:2000][:, None]
    warnings = feature_warnings(["direction", *session.neurons], ["y"],
                                np.hstack([direction, rows]))
    assert len(warnings) == 1 and "'direction' takes 8 integer values only" in warnings[0]


def test_a_code_hidden_in_a_block_of_counts_of_another_stem_is_still_found():
    rng = np.random.default_rng(1)
    counts = rng.poisson(2.0, size=(2000, 10)).astype(float)
    code = np.repeat(rng.integers(0, 4, 40), 50)[:, None].astype(float)
    names = [f"unit{k}" for k in range(5)] + ["cond"] + [f"unit{k}" for k in range(5, 10)]
    rows = np.hstack([counts[:, :5], code, counts[:, 5:]])
    (warning,) = feature_warnings(names, ["y"], rows)
    assert "'cond' takes 4 integer values" in warning


def test_many_warnings_fold_into_one_short_line():
    names = [f"trial_{k}" for k in range(80)]  # hostile: 80 columns named like identifiers
    warnings = [f"feature {n!r} is named like an identifier or a time stamp; …" for n in names]
    line = fold_warnings(warnings)
    assert line.count("\n") == 0 and len(line) < 250
    assert line.startswith("80 features look wrong as inputs") and "(+72)" in line
    assert fold_warnings([]) is None and fold_warnings(warnings[:1]) == warnings[0]


# ---------------------------------------------------------------------------------------
# Recording checks on the stream


def _check(frame, chunk, names, time="time"):
    checks = RecordingChecks(names, len(frame), time)
    values, times = frame[names].to_numpy(float), frame[time].to_numpy(float)
    for lo in range(0, len(frame), chunk):
        checks.update(np.arange(lo, min(lo + chunk, len(frame))), values[lo:lo + chunk],
                      times[lo:lo + chunk])
    return checks.as_dict()


@pytest.mark.parametrize("chunk", [7, 999, 10_000])
def test_stream_checks_find_each_fault_at_its_rows_at_any_chunk_size(faulty_csv, chunk):
    _, frame = faulty_csv
    names = [c for c in frame.columns if c != "time"]
    found = _check(frame, chunk, names)
    assert found["stuck_min_rows"] == stuck_length(len(frame)) == 1000
    (stuck,) = found["stuck"]
    assert stuck["column"] == "n17" and stuck["value"] == 0
    assert stuck["rows"][0] <= STUCK[1] and STUCK[2] <= stuck["rows"][1] < STUCK[2] + 30
    assert found["duplicated_rows"] == {"count": 1, "ranges": [[DUPLICATE, DUPLICATE]]}
    # The copy repeats its time too; the repeated time stamp shifted one row by the copy.
    assert found["repeated_times"]["ranges"] == [[DUPLICATE, DUPLICATE],
                                                 [REPEATED_TIME + 1, REPEATED_TIME + 1]]
    assert found["times_going_back"]["count"] == 0
    assert found["missing_values"] == {"n05": 1, "n40": 2}


def test_stuck_needs_a_long_stretch_after_varying_and_constant_columns_are_told_apart():
    n = 30_000
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"time": np.arange(n) * 0.01, "quiet": rng.poisson(0.3, n),
                          "dead": np.zeros(n), "late": np.r_[np.zeros(20_000),
                                                              rng.normal(size=10_000)],
                          "stuck_end": np.r_[rng.normal(size=25_000), np.full(5_000, 2.5)]})
    frame.loc[10_000:11_400, "quiet"] = 0  # 1401 rows < max(1000, 5 % of 30000) = 1500
    found = _check(frame, 4096, ["quiet", "dead", "late", "stuck_end"])
    assert found["stuck_min_rows"] == 1500
    assert [(s["column"], s["rows"]) for s in found["stuck"]] == [("stuck_end",
                                                                   [25_000, 29_999])]
    assert found["constant"] == ["dead"]  # 'late' was constant before it varied: not stuck


def test_time_ranges_are_merged_and_capped(tmp_path):
    n = 5000
    t = np.zeros(n)  # hostile: a time column that never moves
    t[::2] = np.arange(0, n, 2)  # ... or goes back every other row
    checks = RecordingChecks(["x"], n, "time")
    checks.update(np.arange(n), np.random.default_rng(0).normal(size=(n, 1)), t)
    found = checks.as_dict()
    assert found["times_going_back"]["count"] == n // 2 - 1
    assert len(found["times_going_back"]["ranges"]) == 100  # capped; the count goes on
    flat = np.zeros(n)
    checks = RecordingChecks(["x"], n, "time")
    checks.update(np.arange(n), np.ones((n, 1)), flat)
    found = checks.as_dict()
    assert found["repeated_times"] == {"count": n - 1, "ranges": [[1, n - 1]]}
    assert found["duplicated_rows"] == {"count": n - 1, "ranges": [[1, n - 1]]}
    assert len(check_lines(found)) == 3  # constant, duplicated rows, repeated times


def test_the_console_says_each_kind_once_and_the_outputs_list_everything(faulty_csv,
                                                                         tmp_path, capsys):
    path, frame = faulty_csv
    out = tmp_path / "out"
    rc = main(["replay", str(path), "--target", "emg_deltoid_ant", "--target", "vel_x",
               "--features", "n*", "--time", "time", "--model", "linear", "--workers", "1",
               "--out", str(out)])
    assert rc == 0
    err = capsys.readouterr().err.splitlines()
    assert not [line for line in err if line.startswith("warning:")]  # counts are no codes
    checks = [line for line in err if line.startswith("check:")]
    assert len(checks) == 4, checks
    assert any("1 stuck channel" in c and "n17 = 0 over rows 2,5" in c for c in checks)
    assert any(f"1 duplicated row (every value equal to the row before): row {DUPLICATE:,}"
               in c for c in checks)
    assert any(f"time column 'time': 2 rows with the same time as the row before: rows "
               f"{DUPLICATE:,}, {REPEATED_TIME + 1:,}" in c for c in checks)
    assert any("3 missing values: n40 2, n05 1; 3 rows predicted with a feature imputed" in c
               for c in checks)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["recording_checks"]["stuck"][0]["column"] == "n17"
    assert metrics["targets"]["vel_x"]["recording_checks"]["stuck"] == []
    page = (out / "report.html").read_text()
    assert "Recording checks" in page and "n17 = 0 over rows" in page


def test_quiet_leaves_out_warnings_and_checks_but_not_errors(faulty_csv, tmp_path, capsys):
    path, _ = faulty_csv
    rc = main(["replay", str(path), "--target", "emg_deltoid_ant", "--model", "linear",
               "--workers", "1", "--quiet", "--warmup", "100000"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "warning:" not in err and "check:" not in err and "note:" not in err
    assert "onlinesparse: error: emg_deltoid_ant: nothing was scored" in err


def test_checks_resume_where_the_checkpoint_stopped(faulty_csv, tmp_path):
    path, _ = faulty_csv
    common = dict(targets=["emg_deltoid_ant"], features=["n*"], time="time", model="linear",
                  workers=1, progress=False, chunksize=700)
    whole = run_replay(ReplayConfig(path, **common)).results[0].metrics["recording_checks"]
    ck = tmp_path / "ck.pkl"
    run_replay(ReplayConfig(path, checkpoint=ck, max_rows=2700, **common))
    resumed = run_replay(ReplayConfig(path, checkpoint=ck, resume=True, **common))
    assert resumed.results[0].metrics["recording_checks"] == whole


def test_a_target_of_text_is_named_as_a_target_not_as_an_input():
    reasons = ["unparseable value '0.438mV' in column 'emg_0'"] * 3
    said = corrupt_column_hint(reasons, ["emg_0"])
    assert "a target must hold numbers" in said and "--features" not in said
    assert "--features" in corrupt_column_hint(reasons, ["velocity"])


def test_behaviour_beside_spike_counts_is_named_unless_it_is_a_named_sibling():
    # A neuroscientist replaying --target velocity had the EMG envelopes and the
    # simulator's latent velocity decoded from, without a word.
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, (500, 10)).astype(float)
    behaviour = rng.normal(size=(500, 3))
    names = [f"n{j:02d}" for j in range(10)] + ["emg_0", "emg_1", "latent_vx"]
    rows = np.column_stack([counts, behaviour])
    said = feature_warnings(names, ["velocity"], rows)
    flagged = sorted(w.split("'")[1] for w in said if "fractional numbers beside" in w)
    assert flagged == ["emg_0", "emg_1", "latent_vx"]
    # emg_1 beside target emg_0 is named once, as the sibling it is.
    said = feature_warnings([n for n in names if n != "emg_0"], ["emg_0"],
                            np.delete(rows, 10, axis=1))
    assert [w for w in said if "emg_1" in w and "fractional" in w] == []
    assert any("named like target 'emg_0'" in w for w in said)
    # Without an array of counts (a robot's joints), fractional inputs are what inputs are.
    assert feature_warnings(["q1", "q2", "qd1"], ["tau1"], rng.normal(size=(500, 3))) == []
    assert "fractional numbers beside count channels: emg_0, emg_1, latent_vx" in \
        fold_warnings(feature_warnings(names, ["velocity"], rows))
