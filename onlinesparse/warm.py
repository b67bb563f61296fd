"""Loading the compiled core before a real-time loop's first tick, and saying so when it has
to be compiled first."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from onlinesparse._jit import PACKAGE
from onlinesparse.orr.kernels import FrozenBasis
from onlinesparse.orr.multi_target import SparseRBFMultiTargetRegressor
from onlinesparse.orr.rbf import SparseRBFRegressor
from onlinesparse.stream import ConceptMemory
from onlinesparse.vbls import (
    VBLSClassifier,
    VBLSKernelRegressor,
    VBLSMultiTargetRegressor,
    VBLSRegressor,
)

__all__ = ["warm_up", "cache_is_cold", "cold_progress", "numba_work", "COLD_SECONDS"]

# What compiling the whole core from nothing takes on the project's 2-core machine, said
# to the user before the wait: warm_up() on copies of the package without their cache took
# 55, 56 and 69 s (three runs, both cores shared with other work; the RBF network's 255
# functions about 47 s of it, VBLS's 9 s); loading it all from the cache then took 0.7 s.
COLD_SECONDS = 60
# A line at least this often while numba compiles one large function (single functions
# took up to 9 s on two loaded cores), so that a long wait does not read as a hang.
_HEARTBEAT_SECONDS = 10.0


def cache_is_cold() -> bool:
    """Whether the compiled core has no machine code cached on disk yet (a new
    installation, or sources changed since): the next ``warm_up()`` or first sample compiles
    it, about ``COLD_SECONDS`` seconds on two cores. Looks for numba's cache index of the
    first and of the last family :func:`warm_up` compiles (the RBF network's fused sample,
    VBLS's sweep), where this numba keeps it (beside the sources, or ``NUMBA_CACHE_DIR``)."""
    from onlinesparse.orr.sample import stream_sample
    from onlinesparse.vbls._compiled import sweep_regression

    return not all(_cache_index(f).exists() for f in (stream_sample, sweep_regression))


def _cache_index(dispatcher) -> Path:
    """The file numba indexes ``dispatcher``'s cached machine code in (a numba without that
    attribute: the first index of its name beside the source, or a path that is not)."""
    try:
        return Path(dispatcher._cache._cache_file._index_path)
    except AttributeError:  # pragma: no cover - another numba's layout
        module = dispatcher.py_func.__module__.split(".")
        folder = PACKAGE.joinpath(*module[1:-1]) / "__pycache__"
        name = f"{module[-1]}.{dispatcher.py_func.__name__}-*.nbi"
        return next(folder.glob(name), folder / name)


def warm_up(seed: int = 0, progress: bool | Callable[[str], None] | None = None) -> None:
    """Load (or compile) every compiled loop the package's estimators use, now.

    The numerical core runs through numba: the first call of each compiled function in a
    process loads its machine code from the on-disk cache (0.7 s in all for this call), or
    compiles it when the cache is missing or stale, once per installation: measured 55–69 s
    on two shared cores (``COLD_SECONDS``). A real-time loop calls this once before its
    first tick, so that no tick pays it. Small throwaway models of every family
    (:class:`SparseRBFRegressor`, :class:`VBLSRegressor`, :class:`VBLSKernelRegressor`,
    :class:`VBLSClassifier`) are driven as a stream drives a new model — a prediction
    before each sample learned, the first one before any — and through the paths a short
    run rarely reaches (a basis function removed by the model's own operations, a refresh,
    the concepts kept after a change); the types, hence the machine code, are those of any
    model. The trade-off: a process that uses one family loads the others' machine code too
    (VBLS's about 0.2 s of the 0.7 s), and a first installation compiles them all at once.
    What is left for a new model's first ``learn_one`` is building the model for the inputs
    it sees (about 1 ms for the RBF network's defaults: its window's arrays, a candidate per
    input), not machine code: the Orr family's ``prepare(x, y)`` does that before a loop.

    ``progress``: by default (``None``) nothing when the machine code is cached, and when
    :func:`cache_is_cold` a line saying that the core compiles once and how long that
    takes, then a line every few seconds (:func:`cold_progress`) — a minute of silence
    reads as a hang; ``True`` prints each stage, each function as numba compiles it, and a
    line every ten seconds of a long compilation, to standard error; ``False`` nothing; a
    callable receives the lines instead.
    """
    if progress is None:
        progress = cold_progress(sys.stderr) if cache_is_cold() else False
    say = _printer(progress)
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    with _compile_events(say, started):
        for stage, run in _STAGES:
            run(rng)
            say(f"{stage}: ready ({time.perf_counter() - started:.1f} s)")
    say(f"compiled core ready ({time.perf_counter() - started:.1f} s)")


def _stream(model, rng: np.random.Generator, n: int, d: int = 2, jump: float = 0.0,
            with_dist: bool = True) -> tuple[np.ndarray, float]:
    """Drive ``model`` as a stream drives a new one: predict, then learn, ``n`` samples
    of a smooth target of ``d`` inputs that steps by ``jump`` halfway (a change of the
    stream); a prediction with its distribution on every other sample when ``with_dist``.
    Returns the last input and target."""
    for k in range(n):
        x = rng.uniform(-1.0, 1.0, d)
        y = float(np.sin(3.0 * x[0]) + x[1] ** 2 + 0.05 * rng.standard_normal())
        y += jump if 2 * k >= n else 0.0
        row = {f"x{i}": float(v) for i, v in enumerate(x)}
        model.predict_one(row, with_dist=with_dist and k % 2 == 0)
        model.learn_one(row, y)
    return x, y


def _rbf(rng: np.random.Generator) -> None:
    """The RBF network's sample and prediction: growth, a full window, the budget, trades,
    and with adaptive memory a change (the alarm, the cut, the concept kept and judged)."""
    # (a window of 80: a memory is cut only when it holds twice its floor of 30 patterns)
    for memory, jump in (("adaptive", 5.0), ("window", 0.0)):
        model = SparseRBFRegressor(max_basis=6, window_size=80, n_candidates=6, memory=memory)
        _stream(model, rng, 400, jump=jump)


def _rbf_rare(rng: np.random.Generator) -> None:
    """What a short run rarely reaches: idle refinement, the measurement of the rounding
    in S and a refresh, a basis function removed by the model's own operations (the
    pruner hands a deletion back to them now and then), and a concept's prediction."""
    model = SparseRBFRegressor(max_basis=6, window_size=40, n_candidates=6)
    x, y = _stream(model, rng, 200)
    model.refine(20)
    ridge = model.model
    ridge.check_health()
    ridge.condition_bound()
    ridge.refresh()
    frozen = FrozenBasis.of(ridge.window.basis, ridge.weights)
    memory = ConceptMemory(lasted=0)
    memory.after_alarm(lambda: (frozen, 1.0), learned=1)
    memory.judge(x, y, 0.0, 1.0, 10.0, True, 2)
    memory.blend(x, 0.0, 1.0)
    if ridge.size > 1:
        ridge.remove_basis(0)


def _prepared(rng: np.random.Generator) -> None:
    """A loop's model: prepared before its first tick, queried at inputs of the loop's
    choosing (no last target), its heavy pieces left to ``maintain()``. Its first samples
    run Python paths no other model's do (the prepared state taken over, the declared
    features, the constant added on the first pattern): run here first, so that a loop's
    first tick is not their first execution in the process."""
    for targets in (None, ("a", "b")):
        model = (SparseRBFRegressor(max_basis=6, window_size=40, n_candidates=6,
                                    last_target=False) if targets is None else
                 SparseRBFMultiTargetRegressor(max_basis=6, window_size=40, n_candidates=6,
                                               last_target=False))
        model.prepare({"x0": 0.0, "x1": 0.0}, dict.fromkeys(targets, 0.0) if targets else None)
        for _ in range(30):
            x = rng.uniform(-1.0, 1.0, 2)
            row = {"x0": float(x[0]), "x1": float(x[1])}
            model.predict_one(row)
            y = float(np.sin(3.0 * x[0]))
            model.learn_one(row, y if targets is None else dict.fromkeys(targets, y))
            model.maintain(1)


def _vbls(rng: np.random.Generator) -> None:
    """VBLS on the inputs (its sweeps, noise root, window refresh) and over kernels."""
    _stream(VBLSRegressor(window_size=40), rng, 120)
    _stream(VBLSKernelRegressor(max_basis=6, window_size=40, n_candidates=6), rng, 120)


def _several_targets(rng: np.random.Generator) -> None:
    """The multi-output forms (the same compiled calls with K targets; their Python paths)."""
    for model in (SparseRBFMultiTargetRegressor(max_basis=6, window_size=80, n_candidates=6),
                  VBLSMultiTargetRegressor(window_size=40)):
        for _ in range(120):
            x = rng.uniform(-1.0, 1.0, 2)
            row = {"x0": float(x[0]), "x1": float(x[1])}
            model.predict_one(row, with_dist=True)
            model.learn_one(row, {"a": float(np.sin(3.0 * x[0])), "b": float(x[1] ** 2)})


def _classifier(rng: np.random.Generator) -> None:
    model = VBLSClassifier(window_size=40)
    for _ in range(60):
        x = rng.uniform(-1.0, 1.0, 2)
        row = {"x0": float(x[0]), "x1": float(x[1])}
        model.predict_proba_one(row)
        model.learn_one(row, bool(x[0] * x[1] > 0.0))


_STAGES: tuple[tuple[str, Callable[[np.random.Generator], None]], ...] = (
    ("the RBF network's sample and prediction", _rbf),
    ("the RBF network's rarer paths", _rbf_rare),
    ("a prepared model's first samples", _prepared),
    ("VBLS regression", _vbls),
    ("VBLS classification", _classifier),
    ("several targets", _several_targets),
)


def cold_progress(stream, every: int = 40, seconds: float = 5.0) -> Callable[[str], None]:
    """:func:`warm_up`'s progress for a person waiting on a cold cache: a line now saying
    that the core compiles once for this installation and about how long, then each
    stage, and the count of functions compiled every ``every`` functions or ``seconds``
    seconds, whichever comes first (a line every few seconds, not one per function), on
    ``stream``."""
    print(f"onlinesparse: compiling the numerical core, once for this installation (about "
          f"{COLD_SECONDS} s on two cores); later runs load it from the cache in under a "
          "second", file=stream, flush=True)
    started = time.perf_counter()
    count, shown = [0], [0, started]

    def progress(line: str) -> None:
        now = time.perf_counter()
        if line.startswith("compiling "):
            count[0] += 1
            if count[0] - shown[0] < every and now - shown[1] < seconds:
                return
            line = f"{count[0]} functions compiled ({now - started:.0f} s)"
        shown[:] = count[0], now
        print(f"onlinesparse: {line}", file=stream, flush=True)

    return progress


def _printer(progress: bool | Callable[[str], None]) -> Callable[[str], None]:
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(f"onlinesparse: {line}", file=sys.stderr, flush=True)
    return lambda line: None


@contextmanager
def numba_work(report: Callable[[str, str], None]) -> Iterator[None]:
    """Call ``report(kind, name)`` for the work numba does on calls made meanwhile:
    ``"compile"`` for each function it compiles, ``"dispatch"`` for each function whose
    machine code it looks for, for argument types it has not run yet in this process (a
    load from the on-disk cache, or the compilation that follows). A warmed process's
    loop should see neither. Nothing is reported with a numba without the event API."""
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - a numba without the event API
        yield
        return
    held = threading.local()  # (how deep this thread holds numba's compiler lock)

    class _Compiles(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            report("compile", _name(ev.data.get("dispatcher")))

        def on_end(self, ev: event.Event) -> None:
            pass

    class _Lookups(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            depth = getattr(held, "depth", 0)
            held.depth = depth + 1
            if depth == 0:  # (not the locks a load or a compilation takes inside)
                report("dispatch", _name(_compiling_dispatcher()))

        def on_end(self, ev: event.Event) -> None:
            held.depth = getattr(held, "depth", 1) - 1

    with (event.install_listener("numba:compile", _Compiles()),
          event.install_listener("numba:compiler_lock", _Lookups())):
        yield


def _name(dispatcher: object) -> str:
    return getattr(dispatcher, "__qualname__", "?")


def _compiling_dispatcher() -> object:
    """The dispatcher whose ``compile`` took numba's compiler lock (found on the stack:
    the lock's event carries no data), or None."""
    from numba.core.dispatcher import Dispatcher

    frame = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "compile" else None
        if isinstance(owner, Dispatcher):
            return owner
        frame = frame.f_back
    return None


@contextmanager
def _compile_events(say: Callable[[str], None], started: float) -> Iterator[None]:
    """Report each function numba compiles, and a line every ``_HEARTBEAT_SECONDS`` while
    one compilation runs on (the heartbeat is a thread: LLVM runs outside the GIL)."""
    count, last = [0], [time.perf_counter()]

    def report(kind: str, name: str) -> None:
        if kind == "compile":
            count[0] += 1
            last[0] = time.perf_counter()
            say(f"compiling {count[0]}: {name}")

    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(1.0):
            now = time.perf_counter()
            if count[0] and now - last[0] >= _HEARTBEAT_SECONDS:
                last[0] = now
                say(f"still compiling ({now - started:.0f} s)")

    beating = threading.Thread(target=heartbeat, name="onlinesparse-warm-up", daemon=True)
    beating.start()
    try:
        with numba_work(report):
            yield
    finally:
        done.set()
        beating.join()
