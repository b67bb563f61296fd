"""Decoding two EMG envelopes and a hand velocity from simulated motor-cortex spike counts.

Ours with defaults against river's linear models with tuned rates, lin-1 and baselines.

The recording is ``onlinesparse.datasets.make_spike_count_session(seed=42)`` (its docstring
has the generative model): 80 Poisson channels of raw spike counts in 20 ms bins, 60 000
rows by default (20 minutes), three targets: two EMG envelopes (softplus of the latent
velocity 60 and 80 ms earlier, with 20 % multiplicative noise) and the hand velocity along x
(the latent velocity 100 ms earlier). The channels see the latent velocity between 0 and
100 ms before the row, through a saturating log-linear tuning; one strongly tuned channel
falls silent (0 spikes) from row 0.6·n on; 40 cells of the channel columns are NaN.

Protocol: ``benchmarks/harness.py``'s progressive validation, one target at a time (predict,
then learn; the first prediction, made before any target, is not scored for any model; a
``None`` prediction is missing, not 0). Each row's inputs are the 80 counts of that bin only
(no history of earlier bins, for every model). Every model but the two baselines sits behind
its own ``river.preprocessing.StandardScaler()``. **NaN cells**: a NaN count is left out of
that row's dict (the key is missing), the same for every model; river's models accept
missing keys: the scaler transforms (and learns) only the keys present, and
``LinearRegression`` then adds nothing for the missing input, which is its running mean (0
after the scaler); ours and lin-1 fill a missing input with its running mean over the
samples learned (``onlinesparse.features``: 0 after the scaler). The recording puts no NaN in
its first 1 % of rows, so every model learns every input from its first sample on.

Models:

* ours with defaults: ``SparseRBFRegressor()`` and ``VBLSRegressor()`` (both with the
  adaptive memory and the stream layer), and ``VBLSRegressor(memory="forgetting")`` (the
  Bayesian family's former default, without the layer);
* river ``linear_model.LinearRegression`` with ``optim.SGD(lr)`` and with
  ``optim.AdaGrad(lr)``, ``intercept_lr=lr``, the rate of each chosen per target among
  1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1 by the lowest progressive nMSE on a *different
  recording*: the same simulator with seed 43 (another latent movement, other tunings,
  another dropped channel), its first ``--tune-rows`` rows (default 20 000). The evaluated
  stream is never used for tuning. A diverged rate (non-finite nMSE) is never chosen;
* river ``LinearRegression()`` at its defaults (SGD 0.01), reported even when it diverges;
* ``Lin1Regressor()``: the DELVE least-squares baseline on everything seen (not a river
  model, so not a candidate for "best river linear");
* the running mean of the targets and the last target (persistence).

Printed per target (in the results file; docs/performance.md shows only a one-line
summary, to keep that page short): nMSE (progressive MSE over the variance of the scored
targets), the ratio of the nMSE of each of our models (and of lin-1, for reference) to the
best river linear model's on that target (the issue's target for ours: ≤ 0.95), the
coverage of the 95 % interval (mean ± 1.96σ, after 100 samples) for the models with a
distribution (ours, lin-1), the µs of predict + learn per sample (median and 99th
percentile, wall clock, scaler included; the extra ``with_dist=True`` call is not timed),
and for our models ``n_memory_cuts`` at the end. Then the nMSE per fifth of the stream
(MSE of the fifth over the variance of the whole scored stream; the channel drops out at
the start of the 4th fifth), the rates chosen with the tuning scores, and a summary
against the target.

``--multi`` (issue 32): the three targets decoded together, as a motor-decoding experiment
reads the muscles' activity and the hand's movement off the same population at once: ONE
``SparseRBFMultiTargetRegressor()`` (one basis, window and variance matrix for the three)
against one ``SparseRBFRegressor()`` per target, both with defaults, and the river linear
models above (rates tuned per target on seed 43 as above) for the ratio to the best one; the
models run interleaved sample by sample (``harness.interleaved``), so that their times are
comparable within the run on a loaded machine; lin-1 and VBLS are left out. Printed per
target: nMSE, the ratio to the best river linear model, coverage, µs per sample (the
multi-output model's time is that of all three targets) and rows/s; then the multi model's
rows/s against the three single-output models' together and one's alone. Writes
``benchmarks/results/neural_decoding_multi.json``. ``--multi --no-last-target``: both of ours
with ``last_target=False`` (the spikes alone: the last-target expert predicts from the
target's previous value, which a decoder driving a prosthesis does not observe);
``--memory window``: both of ours with the plain sliding window instead of the adaptive
memory (the multi-output model cuts its shared memory on any target's alarm). Either is a
partial run, written to ``benchmarks/results/quick/``.

Run: ``.venv/bin/python benchmarks/neural_decoding.py`` (15 minutes on a loaded 2-core
machine: lin-1's SVD per sample and VBLS take most of it), ``--quick`` (8 000 rows, tuned
on 4 000), ``--rows N``, ``--tune-rows N``, ``--targets velocity,emg_0``, ``--multi``
(about 8 minutes). Writes ``benchmarks/results/neural_decoding.json``
(``benchmarks/results/quick/`` for a quick or partial run).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import math  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from onlinesparse import (  # noqa: E402
    Lin1Regressor,
    SparseRBFMultiTargetRegressor,
    SparseRBFRegressor,
    VBLSRegressor,
    warm_up,
)
from onlinesparse.datasets import make_spike_count_session  # noqa: E402

SEED = harness.SEED  # the evaluated recording
TUNE_SEED = SEED + 1  # the recording the river rates are tuned on
TARGETS = ("emg_0", "emg_1", "velocity")
RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)
OPTIMIZERS = ("SGD", "AdaGrad")
ROWS, TUNE_ROWS = 60_000, 20_000
QUICK_ROWS, QUICK_TUNE_ROWS = 8_000, 4_000
GOAL = 0.95  # ours ≤ 0.95 × the best river linear model's nMSE, on every target

RBF = "ours SparseRBF()"
VBLS = "ours VBLS()"
VBLS_FORGETTING = "ours VBLS(memory='forgetting')"
OURS = (RBF, VBLS, VBLS_FORGETTING)
LIN1 = "lin-1"
MULTI = "ours multi-output SparseRBF()"
RIVER_DEFAULT = "LinearRegression() (SGD 0.01)"


# -- data --------------------------------------------------------------------------------
def inputs(frame: pd.DataFrame) -> list[dict[str, float]]:
    """One dict of counts per row, a NaN count left out (its key missing). Equal counts
    share one float object: the dicts of 60 000 rows stay small."""
    channels = frame.attrs["truth"]["channels"]
    values = frame[channels].to_numpy()
    shared: dict[float, float] = {}
    return [{name: shared.setdefault(v, v) for name, v in zip(channels, row.tolist(),
                                                               strict=True)
             if not math.isnan(v)} for row in values]


def stream(xs: list[dict[str, float]], frame: pd.DataFrame, target: str
           ) -> list[tuple[dict, float]]:
    return list(zip(xs, frame[target].astype(float).tolist(), strict=True))


# -- models ------------------------------------------------------------------------------
def river_linear(optimizer: str, rate: float) -> Callable[[], Any]:
    """A factory of river's LinearRegression with ``optimizer`` at ``rate`` (the intercept
    at the same rate)."""
    from river import linear_model, optim

    make = {"SGD": optim.SGD, "AdaGrad": optim.AdaGrad}[optimizer]
    return lambda: linear_model.LinearRegression(optimizer=make(rate), intercept_lr=rate)


def nmse(run: harness.Run) -> float:
    value = run.nmse()
    return value if math.isfinite(value) else math.inf


def tune(data: Sequence[tuple[dict, float]]) -> dict[str, dict[str, Any]]:
    """Per optimizer: the rate with the lowest progressive nMSE on ``data`` (the tuning
    recording), with every rate's score."""
    chosen: dict[str, dict[str, Any]] = {}
    for optimizer in OPTIMIZERS:
        models = [harness.Model(f"{rate:g}", river_linear(optimizer, rate)) for rate in RATES]
        runs = harness.progressive(data, models, baselines=False)
        scores = {rate: nmse(runs[f"{rate:g}"]) for rate in RATES}
        best = min(RATES, key=lambda rate: scores[rate])
        chosen[optimizer] = {"rate": best, "scores": {f"{r:g}": harness._finite(s)
                                                      for r, s in scores.items()}}
    return chosen


