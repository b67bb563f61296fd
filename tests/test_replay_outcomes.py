"""How a replay ends: a diverged model is called so, in the replay's summary and in a grid;
the grid's "replay it with" line is a command the shell and the parser read back; a finished
replay leaves no predictions spool behind and refuses a resume."""

import json
import shlex

import numpy as np
import pandas as pd
import pytest
from river import base

from onlinesparse.replay import models
from onlinesparse.replay.cli import _model_params, _replay_command, build_parser, main
from onlinesparse.replay.grid import evaluate_grid, format_grid
from onlinesparse.replay.metrics import DIVERGED_NMSE, RegressionAccumulator


class Exploding(base.Regressor):
    """A model whose predictions grow tenfold with every sample it learns."""

    def __init__(self):
        self.n = 0

    def learn_one(self, x, y):
        self.n += 1

    def predict_one(self, x):
        return 10.0 ** min(self.n, 40)


@pytest.fixture
def exploding(monkeypatch):
    monkeypatch.setitem(models.MODELS, "exploding", models.ModelSpec(
        "exploding", "tests.test_replay_outcomes:Exploding", "a model that diverges"))


@pytest.fixture
def rec(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    path = tmp_path / "rec.csv"
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x[:, 0] - 2 * x[:, 1]}).to_csv(path,
                                                                                index=False)
    return path


def test_divergence_is_an_nmse_above_a_million_or_not_finite():
    def acc(pairs):
        a = RegressionAccumulator()
        for y, mu in pairs:
            a.update(y, mu)
        return a

    assert DIVERGED_NMSE == 1e6
    assert not acc([(0.0, 0.1), (1.0, 0.9), (2.0, 2.2)]).diverged
    assert acc([(0.0, 1e4), (1.0, 1e4), (2.0, 1e4)]).diverged  # nMSE 1.5e8
    assert acc([(0.0, 1e200), (1.0, 1e200)]).diverged  # a squared error that overflows
    assert not acc([(3.0, 3.0), (3.0, 3.0)]).diverged  # a constant target has no nMSE
    assert not RegressionAccumulator().diverged


def test_a_diverged_replay_says_so(exploding, rec, tmp_path, capsys):
    rc = main(["replay", str(rec), "--target", "y", "--model", "exploding", "--workers", "1",
               "--no-standardize", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert rc == 1
    lines = captured.out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("target"))
    header, row = lines[at], lines[at + 2]
    assert header.split()[-1] == "status" and row.split()[-1] == "diverged"
    assert "y: the model diverged: nMSE" in captured.err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["status"] == "diverged" and metrics["targets"]["y"]["status"] == "diverged"
    assert "<td>diverged</td>" in (tmp_path / "out" / "report.html").read_text()


def test_a_completed_replay_has_no_status_column(rec, capsys):
    assert main(["replay", str(rec), "--target", "y", "--model", "lin1", "--workers", "1"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.startswith("target"))
    assert "status" not in header


def test_a_grid_labels_a_diverged_setting_and_never_ranks_it(exploding, rec, capsys):
    result = evaluate_grid(rec, ["y"], {"model": ["exploding", "lin1"]}, workers=1,
                           options={"standardize": False})
    rows = {row.model: row for row in result.rows}
    assert rows["exploding"].score is None and rows["exploding"].means["nmse"] > DIVERGED_NMSE
    assert result.best.model == "lin1"
    table = format_grid(result).splitlines()
    line = next(line for line in table if " exploding " in line)
    assert line.split()[0] == "-" and line.split()[-1] == "diverged"
    assert next(line for line in table if " lin1 " in line).split()[-1] == "ok"
    rc = main(["grid", str(rec), "--target", "y", "--grid", "model=exploding,lin1",
               "--no-standardize", "--workers", "1"])
    captured = capsys.readouterr()
    assert rc == 0 and "best: lin1" in captured.out
    assert "diverged" in captured.err


@pytest.mark.parametrize("params", [
    {"max_basis": 20, "memory": "window", "radii": (0.5, 1.0), "concepts": 3},
    {"label": "None", "quote": "it's", "spaced": "a b", "flag": True, "nothing": None,
     "small": 1e-05, "negative": -2},
])
def test_the_replay_it_with_line_reads_back_as_the_same_settings(params):
    args = build_parser().parse_args(["grid", "my rec.csv", "--target", "y", "--grid",
                                      "max-basis=5", "--features", "a,b", "--warmup", "7"])
    line = _replay_command(args, "rbf", params)
    assert "'\"'\"'" not in line.replace("it'\"'\"'s", "")  # no quote-in-quote but for it's
    words = shlex.split(line)
    assert words[:3] == ["onlinesparse", "replay", "my rec.csv"]
    parsed = build_parser().parse_args(words[1:])
    assert _model_params(parsed) == params
    assert (parsed.recording.name, parsed.target, parsed.warmup) == ("my rec.csv", ["y"], 7)


def test_the_grid_line_uses_plain_words_for_plain_values():
    args = build_parser().parse_args(["grid", "r.csv", "--target", "y", "--grid", "max-basis=5"])
    line = _replay_command(args, "rbf", {"max_basis": 20, "memory": "window"})
    assert line.endswith("--model rbf --max-basis 20 --param memory=window")


def test_grid_help_promises_no_checkpoint(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["grid", "--help"])
    text = capsys.readouterr().out
    assert "--max-rows" in text
    assert "checkpoint" not in text and "resume" not in text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["replay", "--help"])
    assert "resume later with --checkpoint and --resume" in " ".join(
        capsys.readouterr().out.split())


def test_a_finished_replay_with_checkpoints_leaves_no_spool(rec, tmp_path, capsys):
    out, ck = tmp_path / "out", tmp_path / "ck" / "run.pkl"
    args = ["replay", str(rec), "--target", "y", "--model", "lin1", "--workers", "1",
            "--out", str(out), "--checkpoint", str(ck), "--every", "50"]
    assert main([*args, "--max-rows", "120"]) == 0
    assert len(list((out / ".spool").iterdir())) == 1  # resumable: its spool is kept
    assert main(args + ["--resume"]) == 0
    assert not (out / ".spool").exists()
    assert ck.exists() and len(pd.read_parquet(out / "predictions.parquet")) == 300
    capsys.readouterr()
    assert main(args + ["--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
