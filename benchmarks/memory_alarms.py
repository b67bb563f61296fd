"""Memory that does not cry wolf: the adaptive memory's cuts on stationary and drifting streams.

The models' adaptive memory (``SparseRBFRegressor()``'s default ``memory="adaptive"``, and
``VBLSRegressor(memory="adaptive")``) cuts its window when a CUSUM on the calibrated
prequential errors raises an alarm (``onlinesparse/stream/change.py``). The CUSUM assumes
independent Gaussian errors; this benchmark counts the cuts where that assumption fails but
nothing changes, and times the cuts where something does:

* six stationary streams (``benchmarks/alarm_streams.py`` describes each): spike counts of
  60 Poisson channels tuned to a smooth latent velocity, the target its speed (count-valued,
  time-ordered inputs); neural_decoding's recording without its faults, the target an EMG
  envelope (skewed errors in epochs of reaches and holds); the Franka Panda's joint-2
  torque on a strictly periodic reference (pybullet); Friedman #1 with heteroscedastic
  noise, with Student-t₃ noise and with AR(1) noise of φ = 0.95 (the three on the same
  i.i.d. inputs, seed 42). Every cut there is a false alarm; reported as cuts per 10 000
  samples;
* river's ``FriedmanDrift`` with ``drift_type`` "gra", "gsg" and "lea" (seed 42), river's
  default geometry scaled by n / 200 000 (changes at n/4, n/2 and, for lea, 3n/4; gsg's
  transition window n/20). The delay of a change is the index of the first cut at or after
  it minus its index (0-based, the index of the first sample of the new concept), "missed"
  if no cut comes before the next change (or the stream's end); every other cut is a false
  alarm (before the first change, or after the cut that detected a change). lea's
  concepts differ from its first on 1.6 %, 5.4 % and 18 % of the input space, so that its
  changes alter 1.6 %, 3.8 % and 12.6 % of it.

What a detector can see of each change: the samples among the 150 and 1000 after it that
it alters, drawn from a concept other than the one before (river's own regions for lea, its
own random bits for gsg's transition window; ``alarm_streams.Stream.altered``). A change
that alters none of the 150 samples after it cannot be caught within 150 by any detector.

Whether a cut would have helped: on each drifting stream every model runs a second time,
restarted fresh at each true change (an oracle's cut to the change point, the scaler
kept), and the RMSE over the 150 and 1000 samples after each change is printed for both
runs. Where the oracle's is the higher, catching that change would have cost accuracy. On
lea the RBF model runs a third time, forgetting 15 samples after each change only its
stored patterns in the region the change alters (``IncrementalRidge.forget_where``): the
best a local response could do, where the adaptive memory's cut forgets everything before
the change. Each model's first alarm after each change, cut or refused by the refit, is
printed beside the delays of its cuts (an alarm the refit refuses, or leaves to a second
look, counts).

Targets (issue "Memory that does not cry wolf"): at most 1 cut per 10 000 samples on each
stationary stream; every change of the drifting streams caught within 150 samples.

Models, each behind its own ``preprocessing.StandardScaler()`` as a river user would put
them and as every benchmark of ``benchmarks/harness.py`` does, with default parameters:
``SparseRBFRegressor()`` and ``VBLSRegressor(memory="adaptive")``; ``--models`` adds
``VBLSRegressor(memory="forgetting")`` (it never cuts) as ``vbls-forgetting``. The cuts
are read from the model's ``n_memory_cuts`` after every ``learn_one`` (a harness
checkpoint, outside the timed calls). The loop is the harness's progressive validation
(predict, then learn; the first prediction is not scored), with its running-mean and
last-target baselines. Printed per stream and model: samples, cuts, cuts per 10k, the
delays and false alarms on the drifting streams, progressive RMSE, the baselines' RMSE,
the 95 % interval's coverage, the alarms a refit refused to cut on (``stream.refit``), the
lag-1 autocorrelation of the model's errors, and the median µs of predict + learn per
sample.

Run: ``.venv/bin/python benchmarks/memory_alarms.py`` (20 000 samples per stream, about four
minutes), ``--quick`` (6000 samples), ``--samples N``,
``--streams spikes,emg,panda,hetero,t3,ar1,gra,gsg,lea``, ``--models rbf,vbls,vbls-forgetting``.
Writes ``benchmarks/results/memory_alarms.json`` (a ``--quick`` or partial run:
``benchmarks/results/quick/``), every cut's sample index included; docs/performance.md shows
only this description and the run's provenance (the page is kept short). Needs the
``bench`` extra (pybullet).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import math  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

import alarm_streams  # noqa: E402
import harness  # noqa: E402
import numpy as np  # noqa: E402
from river import base  # noqa: E402

from onlinesparse import SparseRBFRegressor, VBLSRegressor, warm_up  # noqa: E402

SAMPLES = 20_000
QUICK_SAMPLES = 6_000
PER = 10_000  # cuts are counted per this many samples
CUTS_TARGET = 1.0  # at most, per PER samples of a stationary stream
DELAY_TARGET = 150  # samples
MODELS: dict[str, tuple[str, Callable[[], Any]]] = {
    "rbf": ("SparseRBFRegressor()", SparseRBFRegressor),
    "vbls": ('VBLSRegressor(memory="adaptive")', lambda: VBLSRegressor(memory="adaptive")),
    "vbls-forgetting": ('VBLSRegressor(memory="forgetting")',
                        lambda: VBLSRegressor(memory="forgetting"))}
DEFAULT_MODELS = ("rbf", "vbls")


# -- counting the cuts ------------------------------------------------------------------
class CutRecorder:
    """A harness checkpoint (every sample): the 0-based index of the sample whose
    ``learn_one`` cut the memory, once per cut; the alarms refused so far; and the samples
    whose alarm the refit refused at once or left to a second look (``alarm_indices``: a
    look-again alarm is dated when it is raised, not when the look refuses it). Alarms the
    memory sets aside unjudged, too young to be cut (``AdaptiveMemory.plan``), are not
    seen here."""

    def __init__(self) -> None:
        self.indices: list[int] = []
        self.alarm_indices: list[int] = []
        self.seen = 0
        self.refused = 0
        self.review_at = -1

    def __call__(self, samples: int, pipeline: Any) -> None:
        model = pipeline[-1] if hasattr(pipeline, "steps") else pipeline
        memory = getattr(model, "_adaptive", None)
        # (the alarms a refit judged not worth a cut: stream.refit, AdaptiveMemory.vetoed;
        # and those it will look at again, AdaptiveMemory.review_at)
        refused = getattr(memory, "vetoed", 0)
        review_at = getattr(memory, "review_at", -1)
        looked_again = review_at >= 0 and review_at != self.review_at
        # (a refusal that ends the look owed is that alarm's, already counted)
        refused_now = refused > self.refused and not (self.review_at >= 0 > review_at)
        if refused_now or looked_again:
            self.alarm_indices.append(samples - 1)
        self.refused, self.review_at = refused, review_at
        count = getattr(model, "n_memory_cuts", 0)
        if count > self.seen:
            self.indices += [samples - 1] * (count - self.seen)
            self.seen = count


def score_changes(cuts: Sequence[int], changes: Sequence[int], n: int
                  ) -> tuple[list[int | None], int]:
    """The delay of each change (first cut at or after it, before the next change or the
    end, minus its index; None: missed) and the number of the other cuts (false alarms)."""
    delays: list[int | None] = []
    detecting = 0
    stops = [*changes[1:], n] if changes else []
    for start, stop in zip(changes, stops, strict=True):
        first = next((c for c in cuts if start <= c < stop), None)
        delays.append(None if first is None else first - start)
        detecting += first is not None
    return delays, len(cuts) - detecting


def lag1(errors: np.ndarray) -> float:
    """Lag-1 autocorrelation of the scored errors (NaN-free stretch after the first)."""
    e = errors[~np.isnan(errors)]
    if len(e) < 3 or np.std(e) == 0:
        return math.nan
    return float(np.corrcoef(e[:-1], e[1:])[0, 1])


class RestartedAt(base.Regressor):
    """A river regressor that is a fresh ``factory()`` model from each index of ``changes``
    on (its learned samples counted): the memory an oracle would cut at each change."""

    def __init__(self, factory: Callable[[], Any], changes: Sequence[int]) -> None:
        self.factory, self.changes = factory, tuple(changes)
        self.model, self.seen, self._pending = factory(), 0, set(changes)

    def predict_one(self, x: dict, **kwargs: Any) -> Any:
        if self.seen in self._pending:
            self.model = self.factory()
            self._pending.discard(self.seen)
        return self.model.predict_one(x, **kwargs)

    def learn_one(self, x: dict, y: float) -> None:
        self.model.learn_one(x, y)
        self.seen += 1


class ForgetsAlteredAt(base.Regressor):
    """``factory()`` behind its own StandardScaler that, ``delay`` samples after each of
    lea's changes, forgets the stored patterns from before the change whose raw inputs the
    change alters (``alarm_streams.lea_altered``): the local response an oracle that knows
    the changed region would make, where the adaptive memory's cut forgets everything
    before the change. For a model with ``forget_where`` (the Orr family) whose memory
    takes every sample (stride 1: i.i.d. inputs) and forgets otherwise only its oldest, so
    that the raw inputs kept beside it, oldest first, are its stored patterns'. It forgets
    behind the adaptive memory's back (no level restarted, no horizon restarted: with
    stride 1 the horizon takes every sample either way), as an oracle may."""

    def __init__(self, factory: Callable[[], Any], changes: Sequence[int],
                 delay: int = DELAY_TARGET // 10) -> None:
        from river import preprocessing

        self.factory, self.changes, self.delay = factory, tuple(changes), delay
        self.scaler, self.model, self.seen = preprocessing.StandardScaler(), factory(), 0
        self.raw: list[list[float]] = []

    def predict_one(self, x: dict, **kwargs: Any) -> Any:
        return self.model.predict_one(self.scaler.transform_one(x), **kwargs)

    def learn_one(self, x: dict, y: float) -> None:
        self.scaler.learn_one(x)
        self.model.learn_one(self.scaler.transform_one(x), y)
        self.seen += 1
        ridge = self.model.model
        self.raw.append([x[k] for k in sorted(x)])
        if self.model._horizon.stride != 1 or len(self.raw) < ridge.n_stored:
            raise RuntimeError("the oracle needs a memory that takes every sample")
        del self.raw[:len(self.raw) - ridge.n_stored]  # (the window's slide, or a cut)
        for change, start in enumerate(self.changes, 1):
            if self.seen == start + self.delay:
                raw = np.array(self.raw)
                forget = alarm_streams.lea_altered(raw, change)
                forget[max(len(raw) - self.delay, 0):] = False  # (only those before it)
                ridge.forget_where(~forget)
                self.raw = [r for r, f in zip(self.raw, forget, strict=True) if not f]


AFTER = (DELAY_TARGET, 1000)  # samples after a change over which the RMSEs are compared


def after_changes(run: harness.Run, changes: Sequence[int]) -> list[float]:
    """RMSE over the ``AFTER`` samples after each change, in order."""
    return [harness.rmse(run.errors[c:c + w]) for c in changes for w in AFTER]


def oracle_rows(key: str, stream: alarm_streams.Stream, runs: dict[str, harness.Run],
                keys: Sequence[str]) -> list[list[str]]:
    """Each model as it ran against the same model restarted at every change: RMSE over
    the 150 and 1000 samples after each change."""
    rows = []
    for model in keys:
        label, factory = MODELS[model]
        oracle = harness.progressive(
            stream.data, [harness.Model("oracle", lambda f=factory: RestartedAt(
                f, stream.changes), with_dist=True)], baselines=False)["oracle"]
        ran, cut = after_changes(runs[label], stream.changes), after_changes(
            oracle, stream.changes)
        local = [math.nan] * len(ran)
        if key == "lea" and model == "rbf":
            local = after_changes(harness.progressive(stream.data, [harness.Model(
                "local", lambda f=factory: ForgetsAlteredAt(f, stream.changes),
                with_dist=True, scale=False)], baselines=False)["local"], stream.changes)
        cells = [" / ".join(harness.fmt(v, 3) for v in (a, b, c) if not math.isnan(v))
                 for a, b, c in zip(ran, cut, local, strict=True)]
        rows.append([key, label, *cells[:6], *[""] * (6 - len(cells[:6]))])
    return rows


ORACLE_COLUMNS = ["stream", "model"] + [
    f"change {i}, {w} after: ran / oracle cut [/ oracle local forget]"
    for i in (1, 2, 3) for w in AFTER]


def altered_rows(key: str, stream: alarm_streams.Stream) -> list[list[str]]:
    """How many samples after each change the change alters (``Stream.altered``): all that
    a detector can see of it."""
    assert stream.altered is not None
    return [[key, str(i), str(start), *(str(int(stream.altered[start:start + w].sum()))
                                        for w in AFTER)]
            for i, start in enumerate(stream.changes, 1)]


ALTERED_COLUMNS = ["stream", "change", "at sample",
                   *(f"samples it alters among the {w} after" for w in AFTER)]

BEFORE = 1000  # samples before a change its errors' mean square is measured over


def moved_rows(key: str, stream: alarm_streams.Stream, runs: dict[str, harness.Run],
               keys: Sequence[str]) -> list[list[str]]:
    """How much each change moved each model's errors as it ran: their mean square over the
    ``DELAY_TARGET`` samples after the change over that of the ``BEFORE`` before it. A
    ratio near 1 is a change the errors hardly show: with independent Gaussian errors, a
    CUSUM on their scale needs about ln(ARL₀)/KL samples to raise an alarm at a false-alarm
    rate of one in ARL₀ samples, KL = (r − 1 − ln r)/2 per sample at a ratio r (Lorden
    1971): some 700 at r = 1.25 and one in 10 000, against 150."""
    rows = []
    for model in keys:
        label = MODELS[model][0]
        errors = runs[label].errors
        cells = [harness.fmt((harness.rmse(errors[c:c + DELAY_TARGET])
                              / harness.rmse(errors[c - BEFORE:c])) ** 2, 3)
                 for c in stream.changes]
        rows.append([key, label, *cells, *[""] * (3 - len(cells))])
    return rows


MOVED_COLUMNS = ["stream", "model", *(f"change {i}: errors' mean square, {DELAY_TARGET} after "
                                      f"/ {BEFORE} before" for i in (1, 2, 3))]


# -- one stream ---------------------------------------------------------------------------
def run_stream(stream: alarm_streams.Stream, keys: Sequence[str]
               ) -> tuple[dict[str, harness.Run], dict[str, dict[str, Any]]]:
    """Every model (one at a time, each with its recorder) and the baselines on ``stream``;
    returns the runs and, per model, its cuts, cuts per 10k, delays and false alarms."""
    runs: dict[str, harness.Run] = {}
    alarms: dict[str, dict[str, Any]] = {}
    n = len(stream.data)
    for key in keys:
        label, factory = MODELS[key]
        recorder = CutRecorder()
        runs.update(harness.progressive(stream.data,
                                        [harness.Model(label, factory, with_dist=True)],
                                        baselines=False, checkpoint=(1, recorder)))
        delays, false = score_changes(recorder.indices, stream.changes, n)
        alarms[label] = {"cuts": len(recorder.indices),
                         "cuts_per_10k": PER * len(recorder.indices) / n,
                         "delays": delays, "false_alarms": false,
                         "cut_indices": recorder.indices, "refused": recorder.refused,
                         "alarm_indices": recorder.alarm_indices,
                         "alarm_delays": score_changes(sorted(
                             recorder.indices + recorder.alarm_indices),
                             stream.changes, n)[0],
                         "error_lag1": harness._finite(lag1(runs[label].errors))}
        print(f"  {label}: {len(recorder.indices)} cuts ({recorder.refused} alarms refused), "
              f"RMSE {runs[label].rmse():.4g}, {runs[label].latency(50):.0f} µs/sample",
              flush=True)
    runs.update(harness.progressive(stream.data, [], baselines=True))
    return runs, alarms


def delays_cell(delays: list[int | None]) -> str:
    return ", ".join("missed" if d is None else str(d) for d in delays) or "—"


def rows_of(key: str, runs: dict[str, harness.Run], alarms: dict[str, dict[str, Any]]
            ) -> list[list[str]]:
    """The table's rows of one stream, one per model."""
    mean = runs[harness.RUNNING_MEAN].rmse()
    last = runs[harness.LAST_TARGET].rmse()
    rows = []
    for label, a in alarms.items():
        run = runs[label]
        rows.append([key, label, str(len(run.targets)), str(a["cuts"]), str(a["refused"]),
                     f"{a['cuts_per_10k']:.1f}", delays_cell(a["delays"]),
                     delays_cell(a["alarm_delays"]),
                     str(a["false_alarms"]), harness.fmt(run.rmse()), harness.fmt(mean),
                     harness.fmt(last), harness.percent(run.coverage()),
                     harness.fmt(a["error_lag1"], 2), f"{run.latency(50):.0f}"])
    return rows


