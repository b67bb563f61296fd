"""Several targets of one recording through one shared model (issue 32), and ``--separate``."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay import models as registry
from onlinesparse.replay.cli import main
from onlinesparse.replay.config import StopFlag
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.outputs import write_outputs
from onlinesparse.replay.reader import open_recording
from onlinesparse.replay.runner import ReplayConfig, format_summary, run_replay
from onlinesparse.replay.shared import replay_shared

N = 300
TARGETS = ["y1", "y2", "y3"]
NO_Y1_ROW, BAD_Y2_ROW = 140, 170
PARAMS = {"max_basis": 8, "window_size": 200}


def _frame(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, 3))
    f = pd.DataFrame(x, columns=["a", "b", "c"])
    f.insert(0, "t", np.arange(N) * 0.01)
    f["y1"] = np.sin(x[:, 0]) + 0.05 * rng.normal(size=N)
    f["y2"] = x[:, 1] * x[:, 2] + 0.05 * rng.normal(size=N)
    f["y3"] = x[:, 0] - x[:, 2] + 0.05 * rng.normal(size=N)
    return f


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    path = tmp_path_factory.mktemp("shared") / "r.csv"
    _frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def gappy(tmp_path_factory):
    """y1 missing on one row, y2 unparseable on another."""
    f = _frame()
    f["y2"] = f["y2"].astype(object)
    f.loc[NO_Y1_ROW, "y1"] = np.nan
    f.loc[BAD_Y2_ROW, "y2"] = "n/a?"
    path = tmp_path_factory.mktemp("gappy") / "r.csv"
    f.to_csv(path, index=False)
    return path


def _cfg(path, out, **kw):
    options = {"time": "t", "model": "rbf", "model_params": PARAMS, "warmup": 20,
               "workers": 1, "progress": False, "out": out, "report": False, **kw}
    return ReplayConfig(path, kw.pop("targets", TARGETS), **options)


def _metrics(out):
    return json.loads((out / "metrics.json").read_text())


def _direct(frame: pd.DataFrame, skip_learning=()):
    """Progressive validation by hand through the multi-output form: what the replay must
    reproduce exactly."""
    model = registry.build_model("rbf", PARAMS, True, multi_target=True)
    out = {t: [] for t in TARGETS}
    for r, row in frame.iterrows():
        x = {k: float(row[k]) for k in ("a", "b", "c")}
        pred = model.predict_one(x, with_dist=True)
        for t in TARGETS:
            out[t].append((pred[t].mu, pred[t].sigma) if pred else (math.nan, math.nan))
        if r not in skip_learning:
            model.learn_one(x, {t: float(row[t]) for t in TARGETS})
    return out


def test_the_registry_says_which_models_share_one_model():
    assert registry.shares_model("rbf", 3)
    assert not registry.shares_model("rbf", 3, separate=True)
    assert not registry.shares_model("rbf", 1)
    assert not registry.shares_model("linear", 3)  # river's linear models: one per target
    assert registry.MODELS["linear"].multi_target is None


def test_the_shared_replay_is_progressive_validation_of_one_model(complete, tmp_path):
    outcome = run_replay(_cfg(complete, tmp_path / "o"))
    assert outcome.exit_code == 0 and outcome.shared is not None
    pred = pd.read_parquet(tmp_path / "o" / "predictions.parquet")
    expected = _direct(pd.read_csv(complete))
    for t in TARGETS:
        rows = pred[pred["target"] == t].sort_values("row")
        assert list(rows["row"]) == list(range(N))
        mu, sigma = np.array(expected[t]).T
        np.testing.assert_array_equal(rows["mean"].to_numpy(), mu)
        np.testing.assert_array_equal(rows["std"].to_numpy(), sigma)


def test_metrics_are_per_target_and_the_time_per_row_is_reported_once(complete, tmp_path):
    out = tmp_path / "o"
    cfg = _cfg(complete, out, report=True, budget_us=1e9)
    outcome = run_replay(cfg)
    m = _metrics(out)
    shared = m["shared_model"]
    assert shared["targets"] == TARGETS and shared["samples"] == N
    assert shared["latency_us"]["n"] == N - 20 and shared["rows_per_second"] > 0
    assert shared["deadline_misses"] == 0
    assert shared["diagnostics"]["n_basis"] > 0
    assert set(shared["target_diagnostics"]) == set(TARGETS)
    assert shared["relevance"] and set(shared["relevance"]) == {"a", "b", "c"}
    for t in TARGETS:
        mt = m["targets"][t]
        assert mt["shared_model"] is True and mt["latency_us"] is None
        assert mt["n_scored"] == N - 20 and mt["partial_rows"] == 0
        assert 0 < mt["nmse"] < 1 and 0.5 < mt["coverage"] <= 1
        # its own diagnostics: the shared ones with its noise estimate
        assert mt["diagnostics"]["noise_std"] == shared["target_diagnostics"][t]["noise_std"]
    # Beside each target, the trivial predictors on the samples it scored (after the 20
    # of the warm-up): the running mean of the targets before each one, the last target.
    truth = pd.read_csv(complete)
    for t in TARGETS:
        y = truth[t].to_numpy()[20:]
        before = np.cumsum(y)[:-1] / np.arange(1, len(y))
        mt = m["targets"][t]
        assert mt["nmse_running_mean"] == pytest.approx(
            np.mean((y[1:] - before) ** 2) / y.var(), rel=1e-9)
        assert mt["nmse_last_target"] == pytest.approx(
            np.mean((y[1:] - y[:-1]) ** 2) / y.var(), rel=1e-9)
    table = format_summary(outcome, cfg)
    assert "\nshared model " in table  # its row, with the time per row
    assert "per row of the model shared by the targets" in table
    assert "mean, last: the nMSE of the running mean" in table
    said = "weighs the last target in as an expert"
    assert (said in table) == cfg.model_params.get("last_target", True)
    page = (out / "report.html").read_text()
    assert "nMSE of the last target" in page
    assert "id='shared-model'" in page and page.count("latency per row") == 1
    for t in TARGETS:
        assert f"<h2 id='0{TARGETS.index(t)}-{t}'>{t}</h2>" in page


def test_a_row_without_every_target_is_scored_for_the_others_and_learned_by_none(gappy,
                                                                                  tmp_path):
    out = tmp_path / "o"
    assert run_replay(_cfg(gappy, out)).exit_code == 0
    m, pred = _metrics(out), pd.read_parquet(out / "predictions.parquet")
    assert m["shared_model"]["samples"] == N - 2 and m["shared_model"]["partial_rows"] == 2
    y1, y2, y3 = (m["targets"][t] for t in TARGETS)
    assert y1["unlearned_rows"] == 1 and y1["partial_rows"] == 1  # its gap; y2's bad row
    assert y2["corrupt_rows"] == 1 and "unparseable" in y2["corrupt_examples"][0]["reason"]
    assert y2["partial_rows"] == 1 and y3["partial_rows"] == 2
    assert y3["n_scored"] == N - 20 and y1["n_scored"] == N - 21 and y2["n_scored"] == N - 21
    by = {t: pred[pred["target"] == t].set_index("row") for t in TARGETS}
    assert np.isnan(by["y1"].loc[NO_Y1_ROW, "truth"])  # predicted, its truth missing
    assert BAD_Y2_ROW not in by["y2"].index  # corrupt for y2: no prediction kept
    assert np.isfinite(by["y3"].loc[BAD_Y2_ROW, "truth"])
    # Exactly a model that learned every row but those two.
    frame = _frame()
    expected = _direct(frame, skip_learning={NO_Y1_ROW, BAD_Y2_ROW})
    np.testing.assert_array_equal(by["y3"].sort_index()["mean"].to_numpy(),
                                  np.array(expected["y3"])[:, 0])


def test_under_missing_drop_a_missing_target_is_corrupt_for_it_alone(gappy, tmp_path):
    out = tmp_path / "o"
    assert run_replay(_cfg(gappy, out, missing="drop")).exit_code == 0
    m = _metrics(out)
    assert m["targets"]["y1"]["corrupt_rows"] == 1
    assert "NaN in target 'y1'" in m["targets"]["y1"]["corrupt_examples"][0]["reason"]
    assert m["targets"]["y3"]["corrupt_rows"] == 0
    assert m["shared_model"]["partial_rows"] == 2


def test_strict_stops_at_a_corrupt_target(gappy, tmp_path):
    outcome = run_replay(_cfg(gappy, tmp_path / "o", strict=True))
    assert outcome.exit_code == 1
    assert {r.status for r in outcome.results} == {"corrupt_row"}
    assert outcome.results[0].metrics["rows_read"] == BAD_Y2_ROW


def test_the_multi_output_form_refuses_a_row_without_every_target():
    """The premise of the policy above: learn_one refuses, naming the target, unchanged."""
    model = registry.resolve("rbf", multi_target=True)(**PARAMS)
    model.learn_one({"a": 0.0}, {"y1": 1.0, "y2": 2.0})
    before = model.predict_one({"a": 0.5})
    for y, name in (({"y1": 1.0}, "y2"), ({"y1": math.nan, "y2": 2.0}, "y1")):
        with pytest.raises(ValueError, match=name):
            model.learn_one({"a": 1.0}, y)
    assert model.predict_one({"a": 0.5}) == before


def test_separate_and_models_without_a_multi_output_form_keep_one_model_each(complete,
                                                                           tmp_path):
    for name, kw in (("sep", {"separate": True}),
                     ("lin", {"model": "linear", "model_params": {}})):
        out = tmp_path / name
        outcome = run_replay(_cfg(complete, out, checkpoint=tmp_path / f"{name}.ckpt", **kw))
        assert outcome.exit_code == 0 and outcome.shared is None
        m = _metrics(out)
        assert m["shared_model"] is None
        for t in TARGETS:
            assert m["targets"][t]["latency_us"]["n"] == N - 20
            assert (tmp_path / f"{name}.{t}.ckpt").exists()
        assert not (tmp_path / f"{name}.ckpt").exists()


def test_one_checkpoint_for_the_shared_model_and_a_resume_continues_bit_for_bit(complete,
                                                                                tmp_path):
    whole = tmp_path / "whole"
    run_replay(_cfg(complete, whole))
    ckpt = tmp_path / "run.ckpt"
    part = tmp_path / "part"
    first = run_replay(_cfg(complete, part, checkpoint=ckpt, max_rows=130, every=50))
    assert {r.status for r in first.results} == {"stopped"}
    assert ckpt.exists() and not list(tmp_path.glob("run.*.ckpt"))
    with pytest.raises(UsageError, match="run.y1.ckpt: nothing to resume") as refused:
        run_replay(_cfg(complete, part, checkpoint=ckpt, resume=True, separate=True))
    assert "beside it: run.ckpt" in str(refused.value)  # (the shared model's, named)
    second = run_replay(_cfg(complete, part, checkpoint=ckpt, resume=True))
    assert second.exit_code == 0
    a = pd.read_parquet(whole / "predictions.parquet")
    b = pd.read_parquet(part / "predictions.parquet")
    pd.testing.assert_frame_equal(a, b)
    ma, mb = _metrics(whole), _metrics(part)
    for t in TARGETS:
        assert ma["targets"][t]["rmse"] == mb["targets"][t]["rmse"]
    assert mb["shared_model"]["latency_us"]["n"] == N - 20  # the row count spans the resume


def test_the_command_says_the_targets_share_a_model(complete, tmp_path, capsys):
    argv = ["replay", str(complete), *[w for t in TARGETS for w in ("--target", t)],
            "--time", "t", "--max-basis", "8", "--param", "window_size=200",
            "--warmup", "20", "--no-report", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "the 3 targets share one rbf model" in said
    assert "shared model" in said.split("target ", 1)[1]
    assert main([*argv[:-1], str(tmp_path / "s"), "--separate"]) == 0
    said = capsys.readouterr().out
    assert "one rbf model per target (--separate)" in said and "\nshared model" not in said


def test_help_says_which_models_share_and_what_separate_does(capsys):
    assert main(["replay", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split()).replace("multi- output", "multi-output")
    assert "--separate" in text and "multi-output form (rbf, vbls, lin1)" in text
    assert "(vbls-kernel, linear) always fit one model per target" in text


class _StopAt(StopFlag):
    """Ctrl-C as the replay sees it, after ``n`` rows."""

    def __init__(self, n: int):
        self.n = n

    @property
    def requested(self) -> bool:
        self.n -= 1
        return self.n < 0

    @requested.setter
    def requested(self, value: bool) -> None:
        pass


def test_ctrl_c_saves_the_shared_model_in_one_default_checkpoint_and_resumes(complete,
                                                                             tmp_path):
    whole = tmp_path / "whole"
    run_replay(_cfg(complete, whole))
    out = tmp_path / "o"
    cfg = _cfg(complete, out)
    columns = open_recording(complete).select(TARGETS, None, "t")
    results, shared = replay_shared(cfg, columns, _StopAt(120))
    saved = out / "checkpoint.pkl"  # without --checkpoint: one file in --out
    assert {r.status for r in results} == {"interrupted"} and shared.status == "interrupted"
    assert {r.checkpoint_path for r in results} == {str(saved)} and saved.exists()
    assert write_outputs(cfg, columns, results, shared=shared).exit_code == 130
    resumed = run_replay(_cfg(complete, out, checkpoint=saved, resume=True))
    assert resumed.exit_code == 0
    pd.testing.assert_frame_equal(pd.read_parquet(whole / "predictions.parquet"),
                                  pd.read_parquet(out / "predictions.parquet"))


def test_nothing_scored_and_a_model_that_raises_end_every_target(complete, tmp_path,
                                                                 monkeypatch):
    outcome = run_replay(_cfg(complete, tmp_path / "w", warmup=N))
    assert outcome.exit_code == 1
    assert {r.status for r in outcome.results} == {"nothing_scored"}
    assert "were in the warm-up" in outcome.results[0].message

    model_class = registry.resolve("rbf", multi_target=True)
    learn, calls = model_class.learn_one, []

    def failing(self, x, y):
        calls.append(1)
        if len(calls) > 200 + 100:  # (the warm-up's clone learns the first 200 rows)
            raise RuntimeError("boom")
        learn(self, x, y)

    monkeypatch.setattr(model_class, "learn_one", failing)
    ckpt = tmp_path / "run.ckpt"
    outcome = run_replay(_cfg(complete, tmp_path / "e", checkpoint=ckpt, every=1000))
    assert outcome.exit_code == 1
    assert {r.status for r in outcome.results} == {"model_error"}
    assert "RuntimeError" in outcome.results[0].message and "boom" in outcome.results[0].message
    assert not ckpt.exists()  # the model may be half-updated: no checkpoint


def test_the_grid_replays_one_model_per_target_and_its_replay_command_says_so(capsys):
    from onlinesparse.replay.cli import _replay_command, build_parser

    args = build_parser().parse_args(["grid", "r.csv", "--target", "y1", "--target", "y2",
                                      "--grid", "max-basis=5,10"])
    assert _replay_command(args, "rbf", {"max_basis": 5}).endswith("--separate")
    assert not _replay_command(args, "linear", {}).endswith("--separate")
    assert main(["models"]) == 0
    assert "rbf, vbls, lin1 fit one model shared by the targets" in capsys.readouterr().out


@pytest.mark.parametrize("name, form", [("lin1", "Lin1MultiTargetRegressor"),
                                        ("vbls", "VBLSMultiTargetRegressor")])
def test_lin1_and_vbls_share_their_multi_output_forms_with_the_same_policy(gappy, tmp_path,
                                                                          name, form):
    """The other multi-output forms in the package: a row without every target is learned
    by none, and each target's diagnostics are its own."""
    out = tmp_path / "o"
    assert run_replay(_cfg(gappy, out, model=name, model_params={})).exit_code == 0
    m, pred = _metrics(out), pd.read_parquet(out / "predictions.parquet")
    assert m["shared_model"]["model_class"] == form
    assert m["shared_model"]["partial_rows"] == 2 and m["shared_model"]["samples"] == N - 2
    assert set(m["shared_model"]["target_diagnostics"]) == set(TARGETS)
    model = registry.build_model(name, {}, True, multi_target=True)
    frame, expected = _frame(), []
    for r, row in frame.iterrows():
        x = {k: float(row[k]) for k in ("a", "b", "c")}
        out = model.predict_one(x, with_dist=True)
        expected.append(out["y3"].mu if "y3" in out else math.nan)
        if r not in (NO_Y1_ROW, BAD_Y2_ROW):
            model.learn_one(x, {t: float(row[t]) for t in TARGETS})
    got = pred[pred["target"] == "y3"].sort_values("row")["mean"].to_numpy()
    np.testing.assert_array_equal(got, np.array(expected))
    with pytest.raises(ValueError, match="y2"):
        model.learn_one({"a": 0.0}, {"y1": 1.0, "y3": 1.0})


def test_the_summary_says_when_the_model_sees_the_last_target():
    assert registry.sees_last_target("rbf", {})  # (the stream layer's default)
    assert not registry.sees_last_target("rbf", {"last_target": False})
    assert registry.sees_last_target("vbls", {})
    assert not registry.sees_last_target("lin1", {})  # (no such parameter)
