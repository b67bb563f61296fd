"""Many independent replays at once: on local worker processes, or on a Dask cluster.

A replay of one target of one recording through one model is a unit of work that needs
nothing from the others. This module runs many of them, a whole lab's recordings, hundreds
of channels, or a grid of model settings, and collects their metrics:

* :class:`~onlinesparse.replay.jobs.ReplayJob` says what to replay: a recording (a path,
  never the data), a target and the model's settings, plus any other option of
  :class:`~onlinesparse.replay.config.ReplayConfig`, and optionally where to write the job's
  predictions, metrics and report;
* :func:`replay_many` runs a list of jobs, in local worker processes by default, or on a
  ``distributed.Client``; a job that fails is reported with its identity in its
  :class:`~onlinesparse.replay.jobs.JobResult` and does not lose the others' results;
* :func:`~onlinesparse.replay.grid.evaluate_grid` replays a grid of model settings on a
  recording with progressive validation and ranks them (``onlinesparse grid``);
* :class:`~onlinesparse.replay.cluster.DaskPool` (with
  :func:`~onlinesparse.replay.cluster.dask_client`) runs the targets of one
  ``onlinesparse replay`` on a Dask cluster (``--scheduler``), with its progress bar,
  checkpoints and Ctrl-C.

Every path runs the same job function, :func:`~onlinesparse.replay.jobs.execute_job`, so a
job gives the same metrics wherever it runs. Dask (``pip install 'onlinesparse[dask]'``) is
imported only when a client or a scheduler is asked for.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from onlinesparse._blas import one_thread_here
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.extra import require_replay_extra
from onlinesparse.replay.jobs import (
    JobResult,
    ReplayJob,
    _execute_in_worker,
    _failed,
    _sigint_ignored_by_children,
    execute_job,
)
from onlinesparse.replay.pool import watch_parent
from onlinesparse.replay.progress import JobProgress

if TYPE_CHECKING:  # only for annotations: importing distributed is what the local path avoids
    from distributed import Client

__all__ = ["ReplayJob", "JobResult", "execute_job", "replay_many", "format_failures"]


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
    require_replay_extra("replay_many")
    if workers is not None and workers < 1:
        raise UsageError("workers must be at least 1")
    if client is not None and workers is not None:
        raise UsageError("workers applies to the local pool; a Dask client has its own workers")
    submitted = _check_jobs(jobs)
    originals = list(jobs)
    if not submitted:
        return []
    bar = JobProgress(len(submitted), progress, stream or sys.stderr)
    try:
        if client is not None:
            from onlinesparse.replay.cluster import _run_on_dask

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


def _run_locally(jobs: list[ReplayJob], n_workers: int, bar: JobProgress) -> list[JobResult]:
    results: list[JobResult | None] = [None] * len(jobs)
    with one_thread_here():
        if n_workers <= 1:
            for i, job in enumerate(jobs):
                results[i] = execute_job(job, i)
                bar.done(results[i])
            return results  # type: ignore[return-value]
        # Spawned, not forked, as in pool.WorkerPool; started here, so they inherit the
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
