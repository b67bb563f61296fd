"""Progressive-validation replay of a recording through a model: one model per target.

For every row: predict, score the prediction against the truth, then learn, exactly as if
the recording were live. Each target is one :class:`Job`, run by :func:`run_job` wherever it
runs (in this process, in a worker process, or on a Dask worker: see
:mod:`onlinesparse.parallel`); :func:`run_replay` runs all targets (in worker processes when
there are several), shows the progress bar, handles Ctrl-C and writes the outputs.

Stopping is cooperative: Ctrl-C only sets a flag that the replay loop reads between two
samples, so a model is never interrupted half-way through ``learn_one`` and the checkpoint
saved on the way out is consistent.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import queue as queue_module
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from onlinesparse.replay import models as registry
from onlinesparse.replay.checkpoint import load_checkpoint, save_checkpoint
from onlinesparse.replay.errors import ReplayError, ReplayFailure, UsageError
from onlinesparse.replay.metrics import LatencyHistogram, RegressionAccumulator, Trace, interval_z
from onlinesparse.replay.reader import Columns, Recording, open_recording

__all__ = [
    "ReplayConfig",
    "Job",
    "TargetResult",
    "ReplayOutcome",
    "StopFlag",
    "WorkerPool",
    "replay_target",
    "run_job",
    "run_replay",
    "write_outputs",
    "format_summary",
    "PREDICTION_COLUMNS",
]

#: Columns of a prediction record, in the spool and in the predictions file (plus ``target``).
PREDICTION_COLUMNS = ("row", "time", "truth", "mean", "std")
DIAGNOSTIC_KEYS = ("n_basis", "gcv", "noise_std", "effective_parameters")
MAX_CORRUPT_EXAMPLES = 100
EXIT_INTERRUPTED = 130


@dataclass
class ReplayConfig:
    """Everything a replay needs; the command line fills one of these.

    Parameters
    ----------
    recording
        Path of the CSV, Parquet or NPZ file.
    targets
        Target columns: one model each.
    features
        Feature columns or shell patterns; ``None`` for every other column.
    time
        Time column, or ``None``.
    model
        A name from :data:`onlinesparse.replay.models.MODELS`.
    model_params
        Constructor keywords for the model, already parsed.
    standardize
        Scale inputs with running, past-only statistics (river ``StandardScaler``).
    warmup
        Number of first samples of each target learned but not scored.
    interval
        Level of the central predictive interval whose coverage is measured.
    chunksize
        Rows read at a time.
    workers
        Worker processes for several targets; ``1`` runs in this process, ``None`` uses one
        per target up to the number of CPUs.
    strict
        Stop at the first corrupt row instead of skipping it.
    out
        Directory for predictions, metrics and report; ``None`` writes nothing.
    predictions_format
        ``"parquet"`` or ``"csv"``.
    checkpoint
        Checkpoint file (with several targets, one file per target beside it).
    every
        Save a checkpoint every this many rows (default 10 000 when ``checkpoint`` is set).
    resume
        Continue from ``checkpoint``.
    max_rows
        Stop after this many rows of the recording (a checkpoint lets a later run go on).
    diag_every
        Record the model's diagnostics every this many samples.
    progress
        Show the progress bar: ``None`` when standard error is a terminal.
    report
        Write the HTML report into ``out``.
    relevant
        Known relevant features per target (e.g. a simulation's ground truth), shown in the
        report.
    title
        Title of the report.

    """

    recording: Path
    targets: list[str]
    features: list[str] | None = None
    time: str | None = None
    model: str = "rbf"
    model_params: dict[str, Any] = field(default_factory=dict)
    standardize: bool = True
    warmup: int = 0
    interval: float = 0.95
    chunksize: int = 10_000
    workers: int | None = None
    strict: bool = False
    out: Path | None = None
    predictions_format: str = "parquet"
    checkpoint: Path | None = None
    every: int | None = None
    resume: bool = False
    max_rows: int | None = None
    diag_every: int = 100
    progress: bool | None = None
    report: bool = True
    relevant: dict[str, list[str]] | None = None
    title: str | None = None

    def check(self) -> None:
        """Raise :class:`UsageError` for option values out of range."""
        self.recording = Path(self.recording)
        checks = [
            (self.warmup >= 0, "--warmup must be 0 or more"),
            (0.0 < self.interval < 1.0, "--interval must be a level between 0 and 1, e.g. 0.95"),
            (self.chunksize >= 1, "--chunksize must be at least 1"),
            (self.workers is None or self.workers >= 1, "--workers must be at least 1"),
            (self.every is None or self.every >= 1, "--every must be at least 1"),
            (self.max_rows is None or self.max_rows >= 1, "--max-rows must be at least 1"),
            (self.diag_every >= 1, "--diag-every must be at least 1"),
            (self.predictions_format in ("parquet", "csv"), "--predictions-format: parquet or csv"),
            (not self.resume or self.checkpoint is not None, "--resume needs --checkpoint PATH"),
            (self.every is None or self.checkpoint is not None, "--every needs --checkpoint PATH"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(message)


@dataclass
class _TargetState:
    """What a checkpoint holds for one target: enough to continue bit for bit."""

    target: str
    model: Any
    acc: RegressionAccumulator
    latency: LatencyHistogram
    trace: Trace
    position: int = 0
    n_samples: int = 0
    n_corrupt: int = 0
    corrupt_examples: list[tuple[int, str]] = field(default_factory=list)
    n_nonfinite: int = 0
    spool_path: str | None = None
    n_predictions: int = 0
    elapsed: float = 0.0


@dataclass
class TargetResult:
    """How the replay of one target ended, and what it measured."""

    target: str
    status: str  # completed | stopped | interrupted | corrupt_row | model_error
    message: str | None
    metrics: dict[str, Any]
    latency: LatencyHistogram
    trace: Trace
    relevance: dict[str, float] | None
    relevance_source: str
    spool_path: str | None
    n_predictions: int
    checkpoint_path: str | None
    has_dist: bool
    section: Any = None  # the report's part for this target, drawn where the replay ran


@dataclass
class ReplayOutcome:
    """All targets' results, the exit code, and the files written."""

    results: list[TargetResult]
    exit_code: int
    columns: Columns
    out: Path | None = None
    metrics_path: Path | None = None
    predictions_path: Path | None = None
    report_path: Path | None = None
    elapsed: float = 0.0


class StopFlag:
    """Set by Ctrl-C (or a parent process); read by the replay loop between samples."""

    def __init__(self) -> None:
        self.requested = False


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "target"


def checkpoint_file(base: Path, target: str, targets: Sequence[str]) -> Path:
    """The checkpoint of ``target``: ``base`` itself for one target, else one file each.

    >>> checkpoint_file(Path("run.ckpt"), "emg", ["emg"]).name
    'run.ckpt'
    >>> checkpoint_file(Path("run.ckpt"), "emg 2", ["emg 1", "emg 2"]).name
    'run.emg_2.ckpt'

    """
    if len(targets) == 1:
        return base
    return base.with_name(f"{base.stem}.{_safe(target)}{base.suffix}")


def default_checkpoint(cfg: ReplayConfig) -> Path:
    """Where Ctrl-C saves when no ``--checkpoint`` was given."""
    if cfg.out is not None:
        return Path(cfg.out) / "checkpoint.pkl"
    return Path.cwd() / f"{cfg.recording.stem}.checkpoint.pkl"


def fingerprint(cfg: ReplayConfig, columns: Columns, target: str) -> dict[str, Any]:
    """The configuration a checkpoint must agree with to be resumed."""
    return {
        "target": target,
        "features": list(columns.features),
        "time": columns.time,
        "model": cfg.model,
        "model_params": dict(sorted(cfg.model_params.items())),
        "standardize": cfg.standardize,
        "warmup": cfg.warmup,
        "interval": cfg.interval,
        "diag_every": cfg.diag_every,
    }


class _Spool:
    """Predictions appended to a flat float64 file: (row, time, truth, mean, std) records.

    A fixed record size makes resuming exact: the file is truncated to the number of records
    the checkpoint knew about, whatever was written after it.
    """

    WIDTH = len(PREDICTION_COLUMNS)
    RECORD_BYTES = WIDTH * 8

    def __init__(self, path: Path, keep: int):
        path.parent.mkdir(parents=True, exist_ok=True)
        if keep:
            if not path.exists() or path.stat().st_size < keep * self.RECORD_BYTES:
                raise UsageError(
                    f"the predictions saved with the checkpoint ({path}) are missing or "
                    "shorter than the checkpoint; start again without --resume"
                )
            self.fh = open(path, "r+b")
            self.fh.truncate(keep * self.RECORD_BYTES)
            self.fh.seek(0, os.SEEK_END)
        else:
            self.fh = open(path, "wb")
        self.buffer: list[tuple[float, float, float, float, float]] = []

    def flush(self) -> None:
        if self.buffer:
            np.asarray(self.buffer, dtype=np.float64).tofile(self.fh)
            self.buffer.clear()
        self.fh.flush()

    def count(self) -> int:
        return self.fh.tell() // self.RECORD_BYTES

    def close(self) -> None:
        self.flush()
        self.fh.close()

    @classmethod
    def read(cls, path: str | Path | None, n: int) -> np.ndarray:
        """The first ``n`` records, memory-mapped (not loaded) when there are any."""
        if path is None or n == 0 or not Path(path).exists():
            return np.empty((0, cls.WIDTH))
        return np.memmap(path, dtype=np.float64, mode="r", shape=(n, cls.WIDTH))


def _fresh_state(cfg: ReplayConfig, target: str) -> _TargetState:
    return _TargetState(
        target=target,
        model=registry.build_model(cfg.model, cfg.model_params, cfg.standardize),
        acc=RegressionAccumulator(z=interval_z(cfg.interval)),
        latency=LatencyHistogram(),
        trace=Trace(every=cfg.diag_every),
    )


class _ModelRaised(Exception):
    """The model raised while predicting or learning ``row``; it may be half-updated."""

    def __init__(self, row: int, error: Exception):
        super().__init__(row, error)
        self.row = row
        self.error = error


def _diagnostics(model: Any) -> dict[str, float]:
    method = getattr(registry.last_step(model), "diagnostics", None)
    if not callable(method):
        return {}
    return {k: float(v) for k, v in dict(method()).items() if isinstance(v, int | float)}


def replay_target(
    cfg: ReplayConfig,
    columns: Columns,
    target: str,
    stop: StopFlag | None = None,
    notify: Callable[[str, Any], None] | None = None,
) -> TargetResult:
    """Replay the recording for one target: predict, score, learn, row by row.

    Parameters
    ----------
    cfg
        The replay's configuration.
    columns
        The resolved columns (:meth:`Recording.select`).
    target
        Which target column this model predicts.
    stop
        Checked between samples; when set, the replay saves a checkpoint and returns.
    notify
        Called with ``("progress", (target, rows, rmse))`` now and then and with
        ``("warn", message)`` for each of the first corrupt rows.

    """
    stop = stop or StopFlag()
    notify = notify or (lambda kind, payload: None)
    recording = open_recording(cfg.recording)
    explicit = (
        checkpoint_file(Path(cfg.checkpoint), target, cfg.targets) if cfg.checkpoint else None
    )
    fp = fingerprint(cfg, columns, target)
    state = load_checkpoint(explicit, fp) if cfg.resume else _fresh_state(cfg, target)

    if cfg.out is not None and state.spool_path is None:
        if state.n_predictions or state.position:
            raise UsageError(
                "this checkpoint was made by a replay without --out, so its earlier predictions "
                "were not kept; resume without --out, or start again without --resume"
            )
        index = cfg.targets.index(target)
        state.spool_path = str(
            (Path(cfg.out) / ".spool" / f"{index:02d}-{_safe(target)}.bin").resolve()
        )
    spool = _Spool(Path(state.spool_path), state.n_predictions) if state.spool_path else None

    model = state.model
    has_dist = registry.supports_with_dist(model)
    predict = model.predict_one
    learn = model.learn_one
    acc, latency, trace = state.acc, state.latency, state.trace
    record = spool.buffer.append if spool is not None else None
    names = list(columns.features)
    warmup, max_rows = cfg.warmup, cfg.max_rows
    every = cfg.every or (10_000 if explicit else None)
    next_save = (state.position // every + 1) * every if every else None
    status, message = "completed", None
    checkpoint_path: str | None = str(explicit) if explicit and explicit.exists() else None
    perf = time.perf_counter
    started = last_note = perf()
    elapsed_before = state.elapsed

    def save(path: Path) -> None:
        nonlocal checkpoint_path
        if spool is not None:
            spool.flush()
            state.n_predictions = spool.count()
        state.elapsed = elapsed_before + perf() - started
        save_checkpoint(path, fp, state)
        checkpoint_path = str(path)

    notify("progress", (target, state.position, acc.rmse))
    chunks = recording.iter_chunks(columns, target, cfg.chunksize, state.position)
    try:
        while status == "completed":
            try:
                chunk = next(chunks, None)
            except ReplayError:
                raise
            except Exception as exc:  # e.g. a Parquet page that fails to decode mid-file
                raise ReplayFailure(
                    f"reading {recording.path.name} failed after "
                    f"{recording.describe_row(state.position)}: {type(exc).__name__}: {exc}"
                ) from exc
            if chunk is None:
                break
            X, ys, ts = chunk.X.tolist(), chunk.y.tolist(), chunk.time.tolist()
            problems = chunk.problems
            for i, row in enumerate(chunk.rows.tolist()):
                if stop.requested:
                    status = "interrupted"
                    break
                if max_rows is not None and state.position >= max_rows:
                    status = "stopped"
                    break
                if problems and i in problems:
                    where = recording.describe_row(row)
                    if cfg.strict:
                        status = "corrupt_row"
                        message = f"corrupt {where}: {problems[i]} (--strict stops at corrupt rows)"
                        break
                    state.n_corrupt += 1
                    if len(state.corrupt_examples) < MAX_CORRUPT_EXAMPLES:
                        state.corrupt_examples.append((row, problems[i]))
                    if state.n_corrupt <= 10:
                        notify("warn", f"{target}: skipping corrupt {where}: {problems[i]}")
                    state.position = row + 1
                    continue

                # Progressive validation: predict, score, then learn.
                x = dict(zip(names, X[i], strict=True))
                y = ys[i]
                try:  # free unless it raises (Python ≥ 3.11)
                    t0 = perf()
                    out = predict(x, with_dist=True) if has_dist else predict(x)
                    t1 = perf()
                    if has_dist and hasattr(out, "mu"):
                        mu, sigma = float(out.mu), float(out.sigma)
                    else:
                        mu, sigma = float(out) if out is not None else math.nan, math.nan
                    scored = state.n_samples >= warmup
                    if not math.isfinite(mu):
                        state.n_nonfinite += 1
                        scored = False
                    elif scored:
                        acc.update(y, mu, sigma)
                    t2 = perf()
                    learn(x, y)
                    t3 = perf()
                    if trace.due():  # every diag_every samples, not every sample: it costs
                        trace.record(ts[i], _diagnostics(model))
                except Exception as exc:
                    raise _ModelRaised(row, exc) from exc
                if scored:
                    latency.add(((t1 - t0) + (t3 - t2)) * 1e6)
                state.n_samples += 1
                state.position = row + 1
                if record is not None:
                    record((row, ts[i], y, mu, sigma))
                if next_save is not None and state.position >= next_save:
                    save(explicit)
                    next_save += every
                if state.n_samples & 255 == 0 and perf() - last_note > 0.2:
                    notify("progress", (target, state.position, acc.rmse))
                    last_note = perf()
            if spool is not None:
                spool.flush()
    except _ModelRaised as raised:
        exc = raised.error
        status = "model_error"
        message = (
            f"the model raised {type(exc).__name__} at {recording.describe_row(raised.row)}: "
            f"{exc}"
        )

    if spool is not None:
        spool.flush()
        state.n_predictions = spool.count()
    # A checkpoint is saved whenever the model is consistent: not after it raised mid-update.
    if status == "interrupted":
        save(explicit or checkpoint_file(default_checkpoint(cfg), target, cfg.targets))
    elif explicit is not None and status != "model_error":
        save(explicit)
    if spool is not None:
        spool.close()
    state.elapsed = elapsed_before + perf() - started
    notify("progress", (target, state.position, acc.rmse))

    try:
        relevance, relevance_source = registry.input_relevance(model)
    except Exception as exc:  # a diagnostic must not lose the replay's results
        relevance, relevance_source = None, f"input_relevance() failed: {exc}"
    try:
        final_diag = _diagnostics(model)
    except Exception:
        final_diag = {}
    metrics = {
        "status": status,
        "message": message,
        "rows_read": state.position,
        "samples": state.n_samples,
        "warmup": min(warmup, state.n_samples),
        **acc.as_dict(),
        "interval": cfg.interval,
        "corrupt_rows": state.n_corrupt,
        "corrupt_examples": [
            {"row": r, "where": recording.describe_row(r), "reason": why}
            for r, why in state.corrupt_examples
        ],
        "nonfinite_predictions": state.n_nonfinite,
        "latency_us": latency.as_dict(),
        "rows_per_second": state.n_samples / state.elapsed if state.elapsed > 0 else None,
        "diagnostics": final_diag,
        "relevance_source": relevance_source,
        "checkpoint": checkpoint_path,
    }
    return TargetResult(
        target=target,
        status=status,
        message=message,
        metrics=metrics,
        latency=latency,
        trace=trace,
        relevance={str(k): v for k, v in relevance.items()} if relevance else None,
        relevance_source=relevance_source,
        spool_path=state.spool_path,
        n_predictions=state.n_predictions,
        checkpoint_path=checkpoint_path,
        has_dist=has_dist,
    )


# ---------------------------------------------------------------------------------------
# One job: one target of one replay


@dataclass
class Job:
    """One target of one replay: the unit of work, wherever it runs.

    It holds paths and settings only, never the data: the job opens the recording where it
    runs, so it is cheap to send to a worker process or to a Dask worker.

    Parameters
    ----------
    cfg
        The replay's configuration (``cfg.targets`` lists every target of the replay, which
        names the checkpoint and plot files of this one).
    target
        The target this job replays; one of ``cfg.targets``.
    columns
        The resolved columns when the caller has them already; ``None`` resolves them from
        the recording where the job runs.

    """

    cfg: ReplayConfig
    target: str
    columns: Columns | None = None


def run_job(
    job: Job,
    stop: StopFlag | None = None,
    notify: Callable[[str, Any], None] | None = None,
) -> TargetResult:
    """Run one job: replay its target and draw its part of the report.

    This is the only way a target is replayed: in this process, in a worker process of
    :class:`WorkerPool` and on a Dask worker (:mod:`onlinesparse.parallel`) alike, so every
    way of running gives the same result.

    Parameters
    ----------
    job
        What to replay.
    stop
        Checked between samples (see :func:`replay_target`).
    notify
        Receives progress and warnings (see :func:`replay_target`).

    """
    cfg = job.cfg
    columns = job.columns
    if columns is None:
        columns = open_recording(cfg.recording).select(cfg.targets, cfg.features, cfg.time)
    return _replay_and_render(
        cfg, columns, job.target, stop or StopFlag(), notify or (lambda kind, payload: None)
    )


# ---------------------------------------------------------------------------------------
# Worker processes


_WORKER_STOP = StopFlag()
_WORKER_QUEUE: Any = None


def _init_worker(event: Any, messages: Any) -> None:
    global _WORKER_QUEUE
    # Ctrl-C reaches every process of the terminal's group: the parent decides, the workers
    # only listen to its event, so none stops in the middle of a sample.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER_QUEUE = messages

    def watch() -> None:
        event.wait()
        _WORKER_STOP.requested = True

    threading.Thread(target=watch, daemon=True).start()


def _worker(job: Job) -> TargetResult:
    def notify(kind: str, payload: Any) -> None:
        _WORKER_QUEUE.put((kind, payload))

    return run_job(job, _WORKER_STOP, notify)


def _target_report(cfg: ReplayConfig, result: TargetResult):
    from onlinesparse.report import TargetReport

    return TargetReport(
        name=result.target,
        predictions=_Spool.read(result.spool_path, result.n_predictions),
        metrics=result.metrics,
        trace=result.trace,
        latency=result.latency,
        relevance=result.relevance,
        relevance_source=result.relevance_source,
        relevant=(cfg.relevant or {}).get(result.target),
        has_dist=result.has_dist,
    )


def _replay_and_render(
    cfg: ReplayConfig,
    columns: Columns,
    target: str,
    stop: StopFlag,
    notify: Callable[[str, Any], None],
) -> TargetResult:
    """Replay one target, then draw its plots where it ran (in parallel across workers)."""
    result = replay_target(cfg, columns, target, stop, notify)
    if cfg.out is not None and cfg.report:
        from onlinesparse.report import render_target

        result.section = render_target(
            _target_report(cfg, result),
            Path(cfg.out) / "plots",
            index=cfg.targets.index(target),
            interval=cfg.interval,
            warmup=cfg.warmup,
            time_label="time (s)" if columns.time else "row",
        )
    return result


# ---------------------------------------------------------------------------------------
# The whole replay


class _Progress:
    def __init__(self, cfg: ReplayConfig, recording: Recording, stream: TextIO):
        from tqdm import tqdm

        n_rows = recording.n_rows
        if n_rows is not None and cfg.max_rows is not None:
            n_rows = min(n_rows, cfg.max_rows)
        total = n_rows * len(cfg.targets) if n_rows is not None else None
        enabled = cfg.progress if cfg.progress is not None else stream.isatty()
        self.bar = tqdm(
            total=total,
            unit="row",
            unit_scale=True,
            file=stream,
            disable=not enabled,
            dynamic_ncols=True,
            desc=f"replay {cfg.model}",
            mininterval=0.2,
        )
        self.stream = stream
        self.done: dict[str, int] = {}
        self.rmse: dict[str, float] = {}

    def update(self, target: str, position: int, rmse: float) -> None:
        if target not in self.done:
            # The first message gives where this target starts (beyond 0 when resuming):
            # count those rows as done without letting them inflate the rate.
            self.done[target] = position
            if not self.bar.disable:
                self.bar.n += position
                self.bar.initial += position
                self.bar.last_print_n = self.bar.n
        previous = self.done[target]
        self.done[target] = position
        self.rmse[target] = rmse
        finite = [v for v in self.rmse.values() if math.isfinite(v)]
        if finite:
            label = "rmse" if len(self.rmse) == 1 else "mean rmse"
            self.bar.set_postfix_str(f"{label}={sum(finite) / len(finite):.4g}", refresh=False)
        self.bar.update(max(position - previous, 0))

    def write(self, text: str) -> None:
        from tqdm import tqdm

        tqdm.write(text, file=self.stream)  # clears and redraws the bar around the text

    def close(self) -> None:
        self.bar.close()


def run_replay(
    cfg: ReplayConfig, stream: TextIO | None = None, pool: WorkerPool | None = None
) -> ReplayOutcome:
    """Replay every target of ``cfg`` and write the outputs.

    Several targets run in worker processes (``cfg.workers``), in ``pool`` when one is given.
    A pool is any object with the methods of :class:`WorkerPool` that this function uses
    (``event.set()`` and ``run(cfg, columns, notify)``), such as
    :class:`onlinesparse.parallel.DaskPool`; a given pool is used even for one target.

    Returns the outcome whose ``exit_code`` is 0 (done), 1 (stopped by a corrupt row under
    ``strict`` or a model error) or 130 (interrupted; a checkpoint was saved). Usage
    problems raise :class:`UsageError` before anything runs.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, pandas as pd
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=300)
    >>> pd.DataFrame({"x": x, "y": 2 * x + 0.1 * rng.normal(size=300)}).to_csv(d / "r.csv")
    >>> cfg = ReplayConfig(d / "r.csv", targets=["y"], features=["x"], model="linear",
    ...                    model_params={"lr": 0.05}, warmup=50, workers=1)
    >>> outcome = run_replay(cfg)
    >>> outcome.exit_code, outcome.results[0].metrics["r2"] > 0.9
    (0, True)

    """
    stream = stream or sys.stderr
    cfg.check()
    started = time.perf_counter()
    recording = open_recording(cfg.recording)
    columns = recording.select(cfg.targets, cfg.features, cfg.time)
    # Build the model once here so that an unavailable model or a bad parameter is reported
    # before any worker starts.
    registry.build_model(cfg.model, cfg.model_params, cfg.standardize)
    if cfg.resume:
        for target in cfg.targets:
            load_checkpoint(
                checkpoint_file(Path(cfg.checkpoint), target, cfg.targets),
                fingerprint(cfg, columns, target),
            )
    if cfg.out is not None:
        Path(cfg.out).mkdir(parents=True, exist_ok=True)

    n_workers = cfg.workers or min(len(cfg.targets), os.cpu_count() or 1)
    n_workers = min(n_workers, len(cfg.targets))
    progress = _Progress(cfg, recording, stream)
    stop = StopFlag()
    worker_events: list[Any] = []

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True
        for event in worker_events:
            event.set()
        progress.write(
            "Interrupted: saving a checkpoint at the current row "
            "(press Ctrl-C again to quit without saving)…"
        )

    def notify(kind: str, payload: Any) -> None:
        if kind == "progress":
            progress.update(*payload)
        elif kind == "warn":
            progress.write(f"warning: {payload}")

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.signal(signal.SIGINT, on_sigint) if in_main_thread else None
    try:
        with _single_threaded_blas():
            if pool is not None:
                worker_events.append(pool.event)
                results = pool.run(cfg, columns, notify)
            elif n_workers <= 1:
                results = [run_job(Job(cfg, t, columns), stop, notify) for t in cfg.targets]
            else:
                with WorkerPool(n_workers) as own:
                    worker_events.append(own.event)
                    results = own.run(cfg, columns, notify)
    finally:
        progress.close()
        if previous_handler is not None:
            signal.signal(signal.SIGINT, previous_handler)

    outcome = write_outputs(cfg, columns, results, recording)
    outcome.elapsed = time.perf_counter() - started
    return outcome


def write_outputs(
    cfg: ReplayConfig,
    columns: Columns,
    results: list[TargetResult],
    recording: Recording | None = None,
) -> ReplayOutcome:
    """The outcome of ``results``; with ``cfg.out``, also its predictions, metrics and report.

    Parameters
    ----------
    cfg
        The replay's configuration.
    columns
        The resolved columns.
    results
        One result per target, in the order of ``cfg.targets``.
    recording
        The opened recording (opened again from ``cfg.recording`` when not given).

    """
    outcome = ReplayOutcome(results, _exit_code(results), columns, cfg.out)
    if cfg.out is not None:
        _write_outputs(cfg, columns, recording or open_recording(cfg.recording), outcome)
    return outcome


_BLAS_THREAD_VARIABLES = (
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
)


@contextlib.contextmanager
def _single_threaded_blas() -> Iterator[None]:
    """One BLAS thread in this process (if threadpoolctl is installed) and in the workers
    it spawns (through the environment they inherit), unless the user chose otherwise.

    A replay does many tiny matrix operations per sample; threaded BLAS only adds
    synchronisation to each, and worker processes' threads compete for the same cores
    (lin1 measured about 5x slower per sample with two threaded workers on two cores).
    """
    saved = {k: os.environ.get(k) for k in _BLAS_THREAD_VARIABLES}
    for key in _BLAS_THREAD_VARIABLES:
        os.environ.setdefault(key, "1")
    limits = contextlib.nullcontext()
    if saved["OMP_NUM_THREADS"] is None and saved["OPENBLAS_NUM_THREADS"] is None:
        try:
            from threadpoolctl import threadpool_limits

            limits = threadpool_limits(1, user_api="blas")
        except ImportError:  # optional: without it only the workers are pinned
            pass
    try:
        with limits:
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class WorkerPool:
    """Spawned worker processes, with the stop event and message queue they listen to.

    Spawned rather than forked: the parent may hold pyarrow's and BLAS's threads, which a
    fork would copy in an unknown state. Starting one costs the imports of numpy, pandas,
    river and the models in every worker, so several replays (the demo's models) can share
    one pool: pass it to :func:`run_replay`. Use it as a context manager.
    """

    def __init__(self, n_workers: int):
        context = multiprocessing.get_context("spawn")
        self.n_workers = n_workers
        self.event = context.Event()
        self.messages = context.Queue()
        self.executor = ProcessPoolExecutor(
            n_workers, mp_context=context, initializer=_init_worker,
            initargs=(self.event, self.messages),
        )

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def run(
        self, cfg: ReplayConfig, columns: Columns, notify: Callable[[str, Any], None]
    ) -> list[TargetResult]:
        """One target per task; the workers' messages feed ``notify``."""
        futures = {
            self.executor.submit(_worker, Job(cfg, t, columns)): t for t in cfg.targets
        }
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            _drain(self.messages, notify)
        _drain(self.messages, notify)
        by_target = {futures[f]: f.result() for f in futures}
        return [by_target[t] for t in cfg.targets]


def _drain(messages: Any, notify: Callable[[str, Any], None]) -> None:
    while True:
        try:
            kind, payload = messages.get_nowait()
        except queue_module.Empty:
            return
        notify(kind, payload)


def _exit_code(results: Sequence[TargetResult]) -> int:
    statuses = {r.status for r in results}
    if statuses & {"corrupt_row", "model_error"}:
        return 1
    if "interrupted" in statuses:
        return EXIT_INTERRUPTED
    return 0


def _overall_status(results: Sequence[TargetResult]) -> str:
    for status in ("model_error", "corrupt_row", "interrupted", "stopped"):
        if any(r.status == status for r in results):
            return status
    return "completed"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    return value


def _write_predictions(path: Path, fmt: str, results: Sequence[TargetResult]) -> None:
    """Concatenate the spools into one file, a block at a time (constant memory)."""
    import pandas as pd

    block = 1 << 16
    tmp = path.with_name(f".{path.name}.tmp")
    writer = None
    wrote_header = False
    try:
        for result in results:
            data = _Spool.read(result.spool_path, result.n_predictions)
            for lo in range(0, max(len(data), 1), block):
                part = np.asarray(data[lo : lo + block])
                frame = pd.DataFrame(part, columns=list(PREDICTION_COLUMNS))
                frame["row"] = frame["row"].astype("int64")
                frame.insert(0, "target", pd.Series([result.target] * len(frame), dtype=object))
                if fmt == "csv":
                    frame.to_csv(tmp, mode="a" if wrote_header else "w", header=not wrote_header,
                                 index=False)
                    wrote_header = True
                else:
                    import pyarrow as pa
                    import pyarrow.parquet as pq

                    table = pa.Table.from_pandas(frame, preserve_index=False).cast(
                        pa.schema([("target", pa.string()), ("row", pa.int64())]
                                  + [(c, pa.float64()) for c in PREDICTION_COLUMNS[1:]])
                    )
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, table.schema)
                    writer.write_table(table)
        if writer is not None:
            writer.close()
            writer = None
        os.replace(tmp, path)
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)


