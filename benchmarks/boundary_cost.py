"""What the input boundary and the VBLS sweep's guards cost per sample (issue 21).

Every estimator converts each feature dict through ``FeatureMap`` (the fast path
``transform_known`` for a dict of exactly the known features, all floats, the general
``transform`` otherwise) and each target through ``as_target``. This script times them on
d = 10 features, beside two named peers in the same run:

* ``np.fromiter(x.values())``: the least a dict → vector conversion can cost, with no check;
* river's ``StandardScaler.transform_one``: the step usually in front of our models.

Then one ``engine.sweep_regression`` (ARD, the statistics of 1000 patterns, M basis
functions), which holds the guards that keep the VBLS posterior finite, beside the peer
``np.linalg.solve`` of the same M × M system (the batch answer a sweep approximates).

Each figure is the best of several repeats of many calls (µs per call). Run with
``.venv/bin/python benchmarks/boundary_cost.py`` (about 30 s).
"""

from __future__ import annotations

import timeit
from functools import partial

import numpy as np
from river import preprocessing

from onlinesparse.features import FeatureMap, as_target
from onlinesparse.vbls import engine

D = 10
CALLS = 20_000
REPEATS = 7


def best_us(call) -> float:
    return min(timeit.repeat(call, number=CALLS, repeat=REPEATS)) / CALLS * 1e6


def time_sweep(m: int, rng: np.random.Generator) -> tuple[float, float]:
    """µs of one VBLS sweep near its fixed point and of the peer's M × M solve."""
    design = np.c_[np.ones(1000), rng.normal(size=(1000, m - 1))]
    y = design @ rng.normal(size=m) + rng.normal(size=1000)
    gram, cross, yy = design.T @ design, design.T @ y, float(y @ y)
    state = engine.initial_state(m, yy / 1000)
    sweep = partial(engine.sweep_regression, state, gram, cross, yy, 1000.0, "ard", 10.0)
    for _ in range(50):  # near the fixed point, as in a stream
        sweep()
    solve = partial(np.linalg.solve, gram + np.eye(m), cross)
    return (min(timeit.repeat(sweep, number=2000, repeat=REPEATS)) / 2000 * 1e6,
            min(timeit.repeat(solve, number=2000, repeat=REPEATS)) / 2000 * 1e6)


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

    print("VBLS sweep (ARD, p = 1000): µs per call")
    for m in (11, 101):
        sweep, solve = time_sweep(m, rng)
        print(f"  M = {m:3d}: sweep_regression {sweep:6.2f} µs   np.linalg.solve (peer) "
              f"{solve:6.2f} µs   ratio {sweep / solve:4.1f}")

if __name__ == "__main__":
    main()
