"""End-to-end: the real ``onlinesparse replay`` command on small generated recordings."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay.cli import main

N = 400


def run(cwd, *args, input_env=None):
    """Run ``python -m onlinesparse.replay.cli`` like a user would, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "onlinesparse.replay.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=300, env=input_env,
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, 4))
    frame = pd.DataFrame(X, columns=["n1", "n2", "n3", "n4"])
    frame.insert(0, "time", np.arange(N) * 0.01)
    frame["y1"] = 1.5 * X[:, 0] - X[:, 2] + 0.1 * rng.normal(size=N)
    frame["y2"] = np.tanh(X[:, 1]) + 0.1 * rng.normal(size=N)
    frame.to_csv(d / "rec.csv", index=False)
    frame.to_parquet(d / "rec.parquet", index=False, row_group_size=100)
    np.savez(d / "rec.npz", **{c: frame[c].to_numpy() for c in frame.columns})
    return d, frame


COMMON = ["--target", "y1", "--time", "time", "--features", "n*", "--model", "linear",
          "--warmup", "50", "--no-report"]


def _predictions(out):
    return pd.read_parquet(out / "predictions.parquet")


def _metrics(out):
    return json.loads((out / "metrics.json").read_text())


ACCURACY = ("mae", "rmse", "nmse", "r2", "coverage", "n_scored", "samples", "rows_read",
            "corrupt_rows")


def test_every_format_and_any_chunk_size_replays_the_same(data):
    d, frame = data
    outputs = {}
    for name, extra in (("rec.csv", ["--chunksize", "7"]), ("rec.parquet", []),
                        ("rec.npz", ["--chunksize", "64"])):
        out = d / f"out-{name}"
        proc = run(d, "replay", name, *COMMON, "--out", out, *extra)
        assert proc.returncode == 0, proc.stderr
        for column in ("MAE", "RMSE", "nMSE", "R²", "cover 95%", "µs med", "µs p99"):
            assert column in proc.stdout
        outputs[name] = out
    reference = _predictions(outputs["rec.parquet"])
    assert list(reference.columns) == ["target", "row", "time", "truth", "mean", "std"]
    assert len(reference) == N
    np.testing.assert_array_equal(reference["truth"], frame["y1"])
    for name, out in outputs.items():
        pd.testing.assert_frame_equal(_predictions(out), reference, obj=name)
        m = _metrics(out)["targets"]["y1"]
        assert m["n_scored"] == N - 50 and m["r2"] > 0.5
        assert m["latency_us"]["median"] > 0 and m["latency_us"]["p99"] >= m["latency_us"][
            "median"]


def test_checkpoint_then_resume_equals_an_uninterrupted_parallel_run(data):
    d, _ = data
    args = ["replay", "rec.parquet", "--target", "y1", "--target", "y2", "--time", "time",
            "--model", "linear", "--warmup", "30", "--no-report"]
    whole = run(d, *args, "--out", d / "whole", "--workers", "1")
    assert whole.returncode == 0, whole.stderr

    ck = d / "ck" / "state.pkl"
    part = run(d, *args, "--out", d / "split", "--workers", "2", "--max-rows", "150",
               "--checkpoint", ck, "--every", "40")
    assert part.returncode == 0, part.stderr
    assert sorted(p.name for p in ck.parent.iterdir() if p.suffix == ".pkl") == [
        "state.y1.pkl", "state.y2.pkl"]
    assert _metrics(d / "split")["status"] == "stopped"
    assert len(_predictions(d / "split")) == 2 * 150

    # Resumed in process: the checkpoints do not depend on how the first part ran.
    resumed = run(d, *args, "--out", d / "split", "--workers", "1", "--checkpoint", ck,
                  "--resume")
    assert resumed.returncode == 0, resumed.stderr
    pd.testing.assert_frame_equal(_predictions(d / "split"), _predictions(d / "whole"))
    for target in ("y1", "y2"):
        got = _metrics(d / "split")["targets"][target]
        want = _metrics(d / "whole")["targets"][target]
        assert {k: got[k] for k in ACCURACY} == {k: want[k] for k in ACCURACY}
        assert got["latency_us"]["n"] == want["latency_us"]["n"]

    changed = run(d, *args, "--warmup", "31", "--checkpoint", ck, "--resume")
    assert changed.returncode == 2
    assert "configured differently" in changed.stderr and "warmup" in changed.stderr


CORRUPT = {5: "1,2,abc,4,0.5,0.5", 9: "1,2", 12: "1,2,3,4,5,6,7"}


