"""Reading a recording (CSV, Parquet, NPZ or NWB) in chunks of rows, in constant memory.

Rows are numbered from 0 in the order they appear in the recording, corrupt rows included,
so that a row number in a message, in the predictions file and in a checkpoint position all
mean the same row. For CSV the header is not a row: row ``r`` is line ``r + 2`` of the file.

Formats
-------
* CSV (``.csv``, ``.tsv``, optionally compressed, e.g. ``.csv.gz``): ``pandas.read_csv`` with
  ``chunksize``. Lines with too many fields are skipped by pandas, which says so in a
  warning naming the line; the reader turns those into corrupt rows at the right position.
  The first data line is the exception: pandas would take its surplus fields for an index
  and shift every column of every row, so the reader checks that line's field count itself.
  A line with too few fields leaves its last columns empty, which is reported as a missing
  value if the replay uses those columns. A line with bytes that are not UTF-8 or with an
  unterminated quote is a corrupt row (the rest of the file is read as usual); a quoted
  field spanning several lines is not supported.
* Parquet (``.parquet``, ``.pq``): ``pyarrow.parquet.ParquetFile.iter_batches`` over the used
  columns; a resumed replay skips whole row groups without reading them.
* NPZ (``.npz``): either one 1-D array per column (``np.savez(path, time=t, emg=y, ...)``) or
  a 2-D array ``data`` with its column names in ``columns``
  (``np.savez(path, data=table, columns=np.array(names))``); see
  :mod:`~onlinesparse.replay.npz_source`.
* NWB (``.nwb``): time series and binned spike times on one time grid; see
  :mod:`~onlinesparse.replay.nwb_source` (needs the ``nwb`` extra).

Every format gives the same float64 values for the same numbers: float32 and float16
columns are widened as their shortest decimal reads (:mod:`~onlinesparse.replay.values`),
so a recording replays bit for bit alike from CSV and from any binary format.
"""

from __future__ import annotations

import bz2
import csv
import difflib
import fnmatch
import gzip
import io
import lzma
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.source import DEFAULT_BIN_MS, Source
from onlinesparse.replay.values import widen_like_text

__all__ = ["Chunk", "MultiChunk", "Columns", "Recording", "open_recording", "FORMATS",
           "VALUE_BOUND", "DEFAULT_BIN_MS", "MISSING_POLICIES"]

FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
    ".nwb": "nwb",
}
#: What ``--missing`` may say: a missing feature is imputed by the model, or drops the row.
MISSING_POLICIES = ("impute", "drop")
_COMPRESSION = (".gz", ".bz2", ".xz", ".zst", ".zip")
#: Largest magnitude of a feature or target value. Beyond it a row is corrupt: a running
#: mean, variance or squared error fed with it overflows float64 (squares reach 1e200 at
#: 1e100, sums of a million of them stay below 1e207, far from the limit of 1.8e308), and
#: one overflowed statistic would poison every later row of the replay.
VALUE_BOUND = 1e100
_BAD_LINE = re.compile(r"line (\d+)(?::\s*(.*))?", re.IGNORECASE)
# pandas 2 parses decimals with its own fast routine, not always to the nearest float64 (pandas
# 3 does, and deprecates the option): Python's parser makes a CSV read as Parquet stores it.
_EXACT_FLOATS = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


@dataclass
class Columns:
    """Which columns of a recording a replay uses.

    Parameters
    ----------
    targets
        Target columns, one model each.
    features
        Input columns, in the order given.
    time
        Time column, or ``None`` (the row number then stands for time).

    """

    targets: list[str]
    features: list[str]
    time: str | None = None


