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
* :func:`evaluate_grid` replays a grid of model settings on a recording with progressive
  validation and ranks them (``onlinesparse grid``);
* :class:`DaskPool` runs the targets of one ``onlinesparse replay`` on a Dask cluster
  (``--scheduler``), with its progress bar, checkpoints and Ctrl-C.

Every path runs the same job function, :func:`onlinesparse.replay.runner.run_job`, so a job
gives the same metrics wherever it runs. Dask (``pip install 'onlinesparse[dask]'``) is
imported only when a client or a scheduler is asked for.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import itertools
import math
import multiprocessing
import os
import queue as queue_module
import signal
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from onlinesparse.replay import models as registry
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.reader import Columns, open_recording
from onlinesparse.replay.runner import (
    _BLAS_THREAD_VARIABLES,
    Job,
    ReplayConfig,
    StopFlag,
    TargetResult,
    _single_threaded_blas,
    run_job,
    write_outputs,
)

if TYPE_CHECKING:  # only for annotations: importing distributed is what the local path avoids
    from distributed import Client

__all__ = [
    "ReplayJob",
    "JobResult",
    "execute_job",
    "replay_many",
    "format_failures",
    "import_distributed",
    "dask_client",
    "DaskPool",
    "GRID_METRICS",
    "parse_grid",
    "grid_settings",
    "GridRow",
    "GridResult",
    "evaluate_grid",
    "format_grid",
]

DASK_HINT = "pip install 'onlinesparse[dask]'"

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
        recording = open_recording(cfg.recording)
        columns = recording.select(cfg.targets, cfg.features, cfg.time)
        if cfg.out is not None:
            Path(cfg.out).mkdir(parents=True, exist_ok=True)
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
    return JobResult(
        index=index,
        job=job,
        status=result.status,
        metrics=result.metrics,
        error=result.message,
        relevance=result.relevance,
        worker=_where(),
        elapsed=time.perf_counter() - started,
        out=outcome.out,
    )


_PIN_LOCK = threading.Lock()
_PINNED = False


def _pin_blas_in_this_worker() -> None:
    """One BLAS thread in this worker process, for good, unless the user chose otherwise.

    The same rule as :func:`onlinesparse.replay.runner._single_threaded_blas` (which the
    local pool's workers inherit through their environment), for a worker process started
    by someone else, such as a Dask worker: the variables also reach libraries loaded later.
    """
    global _PINNED
    with _PIN_LOCK:
        if _PINNED:
            return
        chosen = any(os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"))
        for key in _BLAS_THREAD_VARIABLES:
            os.environ.setdefault(key, "1")
        if not chosen:
            try:
                from threadpoolctl import threadpool_limits

                threadpool_limits(1, user_api="blas")
            except ImportError:
                pass
        _PINNED = True


def _execute_in_worker(job: ReplayJob, index: int) -> JobResult:
    """:func:`execute_job` in a worker process (local pool or Dask), BLAS pinned first."""
    _pin_blas_in_this_worker()
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
    with _single_threaded_blas():
        if n_workers <= 1:
            for i, job in enumerate(jobs):
                results[i] = execute_job(job, i)
                bar.done(results[i])
            return results  # type: ignore[return-value]
        # Spawned, not forked, as in runner.WorkerPool; started here, so they inherit the
        # one-thread BLAS environment, and deaf to Ctrl-C, which this process handles.
        context = multiprocessing.get_context("spawn")
        executor = ProcessPoolExecutor(n_workers, mp_context=context)
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


def _run_on_dask(jobs: list[ReplayJob], client: Client, bar: _JobProgress) -> list[JobResult]:
    distributed = import_distributed()
    run = uuid.uuid4().hex[:8]
    futures = [
        client.submit(_execute_in_worker, job, i, key=f"onlinesparse-job-{run}-{i}", pure=False)
        for i, job in enumerate(jobs)
    ]
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[JobResult | None] = [None] * len(jobs)
    try:
        for future in distributed.as_completed(futures):
            i = index[future.key]
            try:
                results[i] = future.result()
            except Exception as exc:  # the task itself failed: a worker died, a pickling error
                results[i] = _failed(
                    i, jobs[i], f"the Dask task failed: {type(exc).__name__}: {exc}"
                )
            bar.done(results[i])
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        for future in futures:
            future.release()
    return results  # type: ignore[return-value]


def format_failures(results: Sequence[JobResult]) -> list[str]:
    """One line per job that did not complete (see :meth:`JobResult.describe`)."""
    return [r.describe() for r in results if not r.ok]


# ---------------------------------------------------------------------------------------
# Dask


def import_distributed() -> Any:
    """Import ``distributed``, or say how to install it.

    Raises
    ------
    UsageError
        When Dask is not installed: the message gives the command that installs it.

    """
    try:
        import distributed
    except ImportError as exc:
        raise UsageError(
            f"running on Dask needs the optional 'dask' extra, which is not installed "
            f"({exc}); install it with: {DASK_HINT}"
        ) from None
    return distributed


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


@contextlib.contextmanager
def dask_client(
    scheduler: str, workers: int | None = None, timeout: float = 10.0
) -> Iterator[Client]:
    """A ``distributed.Client`` for ``scheduler``, closed on the way out.

    Parameters
    ----------
    scheduler
        ``"local"`` starts a ``LocalCluster`` of worker processes on this machine, listening
        on 127.0.0.1 only, for the duration; otherwise the address of a running scheduler,
        e.g. ``"tcp://10.0.0.5:8786"``.
    workers
        Worker processes of the local cluster (default: the number of CPUs), one thread
        each. Only with ``"local"``: a running cluster has the workers it has.
    timeout
        Seconds to wait for the scheduler.

    Raises
    ------
    UsageError
        When Dask is not installed, when ``workers`` is given with an address, or when the
        scheduler cannot be reached.

    """
    distributed = import_distributed()
    if scheduler == "local":
        n_workers = workers or os.cpu_count() or 1
        # Pure-Python replays hold the GIL: processes, one thread each, scale; threads don't.
        with _sigint_ignored_by_children():
            cluster = distributed.LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None,
                # No dashboard; the scheduler's small HTTP service on any free loopback port
                # (by default it takes 8787, which another cluster may hold).
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            )
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    if workers is not None:
        raise UsageError(
            "--workers sets the size of the local pool or of --scheduler local; a running "
            f"Dask cluster ({scheduler}) has the workers it has"
        )
    try:
        client = distributed.Client(scheduler, timeout=f"{timeout}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(
            f"cannot reach the Dask scheduler at {scheduler!r}: {exc} (start one with "
            "'dask scheduler' and give its address, e.g. tcp://HOST:8786, or use "
            "--scheduler local)"
        ) from None
    with client:
        yield client


