"""Loading the compiled core before a real-time loop's first tick, and saying so when it has
to be compiled first."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from onlinesparse._jit import PACKAGE
from onlinesparse.orr.kernels import FrozenBasis
from onlinesparse.orr.rbf import SparseRBFRegressor
from onlinesparse.stream import ConceptMemory

__all__ = ["warm_up", "cache_is_cold", "COLD_SECONDS"]

# What compiling the whole core from nothing took on the project's 2-core machine (measured
# by timing warm_up() on a copy of the package without its cache): said to the user before
# the wait.
COLD_SECONDS = 55


def cache_is_cold() -> bool:
    """Whether the compiled sample has no machine code cached on disk yet (a new
    installation, or sources changed since): the next ``warm_up()`` or first sample compiles
    the core, about ``COLD_SECONDS`` seconds on two cores."""
    return not any((PACKAGE / "orr" / "__pycache__").glob("sample.stream_sample-*.nbi"))


def warm_up(seed: int = 0, progress: bool | Callable[[str], None] = False) -> None:
    """Load (or compile) every compiled loop a :class:`SparseRBFRegressor` uses, now.

    The numerical core runs through numba: the first call of each compiled function in a
    process loads its machine code from the on-disk cache (well under a second in all), or
    compiles it when the cache is missing or stale (about a minute on two cores, once per
    installation). A real-time loop calls this once before its first tick, so that no tick
    pays it. A small throwaway model is driven through every path (growing, full window,
    budget, trades, refreshes, kept concepts); the types, hence the machine code, are those
    of any model.

    ``progress``: ``True`` prints each stage, and each function as numba compiles it, to
    standard error; a callable receives those lines instead. Worth it when
    :func:`cache_is_cold`: a minute of silence reads as a hang.
    """
    say = _printer(progress)
    rng = np.random.default_rng(seed)
    model = SparseRBFRegressor(max_basis=6, window_size=40, n_candidates=6)
    started = time.perf_counter()
    with _compile_events(say):
        x, y = _learn(model, rng)
        say(f"the sample and the prediction: ready ({time.perf_counter() - started:.1f} s)")
        model.refine(20)
        # Rarely reached in a short run: the measurement of the rounding in S, a refresh.
        model.model.check_health()
        model.model.condition_bound()
        model.model.refresh()
        # Reached only after a change of the stream: the concepts kept (stream.concepts).
        frozen = FrozenBasis.of(model.model.window.basis, model.model.weights)
        memory = ConceptMemory(lasted=0)
        memory.after_alarm(lambda: (frozen, 1.0), learned=1)
        memory.judge(x, y, 0.0, 1.0, 10.0, True, 2)
        memory.blend(x, 0.0, 1.0)
    say(f"compiled core ready ({time.perf_counter() - started:.1f} s)")


def _learn(model: SparseRBFRegressor, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Drive ``model`` through growth, a full window and the budget; the last sample."""
    for k in range(400):
        x = rng.uniform(-1.0, 1.0, 2)
        y = float(np.sin(3.0 * x[0]) + x[1] ** 2 + 0.05 * rng.standard_normal())
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, y)
        model.predict_one({"a": float(x[0]), "b": float(x[1])}, with_dist=k % 2 == 0)
    return x, y


def _printer(progress: bool | Callable[[str], None]) -> Callable[[str], None]:
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(f"onlinesparse: {line}", file=sys.stderr, flush=True)
    return lambda line: None


@contextmanager
def _compile_events(say: Callable[[str], None]) -> Iterator[None]:
    """Report each function numba compiles (its event API; nothing when it is missing)."""
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - a numba without the event API
        yield
        return
    count = [0]

    class _Listener(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            count[0] += 1
            name = getattr(ev.data.get("dispatcher"), "__qualname__", "?")
            say(f"compiling {count[0]}: {name}")

        def on_end(self, ev: event.Event) -> None:
            pass

    with event.install_listener("numba:compile", _Listener()):
        yield
