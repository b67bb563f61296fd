"""Replays on a Dask cluster: a ``LocalCluster`` of two worker processes on 127.0.0.1.

Needs the ``dask`` extra (``pip install -e '.[dask]'``); these tests are not skipped without
it: they fail, so that a CI without Dask is noticed.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from distributed import Client, LocalCluster

from onlinesparse.replay.cli import main
from onlinesparse.replay.cluster import dask_client
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.grid import evaluate_grid
from onlinesparse.replay.parallel import replay_many
from tests.slow_model import SITECUSTOMIZE, SLOW_MODEL
from tests.test_parallel import (
    check_results_against_sequential_run,
    make_jobs,
    make_recording,
)


@pytest.fixture(scope="module")
def cluster():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None,
                           scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def client(cluster):
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return make_recording(tmp_path_factory.mktemp("dask"))


def table(out):
    """The rows of a grid table but their latency and status columns, split into cells."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank"))
    rows = [lines[header]] + [line for line in lines[header + 2 :] if line[:4].strip().isdigit()]
    return [row.split()[:-2] for row in rows]


def _blas_threads():
    from threadpoolctl import threadpool_info

    return sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"})


def test_every_job_on_dask_equals_a_sequential_local_run_and_failures_stay_apart(
    client, recording, tmp_path
):
    jobs = make_jobs(recording, out=tmp_path)
    results = replay_many(jobs, client)
    check_results_against_sequential_run(jobs, results)

    # The jobs ran on the cluster's worker processes, both of them, not here.
    worker_pids = set(client.run(os.getpid).values())
    ran_in = {int(r.worker.rsplit(":", 1)[1]) for r in results}
    assert ran_in <= worker_pids and os.getpid() not in ran_in
    assert len(ran_in) == 2
    # Each job wrote its outputs on its worker.
    for result in results[:-2]:
        written = json.loads((result.out / "metrics.json").read_text())
        assert written["targets"][result.job.target]["n_scored"] == result.metrics["n_scored"]
    # One BLAS thread per worker process.
    assert set(map(tuple, client.run(_blas_threads).values())) == {(1,)}


def test_replay_command_on_a_running_scheduler_equals_local_workers(
    cluster, client, recording, tmp_path, capsys
):
    args = ["replay", str(recording), "--target", "y1", "--target", "y2", "--time", "time",
            "--model", "vbls", "--warmup", "50", "--no-report", "--separate"]
    assert main([*args, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    assert main([*args, "--scheduler", cluster.scheduler_address,
                 "--out", str(tmp_path / "dask")]) == 0
    out = capsys.readouterr().out
    assert "y1" in out and "y2" in out and f"to {tmp_path / 'dask'}/" in out
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "dask" / "predictions.parquet"),
                                  pd.read_parquet(tmp_path / "local" / "predictions.parquet"))
    got = json.loads((tmp_path / "dask" / "metrics.json").read_text())["targets"]
    want = json.loads((tmp_path / "local" / "metrics.json").read_text())["targets"]
    for target in ("y1", "y2"):
        for key in ("mae", "rmse", "nmse", "r2", "coverage", "n_scored", "relevance",
                    "diagnostics"):
            assert got[target][key] == want[target][key], (target, key)


def test_grid_command_with_its_own_local_cluster_ranks_as_the_local_pool(
    client, recording, tmp_path, capsys
):
    args = ["grid", str(recording), "--target", "y1", "--target", "y2", "--time", "time",
            "--model", "rbf", "--grid", "max-basis=5,10", "--param", "window_size=100",
            "--warmup", "50"]
    assert main([*args, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    local = capsys.readouterr().out
    assert main([*args, "--scheduler", "local", "--workers", "2",
                 "--out", str(tmp_path / "dask")]) == 0
    dask = capsys.readouterr().out
    # The same ranks and metrics, all but the latency column.
    assert table(dask) == table(local)
    rows = table(local)
    assert rows[0][:4] == ["rank", "model", "row", "max_basis"]
    # (ranked by nMSE; which budget wins on this small recording is the models' business)
    assert sorted(row[3] for row in rows[1:] if row[2] == "grid") == ["10", "5"]
    scores = [float(row[4]) for row in rows[1:]]
    assert scores == sorted(scores)
    assert sorted((row[1], row[2]) for row in rows[1:] if row[2] != "grid") == [
        ("lin1", "baseline"), ("rbf", "default")]
    assert [line for line in local.splitlines() if line.startswith("best: ")] == [
        line for line in dask.splitlines() if line.startswith("best: ")]
    local_saved = json.loads((tmp_path / "local" / "grid.json").read_text())
    dask_saved = json.loads((tmp_path / "dask" / "grid.json").read_text())
    assert [s["score"] for s in local_saved["settings"]] == [
        s["score"] for s in dask_saved["settings"]]

    # The Python API on the module's cluster agrees too.
    result = evaluate_grid(recording, ["y1", "y2"], {"max_basis": [5, 10]}, model="rbf",
                           params={"window_size": 100}, options={"time": "time", "warmup": 50},
                           client=client)
    assert [row.score for row in result.rows] == [s["score"] for s in local_saved["settings"]]


def test_an_unreachable_scheduler_is_a_usage_error_naming_it():
    with pytest.raises(UsageError, match="cannot reach the Dask scheduler at 'tcp://127.0.0.1:9'"):
        with dask_client("tcp://127.0.0.1:9", timeout=1):
            pass
    with pytest.raises(UsageError, match="workers"):
        replay_many([], client=object(), workers=2)


def test_ctrl_c_on_a_local_cluster_saves_checkpoints_and_resume_finishes_the_same_run(tmp_path):
    """Ctrl-C reaches the terminal's whole process group, cluster workers included: the
    replay still stops between samples, saves every target's checkpoint and exits 130."""
    rng = __import__("numpy").random.default_rng(3)
    X = rng.normal(size=(3000, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["y1"] = X[:, 0] + 0.1 * rng.normal(size=3000)
    frame["y2"] = X[:, 1] - X[:, 2] + 0.1 * rng.normal(size=3000)
    frame.to_parquet(tmp_path / "rec.parquet", index=False)
    # A model that sleeps 2 ms a sample, importable in every process, cluster workers too.
    (tmp_path / "slowmodel.py").write_text(SLOW_MODEL)
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path),
                                                         os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "onlinesparse.replay.cli", "replay", "rec.parquet", "--model",
               "slow", "--features", "a,b,c", "--no-report", "--target", "y1", "--target", "y2"]
    ck = tmp_path / "ck" / "state.pkl"
    proc = subprocess.Popen(
        [*command, "--scheduler", "local", "--workers", "2", "--out", "out", "--checkpoint",
         str(ck), "--every", "25"],
        cwd=tmp_path, env={**env, "SLOW_TEST_MODEL": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        expected = [ck.with_name(f"state.{t}.pkl") for t in ("y1", "y2")]
        deadline = time.monotonic() + 120
        while not all(p.exists() for p in expected):  # both targets are under way
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "Interrupted: saving a checkpoint" in stderr
    partial = pd.read_parquet(tmp_path / "out" / "predictions.parquet")
    assert set(partial["target"]) == {"y1", "y2"} and 0 < len(partial) < 6000

    for args in (["--out", "out", "--checkpoint", str(ck), "--resume"], ["--out", "whole"]):
        done = subprocess.run([*command, "--workers", "1", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out" / "predictions.parquet"),
                                  pd.read_parquet(tmp_path / "whole" / "predictions.parquet"))