def _write_outputs(
    cfg: ReplayConfig, columns: Columns, recording: Recording, outcome: ReplayOutcome
) -> None:
    out = Path(cfg.out)
    results = outcome.results
    suffix = "parquet" if cfg.predictions_format == "parquet" else "csv"
    outcome.predictions_path = out / f"predictions.{suffix}"
    _write_predictions(outcome.predictions_path, cfg.predictions_format, results)

    summary = {
        "recording": str(cfg.recording),
        "format": recording.format,
        "status": _overall_status(results),
        "model": cfg.model,
        "model_params": cfg.model_params,
        "standardize": cfg.standardize,
        "warmup": cfg.warmup,
        "interval": cfg.interval,
        "time": columns.time,
        "features": columns.features,
        "predictions": outcome.predictions_path.name,
        "targets": {r.target: {**r.metrics, "relevance": r.relevance} for r in results},
    }
    outcome.metrics_path = out / "metrics.json"
    tmp = out / ".metrics.json.tmp"
    tmp.write_text(json.dumps(_json_safe(summary), indent=2, allow_nan=False))
    os.replace(tmp, outcome.metrics_path)

    if cfg.report:
        from onlinesparse.report import write_report

        outcome.report_path = write_report(
            out,
            [r.section if r.section is not None else _target_report(cfg, r) for r in results],
            summary=summary,
            title=cfg.title or f"onlinesparse replay: {cfg.recording.name} through {cfg.model}",
            warmup=cfg.warmup,
            time_label="time (s)" if columns.time else "row",
        )

    # The spool is the part of a checkpoint that lives in --out: keep it while a checkpoint
    # may be resumed, remove it otherwise.
    for r in results:
        if r.checkpoint_path is None and r.spool_path:
            Path(r.spool_path).unlink(missing_ok=True)
    spool_dir = out / ".spool"
    if spool_dir.exists() and not any(spool_dir.iterdir()):
        spool_dir.rmdir()


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _fmt_us(value: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def format_summary(outcome: ReplayOutcome, cfg: ReplayConfig) -> str:
    """The table the command prints at the end of a replay."""
    header = ["target", "MAE", "RMSE", "nMSE", "R²", f"cover {cfg.interval:.0%}",
              "µs med", "µs p99", "scored", "skipped"]
    rows = [header]
    for r in outcome.results:
        m = r.metrics
        lat = m["latency_us"]
        rows.append([
            r.target, _fmt(m["mae"]), _fmt(m["rmse"]), _fmt(m["nmse"]), _fmt(m["r2"]),
            _fmt(m["coverage"], 3) if r.has_dist else "n/a",
            _fmt_us(lat["median"]), _fmt_us(lat["p99"]), str(m["n_scored"]),
            str(m["corrupt_rows"]),
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
