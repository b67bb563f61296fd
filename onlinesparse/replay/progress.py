"""The progress bars of a replay (rows of its targets) and of many replays (finished jobs).

Both draw with tqdm on standard error, and only when it is a terminal unless told otherwise,
so that a log file or a pipe gets the results without the bar's redraws.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TextIO

from onlinesparse.replay.config import ReplayConfig
from onlinesparse.replay.reader import Recording

if TYPE_CHECKING:  # only for annotations
    from onlinesparse.replay.jobs import JobResult

__all__ = ["RowProgress", "JobProgress"]


class RowProgress:
    """Rows replayed over every target of one replay, with the running RMSE."""

    def __init__(self, cfg: ReplayConfig, recording: Recording, stream: TextIO):
        from tqdm import tqdm

        n_rows = recording.n_rows
        if n_rows is not None and cfg.max_rows is not None:
            n_rows = min(n_rows, cfg.max_rows)
        total = n_rows * len(cfg.targets) if n_rows is not None else None
        enabled = cfg.progress if cfg.progress is not None else stream.isatty()
        self.bar = tqdm(
            total=total,
            # (with several targets a row counts once per target: the summary's rows/s
            # counts it once)
            unit="row" if len(cfg.targets) == 1 else "target-row",
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
        """``target`` has reached row ``position`` with running RMSE ``rmse``."""
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
        """Print ``text`` above the bar."""
        from tqdm import tqdm

        tqdm.write(text, file=self.stream)  # clears and redraws the bar around the text

    def close(self) -> None:
        self.bar.close()


class JobProgress:
    """Finished jobs of :func:`~onlinesparse.replay.parallel.replay_many`, failures counted."""

    def __init__(self, total: int, enabled: bool | None, stream: TextIO):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="job", file=stream, desc="replays",
                        disable=not (enabled if enabled is not None else stream.isatty()))
        self.failed = 0

    def done(self, result: JobResult) -> None:
        """Count ``result``'s job as finished."""
        if not result.ok:
            self.failed += 1
            self.bar.set_postfix_str(f"failed={self.failed}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
