"""Cost per ``learn_one`` of VBLSRegressor (its online schedule) for d = 10, 100, 1000.

Each sweep reads only HᵀH, Hᵀy, yᵀy and p, so the cost per sample is O(M²), M = d + 1 (the
schedule's worst case is in onlinesparse/vbls/schedule.py), and does not grow with the
stream: the µs per sample are printed for successive blocks of the stream. river's
``linear_model.BayesianLinearRegression`` is timed beside it for d = 10 and 100.
Run: ``.venv/bin/python benchmarks/vbls_cost.py`` (about a minute).
"""

from __future__ import annotations

import time

import numpy as np
from river import linear_model

from onlinesparse.vbls import VBLSRegressor

BLOCKS = 3


def stream(d: int, n: int, rng: np.random.Generator):
    weights = np.where(np.arange(d) < 10, rng.normal(size=d), 0.0)
    names = [f"x{i}" for i in range(d)]
    for _ in range(n):
        x = rng.normal(size=d)
        yield dict(zip(names, x.tolist(), strict=True)), float(x @ weights + rng.normal())


def time_per_sample(model, data, blocks: int) -> list[float]:
    per_block = len(data) // blocks
    out = []
    for b in range(blocks):
        chunk = data[b * per_block:(b + 1) * per_block]
        start = time.perf_counter()
        for x, y in chunk:
            model.learn_one(x, y)
        out.append(1e6 * (time.perf_counter() - start) / len(chunk))
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'model':34s} {'d':>5s} " + " ".join(f"{'block ' + str(b + 1):>10s}"
                                                   for b in range(BLOCKS)) + "   (µs / learn_one)")
    for d, n in ((10, 3000), (100, 3000), (1000, 1500)):
        data = list(stream(d, n, rng))
        models = [("VBLSRegressor (defaults)", VBLSRegressor())]
        if d <= 100:
            models.append(("river BayesianLinearRegression",
                           linear_model.BayesianLinearRegression()))
        for name, model in models:
            times = time_per_sample(model, data, BLOCKS)
            print(f"{name:34s} {d:5d} " + " ".join(f"{t:10.1f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
