"""The Bayesian family on streams: progressive RMSE and the cost of a sample, with peers.

Every model sits behind ``preprocessing.StandardScaler()``; for every sample ``predict_one``
then ``learn_one`` (progressive validation). Printed per stream: the RMSE over the whole
stream and over its first 20 samples, and the median and 99th percentile of the thread's
CPU time of ``predict_one`` + ``learn_one`` (``time.thread_time``: on a shared machine the
wall clock mostly measures the other processes), for

* ``VBLSRegressor()`` with its defaults (forgetting memory of five patterns per weight, the
  fixed-point schedule with restarts), and the same with ``memory="unbounded"``;
* ``VBLSRegressor(factorisation="student_t")``;
* ``Lin1Regressor`` (DELVE lin-1, least squares on every pattern) and river's
  ``LinearRegression`` (SGD, which forgets by construction);
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

Run: ``.venv/bin/python benchmarks/vbls_stream.py`` (about two minutes).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterable  # noqa: E402

import numpy as np  # noqa: E402
from river import datasets, linear_model, preprocessing  # noqa: E402
from river.datasets import synth  # noqa: E402

import onlinesparse  # noqa: E402
from onlinesparse import Lin1Regressor, SparseRBFRegressor  # noqa: E402
from onlinesparse.vbls import VBLSKernelRegressor, VBLSRegressor  # noqa: E402


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

MODELS: dict[str, Callable[[], object]] = {
    "VBLS (defaults)": lambda: VBLSRegressor(),
    "VBLS unbounded": lambda: VBLSRegressor(memory="unbounded"),
    "VBLS student_t": lambda: VBLSRegressor(factorisation="student_t"),
    "Lin1Regressor": lambda: Lin1Regressor(),
    "river LinearRegression": lambda: linear_model.LinearRegression(),
}
KERNEL_MODELS: dict[str, Callable[[], object]] = {
    "VBLSKernelRegressor": lambda: VBLSKernelRegressor(max_basis=100),
    "SparseRBFRegressor": lambda: SparseRBFRegressor(max_basis=100),
}


def squared_errors_and_times(stream: Iterable, model) -> tuple[np.ndarray, np.ndarray]:
    """Progressive validation behind a StandardScaler: every sample's squared error
    (a prediction of None scored as 0) and the µs of its predict_one + learn_one (this
    thread's CPU time)."""
    pipeline = preprocessing.StandardScaler() | model
    errors, times = [], []
    for x, y in stream:
        start = time.thread_time()
        prediction = pipeline.predict_one(x)
        pipeline.learn_one(x, y)
        times.append(time.thread_time() - start)
        errors.append((y - (prediction or 0.0)) ** 2)
    return np.array(errors), 1e6 * np.array(times)


def progressive(stream: Iterable, model) -> tuple[float, float, float, float]:
    """RMSE over all samples and the first 20, median and p99 µs of predict + learn."""
    errors, times = squared_errors_and_times(stream, model)
    return (math.sqrt(errors.mean()), math.sqrt(errors[:20].mean()),
            float(np.median(times)), float(np.percentile(times, 99)))


def main() -> None:
    onlinesparse.warm_up()
    results: dict[tuple[str, str], tuple[float, float, float, float]] = {}
    print(f"{'stream':20s} {'model':24s} {'RMSE':>8s} {'first 20':>9s} {'µs med':>8s} "
          f"{'µs p99':>8s}")
    for stream_name, (make, _) in STREAMS.items():
        models = dict(MODELS)
        if stream_name == "TrumpApproval":
            models.update(KERNEL_MODELS)
        for model_name, build in models.items():
            row = progressive(make(), build())
            results[stream_name, model_name] = row
            print(f"{stream_name:20s} {model_name:24s} {row[0]:8.3f} {row[1]:9.3f} "
                  f"{row[2]:8.1f} {row[3]:8.1f}", flush=True)
    print("\ntargets")
    for stream_name, (_, drifting) in STREAMS.items():
        ours = results[stream_name, "VBLS (defaults)"][0]
        if drifting:
            peer = results[stream_name, "river LinearRegression"][0]
            print(f"  {stream_name:20s} VBLS / river LinearRegression = {ours / peer:.3f} "
                  f"(target < 1)")
        else:
            peer = results[stream_name, "Lin1Regressor"][0]
            print(f"  {stream_name:20s} VBLS / Lin1Regressor = {ours / peer:.3f} "
                  f"(target ≤ 1.05)")
    kernel = results["TrumpApproval", "VBLSKernelRegressor"]
    rbf = results["TrumpApproval", "SparseRBFRegressor"]
    print(f"  VBLSKernelRegressor median µs / SparseRBFRegressor's = {kernel[2] / rbf[2]:.2f} "
          f"(target ≤ 3); RMSE {kernel[0]:.3f} against {rbf[0]:.3f}")


if __name__ == "__main__":
    main()
