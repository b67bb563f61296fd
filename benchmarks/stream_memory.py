"""Resident memory of a long stream through SparseRBFRegressor: it must not grow.

100 000 samples of ``datasets.synth.Friedman(seed=7)`` go through
``preprocessing.StandardScaler() | SparseRBFRegressor(max_basis=50, window_size=500,
evaluations_per_sample=2)`` with progressive validation (predict, then learn). Every 5000
samples the script runs the garbage collector and records the resident set size of the
process (``psutil`` if installed, else ``VmRSS`` of ``/proc/self/status``, else
``resource.getrusage``'s peak), the size of the pickled model (the state the model holds,
independent of the allocator), the number of basis functions and candidates, and the mean µs
per sample of the block. It prints the table and the growth of both sizes between the
20 000-sample mark (well after the window and the pool have filled) and the end.

Run: ``.venv/bin/python benchmarks/stream_memory.py [--samples N] [--every K]``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import pickle  # noqa: E402
import time  # noqa: E402

from river import datasets, preprocessing  # noqa: E402

from onlinesparse import SparseRBFRegressor  # noqa: E402

try:
    import psutil
except ImportError:  # pragma: no cover - depends on the environment
    psutil = None

REFERENCE_MARK = 20_000


def rss_mib() -> tuple[float, str]:
    """Resident set size in MiB and how it was measured."""
    if psutil is not None:
        return psutil.Process().memory_info().rss / 2**20, "psutil"
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024, "/proc/self/status VmRSS"
    except OSError:
        pass
    import resource

    # ru_maxrss is the *peak* (KiB on Linux): an upper bound, still shows growth.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "getrusage peak"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=5000)
    args = parser.parse_args()

    model = preprocessing.StandardScaler() | SparseRBFRegressor(
        max_basis=50, window_size=500, evaluations_per_sample=2)
    gc.collect()
    start_rss, how = rss_mib()
    print(f"SparseRBFRegressor(max_basis=50, window_size=500, evaluations_per_sample=2) behind "
          f"StandardScaler, Friedman #1 (seed 7), {args.samples} samples")
    print(f"resident memory from {how}; garbage collected before each reading; "
          f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"RSS before the stream: {start_rss:.1f} MiB\n")
    header = (f"{'samples':>8s} {'RSS MiB':>8s} {'pickle KiB':>10s} {'n_basis':>7s} "
              f"{'n_cand':>6s} {'refreshes':>9s} {'µs/sample':>9s} {'RMSE blk':>8s}")
    print(header)
    print("-" * len(header))
    readings: dict[int, tuple[float, float]] = {}
    squared, block_start = 0.0, time.perf_counter()
    for i, (x, y) in enumerate(datasets.synth.Friedman(seed=7).take(args.samples), 1):
        error = y - model.predict_one(x)
        model.learn_one(x, y)
        squared += error * error
        if i % args.every == 0 or i == args.samples:
            elapsed = time.perf_counter() - block_start
            n_block = i % args.every or args.every
            gc.collect()
            rss, _ = rss_mib()
            pickled = len(pickle.dumps(model)) / 1024
            readings[i] = (rss, pickled)
            diag = model[-1].diagnostics()
            print(f"{i:>8d} {rss:8.1f} {pickled:10.1f} {diag['n_basis']:7.0f} "
                  f"{diag['n_candidates']:6.0f} {diag['n_refreshes']:9.0f} "
                  f"{elapsed / n_block * 1e6:9.0f} {math.sqrt(squared / n_block):8.3f}",
                  flush=True)
            squared, block_start = 0.0, time.perf_counter()

    # From the 20 000 mark (the window and the pool are long full); a shorter run measures
    # from its first reading.
    marks = [m for m in readings if m >= REFERENCE_MARK]
    end = max(readings)
    ref = min(marks) if len(marks) > 1 else min(readings)
    d_rss = readings[end][0] - readings[ref][0]
    d_pickle = readings[end][1] - readings[ref][1]
    print(f"\ngrowth from {ref} to {end} samples: RSS {d_rss:+.1f} MiB "
          f"({readings[ref][0]:.1f} → {readings[end][0]:.1f}), pickled model "
          f"{d_pickle:+.1f} KiB ({readings[ref][1]:.1f} → {readings[end][1]:.1f})")
    if end > ref:
        print(f"  = {d_rss * 1024 / (end - ref) * 1000:+.2f} KiB RSS per 1000 samples")


if __name__ == "__main__":
    main()
