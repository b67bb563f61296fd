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
from typing import Any, TextIO

import numpy as np

from onlinesparse.replay import models as registry
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.extra import require_replay_extra
from onlinesparse.replay.plots import plot_model_comparison, relevance_recovery

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
    command: str | None = None,
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
    command
        The command line, recorded on the pages.

    """
    from onlinesparse.datasets import make_motor_cortex_session
    from onlinesparse.replay.runner import EXIT_INTERRUPTED

    require_replay_extra("onlinesparse demo")
    stream = stream or sys.stdout
    started = time.perf_counter()
    out = Path(out)
    chosen = choose_models(models or ["vbls", "rbf"], stream)
    session = make_motor_cortex_session(n_trials=trials or 16, seed=seed)
    recording = session.write(out / f"recording.{fmt}")
    _announce(session, recording, seed, trials or 16, stream)
    outcomes = _replay_models(session, recording, chosen, out, workers, progress, stream,
                              command)
    if outcomes is None:
        print("Interrupted: the demo stops here; rerun it to start again.", file=stream)
        return EXIT_INTERRUPTED
    table, per_muscle = _comparison(session, outcomes)
    _print_table(table, stream)
    page = _write_page(out, session, trials or 16, table, per_muscle, outcomes,
                       {"command": command or "onlinesparse demo",
                        "elapsed_s": time.perf_counter() - started})
    print(f"\nReport (every model's results on one page): {page.resolve()}\n(each model also "
          "has a page of its own: "
          + ", ".join(str(out / n / "report.html") for n in outcomes)
          + f"; demo took {time.perf_counter() - started:.1f} s)", file=stream)
    return max((o.exit_code for o in outcomes.values()), default=0)


def _announce(session: Any, recording: Path, seed: int, trials: int, stream: TextIO) -> None:
    n_rows = len(session.frame)
    print(
        f"Simulated motor-cortex session (seed {seed}): {len(session.neurons)} neurons, "
        f"{len(session.muscles)} muscles, {n_rows} bins of {session.bin_ms:g} ms "
        f"({n_rows * session.bin_ms / 1000:.0f} s), {trials} centre-out reaches.\n"
        f"  recording:    {recording}\n"
        f"  ground truth: {recording.with_name(recording.stem + '.truth.json')} "
        f"(relevant neurons per muscle; "
        f"{sum(session.nonlinear.values())} muscles mildly nonlinear)",
        file=stream,
    )


def _replay_models(session: Any, recording: Path, chosen: list[str], out: Path,
                   workers: int | None, progress: bool | None, stream: TextIO,
                   command: str | None) -> dict[str, Any] | None:
    """Replay every muscle through each model; ``None`` when interrupted."""
    from onlinesparse.replay.runner import EXIT_INTERRUPTED, ReplayConfig, WorkerPool, run_replay

    outcomes = {}
    n_workers = min(workers or os.cpu_count() or 1, len(session.muscles))
    # One pool for every model: its workers import numpy, pandas, river and the models once.
    # (They start at run_replay's first task, so with its single-threaded BLAS settings.)
    with WorkerPool(n_workers) if n_workers > 1 else contextlib.nullcontext() as pool:
        for name in chosen:
            params = demo_params(name)
            settings = f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else ""
            print(f"Replaying every muscle through {name!r}{settings} …", file=stream, flush=True)
            cfg = ReplayConfig(
                recording=recording, targets=list(session.muscles),
                features=list(session.neurons), time="time", model=name, model_params=params,
                warmup=WARMUP, out=out / name, workers=n_workers, progress=progress,
                relevant=session.relevant,
                title=f"onlinesparse demo: simulated M1 → EMG through {name}",
                # One model per muscle, for every model alike: the demo compares the
                # models' recovery of each muscle's own relevant neurons.
                separate=True,
            )
            if command is not None and hasattr(cfg, "command"):
                cfg.command = f"{command}  (replay of {name})"
            outcomes[name] = run_replay(cfg, pool=pool)
            if outcomes[name].exit_code == EXIT_INTERRUPTED:
                return None
    return outcomes


def _comparison(session: Any, outcomes: dict[str, Any]
                ) -> tuple[list[list[str]], dict[str, dict[str, list[float]]]]:
    """The comparison table (header first) and the per-muscle nMSE and AUC of each model."""
    header = ["model", "nMSE", "R²", "coverage 95%", "µs median", "µs p99 wall / CPU",
              "µs max wall / CPU",
              "rows/s", "relevant neurons in top k", "AUC", "marked relevant (true / false)"]
    table = [header]
    per_muscle: dict[str, dict[str, list[float]]] = {}
    for name, outcome in outcomes.items():
        metrics = [r.metrics for r in outcome.results]
        recs = [relevance_recovery(r.relevance, session.relevant[r.target])
                if r.relevance else None for r in outcome.results]
        found = [rec for rec in recs if rec is not None]
        hits, ks = sum(r["hits"] for r in found), sum(r["k"] for r in found)
        per_muscle[name] = {
            "nmse": [m["nmse"] for m in metrics],
            "auc": [r["auc"] if r else math.nan for r in recs],
            "false": [math.nan if r.metrics.get("relevant_inputs") is None else
                      len(set(r.metrics["relevant_inputs"]) - set(session.relevant[r.target]))
                      for r in outcome.results],
        }
        coverage = [m["coverage"] for m in metrics if m["coverage"] is not None]
        table.append([
            name,
            _f(_mean([m["nmse"] for m in metrics]), ".3f"),
            _f(_mean([m["r2"] for m in metrics]), ".3f"),
            _f(_mean(coverage), ".3f") if coverage else "n/a",
            _f(float(np.median([m["latency_us"]["median"] for m in metrics])), ".1f"),
            *(f"{_f(max(m['latency_us'][k] for m in metrics), '.0f')} / "
              f"{_f(max(m['cpu_us'][k] for m in metrics), '.0f')}" for k in ("p99", "max")),
            _f(_mean([m["rows_per_second"] or math.nan for m in metrics]), ",.0f"),
            f"{hits}/{ks} ({hits / ks:.0%})" if ks else "n/a (no relevance)",
            _f(_mean([r["auc"] for r in found]), ".2f") if found else "n/a",
            _decisions(session, outcome.results),
        ])
    return table, per_muscle


def _decisions(session: Any, results: list[Any]) -> str:
    """Inputs the models marked relevant, over all muscles: truly relevant / not."""
    marked = [(r.target, r.metrics.get("relevant_inputs")) for r in results]
    if any(m is None for _, m in marked):
        return "n/a (no decision)"
    true = sum(len(set(m) & set(session.relevant[t])) for t, m in marked)
    false = sum(len(set(m) - set(session.relevant[t])) for t, m in marked)
    total = sum(len(session.relevant[t]) for t, _ in marked)
    return f"{true} of {total} / {false}"


def _print_table(table: list[list[str]], stream: TextIO) -> None:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    print("\nComparison (averaged over muscles; latency: µs of predict_one + learn_one, "
          "median over muscles, worst muscle's p99 and max, wall-clock and the thread's CPU "
          "time):", file=stream)
    for i, row in enumerate(table):
        cells = [c.ljust(w) if j == 0 else c.rjust(w)
                 for j, (c, w) in enumerate(zip(row, widths, strict=True))]
        print("  " + "  ".join(cells), file=stream)
        if i == 0:
            print("  " + "  ".join("-" * w for w in widths), file=stream)


def _write_page(out: Path, session: Any, trials: int, table: list[list[str]],
                per_muscle: dict[str, dict[str, list[float]]], outcomes: dict[str, Any],
                summary: dict[str, Any]) -> Path:
    from onlinesparse.replay.report import write_comparison_report

    figure = plot_model_comparison(session.muscles, per_muscle, session.nonlinear)
    intro = (
        f"{len(session.neurons)} simulated M1 neurons, direction-tuned over {trials} "
        f"centre-out reaches, binned at {session.bin_ms:g} ms; the EMG of "
        f"{len(session.muscles)} muscles is a sparse function of a known subset of them plus "
        "noise (linear for most muscles, softly rectified for "
        + ", ".join(m for m, v in session.nonlinear.items() if v)
        + f"). Each model replays every muscle with progressive validation (predict, score, "
        f"learn); the first {WARMUP} samples are not scored. 'Relevant neurons in top k' "
        "counts the truly relevant neurons among each model's k most relevant inputs, k "
        "being the number of truly relevant ones; AUC is the chance that a relevant neuron "
        "outranks an irrelevant one; 'marked relevant' counts the inputs the model itself "
        "declares relevant (its ARD decision), truly relevant ones first, then false "
        "positives."
    )
    return write_comparison_report(
        out, title="onlinesparse demo: simulated motor cortex → EMG", intro=intro,
        table=table, models={name: [r.section for r in outcomes[name].results]
                             for name in outcomes},
        figures=[(figure, "nMSE, relevance AUC and false positives of the model's own "
                          "relevance decision, per muscle; * marks the nonlinear muscles")],
        summary=summary,
    )
