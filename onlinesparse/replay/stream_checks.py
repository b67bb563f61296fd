"""Checks of a whole recording made on its rows as they stream through a replay.

A replay reads its recording a chunk at a time and never holds it whole; these checks see
each chunk once, in order, and keep a few numbers per column between chunks, so they cost
O(rows × columns) time and O(columns) memory. What they find:

* **Stuck channels.** A column that keeps exactly one value for at least
  :func:`stuck_length` consecutive rows — ``max(1000, 5 % of the recording)`` — *after having
  taken another value*: a sensor or electrode that stopped sending. A column constant over
  the whole recording is reported apart (it may be a dead channel, or a setting). A missing
  value (NaN) ends a stretch: gaps are counted as missing values instead.
* **Duplicated rows.** A row whose every used value (time, features, target) equals the
  previous row's: a logger that wrote a line twice. Rows further apart are not compared
  (that would take memory in proportion to the recording); a block written again later
  shows as time going backwards when there is a time column.
* **Timestamps.** With a time column: rows whose time equals the previous row's
  (duplicated) or is before it (going back).
* **Missing values.** Feature and target cells that are empty or NaN, per column.

Row ranges are reported in the recording's row numbers (for CSV, line = row + 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["RecordingChecks", "stuck_length", "MIN_STUCK_ROWS", "STUCK_FRACTION",
           "MAX_RANGES"]

#: A stuck stretch is at least this many rows long ...
MIN_STUCK_ROWS = 1000
#: ... and at least this fraction of the recording.
STUCK_FRACTION = 0.05
#: Row ranges kept per kind of finding (the counts go on beyond it).
MAX_RANGES = 100


def stuck_length(n_rows: int | None) -> int:
    """Rows a value must be held to count as stuck: ``max(1000, 5 % of n_rows)``.

    A long minimum keeps quiet channels (a neuron silent for a few seconds, a joint at rest)
    out of the report; a recording of unknown length (compressed CSV) uses 1000.

    >>> stuck_length(150_000), stuck_length(2_000), stuck_length(None)
    (7500, 1000, 1000)

    """
    return max(MIN_STUCK_ROWS, int(STUCK_FRACTION * n_rows)) if n_rows else MIN_STUCK_ROWS


@dataclass
class _Column:
    """What one column's check keeps between chunks."""

    value: float = np.nan  # value of the current stretch (NaN: none)
    start: int = -1  # its first row
    first: float = np.nan  # the column's first value
    varied: bool = False  # another value seen before the current stretch began
    differs_before: bool = False  # the current stretch follows another value


