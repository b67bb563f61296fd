"""Resident memory of a long stream through SparseRBFRegressor: it must not grow.

100 000 samples of ``datasets.synth.Friedman(seed=7)`` go through
``preprocessing.StandardScaler() | SparseRBFRegressor(max_basis=50, window_size=500,
evaluations_per_sample=2)`` with progressive validation (predict, then learn;
``benchmarks/harness.py``'s loop, without its baselines: this measures the model's memory,
not its accuracy). Every 5000
samples the script runs the garbage collector and records the resident set size of the
process (``psutil`` if installed, else ``VmRSS`` of ``/proc/self/status``, else
``resource.getrusage``'s peak), the size of the pickled model (the state the model holds,
independent of the allocator), the number of basis functions and candidates, and the mean µs
per sample of the block. It prints the table and the growth of both sizes between the
20 000-sample mark (well after the window and the pool have filled) and the end.

Run: ``.venv/bin/python benchmarks/stream_memory.py [--samples N] [--every K]`` (``--quick``:
20 000 samples). Writes ``benchmarks/results/stream_memory.json``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import pickle  # noqa: E402

import harness  # noqa: E402
from river import datasets  # noqa: E402

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


PARAMS = {"max_basis": 50, "window_size": 500, "evaluations_per_sample": 2}


def reader(readings: dict[int, tuple[float, float, dict]]):
    """A harness checkpoint that records RSS, the pickle's size and the diagnostics."""
    def read(samples: int, pipeline) -> None:
        gc.collect()
        readings[samples] = (rss_mib()[0], len(pickle.dumps(pipeline)) / 1024,
                             pipeline[-1].diagnostics())
    return read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="20 000 samples")
    harness.add_common_args(parser)
    args = parser.parse_args()
    if args.quick:
        args.samples = 20_000
    report = harness.Report("stream_memory", __doc__.splitlines()[0],
                            {"samples": args.samples, "every": args.every, **PARAMS},
                            quick=args.quick or args.samples != 100_000, path=args.results)
    gc.collect()
    start_rss, how = rss_mib()
    report.note(f"resident memory from {how}; garbage collected before each reading; "
                f"RSS before the stream: {start_rss:.1f} MiB")
    readings: dict[int, tuple[float, float, dict]] = {}
    data = datasets.synth.Friedman(seed=7).take(args.samples)
    label = "SparseRBFRegressor(max_basis=50, window_size=500, evaluations_per_sample=2)"
    run = harness.progressive(data, [harness.Model(label, lambda: SparseRBFRegressor(**PARAMS))],
                              baselines=False, checkpoint=(args.every, reader(readings)))[label]
    report.add_stream(f"Friedman #1 (seed 7), {args.samples} samples", {label: run})
    rows, previous = [], 0
    for mark, (rss, pickled, diag) in readings.items():
        rows.append([str(mark), f"{rss:.1f}", f"{pickled:.1f}", f"{diag['n_basis']:.0f}",
                     f"{diag['n_candidates']:.0f}", f"{diag['n_refreshes']:.0f}",
                     f"{run.seconds[previous:mark].mean() * 1e6:.0f}",
                     f"{run.rmse(previous, mark):.3f}"])
        previous = mark
    report.table(f"{label} behind StandardScaler, Friedman #1 (seed 7)",
                 ["samples", "RSS MiB", "pickle KiB", "n_basis", "n_cand", "refreshes",
                  "µs/sample", "RMSE block"], rows, doc=False)
    report_growth(report, {k: v[:2] for k, v in readings.items()})
    report.write()


def report_growth(report: harness.Report, readings: dict[int, tuple[float, float]]) -> None:
    """Growth of both sizes from the 20 000 mark (the window and the pool are long full; a
    shorter run measures from its first reading) to the end."""
    marks = [m for m in readings if m >= REFERENCE_MARK]
    end = max(readings)
    ref = min(marks) if len(marks) > 1 else min(readings)
    d_rss = readings[end][0] - readings[ref][0]
    d_pickle = readings[end][1] - readings[ref][1]
    per_1000 = f"{d_rss * 1024 / (end - ref) * 1000:+.2f}" if end > ref else "—"
    report.table("growth of the resident memory and of the pickled model",
                 ["from", "to", "RSS MiB", "pickled model KiB", "RSS KiB per 1000 samples"],
                 [[str(ref), str(end), f"{readings[ref][0]:.1f} → {readings[end][0]:.1f} "
                   f"({d_rss:+.1f})", f"{readings[ref][1]:.1f} → {readings[end][1]:.1f} "
                   f"({d_pickle:+.1f})", per_1000]])


if __name__ == "__main__":
    main()
