"""What a new user meets first in ``onlinesparse replay``: ISO-8601 time columns under pandas 3,
the features printed and recorded, warnings about suspicious features, a non-zero exit when
nothing was scored, and latency measured after the model's warm-up."""

import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.cli import main


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
