"""Replays on a Dask cluster: the client, the pool of ``onlinesparse replay --scheduler``,
and the Dask path of :func:`onlinesparse.replay.parallel.replay_many`.

Dask (``pip install 'onlinesparse[dask]'``) is imported only when a client or a scheduler is
asked for; every task runs the same job function as the local path
(:func:`onlinesparse.replay.target.run_job`), so a job gives the same metrics wherever it
runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue as queue_module
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onlinesparse._blas import pin_this_process
from onlinesparse.replay.config import Job, ReplayConfig, StopFlag, TargetResult
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.jobs import (
    JobResult,
    ReplayJob,
    _execute_in_worker,
    _failed,
    _sigint_ignored_by_children,
)
from onlinesparse.replay.progress import JobProgress
from onlinesparse.replay.reader import Columns
from onlinesparse.replay.target import lost_result, run_job

if TYPE_CHECKING:  # only for annotations
    from distributed import Client

__all__ = ["DASK_HINT", "import_distributed", "dask_client", "DaskPool"]

DASK_HINT = "pip install 'onlinesparse[dask]'"


def _run_on_dask(jobs: list[ReplayJob], client: Client, bar: JobProgress) -> list[JobResult]:
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

    pin_this_process()  # (the package's one BLAS rule, onlinesparse._blas)
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
    :class:`~onlinesparse.replay.pool.WorkerPool`: ``event.set()`` (Ctrl-C: the running
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
            by_target = {futures[f]: _result_or_lost(f, cfg, futures[f]) for f in futures}
        except BaseException:
            self.client.cancel(list(futures))
            raise
        finally:
            self.client.unsubscribe_topic(topic)
            if stop_sent:
                with contextlib.suppress(Exception):
                    distributed.Event(stop_name, client=self.client).clear()
        return [by_target[t] for t in cfg.targets]


def _result_or_lost(future: Any, cfg: ReplayConfig, target: str) -> TargetResult:
    """The task's result; when the task failed without a usage error of ours (its worker
    died past ``allowed-failures``: ``KilledWorker``), a result that says so."""
    if future.status != "error":
        return future.result()
    exc = future.exception()
    if isinstance(exc, ReplayError):
        raise exc
    return lost_result(cfg, target, (
        f"the Dask task replaying it failed ({type(exc).__name__}: {exc}); what it had "
        "written is kept" + ("; resume from its last checkpoint with --resume"
                             if cfg.checkpoint else "")
    ))
