"""SparseRBFRegressor in two units of its target: how long do the two models agree?

Two models learn the same stream, each behind its own ``preprocessing.StandardScaler()``,
one on y and one on ``factor·y`` (factor 1000 and 0.001: N·m against mN·m). An equivariant
model predicts ``factor`` times as much at every sample; in floating point the two agree to
rounding until a decision whose margin is within rounding goes one way in one model and
the other way in the other (docs/numerics.md §10). Printed per stream and factor: the
first sample whose prediction differs from ``factor`` times the first model's by more
than 10⁻⁶ relative ("none" if no sample does) and the largest relative difference over
the stream.

Streams: Friedman #1 seed 7 (2000 samples, ``max_basis=30, window_size=300``: the units
test's), Friedman #1 seed 42 (2000), river's ChickWeights and TrumpApproval, defaults
otherwise.

Run: ``.venv/bin/python benchmarks/target_units.py`` (a few seconds); compare two versions of
the code by running it on each.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

from collections.abc import Callable, Iterable  # noqa: E402

from river import datasets, preprocessing  # noqa: E402
from river.datasets import synth  # noqa: E402

from onlinesparse import SparseRBFRegressor  # noqa: E402

FACTORS = (1000.0, 0.001)
TOLERANCE = 1e-6
STREAMS: dict[str, tuple[Callable[[], Iterable], dict]] = {
    "Friedman #1 seed 7, max_basis=30, window_size=300":
        (lambda: synth.Friedman(seed=7).take(2000), {"max_basis": 30, "window_size": 300}),
    "Friedman #1 seed 42": (lambda: synth.Friedman(seed=42).take(2000), {}),
    "ChickWeights": (datasets.ChickWeights, {}),
    "TrumpApproval": (datasets.TrumpApproval, {}),
}


def agreement(stream: Iterable, factor: float, params: dict) -> tuple[int | None, float]:
    """The first sample at which the two models part by more than ``TOLERANCE`` (None if
    none does) and the largest relative difference of their predictions."""
    scalers = preprocessing.StandardScaler(), preprocessing.StandardScaler()
    plain, scaled = SparseRBFRegressor(**params), SparseRBFRegressor(**params)
    first, worst = None, 0.0
    for k, (x, y) in enumerate(stream):
        for scaler in scalers:
            scaler.learn_one(x)
        xa, xb = scalers[0].transform_one(x), scalers[1].transform_one(x)
        expected = factor * plain.predict_one(xa)
        difference = abs(scaled.predict_one(xb) - expected) / max(abs(expected), 1e-300)
        if difference > TOLERANCE and first is None:
            first = k
        worst = max(worst, difference)
        plain.learn_one(xa, y)
        scaled.learn_one(xb, factor * y)
    return first, worst


def main() -> None:
    print(f"{'stream':52s} {'factor':>7s} {'first > 1e-6':>13s} {'largest':>10s}")
    for name, (make, params) in STREAMS.items():
        for factor in FACTORS:
            first, worst = agreement(make(), factor, params)
            print(f"{name:52s} {factor:7g} {'none' if first is None else first:>13} "
                  f"{worst:10.2e}", flush=True)


if __name__ == "__main__":
    main()
