"""NWB recordings (``.nwb``): time series and spike times on one grid of time bins.

An NWB file holds series sampled at their own rates (EMG at 1 kHz, hand position at 60 Hz,
LFP, calcium traces …) and, for sorted units, spike *times*. A replay needs rows, so the
reader lays a grid of bins of ``bin_ms`` (default :data:`~onlinesparse.replay.source.
DEFAULT_BIN_MS`, 20 ms) from the earliest sample or spike of the file to the latest, and

* counts each unit's spikes in each bin ``[start, end)`` (a spike on an edge goes to the
  later bin): column ``units_<id>``, one per row of the units table;
* samples every ``TimeSeries`` of ``acquisition`` and of the processing modules **at each
  bin's end**, by linear interpolation between its two neighbouring samples (a sample within
  10⁻⁶ bin of the bin's end is taken as it is). Row *k*'s time is its bin's end, so a row
  holds the spikes of the bin that has just ended and the behaviour at that moment, as a
  decoder running live would have them. Outside a series' first and last sample the value
  is missing (NaN: imputed or skipped as ``--missing`` says), never extrapolated. A series
  faster than the bins is sampled, not averaged: smooth it first, or narrow the bins;
* names a one-channel series by its name and an n-channel one ``<series>_0`` …
  ``<series>_<n-1>``; the series' name stands for all its channels in ``--target`` and
  ``--features``. The grid's time is the column ``time`` (seconds, the file's own clock).

By default the features are the neural data: the units and every series outside the
behavioural containers (a processing module named ``behavior``, ``Position``,
``BehavioralTimeSeries``, ``SpatialSeries`` …), which are the targets' siblings; name the
targets with ``--target`` as for any recording. Data with a ``conversion`` or ``offset``
are given in their SI units. Series of text, or with more than two dimensions (images), are
left out and said so. Spike times that are NaN are not spikes; a unit whose spike times are
not in increasing order is sorted in memory (that unit only).

Refused, with a message naming the problem: a file that is not HDF5 or is cut short, an HDF5
file that is not NWB, a file with neither a usable series nor a unit, a series whose data
and timestamps differ in length, whose timestamps are not finite and increasing, or whose
rate is not a positive number. Reading needs ``pynwb`` (``pip install
'onlinesparse[nwb]'``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.source import DEFAULT_BIN_MS, Source
from onlinesparse.replay.values import widen_like_text

__all__ = ["NwbSource", "BEHAVIOURAL_TYPES"]

#: Containers whose series are behaviour (targets, not default features).
BEHAVIOURAL_TYPES = ("Position", "BehavioralTimeSeries", "CompassDirection", "EyeTracking",
                     "PupilTracking", "SpatialSeries", "BehavioralEvents")
_BLOCK = 1 << 20  # elements read at a time when a whole dataset must be scanned
_EXACT = 1e-6  # a sample this close to a bin's end (in bins) is taken as it is


@dataclass
class _Series:
    """One TimeSeries: where its data are, its clock, and its columns."""

    name: str
    data: str  # HDF5 path of the data
    columns: list[str]
    behavioural: bool
    n: int
    timestamps: str | None = None
    start: float = 0.0
    rate: float = 1.0
    scale: tuple[float, float] = (1.0, 0.0)  # conversion, offset
    first: float = 0.0
    last: float = 0.0


@dataclass
class _Units:
    """The units table: one column of counts per unit."""

    times: str  # HDF5 path of the flat spike times
    ends: np.ndarray  # end of each unit's spike times in the flat array
    columns: list[str]
    unsorted: set[int] = field(default_factory=set)


def _needs_pynwb() -> Any:
    try:
        import pynwb
    except ImportError:
        raise UsageError("reading an NWB recording needs pynwb, which is not installed: "
                         "pip install 'onlinesparse[nwb]'") from None
    return pynwb


class NwbSource(Source):
    """The rows of an NWB file on a grid of ``bin_ms`` bins (see the module's docstring)."""

    def __init__(self, path: Path, bin_ms: float | None = None):
        pynwb = _needs_pynwb()
        self._spike_span: tuple[float, float] | None = None
        import h5py

        self.path = path
        self.bin_ms = float(bin_ms) if bin_ms is not None else DEFAULT_BIN_MS
        self.width = self.bin_ms / 1000.0
        self.notes: list[str] = []
        try:
            with h5py.File(path, "r") as f:
                is_nwb = "nwb_version" in f.attrs
        except OSError as exc:  # not HDF5, cut short, unreadable
            raise UsageError(f"cannot read {path.name} as NWB (HDF5): {exc}") from None
        if not is_nwb:
            raise UsageError(f"{path.name} is an HDF5 file but not NWB (no 'nwb_version' "
                             "attribute at its root)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # cached-namespace notices are not the user's
                with pynwb.NWBHDF5IO(str(path), "r") as io:
                    nwb = io.read()
                    self.series = self._find_series(nwb)
                    self.units = self._find_units(nwb)
        except UsageError:
            raise
        except Exception as exc:  # hdmf/pynwb raise many types for a damaged file
            raise UsageError(f"cannot read {path.name} as NWB: {type(exc).__name__}: "
                             f"{exc}") from None
        self._lay_grid()

    # -- what the file holds ------------------------------------------------------------

    def _find_series(self, nwb: Any) -> list[_Series]:
        from pynwb import TimeSeries

        found: list[tuple[Any, bool]] = []

        def walk(obj: Any, behavioural: bool, depth: int = 0) -> None:
            behavioural = behavioural or type(obj).__name__ in BEHAVIOURAL_TYPES
            if isinstance(obj, TimeSeries):
                found.append((obj, behavioural))
            elif depth < 4:
                for child in getattr(obj, "children", []):
                    walk(child, behavioural, depth + 1)

        for obj in nwb.acquisition.values():
            walk(obj, False)
        for name, module in nwb.processing.items():
            for obj in module.data_interfaces.values():
                walk(obj, name.lower() in ("behavior", "behaviour"))
        series, taken = [], {"time"}
        for ts, behavioural in found:
            made = self._describe(ts, behavioural, taken)
            if made is not None:
                series.append(made)
                taken.update(made.columns)
        return series

    def _describe(self, ts: Any, behavioural: bool, taken: set[str]) -> _Series | None:
        data = ts.data
        name = ts.name if ts.name not in taken else f"{ts.parent.name}_{ts.name}"
        if not hasattr(data, "name") or not hasattr(data, "shape"):
            self.notes.append(f"series {name!r} is left out: its data are not stored in the "
                              "file")
            return None
        if data.dtype.kind not in "biuf" or data.ndim not in (1, 2):
            self.notes.append(f"series {name!r} is left out: "
                              + ("not numbers" if data.dtype.kind not in "biuf"
                                 else f"{data.ndim}-D data"))
            return None
        k = 1 if data.ndim == 1 else data.shape[1]
        columns = [name] if data.ndim == 1 else [f"{name}_{j}" for j in range(k)]
        s = _Series(name, data.name, columns, behavioural, int(data.shape[0]),
                    scale=(float(ts.conversion or 1.0), float(getattr(ts, "offset", 0) or 0)))
        if s.n == 0:
            self.notes.append(f"series {name!r} is left out: it has no samples")
            return None
        if ts.timestamps is not None:
            stamps = ts.timestamps
            if len(stamps) != s.n:
                raise UsageError(f"{self.path.name}: series {name!r} has {s.n} samples but "
                                 f"{len(stamps)} timestamps")
            s.timestamps = stamps.name
            s.first, s.last = _check_increasing(stamps, name, self.path.name)
        else:
            rate, start = ts.rate, ts.starting_time
            if rate is None or not (math.isfinite(rate) and rate > 0):
                raise UsageError(f"{self.path.name}: series {name!r} has no timestamps and its "
                                 f"rate is {rate!r}, not a positive number")
            s.start, s.rate = float(start or 0.0), float(rate)
            s.first, s.last = s.start, s.start + (s.n - 1) / s.rate
        return s

    def _find_units(self, nwb: Any) -> _Units | None:
        units = nwb.units
        if units is None or len(units.id) == 0 or "spike_times" not in units.colnames:
            return None
        index = units["spike_times"]
        ends = np.asarray(index.data[:], dtype=np.int64)
        times = index.target.data
        out = _Units(times.name, ends, [f"units_{i}" for i in units.id[:]])
        firsts, lasts, nans, disordered = [], [], 0, 0
        for u in range(len(ends)):  # one unit in memory at a time
            spikes = np.asarray(times[(ends[u - 1] if u else 0):ends[u]], dtype=np.float64)
            finite = spikes[np.isfinite(spikes)]
            nans += len(spikes) - len(finite)
            disordered += bool(np.any(np.diff(finite) < 0))
            if len(finite) != len(spikes) or np.any(np.diff(finite) < 0):
                out.unsorted.add(u)
            if len(finite):
                firsts.append(finite.min())
                lasts.append(finite.max())
        self._spike_span = (min(firsts), max(lasts)) if firsts else None
        if nans:
            self.notes.append(f"{nans} spike times that are not finite are not counted")
        if disordered:
            self.notes.append(f"the spike times of {disordered} units are not in order: "
                              "sorted in memory")
        return out

    def _lay_grid(self) -> None:
        spans = [(s.first, s.last) for s in self.series]
        if self.units is not None and self._spike_span is not None:
            spans.append(self._spike_span)
        if not spans:
            raise UsageError(f"{self.path.name} holds no numeric TimeSeries (in acquisition or "
                             "processing) and no spikes in a units table: nothing to replay")
        self.t0 = min(a for a, _ in spans)
        t1 = max(b for _, b in spans)
        self.n_rows = max(0, math.ceil((t1 - self.t0) / self.width - _EXACT))
        span = self._spike_span if self.units is not None else None
        if span is not None and span[1] >= self.t0 + self.n_rows * self.width:
            self.n_rows += 1  # the last spike on the grid's end: its bin [start, end) too
        self.time_column = "time"
        unit_columns = self.units.columns if self.units is not None else []
        self.columns = ["time", *[c for s in self.series for c in s.columns], *unit_columns]
        self.aliases = {s.name: s.columns for s in self.series if len(s.columns) > 1}
        self.default_features = [*unit_columns, *[c for s in self.series if not s.behavioural
                                                 for c in s.columns]]
        self.notes.insert(0, f"{self.path.name}: {self.n_rows} bins of {self.bin_ms:g} ms from "
                             f"{self.t0:.3f} s; spikes counted per bin, series sampled at each "
                             "bin's end (linear interpolation, missing outside their samples)")

    def describe_row(self, row: int) -> str:
        """``row 5 (bin ending at 0.120 s)``."""
        return f"row {row} (bin ending at {self.t0 + (row + 1) * self.width:.3f} s)"

    # -- rows ---------------------------------------------------------------------------

    def frames(self, used, chunksize, start_row):
        import h5py

        with h5py.File(self.path, "r") as f:
            cursors = _UnitCursors(f, self.units) if self.units is not None else None
            for lo in range(start_row, self.n_rows, chunksize):
                hi = min(lo + chunksize, self.n_rows)
                times = self.t0 + np.arange(lo + 1, hi + 1) * self.width
                values: dict[str, np.ndarray] = {}
                for s in self.series:
                    wanted = [j for j, c in enumerate(s.columns) if c in used]
                    if wanted:
                        block = _sample(f, s, times, self.width)
                        values.update({s.columns[j]: block[:, j] for j in wanted})
                if cursors is not None:
                    edges = self.t0 + np.arange(lo, hi + 1) * self.width
                    for u, name in enumerate(self.units.columns):
                        if name in used:
                            values[name] = cursors.count(u, edges)
                if "time" in used:
                    values["time"] = times
                yield np.arange(lo, hi, dtype=np.int64), values, []


def _check_increasing(stamps: Any, name: str, file: str) -> tuple[float, float]:
    """First and last of ``stamps`` (an HDF5 dataset), read a block at a time, after checking
    that they are finite and increasing."""
    previous, first = -np.inf, None
    for lo in range(0, len(stamps), _BLOCK):
        block = np.asarray(stamps[lo:lo + _BLOCK], dtype=np.float64)
        if not np.all(np.isfinite(block)):
            raise UsageError(f"{file}: series {name!r} has timestamps that are not finite")
        steps = np.diff(np.concatenate([[previous], block]))
        if np.any(steps <= 0):
            bad = lo + int(np.flatnonzero(steps <= 0)[0])
            raise UsageError(f"{file}: the timestamps of series {name!r} do not increase at "
                             f"sample {bad}")
        first = block[0] if first is None else first
        previous = block[-1]
    return float(first), float(previous)


def _bisect(ds: Any, x: float, lo: int, hi: int) -> int:
    """First index in ``[lo, hi)`` of sorted dataset ``ds`` whose value is ≥ ``x`` (one
    element read per step: a search costs log₂ n small reads, not the dataset)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if ds[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _sample(f: Any, s: _Series, times: np.ndarray, width: float) -> np.ndarray:
    """Series ``s`` at ``times`` (ascending): linear interpolation between the neighbouring
    samples, a sample within 10⁻⁶ bin taken as it is, NaN outside the samples."""
    tol = _EXACT * width
    if s.timestamps is None:
        i0 = max(0, math.floor((times[0] - tol - s.start) * s.rate))
        i1 = min(s.n, math.ceil((times[-1] + tol - s.start) * s.rate) + 1)
        local = s.start + np.arange(i0, i1) / s.rate
    else:
        stamps = f[s.timestamps]
        i0 = max(0, _bisect(stamps, times[0] - tol, 0, s.n) - 1)
        i1 = min(s.n, _bisect(stamps, times[-1] + tol, i0, s.n) + 1)
        local = np.asarray(stamps[i0:i1], dtype=np.float64)
    out = np.full((len(times), len(s.columns)), np.nan)
    if i1 <= i0:
        return out
    raw = np.asarray(f[s.data][i0:i1])
    data = widen_like_text(raw) if raw.dtype.kind == "f" and raw.itemsize < 8 else \
        raw.astype(np.float64)
    data = data.reshape(len(local), -1)
    if s.scale != (1.0, 0.0):
        data = data * s.scale[0] + s.scale[1]
    k = np.searchsorted(local, times, side="right") - 1  # local[k] <= t < local[k + 1]
    inside = (times >= local[0] - tol) & (times <= local[-1] + tol)
    k = np.clip(k, 0, len(local) - 1)
    k1 = np.minimum(k + 1, len(local) - 1)
    at_k = np.abs(times - local[k]) <= tol
    at_k1 = ~at_k & (np.abs(local[k1] - times) <= tol)
    span = local[k1] - local[k]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(span > 0, (times - local[k]) / span, 0.0)[:, None]
        between = data[k] + (data[k1] - data[k]) * frac
    out[:] = np.where(at_k[:, None], data[k], np.where(at_k1[:, None], data[k1], between))
    out[~inside] = np.nan
    return out


class _UnitCursors:
    """Each unit's spikes, found bin by bin without reading the spike times whole: a binary
    search in the file for each chunk's span (units out of order are sorted in memory)."""

    def __init__(self, f: Any, units: _Units):
        self.times = f[units.times]
        self.units = units
        self.sorted: dict[int, np.ndarray] = {}
        for u in units.unsorted:
            spikes = np.asarray(self.times[self._lo(u):units.ends[u]], dtype=np.float64)
            self.sorted[u] = np.sort(spikes[np.isfinite(spikes)])

    def _lo(self, u: int) -> int:
        return int(self.units.ends[u - 1]) if u else 0

    def count(self, u: int, edges: np.ndarray) -> np.ndarray:
        """Spikes of unit ``u`` in each bin between consecutive ``edges``."""
        if u in self.sorted:
            spikes = self.sorted[u]
        else:
            lo, hi = self._lo(u), int(self.units.ends[u])
            a = _bisect(self.times, edges[0], lo, hi)
            b = _bisect(self.times, edges[-1], a, hi)
            spikes = np.asarray(self.times[a:b], dtype=np.float64)
        return np.diff(np.searchsorted(spikes, edges, side="left")).astype(np.float64)
