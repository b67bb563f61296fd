"""One independent replay as a unit of work: a :class:`ReplayJob`, its :class:`JobResult`,
and :func:`execute_job`, the one function every way of running jobs calls.

A job holds paths and settings only, never the data, so it is cheap to send to a worker
process or a Dask worker; :func:`execute_job` opens the recording where it runs, replays the
job's target with :func:`~onlinesparse.replay.target.run_job` and writes the job's outputs, so
a job gives the same metrics wherever it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onlinesparse._blas import pin_this_process
from onlinesparse.replay.config import Job, ReplayConfig
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.outputs import check_writable, write_outputs
from onlinesparse.replay.reader import open_recording
from onlinesparse.replay.target import run_job

__all__ = ["ReplayJob", "JobResult", "execute_job"]

_RESERVED_OPTIONS = {"recording", "targets", "model", "model_params", "out", "workers",
                     "progress"}
_CONFIG_FIELDS = {f.name for f in dataclasses.fields(ReplayConfig)}


# ---------------------------------------------------------------------------------------
# Jobs and their results


@dataclass
class ReplayJob:
    """One independent replay: a recording, a target and the model's settings.

    A job holds paths and settings only. The worker that runs it opens the recording
    itself, so the recording must be visible there at the same path (see
    ``docs/scale_out.md``); relative paths are made absolute where the job is submitted.

    Parameters
    ----------
    recording
        Path of the CSV, Parquet, NPZ or NWB recording.
    target
        The target column.
    model
        A name from :data:`onlinesparse.replay.models.MODELS`.
    params
        Constructor keywords of the model, e.g. ``{"max_basis": 20, "window": 500}``.
    options
        Any other field of :class:`~onlinesparse.replay.config.ReplayConfig` (``features``,
        ``time``, ``warmup``, ``standardize``, ``interval``, ``chunksize``, ``max_rows``,
        ``strict``, ``report``, ``predictions_format``, ``checkpoint``, …).
    out
        Directory where the job writes its predictions, ``metrics.json`` and report;
        ``None`` writes nothing (the metrics come back in the :class:`JobResult`).
    name
        How results and messages name the job; by default recording, target, model and
        parameters.
    targets
        Every target column of the replay this job is part of (default ``[target]``). None
        of them is an input of the model when ``features`` is not given, as in an
        ``onlinesparse replay`` with these ``--target`` options; otherwise each target
        would see the others as features.

    Examples
    --------
    >>> job = ReplayJob("session1.parquet", "emg_biceps", "rbf", {"max_basis": 20},
    ...                 options={"time": "time", "warmup": 200})
    >>> job.name
    'session1.parquet:emg_biceps:rbf(max_basis=20)'
    >>> ReplayJob("r.csv", "y", options={"wramup": 5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    onlinesparse.replay.errors.UsageError: job 'r.csv:y:rbf': unknown option 'wramup' (...)

    """

    recording: str | Path
    target: str
    model: str = "rbf"
    params: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    out: str | Path | None = None
    name: str | None = None
    targets: list[str] | None = None

    def __post_init__(self) -> None:
        self.params = dict(self.params or {})
        self.options = dict(self.options or {})
        self.targets = list(self.targets) if self.targets is not None else None
        if self.name is None:
            settings = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
            self.name = f"{Path(self.recording).name}:{self.target}:{self.model}" + (
                f"({settings})" if settings else ""
            )
        if self.targets is not None and self.target not in self.targets:
            raise UsageError(f"job {self.name!r}: its target {self.target!r} is not one of "
                             f"its targets {self.targets}")
        for key in self.options:
            if key in _RESERVED_OPTIONS:
                raise UsageError(
                    f"job {self.name!r}: {key!r} is not an option of a job "
                    "(recording, target(s), model, params and out are the job's own fields; "
                    "workers and progress are set by replay_many)"
                )
            if key not in _CONFIG_FIELDS:
                allowed = [f.name for f in dataclasses.fields(ReplayConfig)
                           if f.name not in _RESERVED_OPTIONS]
                raise UsageError(
                    f"job {self.name!r}: unknown option {key!r} (a job's options are fields of "
                    f"ReplayConfig: {', '.join(allowed)})"
                )

    def config(self) -> ReplayConfig:
        """The :class:`ReplayConfig` of this job, run in this process (it replays
        ``target`` only, even when ``targets`` lists others)."""
        return ReplayConfig(
            recording=Path(self.recording),
            targets=self.targets or [self.target],
            model=self.model,
            model_params=dict(self.params),
            out=Path(self.out) if self.out is not None else None,
            workers=1,
            progress=False,
            **self.options,
        )

    def absolute(self) -> ReplayJob:
        """This job with its paths made absolute here, where it is submitted."""
        paths = {k: str(Path(v).absolute()) for k, v in self.options.items()
                 if k == "checkpoint" and v is not None}
        return dataclasses.replace(
            self,
            recording=Path(self.recording).absolute(),
            out=Path(self.out).absolute() if self.out is not None else None,
            options={**self.options, **paths},
        )


#: Statuses of a replay that ran to its end (``stopped``: at ``max_rows``).
_OK_STATUSES = ("completed", "stopped")


@dataclass
class JobResult:
    """What one job measured, or why it failed.

    Attributes
    ----------
    index
        Position of the job in the list given to :func:`replay_many`.
    job
        The job.
    status
        The replay's status (``completed``, ``stopped``, ``corrupt_row``, ``model_error``),
        or ``failed`` when it could not run (missing file, unknown column, bad parameter,
        a worker that died, …).
    metrics
        The target's metrics, as in ``metrics.json`` (``None`` when the job failed before
        replaying).
    error
        Why the job did not complete: the replay's message, or the exception.
    traceback
        The formatted traceback of an unexpected exception, for debugging.
    relevance
        The model's input relevance at the end, when it has one.
    worker
        Where it ran: ``host:pid``.
    elapsed
        Seconds the job took where it ran.
    out
        The directory the job wrote to, if any.

    """

    index: int
    job: ReplayJob
    status: str
    metrics: dict[str, Any] | None = None
    error: str | None = None
    traceback: str | None = None
    relevance: dict[str, float] | None = None
    worker: str | None = None
    elapsed: float = 0.0
    out: Path | None = None

    @property
    def ok(self) -> bool:
        """Whether the replay ran to its end."""
        return self.status in _OK_STATUSES

    def describe(self) -> str:
        """One line naming the job, its status and, when it failed, why.

        >>> r = JobResult(3, ReplayJob("r.csv", "y", "linear"), "failed",
        ...               error="recording not found: r.csv", worker="node7:1234")
        >>> r.describe()
        "job 3 'r.csv:y:linear' failed on node7:1234: recording not found: r.csv"

        """
        where = f" on {self.worker}" if self.worker else ""
        why = f": {self.error}" if self.error else ""
        return f"job {self.index} {self.job.name!r} {self.status.replace('_', ' ')}{where}{why}"


def _where() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def execute_job(job: ReplayJob, index: int = 0) -> JobResult:
    """Run one job here and return its result; never raises for a failure of the job.

    The job opens its recording here, replays it with
    :func:`~onlinesparse.replay.target.run_job` and, with ``job.out``, writes its outputs
    here. It is the function every path of :func:`replay_many` runs.

    Parameters
    ----------
    job
        What to replay.
    index
        The job's position, carried into the result.

    """
    started = time.perf_counter()
    try:
        cfg = job.config()
        cfg.check()
        recording = open_recording(cfg.recording, cfg.bin_ms)
        columns = recording.select(cfg.targets, cfg.features, cfg.time)
        if cfg.out is not None:
            check_writable(Path(cfg.out), f"to {cfg.out}")
        result = run_job(Job(cfg, job.target, columns))
        outcome = write_outputs(cfg, columns, [result], recording)
    except Exception as exc:  # a failure of this job, reported, not raised
        expected = isinstance(exc, ReplayError)
        return JobResult(
            index=index,
            job=job,
            status="failed",
            error=str(exc) if expected else f"{type(exc).__name__}: {exc}",
            traceback=None if expected else traceback.format_exc(),
            worker=_where(),
            elapsed=time.perf_counter() - started,
        )
    errors = [m for m in (result.message, *outcome.errors) if m]
    return JobResult(
        index=index,
        job=job,
        # An output that could not be written fails the job, though its replay ran through.
        status="write_error" if outcome.errors and result.status in _OK_STATUSES
        else result.status,
        metrics=result.metrics,
        error="; ".join(errors) or None,
        relevance=result.relevance,
        worker=_where(),
        elapsed=time.perf_counter() - started,
        out=outcome.out,
    )


def _execute_in_worker(job: ReplayJob, index: int) -> JobResult:
    """:func:`execute_job` in a worker process (local pool or Dask), BLAS pinned first."""
    pin_this_process()  # (the package's one BLAS rule, onlinesparse._blas)
    return execute_job(job, index)


def _failed(index: int, job: ReplayJob, reason: str) -> JobResult:
    return JobResult(index=index, job=job, status="failed", error=reason)



@contextlib.contextmanager
def _sigint_ignored_by_children() -> Iterator[None]:
    """Processes started inside ignore Ctrl-C (which reaches the terminal's whole process
    group): the parent decides what Ctrl-C means, as for pool.WorkerPool's workers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
