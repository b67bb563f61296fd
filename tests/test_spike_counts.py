"""The simulated spike-count recording (onlinesparse.datasets.spike_counts): deterministic,
with the faults and the lags its docstring promises."""

import numpy as np
import pandas as pd
import pytest

from onlinesparse.datasets import make_spike_count_session

ROWS, CHANNELS = 6000, 60


@pytest.fixture(scope="module")
def frame():
    return make_spike_count_session(n_channels=CHANNELS, n_rows=ROWS, seed=5)


def test_same_seed_same_recording_other_seed_other_recording(frame):
    again = make_spike_count_session(n_channels=CHANNELS, n_rows=ROWS, seed=5)
    pd.testing.assert_frame_equal(frame, again)
    assert frame.attrs["truth"] == again.attrs["truth"]
    other = make_spike_count_session(n_channels=CHANNELS, n_rows=ROWS, seed=6)
    assert not np.allclose(frame["velocity"], other["velocity"])


def test_layout_counts_and_bins(frame):
    channels = [f"n{i:02d}" for i in range(CHANNELS)]
    assert list(frame.columns) == ["time", *channels, "emg_0", "emg_1", "velocity",
                                   "latent_vx", "latent_vy"]
    assert frame.shape == (ROWS, CHANNELS + 6)
    np.testing.assert_allclose(np.diff(frame["time"]), 0.02)
    counts = frame[channels].to_numpy()
    seen = counts[~np.isnan(counts)]
    assert (seen >= 0).all() and (seen == np.round(seen)).all()
    assert 0.3 < seen.mean() < 5  # spikes per 20 ms bin: tens of Hz
    assert not frame[["emg_0", "emg_1", "velocity"]].isna().any().any()
    assert (frame[["emg_0", "emg_1"]] > 0).all().all()  # envelopes


def test_nan_cells_scattered_after_the_first_rows(frame):
    truth = frame.attrs["truth"]
    channels = truth["channels"]
    missing = frame[channels].isna().to_numpy()
    assert missing.sum() == len(truth["nan_cells"]) == 40
    rows, cols = np.nonzero(missing)
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == truth["nan_cells"]
    assert rows.min() >= ROWS // 100 and len(set(cols.tolist())) > 10


def test_one_channel_drops_out_and_stays_silent(frame):
    truth = frame.attrs["truth"]
    name = truth["channels"][truth["dropped_channel"]]
    start = truth["dropout_row"]
    assert start == round(0.6 * ROWS)
    before, after = frame[name].iloc[:start], frame[name].iloc[start:].dropna()
    assert (after == 0).all() and len(after) > 0.39 * ROWS
    assert before.mean() > 0.5  # it was firing
    others = frame[truth["channels"]].iloc[start:].drop(columns=name)
    assert (others.mean() > 0.3).all()  # (no other channel is silent)


def _best_lag(target, latent, most=10):
    """The shift (rows) at which ``latent`` shifted later correlates best with ``target``."""
    return max(range(most + 1), key=lambda lag: np.corrcoef(target[most:],
                                                            latent[most - lag:len(latent) - lag]
                                                            )[0, 1])


def test_targets_lag_the_latent_velocity(frame):
    truth = frame.attrs["truth"]
    velocity, latent = frame["velocity"].to_numpy(), frame["latent_vx"].to_numpy()
    assert truth["velocity_lag"] == 5 and _best_lag(velocity, latent) == 5  # 100 ms
    np.testing.assert_allclose(velocity[5:], latent[:-5], atol=0.1 * latent.std())
    speed = np.hypot(frame["latent_vx"], frame["latent_vy"]).to_numpy()
    for k, lag in enumerate(truth["emg_lags"]):
        assert 2 <= lag <= 5  # 50–100 ms
        assert _best_lag(frame[f"emg_{k}"].to_numpy(), speed) in range(lag - 1, lag + 2)


def test_the_counts_carry_the_velocity_and_the_emg_is_not_linear_in_it(frame):
    """A least-squares decoder from the counts explains a fair share of the velocity; the
    EMG envelopes are rectified (softplus): a linear fit of them on the lagged latent
    velocity misses a good part that a quadratic one finds."""
    truth = frame.attrs["truth"]
    X = np.nan_to_num(frame[truth["channels"]].to_numpy())

    def r2(features, y):
        A = np.column_stack([features, np.ones(len(y))])
        residual = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        return 1 - residual.var() / y.var()

    assert r2(X, frame["velocity"].to_numpy()) > 0.5
    latent = frame[["latent_vx", "latent_vy"]].to_numpy()
    for k, lag in enumerate(truth["emg_lags"]):
        y, v = frame[f"emg_{k}"].to_numpy()[lag:], latent[:-lag]
        quadratic = np.column_stack([v, v**2, v[:, :1] * v[:, 1:]])
        assert r2(quadratic, y) > r2(v, y) + 0.1


def test_docstring_example():
    import doctest

    import onlinesparse.datasets.spike_counts as module

    assert doctest.testmod(module).failed == 0
