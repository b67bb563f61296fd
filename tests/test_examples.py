"""Every script in examples/ runs to the end (a short run each): an example that breaks
with the API it shows is a bug a new user meets first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(("script", "arguments"), [
    ("control_loop.py", ["1"]),  # (the robot is pybullet's: in the test extra)
    ("river_pipeline.py", []),
    ("replay_csv.py", ["{tmp}"]),
    ("export_river_dataset.py", ["TrumpApproval", "{tmp}/trump.csv"]),
])
def test_the_example_runs(script, arguments, tmp_path):
    command = [sys.executable, str(EXAMPLES / script)]
    command += [a.format(tmp=tmp_path) for a in arguments]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()  # (each prints what it shows)
