"""The HTML report: self-contained (plots embedded), records what made it, omissions are
explained."""

import base64
import json
from html.parser import HTMLParser
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from river import base

from onlinesparse.replay import models
from onlinesparse.replay.metrics import LatencyHistogram, Trace
from onlinesparse.replay.report import TargetReport, relevance_recovery, write_report
from onlinesparse.replay.runner import ReplayConfig, run_replay


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
def test_the_page_embeds_its_pngs_and_needs_nothing_from_elsewhere(recording, tmp_path, model):
    out = tmp_path / model
    cfg = ReplayConfig(recording, ["y"], time="time", model=model, warmup=20, out=out,
                       workers=1, diag_every=10)
    outcome = run_replay(cfg)
    assert outcome.exit_code == 0
    page = outcome.report_path
    refs = _refs(page)
    images = [v for tag, key, v in refs if tag == "img"]
    assert len(images) >= 4  # prediction, diagnostics, relevance, latency
    for ref in images:
        assert ref.startswith("data:image/png;base64,"), ref[:60]
        png = base64.b64decode(ref.split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(png) > 5_000  # a drawn figure, not an empty canvas
    assert not any(v.endswith(".png") for _, _, v in refs)  # nothing outside the page
    assert not (out / "plots").exists()
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


def _pred(n=600, transient=0):
    t = np.arange(n) * 0.01
    truth = 40 + np.sin(t)
    mean = truth + 0.1
    mean[:transient] = np.linspace(0, 40, transient)  # the first predictions of a cold model
    return np.column_stack([np.arange(n), t, truth, mean, np.full(n, 0.2)])


def test_the_page_records_command_version_date_run_time_parameters_and_features(tmp_path):
    import onlinesparse

    summary = {"command": "onlinesparse replay rec.csv --target y --model rbf",
               "elapsed_s": 12.34, "model": "rbf", "model_params": {"max_basis": 20},
               "features": ["a", "b", "c"], "warmup": 100, "budget_us": 500.0,
               "warnings": ["feature 'trial' looks like an identifier"]}
    text = write_report(tmp_path, [TargetReport("y", _pred(), {"warmup": 100})],
                        summary=summary).read_text()
    assert "onlinesparse replay rec.csv --target y --model rbf" in text
    assert f"<td>{onlinesparse.__version__}</td>" in text
    assert " UTC</td>" in text and "12.3 s" in text
    assert "max_basis=20" in text and "window_size=1000" in text  # the default is recorded too
    assert "features (3)" in text and "a, b, c" in text
    assert "500 µs per sample" in text
    assert "looks like an identifier" in text


def test_a_warm_up_transient_does_not_set_the_y_range_and_the_full_range_is_kept(tmp_path):
    text = write_report(tmp_path, [TargetReport("y", _pred(transient=50), {"warmup": 50})]
                        ).read_text()
    assert "full y-range" in text
    quiet = write_report(tmp_path / "q", [TargetReport("y", _pred(), {"warmup": 50})]
                         ).read_text()
    assert "full y-range" not in quiet
    # the full-range overview is the one extra image
    assert text.count("data:image/png") == quiet.count("data:image/png") + 1


def test_the_relevance_panel_states_the_models_own_decisions(tmp_path):
    relevance = {f"n{i}": (0.9 if i < 14 else 0.1) for i in range(40)}
    metrics = {"warmup": 0, "relevant_inputs": [f"n{i}" for i in range(14)],
               "relevance_cutoff": 0.5}
    text = write_report(tmp_path, [TargetReport("emg", _pred(), metrics, relevance=relevance,
                                                relevance_source="test",
                                                relevant=["n0", "n1", "n30"])]).read_text()
    assert "The model marks 14 of 40 inputs relevant: 2 of the 3 truly relevant, " \
           "12 false positives" in text
    plain = write_report(tmp_path / "p", [TargetReport("emg", _pred(), {"warmup": 0},
                                                       relevance=relevance,
                                                       relevance_source="test")]).read_text()
    assert "makes no relevant / irrelevant decision" in plain


def test_relevance_recovery_counts_hits_in_the_top_k_and_the_auc():
    scores = {"a": 0.9, "b": 0.8, "c": 0.1, "d": 0.7}
    assert relevance_recovery(scores, ["a", "c"]) == {"hits": 1, "k": 2, "auc": 0.5}
    assert relevance_recovery(scores, ["a", "b"])["auc"] == 1.0