COLUMNS = ["stream", "model", "samples", "cuts", "alarms refused", "cuts / 10k", "delays",
           "first alarm (cut, refused or looked at again)",
           "false alarms", "RMSE", "running-mean RMSE", "last-target RMSE", "95 % coverage",
           "error lag-1 corr.", "µs / sample"]


# -- the verdicts -------------------------------------------------------------------------
def verdicts(report: harness.Report, results: dict[str, dict[str, dict[str, Any]]],
             changes: dict[str, tuple[int, ...]]) -> None:
    """Per model: the worst stationary stream's cuts per 10k and the changes caught within
    the target delay, against the issue's targets."""
    labels = dict.fromkeys(label for per in results.values() for label in per)
    for label in labels:
        flat = {k: v[label] for k, v in results.items() if label in v}
        still = {k: a for k, a in flat.items() if not changes[k]}
        drift = {k: a for k, a in flat.items() if changes[k]}
        if still:
            worst = max(still, key=lambda k: still[k]["cuts_per_10k"])
            ok = all(a["cuts_per_10k"] <= CUTS_TARGET for a in still.values())
            report.note(f"{label}: stationary streams, cuts per 10k "
                        + ", ".join(f"{k} {a['cuts_per_10k']:.1f}" for k, a in still.items())
                        + f"; worst {worst}; target ≤ {CUTS_TARGET:g} on each: "
                        + ("met" if ok else "NOT met"), table=True)
        if drift:
            delays = [d for a in drift.values() for d in a["delays"]]
            caught = sum(d is not None and d <= DELAY_TARGET for d in delays)
            false = sum(a["false_alarms"] for a in drift.values())
            alarmed = sum(d is not None and d <= DELAY_TARGET
                          for a in drift.values() for d in a["alarm_delays"])
            report.note(f"{label}: drifting streams, {caught} of {len(delays)} changes caught "
                        f"within {DELAY_TARGET} samples, false alarms {false}; "
                        f"target every change: "
                        + ("met" if caught == len(delays) else "NOT met")
                        + f"; {alarmed} of {len(delays)} raised an alarm within "
                        f"{DELAY_TARGET} (cut, or judged by the refit)", table=True)


