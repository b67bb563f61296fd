"""The progressive-validation loop and the results file every stream benchmark shares.

Protocol (river's ``evaluate.progressive_val_score`` semantics, made explicit):

* for every sample, ``predict_one`` (timed), then ``learn_one`` (timed); a model declared
  ``with_dist=True`` also answers ``predict_one(x, with_dist=True)`` in an extra, untimed
  call, so that the latency columns compare like with like against peers without a
  distribution, at the price of not timing the distribution itself;
* the first prediction, made before any target, is never scored, for any model (a model
  answers it with a constant or ``None``; scoring it rewards whichever constant lies nearer
  the first target). ``score_from`` can leave more samples out, for every model alike;
* a ``None`` prediction is a missing prediction, never 0: it is left out of that model's
  scores (river's metrics skip it too) and counted in ``missing``, printed beside the scores
  so that models scored over different samples show it;
* two trivial baselines run beside the peers on every stream: the running mean of the
  targets seen so far and the last target seen (persistence). A model that does not beat
  them has learned nothing the stream's order did not give away;
* every model sits behind its own ``preprocessing.StandardScaler()`` unless its ``Model``
  says ``scale=False`` (the baselines, which ignore the inputs).

Reported per model (``Run.summary``): progressive RMSE, MAE and nMSE (MSE over the variance
of the scored targets), the 95 % interval's coverage (mean ± 1.959964σ, after ``warm``
samples) for models with a distribution, and the µs of predict + learn per sample: the
median and 99th percentile of the wall clock (``perf_counter``) and of the thread's CPU
time (``thread_time``; on a shared machine the wall-clock tail is mostly other processes).

Several targets of one stream (``interleaved``): single- and multi-output models side by
side, under the same rules, each single-output model learning its target and a multi-output
model (river's ``MultiTargetRegressor``: ``y`` and predictions are dicts) all of them; the
models take turns sample by sample, so that the load of a shared machine falls on all of
them alike and their times compare within the run. A multi-output model's time per sample
is that of all its targets.

A benchmark builds its ``Model`` list, calls ``progressive`` per stream and hands the runs
to a ``Report``, which prints the tables and writes ``benchmarks/results/<benchmark>.json``
(machine, date, git commit, parameters, wall time, per-stream per-model numbers, the
printed tables). ``benchmarks/performance.py`` renders ``docs/performance.md`` from those
files.
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import datetime  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

Z95 = 1.959963984540054  # two-sided 95 % quantile of the standard normal
WARM = 100  # coverage is counted after this many samples
SEED = 42
BENCHMARKS = Path(__file__).resolve().parent
RESULTS = BENCHMARKS / "results"
RUNNING_MEAN = "running mean"
LAST_TARGET = "last target"
#: Keys of every results file; tests/test_bench_harness.py holds the writer to them.
RESULT_KEYS = ("benchmark", "description", "date", "git_commit", "git_dirty", "machine",
               "parameters", "wall_time_s", "streams", "tables", "notes")


# -- models ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Model:
    """One learner of a benchmark: ``factory`` builds a fresh estimator for each stream."""

    label: str
    factory: Callable[[], Any]
    with_dist: bool = False
    scale: bool = True  # behind its own StandardScaler
    peer: bool = False  # someone else's model: candidates for "best peer"


class RunningMean:
    """Predicts the mean of the targets seen so far (``None`` before the first)."""

    def __init__(self) -> None:
        self.n, self.mean = 0, 0.0

    def predict_one(self, x: dict) -> float | None:
        return self.mean if self.n else None

    def learn_one(self, x: dict, y: float) -> None:
        self.n += 1
        self.mean += (y - self.mean) / self.n


class LastTarget:
    """Predicts the last target seen (persistence; ``None`` before the first)."""

    def __init__(self) -> None:
        self.last: float | None = None

    def predict_one(self, x: dict) -> float | None:
        return self.last

    def learn_one(self, x: dict, y: float) -> None:
        self.last = y


BASELINES = (Model(RUNNING_MEAN, RunningMean, scale=False),
             Model(LAST_TARGET, LastTarget, scale=False))


def linear_regression(data: Sequence[tuple[dict, float]],
                      rates: Sequence[float] = (0.003, 0.01, 0.03)) -> Model:
    """river's ``LinearRegression`` with the SGD rate (weights and intercept) that scores
    best on ``data`` itself among ``rates`` (0.01 is river's default). Its default rate
    diverges on targets far from unit scale and crawls towards a large intercept; picking
    the rate on the scored stream is generous to the peer, which is the safe side for a
    comparison. Rates of 0.1 and above diverge on river's streams."""
    from river import linear_model, optim

    def make(rate: float) -> Callable[[], Any]:
        return lambda: linear_model.LinearRegression(optimizer=optim.SGD(rate),
                                                     intercept_lr=rate)

    scores = {rate: progressive(data, [Model("lr", make(rate))], baselines=False)["lr"].rmse()
              for rate in rates}
    best = min(rates, key=lambda rate: scores[rate] if math.isfinite(scores[rate]) else math.inf)
    return Model(f"LinearRegression (lr {best:g})", make(best), peer=True)


def river_peer(key: str, data: Sequence[tuple[dict, float]] = ()) -> Model:
    """river's regressor ``key`` with its sensible setting: defaults, seeded where it has a
    seed, ``LinearRegression`` with its rate tuned on ``data`` (``linear_regression``).
    ``AMFRegressor`` sees the raw inputs: its splits and its constant leaves are invariant to
    the unit of an input, while a running StandardScaler in front moves the inputs under
    splits already made (its TrumpApproval RMSE is about twice as high behind one, though on
    ChickWeights 10 % lower: ``amf-scaled`` is that variant, for the benchmarks that show
    both rather than pick the better per stream). The Hoeffding trees (``hat``, ``arf``)
    keep the scaler: their leaves hold SGD linear models, which diverge on raw inputs such
    as a time in hours."""
    from river import forest, linear_model, neighbors, tree

    if key == "linear":
        return linear_regression(data)
    table: dict[str, tuple[str, Callable[[], Any], bool, bool]] = {
        "bayes": ("BayesianLinearRegression", linear_model.BayesianLinearRegression, True,
                  True),
        "knn": ("KNNRegressor", neighbors.KNNRegressor, True, False),
        "hat": ("HoeffdingAdaptiveTree",
                lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=SEED), True, False),
        "arf": ("ARFRegressor", lambda: forest.ARFRegressor(seed=SEED), True, False),
        "amf": ("AMFRegressor", lambda: forest.AMFRegressor(seed=SEED), False, False),
        "amf-scaled": ("AMFRegressor (scaled)", lambda: forest.AMFRegressor(seed=SEED), True,
                       False)}
    label, factory, scale, with_dist = table[key]
    return Model(label, factory, with_dist=with_dist, scale=scale, peer=True)


