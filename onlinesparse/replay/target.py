"""One target of a replay: progressive validation (predict, score, learn) row by row.

Each target is one :class:`~onlinesparse.replay.config.Job`, run by :func:`run_job` wherever
it runs (in this process, in a worker process of :mod:`~onlinesparse.replay.pool`, or on a
Dask worker: :mod:`~onlinesparse.replay.cluster`), so every way of running gives the same
result. Its state (model, accumulators, position) is what a checkpoint holds, so a resumed
replay continues bit for bit.

Stopping is cooperative: Ctrl-C only sets a flag that the loop reads between two samples, so
a model is never interrupted half-way through ``learn_one`` and the checkpoint saved on the
way out is consistent. A failed write, a failed read or a model that raises ends only its
target, with a status and a message (``docs/replay_failures.md``).
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from onlinesparse.replay import models as registry
from onlinesparse.replay.checkpoint import (
    load_checkpoint,
    recording_fingerprint,
    save_checkpoint,
)
from onlinesparse.replay.collector import RowCollector
from onlinesparse.replay.config import (
    MAX_CORRUPT_EXAMPLES,
    Job,
    ReplayConfig,
    StopFlag,
    TargetResult,
)
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.metrics import (
    DIVERGED_NMSE,
    LatencyHistogram,
    RegressionAccumulator,
    Trace,
    interval_z,
)
from onlinesparse.replay.outputs import _os_reason, _Spool, _target_report
from onlinesparse.replay.reader import DEFAULT_BIN_MS, VALUE_BOUND, Columns, open_recording
from onlinesparse.replay.stream_checks import RecordingChecks
from onlinesparse.replay.summary import diagnostics as _diagnostics
from onlinesparse.replay.summary import summarise as _summarise

__all__ = [
    "replay_target",
    "why_nothing_scored",
    "diverged_message",
    "run_job",
    "lost_result",
    "checkpoint_file",
    "default_checkpoint",
    "fingerprint",
    "load_resumable",
]


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
    cpu_latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    deadline_misses: int = 0
    # Slowest sample (wall-clock and CPU µs) since the trace's last point: latency over time.
    window_wall: float = 0.0
    window_cpu: float = 0.0
    # µs of each garbage collection run between rows, outside the timed calls.
    gc_pauses: LatencyHistogram = field(default_factory=LatencyHistogram)
    # The replay reached the end of the recording: nothing is left to resume.
    finished: bool = False
    n_imputed: int = 0  # rows predicted and learned with a feature left to the model
    n_unlearned: int = 0  # rows predicted without a target: not scored, not learned
    # Rows of a model shared with other targets scored for this target but learned by none:
    # another target lacked its value (onlinesparse.replay.shared).
    n_partial: int = 0
    # The streaming recording checks (stuck channels, duplicated rows, timestamps, missing
    # values) of the rows replayed so far: a resumed replay checks the rest.
    checks: RecordingChecks | None = None


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
        # Only when they differ from what checkpoints made before them meant: those resume.
        **({"missing": cfg.missing} if cfg.missing != "drop" else {}),
        **({"bin_ms": cfg.bin_ms or DEFAULT_BIN_MS}
           if Path(cfg.recording).suffix.lower() == ".nwb" else {}),
    }


def _fresh_state(cfg: ReplayConfig, target: str) -> _TargetState:
    return _TargetState(
        target=target,
        model=registry.build_model(cfg.model, cfg.model_params, cfg.standardize),
        acc=RegressionAccumulator(z=interval_z(cfg.interval)),
        latency=LatencyHistogram(),
        trace=Trace(every=cfg.diag_every),
    )


def load_resumable(
    path: Path, fp: dict[str, Any], recording_fp: dict[str, Any]
) -> _TargetState:
    """The state saved at ``path`` (see :func:`~onlinesparse.replay.checkpoint.load_checkpoint`),
    refused when that replay had already reached the end of its recording.

    A finished replay's predictions live in its predictions file, not in a spool, so a
    resume would have nothing to continue and nothing to write them from.
    """
    state = load_checkpoint(path, fp, recording_fp)
    if getattr(state, "finished", False):
        raise UsageError(
            f"nothing to resume: the replay saved in {path} ran to the end of the recording "
            f"({state.position} rows) and wrote its outputs then; drop --resume to replay it "
            "again"
        )
    return state


class _WriteFailed(Exception):
    """Writing the spool or a checkpoint failed (disk full, file system gone read-only)."""


class _ModelRaised(Exception):
    """The model raised while predicting or learning ``row``; it may be half-updated."""

    def __init__(self, row: int, error: Exception):
        super().__init__(row, error)
        self.row = row
        self.error = error


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
    return _TargetRun(cfg, columns, target, stop or StopFlag(),
                      notify or (lambda kind, payload: None)).run()


class _Run:
    """What every replay in progress has, of one target or of a shared model: the recording,
    the checkpoint it saves (and when), the spools it writes, the clock, and the way a
    fault ends it. A subclass sets ``self.state`` (whose ``position``, ``n_samples``,
    ``latency``, ``cpu_latency``, ``deadline_misses`` and ``elapsed`` this uses), then calls
    :meth:`_start_clock`."""

    state: Any

    def __init__(self, cfg: ReplayConfig, columns: Columns, stop: StopFlag,
                 notify: Callable[[str, Any], None], explicit: Path | None,
                 fp: dict[str, Any]):
        self.cfg, self.columns = cfg, columns
        self.stop, self.notify = stop, notify
        self.recording = open_recording(cfg.recording, cfg.bin_ms)
        self.explicit = explicit
        self.fp = fp
        # Read (2 MiB) when a checkpoint is loaded or first saved, not for every replay.
        self._recording_fp: dict[str, Any] | None = None
        self.status, self.message = "completed", None

    def _start_clock(self) -> None:
        """Checkpoint schedule, warm-up, then the clock (once ``self.state`` is set)."""
        self.every = self.cfg.every or (10_000 if self.explicit else None)
        position = self.state.position
        self.next_save = (position // self.every + 1) * self.every if self.every else None
        self.checkpoint_path: str | None = (
            str(self.explicit) if self.explicit and self.explicit.exists() else None
        )
        # Before the clock starts: the first samples would otherwise time the loading or
        # compiling of the model's code (0.45 s on the first sample of an RBF replay).
        self.warm_up_s = self._warm_up()
        self.started = self.last_note = time.perf_counter()
        self.elapsed_before = self.state.elapsed

    def _warm_up(self) -> float:
        raise NotImplementedError

    def _replay_rows(self) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError

    def _progress(self) -> None:
        raise NotImplementedError

    def _any_scored(self) -> bool:
        raise NotImplementedError

    @property
    def recording_fp(self) -> dict[str, Any]:
        if self._recording_fp is None:
            self._recording_fp = recording_fingerprint(self.cfg.recording)
        return self._recording_fp

    def _open_spool(self, holder: Any, index: int, target: str) -> _Spool | None:
        """The spool of ``target`` (the ``index``-th of the replay) whose counts ``holder``
        keeps (a target's state)."""
        cfg = self.cfg
        if cfg.out is not None and holder.spool_path is None:
            if holder.n_predictions or holder.position:
                raise UsageError(
                    "this checkpoint was made by a replay without --out, so its earlier "
                    "predictions were not kept; resume without --out, or start again without "
                    "--resume"
                )
            holder.spool_path = str(
                (Path(cfg.out) / ".spool" / f"{index:02d}-{_safe(target)}.bin").resolve()
            )
        return _Spool(Path(holder.spool_path), holder.n_predictions) if holder.spool_path else None

    def save(self, path: Path) -> None:
        """Checkpoint the state (with the spools flushed to match) at ``path``."""
        state = self.state
        self.flush()
        state.elapsed = self.elapsed_before + time.perf_counter() - self.started
        try:
            save_checkpoint(path, self.fp, state, self.recording_fp)
        except OSError as exc:
            raise _WriteFailed(f"saving the checkpoint {path} failed: {_os_reason(exc)}") from exc
        except UsageError as exc:  # e.g. a key others can read: the run goes on unsaved
            raise _WriteFailed(f"saving the checkpoint {path} failed: {exc}") from exc
        self.checkpoint_path = str(path)

    @staticmethod
    def _flush_spool(spool: _Spool, holder: Any) -> None:
        """Write the spooled predictions; ``holder`` then counts exactly those on disk."""
        try:
            spool.flush()
        except OSError as exc:
            raise _WriteFailed(
                f"writing predictions to {spool.fh.name} failed: {_os_reason(exc)}"
            ) from exc
        holder.n_predictions = spool.count()

    @staticmethod
    def _close_spool(spool: _Spool, holder: Any) -> None:
        try:
            spool.close()
        except OSError:  # already reported as a write_error; keep the records on disk
            spool.buffer.clear()
            with contextlib.suppress(OSError):
                spool.fh.close()
        with contextlib.suppress(OSError):  # what reached the disk, whole records only
            holder.n_predictions = min(holder.n_predictions, _Spool.records_in(
                holder.spool_path))

    def _run_rows(self, interrupted_to: Path) -> None:
        """Replay the rows, then save where the replay ended (``interrupted_to`` when
        Ctrl-C stopped it without ``--checkpoint``); a fault sets the status."""
        try:
            self._replay_rows()
        except _ModelRaised as raised:
            exc = raised.error
            self.status = "model_error"
            self.message = (
                f"the model raised {type(exc).__name__} at "
                f"{self.recording.describe_row(raised.row)}: {exc}"
            )
        except _WriteFailed as failed:
            self.status, self.message = "write_error", str(failed)
        if self.status == "completed" and not self._any_scored():
            self.status, self.message = "nothing_scored", self._why_nothing_scored()
        try:
            self._finish(interrupted_to)
        except _WriteFailed as failed:
            self.status, self.message = "write_error", str(failed)

    def _finish(self, interrupted_to: Path) -> None:
        if self.status == "write_error":
            return  # the disk refused: another write would fail the same way
        self.flush()
        # A checkpoint is saved whenever the model is consistent: not after it raised
        # mid-update.
        if self.status == "interrupted":
            self.save(self.explicit or interrupted_to)
        elif self.explicit is not None and self.status != "model_error":
            self.save(self.explicit)

    def _read_failed(self, exc: Exception) -> None:
        self.status = "read_error"
        self.message = (
            f"reading {self.recording.path.name} failed after "
            f"{self.recording.describe_row(self.state.position)}: {type(exc).__name__}: {exc}"
        )

    def _time(self, wall: float, cpu: float) -> None:
        """Count one timed sample (row)."""
        state = self.state
        state.latency.add(wall)
        state.cpu_latency.add(cpu)
        if self.cfg.budget_us is not None and wall > self.cfg.budget_us:
            state.deadline_misses += 1

    def _after_row(self) -> None:
        """The periodic checkpoint and progress note after a row."""
        state = self.state
        if self.next_save is not None and state.position >= self.next_save:
            self.save(self.explicit)
            self.next_save += self.every
        if state.n_samples & 255 == 0 and time.perf_counter() - self.last_note > 0.2:
            self._progress()
            self.last_note = time.perf_counter()


class _TargetRun(_Run):
    """One target's replay in progress: its state, its spool and its checkpoints."""

    def __init__(
        self,
        cfg: ReplayConfig,
        columns: Columns,
        target: str,
        stop: StopFlag,
        notify: Callable[[str, Any], None],
    ):
        self.target = target
        explicit = (checkpoint_file(Path(cfg.checkpoint), target, cfg.targets)
                    if cfg.checkpoint else None)
        super().__init__(cfg, columns, stop, notify, explicit, fingerprint(cfg, columns, target))
        state = (load_resumable(self.explicit, self.fp, self.recording_fp) if cfg.resume
                 else _fresh_state(cfg, target))
        # A checkpoint written before the CPU timing existed lacks its fields: they start
        # here (the CPU histogram then covers the samples after the resume).
        for name, default in (("cpu_latency", LatencyHistogram), ("deadline_misses", int),
                              ("window_wall", float), ("window_cpu", float),
                              ("gc_pauses", LatencyHistogram), ("finished", bool),
                              ("n_imputed", int), ("n_unlearned", int)):
            if not hasattr(state, name):
                setattr(state, name, default())
        if getattr(state, "checks", None) is None and not state.position:
            state.checks = RecordingChecks.for_target(
                columns.features, target, columns.time, target == cfg.targets[0],
                self.recording.n_rows)
        self.state: _TargetState = state
        self.spool = self._open_spool(state, cfg.targets.index(target), target)
        self.has_dist = registry.supports_with_dist(state.model)
        self._start_clock()

    def _warm_up(self, rows: int = 200) -> float:
        """Drive a clone of the model through the first rows (see
        :func:`~onlinesparse.replay.models.warm_up_model`); seconds taken."""
        try:
            chunk = next(self.recording.iter_chunks(self.columns, self.target, rows, 0), None)
            good = [] if chunk is None else [i for i in range(len(chunk))
                                             if i not in chunk.problems]
            names = list(self.columns.features)
            xs = [dict(zip(names, chunk.X[i].tolist(), strict=True)) for i in good]
            ys = [float(chunk.y[i]) for i in good]
            return registry.warm_up_model(self.state.model, xs, ys)
        except Exception:  # noqa: BLE001 - the replay itself reports what is wrong, row by row
            return 0.0

    def flush(self) -> None:
        """Write the spooled predictions; the state then counts exactly those on disk."""
        if self.spool is not None:
            self._flush_spool(self.spool, self.state)

    def _progress(self) -> None:
        self.notify("progress", (self.target, self.state.position, self.state.acc.rmse))

    def _any_scored(self) -> bool:
        return self.state.acc.n > 0

    def run(self) -> TargetResult:
        """Replay every row (or until stopped), checkpoint, and sum up."""
        state = self.state
        self._progress()
        try:
            self._run_rows(checkpoint_file(default_checkpoint(self.cfg), self.target,
                                           self.cfg.targets))
        finally:
            if self.spool is not None:
                self._close_spool(self.spool, self.state)
        if self.status in ("completed", "stopped") and state.acc.diverged:
            self.status, self.message = "diverged", diverged_message(state.acc)
        state.elapsed = self.elapsed_before + time.perf_counter() - self.started
        self._progress()
        return self._result()

    def _why_nothing_scored(self) -> str:
        return why_nothing_scored(self.cfg, self.state, self.recording.path.name)

    def _replay_rows(self) -> None:
        chunks = self.recording.iter_chunks(
            self.columns, self.target, self.cfg.chunksize, self.state.position, self.cfg.missing
        )
        with RowCollector(self.state.gc_pauses) as collector:
            while self.status == "completed":
                try:
                    chunk = next(chunks, None)
                except ReplayError:
                    raise
                except Exception as exc:  # e.g. a Parquet page that fails to decode mid-file
                    self._read_failed(exc)
                    return
                if chunk is None:
                    self.state.finished = True
                    break
                self._replay_chunk(chunk, collector)
                if self.state.checks is not None:  # the rows replayed: a resume checks the rest
                    self.state.checks.update_chunk(chunk, self.state.position)
                self.flush()

    def _skip_corrupt(self, row: int, reason: str) -> None:
        """Count a corrupt row, or stop there under ``--strict``."""
        state = self.state
        where = self.recording.describe_row(row)
        if self.cfg.strict:
            self.status = "corrupt_row"
            self.message = f"corrupt {where}: {reason} (--strict stops at corrupt rows)"
            return
        state.n_corrupt += 1
        if len(state.corrupt_examples) < MAX_CORRUPT_EXAMPLES:
            state.corrupt_examples.append((row, reason))
        if state.n_corrupt <= 10:
            self.notify("warn", f"{self.target}: skipping corrupt {where}: {reason}")
        state.position = row + 1

    def _replay_chunk(self, chunk: Any, collector: RowCollector) -> None:
        """Predict, score and learn each row of ``chunk``; the garbage collector runs between
        rows, never inside the timed calls."""
        state, stop, cfg = self.state, self.stop, self.cfg
        names, max_rows = list(self.columns.features), cfg.max_rows
        X, ys, ts = chunk.X.tolist(), chunk.y.tolist(), chunk.time.tolist()
        problems = chunk.problems
        # (NaN is a gap only under --missing impute: under drop such rows are problems)
        gaps_x = set(np.flatnonzero(np.isnan(chunk.X).any(axis=1)).tolist())
        gaps_y = set(np.flatnonzero(np.isnan(chunk.y)).tolist())
        for i, row in enumerate(chunk.rows.tolist()):
            if stop.requested:
                self.status = "interrupted"
                return
            if max_rows is not None and state.position >= max_rows:
                self.status = "stopped"
                return
            if problems and i in problems:
                self._skip_corrupt(row, problems[i])
                if self.status != "completed":
                    return
                continue
            x = dict(zip(names, X[i], strict=True))
            if gaps_x and i in gaps_x:  # absent from the dict, the feature is imputed
                x = {k: v for k, v in x.items() if v == v}
                state.n_imputed += 1
            self._replay_row(row, x, ys[i], ts[i], learns=not (gaps_y and i in gaps_y))
            collector.between_rows()

    def _replay_row(self, row: int, x: dict[str, float], y: float, t: float,
                    learns: bool = True) -> None:
        """Progressive validation of one row: predict, score, then learn, the two model
        calls timed in wall-clock and in the thread's CPU time. A row without its target
        (``learns`` false) is predicted and timed but neither scored nor learned."""
        state, model = self.state, self.state.model
        perf, cpu_ns = time.perf_counter, time.thread_time_ns
        try:  # free unless it raises (Python ≥ 3.11)
            c0 = cpu_ns()
            t0 = perf()
            out = model.predict_one(x, with_dist=True) if self.has_dist else model.predict_one(x)
            t1 = perf()
            if self.has_dist and hasattr(out, "mu"):
                mu, sigma = float(out.mu), float(out.sigma)
            else:
                mu, sigma = float(out) if out is not None else math.nan, math.nan
            timed = state.n_samples >= self.cfg.warmup
            scored = timed and learns
            if not abs(mu) <= VALUE_BOUND:  # NaN, ±inf, or a square that would overflow
                state.n_nonfinite += 1
                timed = scored = False
            elif scored:
                state.acc.update(y, mu, sigma)
            t2 = perf()
            if learns:
                model.learn_one(x, y)
            t3 = perf()
            # The thread's own CPU time: what the model cost, whatever else the machine ran
            # meanwhile (it also spans the scoring and the clock reads, ~2 µs).
            cpu = (cpu_ns() - c0) * 1e-3
            wall = ((t1 - t0) + (t3 - t2)) * 1e6
            self._trace(t, wall, cpu)
        except Exception as exc:
            raise _ModelRaised(row, exc) from exc
        if timed:
            self._time(wall, cpu)
        if learns:
            state.n_samples += 1
        else:
            state.n_unlearned += 1
        state.position = row + 1
        if self.spool is not None:
            self.spool.buffer.append((row, t, y, mu, sigma))
        self._after_row()

    def _trace(self, t: float, wall: float, cpu: float) -> None:
        """Keep the slowest sample since the trace's last point; every ``diag_every``
        samples (not every sample: it costs) record it with the model's diagnostics."""
        state = self.state
        state.window_wall = max(state.window_wall, wall)
        state.window_cpu = max(state.window_cpu, cpu)
        if state.trace.due():
            values = _diagnostics(state.model)
            values["latency_max_us"], values["cpu_max_us"] = state.window_wall, state.window_cpu
            state.window_wall = state.window_cpu = 0.0
            state.trace.record(t, values)

    def _result(self) -> TargetResult:
        result = _summarise(self.cfg, self.state, self.status, self.message, self.recording,
                            self.checkpoint_path, self.has_dist)
        result.metrics["warm_up_s"] = self.warm_up_s
        return result


def why_nothing_scored(cfg: ReplayConfig, state: Any, name: str) -> str:
    """Why a target's replay (its state ``state``, of recording ``name``) scored nothing."""
    if state.n_samples == 0 and state.n_corrupt == 0:
        return f"nothing was scored: {name} has no rows to replay"
    if state.n_samples == 0:
        from onlinesparse.replay.checks import corrupt_column_hint

        hint = corrupt_column_hint([why for _, why in state.corrupt_examples], cfg.targets)
        return (f"nothing was scored: all {state.n_corrupt} rows of {name} are corrupt"
                + (f"; {hint}" if hint else ""))
    if state.n_samples <= cfg.warmup:
        return (f"nothing was scored: all {state.n_samples} samples were in the warm-up "
                f"(--warmup {cfg.warmup})")
    return (f"nothing was scored: every one of the {state.n_nonfinite} predictions was "
            "non-finite")


def diverged_message(acc: RegressionAccumulator) -> str:
    """Why a replay whose accumulator ``acc`` diverged is said to have."""
    return (f"the model diverged: nMSE {acc.nmse:.3g} over {acc.n} scored samples (a replay "
            f"diverges when its nMSE is above {DIVERGED_NMSE:g} or not finite); its "
            "predictions and metrics are written")


def run_job(
    job: Job,
    stop: StopFlag | None = None,
    notify: Callable[[str, Any], None] | None = None,
) -> TargetResult:
    """Run one job: replay its target and draw its part of the report.

    This is the only way a target is replayed: in this process, in a worker process of
    :class:`~onlinesparse.replay.pool.WorkerPool` and on a Dask worker
    (:mod:`~onlinesparse.replay.cluster`) alike, so every way of running gives the same
    result.

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
        columns = open_recording(cfg.recording, cfg.bin_ms).select(cfg.targets, cfg.features,
                                                                   cfg.time)
    return _replay_and_render(
        cfg, columns, job.target, stop or StopFlag(), notify or (lambda kind, payload: None)
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
        from onlinesparse.replay.report import render_target

        try:
            result.section = render_target(
                _target_report(cfg, result),
                index=cfg.targets.index(target),
                interval=cfg.interval,
                warmup=cfg.warmup,
                time_label="time (s)" if columns.time else "row",
            )
        except Exception as exc:  # the replay's results matter more than its plots
            result.report_error = (f"drawing the report of {target!r} failed: "
                                   f"{type(exc).__name__}: {exc}")
    return result


def lost_result(cfg: ReplayConfig, target: str, message: str) -> TargetResult:
    """The result of a target whose worker died: nothing measured here, but the predictions
    it spooled (whole records) and its last checkpoint are kept for the outputs and a
    resume."""
    state = _TargetState(target, None, RegressionAccumulator(z=interval_z(cfg.interval)),
                         LatencyHistogram(), Trace(every=cfg.diag_every))
    if cfg.out is not None:
        index = cfg.targets.index(target)
        spool = Path(cfg.out) / ".spool" / f"{index:02d}-{_safe(target)}.bin"
        state.spool_path = str(spool.resolve())
        state.n_predictions = _Spool.records_in(spool)
    saved = None
    if cfg.checkpoint is not None:
        explicit = checkpoint_file(Path(cfg.checkpoint), target, cfg.targets)
        saved = str(explicit) if explicit.exists() else None
    return _summarise(cfg, state, "worker_died", message,
                      open_recording(cfg.recording, cfg.bin_ms), saved, False)
