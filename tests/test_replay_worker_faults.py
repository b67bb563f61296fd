"""Worker processes: they die with their parent, and a dead worker is an error message.

The replay must still be running when the process is killed, so it uses a model that sleeps
2 ms per sample while ``SLOW_TEST_MODEL`` is set, registered through a ``sitecustomize``
module that every process of the command imports (as in ``test_cli_interrupt.py``). The
processes are found through ``/proc``: Linux only.
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.slow_model import slow_replay_setup

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="finds processes through /proc")

@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return slow_replay_setup(tmp_path_factory.mktemp("workers"), 6000, SLOW_TEST_MODEL="1")


def _start(d, env, out, *extra):
    command = [sys.executable, "-m", "onlinesparse.replay.cli", "replay", str(d / "rec.parquet"),
               "--target", "y1", "--target", "y2", "--features", "a,b,c", "--model", "slow",
               "--out", str(out), "--no-report", "--chunksize", "100", *extra]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _state(pid):
    """The process's state letter (``Z`` zombie), or ``None`` when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _alive(pid):
    return _state(pid) not in (None, "Z")


def _workers(parent):
    """Spawned multiprocessing workers whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if ppid == parent and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def _wait_until_replaying(proc, out, timeout=120.0):
    """The two workers' pids once both have spooled predictions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        spools = list((out / ".spool").glob("*.bin")) if (out / ".spool").exists() else []
        workers = _workers(proc.pid)
        if len(workers) == 2 and len(spools) == 2 and all(s.stat().st_size for s in spools):
            return workers
        time.sleep(0.1)
    raise AssertionError("the workers did not start replaying in time")


def test_workers_end_when_their_parent_is_killed(setup, tmp_path):
    d, env = setup
    proc = _start(d, env, tmp_path / "out", "--workers", "2")
    workers = []
    try:
        workers = _wait_until_replaying(proc, tmp_path / "out")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(2.0)
        assert [pid for pid in workers if _alive(pid)] == []
    finally:
        for pid in workers:  # survivors (a failure) hold the pipes open: end them
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def _kill_one_worker(proc: subprocess.Popen, out, timeout: float) -> str:
    """SIGKILL one worker once the replay is under way; the run's stderr (the run is
    killed if it has not ended by then)."""
    try:
        workers = _wait_until_replaying(proc, out)
        os.kill(workers[0], signal.SIGKILL)
        return proc.communicate(timeout=timeout)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_killed_worker_is_an_error_message_and_the_outputs_are_written(setup, tmp_path):
    d, env = setup
    out = tmp_path / "out"
    proc = _start(d, env, out, "--workers", "2", "--predictions-format", "csv")
    stderr = _kill_one_worker(proc, out, timeout=120)
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    assert "onlinesparse: error: y1: the worker process replaying it died" in stderr
    assert (out / "metrics.json").exists()
    predictions = pd.read_csv(out / "predictions.csv")
    assert len(predictions) > 0  # what the workers had spooled before the pool broke


def test_a_dask_worker_killed_past_allowed_failures_is_an_error_message(setup, tmp_path):
    """KilledWorker (the task's worker died more often than ``allowed-failures``) becomes the
    target's error; the other target finishes and the outputs are written."""
    d, env = setup
    out = tmp_path / "out"
    env = {**env, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    proc = _start(d, env, out, "--scheduler", "local", "--workers", "2",
                  "--predictions-format", "csv")
    stderr = _kill_one_worker(proc, out, timeout=180)
    assert proc.returncode == 1, stderr
    # No traceback of ours. (Depending on timing, distributed's own logger may print the
    # traceback of a coroutine it cancelled when the worker died — event_wait, seen on a
    # clean clone — which is its log, not an unhandled error of the replay.)
    ours = re.compile(r'File "[^"]*/onlinesparse/(?!\.venv/)[^"]*\.py"')
    assert not ours.search(stderr), stderr
    assert "the Dask task replaying it failed (KilledWorker" in stderr
    summary = (out / "metrics.json").read_text()
    assert '"worker_died"' in summary and '"completed"' in summary
