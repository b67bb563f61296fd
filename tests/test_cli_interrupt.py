"""Ctrl-C: the replay saves a checkpoint, exits 130, and resuming finishes the same run.

The replay must still be running when the signal arrives, so it uses a model that sleeps
2 ms per sample while ``SLOW_TEST_MODEL`` is set. The model is registered through a
``sitecustomize`` module on ``PYTHONPATH``, which every Python process of the command imports
at start, including the worker processes that a multi-target replay spawns.
"""

import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.slow_model import slow_replay_setup


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return slow_replay_setup(tmp_path_factory.mktemp("interrupt"), 3000)


@pytest.fixture(scope="module")
def uninterrupted(setup):
    """Predictions of both targets from one uninterrupted, fast, in-process replay."""
    d, env = setup
    whole = subprocess.run(
        _command("--target", "y1", "--target", "y2", "--workers", "1", "--out", d / "whole"),
        cwd=d, env=env, capture_output=True, text=True, timeout=300,
    )
    assert whole.returncode == 0, whole.stderr
    return pd.read_parquet(d / "whole" / "predictions.parquet")


def _command(*args):
    return [sys.executable, "-m", "onlinesparse.replay.cli", "replay", "rec.parquet",
            "--model", "slow", "--features", "a,b,c", "--no-report", *map(str, args)]


@pytest.mark.parametrize("targets", [["y1"], ["y1", "y2"]], ids=["in-process", "workers"])
def test_ctrl_c_saves_a_checkpoint_and_resume_matches_an_uninterrupted_run(
    setup, uninterrupted, targets
):
    d, env = setup
    tag = "-".join(targets)
    target_args = [a for t in targets for a in ("--target", t)]
    workers = ["--workers", str(len(targets))]
    ck = d / f"ck-{tag}" / "state.pkl"
    out = d / f"out-{tag}"

    slow_env = {**env, "SLOW_TEST_MODEL": "1"}
    proc = subprocess.Popen(
        _command(*target_args, *workers, "--out", out, "--checkpoint", ck, "--every", "25"),
        cwd=d, env=slow_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Wait until every target has saved a periodic checkpoint: the replay is under way
    # (3000 rows at 2 ms each are far from done), then press Ctrl-C.
    expected = [ck] if len(targets) == 1 else [ck.with_name(f"state.{t}.pkl") for t in targets]
    deadline = time.monotonic() + 120
    while not all(p.exists() for p in expected):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Interrupted: saving a checkpoint" in stderr
    assert "resume with: onlinesparse replay" in stderr and "--resume" in stderr
    partial = pd.read_parquet(out / "predictions.parquet")
    assert 0 < len(partial) < 3000 * len(targets)

    resumed = subprocess.run(  # in process: a checkpoint does not depend on the worker count
        _command(*target_args, "--workers", "1", "--out", out, "--checkpoint", ck, "--resume"),
        cwd=d, env=env, capture_output=True, text=True, timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    expected = uninterrupted[uninterrupted["target"].isin(targets)].reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "predictions.parquet"), expected)


def test_ctrl_c_with_more_targets_than_workers_names_each_targets_row(tmp_path):
    """Three targets on two workers: Ctrl-C stops the two running ones part-way and the third
    before its first row. The message gives each one's row (not the smallest, 0, as if
    nothing had run), and every target resumes."""
    d, env = slow_replay_setup(tmp_path, 3000)
    frame = pd.read_parquet(d / "rec.parquet")
    frame["y3"] = frame["y1"] + frame["y2"]
    frame.to_parquet(d / "rec.parquet", index=False)
    targets = ["--target", "y1", "--target", "y2", "--target", "y3"]
    ck = d / "ck" / "state.pkl"
    proc = subprocess.Popen(
        _command(*targets, "--workers", "2", "--out", d / "out", "--checkpoint", ck,
                 "--every", "25"),
        cwd=d, env={**env, "SLOW_TEST_MODEL": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    running = [ck.with_name(f"state.{t}.pkl") for t in ("y1", "y2")]
    deadline = time.monotonic() + 120
    while not all(p.exists() for p in running):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint appeared"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    line = next(line for line in stderr.splitlines() if line.startswith("interrupted at "))
    assert "interrupted at row 0" not in line
    rows = dict((t, int(n)) for n, t in re.findall(r"row (\d+) \((y\d)\)", line))
    assert set(rows) == {"y1", "y2"} and min(rows.values()) >= 25
    assert "not started: y3" in line

    resumed = subprocess.run(
        _command(*targets, "--workers", "1", "--out", d / "out", "--checkpoint", ck,
                 "--resume"),
        cwd=d, env=env, capture_output=True, text=True, timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(pd.read_parquet(d / "out" / "predictions.parquet")) == 3 * 3000
