"""Progressive-validation replay of a recording through a model, for one or several targets.

For every row: predict, score the prediction against the truth, then learn, exactly as if
the recording were live. :func:`run_replay` runs all targets of a replay, shows the progress
bar, handles Ctrl-C and writes the outputs. Several targets share one model when the model
has a multi-output form and ``separate`` is not set (:mod:`~onlinesparse.replay.shared`:
one job, in this process); otherwise each target has a model of its own, replayed by
:func:`~onlinesparse.replay.target.run_job` (in worker processes when there are several).

A fault costs as little as it can (``docs/replay_failures.md`` has the whole policy): a
corrupt row is skipped and counted, ``--out`` and ``--checkpoint`` are checked before the
first row, and a failed write, a failed read or a model that raises ends only its target,
with a status and a message, while every output produced so far is still written. The
configuration and result records live in :mod:`~onlinesparse.replay.config`, one target's
replay in :mod:`~onlinesparse.replay.target`, the writing of outputs in
:mod:`~onlinesparse.replay.outputs` and the worker processes in
:mod:`~onlinesparse.replay.pool`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from onlinesparse._blas import one_thread_here
from onlinesparse.replay import models as registry
from onlinesparse.replay.checkpoint import check_key, recording_fingerprint
from onlinesparse.replay.config import (
    EXIT_INTERRUPTED,
    PREDICTION_COLUMNS,
    Job,
    ReplayConfig,
    ReplayOutcome,
    SharedResult,
    StopFlag,
    TargetResult,
)
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.extra import require_replay_extra
from onlinesparse.replay.outputs import check_writable, format_summary, write_outputs
from onlinesparse.replay.pool import WorkerPool
from onlinesparse.replay.progress import RowProgress
from onlinesparse.replay.reader import open_recording
from onlinesparse.replay.shared import load_shared, replay_shared, shared_fingerprint
from onlinesparse.replay.target import (
    _TargetState,
    checkpoint_file,
    default_checkpoint,
    fingerprint,
    load_resumable,
    replay_target,
    run_job,
)

__all__ = [
    "ReplayConfig",
    "Job",
    "TargetResult",
    "ReplayOutcome",
    "StopFlag",
    "WorkerPool",
    "replay_target",
    "run_job",
    "run_replay",
    "write_outputs",
    "format_summary",
    "PREDICTION_COLUMNS",
    "EXIT_INTERRUPTED",
    "checkpoint_file",
    "default_checkpoint",
]

# Checkpoints written before one target's replay had its own module pickled their state as
# onlinesparse.replay.runner._TargetState: the name stays here so that they still load.
_PICKLED_NAMES = (_TargetState,)


def _check_paths(cfg: ReplayConfig, shared: bool = False) -> None:
    """Refuse, before replaying, an ``--out`` or ``--checkpoint`` that cannot be written."""
    if cfg.out is not None:
        check_writable(Path(cfg.out), f"to --out {cfg.out}")
    if cfg.checkpoint is None:
        return
    paths = ([Path(cfg.checkpoint)] if shared else
             [checkpoint_file(Path(cfg.checkpoint), t, cfg.targets) for t in cfg.targets])
    for path in paths:
        if path.is_dir():
            raise UsageError(f"cannot write the checkpoint {path}: it is a directory")
        check_writable(path.parent, f"the checkpoint {path}")
    check_key()


def run_replay(
    cfg: ReplayConfig, stream: TextIO | None = None, pool: WorkerPool | None = None
) -> ReplayOutcome:
    """Replay every target of ``cfg`` and write the outputs.

    Several targets run in worker processes (``cfg.workers``), in ``pool`` when one is given.
    A pool is any object with the methods of :class:`WorkerPool` that this function uses
    (``event.set()`` and ``run(cfg, columns, notify)``), such as
    :class:`onlinesparse.replay.cluster.DaskPool`; a given pool is used even for one target.

    Returns the outcome whose ``exit_code`` is 0 (done), 1 (stopped by a corrupt row under
    ``strict`` or a model error) or 130 (interrupted; a checkpoint was saved). Usage
    problems raise :class:`UsageError` before anything runs.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, pandas as pd
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=300)
    >>> pd.DataFrame({"x": x, "y": 2 * x + 0.1 * rng.normal(size=300)}).to_csv(d / "r.csv")
    >>> cfg = ReplayConfig(d / "r.csv", targets=["y"], features=["x"], model="linear",
    ...                    model_params={"lr": 0.05}, warmup=50, workers=1)
    >>> outcome = run_replay(cfg)
    >>> outcome.exit_code, outcome.results[0].metrics["r2"] > 0.9
    (0, True)

    """
    require_replay_extra("run_replay")
    stream = stream or sys.stderr
    cfg.check()
    started = time.perf_counter()
    recording = open_recording(cfg.recording, cfg.bin_ms)
    columns = recording.select(cfg.targets, cfg.features, cfg.time)
    cfg.targets = list(columns.targets)  # an NWB series' name stands for its channels
    shared = registry.shares_model(cfg.model, len(cfg.targets), cfg.separate)
    _check_before_running(cfg, columns, shared)
    progress = RowProgress(cfg, recording, stream)
    try:
        results, shared_result = _run_targets(cfg, columns, pool, progress, shared)
    finally:
        progress.close()
    outcome = write_outputs(cfg, columns, results, recording, started=started,
                            shared=shared_result)
    outcome.elapsed = time.perf_counter() - started
    return outcome


def _check_before_running(cfg: ReplayConfig, columns: Any, shared: bool = False) -> None:
    """Everything that can refuse the run, before any worker starts: the model and its
    parameters, the checkpoints to resume, and the paths to write."""
    registry.build_model(cfg.model, cfg.model_params, cfg.standardize, multi_target=shared)
    if cfg.resume and shared:
        load_shared(Path(cfg.checkpoint), shared_fingerprint(cfg, columns),
                    recording_fingerprint(cfg.recording))
    elif cfg.resume:
        recording_fp = recording_fingerprint(cfg.recording)
        for target in cfg.targets:
            load_resumable(
                checkpoint_file(Path(cfg.checkpoint), target, cfg.targets),
                fingerprint(cfg, columns, target),
                recording_fp,
            )
    _check_paths(cfg, shared)


def _run_targets(
    cfg: ReplayConfig, columns: Any, pool: WorkerPool | None, progress: RowProgress,
    shared: bool = False,
) -> tuple[list[TargetResult], SharedResult | None]:
    """Every target's result, in this process, in ``pool`` or in a pool of its own, and a
    shared model's own result (``shared``: one job, run here whatever the pool); Ctrl-C asks
    them to stop at the next sample (twice: quit without saving)."""
    stop = StopFlag()
    worker_events: list[Any] = []

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True
        for event in worker_events:
            event.set()
        progress.write(
            "Interrupted: saving a checkpoint at the current row "
            "(press Ctrl-C again to quit without saving)…"
        )

    def notify(kind: str, payload: Any) -> None:
        if kind == "progress":
            progress.update(*payload)
        elif kind == "warn" and not cfg.quiet:
            progress.write(f"warning: {payload}")

    n_workers = min(cfg.workers or min(len(cfg.targets), os.cpu_count() or 1),
                    len(cfg.targets))
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.signal(signal.SIGINT, on_sigint) if in_main_thread else None
    try:
        with one_thread_here():
            if shared:
                return _run_shared(cfg, columns, stop, notify)
            if pool is not None:
                worker_events.append(pool.event)
                return pool.run(cfg, columns, notify), None
            if n_workers <= 1:
                return [run_job(Job(cfg, t, columns), stop, notify) for t in cfg.targets], None
            with WorkerPool(n_workers) as own:
                worker_events.append(own.event)
                return own.run(cfg, columns, notify), None
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)


def _run_shared(cfg: ReplayConfig, columns: Any, stop: StopFlag, notify: Any
                ) -> tuple[list[TargetResult], SharedResult]:
    """Replay every target through one shared model here, then draw its report's parts."""
    results, shared = replay_shared(cfg, columns, stop, notify)
    if cfg.out is not None and cfg.report:
        from onlinesparse.replay.shared_summary import render_shared_run

        render_shared_run(cfg, columns, results, shared)
    return results, shared
