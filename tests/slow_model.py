"""A deliberately slow model registered under the name ``slow``, for tests that interrupt,
kill or resume a replay while it runs (imported by subprocesses through sitecustomize)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

SLOW_MODEL = '''
import os
import time

from river import linear_model


class SlowLinear(linear_model.LinearRegression):
    def learn_one(self, x, y, w=1.0):
        if os.environ.get("SLOW_TEST_MODEL"):
            time.sleep(0.002)
        super().learn_one(x, y, w)
'''
SITECUSTOMIZE = '''
from onlinesparse.replay import models

models.MODELS["slow"] = models.ModelSpec("slow", "slowmodel:SlowLinear", "test model")
'''


def slow_replay_setup(d: Path, n: int, **env_extra: str) -> tuple[Path, dict[str, str]]:
    """Write the slow model, its registration and a recording of ``n`` rows (inputs a, b,
    c; targets y1, y2) into ``d``; returns ``d`` and the environment that makes a
    subprocess see the model."""
    (d / "slowmodel.py").write_text(SLOW_MODEL)
    (d / "sitecustomize.py").write_text(SITECUSTOMIZE)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["y1"] = X[:, 0] + 0.1 * rng.normal(size=n)
    frame["y2"] = X[:, 1] - X[:, 2] + 0.1 * rng.normal(size=n)
    frame.to_parquet(d / "rec.parquet", index=False)
    env = {**os.environ, **env_extra,
           "PYTHONPATH": os.pathsep.join([str(d), os.environ.get("PYTHONPATH", "")])}
    return d, env