class _StopRequest:
    """Set from the signal handler; the pool passes it on to the cluster between polls."""

    def __init__(self) -> None:
        self.requested = False

    def set(self) -> None:
        self.requested = True


def _dask_target(job: Job, topic: str, stop_name: str) -> TargetResult:
    """One target of an ``onlinesparse replay`` as a Dask task: :func:`run_job` with its
    progress sent to the client as events and a stop flag fed by a Dask ``Event``."""
    from distributed import Event, get_client, get_worker

    _pin_blas_in_this_worker()
    worker = get_worker()
    stop = StopFlag()
    finished = threading.Event()
    event = Event(stop_name, client=get_client())

    def watch() -> None:
        while not finished.is_set():
            try:
                if event.wait(timeout=0.5):
                    stop.requested = True
                    return
            except Exception:  # the scheduler went away: nothing left to listen to
                return

    def notify(kind: str, payload: Any) -> None:
        worker.log_event(topic, [kind, payload])

    threading.Thread(target=watch, daemon=True, name="onlinesparse-stop").start()
    try:
        return run_job(job, stop, notify)
    finally:
        finished.set()


class DaskPool:
    """Runs the targets of one replay on a Dask cluster; pass it to ``run_replay(pool=…)``.

    It has what :func:`~onlinesparse.replay.runner.run_replay` uses of a
    :class:`~onlinesparse.replay.runner.WorkerPool`: ``event.set()`` (Ctrl-C: the running
    targets stop at the next sample and save their checkpoints) and ``run``. The workers
    write the spools, plots and checkpoints and this process reads them to write the
    outputs, so ``--out``, ``--checkpoint`` and the recording must be visible at the same
    absolute path here and on every worker.

    Parameters
    ----------
    client
        A connected ``distributed.Client``.

    """

    def __init__(self, client: Client):
        self.client = client
        self.event = _StopRequest()

    def run(
        self, cfg: ReplayConfig, columns: Columns, notify: Callable[[str, Any], None]
    ) -> list[TargetResult]:
        """One task per target; the workers' progress and warnings feed ``notify``."""
        distributed = import_distributed()
        cfg = dataclasses.replace(
            cfg,
            recording=Path(cfg.recording).absolute(),
            out=Path(cfg.out).absolute() if cfg.out is not None else None,
            checkpoint=Path(cfg.checkpoint).absolute() if cfg.checkpoint is not None else None,
        )
        run = uuid.uuid4().hex[:8]
        topic = f"onlinesparse-progress-{run}"
        stop_name = f"onlinesparse-stop-{run}"
        messages: queue_module.Queue = queue_module.Queue()
        self.client.subscribe_topic(topic, lambda event: messages.put(event[1]))
        futures = {
            self.client.submit(_dask_target, Job(cfg, t, columns), topic, stop_name,
                               key=f"onlinesparse-target-{run}-{i}", pure=False): t
            for i, t in enumerate(cfg.targets)
        }
        finished: set[str] = set()
        stop_sent = False

        def drain() -> None:
            while True:
                try:
                    kind, payload = messages.get_nowait()
                except queue_module.Empty:
                    return
                if kind == "progress" and payload[0] in finished:
                    continue  # late news of a target whose final count is already shown
                notify(kind, tuple(payload) if kind == "progress" else payload)

        try:
            pending = set(futures)
            while pending:
                if self.event.requested and not stop_sent:
                    distributed.Event(stop_name, client=self.client).set()
                    stop_sent = True
                time.sleep(0.1)
                drain()
                for future in [f for f in pending if f.done()]:
                    pending.discard(future)
                    if future.status == "finished":
                        result = future.result()
                        finished.add(result.target)
                        notify("progress", (result.target, result.metrics["rows_read"],
                                            result.metrics["rmse"]))
            drain()
            by_target = {futures[f]: f.result() for f in futures}
        except BaseException:
            self.client.cancel(list(futures))
            raise
        finally:
            self.client.unsubscribe_topic(topic)
            if stop_sent:
                with contextlib.suppress(Exception):
                    distributed.Event(stop_name, client=self.client).clear()
        return [by_target[t] for t in cfg.targets]


