"""A simulated primary-motor-cortex session with EMG, in the spirit of Ting et al. section 6.2.

A monkey makes centre-out reaches to eight targets on a circle (Sergio & Kalaska's task):
hold at the centre, reach, hold at the target, return. Each neuron's firing rate is
cosine-tuned to the hand's velocity around its preferred direction, with a tonic term tuned
to hand position; spikes are Poisson in 10 ms bins and the recorded "firing rate" of a bin
is a causal exponential average of the spike counts (τ = 60 ms), in Hz.

Each muscle's EMG is a sparse function of a *known* subset of the recorded rates plus
noise: linear for most muscles, softly rectified (softplus, a mild nonlinearity: a muscle is
silent below a threshold) for a few. The ground truth (relevant neurons, their weights, which
muscles are nonlinear) comes with the data, so a replay can be judged on how well it
recovers the relevant neurons, as Ting et al.'s Table 1 does against its ModelSearch baseline.

Everything is drawn from one ``numpy.random.Generator`` seeded by ``seed``, so a seed always
gives the same recording, bit for bit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["MotorCortexSession", "make_motor_cortex_session", "MUSCLES"]

MUSCLES = (
    "deltoid_ant",
    "deltoid_post",
    "pectoralis",
    "biceps",
    "triceps_lat",
    "brachioradialis",
    "trapezius",
    "latissimus",
    "infraspinatus",
    "teres_major",
    "brachialis",
)


@dataclass
class MotorCortexSession:
    """A simulated recording and its ground truth.

    Attributes
    ----------
    frame
        One row per bin: ``time`` (s), ``trial``, ``direction`` (degrees), the neurons'
        rates ``n01``, ``n02``, … (Hz) and the muscles' EMG ``emg_<muscle>``.
    neurons
        Names of the neuron columns.
    muscles
        Names of the EMG columns.
    relevant
        ``{emg column: [neuron columns it depends on]}``.
    weights
        ``{emg column: {neuron column: weight}}`` of the linear part.
    nonlinear
        ``{emg column: True if softly rectified}``.
    bin_ms
        Bin width in milliseconds.
    seed
        The seed that made it.
    noise
        EMG noise standard deviation as a fraction of the clean EMG's.
    spikes
        Spike counts per bin, one column per neuron (the rates are their smoothed values).
    velocity
        Hand velocity (m/s), columns x and y.

    """

    frame: pd.DataFrame
    neurons: list[str]
    muscles: list[str]
    relevant: dict[str, list[str]]
    weights: dict[str, dict[str, float]]
    nonlinear: dict[str, bool]
    bin_ms: float
    seed: int
    noise: float = field(default=0.1)
    spikes: np.ndarray | None = None
    velocity: np.ndarray | None = None

    def counts_frame(self) -> pd.DataFrame:
        """The session as a decoder sees spike-sorted data: ``time`` (s), each neuron's
        spike count in the bin (integers, under the neuron's name), the EMG columns, and the
        hand velocity ``vel_x``, ``vel_y`` (m/s).

        >>> s = make_motor_cortex_session(n_neurons=3, n_muscles=1, n_trials=8,
        ...                               relevant_per_muscle=(1, 2), seed=1)
        >>> list(s.counts_frame().columns), str(s.counts_frame()["n01"].dtype)
        (['time', 'n01', 'n02', 'n03', 'emg_deltoid_ant', 'vel_x', 'vel_y'], 'int64')

        """
        frame = pd.DataFrame(np.asarray(self.spikes, dtype=np.int64), columns=self.neurons)
        frame.insert(0, "time", self.frame["time"].to_numpy())
        for name in self.muscles:
            frame[name] = self.frame[name].to_numpy()
        frame["vel_x"], frame["vel_y"] = self.velocity[:, 0], self.velocity[:, 1]
        return frame

    def truth(self) -> dict:
        """The ground truth as a JSON-ready dictionary."""
        return {
            "seed": self.seed,
            "bin_ms": self.bin_ms,
            "noise": self.noise,
            "neurons": self.neurons,
            "muscles": self.muscles,
            "relevant": self.relevant,
            "weights": self.weights,
            "nonlinear": self.nonlinear,
        }

    def write(self, path: str | Path) -> Path:
        """Write the recording (``.parquet``, ``.csv`` or ``.npz``) and ``<stem>.truth.json``.

        NPZ recordings hold one 1-D array per column.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        suffix = path.suffix.lower()
        if suffix in (".parquet", ".pq"):
            self.frame.to_parquet(path, index=False, row_group_size=5000)
        elif suffix == ".csv":
            self.frame.to_csv(path, index=False, float_format="%.6g")
        elif suffix == ".npz":
            np.savez(path, **{c: self.frame[c].to_numpy() for c in self.frame.columns})
        else:
            raise ValueError(f"write to .parquet, .csv or .npz, not {path.name}")
        truth_path = path.with_name(f"{path.stem}.truth.json")
        truth_path.write_text(json.dumps(self.truth(), indent=2))
        return path


def _minimum_jerk(n: int) -> np.ndarray:
    """Position profile 0 → 1 of a minimum-jerk movement over ``n`` samples."""
    s = np.linspace(0.0, 1.0, n)
    return 10 * s**3 - 15 * s**4 + 6 * s**5


def make_motor_cortex_session(
    n_neurons: int = 48,
    n_muscles: int = 6,
    n_trials: int = 32,
    bin_ms: float = 10.0,
    relevant_per_muscle: tuple[int, int] = (3, 7),
    n_nonlinear: int = 2,
    noise: float = 0.2,
    seed: int = 0,
) -> MotorCortexSession:
    """Simulate a centre-out reaching session with M1 neurons and EMG.

    Parameters
    ----------
    n_neurons
        Number of recorded neurons ("dozens": 71 in Sergio & Kalaska).
    n_muscles
        Number of muscles with EMG (at most 11).
    n_trials
        Number of reaches; directions come in shuffled blocks of all eight.
    bin_ms
        Bin width.
    relevant_per_muscle
        Smallest and largest number of neurons driving one muscle.
    n_nonlinear
        How many muscles are softly rectified rather than linear.
    noise
        EMG noise standard deviation as a fraction of the clean EMG's.
    seed
        Seed of the random generator.

    Examples
    --------
    >>> s = make_motor_cortex_session(n_neurons=12, n_muscles=2, n_trials=8, seed=1)
    >>> s.frame.shape
    (1360, 17)
    >>> sorted(s.relevant) == s.muscles
    True

    """
    if not 1 <= n_muscles <= len(MUSCLES):
        raise ValueError(f"n_muscles must be between 1 and {len(MUSCLES)}")
    lo_k, hi_k = relevant_per_muscle
    if not 1 <= lo_k <= hi_k <= n_neurons:
        raise ValueError("relevant_per_muscle must satisfy 1 ≤ low ≤ high ≤ n_neurons")
    rng = np.random.default_rng(seed)
    dt = bin_ms / 1000.0

    # Kinematics: hold 400 ms, reach 500 ms, hold 300 ms, return 500 ms (1.7 s a trial).
    phases = [int(round(d / bin_ms)) for d in (400, 500, 300, 500)]
    per_trial = sum(phases)
    directions = np.concatenate(
        [rng.permutation(8) for _ in range(-(-n_trials // 8))]
    )[:n_trials] * (2 * np.pi / 8)
    reach = _minimum_jerk(phases[1])
    profile = np.concatenate(
        [np.zeros(phases[0]), reach, np.ones(phases[2]), 1.0 - _minimum_jerk(phases[3])]
    )
    amplitude = 0.1  # metres
    n = per_trial * n_trials
    extent = np.tile(profile, n_trials) * amplitude
    angle = np.repeat(directions, per_trial)
    pos = np.column_stack([extent * np.cos(angle), extent * np.sin(angle)])
    vel = np.gradient(pos, dt, axis=0)
    peak_speed = np.max(np.hypot(vel[:, 0], vel[:, 1]))

    # Neurons: baseline, velocity tuning (cosine around a preferred direction), position tuning.
    preferred = rng.uniform(0, 2 * np.pi, n_neurons)
    unit = np.column_stack([np.cos(preferred), np.sin(preferred)])
    baseline = rng.uniform(8.0, 25.0, n_neurons)
    vel_gain = rng.uniform(15.0, 45.0, n_neurons)
    pos_gain = rng.uniform(-10.0, 10.0, n_neurons)
    drive = (vel @ unit.T) / peak_speed * vel_gain + (pos @ unit.T) / amplitude * pos_gain
    rate = np.maximum(baseline + drive, 0.0)
    spikes = rng.poisson(rate * dt)
    # Causal exponential smoothing: the recorded rate of a bin uses past and present only.
    alpha = 1.0 - np.exp(-bin_ms / 60.0)
    smoothed = np.empty_like(rate)
    acc = baseline * dt
    for i in range(n):
        acc = acc + alpha * (spikes[i] - acc)
        smoothed[i] = acc
    recorded = smoothed / dt

    neurons = [f"n{i + 1:02d}" for i in range(n_neurons)]
    muscles = [f"emg_{m}" for m in MUSCLES[:n_muscles]]
    nonlinear_set = set(rng.choice(n_muscles, size=min(n_nonlinear, n_muscles), replace=False))
    scale = recorded.std(axis=0) + 1e-9
    relevant: dict[str, list[str]] = {}
    weights: dict[str, dict[str, float]] = {}
    nonlinear: dict[str, bool] = {}
    emg = np.empty((n, n_muscles))
    for k, name in enumerate(muscles):
        size = int(rng.integers(lo_k, hi_k + 1))
        chosen = np.sort(rng.choice(n_neurons, size=size, replace=False))
        # Mostly excitatory drive; weights per standard deviation of the rate, so that every
        # relevant neuron matters about as much.
        w = rng.uniform(0.5, 1.5, size) * np.where(rng.random(size) < 0.75, 1.0, -1.0)
        w = w / scale[chosen]
        centred = (recorded[:, chosen] - recorded[:, chosen].mean(axis=0)) @ w
        z = centred / centred.std()
        if k in nonlinear_set:
            clean = np.logaddexp(0.0, 1.5 * z + 0.5)  # softplus: quiet below a threshold
        else:
            clean = z + 3.0  # linear, offset so that the EMG stays mostly positive
        clean = clean / clean.std()
        emg[:, k] = clean + noise * rng.normal(size=n)
        relevant[name] = [neurons[j] for j in chosen]
        weights[name] = {neurons[j]: float(wj) for j, wj in zip(chosen, w, strict=True)}
        nonlinear[name] = bool(k in nonlinear_set)

    frame = pd.DataFrame(recorded, columns=neurons)
    frame.insert(0, "time", np.arange(n) * dt)
    frame.insert(1, "trial", np.repeat(np.arange(n_trials), per_trial))
    frame.insert(2, "direction", np.degrees(angle).round(1))
    for k, name in enumerate(muscles):
        frame[name] = emg[:, k]
    return MotorCortexSession(
        frame=frame,
        neurons=neurons,
        muscles=muscles,
        relevant=relevant,
        weights=weights,
        nonlinear=nonlinear,
        bin_ms=bin_ms,
        seed=seed,
        noise=noise,
        spikes=spikes,
        velocity=vel,
    )
