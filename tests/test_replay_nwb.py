"""NWB recordings: series and binned spike times on one grid, through the same replay."""

import datetime
import json

import numpy as np
import pandas as pd
import pytest

pynwb = pytest.importorskip("pynwb")  # the 'test' extra installs it: CI runs these

from pynwb import NWBHDF5IO, NWBFile, TimeSeries  # noqa: E402
from pynwb.behavior import BehavioralTimeSeries  # noqa: E402

from onlinesparse.datasets import make_motor_cortex_session  # noqa: E402
from onlinesparse.replay.cli import main  # noqa: E402
from onlinesparse.replay.errors import UsageError  # noqa: E402
from onlinesparse.replay.reader import open_recording  # noqa: E402
from onlinesparse.replay.runner import ReplayConfig, run_replay  # noqa: E402

START = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)


def _nwb(**kw):
    return NWBFile(session_description="test", identifier="test", session_start_time=START,
                   **kw)


def _write(nwb, path):
    with NWBHDF5IO(str(path), "w") as io:
        io.write(nwb)
    return path


def _behaviour(nwb, series):
    module = nwb.create_processing_module("behavior", "behaviour")
    container = BehavioralTimeSeries(name="BehavioralTimeSeries")
    for ts in series:
        container.add_timeseries(ts)
    module.add(container)


def session_nwb(session, path, dt):
    """The simulated session as NWB: spike times in a units table (each spike inside the bin
    of its count, the bin ending at the frame's row time), EMG and velocity as behaviour."""
    nwb = _nwb()
    t = session.frame["time"].to_numpy()
    rng = np.random.default_rng(0)
    for j in range(len(session.neurons)):
        counts = session.spikes[:, j]
        rows = np.repeat(np.arange(len(counts)), counts)[counts[0]:]  # row 0 has no bin
        nwb.add_unit(spike_times=np.sort(t[rows] - dt * rng.uniform(0.05, 0.95, len(rows))))
    emg = np.column_stack([session.frame[m] for m in session.muscles])
    _behaviour(nwb, [TimeSeries(name="emg", data=emg, unit="a.u.", timestamps=t),
                     TimeSeries(name="velocity", data=session.velocity, unit="m/s",
                                starting_time=0.0, rate=1 / dt)])
    return _write(nwb, path)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    d = tmp_path_factory.mktemp("nwb")
    session = make_motor_cortex_session(n_neurons=12, n_muscles=2, n_trials=12, seed=3)
    dt = session.bin_ms / 1000
    session_nwb(session, d / "session.nwb", dt)
    # The same data as a table: bin k of the NWB grid ends at row k + 1 of the frame.
    f = session.counts_frame().iloc[1:].reset_index(drop=True)
    table = pd.DataFrame({"time": f["time"]})
    for j, n in enumerate(session.neurons):
        table[f"units_{j}"] = f[n].astype(float)
    for k, m in enumerate(session.muscles):
        table[f"emg_{k}"] = f[m]
    table["velocity_0"], table["velocity_1"] = f["vel_x"], f["vel_y"]
    table.to_parquet(d / "session.parquet", index=False)
    return d, session, table


def test_the_grid_bins_spikes_and_samples_series_at_each_bins_end(simulated):
    d, session, table = simulated
    rec = open_recording(d / "session.nwb", bin_ms=session.bin_ms)
    assert rec.format == "nwb" and rec.n_rows == len(table) == 12 * 170 - 1
    assert set(rec.columns) == set(table.columns)
    cols = rec.select(["emg"])  # a series' name stands for its channels
    assert cols.targets == ["emg_0", "emg_1"] and cols.time == "time"
    assert cols.features == [f"units_{j}" for j in range(12)]  # behaviour is not a feature
    chunks = list(rec.iter_chunks(cols, "emg_1", chunksize=333))
    np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), table[cols.features])
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), table["emg_1"])
    np.testing.assert_array_equal(np.concatenate([c.time for c in chunks]), table["time"])
    assert rec.describe_row(0) == "row 0 (bin ending at 0.010 s)"


