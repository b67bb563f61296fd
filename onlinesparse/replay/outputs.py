"""Writing what a replay produced: the predictions spool, predictions file, metrics and report.

Each target's predictions go to a spool (a flat file of float64 records) while it runs; at the
end :func:`write_outputs` concatenates the spools into one predictions file, writes
``metrics.json``, then the HTML report. Every file is written to a temporary name and renamed,
so a reader never sees half a file.
"""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onlinesparse.replay.config import (
    EXIT_INTERRUPTED,
    PREDICTION_COLUMNS,
    ReplayConfig,
    ReplayOutcome,
    SharedResult,
    TargetResult,
)
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.metrics import trivial_note
from onlinesparse.replay.models import sees_last_target
from onlinesparse.replay.reader import Columns, Recording, open_recording

__all__ = ["write_outputs", "format_summary", "check_writable"]


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
    def records_in(cls, path: str | Path | None) -> int:
        """Whole records in the spool file at ``path`` (0 when there is none)."""
        if path is None or not Path(path).exists():
            return 0
        return Path(path).stat().st_size // cls.RECORD_BYTES

    @classmethod
    def read(cls, path: str | Path | None, n: int) -> np.ndarray:
        """The first ``n`` records, memory-mapped (not loaded) when there are any."""
        if path is None or n == 0 or not Path(path).exists():
            return np.empty((0, cls.WIDTH))
        return np.memmap(path, dtype=np.float64, mode="r", shape=(n, cls.WIDTH))


