"""One shared model for three targets against one model per target, through the replay.

The recording is ``onlinesparse.datasets.make_spike_count_session(seed=42)`` (80 channels of
spike counts in 20 ms bins, 40 NaN cells; targets ``emg_0``, ``emg_1`` and ``velocity``),
written to a Parquet file and replayed twice in one process with the same settings: the
three targets sharing one ``rbf`` model (the registry's multi-output form), then with
``--separate`` (one ``SparseRBFRegressor`` per target, one after the other, in this process,
so both runs have the same single core). Each replay warms its model up before timing.

Printed: per target nMSE and coverage of the 95 % interval for both runs; rows per second
(rows learned over the replay's time) of the shared model, and for the separate models each
target's and their combined rate (a row of all three targets: 1 / Σ 1/rateᵢ); the median and
99th percentile of the time per row (shared) or per sample (each separate model), wall-clock
and the thread's CPU time (which leaves out the machine's other work).

Run: ``.venv/bin/python benchmarks/replay_shared.py`` (``--rows N``, default 8 000;
``--max-basis M``, default 100; ``--model lin1`` replays lin-1 instead of the RBF network;
``--multi-target module:Class`` replays another multi-output form than the registry's, e.g.
a stand-in).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from onlinesparse.datasets.spike_counts import make_spike_count_session  # noqa: E402
from onlinesparse.replay import models as registry  # noqa: E402
from onlinesparse.replay.runner import ReplayConfig, run_replay  # noqa: E402

TARGETS = ["emg_0", "emg_1", "velocity"]


def replay(path: Path, separate: bool, model: str, params: dict[str, Any], out: Path) -> Any:
    """One replay of the three targets (shared model unless ``separate``)."""
    cfg = ReplayConfig(path, list(TARGETS), features=["n*"], time="time", model=model,
                       model_params=params, warmup=100, workers=1,
                       progress=False, out=out, report=False, separate=separate)
    outcome = run_replay(cfg)
    assert outcome.exit_code == 0, [r.message for r in outcome.results]
    return outcome


def _rate_row(name: str, metrics: dict[str, Any]) -> str:
    lat, cpu = metrics["latency_us"], metrics["cpu_us"]
    return (f"{name:<22} {metrics['rows_per_second']:>9,.0f} rows/s   "
            f"median {lat['median']:>7,.0f} µs   p99 {lat['p99']:>8,.0f} µs   "
            f"CPU median {cpu['median']:>7,.0f} µs   p99 {cpu['p99']:>8,.0f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--max-basis", type=int, default=100, help="rbf's budget")
    parser.add_argument("--model", default="rbf", help="rbf (default) or lin1")
    parser.add_argument("--multi-target", metavar="MODULE:CLASS",
                        help="the multi-output form to replay (default: the registry's)")
    args = parser.parse_args()
    if args.multi_target:
        registry.MODELS[args.model] = dataclasses.replace(registry.MODELS[args.model],
                                                          multi_target=args.multi_target)
    form = registry.multi_target_form(args.model)
    if form is None:
        raise SystemExit(f"{args.model} has no multi-output form in this installation")
    params = {"max_basis": args.max_basis} if args.model == "rbf" else {}
    d = Path(tempfile.mkdtemp(prefix="replay-shared-"))
    path = d / "session.parquet"
    frame = make_spike_count_session(n_rows=args.rows, seed=42)
    frame.drop(columns=["latent_vx", "latent_vy"]).to_parquet(path)
    shared = replay(path, False, args.model, params, d / "shared")
    separate = replay(path, True, args.model, params, d / "separate")
    print(f"{args.rows} rows, 80 channels, {args.model} {params}; shared model: "
          f"{form.__module__}.{form.__name__}")
    print(f"{'target':<10} {'nMSE shared':>12} {'nMSE separate':>14} {'cover shared':>13} "
          f"{'cover separate':>15}")
    for a, b in zip(shared.results, separate.results, strict=True):
        print(f"{a.target:<10} {a.metrics['nmse']:>12.4f} {b.metrics['nmse']:>14.4f} "
              f"{a.metrics['coverage']:>13.3f} {b.metrics['coverage']:>15.3f}")
    print(_rate_row("shared (3 targets)", shared.shared.metrics))
    for r in separate.results:
        print(_rate_row(f"separate: {r.target}", r.metrics))
    combined = 1.0 / sum(1.0 / r.metrics["rows_per_second"] for r in separate.results)
    print(f"{'separate, 3 targets':<22} {combined:>9,.0f} rows/s (one after the other)")
    n_basis = shared.shared.metrics["diagnostics"].get("n_basis")
    print(f"shared n_basis at the end: {n_basis}; separate: "
          + ", ".join(f"{r.metrics['diagnostics'].get('n_basis')}" for r in separate.results))


if __name__ == "__main__":
    main()
