"""SparseRBFRegressor on the other regression streams river ships, against river's models.

`stream_real.py` holds the streams issue 18 names. This script runs the rest of river's
bundled (offline) regression data sets, to find faults before a user does:

* ``SP500Stocks`` (1257 days, ten stocks' returns predicting another's);
* ``AirlinePassengers`` (144 months, a growing trend with a yearly cycle);
* ``WaterFlow`` (1268 hours of a water flow near 100, whose sensor now and then sticks at
  24 for hours).

The last two have a date for their only input. A user would turn it into numbers, and so
does this script: the time in years (or hours) and the month (or the hour of the day and
the day of the week). Progressive validation behind ``preprocessing.StandardScaler()``,
defaults everywhere. Printed: RMSE per model, our 95 % coverage after the first 100
samples, and the largest distance of our predictions from the range of the targets.

Run: ``.venv/bin/python benchmarks/river_more.py`` (about a minute).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import math  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from river import datasets, forest, linear_model, neighbors, preprocessing, tree  # noqa: E402

from onlinesparse import Lin1Regressor, SparseRBFRegressor  # noqa: E402


def _months(x: dict) -> dict:
    when = x["month"]
    return {"year": when.year + (when.month - 1) / 12, "month": float(when.month)}


def _hours(x: dict) -> dict:
    when = x["Time"]
    return {"hours": when.timestamp() / 3600.0, "hour": float(when.hour),
            "weekday": float(when.weekday())}


STREAMS: dict[str, Callable[[], list[tuple[dict, float]]]] = {
    "SP500Stocks": lambda: list(datasets.SP500Stocks()),
    "AirlinePassengers": lambda: [(_months(x), y) for x, y in datasets.AirlinePassengers()],
    "WaterFlow": lambda: [(_hours(x), y) for x, y in datasets.WaterFlow()],
}
SEED = 42
MODELS: dict[str, Callable[[], object]] = {
    "ours SparseRBF()": SparseRBFRegressor,
    "LinearRegression": linear_model.LinearRegression,
    "Lin1Regressor": Lin1Regressor,
    "KNNRegressor": neighbors.KNNRegressor,
    "HoeffdingAdaptiveTree": lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=SEED),
    "ARFRegressor": lambda: forest.ARFRegressor(seed=SEED),
    "AMFRegressor": lambda: forest.AMFRegressor(seed=SEED),
}
OURS = "ours SparseRBF()"


def run(name: str, data: list[tuple[dict, float]]) -> tuple[float, float, float]:
    """RMSE; for ours the 95 % coverage after 100 samples and the largest distance of a
    prediction outside the targets' range (NaN for the others)."""
    model = preprocessing.StandardScaler() | MODELS[name]()
    errors, covered, outside = [], [], 0.0
    low, high = min(y for _, y in data), max(y for _, y in data)
    for k, (x, y) in enumerate(data):
        if name == OURS:
            dist = model.predict_one(x, with_dist=True)
            prediction = dist.mu
            if k >= 100:
                covered.append(abs(y - prediction) <= 1.96 * dist.sigma)
            outside = max(outside, low - prediction, prediction - high)
        else:
            prediction = model.predict_one(x)
            prediction = 0.0 if prediction is None else prediction  # (before any sample)
        errors.append(y - prediction)
        model.learn_one(x, y)
    rmse = math.sqrt(float(np.mean(np.square(errors))))
    if name != OURS:
        return rmse, math.nan, math.nan
    return rmse, float(np.mean(covered)), outside


def main() -> None:
    print("| stream | " + " | ".join(MODELS) + " | ours 95 % coverage | ours beyond the "
          "targets' range |")
    print("|---" * (len(MODELS) + 3) + "|")
    for stream, load in STREAMS.items():
        data = load()
        cells, extra = [], ""
        for name in MODELS:
            rmse, coverage, outside = run(name, data)
            cells.append(f"{rmse:.4g}")
            if name == OURS:
                extra = f" {100 * coverage:.1f} % | {max(outside, 0.0):.3g} |"
        print(f"| {stream} ({len(data)}) | " + " | ".join(cells) + " |" + extra, flush=True)


if __name__ == "__main__":
    main()
