"""Replaying recorded sensor or neural data through a model as if it were live.

* :mod:`~onlinesparse.replay.reader`: CSV, Parquet and NPZ recordings read in chunks;
* :mod:`~onlinesparse.replay.models`: the models the command line knows, by name;
* :mod:`~onlinesparse.replay.metrics`: accuracy, latency and diagnostics accumulators;
* :mod:`~onlinesparse.replay.checkpoint`: saving and resuming a replay;
* :mod:`~onlinesparse.replay.runner`: progressive validation (predict, score, learn);
* :mod:`~onlinesparse.replay.demo`: the simulated motor-cortex demonstration.
"""

from onlinesparse.replay.errors import ReplayError, ReplayFailure, UsageError
from onlinesparse.replay.models import MODELS, ModelParam, ModelSpec, build_model
from onlinesparse.replay.reader import Columns, Recording, open_recording
from onlinesparse.replay.runner import ReplayConfig, ReplayOutcome, TargetResult, run_replay

__all__ = [
    "MODELS",
    "Columns",
    "ModelParam",
    "ModelSpec",
    "Recording",
    "ReplayConfig",
    "ReplayError",
    "ReplayFailure",
    "ReplayOutcome",
    "TargetResult",
    "UsageError",
    "build_model",
    "open_recording",
    "run_replay",
]
