"""Several targets of one replay through one shared model: progressive validation row by row.

When the model has a multi-output form (:attr:`~onlinesparse.replay.models.ModelSpec.multi_target`)
and ``--separate`` is not given, the targets of a replay share one model: each row is read
once, ``predict_one`` gives every target's prediction (and interval) in one call, each target
is scored apart, then one ``learn_one`` learns them all. What is measured per target (the
error metrics, nMSE, coverage, the rows skipped, the predictions) is what a replay of that
target alone measures; what belongs to the model (the time per row, the basis, its input
relevance, the checkpoint) is measured and reported once.

**Rows without every target.** A shared model's ``learn_one`` refuses a row that lacks a
target or has a non-finite one (it names the target and leaves the model unchanged), so a
row whose value of some target is missing (NaN or empty, under ``--missing impute``) or
corrupt (unparseable, infinite, beyond ±1e100, or missing under ``--missing drop``) is

* predicted for every target and scored for each target whose value is there;
* learned by no target (the model never sees a partial ``y``);
* counted: for the target that lacked its value, as a row without its target
  (``unlearned_rows``) or a corrupt row (``corrupt_rows``, with its reason) exactly as
  in a replay of that target alone, and, for the shared model, in ``partial_rows`` (each
  other target counts it in its own ``partial_rows``: scored but not learned).

``--separate`` keeps one model per target, which learns each target from every row that has
it: the better choice for a recording whose targets are often missing one at a time.
Under ``--strict`` a corrupt value of any target stops the replay, as in a replay of it
alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from onlinesparse.replay import models as registry
from onlinesparse.replay.checkpoint import load_checkpoint
from onlinesparse.replay.collector import RowCollector
from onlinesparse.replay.config import (
    MAX_CORRUPT_EXAMPLES,
    ReplayConfig,
    SharedResult,
    StopFlag,
    TargetResult,
)
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.metrics import LatencyHistogram, RegressionAccumulator, Trace, interval_z
from onlinesparse.replay.reader import VALUE_BOUND, Columns, MultiChunk
from onlinesparse.replay.shared_summary import align, summarise_shared, target_diagnostics
from onlinesparse.replay.stream_checks import RecordingChecks
from onlinesparse.replay.summary import diagnostics as _diagnostics
from onlinesparse.replay.target import (
    _ModelRaised,
    _Run,
    _TargetState,
    default_checkpoint,
    fingerprint,
    why_nothing_scored,
)

__all__ = ["replay_shared", "shared_fingerprint", "load_shared", "target_diagnostics"]


@dataclass
class _SharedState:
    """What a checkpoint of a shared model holds: the model, the time per row, and one
    :class:`~onlinesparse.replay.target._TargetState` per target (its accumulators, counts,
    spool and recording checks; its own ``model`` and latency are not used)."""

    targets: list[str]
    model: Any
    views: dict[str, _TargetState]
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    cpu_latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    gc_pauses: LatencyHistogram = field(default_factory=LatencyHistogram)
    trace: Trace = field(default_factory=Trace)
    position: int = 0
    n_samples: int = 0  # rows learned (every target present)
    n_partial: int = 0  # rows predicted but not learned: some target lacked its value
    n_corrupt: int = 0  # rows skipped for every target (a feature, the time, the line)
    n_imputed: int = 0
    elapsed: float = 0.0
    deadline_misses: int = 0
    window_wall: float = 0.0
    window_cpu: float = 0.0
    finished: bool = False


def shared_fingerprint(cfg: ReplayConfig, columns: Columns) -> dict[str, Any]:
    """The configuration a shared model's checkpoint must agree with: a replay's with the
    list of targets (in order) in place of one target, and the shared model marked."""
    fp = fingerprint(cfg, columns, columns.targets[0])
    del fp["target"]
    return {"targets": list(columns.targets), "shared_model": True, **fp}


def load_shared(path: Path, fp: dict[str, Any], recording_fp: dict[str, Any]) -> _SharedState:
    """The shared model's state saved at ``path``, refused when that replay had finished."""
    state = load_checkpoint(path, fp, recording_fp)
    if state.finished:
        raise UsageError(
            f"nothing to resume: the replay saved in {path} ran to the end of the recording "
            f"({state.position} rows) and wrote its outputs then; drop --resume to replay it "
            "again"
        )
    return state


def _fresh_state(cfg: ReplayConfig, columns: Columns, n_rows: int | None) -> _SharedState:
    z = interval_z(cfg.interval)
    views = {
        t: _TargetState(t, None, RegressionAccumulator(z=z), LatencyHistogram(),
                        Trace(every=cfg.diag_every),
                        checks=RecordingChecks.for_target(columns.features, t, columns.time,
                                                          j == 0, n_rows))
        for j, t in enumerate(columns.targets)
    }
    model = registry.build_model(cfg.model, cfg.model_params, cfg.standardize,
                                 multi_target=True)
    return _SharedState(list(columns.targets), model, views, trace=Trace(every=cfg.diag_every))


