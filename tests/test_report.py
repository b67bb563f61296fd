"""The HTML report: self-contained, every PNG it shows exists, omissions are explained."""

import json
from html.parser import HTMLParser
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from river import base

from onlinesparse.replay import models
from onlinesparse.replay.metrics import LatencyHistogram, Trace
from onlinesparse.replay.runner import ReplayConfig, run_replay
from onlinesparse.report import TargetReport, relevance_recovery, write_report


class FullProtocol(base.Regressor):
    """A running mean with every optional part of the model protocol."""

    def __init__(self):
        self.n = 0
        self.mean = 0.0

    def learn_one(self, x, y):
        self.n += 1
        self.mean += (y - self.mean) / self.n

    def predict_one(self, x, with_dist=False):
        return SimpleNamespace(mu=self.mean, sigma=1.0) if with_dist else self.mean

    def diagnostics(self):
        return {"n_basis": min(self.n, 7), "gcv": 1.0 + 1.0 / (1 + self.n), "noise_std": 1.0,
                "effective_parameters": 3.0}

    def input_relevance(self):
        return {"a": 2.0, "b": 0.5, "c": 0.0}


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("src", "href"):
                self.refs.append((tag, key, value))


def _refs(page):
    parser = Links()
    parser.feed(page.read_text())
    return parser.refs


@pytest.fixture(autouse=True)
def full_model(monkeypatch):
    monkeypatch.setitem(models.MODELS, "full", models.ModelSpec("full", f"{__name__}:FullProtocol",
                                                                "test"))


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame.insert(0, "time", np.arange(n) * 0.01)
    frame["y"] = frame["a"] + 0.1 * rng.normal(size=n)
    path = d / "rec.csv"
    frame.to_csv(path, index=False)
    lines = path.read_text().splitlines()
    lines[11] = "0.1,1,oops,2,3"  # row 10: unparseable value in column b
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("model", ["full", "linear"])
def test_the_page_shows_existing_pngs_and_nothing_from_elsewhere(recording, tmp_path, model):
    out = tmp_path / model
    cfg = ReplayConfig(recording, ["y"], time="time", model=model, warmup=20, out=out,
                       workers=1, diag_every=10)
    outcome = run_replay(cfg)
    assert outcome.exit_code == 0
    page = outcome.report_path
    refs = _refs(page)
    images = {v for tag, key, v in refs if tag == "img"}
    assert images == {f"plots/00-y-{kind}.png" for kind in
                      ("prediction", "diagnostics", "relevance", "latency")}
    for ref in images | {v for _, _, v in refs if v.endswith(".png")}:
        png = out / ref
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", ref
        assert png.stat().st_size > 5_000  # a drawn figure, not an empty canvas
    assert {p.name for p in (out / "plots").iterdir()} == {i.split("/")[1] for i in images}
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert "<style>" in text  # styling is inline
    assert "row 10 (line 12 of rec.csv): unparseable value &#x27;oops&#x27;" in text

    notes = text.split("<h2>Notes</h2>")[1].split("</ul>")[0] if "<h2>Notes" in text else ""
    if model == "full":
        assert notes == ""  # every plot had its data
        assert "FullProtocol.input_relevance()" in text
    else:  # river's LinearRegression has no distribution, diagnostics or relevance method
        assert "gives no predictive distribution" in notes
        assert "does not report n_basis, gcv, noise_std" in notes
        assert "|weight| of each standardised input" in text
        assert json.loads(outcome.metrics_path.read_text())["targets"]["y"]["coverage"] is None


def test_long_replays_are_drawn_binned_and_wide_inputs_by_top_relevance(tmp_path):
    n = 20_000
    t = np.arange(n) * 0.001
    truth = np.sin(t * 5)
    pred = np.column_stack([np.arange(n), t, truth, truth + 0.05, np.full(n, 0.1)])
    latency = LatencyHistogram()
    for v in np.random.default_rng(0).lognormal(2, 0.5, 1000):
        latency.add(float(v))
    trace = Trace(every=100)
    for i in range(n):
        trace.offer(t[i], {"n_basis": i // 1000, "gcv": 0.1})
    relevance = {f"n{i:03d}": float(i % 17) for i in range(120)}
    page = write_report(tmp_path, [TargetReport(
        "emg", pred, {"warmup": 100, "interval": 0.9}, trace, latency, relevance, "test",
        relevant=["n016", "n033"], has_dist=True)], summary={"interval": 0.9})
    assert len([1 for tag, _, _ in _refs(page) if tag == "img"]) == 4
    assert "does not report noise_std" in page.read_text()


def test_relevance_recovery_counts_hits_in_the_top_k_and_the_auc():
    scores = {"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.7}
    assert relevance_recovery(scores, ["a", "c"]) == {"hits": 1, "k": 2, "auc": 0.5}
    assert relevance_recovery(scores, ["a", "b"])["auc"] == 1.0
