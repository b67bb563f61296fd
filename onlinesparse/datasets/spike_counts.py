"""A simulated motor-cortex recording of raw spike counts, for decoding benchmarks.

The generative model, in the order the generator draws it:

1. **Latent movement.** A hand moves in the plane by an endless sequence of random reaches:
   from where it is to a target drawn uniformly in a disc of radius 10 cm, along a
   minimum-jerk profile lasting 0.4–1.0 s, then a hold of 0.2–0.8 s. A smooth random
   wander (an Ornstein–Uhlenbeck velocity of 3 cm/s, τ = 300 ms, its displacement slower
   than 10 s taken out so that the hand stays in the workspace) is added throughout, so
   the velocity is never exactly zero and no two reaches repeat. The latent velocity
   ``v(t)`` (2-D, m/s, the gradient of the position) is ground truth (columns
   ``latent_vx``, ``latent_vy``).
2. **Spikes.** Channel ``i`` (a multi-unit threshold-crossing channel) fires as a Poisson
   process whose log rate is cosine-tuned, with saturation, to the latent velocity ``δᵢ``
   rows earlier, plus a weaker position term:
   ``λᵢ(t) = bᵢ · exp(gᵢ ⋅ tanh(uᵢ·v(t − δᵢ)/v₉₅) + pᵢ ⋅ uᵢ·x(t − δᵢ)/10 cm)``, with ``uᵢ``
   the channel's preferred direction, ``bᵢ`` its baseline (30–120 Hz, log-uniform),
   ``gᵢ`` its depth (0.5–1.5), ``pᵢ`` its position gain (±0.3), ``δᵢ`` its delay (0 to
   the velocity's lag, uniform: the population spans cells leading the hand by 100 ms to
   cells in step with it) and ``v₉₅`` the 95th percentile of the speed. The counts are
   nonlinear in ``v``. A channel column holds the spike COUNT in its bin (``bin_ms``), as
   floats with integer values (float so that a missing cell can be NaN).
3. **Targets, lagging the latent.**
   ``velocity(t) = v_x(t − 100 ms) + noise`` (the hand follows the cortex by ~100 ms);
   ``emg_k(t) = softplus(aₖ ⋅ dₖ·v(t − Lₖ)/v₉₅ + cₖ ⋅ |v(t − Lₖ)|/v₉₅ − 1) ⋅ noise`` with a
   pulling direction ``dₖ``, a co-contraction term in the speed, lags ``L₀ = 60 ms`` and
   ``L₁ = 80 ms``, and a log-normal multiplicative noise (20 %): EMG envelopes that are
   rectified, hence nonlinear in the velocity and in the counts.
4. **Faults.** One channel (drawn among the eight most strongly tuned) drops out: from
   row ``dropout_at · n_rows`` on it records 0 spikes; and ``n_nan`` cells of the channel
   columns, scattered over rows after the first 1 % (so that the first samples a model
   learns are complete), are NaN.

The returned frame holds ``time`` (s, bin start), ``n00`` … (counts), ``emg_0``, ``emg_1``,
``velocity`` and the ground truth ``latent_vx``, ``latent_vy``; ``frame.attrs["truth"]``
holds the lags (in bins), the dropped channel and its first silent row, the positions of
the NaN cells, and each channel's tuning. Everything is drawn from one
``numpy.random.Generator`` seeded by ``seed``: a seed gives the same recording, bit for bit.

>>> f = make_spike_count_session(n_channels=4, n_rows=500, seed=1, n_nan=3)
>>> list(f.columns)
['time', 'n00', 'n01', 'n02', 'n03', 'emg_0', 'emg_1', 'velocity', 'latent_vx', 'latent_vy']
>>> int(f[["n00", "n01", "n02", "n03"]].isna().sum().sum()), f.attrs["truth"]["velocity_lag"]
(3, 5)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["make_spike_count_session"]

_REACH_S = (0.4, 1.0)  # duration of a reach
_HOLD_S = (0.2, 0.8)  # duration of a hold
_RADIUS = 0.1  # m: targets in a disc of this radius
_WANDER = (0.03, 0.3)  # OU wander: standard deviation (m/s) and time constant (s)
_DRIFT_S = 10.0  # s: the wander's displacement slower than this is taken out
_BASELINE_HZ = (30.0, 120.0)
_DEPTH = (0.5, 1.5)
_EMG_LAGS_MS = (60.0, 80.0)
_EMG_NOISE = 0.2
_VELOCITY_NOISE = 0.02  # fraction of the velocity's standard deviation


def _minimum_jerk(n: int) -> np.ndarray:
    """Fraction 0 → 1 of the way covered by a minimum-jerk movement, over ``n`` samples."""
    s = np.linspace(0.0, 1.0, n + 1)[1:]
    return 10 * s**3 - 15 * s**4 + 6 * s**5


def _random_reaches(n: int, dt: float, rng: np.random.Generator) -> np.ndarray:
    """Hand position (n × 2, m): random reaches and holds plus a smooth random wander."""
    pieces, here, total = [], np.zeros(2), 0
    while total < n:
        radius, angle = _RADIUS * np.sqrt(rng.random()), rng.uniform(0, 2 * np.pi)
        target = radius * np.array([np.cos(angle), np.sin(angle)])
        reach = max(2, round(rng.uniform(*_REACH_S) / dt))
        hold = max(1, round(rng.uniform(*_HOLD_S) / dt))
        path = here + np.outer(_minimum_jerk(reach), target - here)
        pieces += [path, np.repeat(target[None, :], hold, axis=0)]
        here, total = target, total + reach + hold
    position = np.concatenate(pieces)[:n]
    # Ornstein–Uhlenbeck wander of the velocity, integrated into the position.
    sd, tau = _WANDER
    decay = np.exp(-dt / tau)
    shocks = rng.normal(scale=sd * np.sqrt(1 - decay**2), size=(n, 2))
    wander = np.empty((n, 2))
    wander[0] = rng.normal(scale=sd, size=2)
    for t in range(1, n):
        wander[t] = decay * wander[t - 1] + shocks[t]
    offset = np.cumsum(wander, axis=0) * dt
    return position + offset - _drift(offset, max(1, round(_DRIFT_S / dt)))


def _drift(offset: np.ndarray, window: int) -> np.ndarray:
    """The slow part of the wander's integral (a causal running mean over ``window``
    samples), removed so that the hand does not random-walk away from the workspace."""
    padded = np.concatenate([np.repeat(offset[:1], window, axis=0), offset])
    cumulative = np.cumsum(padded, axis=0)
    return (cumulative[window:] - cumulative[:-window]) / window


def _tuning(n_channels: int, max_delay: int, rng: np.random.Generator
            ) -> dict[str, np.ndarray]:
    """Each channel's preferred direction (radians), baseline (Hz), depth, position gain
    and delay (rows, 0 … ``max_delay``)."""
    return {"preferred": rng.uniform(0, 2 * np.pi, n_channels),
            "delay": rng.integers(0, max_delay + 1, n_channels),
            "baseline_hz": np.exp(rng.uniform(*np.log(_BASELINE_HZ), n_channels)),
            "depth": rng.uniform(*_DEPTH, n_channels),
            "position_gain": rng.uniform(-0.3, 0.3, n_channels)}


def _spike_counts(velocity: np.ndarray, position: np.ndarray, tuning: dict[str, np.ndarray],
                  lead: int, v95: float, dt: float, rng: np.random.Generator) -> np.ndarray:
    """Poisson counts per bin of log-linear, cosine-tuned channels (n × channels), channel
    ``i`` seeing the kinematics ``delay[i]`` rows earlier; the kinematics start ``lead`` (at
    least every delay) rows before the recording."""
    delay = tuning["delay"].astype(int)
    n = len(velocity) - lead
    unit = np.column_stack([np.cos(tuning["preferred"]), np.sin(tuning["preferred"])])
    counts = np.empty((n, len(delay)))
    for i, d in enumerate(delay):
        rows = slice(lead - d, lead - d + n)
        log_rate = (np.log(tuning["baseline_hz"][i])
                    + tuning["depth"][i] * np.tanh(velocity[rows] @ unit[i] / v95)
                    + tuning["position_gain"][i] * (position[rows] @ unit[i]) / _RADIUS)
        counts[:, i] = rng.poisson(np.exp(log_rate) * dt)
    return counts


def _emg(lagged: list[np.ndarray], v95: float, rng: np.random.Generator) -> np.ndarray:
    """One EMG envelope per lagged latent velocity in ``lagged`` (n × 2 each), n × k."""
    out = np.empty((len(lagged[0]), len(lagged)))
    for k, velocity in enumerate(lagged):
        n = len(velocity)
        speed = np.hypot(velocity[:, 0], velocity[:, 1]) / v95
        angle = rng.uniform(0, 2 * np.pi)
        pull = velocity @ np.array([np.cos(angle), np.sin(angle)]) / v95
        drive = rng.uniform(2.0, 3.0) * pull + rng.uniform(0.5, 1.0) * speed - 1.0
        noise = np.exp(_EMG_NOISE * rng.normal(size=n) - _EMG_NOISE**2 / 2)
        out[:, k] = np.logaddexp(0.0, drive) * noise
    return out


def _faults(counts: np.ndarray, depth: np.ndarray, n_nan: int, dropout_at: float,
            rng: np.random.Generator) -> dict:
    """Silence one strongly tuned channel from a row on and blank ``n_nan`` cells, in place."""
    n, n_channels = counts.shape
    dropped = int(rng.choice(np.argsort(depth)[::-1][: min(8, n_channels)]))
    start = int(round(dropout_at * n))
    counts[start:, dropped] = 0.0
    first = max(1, n // 100)
    cells = rng.choice((n - first) * n_channels, size=n_nan, replace=False)
    rows, cols = first + cells // n_channels, cells % n_channels
    counts[rows, cols] = np.nan
    return {"dropped_channel": dropped, "dropout_row": start,
            "nan_cells": sorted(zip(rows.tolist(), cols.tolist(), strict=True))}


def make_spike_count_session(n_channels: int = 80, n_rows: int = 60_000, bin_ms: float = 20.0,
                             seed: int = 0, n_nan: int = 40, dropout_at: float = 0.6,
                             velocity_lag_ms: float = 100.0) -> pd.DataFrame:
    """Simulate a motor-cortex recording of spike counts with EMG and hand velocity.

    The generative model is the module's docstring. ``n_channels`` Poisson channels in
    ``bin_ms`` bins, ``n_rows`` rows; ``n_nan`` NaN cells in the channel columns; one channel
    silent from row ``round(dropout_at · n_rows)`` on (``dropout_at ≥ 1``: never);
    ``velocity`` lags the latent velocity by ``velocity_lag_ms``. Deterministic in ``seed``.
    """
    if n_channels < 1 or n_rows < 100:
        raise ValueError("need at least one channel and 100 rows")
    if not 0 <= n_nan <= (n_rows - max(1, n_rows // 100)) * n_channels:
        raise ValueError("n_nan must be between 0 and the number of cells after the first 1 %")
    rng = np.random.default_rng(seed)
    dt = bin_ms / 1000.0
    lags = {"velocity_lag": round(velocity_lag_ms / bin_ms),
            "emg_lags": [round(ms / bin_ms) for ms in _EMG_LAGS_MS]}
    head = max(lags["velocity_lag"], *lags["emg_lags"])
    position = _random_reaches(n_rows + head, dt, rng)
    latent = np.gradient(position, dt, axis=0)
    v95 = float(np.percentile(np.hypot(latent[:, 0], latent[:, 1]), 95))
    now = slice(head, head + n_rows)  # the rows of the recording on the latent's time base
    tuning = _tuning(n_channels, lags["velocity_lag"], rng)
    seen = slice(head - lags["velocity_lag"], head + n_rows)
    counts = _spike_counts(latent[seen], position[seen], tuning, lags["velocity_lag"], v95,
                           dt, rng)
    faults = _faults(counts, tuning["depth"], n_nan, min(dropout_at, 1.0), rng)

    def lagged(lag: int) -> np.ndarray:
        return latent[head - lag: head - lag + n_rows]

    emg = _emg([lagged(lag) for lag in lags["emg_lags"]], v95, rng)
    hand = lagged(lags["velocity_lag"])[:, 0]
    hand = hand + _VELOCITY_NOISE * hand.std() * rng.normal(size=n_rows)
    channels = [f"n{i:02d}" for i in range(n_channels)]
    frame = pd.DataFrame(counts, columns=channels)
    frame.insert(0, "time", np.arange(n_rows) * dt)
    frame["emg_0"], frame["emg_1"], frame["velocity"] = emg[:, 0], emg[:, 1], hand
    frame["latent_vx"], frame["latent_vy"] = latent[now, 0], latent[now, 1]
    frame.attrs["truth"] = {
        "seed": seed, "bin_ms": bin_ms, **lags, **faults, "v95": v95, "channels": channels,
        **{key: value.tolist() for key, value in tuning.items()}}
    return frame
