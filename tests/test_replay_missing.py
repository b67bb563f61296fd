"""``--missing``: one NaN in one channel costs that value, not the row of every target."""

import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay.cli import build_parser, main
from onlinesparse.replay.runner import ReplayConfig, run_replay

N = 300
GAP_ROW, NO_Y1_ROW, EMPTY_ROW = 120, 150, 200


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    d = tmp_path_factory.mktemp("missing")
    rng = np.random.default_rng(2)
    x = rng.normal(size=(N, 3))
    f = pd.DataFrame(x, columns=["a", "b", "c"])
    f.insert(0, "t", np.arange(N) * 0.01)
    f["y1"] = x @ [1.0, -1.0, 0.5] + 0.05 * rng.normal(size=N)
    f["y2"] = x[:, 0] - x[:, 2] + 0.05 * rng.normal(size=N)
    f.loc[GAP_ROW, "b"] = np.nan  # one channel drops out for one row
    f.loc[NO_Y1_ROW, "y1"] = np.nan  # one target is missing
    f.loc[EMPTY_ROW, ["a", "b", "c"]] = np.nan  # no feature at all
    f.to_csv(d / "r.csv", index=False)
    return d / "r.csv"


def _replay(path, out, missing):
    # (one model per target: the policy of each target alone; a shared model's is
    # tests/test_replay_shared.py's)
    cfg = ReplayConfig(path, ["y1", "y2"], time="t", model="lin1", warmup=10, workers=1,
                       progress=False, out=out, report=False, missing=missing, separate=True)
    outcome = run_replay(cfg)
    assert outcome.exit_code == 0
    metrics = json.loads((out / "metrics.json").read_text())["targets"]
    return metrics, pd.read_parquet(out / "predictions.parquet")


def test_impute_keeps_the_row_for_every_target_and_skips_only_the_missing_target(recording,
                                                                                 tmp_path):
    metrics, pred = _replay(recording, tmp_path / "imp", "impute")
    for target in ("y1", "y2"):
        m = metrics[target]
        assert m["missing"] == "impute"
        assert m["corrupt_rows"] == 1  # the row without any feature
        assert m["corrupt_examples"][0]["row"] == EMPTY_ROW
        assert "every feature is missing" in m["corrupt_examples"][0]["reason"]
        assert m["imputed_rows"] == 1  # GAP_ROW, predicted and learned with 'b' imputed
        rows = pred[pred["target"] == target].set_index("row")
        assert GAP_ROW in rows.index and np.isfinite(rows.loc[GAP_ROW, "mean"])
    assert metrics["y1"]["unlearned_rows"] == 1 and metrics["y2"]["unlearned_rows"] == 0
    assert metrics["y1"]["samples"] == N - 2 and metrics["y2"]["samples"] == N - 1
    # The row without y1 is predicted (and timed) for y1, its truth recorded as missing.
    y1 = pred[pred["target"] == "y1"].set_index("row")
    assert np.isnan(y1.loc[NO_Y1_ROW, "truth"]) and np.isfinite(y1.loc[NO_Y1_ROW, "mean"])
    assert metrics["y1"]["latency_us"]["n"] == N - 2 - 10 + 1  # scored rows + the unlearned
    assert metrics["y1"]["n_scored"] == N - 2 - 10


def test_the_imputed_prediction_is_the_models_own_imputation(recording, tmp_path):
    """The replay leaves the feature out of the dict: the model sees exactly that."""
    from onlinesparse.replay.models import build_model

    _, pred = _replay(recording, tmp_path / "imp", "impute")
    frame = pd.read_csv(recording)
    model = build_model("lin1")
    for r, row in frame.iterrows():
        x = {k: row[k] for k in ("a", "b", "c") if row[k] == row[k]}
        if not x:
            continue
        mu = model.predict_one(x)
        if r == GAP_ROW:
            got = pred[(pred["target"] == "y1") & (pred["row"] == r)]["mean"].item()
            assert got == mu
            break
        if row["y1"] == row["y1"]:
            model.learn_one(x, row["y1"])


def test_drop_skips_the_row_for_every_target(recording, tmp_path):
    metrics, pred = _replay(recording, tmp_path / "drop", "drop")
    assert sorted(e["row"] for e in metrics["y2"]["corrupt_examples"]) == [GAP_ROW, EMPTY_ROW]
    assert sorted(e["row"] for e in metrics["y1"]["corrupt_examples"]) == [
        GAP_ROW, NO_Y1_ROW, EMPTY_ROW]
    assert metrics["y1"]["imputed_rows"] == 0 and metrics["y1"]["unlearned_rows"] == 0
    assert GAP_ROW not in set(pred["row"])


def test_missing_is_documented_in_help_and_checked(recording, tmp_path, capsys):
    replay = build_parser()._subparsers._group_actions[0].choices["replay"]
    text = replay.format_help()
    assert "--missing {impute,drop}" in text and "imputes it" in text
    assert main(["replay", str(recording), "--target", "y1", "--missing", "zero"]) == 2
    assert "invalid choice: 'zero'" in capsys.readouterr().err
    with pytest.raises(Exception, match="--missing"):
        ReplayConfig(recording, ["y1"], missing="zero").check()


def test_a_checkpoint_resumes_only_under_the_policy_it_was_made_with(recording, tmp_path,
                                                                    capsys):
    ck = tmp_path / "ck.pkl"
    base = ["replay", str(recording), "--target", "y1", "--time", "t", "--model", "lin1",
            "--workers", "1", "--checkpoint", str(ck)]
    assert main([*base, "--missing", "drop", "--max-rows", "100"]) == 0
    assert main([*base, "--resume"]) == 2  # default impute: refused, naming the option
    assert "missing" in capsys.readouterr().err
    assert main([*base, "--missing", "drop", "--resume"]) == 0
