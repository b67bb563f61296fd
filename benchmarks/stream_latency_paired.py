"""Latency of SparseRBFRegressor against river's LinearRegression, measured sample by sample
in turn, so that the shared host's load falls on both alike.

``stream_friedman.py`` runs one model over the whole stream, then the next: on a host whose
other processes come and go, LinearRegression's own median moved between 11.8 and 18.7 µs
within minutes there, and with it the ratio the latency target is stated in. Here every
sample of Friedman #1 (seed 42, 5000 samples) goes through each model in turn (the
first turn rotating from sample to sample) —
``predict_one`` then ``learn_one``, each behind its own ``StandardScaler``, the scaler's
work included as in ``stream_friedman.py`` — so that a busy moment costs all of them. The
models share the caches, which makes every figure a little higher than alone.

``--before DIR`` adds an older checkout of the package (the directory that holds its
``onlinesparse/``), copied to a temporary directory under another name so that both
versions load in one process: the comparison of a change against the code before it,
in the same run and the same conditions.

Printed: median and 99th percentile µs per sample of each model, their ratios to
LinearRegression's median, and the median per block of 1000 samples.

Run: ``.venv/bin/python benchmarks/stream_latency_paired.py [--before /path/to/checkout]``
(about 10 s per model).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from river import datasets, linear_model, preprocessing  # noqa: E402

import onlinesparse  # noqa: E402

SAMPLES = 5000
BLOCK = 1000
BEFORE = "onlinesparse_before"


def load_before(checkout: Path, into: Path):
    """The package in ``checkout`` importable as ``onlinesparse_before``: copied into
    ``into`` with every reference to its own name rewritten."""
    target = into / BEFORE
    shutil.copytree(checkout / "onlinesparse", target,
                    ignore=shutil.ignore_patterns("__pycache__"))
    pattern = re.compile(r"\bonlinesparse\b")
    for path in target.rglob("*.py"):
        path.write_text(pattern.sub(BEFORE, path.read_text()))
    sys.path.insert(0, str(into))
    return importlib.import_module(BEFORE)


def measure(models: dict[str, object]) -> dict[str, np.ndarray]:
    """µs per sample of each model, the models taking each sample in turn, the first turn
    passing from one model to the next with each sample (the model that goes second
    finds the caches as the first left them: two copies of the same code measured 5–7 %
    apart with a fixed order)."""
    scalers = {name: preprocessing.StandardScaler() for name in models}
    times = {name: np.empty(SAMPLES) for name in models}
    names = list(models)
    clock = time.perf_counter
    for k, (x, y) in enumerate(datasets.synth.Friedman(seed=42).take(SAMPLES)):
        first = k % len(names)
        for name in names[first:] + names[:first]:
            model, scaler = models[name], scalers[name]
            start = clock()
            model.predict_one(scaler.transform_one(x))
            scaler.learn_one(x)
            model.learn_one(scaler.transform_one(x), y)
            times[name][k] = clock() - start
    return {name: 1e6 * t for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path,
                        help="an older checkout of the package, measured beside this one")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    models: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as scratch:
        if args.before is not None:
            before = load_before(args.before.resolve(), Path(scratch))
            before.warm_up()
            models[f"SparseRBF(max_basis=100), {args.before}"] = before.SparseRBFRegressor(
                max_basis=100)
        onlinesparse.warm_up()
        models["SparseRBF(max_basis=100), this checkout"] = onlinesparse.SparseRBFRegressor(
            max_basis=100)
        models["river LinearRegression"] = linear_model.LinearRegression()
        times = measure(models)
    linear = float(np.median(times["river LinearRegression"]))
    print(f"\nFriedman #1 (seed 42), {SAMPLES} samples, each model behind its own "
          "StandardScaler, the models taking each sample in turn")
    print(f"{'model':52s} {'median µs':>10s} {'×lin':>6s} {'p99 µs':>8s} {'×lin':>6s}   "
          f"median per {BLOCK} samples")
    for name, t in times.items():
        median, p99 = float(np.median(t)), float(np.percentile(t, 99))
        blocks = " ".join(f"{np.median(t[i:i + BLOCK]):5.1f}"
                          for i in range(0, SAMPLES, BLOCK))
        print(f"{name:52s} {median:10.1f} {median / linear:6.2f} {p99:8.1f} "
              f"{p99 / linear:6.2f}   {blocks}")
    print("\n(×lin: the ratio to river LinearRegression's median in this run; the latency "
          "targets are median ≤ 4× and p99 ≤ 10×)")


if __name__ == "__main__":
    main()
