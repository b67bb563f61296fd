"""Running the targets of one replay in worker processes.

:class:`WorkerPool` keeps spawned worker processes, the stop event they listen to and the
queue of their messages (progress, warnings), which feed the progress bar of
:mod:`~onlinesparse.replay.progress`; ``onlinesparse._blas.one_thread_here`` pins BLAS to one
thread here and in the workers started inside it.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from onlinesparse.replay.config import Job, ReplayConfig, StopFlag, TargetResult
from onlinesparse.replay.reader import Columns
from onlinesparse.replay.target import lost_result, run_job

__all__ = ["WorkerPool", "watch_parent"]


class WorkerPool:
    """Spawned worker processes, with the stop event and message queue they listen to.

    Spawned rather than forked: the parent may hold pyarrow's and BLAS's threads, which a
    fork would copy in an unknown state. Starting one costs the imports of numpy, pandas,
    river and the models in every worker, so several replays (the demo's models) can share
    one pool: pass it to :func:`run_replay`. Use it as a context manager.
    """

    def __init__(self, n_workers: int):
        context = multiprocessing.get_context("spawn")
        self.n_workers = n_workers
        self.event = context.Event()
        self.messages = context.Queue()
        self.executor = ProcessPoolExecutor(
            n_workers, mp_context=context, initializer=_init_worker,
            initargs=(self.event, self.messages, os.getpid()),
        )

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def run(
        self, cfg: ReplayConfig, columns: Columns, notify: Callable[[str, Any], None]
    ) -> list[TargetResult]:
        """One target per task; the workers' messages feed ``notify``."""
        futures = {
            self.executor.submit(_worker, Job(cfg, t, columns)): t for t in cfg.targets
        }
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            _drain(self.messages, notify)
        _drain(self.messages, notify)
        by_target = {futures[f]: _result_or_lost(f, cfg, futures[f]) for f in futures}
        return [by_target[t] for t in cfg.targets]


def _result_or_lost(future: Any, cfg: ReplayConfig, target: str) -> TargetResult:
    """The future's result, or, when its worker process died, a result that says so."""
    try:
        return future.result()
    except BrokenProcessPool:
        return lost_result(cfg, target, (
            "the worker process replaying it died (killed, or out of memory), or another "
            "worker's death stopped the pool; what it had written is kept"
            + ("; resume from its last checkpoint with --resume" if cfg.checkpoint else "")
        ))


def _drain(messages: Any, notify: Callable[[str, Any], None]) -> None:
    while True:
        try:
            kind, payload = messages.get_nowait()
        except queue_module.Empty:
            return
        notify(kind, payload)


_WORKER_STOP = StopFlag()
_WORKER_QUEUE: Any = None


def _init_worker(event: Any, messages: Any, parent: int) -> None:
    global _WORKER_QUEUE
    # Ctrl-C reaches every process of the terminal's group: the parent decides, the workers
    # only listen to its event, so none stops in the middle of a sample.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_QUEUE = messages
    watch_parent(parent)

    def watch() -> None:
        event.wait()
        _WORKER_STOP.requested = True

    threading.Thread(target=watch, daemon=True).start()


#: Seconds between two looks at whether the parent process is still there.
PARENT_POLL = 0.2


def watch_parent(parent: int | None = None) -> None:
    """End this worker process as soon as ``parent`` (default: the current parent) dies.

    A worker killed with its parent (kill -9, out of memory) would otherwise replay on for
    minutes, writing checkpoints nobody reads. A daemon thread polls ``os.getppid()``: when
    the parent dies the process is adopted by init (or a subreaper) and the id changes; the
    worker then exits at once. That loses nothing that was saved: checkpoints are written
    atomically and a resume truncates the spool to the checkpoint. (``PR_SET_PDEATHSIG`` is
    not used: on Linux it fires when the parent *thread* that started the worker ends, which
    need not be the parent's main thread.)
    """
    parent = os.getppid() if parent is None else parent

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(PARENT_POLL)

    threading.Thread(target=watch, daemon=True, name="onlinesparse-parent-watch").start()


def _worker(job: Job) -> TargetResult:
    def notify(kind: str, payload: Any) -> None:
        _WORKER_QUEUE.put((kind, payload))

    return run_job(job, _WORKER_STOP, notify)