@dataclass
class RecordingChecks:
    """Streaming checks of one replay's columns; :meth:`update` each chunk, then
    :meth:`as_dict`. Picklable, so that a checkpoint carries it and a resumed replay goes on
    where it stopped.

    Parameters
    ----------
    names
        The checked columns, in the order of the values given to :meth:`update`.
    n_rows
        Rows of the recording when known, which sets :func:`stuck_length`.
    time
        Name of the time column, or ``None`` (no timestamp check).
    duplicates
        Whether to look for duplicated rows (one replay's first target does, for all).
    time_feature
        Index among the values of a feature checked as the time, when the time is not a
        column of its own.

    """

    names: list[str]
    n_rows: int | None = None
    time: str | None = None
    duplicates: bool = True
    time_feature: int | None = None
    min_run: int = 0
    columns: list[_Column] = field(default_factory=list)
    last_row: np.ndarray | None = None
    last_time: float = np.nan
    stuck: list[dict[str, Any]] = field(default_factory=list)
    duplicated: list[list[int]] = field(default_factory=list)
    n_duplicated: int = 0
    time_repeats: list[list[int]] = field(default_factory=list)
    n_time_repeats: int = 0
    time_back: list[list[int]] = field(default_factory=list)
    n_time_back: int = 0
    missing: list[int] = field(default_factory=list)
    rows_seen: int = 0
    end_row: int = 0

    @classmethod
    def for_target(cls, features: Sequence[str], target: str, time: str | None, first: bool,
                   n_rows: int | None) -> RecordingChecks:
        """The checks one target's replay makes: the first target's checks every feature,
        its own target, the rows and the times; each other target's checks its own target.

        Without a time column, a feature named like the time (``t``, ``time``,
        ``timestamp``…) is checked as the time.
        """
        from onlinesparse.replay.checks import _TIME_NAMES

        names = [*features, target] if first else [target]
        time_feature = None
        if first and time is None:
            time_feature = next((j for j, f in enumerate(features) if _TIME_NAMES.match(f)),
                                None)
            time = features[time_feature] if time_feature is not None else None
        return cls(names, n_rows, time if first else None, duplicates=first,
                   time_feature=time_feature)

    def update_chunk(self, chunk: Any, end: int | None = None) -> None:
        """:meth:`update` with the rows before row ``end`` (all when ``None``) of a
        :class:`~onlinesparse.replay.reader.Chunk` of this target."""
        n = len(chunk.rows) if end is None else int(np.searchsorted(chunk.rows, end))
        X, y = chunk.X[:n], chunk.y[:n]
        values = np.column_stack([X, y]) if self.duplicates else y[:, None]
        if self.time_feature is not None:
            times = X[:, self.time_feature]
        else:
            times = chunk.time[:n] if self.time is not None else None
        self.update(chunk.rows[:n], values, times, [i for i in chunk.problems if i < n])

    def __post_init__(self) -> None:
        self.min_run = self.min_run or stuck_length(self.n_rows)
        self.columns = self.columns or [_Column() for _ in self.names]
        self.missing = self.missing or [0] * len(self.names)

    def update(self, rows: np.ndarray, values: np.ndarray, times: np.ndarray | None,
               corrupt: Sequence[int] = ()) -> None:
        """Check the next consecutive ``rows`` (their ``values``, one column per name, and
        their ``times``); ``corrupt`` lists indices of rows the reader could not read, which
        are left out of every check."""
        if not len(rows):
            return
        keep = np.ones(len(rows), dtype=bool)
        keep[list(corrupt)] = False
        rows, values = rows[keep], values[keep]
        if not len(rows):
            return
        times = times[keep] if times is not None else None
        self.missing = (np.asarray(self.missing) + np.isnan(values).sum(axis=0)).tolist()
        for j in range(values.shape[1]):
            self._stuck(j, rows, values[:, j])
        if self.duplicates:
            self._duplicates(rows, values if times is None else np.column_stack([values, times]))
        if times is not None and self.time is not None:
            self._times(rows, times)
        self.rows_seen += len(rows)
        self.end_row = int(rows[-1]) + 1

    def _stuck(self, j: int, rows: np.ndarray, col: np.ndarray) -> None:
        """Follow column ``j``'s stretches of one value through ``col``. Vectorised: only
        stretches long enough to matter, and the last one (it may go on), take a Python step."""
        state = self.columns[j]
        finite = ~np.isnan(col)
        if np.isnan(state.first) and finite.any():
            state.first = float(col[finite][0])
        previous = np.concatenate([[state.value], col[:-1]])
        starts = np.flatnonzero(~(col == previous))  # a new value, or a NaN (never equal)
        carried_end = int(starts[0]) if len(starts) else len(col)
        if state.start >= 0 and carried_end < len(col):  # the running stretch ends here
            self._close(j, int(rows[carried_end - 1]) + 1 if carried_end else self.end_row)
        if not len(starts):
            return
        ends = np.concatenate([starts[1:], [len(col)]])
        length = rows[ends - 1] + 1 - rows[starts]
        # Whether a value other than the column's first came before each position.
        other = np.cumsum(finite & (col != state.first))
        wanted = finite[starts] & ((length >= self.min_run) | (ends == len(col)))
        for a, b in zip(starts[wanted].tolist(), ends[wanted].tolist(), strict=True):
            state.value, state.start = float(col[a]), int(rows[a])
            state.differs_before = bool(state.varied or (a and other[a - 1])
                                        or col[a] != state.first)
            if b < len(col):
                self._close(j, int(rows[b - 1]) + 1)
        if not finite[starts[-1]]:
            state.value, state.start = np.nan, -1
        state.varied = bool(state.varied or other[-1])

    def _close(self, j: int, end: int) -> None:
        """The stretch of column ``j`` ends before row ``end``: keep it if long enough."""
        state = self.columns[j]
        if state.start >= 0 and end - state.start >= self.min_run and state.differs_before:
            if len(self.stuck) < MAX_RANGES:
                self.stuck.append({"column": self.names[j], "value": state.value,
                                   "rows": [state.start, end - 1], "length": end - state.start})
        state.start = -1

    def _duplicates(self, rows: np.ndarray, values: np.ndarray) -> None:
        # The first row ever read has no row before it: compared with a row of NaN-free
        # sentinels that no value equals.
        before = self.last_row if self.last_row is not None else np.full(values.shape[1], -np.inf)
        previous = np.vstack([before[None, :], values[:-1]])
        same = (previous == values) | (np.isnan(previous) & np.isnan(values))
        if self.last_row is None:
            same[0] = False
        flags = same.all(axis=1)
        self.n_duplicated += int(flags.sum())
        _ranges(self.duplicated, rows, flags)
        self.last_row = values[-1].copy()

    def _times(self, rows: np.ndarray, times: np.ndarray) -> None:
        previous = np.concatenate([[self.last_time], times[:-1]])
        with np.errstate(invalid="ignore"):
            repeat, back = times == previous, times < previous
        self.n_time_repeats += int(repeat.sum())
        self.n_time_back += int(back.sum())
        _ranges(self.time_repeats, rows, repeat)
        _ranges(self.time_back, rows, back)
        finite = times[~np.isnan(times)]
        if len(finite):
            self.last_time = float(finite[-1])

    def as_dict(self) -> dict[str, Any]:
        """The findings so far, as ``metrics.json`` records them (stretches still running at
        the last row read count up to it)."""
        stuck = list(self.stuck)
        for j, state in enumerate(self.columns):  # stretches still running at the last row
            if (state.start >= 0 and state.differs_before
                    and self.end_row - state.start >= self.min_run):
                stuck.append({"column": self.names[j], "value": state.value,
                              "rows": [state.start, self.end_row - 1],
                              "length": self.end_row - state.start})
        constant = [self.names[j] for j, state in enumerate(self.columns)
                    if not state.varied and not np.isnan(state.first)
                    and self.rows_seen >= self.min_run]
        return {
            "stuck_min_rows": self.min_run,
            "stuck": stuck[:MAX_RANGES],
            "constant": constant,
            "duplicated_rows": {"count": self.n_duplicated, "ranges": self.duplicated},
            "time_column": self.time,
            "repeated_times": {"count": self.n_time_repeats, "ranges": self.time_repeats},
            "times_going_back": {"count": self.n_time_back, "ranges": self.time_back},
            "missing_values": {n: int(k) for n, k in zip(self.names, self.missing, strict=True)
                               if k},
            "rows_checked": self.rows_seen,
        }


def _ranges(out: list[list[int]], rows: np.ndarray, flags: np.ndarray) -> None:
    """Append the runs of flagged consecutive ``rows`` to ``out`` as ``[first, last]``,
    merging with the last range when it continues it; at most :data:`MAX_RANGES`."""
    idx = np.flatnonzero(flags)
    if not len(idx):
        return
    breaks = np.flatnonzero(np.diff(rows[idx]) != 1)
    firsts = rows[idx[np.concatenate([[0], breaks + 1])]]
    lasts = rows[idx[np.concatenate([breaks, [len(idx) - 1]])]]
    for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
        if out and out[-1][1] + 1 == first:
            out[-1][1] = last
        elif len(out) < MAX_RANGES:
            out.append([first, last])