def write_outputs(
    cfg: ReplayConfig,
    columns: Columns,
    results: list[TargetResult],
    recording: Recording | None = None,
    started: float | None = None,
    shared: SharedResult | None = None,
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
    started
        ``time.perf_counter()`` when the replay started: the run time recorded.
    shared
        The result of the model the targets shared, when they shared one.

    """
    outcome = ReplayOutcome(results, _exit_code(results), columns, cfg.out, shared=shared)
    if started is not None:
        outcome.elapsed = time.perf_counter() - started
    if cfg.out is not None:
        _write_outputs(cfg, columns, recording or open_recording(cfg.recording, cfg.bin_ms),
                       outcome)
    return outcome


def _exit_code(results: Sequence[TargetResult]) -> int:
    statuses = {r.status for r in results}
    if statuses & {"corrupt_row", "model_error", "nothing_scored", "write_error", "worker_died",
                   "read_error", "diverged"}:
        return 1
    if "interrupted" in statuses:
        return EXIT_INTERRUPTED
    return 0


def _overall_status(results: Sequence[TargetResult]) -> str:
    for status in ("worker_died", "write_error", "read_error", "model_error", "corrupt_row",
                   "nothing_scored", "diverged", "interrupted", "stopped"):
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
    """Predictions, then metrics, then the report (last: it is the most fragile); a step that
    fails is recorded in ``outcome.errors`` and the next steps still run."""
    out = Path(cfg.out)
    results = outcome.results
    suffix = "parquet" if cfg.predictions_format == "parquet" else "csv"
    predictions = out / f"predictions.{suffix}"
    try:
        _write_predictions(predictions, cfg.predictions_format, results)
        outcome.predictions_path = predictions
    except OSError as exc:
        outcome.errors.append(f"writing {predictions.name} failed: {_os_reason(exc)} (the "
                              f"predictions are kept in {out / '.spool'})")

    summary = _summary(cfg, columns, recording, outcome)
    try:
        tmp = out / ".metrics.json.tmp"
        tmp.write_text(json.dumps(_json_safe(summary), indent=2, allow_nan=False))
        os.replace(tmp, out / "metrics.json")
        outcome.metrics_path = out / "metrics.json"
    except OSError as exc:
        outcome.errors.append(f"writing metrics.json failed: {_os_reason(exc)}")

    if cfg.report:
        outcome.errors.extend(r.report_error for r in [*results, *([outcome.shared] if
                                                                  outcome.shared else [])]
                              if r.report_error)
        try:
            outcome.report_path = _write_report(cfg, columns, results, summary, outcome.shared)
        except Exception as exc:  # a plot that fails must not lose the rest (written above)
            outcome.errors.append(f"writing the report failed: {type(exc).__name__}: {exc}")

    if outcome.predictions_path is not None:
        _remove_spools(out, results)
    if outcome.errors and outcome.exit_code == 0:
        outcome.exit_code = 1


def _summary(
    cfg: ReplayConfig, columns: Columns, recording: Recording, outcome: ReplayOutcome
) -> dict[str, Any]:
    from onlinesparse import __version__
    from onlinesparse.replay.check_report import merge_checks
    from onlinesparse.replay.checks import recording_warnings

    results = outcome.results
    return {
        "command": cfg.command,
        "version": __version__,
        "elapsed_s": outcome.elapsed or None,
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
        "warnings": recording_warnings(recording, columns),
        "recording_notes": recording.notes,
        "missing": cfg.missing,
        "recording_checks": merge_checks(results),
        "budget_us": cfg.budget_us,
        "predictions": outcome.predictions_path.name if outcome.predictions_path else None,
        "separate": cfg.separate,
        # One model for every target, its time per row and diagnostics: once, here.
        "shared_model": ({**outcome.shared.metrics, "relevance": outcome.shared.relevance}
                         if outcome.shared is not None else None),
        "targets": {r.target: {**r.metrics, "relevance": r.relevance} for r in results},
    }


def _write_report(
    cfg: ReplayConfig, columns: Columns, results: Sequence[TargetResult], summary: dict,
    shared: SharedResult | None = None,
) -> Path:
    from onlinesparse.replay.report import write_report

    return write_report(
        Path(cfg.out),
        [r.section if r.section is not None else _target_report(cfg, r) for r in results],
        summary=summary,
        title=cfg.title or f"onlinesparse replay: {cfg.recording.name} through {cfg.model}",
        warmup=cfg.warmup,
        time_label="time (s)" if columns.time else "row",
        shared=shared.section if shared is not None else None,
    )


def _remove_spools(out: Path, results: Sequence[TargetResult]) -> None:
    """The spool is the part of a checkpoint that lives in --out: keep it while a checkpoint
    may be resumed, remove it otherwise (a replay that reached the end of its recording has
    nothing left to resume)."""
    for r in results:
        if r.spool_path and (r.checkpoint_path is None or r.finished):
            Path(r.spool_path).unlink(missing_ok=True)
    spool_dir = out / ".spool"
    if spool_dir.exists() and not any(spool_dir.iterdir()):
        spool_dir.rmdir()


def _os_reason(exc: OSError) -> str:
    """``[Errno 28] No space left on device: 'x'`` as ``No space left on device (ENOSPC)``."""
    if exc.errno is not None and exc.strerror:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror} ({name}){where}"
    return str(exc)


def _probe_write(directory: Path) -> None:
    """Create and remove a file in ``directory``: raises the OSError a write would."""
    fd, name = tempfile.mkstemp(prefix=".onlinesparse-probe-", dir=directory)
    os.close(fd)
    os.unlink(name)


def check_writable(directory: Path, what: str) -> None:
    """Create ``directory`` if needed and check a file can be written in it.

    Raises
    ------
    UsageError
        Naming ``what`` (e.g. ``"to --out out/"``) and the system's reason.

    """
    try:
        if directory.exists() and not directory.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(directory))
        directory.mkdir(parents=True, exist_ok=True)
        _probe_write(directory)
    except OSError as exc:
        raise UsageError(f"cannot write {what}: {_os_reason(exc)}") from None


def _target_report(cfg: ReplayConfig, result: TargetResult):
    from onlinesparse.replay.plots import TargetReport

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
        cpu_latency=result.cpu_latency,
    )


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
    """The table the command prints at the end of a replay.

    Latency is per scored sample (``predict_one`` + ``learn_one``), measured after the
    model's warm-up: wall-clock time, then the thread's CPU time, which leaves out whatever
    else the machine ran meanwhile. Python's garbage collector runs between samples, outside
    the timing, and its pauses are counted apart. A ``status`` column appears when a target
    did not simply complete (``diverged``, ``stopped``, ``interrupted``, an error). When the
    targets share one model, each target's row has its accuracy and the ``shared model``
    row the time per row (one call of each for every target), once.
    """
    budget = cfg.budget_us is not None
    shared = outcome.shared
    status = any(r.status != "completed" for r in outcome.results)
    header = ["target", "MAE", "RMSE", "nMSE", "mean", "last", "R²",
              f"cover {cfg.interval:.0%}",
              "µs med", "µs p99", "µs max", "CPU med", "CPU p99", "CPU max",
              *(["misses"] if budget else []), "rows/s", "scored", "skipped",
              *(["status"] if status else [])]
    rows = [header]
    for r in outcome.results:
        m = r.metrics
        rows.append([
            r.target, _fmt(m["mae"]), _fmt(m["rmse"]), _fmt(m["nmse"]),
            _fmt(m.get("nmse_running_mean"), 3), _fmt(m.get("nmse_last_target"), 3),
            _fmt(m["r2"]),
            _fmt(m["coverage"], 3) if r.has_dist else "n/a", *_timing_cells(m, budget),
            str(m["n_scored"]), str(m["corrupt_rows"]),
            *([r.status.replace("_", " ")] if status else []),
        ])
    if shared is not None:
        m = shared.metrics
        rows.append(["shared model", *[""] * 7, *_timing_cells(m, budget), str(m["n_timed"]),
                     str(m["corrupt_rows"]), *([shared.status.replace("_", " ")] if status
                                               else [])])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(trivial_note(sees_last_target(cfg.model, cfg.model_params)))
    lines.append("µs: wall-clock, and CPU time of this thread, of predict_one + learn_one per "
                 + ("row of the model shared by the targets (every target at once)"
                    if shared is not None else "scored sample")
                 + " after the model's warm-up" + (
                     f"; misses: samples over the {cfg.budget_us:g} µs budget" if budget else "")
                 + _collector_note([*outcome.results, *([shared] if shared else [])]))
    if shared is not None and shared.metrics["partial_rows"]:
        lines.append(f"{shared.metrics['partial_rows']} rows lacked a target: predicted and "
                     "scored for the targets they carry, learned by none (--separate learns "
                     "each target from every row that has it)")
    return "\n".join(lines)


def _timing_cells(m: dict[str, Any], budget: bool) -> list[str]:
    """The latency, deadline-miss and rate cells of one row of the summary table."""
    lat, cpu = m.get("latency_us") or {}, m.get("cpu_us") or {}
    rate = m.get("rows_per_second")
    return [*(_fmt_us(d.get(k, math.nan)) for d in (lat, cpu) for k in ("median", "p99", "max")),
            *([_fmt(m.get("deadline_misses"))] if budget else []),
            f"{rate:,.0f}" if rate else "—"]


def _collector_note(results: Sequence[Any]) -> str:
    """How often Python's garbage collector ran between samples, and its longest pause."""
    pauses = [(m["n"], m["max"]) for m in (r.metrics.get("gc_pauses_us") for r in results)
              if m and m.get("n")]
    if not pauses:
        return ""
    longest = max(p for _, p in pauses)
    return (f"; Python's garbage collector ran {sum(n for n, _ in pauses)} times between "
            f"samples, outside the timing (longest pause {_fmt_us(longest)} µs)")