def models(rates: dict[str, dict[str, Any]]) -> list[harness.Model]:
    from river import linear_model

    ours = [harness.Model(RBF, SparseRBFRegressor, with_dist=True),
            harness.Model(VBLS, VBLSRegressor, with_dist=True),
            harness.Model(VBLS_FORGETTING, lambda: VBLSRegressor(memory="forgetting"),
                          with_dist=True)]
    river = [harness.Model(f"LinearRegression {opt}({rates[opt]['rate']:g})",
                           river_linear(opt, rates[opt]["rate"]), peer=True)
             for opt in OPTIMIZERS]
    river.append(harness.Model(RIVER_DEFAULT, linear_model.LinearRegression, peer=True))
    return [*ours, *river, harness.Model(LIN1, Lin1Regressor, with_dist=True)]


# -- report ------------------------------------------------------------------------------
def best_river(runs: dict[str, harness.Run]) -> str:
    """The river linear model with the lowest nMSE."""
    return min((k for k, r in runs.items() if r.peer), key=lambda k: nmse(runs[k]))


def cuts(run: harness.Run) -> int | None:
    return int(run.model.n_memory_cuts) if run.label in OURS else None


def fifths(run: harness.Run) -> list[float]:
    """MSE per fifth of the stream over the variance of the whole scored stream."""
    variance = float(np.var(run.targets[run.scored]))
    return [harness.rmse(part) ** 2 / variance for part in np.array_split(run.errors, 5)]


