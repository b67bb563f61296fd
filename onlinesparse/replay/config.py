"""What a replay is asked to do and what it returns: configuration, jobs and results.

These plain dataclasses are shared by the replay loop (:mod:`~onlinesparse.replay.runner`),
the writing of outputs (:mod:`~onlinesparse.replay.outputs`) and the worker processes
(:mod:`~onlinesparse.replay.pool`, :mod:`~onlinesparse.replay.parallel`); they hold paths and
settings, never data, so they are cheap to send to another process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.metrics import LatencyHistogram, Trace
from onlinesparse.replay.reader import MISSING_POLICIES, Columns

__all__ = [
    "ReplayConfig",
    "TargetResult",
    "SharedResult",
    "ReplayOutcome",
    "StopFlag",
    "Job",
    "PREDICTION_COLUMNS",
    "EXIT_INTERRUPTED",
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
        Path of the CSV, Parquet, NPZ or NWB file.
    targets
        Target columns. Several share one model when the model has a multi-output form
        (:attr:`~onlinesparse.replay.models.ModelSpec.multi_target`) and ``separate`` is
        false; otherwise each has a model of its own.
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
    budget_us
        Deadline per sample in µs (``predict_one`` + ``learn_one``, wall-clock): samples over
        it are counted as deadline misses and the report draws it; ``None`` for no deadline.
    command
        The command line that started the replay, recorded in the metrics and the report.
    missing
        ``"impute"``: a missing (empty or NaN) feature is left out of the row's feature dict
        and the model imputes it (its running mean), and a row without its target is
        predicted and timed but neither scored nor learned; only a row with no feature at
        all is skipped. ``"drop"``: any missing value skips the row for that target, which
        loses the row's other channels but feeds the model no imputed value.
    quiet
        Leave out the per-check warning lines (suspicious features, corrupt rows, recording
        checks) on the console; the report and ``metrics.json`` still list them all.
    bin_ms
        NWB recordings: width of the time bins spike times are counted in and every series
        is sampled on (``None``: 20 ms). Refused for other formats.
    separate
        One model per target even when the model has a multi-output form. A shared model
        learns one basis from every target, reads the recording once and predicts every
        target in one call, but it learns only from rows that carry every target (a row
        lacking one is predicted and scored for the others, not learned); separate models
        learn each target from every row that has it, at the cost of one model per target
        (their time per row adds up).

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
    budget_us: float | None = None
    command: str | None = None
    missing: str = "impute"
    quiet: bool = False
    bin_ms: float | None = None
    separate: bool = False

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
            (self.budget_us is None or self.budget_us > 0, "--budget-us must be above 0"),
            (self.predictions_format in ("parquet", "csv"), "--predictions-format: parquet or csv"),
            (self.missing in MISSING_POLICIES, f"--missing: {' or '.join(MISSING_POLICIES)}"),
            (self.bin_ms is None or 0 < self.bin_ms < float("inf"), "--bin-ms must be above 0"),
            (not self.resume or self.checkpoint is not None, "--resume needs --checkpoint PATH"),
            (self.every is None or self.checkpoint is not None, "--every needs --checkpoint PATH"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(message)


@dataclass
class TargetResult:
    """How the replay of one target ended, and what it measured."""

    target: str
    # completed | stopped | diverged | interrupted | corrupt_row | model_error |
    # nothing_scored | write_error | read_error | worker_died
    status: str
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
    report_error: str | None = None  # why drawing that part failed, if it did
    cpu_latency: LatencyHistogram | None = None  # CPU µs per scored sample
    gc_pauses: LatencyHistogram | None = None  # garbage collections between rows, µs each
    finished: bool = False  # reached the end of the recording: nothing is left to resume


@dataclass
class SharedResult:
    """What a model shared by several targets measured once for all of them: the time per
    row (one ``predict_one`` and one ``learn_one`` of every target), its shared diagnostics
    and input relevance, and the rows it could not learn (a target was missing)."""

    targets: list[str]
    status: str
    message: str | None
    metrics: dict[str, Any]
    latency: LatencyHistogram
    cpu_latency: LatencyHistogram
    trace: Trace
    relevance: dict[str, float] | None
    relevance_source: str
    has_dist: bool
    section: Any = None  # the report's part for the shared model
    report_error: str | None = None


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
    #: Outputs that could not be written, one message each (the others were written).
    errors: list[str] = field(default_factory=list)
    #: The shared model's own result when the targets shared one, else ``None``.
    shared: SharedResult | None = None


class StopFlag:
    """Set by Ctrl-C (or a parent process); read by the replay loop between samples."""

    def __init__(self) -> None:
        self.requested = False


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
