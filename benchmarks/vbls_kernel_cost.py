"""Cost of a sample of ``VBLSKernelRegressor`` against ``SparseRBFRegressor``, same run.

Both models at the same ``max_basis`` (100, both defaults) behind
``preprocessing.StandardScaler()``, progressive validation (``predict_one`` then
``learn_one`` on every sample) on river's TrumpApproval (1001 samples) and Friedman #1
(``synth.Friedman(seed=42)``, 3000 samples). Printed per stream and model: the RMSE, the
median and 99th percentile of the thread's CPU time of ``predict_one`` + ``learn_one``
(``time.thread_time``: on a shared machine the wall clock mostly measures the other
processes), the number of basis functions at the end, and the kernel model's admissions;
then the ratio of the medians (the issue's target: ≤ 3). The models alternate over
``--repeats`` rounds (3 by default) and the medians are taken over all rounds, so that a
burst of load on the machine falls on both.

Run: ``.venv/bin/python benchmarks/vbls_kernel_cost.py`` (about five seconds here).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import math  # noqa: E402
from collections.abc import Callable, Iterable  # noqa: E402

import numpy as np  # noqa: E402
from river import datasets  # noqa: E402
from river.datasets import synth  # noqa: E402
from vbls_stream import squared_errors_and_times  # noqa: E402  (benchmarks/ is on sys.path)

import onlinesparse  # noqa: E402
from onlinesparse import SparseRBFRegressor  # noqa: E402
from onlinesparse.vbls import VBLSKernelRegressor  # noqa: E402

STREAMS: dict[str, Callable[[], Iterable]] = {
    "TrumpApproval": lambda: datasets.TrumpApproval(),
    "Friedman #1": lambda: synth.Friedman(seed=42).take(3000),
}
MODELS: dict[str, Callable[[], object]] = {
    "VBLSKernelRegressor": lambda: VBLSKernelRegressor(max_basis=100),
    "SparseRBFRegressor": lambda: SparseRBFRegressor(max_basis=100),
}


def progressive(stream: Iterable, model) -> tuple[float, np.ndarray]:
    """RMSE over the stream and the µs of every sample's predict_one + learn_one."""
    errors, times = squared_errors_and_times(stream, model)
    return math.sqrt(float(np.mean(errors))), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    onlinesparse.warm_up()
    print(f"{'stream':15s} {'model':20s} {'RMSE':>7s} {'µs med':>8s} {'µs p99':>8s} "
          f"{'M':>4s} {'admitted':>8s}")
    for stream_name, make in STREAMS.items():
        times: dict[str, list[np.ndarray]] = {name: [] for name in MODELS}
        rmse_of, sizes, admissions = {}, {}, {}
        for _ in range(args.repeats):
            for model_name, build in MODELS.items():
                model = build()
                rmse_of[model_name], sample_times = progressive(make(), model)
                times[model_name].append(sample_times)
                sizes[model_name] = int(model.n_basis)
                admissions[model_name] = getattr(model, "n_admitted", math.nan)
        medians = {}
        for model_name in MODELS:
            all_times = np.concatenate(times[model_name])
            medians[model_name] = float(np.median(all_times))
            # (the RMSE and sizes are the last round's: every round computes the same)
            print(f"{stream_name:15s} {model_name:20s} {rmse_of[model_name]:7.3f} "
                  f"{medians[model_name]:8.1f} {np.percentile(all_times, 99):8.1f} "
                  f"{sizes[model_name]:4d} {admissions[model_name]:8.0f}")
        ratio = medians["VBLSKernelRegressor"] / medians["SparseRBFRegressor"]
        print(f"{stream_name:15s} median µs ratio VBLSKernelRegressor / SparseRBFRegressor = "
              f"{ratio:.2f} (target ≤ 3)\n", flush=True)


if __name__ == "__main__":
    main()