RIVER_PEERS = ("linear", "bayes", "knn", "hat", "arf", "amf")


# -- the loop ----------------------------------------------------------------------------
@dataclass
class Run:
    """One model's progressive run over one stream. ``errors`` is NaN wherever the sample
    was not scored (before ``score_from``, or a ``None`` prediction)."""

    label: str
    targets: np.ndarray
    predictions: np.ndarray  # NaN where the model answered None
    sigma: np.ndarray  # NaN without a distribution
    seconds: np.ndarray  # wall clock of predict + learn
    cpu: np.ndarray  # thread CPU time of the same calls
    scored: np.ndarray  # bool
    score_from: int = 1
    warm: int = WARM
    with_dist: bool = False
    peer: bool = False
    model: Any = field(default=None, repr=False)

    @property
    def errors(self) -> np.ndarray:
        return np.where(self.scored, self.targets - self.predictions, np.nan)

    @property
    def missing(self) -> int:
        """Predictions that were ``None`` where the sample would have been scored."""
        return int(np.sum(np.isnan(self.predictions[self.score_from:])))

    def rmse(self, start: int = 0, stop: int | None = None) -> float:
        return rmse(self.errors[start:stop])

    def mae(self) -> float:
        e = self.errors[self.scored]
        return float(np.mean(np.abs(e))) if len(e) else math.nan

    def nmse(self, variance: float | None = None) -> float:
        """MSE over ``variance`` (default: the variance of the scored targets)."""
        y = self.targets[self.scored]
        var = float(np.var(y)) if variance is None else variance
        return self.rmse() ** 2 / var if len(y) and var > 0 else math.nan

    def coverage(self, start: int | None = None) -> float:
        return coverage(self.errors, self.sigma, self.warm if start is None else start)

    def latency(self, q: float = 50.0, cpu: bool = False) -> float:
        """µs of predict + learn: the ``q``-th percentile over the stream."""
        return float(np.percentile(self.cpu if cpu else self.seconds, q)) * 1e6

    def summary(self) -> dict[str, float | int | None]:
        out: dict[str, float | int | None] = {
            "rmse": self.rmse(), "mae": self.mae(), "nmse": self.nmse(),
            "scored": int(self.scored.sum()), "missing": self.missing,
            "us_median": self.latency(50), "us_p99": self.latency(99),
            "cpu_us_median": self.latency(50, cpu=True),
            "cpu_us_p99": self.latency(99, cpu=True)}
        out["coverage"] = self.coverage() if self.with_dist else None
        return {k: _finite(v) for k, v in out.items()}


