"""``onlinesparse demo``: simulate a motor-cortex session, replay it, compare the models.

The recording is :func:`onlinesparse.datasets.make_motor_cortex_session` (deterministic for a
seed). Each model replays every muscle's EMG from all neurons (one model per muscle, in
parallel), with the same warm-up; the comparison gives accuracy, latency and how well each
model's input relevance singles out the neurons that truly drive each muscle.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import sys
import time
from pathlib import Path
from typing import TextIO

import numpy as np

from onlinesparse.replay import models as registry
from onlinesparse.replay.errors import UsageError

__all__ = ["run_demo", "choose_models"]

FALLBACK_ORDER = ("vbls", "rbf", "vbls-kernel", "lin1", "linear")
WARMUP = 200
# Budgets that keep the whole demo under a minute on two cores: the RBF network with its
# default budget (100 functions over a 1000-sample window) took about 9 ms a sample here and
# the demo 150 s; with these about 1.2 ms, at the same accuracy on this recording.
DEMO_PARAMS: dict[str, dict[str, object]] = {
    "rbf": {"max_basis": 20, "window": 500, "evaluations_per_sample": 2},
    "vbls-kernel": {"max_basis": 20},
}


def demo_params(name: str) -> dict[str, object]:
    """The demo's settings for model ``name``, keeping only keywords its constructor takes."""
    wanted = DEMO_PARAMS.get(name, {})
    try:
        parameters = inspect.signature(registry.resolve(name)).parameters
    except (TypeError, ValueError):
        return dict(wanted)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return dict(wanted)
    return {k: v for k, v in wanted.items() if k in parameters}


def choose_models(wanted: list[str], stream: TextIO | None = None) -> list[str]:
    """The wanted models that are installed; each missing one is replaced by the next
    available model of :data:`FALLBACK_ORDER` not already chosen (and the swap is printed)."""
    stream = stream or sys.stdout
    for name in wanted:
        registry.get_spec(name)  # unknown names are a usage error, not a fallback
    available = set(registry.available_models())
    chosen: list[str] = []
    for name in wanted:
        if name in available and name not in chosen:
            chosen.append(name)
            continue
        spare = next((m for m in FALLBACK_ORDER if m in available and m not in chosen
                      and m not in wanted), None)
        if spare is None:
            print(f"model {name!r} is not available in this installation; no other model is "
                  "left to stand in for it", file=stream)
            continue
        print(f"model {name!r} is not available in this installation; using {spare!r} "
              "instead", file=stream)
        chosen.append(spare)
    if not chosen:
        raise UsageError("none of the demo's models is available in this installation")
    return chosen


