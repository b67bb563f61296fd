"""One BLAS thread for a model's per-sample work.

A sample's matrix operations are small (M ≈ 100 basis functions): a threaded BLAS cannot
speed them up, and on a machine whose cores are busy its threads wait for one another.
Measured with two OpenBLAS threads on two loaded cores: the inverse of a 20 × 20 matrix
(LAPACK ``potri``) took 16 ms instead of 20 µs, and a candidate column's product with the
window (141 × 1000) 4 ms at the 99th percentile instead of 60 µs; the VBLS test files ran
in 226 s instead of 34 s. So the estimators' learning methods (``learn_one``,
``learn_many``, ``refine`` of the RBF, VBLS and lin-1 models) run with one BLAS thread, as
the benchmarks and the replay runner already do through the environment, unless the user
has chosen a number of threads
(``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` / ``BLIS_NUM_THREADS``
set): that choice is left alone.

The switch goes through threadpoolctl's controllers, looked up once per process, and costs
about a microsecond per BLAS library per call. The thread count is process-wide: a program
that runs BLAS work in another thread at the same time as a ``learn_one`` sees one thread
for that moment.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["VARIABLES", "user_chose_threads", "single_blas_thread", "one_thread_here",
           "pin_this_process"]

# The variables through which a user chooses BLAS threads; any of them set is a choice,
# and a choice is left alone everywhere (the one rule of this module).
VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS")
_VARIABLES = VARIABLES


def user_chose_threads() -> bool:
    """Whether the user set the number of BLAS threads through the environment."""
    return any(os.environ.get(name) for name in VARIABLES)

# The BLAS libraries to pin (threadpoolctl LibControllers); None until first needed.
_libraries: list | None = None

F = TypeVar("F", bound=Callable[..., Any])


def _blas_libraries() -> list:
    global _libraries
    if _libraries is None:
        if user_chose_threads():
            _libraries = []  # the user chose: leave BLAS as configured
        else:
            try:
                from threadpoolctl import ThreadpoolController

                _libraries = list(ThreadpoolController().select(user_api="blas")
                                  .lib_controllers)
            except Exception:  # no controllable BLAS: nothing to pin  # noqa: BLE001
                _libraries = []
    return _libraries


def single_blas_thread(method: F) -> F:
    """Run ``method`` with every BLAS library at one thread, restoring the counts after."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        saved = []
        for library in _blas_libraries():
            threads = library.num_threads
            if threads != 1:
                library.set_num_threads(1)
                saved.append((library, threads))
        try:
            return method(*args, **kwargs)
        finally:
            for library, threads in saved:
                library.set_num_threads(threads)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def one_thread_here() -> Iterator[None]:
    """One BLAS thread in this process for the duration, and in the processes it spawns
    meanwhile (through the environment they inherit), unless the user chose otherwise.

    For the replay's parent process: its workers' threads would otherwise compete for the
    same cores (lin-1 measured about 5x slower per sample with two threaded workers on two
    cores)."""
    chosen = user_chose_threads()
    saved = {name: os.environ.get(name) for name in VARIABLES}
    for name in VARIABLES:
        os.environ.setdefault(name, "1")
    limits: contextlib.AbstractContextManager = contextlib.nullcontext()
    if not chosen:
        try:
            from threadpoolctl import threadpool_limits

            limits = threadpool_limits(1, user_api="blas")
        except ImportError:  # pragma: no cover - a dependency; only the workers are pinned
            pass
    try:
        with limits:
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_pinned = False


def pin_this_process() -> None:
    """One BLAS thread in this process, for good, unless the user chose otherwise: for a
    worker process started by someone else (a Dask worker), where the variables also reach
    libraries loaded later. Idempotent."""
    global _pinned
    if _pinned:
        return
    chosen = user_chose_threads()
    for name in VARIABLES:
        os.environ.setdefault(name, "1")
    if not chosen:
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(1, user_api="blas")
        except ImportError:  # pragma: no cover - a dependency
            pass
    _pinned = True
