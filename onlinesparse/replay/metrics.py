"""Constant-memory accumulators of a replay: accuracy, latency and a thinned time series.

All three are plain picklable objects so that a checkpoint carries them, and resuming from a
checkpoint continues them exactly where they were.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

__all__ = ["RegressionAccumulator", "LatencyHistogram", "Trace", "interval_z", "trivial_note",
           "DIVERGED_NMSE"]

#: nMSE above which a replay counts as diverged: a squared error a million times the
#: target's variance, where predicting the target's mean scores 1 and a model that learned
#: anything scores below it.
DIVERGED_NMSE = 1e6


def interval_z(level: float) -> float:
    """Half-width, in standard deviations, of the central Gaussian interval of ``level``.

    >>> round(interval_z(0.95), 3)
    1.96

    """
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def trivial_note(last_target: bool) -> str:
    """What the ``mean`` and ``last`` columns are, and, for a model that ``last_target``
    weighs the last target in, that its scores include persistence."""
    note = ("mean, last: the nMSE of the running mean of the scored targets before each one "
            "and of the last one (persistence), from the second scored sample on: a model "
            "below both learned more than the target's level and its smoothness")
    if last_target:
        note += ("; this model weighs the last target in as an expert (last_target=True): "
                 "a decoder that will not see past targets is --param last_target=False")
    return note


class RegressionAccumulator:
    """MAE, RMSE, nMSE, R² and interval coverage, updated one prediction at a time, and
    the nMSE of the two trivial predictors on the same stream.

    nMSE is the mean squared error divided by the variance of the truth over the same
    samples (Ting et al.'s measure), so ``R² = 1 − nMSE``. The variance is a Welford running
    variance: summing squares would lose the digits that matter when the target has a large
    mean and a small spread, as EMG often does.

    The trivial predictors are the running mean of the targets scored before and the last
    target scored (persistence), scored from the second sample on and divided by the same
    variance: a model below both has learned more than the stream's level and its
    smoothness. On a smooth target (an EMG envelope, a hand's velocity at 20 ms) the last
    target alone scores far below the running mean, and a model that weighs it in as an
    expert (``last_target=True``) can look like a decoder while it mostly repeats it.

    Parameters
    ----------
    z
        Half-width of the predictive interval in standard deviations (1.96 for 95 %).

    Examples
    --------
    >>> acc = RegressionAccumulator(z=1.96)
    >>> for y, mu, sigma in [(1.0, 1.5, 1.0), (2.0, 2.0, 1.0), (3.0, 2.0, 0.1)]:
    ...     acc.update(y, mu, sigma)
    >>> round(acc.mae, 3), round(acc.rmse, 3), acc.coverage
    (0.5, 0.645, 0.6666666666666666)

    """

    def __init__(self, z: float = 1.96):
        self.z = z
        self.n = 0
        self.abs_sum = 0.0
        self.sq_sum = 0.0
        self.y_mean = 0.0
        self.y_m2 = 0.0
        self.n_dist = 0
        self.n_covered = 0

    # The trivial predictors' squared errors (class defaults: a checkpoint written before
    # they were kept scores them from its resumption on).
    last_y = math.nan
    n_trivial = 0
    mean_sq_sum = 0.0
    last_sq_sum = 0.0

    def update(self, y: float, mu: float, sigma: float = math.nan) -> None:
        err = y - mu
        if self.last_y == self.last_y:  # (a last target known: not the first sample's)
            self.n_trivial += 1
            self.mean_sq_sum += (y - self.y_mean) ** 2
            self.last_sq_sum += (y - self.last_y) ** 2
        self.last_y = y
        self.n += 1
        self.abs_sum += abs(err)
        self.sq_sum += err * err
        delta = y - self.y_mean
        self.y_mean += delta / self.n
        self.y_m2 += delta * (y - self.y_mean)
        if sigma == sigma:  # not NaN: the model gave a predictive distribution
            self.n_dist += 1
            if abs(err) <= self.z * sigma:
                self.n_covered += 1

    @property
    def mae(self) -> float:
        return self.abs_sum / self.n if self.n else math.nan

    @property
    def mse(self) -> float:
        return self.sq_sum / self.n if self.n else math.nan

    @property
    def rmse(self) -> float:
        return math.sqrt(self.mse) if self.n else math.nan

    @property
    def _variance(self) -> float:
        """The variance of the scored targets (0 before any)."""
        return self.y_m2 / self.n if self.n else 0.0

    @property
    def nmse(self) -> float:
        var = self._variance
        return self.mse / var if var > 0.0 else math.nan

    def _normalised(self, sq_sum: float) -> float:
        var = self._variance
        return sq_sum / self.n_trivial / var if self.n_trivial and var > 0.0 else math.nan

    @property
    def nmse_running_mean(self) -> float:
        """The nMSE of the running mean of the targets scored before each one."""
        return self._normalised(self.mean_sq_sum)

    @property
    def nmse_last_target(self) -> float:
        """The nMSE of the last target scored (persistence)."""
        return self._normalised(self.last_sq_sum)

    @property
    def r2(self) -> float:
        return 1.0 - self.nmse

    @property
    def diverged(self) -> bool:
        """Whether the scores say the model diverged: a non-finite mean squared error, or an
        nMSE above :data:`DIVERGED_NMSE` (a constant target has no nMSE and is not judged)."""
        if not self.n:
            return False
        nmse = self.nmse
        return not math.isfinite(self.mse) or (nmse == nmse and not nmse <= DIVERGED_NMSE)

    @property
    def coverage(self) -> float | None:
        return self.n_covered / self.n_dist if self.n_dist else None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "mae": self.mae,
            "rmse": self.rmse,
            "nmse": self.nmse,
            "r2": self.r2,
            "coverage": self.coverage,
            "n_scored": self.n,
            "nmse_running_mean": self.nmse_running_mean,
            "nmse_last_target": self.nmse_last_target,
        }


class LatencyHistogram:
    """Latencies on a logarithmic grid: constant memory, quantiles to about ±2 %.

    The grid runs from 10 ns to 100 s with ``bins_per_decade`` bins per decade; values
    outside go to the end bins. The mean, minimum and maximum are kept exactly.

    Examples
    --------
    >>> h = LatencyHistogram()
    >>> for v in [10.0] * 98 + [100.0, 1000.0]:
    ...     h.add(v)
    >>> round(h.quantile(0.5)), round(h.quantile(0.99), -1)
    (10, 100.0)

    """

    LOW_US = 1e-2
    HIGH_US = 1e8

    def __init__(self, bins_per_decade: int = 50):
        self.bins_per_decade = bins_per_decade
        n_bins = int(round(math.log10(self.HIGH_US / self.LOW_US) * bins_per_decade))
        self.counts = np.zeros(n_bins, dtype=np.int64)
        self.n = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0

    @property
    def edges(self) -> np.ndarray:
        """Bin edges in µs (one more than bins)."""
        n_bins = len(self.counts)
        return self.LOW_US * 10.0 ** (np.arange(n_bins + 1) / self.bins_per_decade)

    def add(self, us: float) -> None:
        if us > 0.0:
            i = int(math.log10(us / self.LOW_US) * self.bins_per_decade)
            i = min(max(i, 0), len(self.counts) - 1)
        else:
            i = 0
        self.counts[i] += 1
        self.n += 1
        self.total += us
        self.min = min(self.min, us)
        self.max = max(self.max, us)

    def quantile(self, q: float) -> float:
        """The ``q`` quantile, interpolated geometrically inside its bin."""
        if not self.n:
            return math.nan
        rank = q * self.n
        cum = np.cumsum(self.counts)
        i = int(np.searchsorted(cum, rank, side="left"))
        i = min(i, len(self.counts) - 1)
        before = cum[i - 1] if i else 0
        inside = self.counts[i]
        frac = (rank - before) / inside if inside else 0.5
        edges = self.edges
        value = edges[i] * (edges[i + 1] / edges[i]) ** min(max(frac, 0.0), 1.0)
        return float(min(max(value, self.min), self.max))

    def as_dict(self) -> dict[str, float | int]:
        return {
            "median": self.quantile(0.5),
            "p99": self.quantile(0.99),
            "mean": self.total / self.n if self.n else math.nan,
            "max": self.max if self.n else math.nan,
            "n": self.n,
        }


class Trace:
    """A time series recorded every ``every`` calls, thinned to at most ``capacity`` points.

    When full, every other point is dropped and the recording interval doubles, so a replay of
    any length keeps a bounded, evenly spaced history.

    Examples
    --------
    >>> tr = Trace(every=1, capacity=4)
    >>> for i in range(10):
    ...     tr.offer(float(i), {"n_basis": float(i)})
    >>> tr.times, tr.every
    ([0.0, 4.0, 8.0], 4)

    """

    def __init__(self, every: int = 100, capacity: int = 4096):
        self.every = max(int(every), 1)
        self.capacity = max(int(capacity), 2)
        self.calls = 0
        self.times: list[float] = []
        self.values: dict[str, list[float]] = {}

    def due(self) -> bool:
        """Count one call; True when this call should be recorded."""
        self.calls += 1
        return (self.calls - 1) % self.every == 0

    def offer(self, t: float, values: dict[str, float]) -> None:
        """Record ``values`` at time ``t`` if this call is due."""
        if self.due():
            self.record(t, values)

    def record(self, t: float, values: dict[str, float]) -> None:
        n = len(self.times)
        for key, value in values.items():
            # A key that appears late is padded with NaN so all series stay aligned.
            self.values.setdefault(key, [math.nan] * n).append(float(value))
        for series in self.values.values():
            if len(series) == n:
                series.append(math.nan)
        self.times.append(float(t))
        if len(self.times) >= self.capacity:
            self.times = self.times[::2]
            self.values = {k: v[::2] for k, v in self.values.items()}
            self.every *= 2

    def as_arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return np.asarray(self.times), {k: np.asarray(v) for k, v in self.values.items()}
