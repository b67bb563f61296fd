"""The Bayesian family on streams: progressive RMSE and the cost of a sample, with peers.

Every model sits behind ``preprocessing.StandardScaler()``; for every sample ``predict_one``
then ``learn_one`` (progressive validation through ``benchmarks/harness.py``: the first
prediction, made before any target, is not scored, and the running mean and the last target
run beside the models). Printed per stream: the RMSE over the whole stream and over its
first 20 samples (19 scored), and the median and 99th percentile of the thread's
CPU time of ``predict_one`` + ``learn_one`` (``time.thread_time``: on a shared machine the
wall clock mostly measures the other processes), for

* ``VBLSRegressor()`` with its defaults (forgetting memory of five patterns per weight, the
  fixed-point schedule with restarts), and the same with ``memory="unbounded"``;
* ``VBLSRegressor(factorisation="student_t")``;
* ``Lin1Regressor`` (DELVE lin-1, least squares on every pattern) and river's
  ``LinearRegression`` (SGD, which forgets by construction; its rate tuned on the stream);
* on TrumpApproval also ``VBLSKernelRegressor()`` and ``SparseRBFRegressor`` at the same
  ``max_basis`` (100, both defaults), for the kernel model's cost.

Streams: river's TrumpApproval (1001 samples) and Friedman #1 (``synth.Friedman(seed=42)``,
3000 samples) are stationary; ``synth.FriedmanDrift(drift_type="gra", position=(1000, 2000),
seed=42)`` (3000 samples, two abrupt global drifts) and a wandering operating point drift:
"robot" below, 4000 samples of ``y = Σ_j w_j sin(2x_j)`` (five inputs and three irrelevant
ones, noise 0.01), whose inputs are a centre that follows a random walk (step 0.03 per input
per sample) plus N(0, 0.1²) jitter, so that the best linear model keeps changing.

Then the issue's targets: VBLS within 1.05× Lin1Regressor on the stationary streams, better
than river's LinearRegression on the drifting ones, and the kernel model's median cost
against 3× SparseRBFRegressor's.

Run: ``.venv/bin/python benchmarks/vbls_stream.py`` (about two minutes). Writes
``benchmarks/results/vbls_stream.json``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
from collections.abc import Callable, Iterable  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402
from river import datasets  # noqa: E402
from river.datasets import synth  # noqa: E402

import onlinesparse  # noqa: E402
from onlinesparse import (  # noqa: E402
    Lin1Regressor,
    SparseRBFRegressor,
    VBLSKernelRegressor,
    VBLSRegressor,
)


def robot(n: int = 4000, seed: int = 0) -> Iterable[tuple[dict, float]]:
    rng = np.random.default_rng(seed)
    centre, weights = np.zeros(5), rng.normal(size=5)
    for _ in range(n):
        centre += rng.normal(0.0, 0.03, 5)
        x = centre + rng.normal(0.0, 0.1, 5)
        y = float(np.sin(2.0 * x) @ weights + 0.01 * rng.normal())
        values = np.concatenate([x, rng.normal(size=3)])
        yield {f"q{i}": float(v) for i, v in enumerate(values)}, y


STREAMS: dict[str, tuple[Callable[[], Iterable], bool]] = {
    "TrumpApproval": (lambda: datasets.TrumpApproval(), False),
    "Friedman #1": (lambda: synth.Friedman(seed=42).take(3000), False),
    "FriedmanDrift": (lambda: synth.FriedmanDrift(drift_type="gra", position=(1000, 2000),
                                                  seed=42).take(3000), True),
    "robot (wandering)": (lambda: robot(), True),
}

MODELS = (harness.Model("VBLS (defaults)", VBLSRegressor),
          harness.Model("VBLS unbounded", lambda: VBLSRegressor(memory="unbounded")),
          harness.Model("VBLS student_t", lambda: VBLSRegressor(factorisation="student_t")),
          harness.Model("Lin1Regressor", Lin1Regressor))
KERNEL_MODELS = (harness.Model("VBLSKernelRegressor", lambda: VBLSKernelRegressor(max_basis=100)),
                 harness.Model("SparseRBFRegressor", lambda: SparseRBFRegressor(max_basis=100)))
LINEAR = "LinearRegression"


def run_stream(report: harness.Report, name: str, data: list) -> dict[str, harness.Run]:
    """Every model on one stream; prints and stores its table."""
    models = [*MODELS, harness.river_peer("linear", data)]
    if name == "TrumpApproval":
        models += KERNEL_MODELS
    runs = harness.progressive(data, models)
    report.add_stream(name, runs, ours="VBLS (defaults)",
                      peers=["Lin1Regressor", *(k for k in runs if k.startswith(LINEAR))])
    report.table(f"{name} ({len(data)} samples)",
                 ["model", "RMSE", "first 20", "CPU µs median", "CPU µs p99"],
                 [[label, f"{r.rmse():.3f}", f"{r.rmse(0, 20):.3f}",
                   f"{r.latency(50, cpu=True):.1f}", f"{r.latency(99, cpu=True):.1f}"]
                  for label, r in runs.items()], doc=False)
    return runs


def report_all(report: harness.Report, results: dict[str, dict[str, harness.Run]]) -> None:
    """Every stream side by side (the page's table; the per-stream ones have more)."""
    cells: dict[str, dict[str, str]] = {}
    for name, runs in results.items():
        for label, run in runs.items():
            cells.setdefault(label.split(" (lr")[0], {})[name] = (
                f"{run.rmse():.3f} ({run.latency(50, cpu=True):.0f})")
    report.table("RMSE (median CPU µs of predict + learn) per stream",
                 ["model", *results], [[label, *(row.get(n, "—") for n in results)]
                                       for label, row in cells.items()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    args = parser.parse_args()
    report = harness.Report("vbls_stream", __doc__.splitlines()[0],
                            {"streams": list(STREAMS)}, path=args.results)
    onlinesparse.warm_up()
    results = {name: run_stream(report, name, list(make()))
               for name, (make, _) in STREAMS.items()}
    report_all(report, results)
    for name, (_, drifting) in STREAMS.items():
        runs = results[name]
        ours = runs["VBLS (defaults)"].rmse()
        if drifting:
            linear = next(k for k in runs if k.startswith(LINEAR))
            report.note(f"{name}: VBLS / river {linear} = {ours / runs[linear].rmse():.3f} "
                        "(target < 1)")
        else:
            report.note(f"{name}: VBLS / Lin1Regressor = "
                        f"{ours / runs['Lin1Regressor'].rmse():.3f} (target ≤ 1.05)")
    kernel = results["TrumpApproval"]["VBLSKernelRegressor"]
    rbf = results["TrumpApproval"]["SparseRBFRegressor"]
    ratio = kernel.latency(50, cpu=True) / rbf.latency(50, cpu=True)
    report.note(f"VBLSKernelRegressor median CPU µs / SparseRBFRegressor's = {ratio:.2f} "
                f"(target ≤ 3); RMSE {kernel.rmse():.3f} against {rbf.rmse():.3f}")
    report.write()


if __name__ == "__main__":
    main()
