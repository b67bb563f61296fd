"""SparseRBFRegressor in two units of its target: how long do the two models agree?

Two models learn the same stream, each behind its own ``preprocessing.StandardScaler()``
(``benchmarks/harness.py``'s loop, which records every prediction), one on y and one on
``factor·y`` (factor 1000 and 0.001: N·m against mN·m). An equivariant
model predicts ``factor`` times as much at every sample; in floating point the two agree to
rounding until a decision whose margin is within rounding goes one way in one model and
the other way in the other (docs/numerics.md §10). Printed per stream and factor: the
first sample whose prediction differs from ``factor`` times the first model's by more
than 10⁻⁶ relative ("none" if no sample does) and the largest relative difference over
the stream.

Streams: Friedman #1 seed 7 (2000 samples, ``max_basis=30, window_size=300``: the units
test's), Friedman #1 seed 42 (2000), river's ChickWeights and TrumpApproval, defaults
otherwise.

The harness's baselines are left out: equivariant by construction, they would only show
rounding. Run: ``.venv/bin/python benchmarks/target_units.py`` (a few seconds); compare two
versions of the code by running it on each. Writes ``benchmarks/results/target_units.json``.
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


def agreement(data: list[tuple[dict, float]], factor: float, params: dict
              ) -> tuple[int | None, float]:
    """The first sample at which the two models part by more than ``TOLERANCE`` (None if
    none does) and the largest relative difference of their predictions."""
    model = harness.Model("ours", lambda: SparseRBFRegressor(**params))
    plain = harness.progressive(data, [model], baselines=False)["ours"]
    scaled = harness.progressive([(x, factor * y) for x, y in data], [model],
                                 baselines=False)["ours"]
    expected = factor * plain.predictions
    difference = np.abs(scaled.predictions - expected) / np.maximum(np.abs(expected), 1e-300)
    parted = np.flatnonzero(difference > TOLERANCE)
    return (int(parted[0]) if len(parted) else None), float(np.max(difference))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    args = parser.parse_args()
    report = harness.Report("target_units", __doc__.splitlines()[0],
                            {"factors": list(FACTORS), "tolerance": TOLERANCE},
                            path=args.results)
    rows = []
    for name, (make, params) in STREAMS.items():
        data = list(make())
        for factor in FACTORS:
            first, worst = agreement(data, factor, params)
            rows.append([name, f"{factor:g}", "none" if first is None else str(first),
                         f"{worst:.2e}"])
            print(f"  {name}, factor {factor:g} done", flush=True)
    report.table("first sample whose two predictions part by more than 1e-6, and the largest "
                 "relative difference", ["stream", "factor", "first > 1e-6", "largest"], rows)
    report.write()


if __name__ == "__main__":
    main()
