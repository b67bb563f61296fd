"""Cost of a sample of ``VBLSKernelRegressor`` against ``SparseRBFRegressor``, same run.

Both models at the same ``max_basis`` (100, both defaults) behind
``preprocessing.StandardScaler()``, progressive validation (``predict_one`` then
``learn_one`` on every sample, ``benchmarks/harness.py``'s loop: the first prediction is not
scored; the running mean and the last target run once beside them, for their RMSE) on
river's TrumpApproval (1001 samples) and Friedman #1
(``synth.Friedman(seed=42)``, 3000 samples). Printed per stream and model: the RMSE, the
median and 99th percentile of the thread's CPU time of ``predict_one`` + ``learn_one``
(``time.thread_time``: on a shared machine the wall clock mostly measures the other
processes), the number of basis functions at the end, and the kernel model's admissions;
then the ratio of the medians (the issue's target: ≤ 3). The models alternate over
``--repeats`` rounds (3 by default) and the medians are taken over all rounds, so that a
burst of load on the machine falls on both.

Run: ``.venv/bin/python benchmarks/vbls_kernel_cost.py`` (about five seconds here). Writes
``benchmarks/results/vbls_kernel_cost.json``.
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
from onlinesparse import SparseRBFRegressor, VBLSKernelRegressor  # noqa: E402

STREAMS: dict[str, Callable[[], Iterable]] = {
    "TrumpApproval": lambda: datasets.TrumpApproval(),
    "Friedman #1": lambda: synth.Friedman(seed=42).take(3000),
}
MODELS = (harness.Model("VBLSKernelRegressor", lambda: VBLSKernelRegressor(max_basis=100)),
          harness.Model("SparseRBFRegressor", lambda: SparseRBFRegressor(max_basis=100)))


def one_stream(report: harness.Report, name: str, data: list, repeats: int) -> None:
    """The models in alternation over ``repeats`` rounds; medians over all rounds."""
    runs: dict[str, list[harness.Run]] = {m.label: [] for m in MODELS}
    for _ in range(repeats):
        for model in MODELS:
            runs[model.label].append(harness.progressive(data, [model], baselines=False)
                                     [model.label])
    # The harness's baselines, once (nothing to time in alternation): the RMSE a model
    # that learned nothing from the inputs gets on this stream.
    baselines = harness.progressive(data, [])
    # (the RMSE and sizes are the last round's: every round computes the same)
    report.add_stream(name, {**{k: r[-1] for k, r in runs.items()}, **baselines})
    medians, rows = {}, []
    for label, rounds in runs.items():
        cpu = np.concatenate([r.cpu for r in rounds]) * 1e6
        medians[label] = float(np.median(cpu))
        model = rounds[-1].model
        rows.append([label, f"{rounds[-1].rmse():.3f}", f"{medians[label]:.1f}",
                     f"{np.percentile(cpu, 99):.1f}", str(int(model.n_basis)),
                     harness.fmt(getattr(model, "n_admitted", None), 6)])
    rows += [[label, f"{run.rmse():.3f}", f"{run.latency(50, cpu=True):.1f}",
              f"{run.latency(99, cpu=True):.1f}", "—", "—"] for label, run in baselines.items()]
    report.table(f"{name} ({len(data)} samples, {repeats} rounds)",
                 ["model", "RMSE", "CPU µs median", "CPU µs p99", "M", "admitted"], rows)
    ratio = medians["VBLSKernelRegressor"] / medians["SparseRBFRegressor"]
    report.note(f"{name}: median CPU µs ratio VBLSKernelRegressor / SparseRBFRegressor = "
                f"{ratio:.2f} (target ≤ 3)", table=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    harness.add_common_args(parser)
    args = parser.parse_args()
    report = harness.Report("vbls_kernel_cost", __doc__.splitlines()[0],
                            {"repeats": args.repeats}, quick=args.repeats != 3,
                            path=args.results)
    onlinesparse.warm_up()
    for name, make in STREAMS.items():
        one_stream(report, name, list(make()), args.repeats)
    report.write()


if __name__ == "__main__":
    main()