def show(value: float) -> str:
    return "diverged" if not math.isfinite(value) or value > 1e6 else harness.fmt(value)


def report_target(report: harness.Report, target: str, runs: dict[str, harness.Run],
                  rates: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The target's tables; returns our models' (and lin-1's) nMSE ratios to the best river
    linear model's."""
    best = best_river(runs)
    ratio = {k: nmse(runs[k]) / nmse(runs[best]) for k in (*OURS, LIN1) if k in runs}
    rows = [[label, show(nmse(run)),
             harness.fmt(ratio[label], 3) if label in ratio else "",
             harness.percent(run.coverage()) if run.with_dist else "—",
             f"{run.latency(50):.0f}", f"{run.latency(99):.0f}",
             "" if cuts(run) is None else str(cuts(run)), str(run.missing)]
            for label, run in runs.items()]
    n = len(runs[best].targets)
    report.table(f"{target} ({n} rows)", ["model", "nMSE", "ours / best river",
                                          "95 % coverage", "µs median", "µs p99",
                                          "memory cuts", "missing"], rows, doc=False)
    report.note(f"best river linear model on {target}: {best}, nMSE "
                f"{harness.fmt(nmse(runs[best]))}", table=True)
    report.table(f"{target}: nMSE per fifth of the stream (channel silent from the 4th)",
                 ["model", "1st", "2nd", "3rd", "4th", "5th"],
                 [[label, *(show(v) for v in fifths(run))] for label, run in runs.items()],
                 doc=False)
    report.add_stream(target, runs, ours=RBF, peers=[k for k, r in runs.items() if r.peer],
                      best_river=best, tuning=rates,
                      nmse_ratio={k: harness._finite(v) for k, v in ratio.items()},
                      memory_cuts={k: cuts(r) for k, r in runs.items() if k in OURS},
                      nmse_fifths={k: [harness._finite(v) for v in fifths(r)]
                                   for k, r in runs.items()})
    return ratio


def report_summary(report: harness.Report, ratios: dict[str, dict[str, float]],
                   rates: dict[str, dict[str, dict[str, Any]]]) -> None:
    report.table("River's rates chosen on the tuning recording (seed "
                 f"{TUNE_SEED}): nMSE per rate", ["target", "optimizer", "chosen",
                                                  *(f"{r:g}" for r in RATES)],
                 [[target, opt, f"{rates[target][opt]['rate']:g}",
                   *(show(math.inf if s is None else s)
                     for s in rates[target][opt]["scores"].values())]
                  for target in ratios for opt in OPTIMIZERS], doc=False)
    report.table(f"Summary: nMSE / best river linear model's (target for ours: ≤ {GOAL} "
                 "on every target)", ["model", *ratios, f"≤ {GOAL} on every target"],
                 [[label, *(harness.fmt(ratios[t].get(label, math.nan), 3) for t in ratios),
                   "yes" if all(ratios[t].get(label, math.inf) <= GOAL for t in ratios)
                   else "no"] for label in (*OURS, LIN1)], doc=False)
    report.note(summary_note(ratios))


def summary_note(ratios: dict[str, dict[str, float]]) -> str:
    """The summary in one line: the only lines docs/performance.md shows of this benchmark
    besides the recording's (the page is kept short; the tables are in the results file)."""
    return (f"nMSE / best river linear model's ({', '.join(ratios)}; target for ours ≤ "
            f"{GOAL} on every target): " + "; ".join(
                f"{label} " + ", ".join(harness.fmt(ratios[t].get(label, math.nan), 3)
                                        for t in ratios) for label in (*OURS, LIN1))
            + "; every table is in benchmarks/results/neural_decoding.json")


# -- --multi: the three targets by one multi-output model --------------------------------
def multi_models(targets: Sequence[str], rates: dict[str, dict[str, dict[str, Any]]],
                 last_target: bool = True, memory: str = "adaptive"
                 ) -> list[tuple[harness.Model, harness.Target]]:
    """One multi-output model of every target, one single-output model per target, and
    each target's river linear models (its tuned rates, and the default)."""
    from river import linear_model

    def multi() -> SparseRBFMultiTargetRegressor:
        return SparseRBFMultiTargetRegressor(last_target=last_target, memory=memory)

    def single() -> SparseRBFRegressor:
        return SparseRBFRegressor(last_target=last_target, memory=memory)

    tasks: list[tuple[harness.Model, harness.Target]] = [
        (harness.Model(MULTI, multi, with_dist=True), tuple(targets))]
    for target in targets:
        tasks.append((harness.Model(RBF, single, with_dist=True), target))
        tasks += [(harness.Model(f"LinearRegression {opt}({rates[target][opt]['rate']:g})",
                                 river_linear(opt, rates[target][opt]["rate"]), peer=True),
                   target) for opt in OPTIMIZERS]
        tasks.append((harness.Model(RIVER_DEFAULT, linear_model.LinearRegression, peer=True),
                      target))
    return tasks


def rows_per_second(seconds: np.ndarray) -> float:
    """Throughput over the whole stream: rows over the summed predict + learn time."""
    return len(seconds) / float(np.sum(seconds))


def report_multi(report: harness.Report, runs: dict[str, dict[str, harness.Run]],
                 rates: dict[str, dict[str, dict[str, Any]]]) -> None:
    targets = list(runs)
    summary: dict[str, Any] = {}
    for target in targets:
        target_runs = runs[target]
        best = best_river(target_runs)
        ratio = {k: nmse(target_runs[k]) / nmse(target_runs[best]) for k in (MULTI, RBF)}
        report.table(f"{target} ({len(target_runs[best].targets)} rows), models interleaved",
                     ["model", "nMSE", "/ best river", "95 % coverage", "µs median",
                      "µs p99", "rows/s", "missing"],
                     [[label, show(nmse(run)),
                       harness.fmt(ratio[label], 3) if label in ratio else "",
                       harness.percent(run.coverage()) if run.with_dist else "—",
                       f"{run.latency(50):.0f}", f"{run.latency(99):.0f}",
                       f"{rows_per_second(run.seconds):.0f}", str(run.missing)]
                      for label, run in target_runs.items()], doc=False)
        report.note(f"{target}: best river linear model {best}; the multi-output model's µs "
                    "and rows/s are those of all the targets", table=True)
        report.add_stream(target, target_runs, ours=MULTI,
                          peers=[RBF, *(k for k, r in target_runs.items() if r.peer)],
                          best_river=best, tuning=rates[target],
                          nmse_ratio={k: harness._finite(v) for k, v in ratio.items()})
        summary[target] = {"nmse": {k: harness._finite(nmse(target_runs[k]))
                                    for k in (MULTI, RBF, best)},
                           "best_river": best, "ratio_to_best_river": ratio,
                           "coverage": {k: target_runs[k].coverage() for k in (MULTI, RBF)},
                           "multi_over_single": nmse(target_runs[MULTI]) / nmse(
                               target_runs[RBF])}
    multi = runs[targets[0]][MULTI]
    singles = [runs[t][RBF] for t in targets]
    together = sum(r.seconds for r in singles)
    together_cpu = sum(r.cpu for r in singles)
    cost = {MULTI: (multi.seconds, multi.cpu),
            f"{len(targets)} × {RBF} together": (together, together_cpu),
            f"{RBF}, {targets[0]} alone": (singles[0].seconds, singles[0].cpu)}
    numbers = {label: {"rows_per_s": rows_per_second(sec),
                       "us_median": float(np.median(sec)) * 1e6,
                       "us_p99": float(np.percentile(sec, 99)) * 1e6,
                       "cpu_us_median": float(np.median(cpu)) * 1e6}
               for label, (sec, cpu) in cost.items()}
    summary["cost"] = numbers
    summary["end"] = {label: {"n_basis": float(run.model.diagnostics().get("n_basis", 0.0)),
                              "memory_cuts": cuts(run) if label != MULTI
                              else int(run.model.n_memory_cuts)}
                      for label, run in ((MULTI, multi), *((f"{RBF} {t}", runs[t][RBF])
                                                            for t in targets))}
    report.table("Summary: per target nMSE, / best river linear model's, 95 % coverage",
                 ["target", "best river", "multi nMSE", "single nMSE", "multi / single",
                  "multi / best river", "single / best river", "multi coverage",
                  "single coverage"],
                 [[t, summary[t]["best_river"], show(summary[t]["nmse"][MULTI]),
                   show(summary[t]["nmse"][RBF]), harness.fmt(summary[t]["multi_over_single"], 3),
                   harness.fmt(summary[t]["ratio_to_best_river"][MULTI], 3),
                   harness.fmt(summary[t]["ratio_to_best_river"][RBF], 3),
                   harness.percent(summary[t]["coverage"][MULTI]),
                   harness.percent(summary[t]["coverage"][RBF])] for t in targets],
                 doc=False)
    one = numbers[f"{RBF}, {targets[0]} alone"]
    report.table("Summary: cost per row (predict + learn, every target), interleaved in one run",
                 ["model", "rows/s", "µs median", "µs p99", "CPU µs median",
                  "µs median / one single-output's"],
                 [[label, f"{c['rows_per_s']:.0f}", f"{c['us_median']:.0f}",
                   f"{c['us_p99']:.0f}", f"{c['cpu_us_median']:.0f}",
                   f"{c['us_median'] / one['us_median']:.2f}"]
                  for label, c in numbers.items()], doc=False)
    report.data["streams"]["summary"] = harness.finite_tree(summary)
    together_label = f"{len(targets)} × {RBF} together"
    report.note(
        f"--multi, one multi-output model of {', '.join(targets)} against one "
        "single-output model each, interleaved: nMSE multi / single "
        + ", ".join(harness.fmt(summary[t]["multi_over_single"], 3) for t in targets)
        + "; / best river linear model: multi " + ", ".join(
            harness.fmt(summary[t]["ratio_to_best_river"][MULTI], 3) for t in targets)
        + ", single " + ", ".join(harness.fmt(summary[t]["ratio_to_best_river"][RBF], 3)
                                  for t in targets)
        + "; coverage multi " + ", ".join(harness.percent(summary[t]["coverage"][MULTI])
                                          for t in targets)
        + f"; rows/s multi {numbers[MULTI]['rows_per_s']:.0f}, the {len(targets)} singles "
        f"together {numbers[together_label]['rows_per_s']:.0f}, one alone "
        f"{one['rows_per_s']:.0f}; basis functions at the end: multi "
        f"{summary['end'][MULTI]['n_basis']:.0f}, single " + ", ".join(
            f"{summary['end'][f'{RBF} {t}']['n_basis']:.0f}" for t in targets))



def _recording(args, report) -> tuple:
    """The compiled loops loaded (not inside the first timed sample), the recording and the
    tuning recording, noted in the report; their inputs. Returns ``(frame, tuning, xs,
    tune_xs)``."""
    warm_up()
    frame = make_spike_count_session(n_rows=args.rows, seed=SEED)
    tuning = make_spike_count_session(n_rows=args.tune_rows, seed=TUNE_SEED)
    truth = frame.attrs["truth"]
    report.note(f"recording: seed {SEED}, {args.rows} rows × {len(truth['channels'])} "
                f"channels; channel {truth['channels'][truth['dropped_channel']]} silent from "
                f"row {truth['dropout_row']}; {len(truth['nan_cells'])} NaN cells")
    return frame, tuning, inputs(frame), inputs(tuning)

def run_multi(args: argparse.Namespace) -> None:
    report = harness.Report(
        "neural_decoding_multi", "Decoding two EMG envelopes and a hand velocity together: "
        "one multi-output model against one per target (neural_decoding.py --multi, "
        "issue 32)." + (" Both of ours with last_target=False." if args.no_last_target
                        else "") + (f" Both of ours with memory='{args.memory}'."
                                    if args.memory != "adaptive" else ""),
        {"rows": args.rows, "tune_rows": args.tune_rows, "seed": SEED, "tune_seed": TUNE_SEED,
         "targets": args.targets, "rates": list(RATES), "quick": args.quick,
         "last_target": not args.no_last_target, "memory": args.memory},
        quick=args.quick or args.partial or args.no_last_target or args.memory != "adaptive",
        path=args.results)
    frame, tuning, xs, tune_xs = _recording(args, report)
    rates = {}
    for target in args.targets:
        print(f"{target}: tuning river's rates on seed {TUNE_SEED}", flush=True)
        rates[target] = tune(stream(tune_xs, tuning, target))
    print("interleaved run", flush=True)
    runs = harness.interleaved(xs, {t: frame[t].astype(float).to_numpy()
                                    for t in args.targets},
                               multi_models(args.targets, rates,
                                            last_target=not args.no_last_target,
                                            memory=args.memory))
    report_multi(report, runs, rates)
    report.write()


# -- main --------------------------------------------------------------------------------
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None,
                        help=f"rows of the evaluated recording (default {ROWS})")
    parser.add_argument("--tune-rows", type=int, default=None,
                        help=f"rows of the tuning recording (default {TUNE_ROWS})")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_ROWS} rows, rates tuned on {QUICK_TUNE_ROWS}")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help=f"comma-separated subset of {','.join(TARGETS)}")
    parser.add_argument("--multi", action="store_true",
                        help="the targets by one multi-output model against one per target")
    parser.add_argument("--no-last-target", action="store_true",
                        help="--multi: ours with last_target=False (the spikes alone)")
    parser.add_argument("--memory", choices=("adaptive", "window"), default="adaptive",
                        help="--multi: the memory of both of ours")
    harness.add_common_args(parser)
    args = parser.parse_args()
    args.targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {list(TARGETS)}")
    args.partial = (args.rows not in (None, ROWS) or args.tune_rows not in (None, TUNE_ROWS)
                    or len(args.targets) < len(TARGETS))
    args.rows = args.rows or (QUICK_ROWS if args.quick else ROWS)
    args.tune_rows = args.tune_rows or (QUICK_TUNE_ROWS if args.quick else TUNE_ROWS)
    return args


def main() -> None:
    args = parse_args()
    if args.multi:
        run_multi(args)
        return
    report = harness.Report("neural_decoding", __doc__.splitlines()[0],
                            {"rows": args.rows, "tune_rows": args.tune_rows,
                             "seed": SEED, "tune_seed": TUNE_SEED, "targets": args.targets,
                             "rates": list(RATES), "quick": args.quick},
                            quick=args.quick or args.partial, path=args.results)
    frame, tuning, xs, tune_xs = _recording(args, report)
    ratios, rates = {}, {}
    for target in args.targets:
        print(f"\n{target}: tuning river's rates on seed {TUNE_SEED}", flush=True)
        rates[target] = tune(stream(tune_xs, tuning, target))
        print("  chosen: " + ", ".join(f"{k} {v['rate']:g}" for k, v in rates[target].items()),
              flush=True)
        runs = harness.progressive(stream(xs, frame, target), models(rates[target]),
                                   verbose=True)
        ratios[target] = report_target(report, target, runs, rates[target])
    report_summary(report, ratios, rates)
    report.write()


if __name__ == "__main__":
    main()
