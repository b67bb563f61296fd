"""SparseRBFRegressor on the other regression streams river ships, against river's models.

`stream_real.py` holds the streams issue 18 names. This script runs the rest of river's
bundled (offline) regression data sets, to find faults before a user does:

* ``SP500Stocks`` (1257 days, ten stocks' returns predicting another's);
* ``AirlinePassengers`` (144 months, a growing trend with a yearly cycle);
* ``WaterFlow`` (1268 hours of a water flow near 100, whose sensor now and then sticks at
  24 for hours).

The last two have a date for their only input. A user would turn it into numbers, and so
does this script: the time in years (or hours) and the month (or the hour of the day and
the day of the week). Progressive validation through ``benchmarks/harness.py`` (the first
prediction is not scored, a ``None`` is missing, not 0) behind
``preprocessing.StandardScaler()`` (river's AMF on the raw inputs and behind the scaler),
defaults everywhere but ``LinearRegression``'s rate, tuned on the stream; the running mean
and the last target run beside them. Printed: RMSE per model, our 95 % coverage after the
first 100 samples, and the largest distance of our predictions from the range of the
targets.

Run: ``.venv/bin/python benchmarks/river_more.py`` (about a minute). Writes
``benchmarks/results/river_more.json``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
from collections.abc import Callable  # noqa: E402

import harness  # noqa: E402
from river import datasets  # noqa: E402

from onlinesparse import Lin1Regressor, SparseRBFRegressor, warm_up  # noqa: E402


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
OURS = "ours SparseRBF()"


def models(data: list[tuple[dict, float]]) -> list[harness.Model]:
    return [harness.Model(OURS, SparseRBFRegressor, with_dist=True),
            harness.river_peer("linear", data), harness.Model("Lin1Regressor", Lin1Regressor),
            *(harness.river_peer(k, data)
              for k in ("knn", "hat", "arf", "amf", "amf-scaled"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    args = parser.parse_args()
    report = harness.Report("river_more", __doc__.splitlines()[0],
                            {"streams": list(STREAMS)}, path=args.results)
    warm_up()
    rows, labels = [], []
    for stream, load in STREAMS.items():
        data = load()
        runs = harness.progressive(data, models(data))
        report.add_stream(stream, runs, ours=OURS,
                          peers=[k for k in runs if k.startswith("LinearRegression")])
        ours = runs[OURS]
        low, high = min(y for _, y in data), max(y for _, y in data)
        outside = max(0.0, float(max(low - ours.predictions[1:].min(),
                                     ours.predictions[1:].max() - high)))
        labels = [k.split(" (lr")[0] for k in runs]
        rows.append([f"{stream} ({len(data)})", *(f"{r.rmse():.4g}" for r in runs.values()),
                     harness.percent(ours.coverage()), f"{outside:.3g}"])
        print(f"  {stream} done", flush=True)
    report.table("RMSE per model", ["stream", *labels, "ours 95 % coverage",
                                    "ours beyond the targets' range"], rows)
    report.note("LinearRegression's rate per stream: " + "; ".join(
        f"{s}: {next(k for k in e['models'] if k.startswith('LinearRegression'))}"
        for s, e in report.data["streams"].items()), table=True)
    report.write()


if __name__ == "__main__":
    main()
