"""Many independent replays at once: on local worker processes, or on a Dask cluster.

A replay of one target of one recording through one model is a unit of work that needs
nothing from the others. This module runs many of them, a whole lab's recordings, hundreds
of channels, or a grid of model settings, and collects their metrics:

* :class:`ReplayJob` says what to replay: a recording (a path, never the data), a target and
  the model's settings, plus any other option of
  :class:`~onlinesparse.replay.runner.ReplayConfig`, and optionally where to write the job's
  predictions, metrics and report;
* :func:`replay_many` runs a list of jobs, in local worker processes by default, or on a
  ``distributed.Client``; a job that fails is reported with its identity in its
  :class:`JobResult` and does not lose the others' results;
* :func:`evaluate_grid` (in :mod:`onlinesparse.parallel_grid`) replays a grid of model
  settings on a recording with progressive validation and ranks them (``onlinesparse grid``);
* :class:`DaskPool` (in :mod:`onlinesparse.parallel_dask`, with :func:`dask_client`) runs the
  targets of one ``onlinesparse replay`` on a Dask cluster (``--scheduler``), with its
  progress bar, checkpoints and Ctrl-C.

The names of those two modules are importable from this one as well.

Every path runs the same job function, :func:`onlinesparse.replay.runner.run_job`, so a job
gives the same metrics wherever it runs. Dask (``pip install 'onlinesparse[dask]'``) is
imported only when a client or a scheduler is asked for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from onlinesparse._blas import one_thread_here, pin_this_process
from onlinesparse.replay.config import Job, ReplayConfig
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.outputs import check_writable, write_outputs
from onlinesparse.replay.pool import watch_parent
from onlinesparse.replay.reader import open_recording
from onlinesparse.replay.runner import run_job

if TYPE_CHECKING:  # only for annotations: importing distributed is what the local path avoids
    from distributed import Client

__all__ = [
    "ReplayJob",
    "JobResult",
    "execute_job",
    "replay_many",
    "format_failures",
]

#: Options of a job that are fields of :class:`ReplayJob` itself or that it sets itself.
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
        Path of the CSV, Parquet or NPZ recording.
    target
        The target column.
    model
        A name from :data:`onlinesparse.replay.models.MODELS`.
    params
        Constructor keywords of the model, e.g. ``{"max_basis": 20, "window": 500}``.
    options
        Any other field of :class:`~onlinesparse.replay.runner.ReplayConfig` (``features``,
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
    :func:`~onlinesparse.replay.runner.run_job` and, with ``job.out``, writes its outputs
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


def _check_jobs(jobs: Sequence[ReplayJob]) -> list[ReplayJob]:
    jobs = list(jobs)
    for i, job in enumerate(jobs):
        if not isinstance(job, ReplayJob):
            raise UsageError(f"job {i} is a {type(job).__name__}, not a ReplayJob")
    absolute = [job.absolute() for job in jobs]
    owners: dict[Path, int] = {}
    for i, job in enumerate(absolute):
        if job.out is None:
            continue
        if job.out in owners:
            first = owners[job.out]
            raise UsageError(
                f"jobs {first} ({jobs[first].name!r}) and {i} ({job.name!r}) would both write "
                f"to {job.out}; give each job its own out directory"
            )
        owners[job.out] = i
    return absolute


def replay_many(
    jobs: Sequence[ReplayJob],
    client: Client | None = None,
    *,
    workers: int | None = None,
    progress: bool | None = None,
    stream: TextIO | None = None,
) -> list[JobResult]:
    """Run independent replays and return their results, in the order of ``jobs``.

    Parameters
    ----------
    jobs
        The replays.
    client
        A ``distributed.Client``: the jobs run as tasks on its cluster. ``None`` runs them
        on this machine without importing Dask.
    workers
        Without a client: worker processes (default one per job up to the number of CPUs;
        ``1`` runs the jobs one after the other in this process).
    progress
        A progress bar counting finished jobs; ``None`` when ``stream`` is a terminal.
    stream
        Where the progress bar goes (default standard error).

    Returns
    -------
    list of JobResult
        One per job. A job that fails has status ``failed`` (or the replay's own failure
        status) and its reason in ``error``; the others' results are complete.

    Raises
    ------
    UsageError
        When the list itself is wrong (not jobs, two jobs writing to one directory,
        ``workers`` below 1 or given with a client); nothing has run then.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, pandas as pd
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> x = np.random.default_rng(0).normal(size=200)
    >>> pd.DataFrame({"x": x, "y": 2 * x}).to_csv(d / "r.csv", index=False)
    >>> jobs = [ReplayJob(d / "r.csv", "y", "linear", {"lr": lr}, options={"warmup": 50})
    ...         for lr in (0.01, 0.05)]
    >>> [r.status for r in replay_many(jobs, workers=1)]
    ['completed', 'completed']

    """
    if workers is not None and workers < 1:
        raise UsageError("workers must be at least 1")
    if client is not None and workers is not None:
        raise UsageError("workers applies to the local pool; a Dask client has its own workers")
    submitted = _check_jobs(jobs)
    originals = list(jobs)
    if not submitted:
        return []
    bar = _JobProgress(len(submitted), progress, stream or sys.stderr)
    try:
        if client is not None:
            from onlinesparse.parallel_dask import _run_on_dask

            results = _run_on_dask(submitted, client, bar)
        else:
            n_workers = min(workers or os.cpu_count() or 1, len(submitted))
            results = _run_locally(submitted, n_workers, bar)
    finally:
        bar.close()
    # Report the jobs as the caller wrote them, not with the absolute paths they ran with.
    for result in results:
        result.job = originals[result.index]
    return results


class _JobProgress:
    def __init__(self, total: int, enabled: bool | None, stream: TextIO):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="job", file=stream, desc="replays",
                        disable=not (enabled if enabled is not None else stream.isatty()))
        self.failed = 0

    def done(self, result: JobResult) -> None:
        if not result.ok:
            self.failed += 1
            self.bar.set_postfix_str(f"failed={self.failed}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def _run_locally(jobs: list[ReplayJob], n_workers: int, bar: _JobProgress) -> list[JobResult]:
    results: list[JobResult | None] = [None] * len(jobs)
    with one_thread_here():
        if n_workers <= 1:
            for i, job in enumerate(jobs):
                results[i] = execute_job(job, i)
                bar.done(results[i])
            return results  # type: ignore[return-value]
        # Spawned, not forked, as in runner.WorkerPool; started here, so they inherit the
        # one-thread BLAS environment, and deaf to Ctrl-C, which this process handles.
        context = multiprocessing.get_context("spawn")
        executor = ProcessPoolExecutor(n_workers, mp_context=context,
                                       initializer=watch_parent, initargs=(os.getpid(),))
        try:
            with _sigint_ignored_by_children():
                futures = {executor.submit(_execute_in_worker, job, i): i
                           for i, job in enumerate(jobs)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    i = futures[future]
                    try:
                        results[i] = future.result()
                    except BrokenProcessPool as exc:
                        results[i] = _failed(
                            i, jobs[i], f"the worker process running it died ({exc})"
                        )
                    except Exception as exc:  # e.g. a result that cannot be pickled
                        results[i] = _failed(i, jobs[i], f"{type(exc).__name__}: {exc}")
                    bar.done(results[i])
        except BaseException:
            # Ctrl-C (or an error here): a running replay cannot be interrupted between two
            # samples from outside, and waiting for it could take minutes: end the workers.
            for process in list((getattr(executor, "_processes", None) or {}).values()):
                process.terminate()
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        executor.shutdown(wait=True)
    return results  # type: ignore[return-value]


def format_failures(results: Sequence[JobResult]) -> list[str]:
    """One line per job that did not complete (see :meth:`JobResult.describe`)."""
    return [r.describe() for r in results if not r.ok]


@contextlib.contextmanager
def _sigint_ignored_by_children() -> Iterator[None]:
    """Processes started inside ignore Ctrl-C (which reaches the terminal's whole process
    group): the parent decides what Ctrl-C means, as for runner.WorkerPool's workers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# The Dask and grid parts live in their own modules (imported only when used: importing
# distributed is what the local path avoids); their names stay importable from here.
_MOVED = {
    "onlinesparse.parallel_dask": ("DASK_HINT", "import_distributed", "dask_client", "DaskPool"),
    "onlinesparse.parallel_grid": ("GRID_METRICS", "parse_grid", "grid_settings", "GridRow",
                                   "GridResult", "evaluate_grid", "format_grid"),
}


def __getattr__(name: str) -> Any:
    import importlib

    for module, names in _MOVED.items():
        if name in names:
            return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
