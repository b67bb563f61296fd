"""A control loop's budget per configuration: what one maintained learn_one does, measured.

Once a loop calls ``maintain()``, the Orr family's ``learn_one`` does a sample's light work
only (``onlinesparse.orr.upkeep``): the input's row over the n tracked columns (O(n·d)),
the window's slide (one rank-two pass over S, M × M, and G, n × n), each target's weights
(O(M·K)), the pruner's evaluations of this sample (O(M²) each), the stream layer's step per
target. Two heavy pieces stay in it, both rare: the response to a detected change (the
refit that judges the alarm, O(W·M² + M³), at it and at most once more at its second look,
and a memory cut, O(W·n² + M³)) and a refresh of S that its health calls for at once
(O(M³)). The others —
a held move of the pruner (O(W·M)), a deferred refresh of S, a new candidate's column
(O(W·n)), the memory's measurement of its stride (O(W·d log W)) — are ``maintain()``'s,
one per ``maintain(1)``.

Protocol. For each configuration (max_basis M, window_size W, inputs d, targets K), a fresh
``SparseRBFRegressor`` (K = 1) or ``SparseRBFMultiTargetRegressor`` with defaults otherwise
(``last_target=False``, a loop's setting), ``maintain()`` called once before the first
sample and ``maintain(1)`` after every sample, learns W + ``--after`` samples of a
stationary stream whose inputs are independent (uniform in [−1, 1]^d: the window slides on
every sample, the per-sample worst case) and whose K targets are nonlinear functions of
them plus noise. Timed after the window is full: each ``predict_one`` + ``learn_one`` (the
tick) and each ``maintain(1)``, in the thread's CPU time (``time.thread_time_ns``; on a
shared host the wall clock adds other processes' time, and a virtual machine's stolen time
shows in both). Counted (not timed): the heavy pieces ``learn_one`` did itself (a
pruner's move with the stored rows, a new column, a refresh of S, a measurement of the
stride) and the memory's cuts.

Printed per configuration: the basis functions and tracked columns n at the end, the
tick's CPU median, 99th percentile and maximum, ``maintain(1)``'s maximum, and the heavy
pieces inside ``learn_one`` (the documented budget: none but a cut or an unhealthy S's
refresh). A maximum is one sample in thousands: on this host it is mostly a stall of the
virtual machine (the same configuration rerun with every tick profiled had no tick over
0.6 ms), the 99th percentile is the model's.

Run: ``.venv/bin/python benchmarks/tick_budget.py`` (about a minute; ``--quick``: two
configurations, fewer samples). Writes ``benchmarks/results/tick_budget.json``; the table
is shown in docs/rbf_on_streams.md (``make performance``).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402

#: (max_basis, window_size, inputs, targets): a small model, the defaults at d = 3 and at a
#: 7-joint robot's d = 21, the defaults for 7 joints at once, and a larger model.
CONFIGS = ((30, 300, 3, 1), (100, 1000, 3, 1), (100, 1000, 21, 1), (100, 1000, 21, 7),
           (200, 2000, 21, 7))
AFTER = 3000  # samples timed after the window is full
SEED = harness.SEED


def stream(n: int, d: int, k: int, seed: int = SEED) -> Iterator[tuple[dict, dict]]:
    """Independent inputs in [−1, 1]^d; target j = sin(π x_a x_b) + x_c² + noise, its
    inputs a, b, c rotating with j."""
    rng = np.random.default_rng(seed)
    names = [f"x{i}" for i in range(d)]
    for _ in range(n):
        x = rng.uniform(-1.0, 1.0, d)
        y = {f"y{j}": float(np.sin(np.pi * x[j % d] * x[(j + 1) % d]) + x[(j + 2) % d] ** 2
                            + 0.1 * rng.standard_normal()) for j in range(k)}
        yield dict(zip(names, x.tolist(), strict=True)), y


class Pieces:
    """Counts the heavy pieces, and whether ``learn_one`` or ``maintain()`` did them."""

    def __init__(self) -> None:
        self.inside = False
        self.counts = {"learn_one": 0, "maintain": 0}
        self._saved: list[tuple[type, str, object]] = []

    @contextmanager
    def watching(self) -> Iterator[Pieces]:
        from onlinesparse.orr.buffer import BufferManager
        from onlinesparse.orr.pruner import GCVPruner
        from onlinesparse.orr.ridge import IncrementalRidge
        from onlinesparse.stream.memory import Horizon

        for cls, name, done in ((GCVPruner, "_carry_out", None),
                                (BufferManager, "add_columns", None),
                                (IncrementalRidge, "maintain", bool),
                                (Horizon, "measure", bool)):
            self._wrap(cls, name, done)
        try:
            yield self
        finally:
            for cls, name, original in self._saved:
                setattr(cls, name, original)

    def _wrap(self, cls: type, name: str, done) -> None:
        original = getattr(cls, name)
        self._saved.append((cls, name, original))

        def counted(*args, **kwargs):
            result = original(*args, **kwargs)
            if done is None or done(result):
                self.counts["learn_one" if self.inside else "maintain"] += 1
            return result
        setattr(cls, name, counted)


def model_for(m: int, w: int, k: int):
    from onlinesparse import SparseRBFMultiTargetRegressor, SparseRBFRegressor

    if k == 1:
        return SparseRBFRegressor(max_basis=m, window_size=w, last_target=False)
    return SparseRBFMultiTargetRegressor(max_basis=m, window_size=w, last_target=False)


def measure(m: int, w: int, d: int, k: int, after: int) -> dict[str, float]:
    """One configuration's run (module docstring)."""
    model = model_for(m, w, k)
    single = k == 1
    data = list(stream(w + after, d, k))
    tick = np.zeros(after, dtype=np.int64)
    upkeep = np.zeros(after, dtype=np.int64)
    cpu = time.thread_time_ns
    pieces = Pieces()
    model.maintain()
    gc.collect()
    gc.disable()
    try:
        with pieces.watching():
            for i, (x, y) in enumerate(data):
                target = y["y0"] if single else y
                t0 = cpu()
                model.predict_one(x)
                pieces.inside = True
                model.learn_one(x, target)
                pieces.inside = False
                t1 = cpu()
                model.maintain(1)
                if i >= w:
                    tick[i - w], upkeep[i - w] = t1 - t0, cpu() - t1
                if i == w - 1:
                    pieces.counts = {"learn_one": 0, "maintain": 0}
                    cuts = model.n_memory_cuts
    finally:
        gc.enable()
    return {"n_columns": int(model.model.window.n_columns), "n_basis": int(model.n_basis),
            "tick_median": float(np.median(tick)) / 1e3,
            "tick_p99": float(np.percentile(tick, 99)) / 1e3, "tick_max": tick.max() / 1e3,
            "maintain_max": upkeep.max() / 1e3,
            "pieces_in_learn_one": pieces.counts["learn_one"],
            "pieces_in_maintain": pieces.counts["maintain"],
            "memory_cuts": int(model.n_memory_cuts - cuts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two configurations, 500 samples")
    parser.add_argument("--after", type=int, default=AFTER,
                        help="samples timed after the window is full")
    harness.add_common_args(parser)
    args = parser.parse_args()
    configs = CONFIGS[:2] if args.quick else CONFIGS
    after = 500 if args.quick else args.after
    from onlinesparse import warm_up

    warm_up()
    report = harness.Report("tick_budget", __doc__.splitlines()[0],
                            {"configs": [list(c) for c in configs], "after": after,
                             "seed": SEED}, quick=args.quick, path=args.results)
    rows = []
    for m, w, d, k in configs:
        started = time.perf_counter()
        r = measure(m, w, d, k, after)
        report.data["streams"][f"M={m}, W={w}, d={d}, K={k}"] = r
        rows.append([str(m), str(w), str(d), str(k), str(r["n_basis"]), str(r["n_columns"]),
                     f"{r['tick_median']:.0f}", f"{r['tick_p99']:.0f}", f"{r['tick_max']:.0f}",
                     f"{r['maintain_max']:.0f}", str(r["pieces_in_learn_one"]),
                     str(r["pieces_in_maintain"]), str(r["memory_cuts"])])
        print(f"  M={m}, W={w}, d={d}, K={k}: {time.perf_counter() - started:.1f} s",
              flush=True)
    report.table(f"a maintained model's tick (predict_one + learn_one) and maintain(1), CPU µs, "
                 f"over the {after} samples after the window is full",
                 ["M", "W", "d", "K", "basis functions", "n columns", "tick median",
                  "tick p99", "tick max",
                  "maintain(1) max", "heavy pieces in learn_one", "in maintain()",
                  "memory cuts"], rows)
    worst = max(float(r[8]) for r in rows)
    report.note(f"heavy pieces inside learn_one: {sum(int(r[10]) for r in rows)} over every "
                f"configuration (documented: none but a cut or an unhealthy S's refresh); the "
                f"largest tick {worst:.0f} µs CPU")
    report.write()


if __name__ == "__main__":
    main()
