"""SparseRBFRegressor on Friedman #1 over many seeds: a default judged without one seed's luck.

Model selection on a stream follows a path that the first few hundred samples set, and
rounding alone can change it. One seed's RMSE can move by ±15 % for reasons that have
nothing to do with the change under test. This script runs ``synth.Friedman`` at each
seed (defaults: seeds 10–25, 3000 samples) and prints the mean, median and worst RMSE
over the stream and over its last 1000 samples. It runs our model with default parameters
and river's ``LinearRegression`` (its rate tuned on each stream), each behind
``preprocessing.StandardScaler()``, and the running mean of the targets and the last target,
in the same run (``benchmarks/harness.py``'s loop: the first prediction is not scored).
Compare two versions of the code by running it on each.

Run: ``.venv/bin/python benchmarks/friedman_seeds.py`` (about a minute), ``--quick`` (4
seeds, 1500 samples). Writes ``benchmarks/results/friedman_seeds.json``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402
from river.datasets import synth  # noqa: E402

import onlinesparse  # noqa: E402
from onlinesparse import SparseRBFRegressor  # noqa: E402

OURS = "SparseRBFRegressor"


def aggregate(per_seed: list[dict[str, harness.Run]], tail: int) -> list[list[str]]:
    """Per model: mean, median and worst RMSE over the seeds, overall and over the tail."""
    rows = []
    for label in per_seed[0]:
        runs = [runs[label] for runs in per_seed]
        overall = np.array([r.rmse() for r in runs])
        last = np.array([r.rmse(len(r.targets) - tail) for r in runs])
        micros = np.median([r.latency(50) for r in runs])
        rows.append([label, f"{overall.mean():.4f}", f"{np.median(overall):.4f}",
                     f"{overall.max():.4f}", f"{last.mean():.4f}", f"{last.max():.4f}",
                     f"{micros:.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=16, help="how many seeds")
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--quick", action="store_true", help="4 seeds, 1500 samples")
    harness.add_common_args(parser)
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.samples = 4, 1500
    partial = args.quick or (args.first_seed, args.seeds, args.samples) != (10, 16, 3000)
    report = harness.Report("friedman_seeds", __doc__.splitlines()[0],
                            {k: getattr(args, k) for k in ("first_seed", "seeds", "samples")},
                            quick=partial, path=args.results)
    onlinesparse.warm_up()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tail = min(1000, args.samples // 3)
    per_seed = []
    for seed in seeds:
        data = list(synth.Friedman(seed=seed).take(args.samples))
        runs = harness.progressive(data, [harness.Model(OURS, SparseRBFRegressor),
                                          harness.river_peer("linear", data)])
        # (one label for the peer across seeds: its tuned rate is in the results file)
        runs = {k.split(" (lr")[0]: r for k, r in runs.items()}
        report.add_stream(f"Friedman #1 seed {seed}", runs, ours=OURS,
                          peers=["LinearRegression"])
        per_seed.append(runs)
    report.table(f"Friedman #1, seeds {seeds.start}–{seeds.stop - 1}, {args.samples} samples "
                 f"each, progressive RMSE behind StandardScaler (last: the last {tail} "
                 "samples)", ["model", "mean", "median", "worst", "mean, last", "worst, last",
                              "median µs/sample"], aggregate(per_seed, tail))
    report.note(f"{OURS} per seed: " + ", ".join(
        f"{seed}: {runs[OURS].rmse():.3f}" for seed, runs in zip(seeds, per_seed, strict=True)),
        table=True)
    report.write()


if __name__ == "__main__":
    main()
