"""The regressors on a target with a constant offset: does the origin of its unit matter?

Friedman #1 (``synth.Friedman(seed=6)``, 2000 samples; the target's spread is about 5)
with a constant added to every target: 0, −14 (about minus the mean), 10⁴, 10⁶ and 10⁸.
A regressor equivariant to the target's origin scores the same at every offset; window
statistics that hold the raw targets lose digits to cancellation once the offset is many
orders above the spread. Progressive validation behind ``preprocessing.StandardScaler()``
(``benchmarks/harness.py``'s loop), defaults everywhere but river ``LinearRegression``'s
rate, tuned on each stream; printed: RMSE after the first 200 samples (for every model
alike), and our 95 % coverage. The running mean of the targets and the last target run
beside them (the harness's baselines): both are equivariant to the origin by construction,
so their rows show what rounding alone does.

Models: ``SparseRBFRegressor``, ``VBLSRegressor``, ``VBLSKernelRegressor`` (as is, and
behind river's ``preprocessing.TargetStandardScaler``), ``Lin1Regressor`` and river's
``LinearRegression``.

Run: ``.venv/bin/python benchmarks/target_offset.py`` (about a minute). Writes
``benchmarks/results/target_offset.json``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402

import harness  # noqa: E402
from river import preprocessing  # noqa: E402
from river.datasets import synth  # noqa: E402

from onlinesparse import (  # noqa: E402
    Lin1Regressor,
    SparseRBFRegressor,
    VBLSKernelRegressor,
    VBLSRegressor,
)

OFFSETS = (0.0, -14.0, 1e4, 1e6, 1e8)
SKIP = 200  # (samples left out of the RMSE: the first predictions of a young model)
OURS = "SparseRBFRegressor"


def models(data: list[tuple[dict, float]]) -> list[harness.Model]:
    def wrapped() -> object:  # it wraps the scaler too, so it gets none from the harness
        return preprocessing.TargetStandardScaler(
            regressor=preprocessing.StandardScaler() | VBLSKernelRegressor())

    return [harness.Model(OURS, SparseRBFRegressor, with_dist=True),
            harness.Model("VBLSRegressor", VBLSRegressor),
            harness.Model("VBLSKernelRegressor", VBLSKernelRegressor),
            harness.Model("VBLSKernelRegressor behind TargetStandardScaler", wrapped,
                          scale=False),
            harness.Model("Lin1Regressor", Lin1Regressor),
            harness.river_peer("linear", data)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    args = parser.parse_args()
    report = harness.Report("target_offset", __doc__.splitlines()[0],
                            {"offsets": list(OFFSETS), "skip": SKIP, "samples": 2000,
                             "seed": 6}, path=args.results)
    data = list(synth.Friedman(seed=6).take(2000))
    cells: dict[str, list[str]] = {}
    for offset in OFFSETS:
        shifted = [(x, y + offset) for x, y in data]
        runs = harness.progressive(shifted, models(shifted), score_from=SKIP)
        runs = {k.split(" (lr")[0]: r for k, r in runs.items()}
        report.add_stream(f"offset {offset:g}", runs)
        for label, run in runs.items():
            cover = f" ({harness.percent(run.coverage())})" if run.with_dist else ""
            cells.setdefault(label, []).append(f"{run.rmse():.4g}{cover}")
        print(f"  offset {offset:g} done", flush=True)
    report.table(f"Friedman #1 (seed 6, 2000 samples), target + offset; RMSE after {SKIP} "
                 f"samples ({OURS}: and its 95 % coverage)",
                 ["model", *(f"{o:g}" for o in OFFSETS)],
                 [[label, *row] for label, row in cells.items()])
    report.write()


if __name__ == "__main__":
    main()
