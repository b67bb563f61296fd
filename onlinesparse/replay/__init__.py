"""The replay application: recorded sensor or neural data through a model as if it were live.

Everything here is the application built on the estimators (its command line, reports and
scale-out); the estimators themselves never import it. It needs the ``replay`` extra
(``pip install 'onlinesparse[replay]'``: matplotlib, pyarrow, tqdm).

* :mod:`~onlinesparse.replay.cli`: the ``onlinesparse`` command
  (:mod:`~onlinesparse.replay.console`: its console script, which loads it inside a Ctrl-C
  handler);
* :mod:`~onlinesparse.replay.reader`: CSV, Parquet, NPZ
  (:mod:`~onlinesparse.replay.npz_source`) and NWB (:mod:`~onlinesparse.replay.nwb_source`)
  recordings read in chunks, one float64 per number (:mod:`~onlinesparse.replay.values`);
* :mod:`~onlinesparse.replay.checks`: what looks wrong about the chosen columns;
  :mod:`~onlinesparse.replay.stream_checks`: checks of the whole recording as it streams
  (stuck channels, duplicated rows, timestamps, missing values), said once by
  :mod:`~onlinesparse.replay.check_report`;
* :mod:`~onlinesparse.replay.models`: the models the command line knows, by name;
* :mod:`~onlinesparse.replay.config`: what a replay is asked to do and what it returns;
* :mod:`~onlinesparse.replay.metrics`: accuracy, latency and diagnostics accumulators;
* :mod:`~onlinesparse.replay.collector`: Python's garbage collector kept out of the timing;
* :mod:`~onlinesparse.replay.target`: one target's progressive validation (predict, score,
  learn), summed up by :mod:`~onlinesparse.replay.summary`;
* :mod:`~onlinesparse.replay.checkpoint`: saving and resuming a replay;
* :mod:`~onlinesparse.replay.runner`: every target of a replay, Ctrl-C and the outputs;
* :mod:`~onlinesparse.replay.pool`, :mod:`~onlinesparse.replay.progress`: worker processes
  and progress bars;
* :mod:`~onlinesparse.replay.outputs`, :mod:`~onlinesparse.replay.report`,
  :mod:`~onlinesparse.replay.plots`: predictions, metrics and the HTML report;
* :mod:`~onlinesparse.replay.jobs`, :mod:`~onlinesparse.replay.parallel`,
  :mod:`~onlinesparse.replay.cluster`, :mod:`~onlinesparse.replay.grid`: many replays, on
  local processes or a Dask cluster, and a grid of settings;
* :mod:`~onlinesparse.replay.demo`: the simulated motor-cortex demonstration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onlinesparse._lazy import lazy_names
from onlinesparse.replay.errors import ReplayError, ReplayFailure, UsageError

# Where the rest live, imported on first use (onlinesparse._lazy): the console script
# imports this package before its Ctrl-C handler runs.
_PUBLIC = {
    "evaluate_grid": "onlinesparse.replay.grid",
    "JobResult": "onlinesparse.replay.jobs",
    "ReplayJob": "onlinesparse.replay.jobs",
    "MODELS": "onlinesparse.replay.models",
    "ModelParam": "onlinesparse.replay.models",
    "ModelSpec": "onlinesparse.replay.models",
    "build_model": "onlinesparse.replay.models",
    "replay_many": "onlinesparse.replay.parallel",
    "Columns": "onlinesparse.replay.reader",
    "Recording": "onlinesparse.replay.reader",
    "open_recording": "onlinesparse.replay.reader",
    "ReplayConfig": "onlinesparse.replay.runner",
    "ReplayOutcome": "onlinesparse.replay.runner",
    "TargetResult": "onlinesparse.replay.runner",
    "run_replay": "onlinesparse.replay.runner",
}

if TYPE_CHECKING:  # (what static tools see)
    from onlinesparse.replay.grid import evaluate_grid
    from onlinesparse.replay.jobs import JobResult, ReplayJob
    from onlinesparse.replay.models import MODELS, ModelParam, ModelSpec, build_model
    from onlinesparse.replay.parallel import replay_many
    from onlinesparse.replay.reader import Columns, Recording, open_recording
    from onlinesparse.replay.runner import (
        ReplayConfig,
        ReplayOutcome,
        TargetResult,
        run_replay,
    )

__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())

__all__ = [
    "MODELS",
    "Columns",
    "JobResult",
    "ModelParam",
    "ModelSpec",
    "Recording",
    "ReplayConfig",
    "ReplayError",
    "ReplayFailure",
    "ReplayJob",
    "ReplayOutcome",
    "TargetResult",
    "UsageError",
    "build_model",
    "evaluate_grid",
    "open_recording",
    "replay_many",
    "run_replay",
]