@dataclass
class Chunk:
    """Consecutive rows of a recording, ready for the model.

    Attributes
    ----------
    rows
        Row numbers (int64), ascending, corrupt rows included.
    X
        Feature values, one row per entry of ``rows`` (NaN in corrupt rows).
    y
        Target values.
    time
        Time of each row: the time column in seconds, else the row number.
    problems
        ``{index in this chunk: reason}`` for every corrupt row.

    """

    rows: np.ndarray
    X: np.ndarray
    y: np.ndarray
    time: np.ndarray
    problems: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class MultiChunk:
    """Consecutive rows of a recording for several targets at once (a shared model).

    Attributes
    ----------
    rows, X, time
        As in :class:`Chunk`.
    Y
        Target values, one column per target.
    problems
        ``{index in this chunk: reason}`` for rows corrupt for every target (a feature, the
        time, a line the parser dropped).
    target_problems
        For each target, ``{index: reason}`` for rows whose value of that target is corrupt
        (or missing, under ``--missing drop``).

    """

    rows: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    time: np.ndarray
    problems: dict[int, str] = field(default_factory=dict)
    target_problems: list[dict[int, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)

    def for_target(self, j: int) -> Chunk:
        """The :class:`Chunk` of the ``j``-th target: a row is corrupt for it when its own
        value is (that reason first) or the row is for every target."""
        return Chunk(self.rows, self.X, self.Y[:, j], self.time,
                     {**self.problems, **self.target_problems[j]})


def _format_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSION and len(suffixes) > 1:
        suffixes = suffixes[:-1]
    fmt = FORMATS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise UsageError(
            f"cannot tell the format of {path}: name it .csv, .tsv, .parquet, .npz or .nwb"
        )
    return fmt


def open_recording(path: str | Path, bin_ms: float | None = None) -> Recording:
    """Open the recording at ``path`` (format chosen by its suffix).

    ``bin_ms`` is for NWB files only: the width of the time bins that spike times are
    counted in and every series is sampled on (None: 20 ms). Narrower bins follow faster
    changes but leave fewer spikes per bin.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "r.csv").write_text("t,x,y\\n0,1,2\\n1,2,4\\n")
    >>> rec = open_recording(d / "r.csv")
    >>> rec.columns, rec.n_rows
    (['t', 'x', 'y'], 2)
    >>> cols = rec.select(targets=["y"], time="t")
    >>> [c.X.tolist() for c in rec.iter_chunks(cols, "y", chunksize=10)]
    [[[1.0], [2.0]]]

    """
    path = Path(path)
    if not path.exists():
        raise UsageError(f"recording not found: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a recording file")
    fmt = _format_of(path)
    if bin_ms is not None and fmt != "nwb":
        raise UsageError(f"--bin-ms applies to NWB recordings only, not to {path.name}")
    if fmt == "npz":
        from onlinesparse.replay.npz_source import _NpzSource

        return Recording(path, fmt, _NpzSource(path))
    if fmt == "nwb":
        from onlinesparse.replay.nwb_source import NwbSource

        return Recording(path, fmt, NwbSource(path, bin_ms))
    return Recording(path, fmt, {"csv": _CsvSource, "parquet": _ParquetSource}[fmt](path))


class Recording:
    """A recording file: its columns, its length when cheaply known, and its rows in chunks.

    Use :func:`open_recording` to make one.
    """

    def __init__(self, path: Path, fmt: str, source: Source):
        self.path = path
        self.format = fmt
        self._source = source

    @property
    def columns(self) -> list[str]:
        return list(self._source.columns)

    @property
    def n_rows(self) -> int | None:
        """Number of rows, from metadata (Parquet, NPZ) or a count of lines (plain CSV)."""
        return self._source.n_rows

    @property
    def notes(self) -> list[str]:
        """What the reader decided about this file that a user should know (NWB: the grid)."""
        return list(getattr(self._source, "notes", []))

    def describe_row(self, row: int) -> str:
        """``"row 5 (line 7 of x.csv)"`` for CSV, ``"row 5"`` otherwise."""
        describe = getattr(self._source, "describe_row", None)
        if describe is not None:
            return describe(row)
        if self.format == "csv":
            return f"row {row} (line {row + 2} of {self.path.name})"
        return f"row {row}"

    def select(
        self,
        targets: Sequence[str],
        features: Sequence[str] | None = None,
        time: str | None = None,
    ) -> Columns:
        """Check the column names against the recording and fill in the default features.

        ``features`` entries may be shell-style patterns (``"n*"``); ``None`` means every
        column that is neither a target nor the time column (for NWB: the neural data). A
        name of a multi-channel NWB series stands for its channels.
        """
        cols = self.columns
        aliases = getattr(self._source, "aliases", {})
        targets = [c for name in targets for c in aliases.get(name, [name])]
        if time is None:
            time = getattr(self._source, "time_column", None)
        if not targets:
            raise UsageError("name at least one target column with --target")
        for name in targets:
            self._require(name, "target")
        if len(set(targets)) != len(targets):
            raise UsageError("a target column is named twice")
        if time is not None:
            self._require(time, "time")
            if time in targets:
                raise UsageError(f"column {time!r} cannot be both the time and a target")
        excluded = set(targets) | ({time} if time else set())
        if features is None:
            default = getattr(self._source, "default_features", cols)
            chosen = [c for c in default if c not in excluded]
        else:
            chosen = []
            for spec in features:
                if any(ch in spec for ch in "*?["):
                    matches = [c for c in fnmatch.filter(cols, spec) if c not in excluded]
                    if not matches:
                        raise UsageError(
                            f"feature pattern {spec!r} matches no column of {self.path.name}"
                        )
                    chosen.extend(m for m in matches if m not in chosen)
                else:
                    for name in aliases.get(spec, [spec]):
                        self._require(name, "feature")
                        if name in excluded:
                            raise UsageError(
                                f"column {name!r} is a target or the time column; "
                                "it cannot also be a feature"
                            )
                        if name not in chosen:
                            chosen.append(name)
        if not chosen:
            raise UsageError(f"no feature columns left in {self.path.name}")
        return Columns(list(targets), chosen, time)

    def _require(self, name: str, role: str) -> None:
        cols = self.columns
        if name in cols:
            return
        hint = difflib.get_close_matches(name, cols, n=1)
        listing = ", ".join(cols[:12]) + (f", … ({len(cols)} columns)" if len(cols) > 12 else "")
        did_you_mean = f"; did you mean {hint[0]!r}?" if hint else ""
        raise UsageError(
            f"unknown {role} column {name!r} in {self.path.name}{did_you_mean} "
            f"(columns: {listing})"
        )

    def iter_chunks(
        self,
        columns: Columns,
        target: str,
        chunksize: int = 10_000,
        start_row: int = 0,
        missing: str = "drop",
    ) -> Iterator[Chunk]:
        """Chunks of at most ``chunksize`` rows for one ``target``, from ``start_row`` on.

        A row is corrupt for this target when a used value is unparseable, missing,
        infinite or beyond :data:`VALUE_BOUND` in magnitude, or the line has the wrong number
        of fields, bytes that are not UTF-8 or an unterminated quote; other targets' values
        do not matter. With ``missing="impute"`` an empty or NaN feature or target is not a
        fault: it stays NaN in ``X`` or ``y`` for the caller to leave out (the model then
        imputes the feature; a row without its target is predicted but not learned), and
        only a row whose every feature is missing is corrupt. ``"drop"`` keeps more rows
        out and imputes nothing.
        """
        for rows, values, dropped in self._frames(columns, [target], chunksize, start_row,
                                                  missing):
            yield _make_chunk(rows, values, columns, target, dropped, missing == "impute")

    def iter_multi_chunks(
        self,
        columns: Columns,
        chunksize: int = 10_000,
        start_row: int = 0,
        missing: str = "drop",
    ) -> Iterator[MultiChunk]:
        """Chunks of every target of ``columns`` at once, for a model shared by them: the
        rows and values :meth:`iter_chunks` gives each target, read once."""
        for rows, values, dropped in self._frames(columns, columns.targets, chunksize,
                                                  start_row, missing):
            yield _make_multi_chunk(rows, values, columns, columns.targets, dropped,
                                    missing == "impute")

    def _frames(self, columns: Columns, targets: Sequence[str], chunksize: int,
                start_row: int, missing: str) -> Iterator[tuple[np.ndarray, dict, list]]:
        """The source's frames of the columns ``targets`` use, from ``start_row`` on."""
        if chunksize < 1:
            raise UsageError("--chunksize must be at least 1")
        if missing not in MISSING_POLICIES:
            raise UsageError(f"--missing must be one of {', '.join(MISSING_POLICIES)}")
        time = [columns.time] if columns.time is not None else []
        used = list(dict.fromkeys([*targets, *columns.features, *time]))
        for rows, values, dropped in self._source.frames(used, chunksize, start_row):
            keep = rows >= start_row
            if not keep.all():
                rows = rows[keep]
                values = {k: v[keep] for k, v in values.items()}
            dropped = [(r, why) for r, why in dropped if r >= start_row]
            if len(rows) or dropped:
                yield rows, values, dropped


# ---------------------------------------------------------------------------------------
# Turning raw column values into floats and finding corrupt rows


def _as_float(values: Any, is_time: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Float64 values and a mask of unparseable entries (None when nothing was text)."""
    if isinstance(values, np.ndarray):
        kind = values.dtype.kind
        if kind == "f" and values.dtype.itemsize < 8:
            return widen_like_text(values), None
        if kind in "biuf":
            return values.astype(np.float64, copy=False), None
        values = pd.Series(values)
    dtype = values.dtype
    if pd.api.types.is_float_dtype(dtype) and dtype.itemsize < 8:  # (float32, Float32)
        return widen_like_text(values.to_numpy(dtype=np.float32, na_value=np.nan)), None
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan), None
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return _seconds(values), None
    if pd.api.types.is_timedelta64_dtype(dtype):
        return values.dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan), None
    text = values.astype("object")
    if text.map(lambda v: isinstance(v, bytes)).any():
        text = text.map(lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
    # copy=True: under pandas 3 (copy-on-write) to_numpy may return a read-only view, and
    # the ISO-8601 times are written into this array below.
    converted = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan,
                                                              copy=True)
    present = text.notna().to_numpy() & (text.astype(str).str.strip() != "").to_numpy()
    failed = np.isnan(converted) & present
    # "nan"/"inf" spelled out parse as floats; they are not unparseable, just not finite.
    if is_time and failed.any():
        stamps = pd.to_datetime(text[failed], errors="coerce", format="ISO8601", utc=True)
        converted[failed] = _seconds(stamps)
        failed = np.isnan(converted) & present
    return converted, failed


def _seconds(stamps: pd.Series) -> np.ndarray:
    stamps = pd.to_datetime(stamps, utc=True)
    delta = stamps - pd.Timestamp(0, tz="UTC")
    return delta.dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)


def _make_chunk(
    rows: np.ndarray,
    values: Mapping[str, Any],
    columns: Columns,
    target: str,
    dropped: list[tuple[int, str]],
    impute: bool = False,
) -> Chunk:
    both = _make_multi_chunk(rows, values, columns, [target], dropped, impute)
    return both.for_target(0)


def _make_multi_chunk(
    rows: np.ndarray,
    values: Mapping[str, Any],
    columns: Columns,
    targets: Sequence[str],
    dropped: list[tuple[int, str]],
    impute: bool = False,
) -> MultiChunk:
    """The chunk of ``targets``: the problems of the features, the time and the rows the
    parser dropped (every target's), apart from each target's own."""
    n = len(rows)

    def check(col: str, arr: np.ndarray, failed: np.ndarray | None, missing: str,
              problems: dict[int, str], bound: float = np.inf, gaps: bool = False) -> None:
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(arr) <= bound)  # NaN, ±inf and beyond the bound
            if gaps:  # a NaN is a gap the caller handles, not a fault
                bad &= ~np.isnan(arr)
        if failed is not None:
            bad |= failed
        for i in np.flatnonzero(bad).tolist():
            if i in problems:
                continue
            if failed is not None and failed[i]:
                raw = values[col].iloc[i] if isinstance(values[col], pd.Series) else values[col][i]
                problems[i] = f"unparseable value {str(raw)!r} in column {col!r}"
            elif np.isnan(arr[i]):
                problems[i] = missing
            elif np.isinf(arr[i]):
                problems[i] = f"infinite value in column {col!r}"
            else:
                problems[i] = (f"value {arr[i]:.6g} in column {col!r} is beyond ±{bound:.0e}, "
                               "where running statistics would overflow")

    Y = np.empty((n, len(targets)), dtype=np.float64)
    own: list[dict[int, str]] = []
    for j, target in enumerate(targets):
        Y[:, j], failed = _as_float(values[target])
        own.append({})
        check(target, Y[:, j], failed, f"NaN in target {target!r}", own[j], VALUE_BOUND, impute)
    problems: dict[int, str] = {}
    X = np.empty((n, len(columns.features)), dtype=np.float64)
    for j, name in enumerate(columns.features):
        X[:, j], failed = _as_float(values[name])
        check(name, X[:, j], failed, f"missing value in column {name!r}", problems,
              VALUE_BOUND, impute)
    if impute and X.shape[1]:
        for i in np.flatnonzero(np.isnan(X).all(axis=1)).tolist():
            problems.setdefault(i, "every feature is missing (nothing to predict from)")
    if columns.time is not None:
        t, failed = _as_float(values[columns.time], is_time=True)
        check(columns.time, t, failed, f"missing value in column {columns.time!r}", problems)
    else:
        t = rows.astype(np.float64)

    chunk = MultiChunk(rows.astype(np.int64), X, Y, t, problems, own)
    return _with_dropped(chunk, dropped, columns.time is None) if dropped else chunk


def _with_dropped(chunk: MultiChunk, dropped: list[tuple[int, str]], row_time: bool
                  ) -> MultiChunk:
    """``chunk`` with the lines the parser dropped (wrong number of fields) as NaN rows at
    their place, corrupt for every target (``row_time``: the row number is the time)."""
    n = len(chunk.rows)
    d_rows = np.array([r for r, _ in dropped], dtype=np.int64)
    all_rows = np.concatenate([chunk.rows, d_rows])
    order = np.argsort(all_rows, kind="stable")
    X = np.vstack([chunk.X, np.full((len(d_rows), chunk.X.shape[1]), np.nan)])[order]
    Y = np.vstack([chunk.Y, np.full((len(d_rows), chunk.Y.shape[1]), np.nan)])[order]
    pad = d_rows.astype(np.float64) if row_time else np.full(len(d_rows), np.nan)
    t = np.concatenate([chunk.time, pad])[order]
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    problems = {int(position[i]): why for i, why in chunk.problems.items()}
    own = [{int(position[i]): why for i, why in p.items()} for p in chunk.target_problems]
    for k, (_, why) in enumerate(dropped):
        problems[int(position[n + k])] = why
    return MultiChunk(all_rows[order], X, Y, t, problems, own)


# ---------------------------------------------------------------------------------------
# Sources: one per format, each yielding (row numbers, {column: values}, dropped rows)


class _CsvSource(Source):
    def __init__(self, path: Path):
        self.path = path
        self.sep = "\t" if ".tsv" in [s.lower() for s in path.suffixes] else ","
        try:
            # Through _CheckedLines: pandas parses the first data line along with the header,
            # and an open quote or extra field there must cost that row, not the recording.
            with _open_binary(path) as raw:
                # skip_blank_lines=False as in frames(): the header is line 1, whatever it is.
                header = pd.read_csv(_CheckedLines(raw, self.sep), nrows=0, sep=self.sep,
                                     skip_blank_lines=False)
        except pd.errors.EmptyDataError:
            header = None
        except (UnicodeDecodeError, pd.errors.ParserError, OSError) as exc:
            raise UsageError(f"cannot read {path} as CSV: {exc}") from None
        if header is None or header.columns.empty:
            raise UsageError(f"{path} is empty or its first line is blank: a CSV recording "
                             "starts with its header line")
        self.columns = [str(c) for c in header.columns]
        self.n_rows = self._count_rows()

    def _count_rows(self) -> int | None:
        if self.path.suffixes[-1].lower() in _COMPRESSION:
            return None
        # A count of newlines is cheap (no parsing) and gives the progress bar its total.
        lines, last = 0, b"\n"
        with open(self.path, "rb") as fh:
            while block := fh.read(1 << 20):
                lines += block.count(b"\n")
                last = block[-1:]
        if last != b"\n":
            lines += 1
        return max(lines - 1, 0)

    def frames(self, used, chunksize, start_row):
        # No usecols: with it pandas silently accepts lines with too many fields, and a line
        # with the wrong number of fields is a corrupt row. Unused columns are parsed, then
        # dropped with the chunk.
        with _open_binary(self.path) as raw:
            lines = _CheckedLines(raw, self.sep)
            reader = pd.read_csv(
                lines,
                sep=self.sep,
                chunksize=chunksize,
                on_bad_lines="warn",
                # A blank line is a row (reported as missing values) so that row r stays
                # line r+2; the lines _CheckedLines blanks rely on it too.
                skip_blank_lines=False,
                **_EXACT_FLOATS,
            )
            with reader:
                yield from self._frames(reader, lines, used, start_row)

    def _frames(self, reader, lines: _CheckedLines, used, start_row):
        cursor = 0
        pending: dict[int, str] = {}
        while True:
            frame = self._next_frame(reader, pending)
            if frame is None:
                break
            n = len(frame)
            bad = np.array(sorted(r for r in pending if r >= cursor), dtype=np.int64)
            candidates = np.arange(cursor, cursor + n + len(bad), dtype=np.int64)
            rows = candidates[~np.isin(candidates, bad)][:n]
            end = int(rows[-1]) + 1 if n else cursor
            dropped = [(int(r), pending.pop(int(r))) for r in bad if r < end]
            cursor = end
            if lines.bad and n:
                # Lines blanked by _CheckedLines: corrupt rows with that reason.
                blanked = np.isin(rows, np.fromiter(lines.bad, dtype=np.int64))
                if blanked.any():
                    dropped = sorted(dropped + [(r, lines.bad.pop(r))
                                                for r in rows[blanked].tolist()])
                    rows, frame = rows[~blanked], frame[~blanked]
            if rows.size and rows[-1] < start_row:
                continue
            yield rows, {c: frame[c] for c in used}, dropped
        pending.update(lines.bad)
        if pending:
            yield (
                np.empty(0, dtype=np.int64),
                {c: np.empty(0) for c in used},
                sorted(pending.items()),
            )

    def _next_frame(self, reader, pending: dict[int, str]) -> pd.DataFrame | None:
        """The next chunk, with the lines pandas skipped (wrong field count) in ``pending``."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pd.errors.ParserWarning)
            try:
                frame = next(reader)
            except StopIteration:
                frame = None
            except pd.errors.ParserError as exc:
                raise UsageError(f"cannot parse {self.path.name}: {exc}") from None
        for w in caught:
            if not issubclass(w.category, pd.errors.ParserWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                continue
            for line_no, detail in _BAD_LINE.findall(str(w.message)):
                detail = detail.strip().rstrip(".") or "malformed line"
                pending[int(line_no) - 2] = f"wrong column count ({detail})"
        return frame


def _open_binary(path: Path):
    """``path`` opened for reading bytes, decompressed by its suffix."""
    suffix = path.suffixes[-1].lower() if path.suffixes else ""
    if suffix == ".gz":
        return gzip.open(path, "rb")
    if suffix == ".bz2":
        return bz2.open(path, "rb")
    if suffix == ".xz":
        return lzma.open(path, "rb")
    if suffix in (".zip", ".zst"):
        from pandas.io.common import get_handle  # pandas' own opener for these two

        handles = get_handle(path, "rb", compression="infer", is_text=False)
        return _Closing(handles)
    return open(path, "rb")


class _Closing:
    """A pandas ``IOHandles`` with the ``read``/``close`` of a binary file."""

    def __init__(self, handles: Any):
        self.handles = handles

    def read(self, n: int = -1) -> bytes:
        return self.handles.handle.read(n)

    def close(self) -> None:
        self.handles.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _CheckedLines(io.RawIOBase):
    """The bytes of a CSV file, with each data line that cannot be parsed safely blanked.

    A line holding bytes that are not UTF-8, or an odd number of double quotes (an open
    quote would swallow every following line into one field), becomes an empty line: the
    parser reads it as a row of missing values at the same place, so row numbers do not
    move, and its reason is kept in ``bad`` under its row number (line - 2). A quoted field
    spanning several lines is therefore not supported: each of its lines is a corrupt row.
    So does a first data line with more fields than the header: pandas checks the field
    count of every later line, but takes the surplus on that one for an index column.
    Blocks after the first data line whose bytes all decode and hold no quote pass through
    without a per-line loop.
    """

    def __init__(self, raw: Any, sep: str, block: int = 1 << 20):
        self.raw = raw
        self.sep = sep
        self.block = block
        self.header_fields = 0
        self.carry = b""
        self.out = memoryview(b"")
        self.line = 0  # lines passed on so far; line 1 is the header
        self.bad: dict[int, str] = {}
        self.eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all that are checked so far when ``size`` < 0)."""
        while not len(self.out) and not self.eof:
            self._fill()
        n = len(self.out) if size is None or size < 0 else min(size, len(self.out))
        data = self.out[:n].tobytes()
        self.out = self.out[n:]
        return data

    def _fill(self) -> None:
        data = self.raw.read(self.block)
        if not data:
            self.eof = True
            complete, self.carry = self.carry, b""
        else:
            data = self.carry + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # no end of line yet: a very long line
                self.carry = data
                return
            complete, self.carry = data[:cut], data[cut:]
        if complete:
            self.out = memoryview(self._check(complete))

    def _check(self, block: bytes) -> bytes:
        first = self.line + 1
        self.line += block.count(b"\n") + (not block.endswith(b"\n"))
        decodes = block.isascii()  # no allocation: the common case of a numeric file
        if not decodes:
            try:
                block.decode("utf-8")
                decodes = True
            except UnicodeDecodeError:
                pass
        if decodes and b'"' not in block and first > 2:
            return block
        lines = block.split(b"\n")
        changed = False
        for k, line in enumerate(lines):
            if first + k == 1:
                self.header_fields = _count_fields(line, self.sep)
                continue
            reason = _line_problem(line, decodes)
            if reason is None and first + k == 2:
                n = _count_fields(line, self.sep)
                if n > self.header_fields:
                    reason = f"wrong column count (expected {self.header_fields} fields, saw {n})"
            if reason is not None:
                self.bad[first + k - 2] = reason
                lines[k] = b""
                changed = True
        return b"\n".join(lines) if changed else block


def _line_problem(line: bytes, decodes: bool) -> str | None:
    """Why ``line`` cannot be parsed on its own, or ``None``."""
    if not decodes:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (f"undecodable byte 0x{line[exc.start]:02x} at byte {exc.start + 1} of the "
                    "line (not UTF-8)")
    if line.count(b'"') % 2:
        return "unterminated quote (an odd number of \'\"\' on the line)"
    return None


def _count_fields(line: bytes, sep: str) -> int:
    """Number of fields on one line, quoted separators not counted (as pandas splits it)."""
    text = line.decode("utf-8", "replace").rstrip("\r")
    return len(next(csv.reader([text], delimiter=sep))) if text else 0


class _ParquetSource(Source):
    def __init__(self, path: Path):
        import pyarrow.parquet as pq

        try:
            self.file = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, … for a bad file
            raise UsageError(f"cannot read {path} as Parquet: {exc}") from None
        self.columns = list(self.file.schema_arrow.names)
        self.n_rows = self.file.metadata.num_rows

    def frames(self, used, chunksize, start_row):
        meta = self.file.metadata
        first, offset = 0, 0
        # Skip whole row groups before start_row: a resumed replay does not re-read them.
        while first < meta.num_row_groups and offset + meta.row_group(first).num_rows <= start_row:
            offset += meta.row_group(first).num_rows
            first += 1
        if first == meta.num_row_groups:
            return
        batches = self.file.iter_batches(
            batch_size=chunksize,
            row_groups=list(range(first, meta.num_row_groups)),
            columns=used,
            use_threads=False,
        )
        for batch in batches:
            n = batch.num_rows
            rows = np.arange(offset, offset + n, dtype=np.int64)
            offset += n
            if offset <= start_row:
                continue
            frame = batch.to_pandas()
            yield rows, {c: frame[c] for c in used}, []