@pytest.fixture(scope="module")
def corrupt_csv(data):
    d, frame = data
    lines = (d / "rec.csv").read_text().splitlines()
    for row, values in CORRUPT.items():
        lines[row + 1] = f"{frame['time'][row]},{values}"
    path = d / "corrupt.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_corrupt_rows_are_skipped_counted_and_named(data, corrupt_csv):
    d, _ = data
    # --missing drop: row 9's line is cut short, its last values missing (imputed otherwise).
    proc = run(d, "replay", corrupt_csv.name, *COMMON, "--out", d / "skip", "--missing", "drop")
    assert proc.returncode == 0, proc.stderr
    assert "skipping corrupt row 5 (line 7 of corrupt.csv): unparseable value 'abc' in column " \
           "'n3'" in proc.stderr
    assert "row 9 (line 11 of corrupt.csv)" in proc.stderr
    assert "row 12 (line 14 of corrupt.csv): wrong column count" in proc.stderr
    m = _metrics(d / "skip")["targets"]["y1"]
    assert m["corrupt_rows"] == 3
    assert [e["row"] for e in m["corrupt_examples"]] == [5, 9, 12]
    assert m["samples"] == N - 3
    assert set(_predictions(d / "skip")["row"]) == set(range(N)) - set(CORRUPT)


def test_strict_stops_at_the_first_corrupt_row_and_keeps_what_came_before(data, corrupt_csv):
    d, _ = data
    out = d / "strict"
    proc = run(d, "replay", corrupt_csv.name, *COMMON, "--out", out, "--strict",
               "--predictions-format", "csv")
    assert proc.returncode == 1
    assert "corrupt row 5 (line 7 of corrupt.csv): unparseable value 'abc'" in proc.stderr
    written = pd.read_csv(out / "predictions.csv")
    assert list(written.columns) == ["target", "row", "time", "truth", "mean", "std"]
    assert written["row"].tolist() == [0, 1, 2, 3, 4]
    assert _metrics(out)["status"] == "corrupt_row"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "missing.csv", "--target", "y1"], "recording not found: missing.csv"),
        (["replay", "rec.csv", "--target", "y_1"],
         "unknown target column 'y_1' in rec.csv; did you mean 'y1'?"),
        (["replay", "rec.csv", "--target", "y1", "--model", "linear", "--lr", "0"],
         "--lr must be a number in (0, 10] (got 0.0)"),
    ],
)
def test_usage_errors_exit_2_with_a_message_naming_the_problem(data, args, message):
    d, _ = data
    proc = run(d, *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "rec.csv", "--target", "y1", "--features", "n1,n9"],
         "unknown feature column 'n9'"),
        (["replay", "rec.csv", "--target", "y1", "--time", "t"], "unknown time column 't'"),
        (["replay", "rec.csv", "--target", "y1", "--model", "linear", "--max-basis", "5"],
         "--max-basis does not apply to model 'linear' (its parameters: --l2, --lr, "
         "--intercept-lr)"),
        (["replay", "rec.csv", "--target", "y1", "--model", "nope"], "unknown model 'nope'"),
        (["replay", "rec.csv", "--target", "y1", "--model", "linear", "--param", "depth=3"],
         "model 'linear' does not take a parameter 'depth'"),
        (["replay", "rec.csv", "--target", "y1", "--model", "linear", "--checkpoint",
          "none.pkl", "--resume"], "no checkpoint at none.pkl"),
        (["replay", "rec.csv", "--target", "y1", "--every", "10"], "--every needs --checkpoint"),
        (["replay", "rec.csv", "--target", "y1", "--interval", "95"], "--interval must be"),
        (["replay", "rec.csv"], "the following arguments are required: --target"),
    ],
)
def test_more_usage_errors_through_the_entry_point(data, args, message, capsys, monkeypatch):
    """The console script's ``main`` in process: the same checks without a process each."""
    d, _ = data
    monkeypatch.chdir(d)
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_model_missing_from_the_installation_is_reported_as_such(data):
    d, _ = data
    script = (
        "import sys; from onlinesparse.replay import models as m; "
        "m.MODELS['ghost'] = m.ModelSpec('ghost', 'no_such_package:Ghost', 'test'); "
        "from onlinesparse.replay.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "replay", "rec.csv", "--target", "y1", "--model",
         "ghost"], cwd=d, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "model 'ghost' is not available in this installation" in proc.stderr