# ---------------------------------------------------------------------------------------
# Grids of settings

#: Metrics a grid can be ranked by, and whether larger is better.
GRID_METRICS: dict[str, bool] = {"nmse": False, "rmse": False, "mae": False, "r2": True}
_METRIC_LABELS = {"nmse": "nMSE", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}


def _grid_values(key: str, raw: str, model: str) -> list[Any]:
    """The values of one ``KEY=V1,V2,…``: checked by the model's parameter when it has
    one, else Python literals (tuples such as ``(0.5,1.0),(1.0,2.0)`` allowed), else
    strings."""
    spec = registry.get_spec(model)
    param = spec.param(key.replace("_", "-")) or next(
        (p for p in spec.params if p.kwarg == key), None
    )
    try:
        values = ast.literal_eval(f"[{raw}]")
        if not isinstance(values, list):
            raise ValueError(raw)
    except (ValueError, SyntaxError):
        values = [v.strip() for v in raw.split(",")]
    if param is not None:
        values = [param.parse(v) for v in values]
    if not values or any(v == "" for v in values):
        raise UsageError(f"--grid {key}=… needs values separated by commas, got {raw!r}")
    return values


def parse_grid(assignments: Sequence[str], model: str) -> dict[str, list[Any]]:
    """Parse ``--grid KEY=V1,V2,…`` options into ``{constructor keyword: values}``.

    ``KEY`` is a constructor keyword of the model (``max_basis``) or its command-line flag
    (``max-basis``), whose type and range then check each value.

    Examples
    --------
    >>> parse_grid(["max-basis=10,20", "window=200,500"], "rbf")
    {'max_basis': [10, 20], 'window': [200, 500]}
    >>> parse_grid(["radii=(0.5,),(1.0, 2.0)", "kernel=gaussian,cauchy"], "rbf")
    {'radii': [(0.5,), (1.0, 2.0)], 'kernel': ['gaussian', 'cauchy']}
    >>> parse_grid(["max-basis=10,0"], "rbf")
    Traceback (most recent call last):
    ...
    onlinesparse.replay.errors.UsageError: --max-basis must be an integer in [1, 100000] (got 0)

    """
    grid: dict[str, list[Any]] = {}
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        spec = registry.get_spec(model)
        param = spec.param(key)
        kwarg = param.kwarg if param is not None else key.replace("-", "_")
        if not sep or not kwarg.isidentifier():
            raise UsageError(f"--grid expects KEY=V1,V2,... with a keyword name, got {text!r}")
        if kwarg in grid:
            raise UsageError(f"--grid {kwarg} is given twice")
        grid[kwarg] = _grid_values(kwarg, raw.strip(), model)
    if not grid:
        raise UsageError("give at least one --grid KEY=V1,V2,...")
    return grid


