"""The worst sample a replay reports, against the same model's worst in a plain loop.

``onlinesparse replay`` reports the latency of ``predict_one`` + ``learn_one`` per row
(median, 99th percentile, maximum: wall clock and the thread's CPU time). Its maximum
should be the model's, not the replay's: the question here is whether a replay's reported
worst case is within 2× of what the same model does in the loop a user would write.

Protocol. A recording of ``--rows`` rows (150 000), stationary and nonlinear: four inputs
uniform in [−1, 1], y = sin(π x₁ x₂) + x₃² + x₄/2 + 0.1 ε, seed 42, written to a temporary
Parquet file. Then, ``--repeats`` times, alternately:

* the replay: ``onlinesparse replay REC --target y --out DIR --no-progress`` in a fresh
  process (the default model, ``rbf``: ``SparseRBFRegressor()`` behind a running
  ``StandardScaler``, ``with_dist=True``; the first 100 rows not timed), its
  ``metrics.json`` read for ``latency_us`` and ``cpu_us``;
* the plain loop, in a fresh process: the same model built by the replay's own
  ``models.build_model("rbf")``, ``models.warm_up_model`` on the first 200 rows (what the
  replay does: ``onlinesparse.warm_up()`` and a throwaway clone), then ``gc.collect()``,
  ``gc.freeze()`` and ``gc.disable()`` as a control loop would, then every row:
  ``predict_one(x, with_dist=True)`` and ``learn_one(x, y)`` timed together
  (``perf_counter``, ``thread_time_ns``), the first 100 rows left out as the replay does.

Printed per run and as the median over the runs: the maximum and 99th percentile, wall
clock and CPU, of each, and the replay's maximum over the loop's. The host is shared:
a wall-clock maximum is one sample among 150 000 and is often another process's doing;
the CPU maximum is the model's own.

Run: ``.venv/bin/python benchmarks/replay_latency.py`` (3 repeats, about 10 minutes on two
loaded cores), ``--quick`` (20 000 rows, 1 repeat), ``--rows N``, ``--repeats R``. Writes
``benchmarks/results/replay_latency.json`` (``benchmarks/results/quick/`` for a quick run).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402

MODEL = "rbf"
WARMUP = 100  # rows learned but not timed (the replay's default --warmup)
WARM_ROWS = 200  # rows the replay drives its throwaway clone through


def write_recording(path: Path, rows: int, seed: int = harness.SEED) -> Path:
    """The module docstring's recording, as Parquet."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, (rows, 4))
    y = (np.sin(np.pi * x[:, 0] * x[:, 1]) + x[:, 2] ** 2 + 0.5 * x[:, 3]
         + 0.1 * rng.standard_normal(rows))
    frame = pd.DataFrame(x, columns=["x1", "x2", "x3", "x4"])
    frame["y"] = y
    frame.to_parquet(path, index=False)
    return path


def replay(recording: Path, out: Path) -> dict[str, Any]:
    """One ``onlinesparse replay`` in a fresh process; its latency figures (µs)."""
    command = [sys.executable, "-m", "onlinesparse.replay.cli", "replay", str(recording),
               "--target", "y", "--model", MODEL, "--out", str(out), "--no-progress"]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    metrics = json.loads((out / "metrics.json").read_text())["targets"]["y"]
    return {"wall": metrics["latency_us"], "cpu": metrics["cpu_us"],
            "seconds": time.perf_counter() - started}


def plain_loop(recording: Path) -> dict[str, Any]:
    """The plain loop (module docstring), in this process; its latency figures (µs)."""
    import pandas as pd

    from onlinesparse.replay import models

    frame = pd.read_parquet(recording)
    names = [c for c in frame.columns if c != "y"]
    rows = [dict(zip(names, r, strict=True)) for r in frame[names].to_numpy().tolist()]
    ys = frame["y"].tolist()
    model = models.build_model(MODEL)
    models.warm_up_model(model, rows[:WARM_ROWS], ys[:WARM_ROWS])
    n = len(rows)
    wall, cpu = np.zeros(n), np.zeros(n)
    perf, cpu_ns = time.perf_counter, time.thread_time_ns
    gc.collect()
    gc.freeze()
    gc.disable()
    for i in range(n):
        x, y = rows[i], ys[i]
        c0, t0 = cpu_ns(), perf()
        model.predict_one(x, with_dist=True)
        model.learn_one(x, y)
        wall[i], cpu[i] = (perf() - t0) * 1e6, (cpu_ns() - c0) * 1e-3
    gc.enable()
    wall, cpu = wall[WARMUP:], cpu[WARMUP:]
    slowest = np.argsort(wall)[-5:][::-1] + WARMUP
    return {"wall": _figures(wall), "cpu": _figures(cpu),
            "slowest_rows": slowest.tolist()}


def _figures(values: np.ndarray) -> dict[str, float]:
    return {"median": float(np.median(values)), "p99": float(np.percentile(values, 99)),
            "max": float(values.max()), "n": int(len(values))}


def spawn_loop(recording: Path) -> dict[str, Any]:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--loop", str(recording)], check=True,
                         capture_output=True, text=True)
    result = json.loads(out.stdout.splitlines()[-1])
    result["seconds"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    harness.add_common_args(parser)
    args = parser.parse_args()
    if args.loop:
        print(json.dumps(plain_loop(args.loop)))
        return
    if args.quick:
        args.rows, args.repeats = 20_000, 1
    report = harness.Report("replay_latency", __doc__.splitlines()[0],
                            {"rows": args.rows, "repeats": args.repeats, "model": MODEL,
                             "warmup": WARMUP}, quick=args.quick, path=args.results)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        recording = write_recording(Path(tmp) / "recording.parquet", args.rows)
        for r in range(args.repeats):
            runs.append({"replay": replay(recording, Path(tmp) / f"out-{r}"),
                         "loop": spawn_loop(recording)})
            print(f"  run {r + 1}: replay max {runs[-1]['replay']['wall']['max']:.0f} µs, "
                  f"loop max {runs[-1]['loop']['wall']['max']:.0f} µs", flush=True)
    write(report, runs, args.rows)


def write(report: harness.Report, runs: list[dict[str, Any]], rows: int) -> None:
    table = []
    for k, run in enumerate([*runs, None]):
        label = "median" if run is None else f"run {k + 1}"
        cell = (lambda side, clock, key: float(np.median(
            [r[side][clock][key] for r in runs]))) if run is None else (
            lambda side, clock, key, run=run: float(run[side][clock][key]))
        table.append([label, *(f"{cell(side, clock, key):.0f}"
                               for side in ("replay", "loop") for clock in ("wall", "cpu")
                               for key in ("p99", "max")),
                      f"{cell('replay', 'wall', 'max') / cell('loop', 'wall', 'max'):.2f}",
                      f"{cell('replay', 'cpu', 'max') / cell('loop', 'cpu', 'max'):.2f}"])
    report.table(f"{MODEL} on {rows} rows: µs per sample (predict_one + learn_one), after "
                 f"{WARMUP} untimed rows",
                 ["", "replay p99", "replay max", "replay CPU p99", "replay CPU max",
                  "loop p99", "loop max", "loop CPU p99", "loop CPU max",
                  "max: replay / loop", "CPU max: replay / loop"], table)
    report.data["streams"]["replay against a plain loop"] = {"runs": runs}
    report.write()


if __name__ == "__main__":
    main()