def replay_shared(
    cfg: ReplayConfig,
    columns: Columns,
    stop: StopFlag | None = None,
    notify: Callable[[str, Any], None] | None = None,
) -> tuple[list[TargetResult], SharedResult]:
    """Replay every target of ``columns`` through one shared model.

    Parameters
    ----------
    cfg
        The replay's configuration (its model has a multi-output form).
    columns
        The resolved columns; every one of ``columns.targets`` is replayed.
    stop
        Checked between rows; when set, the replay saves a checkpoint and returns.
    notify
        Called with ``("progress", (target, rows, rmse))`` for each target now and then, and
        with ``("warn", message)`` for each of the first corrupt rows.

    Returns each target's result, in the order of ``columns.targets``, and the shared
    model's own.
    """
    return _SharedRun(cfg, columns, stop or StopFlag(),
                      notify or (lambda kind, payload: None)).run()


class _SharedRun(_Run):
    """One shared model's replay in progress: its state, its spools and its checkpoint."""

    def __init__(self, cfg: ReplayConfig, columns: Columns, stop: StopFlag,
                 notify: Callable[[str, Any], None]):
        self.targets = list(columns.targets)
        explicit = Path(cfg.checkpoint) if cfg.checkpoint else None
        super().__init__(cfg, columns, stop, notify, explicit,
                         shared_fingerprint(cfg, columns))
        state = (load_shared(explicit, self.fp, self.recording_fp) if cfg.resume
                 else _fresh_state(cfg, columns, self.recording.n_rows))
        self.state: _SharedState = state
        self.spools = {t: self._open_spool(view, cfg.targets.index(t), t)
                       for t, view in state.views.items()}
        self.has_dist = registry.supports_with_dist(state.model)
        self._start_clock()

    def _warm_up(self, rows: int = 200) -> float:
        """Drive a clone of the model through the first complete rows (see
        :func:`~onlinesparse.replay.models.warm_up_model`); seconds taken."""
        try:
            chunks = self.recording.iter_multi_chunks(self.columns, rows, 0)
            chunk = next(chunks, None)
            if chunk is None:
                return 0.0
            names = list(self.columns.features)
            good = [i for i in range(len(chunk)) if i not in chunk.problems
                    and not np.isnan(chunk.Y[i]).any()
                    and not any(i in p for p in chunk.target_problems)]
            xs = [dict(zip(names, chunk.X[i].tolist(), strict=True)) for i in good]
            ys = [dict(zip(self.targets, chunk.Y[i].tolist(), strict=True)) for i in good]
            return registry.warm_up_model(self.state.model, xs, ys)
        except Exception:  # noqa: BLE001 - the replay itself reports what is wrong, row by row
            return 0.0

    def flush(self) -> None:
        """Write every target's spooled predictions; the state then counts those on disk."""
        for target, spool in self.spools.items():
            if spool is not None:
                self._flush_spool(spool, self.state.views[target])

    def run(self) -> tuple[list[TargetResult], SharedResult]:
        """Replay every row (or until stopped), checkpoint, and sum up."""
        self._progress()
        self._run_rows(self.explicit or default_checkpoint(self.cfg))
        for target, spool in self.spools.items():
            if spool is not None:
                self._close_spool(spool, self.state.views[target])
        self.state.elapsed = self.elapsed_before + time.perf_counter() - self.started
        self._progress()
        return summarise_shared(self.cfg, self.state, self.status, self.message,
                                self.recording, self.checkpoint_path, self.has_dist,
                                self.warm_up_s)

    def _progress(self) -> None:
        for target, view in self.state.views.items():
            self.notify("progress", (target, self.state.position, view.acc.rmse))

    def _any_scored(self) -> bool:
        return any(view.acc.n for view in self.state.views.values())

    def _why_nothing_scored(self) -> str:
        view = next(iter(self.state.views.values()))
        align(view, self.state)
        return why_nothing_scored(self.cfg, view, self.recording.path.name)

    def _replay_rows(self) -> None:
        chunks = self.recording.iter_multi_chunks(
            self.columns, self.cfg.chunksize, self.state.position, self.cfg.missing)
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
                for j, view in enumerate(self.state.views.values()):
                    if view.checks is not None:  # the rows replayed: a resume checks the rest
                        view.checks.update_chunk(chunk.for_target(j), self.state.position)
                self.flush()

    def _skip(self, row: int, reason: str, targets: list[str]) -> None:
        """Count a row corrupt for ``targets``, or stop there under ``--strict``."""
        where = self.recording.describe_row(row)
        if self.cfg.strict:
            self.status = "corrupt_row"
            self.message = f"corrupt {where}: {reason} (--strict stops at corrupt rows)"
            return
        for target in targets:
            view = self.state.views[target]
            view.n_corrupt += 1
            if len(view.corrupt_examples) < MAX_CORRUPT_EXAMPLES:
                view.corrupt_examples.append((row, reason))
        if sum(v.n_corrupt for v in self.state.views.values()) <= 10:
            self.notify("warn", f"{', '.join(targets)}: skipping corrupt {where}: {reason}")

    def _replay_chunk(self, chunk: MultiChunk, collector: RowCollector) -> None:
        """Predict, score and learn each row of ``chunk``; the garbage collector runs between
        rows, never inside the timed calls."""
        state, cfg = self.state, self.cfg
        names = list(self.columns.features)
        X, Y, ts = chunk.X.tolist(), chunk.Y.tolist(), chunk.time.tolist()
        gaps_x = set(np.flatnonzero(np.isnan(chunk.X).any(axis=1)).tolist())
        for i, row in enumerate(chunk.rows.tolist()):
            if self.stop.requested:
                self.status = "interrupted"
                return
            if cfg.max_rows is not None and state.position >= cfg.max_rows:
                self.status = "stopped"
                return
            if i in chunk.problems:
                self._skip(row, chunk.problems[i], self.targets)
                state.n_corrupt += 1
                if self.status != "completed":
                    return
                state.position = row + 1
                continue
            bad = {t: p[i] for t, p in zip(self.targets, chunk.target_problems, strict=True)
                   if i in p}
            for target, reason in bad.items():
                self._skip(row, reason, [target])
            if self.status != "completed":
                return
            x = dict(zip(names, X[i], strict=True))
            if i in gaps_x:  # absent from the dict, the feature is imputed
                x = {k: v for k, v in x.items() if v == v}
                state.n_imputed += 1
            y = {t: v for t, v in zip(self.targets, Y[i], strict=True) if t not in bad}
            self._replay_row(row, x, y, ts[i])
            collector.between_rows()

    def _replay_row(self, row: int, x: dict[str, float], y: dict[str, float], t: float) -> None:
        """Progressive validation of one row for every target: one ``predict_one``, each
        present target scored, one ``learn_one`` when every target is there (and finite);
        the two model calls timed in wall-clock and in the thread's CPU time."""
        state, model = self.state, self.state.model
        complete = len(y) == len(self.targets) and all(v == v for v in y.values())
        perf, cpu_ns = time.perf_counter, time.thread_time_ns
        try:
            c0 = cpu_ns()
            t0 = perf()
            out = model.predict_one(x, with_dist=True) if self.has_dist else model.predict_one(x)
            t1 = perf()
            timed = self._score(row, t, y, out or {})
            t2 = perf()
            if complete:
                model.learn_one(x, y)
            t3 = perf()
            cpu = (cpu_ns() - c0) * 1e-3
            wall = ((t1 - t0) + (t3 - t2)) * 1e6
            self._trace(t, wall, cpu)
        except Exception as exc:
            raise _ModelRaised(row, exc) from exc
        if timed:
            self._time(wall, cpu)
        if complete:
            state.n_samples += 1
        else:
            state.n_partial += 1
        state.position = row + 1
        self._after_row()

    def _score(self, row: int, t: float, y: dict[str, float], out: dict[str, Any]) -> bool:
        """Score and spool each target's prediction of this row; whether the row is timed
        (after the warm-up, with every prediction finite)."""
        state = self.state
        timed = state.n_samples >= self.cfg.warmup
        complete = len(y) == len(self.targets) and all(v == v for v in y.values())
        for target, view in state.views.items():
            if target not in y:
                continue  # a corrupt value: counted, no prediction kept (as for one target)
            truth, pred = y[target], out.get(target)
            if self.has_dist and hasattr(pred, "mu"):
                mu, sigma = float(pred.mu), float(pred.sigma)
            else:
                mu, sigma = float(pred) if pred is not None else math.nan, math.nan
            present = truth == truth
            if not abs(mu) <= VALUE_BOUND:  # NaN, ±inf, or a square that would overflow
                view.n_nonfinite += 1
                timed = False
            elif present and state.n_samples >= self.cfg.warmup:
                view.acc.update(truth, mu, sigma)
            if not present:
                view.n_unlearned += 1
            elif not complete:
                view.n_partial += 1
            view.position = row + 1
            spool = self.spools[target]
            if spool is not None:
                spool.buffer.append((row, t, truth, mu, sigma))
        return timed

    def _trace(self, t: float, wall: float, cpu: float) -> None:
        """Keep the slowest row since the trace's last point; every ``diag_every`` rows
        record it with the shared diagnostics, and each target's own diagnostics in its
        trace."""
        state = self.state
        state.window_wall = max(state.window_wall, wall)
        state.window_cpu = max(state.window_cpu, cpu)
        if state.trace.due():
            values = _diagnostics(state.model)
            values["latency_max_us"], values["cpu_max_us"] = state.window_wall, state.window_cpu
            state.window_wall = state.window_cpu = 0.0
            state.trace.record(t, values)
            own = target_diagnostics(state.model)
            for target, view in state.views.items():
                view.trace.record(t, own.get(target, {}))