def rmse(errors: np.ndarray) -> float:
    """Root mean square of the scored (non-NaN) errors; NaN if none is scored."""
    e = np.asarray(errors, dtype=float)
    e = e[~np.isnan(e)]
    return float(np.sqrt(np.mean(np.square(e)))) if len(e) else math.nan


def coverage(errors: np.ndarray, sigma: np.ndarray, start: int = WARM) -> float:
    """Share of the scored samples from ``start`` on whose error lies within ± 1.96 σ."""
    e, s = np.asarray(errors)[start:], np.asarray(sigma)[start:]
    keep = ~np.isnan(e) & ~np.isnan(s)
    return float(np.mean(np.abs(e[keep]) <= Z95 * s[keep])) if keep.any() else math.nan


Checkpoint = tuple[int, Callable[[int, Any], None]]


def _run_one(model: Model, data: Sequence[tuple[dict, float]], score_from: int,
             warm: int, checkpoint: Checkpoint | None = None) -> Run:
    """The loop itself, for one model; ``checkpoint = (k, f)`` calls ``f(samples, pipeline)``
    untimed after every k-th sample."""
    from river import preprocessing

    estimator = model.factory()
    pipeline = preprocessing.StandardScaler() | estimator if model.scale else estimator
    n = len(data)
    # Written in full now, so that the arrays' pages do not become resident during the
    # stream (stream_memory.py reads the process's memory between samples).
    targets, predictions, sigma, seconds, cpu = (np.full(n, np.nan) for _ in range(5))
    wall, thread = time.perf_counter, time.thread_time
    for i, (x, y) in enumerate(data):
        c0, w0 = thread(), wall()
        y_pred = pipeline.predict_one(x)
        w1, c1 = wall(), thread()
        if model.with_dist:  # untimed: see the module's docstring
            sigma[i] = pipeline.predict_one(x, with_dist=True).sigma
        c2, w2 = thread(), wall()
        pipeline.learn_one(x, y)
        w3, c3 = wall(), thread()
        seconds[i], cpu[i] = (w1 - w0) + (w3 - w2), (c1 - c0) + (c3 - c2)
        targets[i] = y
        if y_pred is not None:
            predictions[i] = y_pred
        if checkpoint is not None and (i + 1) % checkpoint[0] == 0:
            checkpoint[1](i + 1, pipeline)
    scored = ~np.isnan(predictions) & (np.arange(n) >= score_from)
    return Run(model.label, targets, predictions, sigma, seconds, cpu, scored, score_from,
               warm, model.with_dist, model.peer, estimator)


