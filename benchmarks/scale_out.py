"""Speed-up of many replays on a Dask cluster: 16 replays of the demo recording, 1 vs 2 workers.

The recording is the demo's simulated motor-cortex session
(:func:`onlinesparse.datasets.make_motor_cortex_session`, seed 0, 16 reaches: 2720 rows of 48
neurons and 6 muscles' EMG), written once to a temporary Parquet file that every worker
reads itself. The 16 jobs replay the muscles in turn (job i: muscle i mod 6) from the 48
neurons through one model (default ``vbls``, about 2 s a replay here) with the demo's
200-sample warm-up, as :func:`onlinesparse.replay.parallel.replay_many` tasks on a ``LocalCluster``
of worker processes (one thread each, 127.0.0.1 only).

Both clusters are started, and their workers have imported the models, before any clock
starts, so the times are those of the replays and of Dask's dispatch, not of starting Python.
The two clusters then take turns (1, 2, 1, 2, ...) for ``--repeat`` rounds and the best time
of each is kept, since other work on a shared machine only ever adds time. The metrics of
every job are compared across all runs (they must be identical).

Run: ``.venv/bin/python benchmarks/scale_out.py`` (about 1.5 minutes on two cores); needs
``pip install -e '.[dask]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from onlinesparse.datasets import make_motor_cortex_session
from onlinesparse.replay.cluster import import_distributed
from onlinesparse.replay.jobs import ReplayJob
from onlinesparse.replay.parallel import replay_many

TARGET_SPEEDUP = 1.6
TIMING_KEYS = ("latency_us", "rows_per_second")


def _warm(model: str) -> int:
    """Import what a replay needs (numpy, pandas, pyarrow, river, the model) on a worker."""
    import pyarrow.parquet  # noqa: F401

    from onlinesparse.replay import (
        models,
        parallel,  # noqa: F401
    )

    models.build_model(model)
    return os.getpid()


@contextlib.contextmanager
def cluster(n_workers: int, model: str) -> Iterator[Any]:
    """A client of a fresh ``LocalCluster`` of ``n_workers`` warmed-up worker processes."""
    distributed = import_distributed()
    with distributed.LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        # Closing a cluster can log a worker's failed last heartbeat; job failures are
        # checked here, in the results.
        silence_logs=logging.CRITICAL,
    ) as local, distributed.Client(local) as client:
        client.wait_for_workers(n_workers)
        client.run(_warm, model)
        yield client


def timed(jobs: list[ReplayJob], client: Any) -> tuple[float, list]:
    """Wall-clock seconds of ``replay_many(jobs, client)``, and the results."""
    started = time.perf_counter()
    results = replay_many(jobs, client, progress=False)
    elapsed = time.perf_counter() - started
    failed = [r.describe() for r in results if not r.ok]
    if failed:
        raise SystemExit("\n".join(failed))
    return elapsed, results


def _deterministic(results: list) -> list[dict]:
    return [{k: v for k, v in r.metrics.items() if k not in TIMING_KEYS} for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vbls", help="model of every job (default vbls)")
    parser.add_argument("--jobs", type=int, default=16, help="number of replays (default 16)")
    parser.add_argument("--trials", type=int, default=16,
                        help="reaches in the simulated session (default 16, as the demo)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of 1 then 2 workers; the best time counts (default 3)")
    args = parser.parse_args()
    if args.repeat < 1 or args.jobs < 1:
        parser.error("--repeat and --jobs must be at least 1")

    session = make_motor_cortex_session(n_trials=args.trials, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        recording = session.write(Path(tmp) / "recording.parquet")
        jobs = [
            ReplayJob(recording, session.muscles[i % len(session.muscles)], args.model,
                      options={"features": list(session.neurons), "time": "time",
                               "warmup": 200})
            for i in range(args.jobs)
        ]
        print(f"{args.jobs} replays of the demo recording ({len(session.frame)} rows, "
              f"{len(session.neurons)} neurons; muscle i mod {len(session.muscles)}) through "
              f"{args.model!r}, on a Dask LocalCluster (processes, 1 thread each); "
              f"{os.cpu_count()} CPUs")
        timings: dict[int, list[float]] = {1: [], 2: []}
        metrics = []
        per_job: list[float] = []
        with cluster(1, args.model) as one, cluster(2, args.model) as two:
            for _ in range(args.repeat):
                for n, client in ((1, one), (2, two)):
                    elapsed, results = timed(jobs, client)
                    timings[n].append(elapsed)
                    metrics.append(_deterministic(results))
                    if n == 1:
                        per_job += [r.elapsed for r in results]

    same = all(m == metrics[0] for m in metrics)
    best = {n: min(t) for n, t in timings.items()}
    print(f"\n{'workers':>7}  {'best s':>7}  {'all runs, s':<22}  {'replays/s':>9}  "
          f"{'speed-up':>8}")
    for n in (1, 2):
        runs = " ".join(f"{t:.2f}" for t in timings[n])
        print(f"{n:>7}  {best[n]:>7.2f}  {runs:<22}  {len(jobs) / best[n]:>9.2f}  "
              f"{best[1] / best[n]:>7.2f}×")
    speedup = best[1] / best[2]
    print(f"\nmean replay {sum(per_job) / len(per_job):.2f} s on one worker; metrics of every "
          f"job identical in all {len(metrics)} runs: {'yes' if same else 'NO'}")
    print(f"speed-up with 2 workers: {speedup:.2f}× (target ≥ {TARGET_SPEEDUP}×: "
          f"{'met' if speedup >= TARGET_SPEEDUP else 'NOT met'})")


if __name__ == "__main__":
    main()
