"""The simulated motor-cortex session: deterministic, with a ground truth that holds."""

import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.datasets import make_motor_cortex_session
from onlinesparse.replay.reader import open_recording


@pytest.fixture(scope="module")
def session():
    return make_motor_cortex_session(n_neurons=24, n_muscles=4, n_trials=16, seed=3)


def test_same_seed_same_recording_other_seed_other_recording(session):
    again = make_motor_cortex_session(n_neurons=24, n_muscles=4, n_trials=16, seed=3)
    pd.testing.assert_frame_equal(session.frame, again.frame)
    assert session.relevant == again.relevant
    other = make_motor_cortex_session(n_neurons=24, n_muscles=4, n_trials=16, seed=4)
    assert not np.allclose(session.frame[session.muscles], other.frame[other.muscles])


def test_layout_binning_and_ground_truth_shape(session):
    f = session.frame
    assert len(f) == 16 * 170  # 1.7 s trials in 10 ms bins
    np.testing.assert_allclose(np.diff(f["time"]), 0.01)
    assert sorted(set(f["direction"])) == [0.0, 45.0, 90.0, 135.0, 180.0, 225.0, 270.0, 315.0]
    assert (f[session.neurons] >= 0).all().all()
    assert sum(session.nonlinear.values()) == 2
    for muscle, neurons in session.relevant.items():
        assert 3 <= len(neurons) <= 7
        assert set(neurons) <= set(session.neurons)
        assert set(session.weights[muscle]) == set(neurons)


def _r2(X, y):
    X1 = np.column_stack([X, np.ones(len(y))])
    residual = y - X1 @ np.linalg.lstsq(X1, y, rcond=None)[0]
    return 1 - residual.var() / y.var()


def test_emg_is_explained_by_its_relevant_neurons_and_not_by_others(session):
    f = session.frame
    rng = np.random.default_rng(0)
    for muscle, neurons in session.relevant.items():
        y = f[muscle].to_numpy()
        r2_true = _r2(f[neurons].to_numpy(), y)
        others = [n for n in session.neurons if n not in neurons]
        decoy = list(rng.choice(others, size=len(neurons), replace=False))
        r2_decoy = _r2(f[decoy].to_numpy(), y)
        if session.nonlinear[muscle]:
            assert 0.75 < r2_true < 0.95  # mildly nonlinear: a linear fit misses some
        else:
            assert r2_true > 0.93  # linear plus 20 % noise
        assert r2_decoy < r2_true - 0.1


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".npz"])
def test_written_recording_reads_back_with_its_truth(session, tmp_path, suffix):
    path = session.write(tmp_path / f"rec{suffix}")
    truth = json.loads((tmp_path / "rec.truth.json").read_text())
    assert truth["relevant"] == session.relevant
    rec = open_recording(path)
    assert rec.columns == list(session.frame.columns)
    assert rec.n_rows == len(session.frame)
    muscle = session.muscles[0]
    cols = rec.select([muscle], session.neurons, "time")
    chunk = next(rec.iter_chunks(cols, muscle, chunksize=100_000))
    rtol = 1e-5 if suffix == ".csv" else 0  # CSV is written with 6 significant digits
    np.testing.assert_allclose(chunk.y, session.frame[muscle], rtol=rtol)
    np.testing.assert_allclose(chunk.X, session.frame[session.neurons], rtol=rtol, atol=1e-9)
