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
        assert "does not report gcv, noise_std" in notes
        assert "n_basis" not in notes  # a linear model has no basis functions to report
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


def _rows(n):
    t = np.arange(n) * 0.001
    truth = np.sin(t * 3) + 0.3 * np.sin(t * 40)
    return np.column_stack([np.arange(n), t, truth, truth + 0.05 * np.cos(t), np.full(n, 0.1)])


def _points(ax):
    """Every point the axes draw: lines' vertices and filled areas' outlines."""
    lines = sum(len(line.get_xdata()) for line in ax.get_lines())
    areas = sum(len(path.vertices) for c in ax.collections for path in c.get_paths())
    return lines + areas


def test_a_long_replay_is_drawn_as_an_envelope_of_a_bounded_number_of_points():
    from onlinesparse.replay.plots import OVERVIEW_BINS, prediction_figures

    n = 150_000
    pred = _rows(n)
    main, _ = prediction_figures(TargetReport("emg", pred, {"warmup": 100}), 1.96, 100, "s")
    overview = main.axes[0]
    assert _points(overview) <= 5 * OVERVIEW_BINS + 100  # two envelopes, not 150 000 points
    assert _points(overview) < n // 20
    # The envelope keeps the extremes a decimation would drop.
    tops = [c.get_paths()[0].vertices[:, 1].max() for c in overview.collections
            if len(c.get_paths()) and len(c.get_paths()[0].vertices) > 2 * OVERVIEW_BINS]
    assert max(tops) == pytest.approx(max(pred[:, 2].max(), pred[:, 3].max()))
    short, _ = prediction_figures(TargetReport("emg", _rows(1500), {}), 1.96, 0, "s")
    assert max(len(line.get_xdata()) for line in short.axes[0].get_lines()) == 1500


def test_a_model_without_basis_functions_gets_no_basis_panel(recording, tmp_path):
    from onlinesparse.replay.plots import plot_diagnostics

    trace = Trace(every=1)
    for i in range(50):
        trace.offer(i * 0.01, {"n_basis": 3.0, "noise_std": 0.5, "gcv": 1.0})
    made = {}
    for has_basis in (True, False):
        report = TargetReport("y", _pred(), {"warmup": 10, "has_basis": has_basis}, trace)
        _, made[has_basis] = plot_diagnostics(report, "s")
    assert "n_basis" in made[True] and "n_basis" not in made[False]
    assert "gcv" in made[False]  # the other panels stay
    # What a replay records: VBLS, linear in its inputs, has none; the RBF network has.
    has = {}
    for model, params in (("vbls", {}), ("rbf", {"max_basis": 5, "window_size": 50})):
        cfg = ReplayConfig(recording, ["y"], time="time", model=model, model_params=params,
                           warmup=20, workers=1, max_rows=150, out=tmp_path / model)
        outcome = run_replay(cfg)
        has[model] = outcome.results[0].metrics["has_basis"]
        page = outcome.report_path.read_text()
        assert ("basis functions" in page) is False or model == "rbf"
    assert has == {"vbls": False, "rbf": True}


def test_the_latency_title_promises_markers_only_when_it_draws_them():
    from onlinesparse.replay.plots import latency_figure

    latency = LatencyHistogram()
    for v in (10.0, 12.0, 50.0):
        latency.add(v)
    titles = {}
    for name, counters in (("none", {}), ("flat", {"n_refreshes": 0.0}),
                           ("rising", None)):
        trace = Trace(every=1)
        for i in range(20):
            values = {"latency_max_us": 10.0 + i, "cpu_max_us": 9.0}
            values.update(counters if counters is not None else {"n_refreshes": float(i // 5)})
            trace.offer(float(i), values)
        fig = latency_figure(TargetReport("y", _pred(), {}, trace, latency), "s")
        ax = fig.axes[1]
        marks = [line for line in ax.get_lines() if line.get_marker() not in ("None", None, "")]
        titles[name] = (ax.get_title(loc="left"), len(marks))
    assert "markers" not in titles["none"][0] and titles["none"][1] == 0
    assert "markers" not in titles["flat"][0] and titles["flat"][1] == 0
    assert "markers at the bottom" in titles["rising"][0] and titles["rising"][1] == 1


def test_each_kind_of_heavy_work_gets_a_row_of_its_own_below_the_curves():
    """Two kinds of heavy work in every interval: on one row their markers merged into a
    band; each now has its own height, and both lie below the slowest sample drawn."""
    from onlinesparse.replay.plots import latency_figure

    latency = LatencyHistogram()
    latency.add(10.0)
    trace = Trace(every=1)
    for i in range(30):
        trace.offer(float(i), {"latency_max_us": 200.0 + i, "cpu_max_us": 190.0,
                               "n_added": float(i), "n_deleted": float(i)})
    ax = latency_figure(TargetReport("y", _pred(), {}, trace, latency), "s").axes[1]
    marks = [line for line in ax.get_lines() if line.get_marker() not in ("None", None, "")]
    heights = [set(np.asarray(line.get_ydata(), dtype=float)) for line in marks]
    assert len(marks) == 2 and all(len(h) == 1 for h in heights)
    assert heights[0] != heights[1]
    assert max(max(h) for h in heights) < 190.0 and ax.get_ylim()[0] < min(min(h) for h in heights)


def test_the_comparison_page_stands_alone_with_every_runs_results(tmp_path):
    from onlinesparse.replay.report import render_target, write_comparison_report

    sections = {
        name: [render_target(TargetReport(t, _pred(), {"warmup": 10, "nmse": nmse}), None, k)
               for k, t in enumerate(("emg_a", "emg_b"))]
        for name, nmse in (("vbls", 0.0123), ("rbf", 0.0456))
    }
    page = write_comparison_report(tmp_path, "demo", "two models", [["model"], ["vbls"]],
                                   sections)
    text = page.read_text()
    parser = Links()
    parser.feed(text)
    ids = set()

    class Ids(HTMLParser):
        def handle_starttag(self, tag, attrs):
            ids.update(v for k, v in attrs if k == "id")

    Ids().feed(text)
    hrefs = [v for tag, key, v in parser.refs if key == "href"]
    assert hrefs and all(h.startswith("#") and h[1:] in ids for h in hrefs)  # no other file
    assert all(v.startswith("data:image/png;base64,") for _, key, v in parser.refs
               if key == "src")
    assert "0.0123" in text and "0.0456" in text  # each run's own summary
    for name in ("vbls", "rbf"):
        for target in ("emg_a", "emg_b"):
            assert f"{name}: {target} (plots)" in text
    assert len({f"#{n}-00-emg_a" for n in ("vbls", "rbf")} & set(hrefs)) == 2  # kept apart