def test_nwb_and_parquet_of_one_session_replay_identically(simulated, tmp_path):
    d, session, _ = simulated
    outs = {}
    for name in ("session.nwb", "session.parquet"):
        out = tmp_path / name.split(".")[1]
        cfg = ReplayConfig(d / name, ["emg_0", "velocity_1"], time="time", model="rbf",
                           features=[f"units_{j}" for j in range(12)],
                           model_params={"max_basis": 10, "window_size": 200}, warmup=50,
                           workers=1, progress=False, out=out, report=False,
                           bin_ms=session.bin_ms if name.endswith("nwb") else None)
        assert run_replay(cfg).exit_code == 0
        outs[name] = out
    a, b = (pd.read_parquet(o / "predictions.parquet") for o in outs.values())
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    ma, mb = (json.loads((o / "metrics.json").read_text())["targets"] for o in outs.values())
    for target in ("emg_0", "velocity_1"):
        assert ma[target]["nmse"] == mb[target]["nmse"] and ma[target]["n_scored"] > 1500


def test_rates_are_aligned_by_linear_interpolation_and_nan_is_missing(tmp_path):
    nwb = _nwb()
    t = np.arange(0, 1.0, 0.004)  # 250 Hz, faster than the bins
    v = 2.0 * t
    v[98] = np.nan  # one lost sample (at 0.392 s, next to the bin ending at 0.39 s)
    nwb.add_acquisition(TimeSeries(name="lfp", data=np.sin(7 * t), unit="V", timestamps=t))
    _behaviour(nwb, [TimeSeries(name="ramp", data=v, unit="m", timestamps=t),
                     TimeSeries(name="slow", data=np.arange(11.0), unit="m",
                                starting_time=0.25, rate=20.0)])
    path = _write(nwb, tmp_path / "rates.nwb")
    rec = open_recording(path, bin_ms=30)
    cols = rec.select(["ramp", "slow"], ["lfp"])
    (chunk,) = rec.iter_chunks(cols, "ramp", 1000, missing="impute")
    time = chunk.time
    np.testing.assert_allclose(time, 0.03 * np.arange(1, len(time) + 1))
    near = np.abs(time - t[98]) < 0.004  # the bins next to the lost sample
    np.testing.assert_allclose(chunk.y[~near & ~np.isnan(chunk.y)], 2 * time[~near & ~np.isnan(
        chunk.y)], rtol=1e-12)
    assert np.isnan(chunk.y[near]).all() and near.sum() == 1
    (slow,) = rec.iter_chunks(cols, "slow", 1000, missing="impute")
    inside = (slow.time >= 0.25) & (slow.time <= 0.75 + 1e-9)
    np.testing.assert_allclose(slow.y[inside], (slow.time[inside] - 0.25) * 20, atol=1e-9)
    assert np.isnan(slow.y[~inside]).all()  # not extrapolated


def test_a_units_table_with_a_silent_unit_and_unsorted_spikes(tmp_path):
    nwb = _nwb()
    nwb.add_unit(spike_times=[0.105, 0.005, 0.019, 0.041])  # out of order
    nwb.add_unit(spike_times=[])  # never fires: a column of zeros
    nwb.add_unit(spike_times=[0.02, np.nan, 0.0999])
    path = _write(nwb, tmp_path / "units.nwb")
    rec = open_recording(path)  # 20 ms bins
    assert rec.columns == ["time", "units_0", "units_1", "units_2"]
    assert any("not in order" in n for n in rec.notes)
    assert any("1 spike times that are not finite" in n for n in rec.notes)
    cols = rec.select(["units_2"], ["units_0", "units_1"])
    (chunk,) = rec.iter_chunks(cols, "units_2", 100)
    np.testing.assert_array_equal(chunk.X[:, 0], [2, 1, 0, 0, 1])  # bins from 0.005 s, the
    # last spike in the last bin
    np.testing.assert_array_equal(chunk.X[:, 1], 0)
    np.testing.assert_array_equal(chunk.y, [1, 0, 0, 0, 1])


def _hdf5_not_nwb(path):
    import h5py

    with h5py.File(path, "w") as f:
        f["x"] = np.arange(10)
    return path


def _truncated(path, tmp_path):
    nwb = _nwb()
    nwb.add_acquisition(TimeSeries(name="x", data=np.arange(1000.0), unit="V", rate=10.0))
    whole = _write(nwb, tmp_path / "whole.nwb").read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    return path


