"""One recording, any file format: bit-identical values, predictions and metrics.

A user replayed the same data from CSV and from Parquet and got nMSE 0.09376 against 0.09483.
The paths parted at float32 columns: Parquet widened the float32 exactly while the CSV held
the float32's shortest decimal, a difference in the ninth digit that the sparse model's
pruning decisions amplified.
"""

import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay.reader import open_recording
from onlinesparse.replay.runner import ReplayConfig, run_replay
from onlinesparse.replay.values import widen_like_text

N = 1200


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(5)
    counts = rng.poisson(1.5, size=(N, 6))
    drive = counts @ rng.normal(size=6) / 3
    f = pd.DataFrame({"stamp": pd.date_range("2024-05-01 10:00", periods=N, freq="20ms")})
    for k in range(6):
        f[f"n{k}"] = counts[:, k]  # spike counts as integers
    f["lfp"] = np.sin(np.arange(N) / 7.0) * np.pi + rng.normal(size=N) / 3  # many digits
    f["lfp32"] = (f["lfp"] * 0.7 + rng.normal(size=N)).astype(np.float32)  # single precision
    f["emg"] = drive + 0.3 * f["lfp"] - 0.2 * f["lfp32"].astype(float) + 0.1 * rng.normal(
        size=N)
    f.loc[37, "lfp"] = np.nan  # a missing value
    f.loc[400, "n3"] = np.nan  # a count column with a gap (stored as float from here)
    return f


def _write_all(frame, d):
    frame.to_csv(d / "r.csv", index=False)
    frame.to_parquet(d / "r.parquet", index=False, row_group_size=300)
    return [d / "r.csv", d / "r.parquet"]


def test_csv_and_parquet_give_the_same_float64_values(frame, tmp_path):
    values = {}
    for path in _write_all(frame, tmp_path):
        rec = open_recording(path)
        cols = rec.select(["emg"], None, "stamp")
        chunks = list(rec.iter_chunks(cols, "emg", chunksize=257, missing="impute"))
        values[path.suffix] = [np.concatenate([getattr(c, k) for c in chunks])
                               for k in ("X", "y", "time")]
    for a, b in zip(values[".csv"], values[".parquet"], strict=True):
        np.testing.assert_array_equal(a, b)  # NaN where NaN, every bit the same elsewhere
    lfp32 = values[".parquet"][0][:, -1]
    assert lfp32[0] == float(str(frame["lfp32"][0]))  # the decimal that the CSV holds


@pytest.mark.parametrize("missing", ["impute", "drop"])
def test_csv_and_parquet_replay_bit_for_bit_alike(frame, tmp_path, missing):
    outputs = {}
    for path in _write_all(frame, tmp_path):
        out = tmp_path / f"out-{path.suffix[1:]}"
        cfg = ReplayConfig(path, ["emg"], time="stamp", model="rbf",
                           model_params={"max_basis": 15, "window_size": 200}, warmup=50,
                           workers=1, progress=False, out=out, report=False, missing=missing,
                           chunksize=500 if path.suffix == ".csv" else 10_000)
        assert run_replay(cfg).exit_code == 0
        outputs[path.suffix] = out
    pred = {k: pd.read_parquet(o / "predictions.parquet") for k, o in outputs.items()}
    pd.testing.assert_frame_equal(pred[".csv"], pred[".parquet"], check_exact=True)
    metrics = {k: json.loads((o / "metrics.json").read_text())["targets"]["emg"]
               for k, o in outputs.items()}
    for key in ("mae", "rmse", "nmse", "r2", "coverage", "n_scored", "samples", "corrupt_rows",
                "imputed_rows", "recording_checks"):
        assert metrics[".csv"][key] == metrics[".parquet"][key], key
    assert metrics[".csv"]["imputed_rows"] == (2 if missing == "impute" else 0)


def test_single_precision_widens_to_its_shortest_decimal_exactly():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    single = np.concatenate([bits.view(np.float32), (rng.normal(size=100_000) * 30).astype(
        np.float32), np.array([0.1, -21.335938, 1e-45, 3.4e38, 0, -0.0, np.inf, np.nan],
                              dtype=np.float32)])
    got = widen_like_text(single)
    want = single.astype(str).astype(np.float64)  # NumPy's shortest round-trip decimal
    np.testing.assert_array_equal(got, want)
    finite = np.isfinite(single)
    np.testing.assert_array_equal(got[finite].astype(np.float32), single[finite])
    half = rng.normal(size=20_000).astype(np.float16)
    np.testing.assert_array_equal(widen_like_text(half), half.astype(str).astype(np.float64))