# -- main ---------------------------------------------------------------------------------
def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default=",".join(alarm_streams.KEYS),
                        help=f"comma-separated subset of {','.join(alarm_streams.KEYS)}")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--samples", type=int, default=SAMPLES, help="samples per stream")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_SAMPLES} samples per stream")
    harness.add_common_args(parser)
    args = parser.parse_args()
    args.streams = [s.strip() for s in args.streams.split(",") if s.strip()]
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    for given, known, what in ((args.streams, alarm_streams.KEYS, "streams"),
                               (args.models, MODELS, "models")):
        unknown = [k for k in given if k not in known]
        if unknown:
            parser.error(f"unknown {what} {unknown}; choose from {list(known)}")
    if args.samples < 1000:
        parser.error("need --samples ≥ 1000")
    args.partial = (list(args.streams) != list(alarm_streams.KEYS)
                    or list(args.models) != list(DEFAULT_MODELS) or args.samples != SAMPLES)
    if args.quick:
        args.samples = QUICK_SAMPLES
    return args


def main() -> None:
    args = parse_args()
    report = harness.Report("memory_alarms", __doc__.splitlines()[0],
                            {"streams": args.streams, "models": args.models,
                             "samples": args.samples, "quick": args.quick,
                             "cuts_target_per_10k": CUTS_TARGET,
                             "delay_target": DELAY_TARGET},
                            quick=args.quick or args.partial, path=args.results)
    warm_up()  # the compiled loops load now, not inside the first timed sample
    rows: list[list[str]] = []
    oracles: list[list[str]] = []
    altered: list[list[str]] = []
    moved: list[list[str]] = []
    results: dict[str, dict[str, dict[str, Any]]] = {}
    changes: dict[str, tuple[int, ...]] = {}
    abouts: dict[str, str] = {}
    for key in args.streams:
        stream = alarm_streams.build(key, args.samples)
        print(f"\n{key}: {stream.title}" + (f"; {stream.about}" if stream.about else ""),
              flush=True)
        runs, alarms = run_stream(stream, args.models)
        report.add_stream(stream.title, runs, key=key, changes=list(stream.changes),
                          about=stream.about, alarms=alarms)
        rows += rows_of(key, runs, alarms)
        if stream.changes:
            oracles += oracle_rows(key, stream, runs, args.models)
            altered += altered_rows(key, stream)
            moved += moved_rows(key, stream, runs, args.models)
        results[key], changes[key] = alarms, stream.changes
        abouts[key] = stream.title + (f"; {stream.about}" if stream.about else "")
    report.table("Adaptive memory: cuts on stationary streams, detection delays on drifting "
                 f"ones ({args.samples} samples per stream)", COLUMNS, rows, doc=False)
    # (docs/performance.md is held under 400 lines: the table and its notes stay in the
    # results file and the printout, the page gets the description and the provenance)
    verdicts(report, results, changes)
    for key, stream in abouts.items():
        report.note(f"{key}: {stream}", table=True)
    if oracles:
        report.table("What each change alters: the samples after it drawn from a concept "
                     "other than the one before it", ALTERED_COLUMNS, altered, doc=False)
        report.table("How much each change moved the errors of each model as it ran",
                     MOVED_COLUMNS, moved, doc=False)
        report.table("RMSE after each change: the model as it ran / restarted at the change "
                     "(an oracle's cut) / forgetting, "
                     f"{DELAY_TARGET // 10} samples after the change, only its stored "
                     "patterns in the region the change alters (an oracle's local "
                     "forgetting: lea, the RBF model)", ORACLE_COLUMNS, oracles, doc=False)
    report.write()


if __name__ == "__main__":
    main()