def progressive(data: Iterable[tuple[dict, float]], models: Sequence[Model], *,
                baselines: bool = True, score_from: int = 1, warm: int = WARM,
                verbose: bool = False, checkpoint: Checkpoint | None = None
                ) -> dict[str, Run]:
    """Progressive validation of every model on ``data``, one model after the other; the
    two baselines are added unless ``baselines=False``. ``score_from`` (at least 1: the
    first prediction precedes every target) is the first scored sample for every model;
    ``checkpoint = (k, f)`` calls ``f(samples, pipeline)`` after every k-th sample of every
    model, outside the timed calls (for readings such as memory)."""
    data = list(data)
    score_from = max(1, score_from)
    runs: dict[str, Run] = {}
    for model in [*models, *(BASELINES if baselines else ())]:
        started = time.perf_counter()
        runs[model.label] = _run_one(model, data, score_from, warm, checkpoint)
        if verbose:
            print(f"  {model.label}: {time.perf_counter() - started:.1f} s", flush=True)
    return runs


Target = str | tuple[str, ...]  # one target's name, or a multi-output model's names


def interleaved(xs: Sequence[dict], ys: dict[str, Sequence[float]],
                models: Sequence[tuple[Model, Target]], *, baselines: bool = True,
                score_from: int = 1, warm: int = WARM) -> dict[str, dict[str, Run]]:
    """Progressive validation of single- and multi-output models on one stream of several
    targets, the models interleaved sample by sample, so that a change of the machine's
    load falls on all of them alike: their times are comparable within the run.

    ``ys`` holds each target's values; each model comes with the target it learns (a name:
    ``learn_one(x, y)``, ``predict_one(x) -> float``) or the targets (a tuple of names: a
    river multi-target regressor, ``learn_one(x, {name: y})``, ``predict_one(x) -> dict``,
    ``predict_one(x, with_dist=True) -> {name: distribution}``). For every sample each model
    predicts (timed), answers ``with_dist=True`` if it has a distribution (untimed), and
    learns (timed), the models taking turns in an order rotated by one each sample (none is
    always first after the previous sample's cache traffic). The rules are ``progressive``'s:
    the first prediction is never scored, ``None`` (or a missing key) is missing, the running
    mean and the last target of each target run beside unless ``baselines=False``.

    Returns ``runs[target][label]``, each target's dict shaped as ``progressive``'s; a
    multi-output model is in every one of its targets' dicts, each ``Run`` holding that
    target's predictions and the whole model's time per sample (predict + learn for every
    target)."""
    from river import preprocessing

    names = list(ys)
    values = {name: np.asarray(ys[name], dtype=float) for name in names}
    n = len(xs)
    if any(len(v) != n for v in values.values()):
        raise ValueError("every target needs one value per row of xs")
    tasks = list(models)
    if baselines:
        tasks += [(m, name) for name in names for m in BASELINES]
    slots = []  # (model, targets, pipeline, estimator, per-target arrays, times, key)
    for model, target in tasks:
        estimator = model.factory()
        pipeline = (preprocessing.StandardScaler() | estimator if model.scale
                    else estimator)
        targets = (target,) if isinstance(target, str) else tuple(target)
        unknown = [t for t in targets if t not in values]
        if unknown:
            raise ValueError(f"{model.label}: no values for targets {unknown}")
        arrays = {t: (np.full(n, np.nan), np.full(n, np.nan)) for t in targets}
        slots.append((model, targets, pipeline, estimator, arrays,
                      (np.full(n, np.nan), np.full(n, np.nan)), isinstance(target, str)))
    wall, thread = time.perf_counter, time.thread_time
    rows = [{t: float(values[t][i]) for t in names} for i in range(n)]
    count = len(slots)
    for i, x in enumerate(xs):
        y_all = rows[i]
        for s in range(count):
            model, targets, pipeline, _, arrays, (seconds, cpu), single = \
                slots[(s + i) % count]
            y = y_all[targets[0]] if single else {t: y_all[t] for t in targets}
            c0, w0 = thread(), wall()
            y_pred = pipeline.predict_one(x)
            w1, c1 = wall(), thread()
            dist = pipeline.predict_one(x, with_dist=True) if model.with_dist else None
            c2, w2 = thread(), wall()
            pipeline.learn_one(x, y)
            w3, c3 = wall(), thread()
            seconds[i], cpu[i] = (w1 - w0) + (w3 - w2), (c1 - c0) + (c3 - c2)
            for t in targets:
                pred = y_pred if single else (y_pred or {}).get(t)
                if pred is not None:
                    arrays[t][0][i] = pred
                if dist is not None:
                    d = dist if single else dist.get(t)
                    if d is not None:
                        arrays[t][1][i] = d.sigma
    runs: dict[str, dict[str, Run]] = {name: {} for name in names}
    first = max(1, score_from)
    for model, targets, _, estimator, arrays, (seconds, cpu), _ in slots:
        for t in targets:
            predictions, sigma = arrays[t]
            scored = ~np.isnan(predictions) & (np.arange(n) >= first)
            runs[t][model.label] = Run(model.label, values[t], predictions, sigma, seconds,
                                       cpu, scored, first, warm, model.with_dist,
                                       model.peer, estimator)
    return runs