def grid_settings(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the last key varying fastest.

    >>> grid_settings({"a": [1, 2], "b": ["x", "y"]})
    [{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]

    """
    keys = list(grid)
    return [dict(zip(keys, values, strict=True))
            for values in itertools.product(*(grid[k] for k in keys))]


def _label(setting: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in setting.items())


@dataclass
class GridRow:
    """One setting of a grid: its results per target and its score."""

    setting: dict[str, Any]
    results: list[JobResult]
    score: float | None
    means: dict[str, float | None]

    @property
    def ok(self) -> bool:
        """Whether every target's replay of this setting ran to its end."""
        return all(r.ok for r in self.results)


@dataclass
class GridResult:
    """A grid's settings ranked by ``metric`` averaged over the targets, best first.

    Settings with a failed replay have no score and come last.
    """

    recording: Path
    targets: list[str]
    model: str
    params: dict[str, Any]
    metric: str
    rows: list[GridRow]

    @property
    def best(self) -> GridRow | None:
        """The best setting, or ``None`` when no setting completed."""
        return self.rows[0] if self.rows and self.rows[0].score is not None else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: every setting, its mean metrics and per-target metrics, and the best."""
        return {
            "recording": str(self.recording),
            "targets": self.targets,
            "model": self.model,
            "params": self.params,
            "metric": self.metric,
            "best": self.best.setting if self.best else None,
            "settings": [
                {
                    "setting": row.setting,
                    "score": row.score,
                    "means": row.means,
                    "targets": {
                        r.job.target: {"status": r.status, "error": r.error,
                                       "metrics": r.metrics}
                        for r in row.results
                    },
                }
                for row in self.rows
            ],
        }


def _mean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None or not math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


def evaluate_grid(
    recording: str | Path,
    targets: Sequence[str],
    grid: Mapping[str, Sequence[Any]],
    model: str = "rbf",
    params: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    metric: str = "nmse",
    client: Client | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    stream: TextIO | None = None,
) -> GridResult:
    """Replay every setting of ``grid`` with progressive validation and rank the settings.

    Each setting replays every target over the whole recording: every sample is predicted
    before it is learned, so the score is an honest out-of-sample error of the model as it
    would have run live, with no folds to hold out (what the papers' 5-fold
    cross-validation of the kernel width estimates on a batch).

    Parameters
    ----------
    recording
        The recording.
    targets
        The target columns; a setting's score is ``metric`` averaged over them.
    grid
        ``{constructor keyword: values}`` (see :func:`parse_grid`).
    model
        The model's registry name.
    params
        Constructor keywords shared by every setting (the grid's values override them).
    options
        Other fields of :class:`~onlinesparse.replay.runner.ReplayConfig` (``features``,
        ``time``, ``warmup``, …).
    metric
        One of :data:`GRID_METRICS`.
    client, workers, progress, stream
        As for :func:`replay_many`.

    Raises
    ------
    UsageError
        For an unknown metric, or a setting the model rejects (checked before anything
        runs).

    """
    if metric not in GRID_METRICS:
        raise UsageError(f"unknown metric {metric!r}; choose one of: {', '.join(GRID_METRICS)}")
    if not targets:
        raise UsageError("a grid needs at least one target")
    params = dict(params or {})
    options = dict(options or {})
    settings = grid_settings(grid)
    standardize = options.get("standardize", True)
    for setting in settings:  # a setting the model rejects is a usage error, before any run
        registry.build_model(model, {**params, **setting}, standardize)
    jobs = [
        ReplayJob(recording, target, model, {**params, **setting}, options=options,
                  name=f"{_label(setting)} / {target}", targets=list(targets))
        for setting in settings
        for target in targets
    ]
    results = replay_many(jobs, client, workers=workers, progress=progress, stream=stream)
    larger_is_better = GRID_METRICS[metric]
    rows = []
    for k, setting in enumerate(settings):
        mine = results[k * len(targets) : (k + 1) * len(targets)]
        ok = all(r.ok for r in mine)
        means = {
            m: _mean([r.metrics.get(m) for r in mine]) if ok else None
            for m in ("nmse", "rmse", "mae", "r2", "coverage")
        }
        means["latency_us_median"] = (
            _mean([r.metrics["latency_us"]["median"] for r in mine]) if ok else None
        )
        rows.append(GridRow(setting, mine, means[metric], means))
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i].score is None,
            0.0 if rows[i].score is None
            else (-rows[i].score if larger_is_better else rows[i].score),
            i,
        ),
    )
    return GridResult(Path(recording), list(targets), model, params, metric,
                      [rows[i] for i in order])


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "—" if value is None or not math.isfinite(value) else format(value, spec)


def format_grid(result: GridResult) -> str:
    """The ranked table ``onlinesparse grid`` prints."""
    keys = list(result.rows[0].setting) if result.rows else []
    header = ["rank", *keys, "nMSE", "RMSE", "MAE", "R²", "coverage", "µs med", "status"]
    table = [header]
    for rank, row in enumerate(result.rows, 1):
        m = row.means
        failed = [r for r in row.results if not r.ok]
        status = "ok" if not failed else f"{len(failed)}/{len(row.results)} failed"
        table.append([
            str(rank) if row.score is not None else "-",
            *(repr(row.setting[k]) for k in keys),
            _fmt(m["nmse"]), _fmt(m["rmse"]), _fmt(m["mae"]), _fmt(m["r2"]),
            _fmt(m["coverage"], ".3f"), _fmt(m["latency_us_median"], ".1f"), status,
        ])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
