"""The progressive-validation loop, in process, with a model whose behaviour is known."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from river import base

from onlinesparse.replay import models
from onlinesparse.replay.runner import ReplayConfig, run_replay


class EchoModel(base.Regressor):
    """Predicts the last target it learned, with σ = 0.5; reports diagnostics and relevance."""

    def __init__(self, fail_at=None):
        self.last = 0.0
        self.n = 0
        self.fail_at = fail_at

    def learn_one(self, x, y):
        if self.fail_at is not None and self.n == self.fail_at:
            raise ValueError("boom")
        self.last = y
        self.n += 1

    def predict_one(self, x, with_dist=False):
        return SimpleNamespace(mu=self.last, sigma=0.5) if with_dist else self.last

    def diagnostics(self):
        return {"n_basis": self.n, "gcv": 1.0 / (self.n + 1), "noise_std": 0.5}

    def input_relevance(self):
        return {"a": 1.0, "b": 0.0}


@pytest.fixture(autouse=True)
def echo_model(monkeypatch):
    monkeypatch.setitem(models.MODELS, "echo", models.ModelSpec("echo", f"{__name__}:EchoModel",
                                                                "test"))


@pytest.fixture
def recording(tmp_path):
    rng = np.random.default_rng(2)
    n = 300
    frame = pd.DataFrame({"time": np.arange(n) * 0.01, "a": rng.normal(size=n),
                          "b": rng.normal(size=n), "y": rng.normal(size=n)})
    path = tmp_path / "rec.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_each_sample_is_predicted_before_it_is_learned_and_scored_after_warmup(
    recording, tmp_path
):
    path, frame = recording
    cfg = ReplayConfig(path, ["y"], time="time", model="echo", warmup=20, out=tmp_path / "o",
                       workers=1, diag_every=10)
    outcome = run_replay(cfg)
    assert outcome.exit_code == 0
    pred = pd.read_parquet(outcome.predictions_path)
    y = frame["y"].to_numpy()
    np.testing.assert_array_equal(pred["truth"], y)
    np.testing.assert_array_equal(pred["mean"], np.concatenate([[0.0], y[:-1]]))
    np.testing.assert_array_equal(pred["time"], frame["time"])
    assert (pred["std"] == 0.5).all()

    m = json.loads(outcome.metrics_path.read_text())["targets"]["y"]
    err = y[20:] - np.concatenate([[0.0], y[:-1]])[20:]
    assert m["n_scored"] == 280 and m["warmup"] == 20
    assert m["mae"] == pytest.approx(np.abs(err).mean())
    assert m["rmse"] == pytest.approx(np.sqrt((err**2).mean()))
    assert m["nmse"] == pytest.approx((err**2).mean() / y[20:].var())
    assert m["coverage"] == pytest.approx(np.mean(np.abs(err) <= 1.959964 * 0.5), abs=1e-6)
    assert m["latency_us"]["n"] == 280
    assert m["relevance"] == {"a": 1.0, "b": 0.0}
    assert m["diagnostics"]["n_basis"] == 300

    trace = outcome.results[0].trace
    assert trace.times[:3] == [0.0, 0.1, 0.2]  # every 10 samples, at the sample's time
    assert trace.values["n_basis"][:3] == [1.0, 11.0, 21.0]  # the state after learning it


def test_a_model_that_raises_keeps_everything_before_that_row(recording, tmp_path):
    path, frame = recording
    cfg = ReplayConfig(path, ["y"], model="echo", model_params={"fail_at": 50},
                       out=tmp_path / "o", workers=1, report=False)
    outcome = run_replay(cfg)
    result = outcome.results[0]
    assert outcome.exit_code == 1
    assert result.status == "model_error"
    assert "ValueError at row 50 (line 52 of rec.csv): boom" in result.message
    pred = pd.read_parquet(outcome.predictions_path)
    assert len(pred) == 50 and pred["row"].tolist() == list(range(50))
    assert json.loads(outcome.metrics_path.read_text())["status"] == "model_error"