def best_peer(runs: dict[str, Run]) -> str | None:
    """The peer with the lowest RMSE (None if no peer ran)."""
    peers = [k for k, r in runs.items() if r.peer and math.isfinite(r.rmse())]
    return min(peers, key=lambda k: runs[k].rmse()) if peers else None


def ratios(runs: dict[str, Run], of: str, to: Iterable[str]) -> dict[str, float]:
    """RMSE of ``of`` over each named model's (and over the best peer's, as "best peer")."""
    out = {k: runs[of].rmse() / runs[k].rmse() for k in to if k in runs and k != of}
    best = best_peer(runs)
    if best is not None and of in runs:
        out[f"best peer ({best})"] = runs[of].rmse() / runs[best].rmse()
    return {k: _finite(v) for k, v in out.items()}


# -- tables and the results file ---------------------------------------------------------
def fmt(value: float | None, digits: int = 4) -> str:
    """A number for a table: ``digits`` significant digits, "—" for a missing value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}"


def percent(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{100 * value:.1f} %"


STANDARD_COLUMNS = ("RMSE", "MAE", "nMSE", "95 % coverage", "µs median", "µs p99", "missing")


def standard_rows(runs: dict[str, Run], columns: Sequence[str] = STANDARD_COLUMNS
                  ) -> list[list[str]]:
    """One row per model with the named columns (a subset of ``STANDARD_COLUMNS``)."""
    cell: dict[str, Callable[[Run], str]] = {
        "RMSE": lambda r: fmt(r.rmse()), "MAE": lambda r: fmt(r.mae()),
        "nMSE": lambda r: fmt(r.nmse()),
        "95 % coverage": lambda r: percent(r.coverage()) if r.with_dist else "—",
        "µs median": lambda r: f"{r.latency(50):.1f}",
        "µs p99": lambda r: f"{r.latency(99):.1f}",
        "CPU µs median": lambda r: f"{r.latency(50, cpu=True):.1f}",
        "CPU µs p99": lambda r: f"{r.latency(99, cpu=True):.1f}",
        "missing": lambda r: str(r.missing)}
    return [[label, *(cell[c](run) for c in columns)] for label, run in runs.items()]


def markdown(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _finite(value: Any) -> Any:
    """JSON has no NaN: a non-finite float becomes null."""
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    return value


def finite_tree(value: Any) -> Any:
    """``_finite`` through nested dicts and lists (a summary for the results file)."""
    if isinstance(value, dict):
        return {k: finite_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_tree(v) for v in value]
    if isinstance(value, np.bool_):
        return bool(value)
    return _finite(value)


def _git(*args: str) -> str:
    try:
        # (from the repository's root: the dirty check's paths are relative to it)
        return subprocess.run(["git", *args], cwd=BENCHMARKS.parent, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> dict[str, Any]:
    """What the numbers depend on: processor, cores, load, BLAS threads, versions."""
    import river

    import onlinesparse

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            model = next((line.split(":", 1)[1].strip() for line in info
                          if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "processor": model or platform.processor(),
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "river": river.__version__,
            "onlinesparse": getattr(onlinesparse, "__version__", ""),
            "load_average": [round(v, 2) for v in os.getloadavg()],
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}


class Report:
    """Prints a benchmark's tables and writes them, with the raw numbers, to its JSON file.

    ``doc=False`` tables are printed and stored but left out of docs/performance.md, which
    keeps that page short; the JSON holds everything."""

    def __init__(self, benchmark: str, description: str, parameters: dict[str, Any],
                 quick: bool = False, path: Path | None = None) -> None:
        self.started = time.perf_counter()
        self.path = path or (RESULTS / "quick" if quick else RESULTS) / f"{benchmark}.json"
        self.data: dict[str, Any] = {
            "benchmark": benchmark, "description": description,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "git_commit": _git("rev-parse", "--short=12", "HEAD"),
            # (only the code behind the numbers: an edited README does not change them)
            "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--",
                                   "onlinesparse", "benchmarks/*.py")),
            "machine": machine(), "parameters": parameters, "wall_time_s": None,
            "streams": {}, "tables": [], "notes": []}
        print(f"{benchmark}: {description}")
        print(f"machine: {self.data['machine']['cpus']} CPUs, load average "
              f"{self.data['machine']['load_average']}; commit {self.data['git_commit']}"
              + (" (with uncommitted changes)" if self.data["git_dirty"] else ""))

    def add_stream(self, title: str, runs: dict[str, Run], ours: str | None = None,
                   peers: Iterable[str] = (), **extra: Any) -> dict[str, Any]:
        """Store one stream's per-model numbers (and our ratios to ``peers``)."""
        entry: dict[str, Any] = {
            "samples": len(next(iter(runs.values())).targets),
            "models": {label: run.summary() for label, run in runs.items()}}
        if ours in runs:
            entry["ratios"] = ratios(runs, ours, [*peers, RUNNING_MEAN, LAST_TARGET])
        entry.update({k: _finite(v) for k, v in extra.items()})
        self.data["streams"][title] = entry
        return entry

    def stream(self, title: str, runs: dict[str, Run], ours: str | None = None,
               peers: Iterable[str] = (), columns: Sequence[str] = STANDARD_COLUMNS,
               doc: bool = True, **extra: Any) -> dict[str, Any]:
        """Store and print one stream's standard table and our ratios."""
        entry = self.add_stream(title, runs, ours, peers, **extra)
        n = entry["samples"]
        self.table(f"{title} ({n} samples)", ["model", *columns],
                   standard_rows(runs, columns), doc=doc)
        if entry.get("ratios"):
            self.note(f"{ours} RMSE / " + "; ".join(
                f"{k} {fmt(v, 3)}" for k, v in entry["ratios"].items()), table=True)
        return entry

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
              doc: bool = True) -> None:
        rows = [[str(c) for c in row] for row in rows]
        print(f"\n== {title} ==\n{markdown(columns, rows)}", flush=True)
        self.data["tables"].append({"title": title, "columns": list(columns), "rows": rows,
                                    "notes": [], "doc": doc})

    def note(self, text: str, table: bool = False) -> None:
        """A line printed after the tables; ``table=True`` attaches it to the last table."""
        print(text, flush=True)
        if table and self.data["tables"]:
            self.data["tables"][-1]["notes"].append(text)
        else:
            self.data["notes"].append(text)

    def write(self) -> Path:
        self.data["wall_time_s"] = round(time.perf_counter() - self.started, 1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=1, ensure_ascii=False) + "\n",
                             encoding="utf-8")
        print(f"\nwrote {self.path} (wall time {self.data['wall_time_s']} s)")
        return self.path


def add_common_args(parser: Any) -> None:
    """``--results PATH``: where the JSON goes (default benchmarks/results/<name>.json, or
    benchmarks/results/quick/ for a --quick run, which is not committed)."""
    parser.add_argument("--results", type=Path, default=None,
                        help="write the JSON results here instead of benchmarks/results/")
