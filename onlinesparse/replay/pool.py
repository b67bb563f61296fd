"""Running the targets of one replay in worker processes, and the progress bar they feed.

:class:`WorkerPool` keeps spawned worker processes, the stop event they listen to and the
queue of their messages (progress, warnings); :func:`_single_threaded_blas` pins BLAS to one
thread here and in the workers started inside it.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import queue as queue_module
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TextIO

from onlinesparse.replay.config import Job, ReplayConfig, StopFlag, TargetResult
from onlinesparse.replay.reader import Columns, Recording

__all__ = ["WorkerPool", "watch_parent"]


_BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
)


@contextlib.contextmanager
def _single_threaded_blas() -> Iterator[None]:
    """One BLAS thread in this process (if threadpoolctl is installed) and in the workers
    it spawns (through the environment they inherit), unless the user chose otherwise.

    A replay does many tiny matrix operations per sample; threaded BLAS only adds
    synchronisation to each, and worker processes' threads compete for the same cores
    (lin1 measured about 5x slower per sample with two threaded workers on two cores).
    """
    saved = {k: os.environ.get(k) for k in _BLAS_THREAD_VARIABLES}
    for key in _BLAS_THREAD_VARIABLES:
        os.environ.setdefault(key, "1")
    limits = contextlib.nullcontext()
    if saved["OMP_NUM_THREADS"] is None and saved["OPENBLAS_NUM_THREADS"] is None:
        try:
            from threadpoolctl import threadpool_limits

            limits = threadpool_limits(1, user_api="blas")
        except ImportError:  # optional: without it only the workers are pinned
            pass
    try:
        with limits:
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
        from onlinesparse.replay.runner import lost_result

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

    from onlinesparse.replay.runner import run_job  # runner imports this module lazily

    return run_job(job, _WORKER_STOP, notify)


class _Progress:
    def __init__(self, cfg: ReplayConfig, recording: Recording, stream: TextIO):
        from tqdm import tqdm

        n_rows = recording.n_rows
        if n_rows is not None and cfg.max_rows is not None:
            n_rows = min(n_rows, cfg.max_rows)
        total = n_rows * len(cfg.targets) if n_rows is not None else None
        enabled = cfg.progress if cfg.progress is not None else stream.isatty()
        self.bar = tqdm(
            total=total,
            unit="row",
            unit_scale=True,
            file=stream,
            disable=not enabled,
            dynamic_ncols=True,
            desc=f"replay {cfg.model}",
            mininterval=0.2,
        )
        self.stream = stream
        self.done: dict[str, int] = {}
        self.rmse: dict[str, float] = {}

    def update(self, target: str, position: int, rmse: float) -> None:
        if target not in self.done:
            # The first message gives where this target starts (beyond 0 when resuming):
            # count those rows as done without letting them inflate the rate.
            self.done[target] = position
            if not self.bar.disable:
                self.bar.n += position
                self.bar.initial += position
                self.bar.last_print_n = self.bar.n
        previous = self.done[target]
        self.done[target] = position
        self.rmse[target] = rmse
        finite = [v for v in self.rmse.values() if math.isfinite(v)]
        if finite:
            label = "rmse" if len(self.rmse) == 1 else "mean rmse"
            self.bar.set_postfix_str(f"{label}={sum(finite) / len(finite):.4g}", refresh=False)
        self.bar.update(max(position - previous, 0))

    def write(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(text, file=self.stream)  # clears and redraws the bar around the text

    def close(self) -> None:
        self.bar.close()
