"""The regressors on a target with a constant offset: does the origin of its unit matter?

Friedman #1 (``synth.Friedman(seed=6)``, 2000 samples; the target's spread is about 5)
with a constant added to every target: 0, −14 (about minus the mean), 10⁴, 10⁶ and 10⁸.
A regressor equivariant to the target's origin scores the same at every offset; window
statistics that hold the raw targets lose digits to cancellation once the offset is many
orders above the spread. Progressive validation behind ``preprocessing.StandardScaler()``,
defaults everywhere; printed: RMSE after the first 200 samples, and our 95 % coverage.

Models: ``SparseRBFRegressor``, ``VBLSRegressor``, ``VBLSKernelRegressor`` (as is, and
behind river's ``preprocessing.TargetStandardScaler``), ``Lin1Regressor`` and river's
``LinearRegression``.

Run: ``.venv/bin/python benchmarks/target_offset.py`` (about a minute).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import math  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from river import linear_model, preprocessing  # noqa: E402
from river.datasets import synth  # noqa: E402

from onlinesparse import Lin1Regressor, SparseRBFRegressor  # noqa: E402
from onlinesparse.vbls import VBLSKernelRegressor, VBLSRegressor  # noqa: E402

OFFSETS = (0.0, -14.0, 1e4, 1e6, 1e8)
SKIP = 200  # (samples left out of the RMSE: the first predictions of a young model)
MODELS: dict[str, Callable[[], object]] = {
    "SparseRBFRegressor": SparseRBFRegressor,
    "VBLSRegressor": VBLSRegressor,
    "VBLSKernelRegressor": VBLSKernelRegressor,
    "VBLSKernelRegressor behind TargetStandardScaler": None,  # (built below: it wraps the rest)
    "Lin1Regressor": Lin1Regressor,
    "river LinearRegression": linear_model.LinearRegression,
}


def make(name: str) -> object:
    if name.endswith("TargetStandardScaler"):
        return preprocessing.TargetStandardScaler(
            regressor=preprocessing.StandardScaler() | VBLSKernelRegressor())
    return preprocessing.StandardScaler() | MODELS[name]()


def score(name: str, data: list[tuple[dict, float]], offset: float) -> tuple[float, float]:
    """RMSE after the first SKIP samples, and the 95 % coverage (NaN without a
    distribution)."""
    model = make(name)
    squared, covered = [], []
    with_dist = name == "SparseRBFRegressor"
    for k, (x, y) in enumerate(data):
        target = y + offset
        if with_dist:
            dist = model.predict_one(x, with_dist=True)
            prediction = dist.mu
        else:
            prediction = model.predict_one(x)
        if k >= SKIP:
            squared.append((target - prediction) ** 2)
            if with_dist:
                covered.append(abs(target - prediction) <= 1.96 * dist.sigma)
        model.learn_one(x, target)
    return math.sqrt(float(np.mean(squared))), (float(np.mean(covered)) if covered
                                                 else math.nan)


def main() -> None:
    data = list(synth.Friedman(seed=6).take(2000))
    print(f"Friedman #1 (seed 6, 2000 samples), target + offset; RMSE after {SKIP} samples "
          "(SparseRBFRegressor: and its 95 % coverage)")
    print("| model | " + " | ".join(f"{o:g}" for o in OFFSETS) + " |")
    print("|---" * (len(OFFSETS) + 1) + "|")
    for name in MODELS:
        cells = []
        for offset in OFFSETS:
            rmse, cover = score(name, data, offset)
            cells.append(f"{rmse:.4g}" + (f" ({100 * cover:.1f} %)" if cover == cover else ""))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
