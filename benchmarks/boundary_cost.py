"""What the input boundary costs per sample (issue 21: the numeric domain is checked there).

Every estimator converts each feature dict through ``FeatureMap`` (the fast path
``transform_known`` for a dict of exactly the known features, all floats, the general
``transform`` otherwise) and each target through ``as_target``. This script times them on
d = 10 features, beside two named peers in the same run:

* ``np.fromiter(x.values())``: the least a dict → vector conversion can cost, with no check;
* river's ``StandardScaler.transform_one``: the step usually in front of our models.

Each figure is the best of several repeats of many calls (µs per call). Run with
``.venv/bin/python benchmarks/boundary_cost.py``.
"""

from __future__ import annotations

import timeit

import numpy as np
from river import preprocessing

from onlinesparse.features import FeatureMap, as_target

D = 10
CALLS = 20_000
REPEATS = 7


def best_us(call) -> float:
    return min(timeit.repeat(call, number=CALLS, repeat=REPEATS)) / CALLS * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    x = {f"x{i}": float(v) for i, v in enumerate(rng.normal(size=D))}
    mixed = {name: (int(10 * v) if i % 2 else v) for i, (name, v) in enumerate(x.items())}
    features = FeatureMap()
    features.commit(features.transform(x, learning=True), x)
    scaler = preprocessing.StandardScaler()
    for _ in range(10):
        scaler.learn_one(x)
    rows = {
        "np.fromiter(x.values()) (peer: no checks)":
            best_us(lambda: np.fromiter(x.values(), float, D)),
        "StandardScaler.transform_one (peer: river)": best_us(lambda: scaler.transform_one(x)),
        "FeatureMap.transform_known (floats)": best_us(lambda: features.transform_known(x)),
        "FeatureMap.transform (floats)": best_us(lambda: features.transform(x)),
        "FeatureMap.transform (ints and floats)": best_us(lambda: features.transform(mixed)),
        "as_target (float)": best_us(lambda: as_target(0.5)),
        "as_target (int)": best_us(lambda: as_target(3)),
    }
    floor = rows["np.fromiter(x.values()) (peer: no checks)"]
    print(f"input boundary, d = {D}: µs per call (best of {REPEATS} × {CALLS})")
    for name, us in rows.items():
        print(f"  {name:45s} {us:6.2f} µs   {us / floor:5.1f} × fromiter")


if __name__ == "__main__":
    main()