def _mean(values: list[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _f(value: float | None, spec: str) -> str:
    return "—" if value is None or not math.isfinite(value) else format(value, spec)


def run_demo(
    out: str | Path = "onlinesparse-demo",
    seed: int = 0,
    fmt: str = "parquet",
    trials: int | None = None,
    models: list[str] | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    stream: TextIO | None = None,
) -> int:
    """Run the demonstration and return the exit code (0 when every replay completed).

    Parameters
    ----------
    out
        Output directory: the recording, its ground truth, one folder per model and the
        comparison page ``report.html``.
    seed
        Seed of the simulation.
    fmt
        ``"parquet"``, ``"csv"`` or ``"npz"``.
    trials
        Number of reaches (default 16: two blocks of the eight directions, 27 s of 10 ms bins).
    models
        Models to compare (default ``["vbls", "rbf"]``).
    workers
        Worker processes per replay.
    progress
        Progress bars; ``None`` when standard error is a terminal.
    stream
        Where to print (default standard output).

    """
    from onlinesparse.datasets import make_motor_cortex_session
    from onlinesparse.replay.runner import (
        EXIT_INTERRUPTED,
        ReplayConfig,
        WorkerPool,
        run_replay,
    )
    from onlinesparse.report import (
        plot_model_comparison,
        relevance_recovery,
        write_comparison_report,
    )

    stream = stream or sys.stdout
    started = time.perf_counter()
    out = Path(out)
    chosen = choose_models(models or ["vbls", "rbf"], stream)
    session = make_motor_cortex_session(n_trials=trials or 16, seed=seed)
    n_rows = len(session.frame)
    recording = session.write(out / f"recording.{fmt}")
    print(
        f"Simulated motor-cortex session (seed {seed}): {len(session.neurons)} neurons, "
        f"{len(session.muscles)} muscles, {n_rows} bins of {session.bin_ms:g} ms "
        f"({n_rows * session.bin_ms / 1000:.0f} s), {trials or 16} centre-out reaches.\n"
        f"  recording:    {recording}\n"
        f"  ground truth: {recording.with_name(recording.stem + '.truth.json')} "
        f"(relevant neurons per muscle; "
        f"{sum(session.nonlinear.values())} muscles mildly nonlinear)",
        file=stream,
    )

    outcomes = {}
    exit_code = 0
    n_workers = min(workers or os.cpu_count() or 1, len(session.muscles))
    # One pool for every model: its workers import numpy, pandas, river and the models once.
    # (They start at run_replay's first task, so with its single-threaded BLAS settings.)
    with WorkerPool(n_workers) if n_workers > 1 else contextlib.nullcontext() as pool:
        for name in chosen:
            params = demo_params(name)
            settings = f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else ""
            print(f"Replaying every muscle through {name!r}{settings} …", file=stream, flush=True)
            cfg = ReplayConfig(
                recording=recording,
                targets=list(session.muscles),
                features=list(session.neurons),
                time="time",
                model=name,
                model_params=params,
                warmup=WARMUP,
                out=out / name,
                workers=n_workers,
                progress=progress,
                relevant=session.relevant,
                title=f"onlinesparse demo: simulated M1 → EMG through {name}",
            )
            outcome = run_replay(cfg, pool=pool)
            outcomes[name] = outcome
            exit_code = max(exit_code, outcome.exit_code)
            if outcome.exit_code == EXIT_INTERRUPTED:
                print("Interrupted: the demo stops here; rerun it to start again.", file=stream)
                return EXIT_INTERRUPTED

    header = ["model", "nMSE", "R²", "coverage 95%", "µs median", "µs p99", "rows/s",
              "relevant neurons in top k", "AUC"]
    table = [header]
    per_muscle: dict[str, dict[str, list[float]]] = {}
    for name, outcome in outcomes.items():
        metrics = [r.metrics for r in outcome.results]
        hits = ks = 0
        aucs: list[float] = []
        nmse, auc_m = [], []
        for r in outcome.results:
            nmse.append(r.metrics["nmse"])
            if r.relevance:
                rec = relevance_recovery(r.relevance, session.relevant[r.target])
                hits, ks = hits + rec["hits"], ks + rec["k"]
                aucs.append(rec["auc"])
                auc_m.append(rec["auc"])
            else:
                auc_m.append(math.nan)
        per_muscle[name] = {"nmse": nmse, "auc": auc_m}
        coverage = [m["coverage"] for m in metrics if m["coverage"] is not None]
        table.append([
            name,
            _f(_mean([m["nmse"] for m in metrics]), ".3f"),
            _f(_mean([m["r2"] for m in metrics]), ".3f"),
            _f(_mean(coverage), ".3f") if coverage else "n/a",
            _f(float(np.median([m["latency_us"]["median"] for m in metrics])), ".1f"),
            _f(max(m["latency_us"]["p99"] for m in metrics), ".1f"),
            _f(_mean([m["rows_per_second"] or math.nan for m in metrics]), ",.0f"),
            f"{hits}/{ks} ({hits / ks:.0%})" if ks else "n/a (no relevance)",
            _f(_mean(aucs), ".2f") if aucs else "n/a",
        ])

    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    print("\nComparison (averaged over muscles; latency = predict_one + learn_one):",
          file=stream)
    for i, row in enumerate(table):
        cells = [c.ljust(w) if j == 0 else c.rjust(w)
                 for j, (c, w) in enumerate(zip(row, widths, strict=True))]
        print("  " + "  ".join(cells), file=stream)
        if i == 0:
            print("  " + "  ".join("-" * w for w in widths), file=stream)

    figure = out / "comparison.png"
    plot_model_comparison(figure, session.muscles, per_muscle, session.nonlinear)
    page = write_comparison_report(
        out,
        title="onlinesparse demo: simulated motor cortex → EMG",
        intro=(
            f"{len(session.neurons)} simulated M1 neurons, direction-tuned over "
            f"{trials or 16} centre-out reaches, binned at {session.bin_ms:g} ms; the EMG of "
            f"{len(session.muscles)} muscles is a sparse function of a known subset of them "
            "plus noise (linear for most muscles, softly rectified for "
            + ", ".join(m for m, v in session.nonlinear.items() if v)
            + f"). Each model replays every muscle with progressive validation (predict, "
            f"score, learn); the first {WARMUP} samples are not scored. 'Relevant neurons in "
            "top k' counts the truly relevant neurons among each model's k most relevant "
            "inputs, k being the number of truly relevant ones; AUC is the chance that a "
            "relevant neuron outranks an irrelevant one."
        ),
        table=table,
        links={f"{name}: full report": f"{name}/report.html" for name in outcomes},
        figures=[(figure.name, "nMSE and relevance AUC per muscle; * marks the nonlinear "
                               "muscles")],
    )
    elapsed = time.perf_counter() - started
    print(f"\nReport: {page.resolve()}\n(per-model reports: "
          + ", ".join(str(out / n / 'report.html') for n in outcomes)
          + f"; demo took {elapsed:.1f} s)", file=stream)
    return exit_code