def _mismatched(path):
    import h5py

    nwb = _nwb()
    nwb.add_acquisition(TimeSeries(name="x", data=np.arange(10.0), unit="V",
                                   timestamps=np.arange(10.0)))
    _write(nwb, path)
    with h5py.File(path, "a") as f:  # a writer that lost a sample of the data
        data = f["acquisition/x/data"][:]
        del f["acquisition/x/data"]
        f["acquisition/x/data"] = data[:9]
    return path


def _only(path, *series):
    nwb = _nwb()
    for ts in series:
        nwb.add_acquisition(ts)
    return _write(nwb, path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p, d: _only(p), "holds no numeric TimeSeries (in acquisition or processing) "
                                "and no spikes in a units table"),
        (lambda p, d: _hdf5_not_nwb(p), "is an HDF5 file but not NWB"),
        (lambda p, d: p.write_bytes(b"not hdf5 at all") and p, "cannot read bad.nwb as NWB"),
        (lambda p, d: _truncated(p, d), "cannot read bad.nwb as NWB"),
        (lambda p, d: _mismatched(p), "series 'x' has 9 samples but 10 timestamps"),
        (lambda p, d: _only(p, TimeSeries(name="x", data=np.ones(3), unit="V",
                                          timestamps=[0.0, 2.0, 1.0])),
         "the timestamps of series 'x' do not increase at sample 2"),
        (lambda p, d: _units_without_spikes(p), "no spikes in a units table"),
    ],
    ids=["no-series", "not-nwb", "not-hdf5", "truncated", "mismatched-lengths",
         "timestamps-back", "units-without-spikes"],
)
def test_hostile_nwb_files_are_refused_by_name_without_a_traceback(tmp_path, capsys, make,
                                                                   message):
    path = make(tmp_path / "bad.nwb", tmp_path)
    with pytest.raises(UsageError, match="."):
        open_recording(path)
    assert main(["replay", str(path), "--target", "x", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _units_without_spikes(path):
    nwb = _nwb()
    nwb.add_unit(spike_times=[])
    return _write(nwb, path)


def test_bin_ms_is_for_nwb_only_and_pynwb_missing_is_said(tmp_path, monkeypatch, capsys):
    (tmp_path / "r.csv").write_text("x,y\n1,2\n")
    with pytest.raises(UsageError, match="--bin-ms applies to NWB recordings only"):
        open_recording(tmp_path / "r.csv", bin_ms=10)
    import sys

    path = _only(tmp_path / "s.nwb", TimeSeries(name="x", data=np.ones(5), unit="V", rate=1.0))
    monkeypatch.setitem(sys.modules, "pynwb", None)  # as if it were not installed
    assert main(["replay", str(path), "--target", "x"]) == 2
    assert "needs pynwb, which is not installed: pip install 'onlinesparse[nwb]'" in \
        capsys.readouterr().err


def test_nwb_replays_resumes_and_reports_like_any_recording(simulated, tmp_path, capsys):
    d, session, _ = simulated
    args = ["replay", str(d / "session.nwb"), "--target", "velocity", "--bin-ms", "10",
            "--model", "linear", "--workers", "1", "--checkpoint", str(tmp_path / "ck.pkl")]
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    out = capsys.readouterr()
    assert "features (12): units_0" in out.out and "velocity_1" in out.out
    assert "bins of 10 ms" in out.err
    assert main([*args, "--out", str(tmp_path / "part"), "--max-rows", "900"]) == 0
    assert main([*args, "--out", str(tmp_path / "part"), "--resume"]) == 0
    whole, part = (pd.read_parquet(tmp_path / o / "predictions.parquet")
                   for o in ("whole", "part"))
    pd.testing.assert_frame_equal(whole, part)
    capsys.readouterr()
    assert main([*args[:-2], "--bin-ms", "20", "--checkpoint", str(tmp_path / "ck.pkl"),
                 "--resume"]) == 2  # another grid: another recording's rows
    assert "bin_ms" in capsys.readouterr().err
    page = (tmp_path / "whole" / "report.html").read_text()
    assert "bins of 10 ms" in page
