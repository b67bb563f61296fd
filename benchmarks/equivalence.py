"""Did a restructuring change what SparseRBFRegressor predicts? Record once, compare after.

Runs ``StandardScaler() | SparseRBFRegressor()`` (every parameter at its default) through
five streams in progressive order — predict (mean and ``with_dist=True``), then learn — and
either writes every prediction to a ``.npz`` file (``--record``) or compares a new run with
one recorded earlier (``--compare``, the default), printing per stream the largest absolute
and relative difference of the means and deviations, the number of predictions that are not
bit-identical, and the progressive RMSE of both runs (the first prediction, made before any
target, is not scored).

Streams: Friedman #1 (seed 42, 2000 samples), FriedmanDrift ``gra`` (seed 42, changes at 1667
and 3333, 5000 samples), TrumpApproval (1001), ChickWeights (578), and joint 1 of the Franka
Panda stream of ``robot_panda.py`` (3000 samples; needs the ``bench`` extra).

Run: ``.venv/bin/python benchmarks/equivalence.py`` (compares with
``benchmarks/data/equivalence_baseline.npz``); ``--record FILE`` writes a new baseline.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np
from river import datasets, preprocessing

from onlinesparse import SparseRBFRegressor

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "data" / "equivalence_baseline.npz"


def streams() -> dict[str, list[tuple[dict, float]]]:
    out = {
        "friedman": list(datasets.synth.Friedman(seed=42).take(2000)),
        "gra": list(datasets.synth.FriedmanDrift(drift_type="gra", position=(1667, 3333),
                                                 seed=42).take(5000)),
        "trump": list(datasets.TrumpApproval()),
        "chick": list(datasets.ChickWeights()),
    }
    try:
        sys.path.insert(0, str(HERE))
        from robot_panda import feature_dicts, panda_stream

        X, tau = panda_stream(3000, 0.02)
        out["panda"] = list(zip(feature_dicts(X), tau[:, 0].tolist(), strict=True))
    except ImportError as error:  # (no pybullet: the bench extra is not installed)
        print(f"panda stream skipped: {error}")
    return out


def run(data: list[tuple[dict, float]]) -> np.ndarray:
    """Rows of (prediction, mean with_dist, sigma with_dist, target)."""
    model = preprocessing.StandardScaler() | SparseRBFRegressor()
    rows = np.empty((len(data), 4))
    for i, (x, y) in enumerate(data):
        dist = model.predict_one(x, with_dist=True)
        rows[i] = (model.predict_one(x), dist.mu, dist.sigma, y)
        model.learn_one(x, y)
    return rows


def compare(name: str, new: np.ndarray, old: np.ndarray) -> bool:
    if new.shape != old.shape:
        print(f"{name:9s} shapes differ: {new.shape} against {old.shape}")
        return False
    diff = np.abs(new[:, :3] - old[:, :3])
    scale = np.maximum(np.abs(old[:, :3]), 1e-300)
    differing = int(np.sum(np.any(new[:, :3] != old[:, :3], axis=1)))
    rmse_new = math.sqrt(np.mean((new[1:, 0] - new[1:, 3]) ** 2))
    rmse_old = math.sqrt(np.mean((old[1:, 0] - old[1:, 3]) ** 2))
    first = int(np.argmax(np.any(new[:, :3] != old[:, :3], axis=1))) if differing else -1
    print(f"{name:9s} differing {differing:5d}/{len(new)} (first at {first:5d})  "
          f"max |Δ| {diff.max():.3g}  max rel {np.max(diff / scale):.3g}  "
          f"RMSE {rmse_new:.6g} (recorded {rmse_old:.6g})")
    return differing == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", type=Path, help="write a baseline to this .npz file")
    parser.add_argument("--compare", type=Path, default=BASELINE,
                        help="compare with this baseline (default: %(default)s)")
    args = parser.parse_args()
    results = {name: run(data) for name, data in streams().items()}
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.record, **results)
        print(f"recorded {', '.join(results)} to {args.record}")
        return
    with np.load(args.compare) as recorded:
        same = [compare(name, rows, recorded[name]) for name, rows in results.items()
                if name in recorded]
    print("bit-identical on every stream" if all(same) else "predictions differ (above)")


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
