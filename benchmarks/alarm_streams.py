"""The streams of ``benchmarks/memory_alarms.py``: six stationary ones whose errors are not
the independent Gaussian errors a CUSUM assumes, and river's three drifting Friedman streams.

Every generator takes the number of samples and a seed, is deterministic, and returns a
``Stream``: a title, the samples as ``(dict, float)`` pairs in time order, the 0-based
indices of the first sample of each new concept (empty for a stationary stream) and a
description of what was drawn.

* ``spikes``: a spike-count recording. A smooth latent 2-d velocity, each component a sum
  of six sinusoids (0.05–0.4 Hz, random phases, unit variance), sampled in 20 ms bins;
  60 Poisson channels with log-linear cosine tuning,
  rate_i = b_i · exp(m_i · ⟨v, d_i⟩), b_i ~ U(5, 30) Hz, m_i ~ U(0.3, 0.8), d_i a random
  unit vector; the counts per bin are the features (ints as floats); the target is the
  speed ‖v‖ plus N(0, 0.05²). Consecutive samples share the latent state.
* ``emg``: the recording of ``benchmarks/neural_decoding.py``
  (``onlinesparse.datasets.make_spike_count_session``, seed 42) without its faults: 80
  Poisson channels in 20 ms bins during random reaches and holds, the target the first
  EMG envelope (rectified, 20 % log-normal noise, bursts in the reaches: skewed errors that
  come in epochs of some dozens of samples).
* ``panda``: the Franka Panda (pybullet's ``franka_panda/panda.urdf``, fixed base, DIRECT
  mode; loaded as ``benchmarks/robot_panda.py`` does) on a strictly periodic reference:
  each arm joint q_j(t) = c_j + Σ_k a_jk sin(2π k t / 4 s + φ_jk), k = 1..3 (harmonics of
  a 4 s period), a_jk ~ U(0.3, 1) · min(10 % of the joint's range, 0.3 rad) / k, c_j the
  robot_panda home posture; sampled at 100 Hz (400 samples per period). Features q, q̇, q̈
  (21, exact derivatives); target the torque of joint 2 from
  ``calculateInverseDynamics`` plus Gaussian noise of 0.02 × its standard deviation.
* ``hetero``: Friedman #1 on i.i.d. U(0, 1)¹⁰ inputs, noise N(0, (0.2 + 2·x0)²): its
  standard deviation ranges from 0.2 to 2.2 across the input space (mean 1.2).
* ``t3``: Friedman #1 on i.i.d. inputs, Student-t noise with 3 degrees of freedom (scale 1,
  standard deviation √3).
* ``ar1``: Friedman #1 on i.i.d. inputs, AR(1) noise e_t = 0.95 e_{t−1} + √(1 − 0.95²) ε_t
  (unit marginal variance, started from its stationary law).
* ``gra``, ``gsg``, ``lea``: ``river.datasets.synth.FriedmanDrift`` (seed 42) with river's
  default geometry (changes at 50 000, 100 000 [, 150 000], gsg transition window 10 000)
  scaled by n / 200 000, so every change lies in the stream and a quarter or more of the
  stream follows the last: changes at n/4, n/2 (and 3n/4 for lea), window n/20.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

SEED = 42
FRIEDMAN_INPUTS = 10


class Stream(NamedTuple):
    """``altered`` (drifting streams): per sample, whether its target comes from a concept
    other than the one in force before the last change — what a detector can see of the
    change at that sample."""

    title: str
    data: list[tuple[dict, float]]
    changes: tuple[int, ...] = ()
    about: str = ""
    altered: np.ndarray | None = None


# -- spike counts ---------------------------------------------------------------------
SPIKE_BIN = 0.02  # s
SPIKE_CHANNELS = 60
SPIKE_NOISE = 0.05


def latent_velocity(n: int, rng: np.random.Generator, components: int = 6) -> np.ndarray:
    """n × 2 smooth velocity: per dimension a sum of sinusoids of unit total variance."""
    t = np.arange(n) * SPIKE_BIN
    freq = rng.uniform(0.05, 0.4, (components, 2))
    amp = rng.uniform(0.5, 1.0, (components, 2))
    amp /= np.sqrt((amp**2).sum(axis=0) / 2)  # variance of Σ a sin(·) is Σ a²/2
    phase = rng.uniform(0, 2 * np.pi, (components, 2))
    return (amp * np.sin(2 * np.pi * freq * t[:, None, None] + phase)).sum(axis=1)


def spikes(n: int, seed: int = SEED) -> Stream:
    rng = np.random.default_rng(seed)
    v = latent_velocity(n, rng)
    angle = rng.uniform(0, 2 * np.pi, SPIKE_CHANNELS)
    direction = np.stack([np.cos(angle), np.sin(angle)])  # 2 × channels
    base = rng.uniform(5, 30, SPIKE_CHANNELS)
    depth = rng.uniform(0.3, 0.8, SPIKE_CHANNELS)
    rate = base * np.exp(depth * (v @ direction))  # Hz, n × channels
    counts = rng.poisson(rate * SPIKE_BIN).astype(float)
    y = np.hypot(v[:, 0], v[:, 1]) + rng.normal(0, SPIKE_NOISE, n)
    names = [f"n{i:02d}" for i in range(SPIKE_CHANNELS)]
    data = [(dict(zip(names, map(float, row), strict=True)), float(t))
            for row, t in zip(counts, y, strict=True)]
    about = (f"{SPIKE_CHANNELS} channels, mean count per bin {counts.mean():.2f}, "
             f"{100 * np.mean(counts == 0):.0f} % zeros; speed mean {y.mean():.2f}, "
             f"sd {y.std():.2f}")
    return Stream(f"spike counts → speed ({SPIKE_CHANNELS} Poisson channels, 20 ms bins)",
                  data, (), about)


def emg(n: int, seed: int = SEED) -> Stream:
    """``onlinesparse.datasets.make_spike_count_session`` without its faults (no channel
    drops out, no NaN cell): 80 channels in 20 ms bins during random reaches and holds, the
    target the first EMG envelope — rectified, multiplicative noise, bursts in the reaches,
    so that the errors are skewed and come in epochs of some dozens of samples. The
    neural_decoding benchmark's recording, stationary."""
    from onlinesparse.datasets import make_spike_count_session

    frame = make_spike_count_session(n_rows=n, seed=seed, n_nan=0, dropout_at=1.0)
    channels = frame.attrs["truth"]["channels"]
    counts = frame[channels].to_numpy()
    y = frame["emg_0"].to_numpy(dtype=float)
    data = [(dict(zip(channels, map(float, row), strict=True)), float(t))
            for row, t in zip(counts, y, strict=True)]
    about = (f"{len(channels)} channels, mean count per bin {counts.mean():.2f}; emg_0 mean "
             f"{y.mean():.2f}, sd {y.std():.2f}, skewness "
             f"{float(np.mean((y - y.mean()) ** 3) / y.std() ** 3):.1f}")
    return Stream("reaches: spike counts → EMG envelope (80 Poisson channels, 20 ms bins)",
                  data, (), about)


# -- the Panda on a periodic reference ----------------------------------------------------
PANDA_RATE = 100.0  # Hz
PANDA_PERIOD = 4.0  # s
PANDA_HARMONICS = 3
PANDA_JOINT = 2  # 1-based, as robot_panda prints it
PANDA_NOISE = 0.02  # × the torque's standard deviation
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def periodic_reference(n: int, lower: np.ndarray, upper: np.ndarray,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q̇, q̈ (n × 7 each) of the periodic sum of harmonics described above."""
    joints = len(lower)
    t = np.arange(n) / PANDA_RATE
    span = upper - lower
    k = np.arange(1, PANDA_HARMONICS + 1)[:, None]
    w = 2 * np.pi * k / PANDA_PERIOD  # (H, 1)
    amp = rng.uniform(0.3, 1.0, (PANDA_HARMONICS, joints)) * np.minimum(0.1 * span, 0.3) / k
    phase = rng.uniform(0, 2 * np.pi, (PANDA_HARMONICS, joints))
    room = amp.sum(axis=0) + 0.05 * span
    centre = np.clip(HOME[:joints], lower + room, upper - room)
    arg = t[:, None, None] * w + phase  # (n, H, 7)
    q = centre + (amp * np.sin(arg)).sum(axis=1)
    qd = (amp * w * np.cos(arg)).sum(axis=1)
    qdd = -(amp * w**2 * np.sin(arg)).sum(axis=1)
    return q, qd, qdd


def panda(n: int, seed: int = SEED) -> Stream:
    from robot_panda import feature_dicts, inverse_dynamics, joint_limits, panda_robot

    rng = np.random.default_rng(seed)
    with panda_robot() as (p, robot, client):
        q, qd, qdd = periodic_reference(n, *joint_limits(p, robot, client), rng)
        tau = inverse_dynamics(p, robot, client, q, qd, qdd)[:, PANDA_JOINT - 1]
    y = tau + rng.normal(size=n) * PANDA_NOISE * tau.std()
    data = list(zip(feature_dicts(np.hstack([q, qd, qdd])), map(float, y), strict=True))
    about = (f"period {PANDA_PERIOD:g} s = {PANDA_PERIOD * PANDA_RATE:g} samples, "
             f"{n / (PANDA_PERIOD * PANDA_RATE):g} periods; torque mean {tau.mean():.3g} "
             f"N·m, sd {tau.std():.3g} N·m, noise sd {PANDA_NOISE * tau.std():.3g} N·m")
    return Stream(f"Panda joint {PANDA_JOINT} torque, periodic reference "
                  f"({PANDA_RATE:g} Hz)", data, (), about)


# -- Friedman #1 with awkward noise --------------------------------------------------------
def friedman(X: np.ndarray) -> np.ndarray:
    """Friedman #1's noiseless target (river's ``datasets.synth.Friedman``)."""
    return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
            + 10 * X[:, 3] + 5 * X[:, 4])


def _friedman_stream(title: str, X: np.ndarray, noise: np.ndarray) -> Stream:
    y = friedman(X) + noise
    data = [(dict(enumerate(map(float, row))), float(t)) for row, t in zip(X, y, strict=True)]
    about = f"noise sd {noise.std():.3g}, kurtosis {_kurtosis(noise):.3g}"
    return Stream(title, data, (), about)


def _kurtosis(e: np.ndarray) -> float:
    e = e - e.mean()
    return float(np.mean(e**4) / np.mean(e**2) ** 2)


def heteroscedastic(n: int, seed: int = SEED) -> Stream:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, FRIEDMAN_INPUTS))
    noise = rng.normal(size=n) * (0.2 + 2 * X[:, 0])
    return _friedman_stream("Friedman #1, heteroscedastic noise sd 0.2 + 2·x0", X, noise)


def student_t(n: int, seed: int = SEED) -> Stream:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, FRIEDMAN_INPUTS))
    return _friedman_stream("Friedman #1, Student-t₃ noise", X, rng.standard_t(3, n))


AR_PHI = 0.95


def ar1(n: int, seed: int = SEED) -> Stream:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, FRIEDMAN_INPUTS))
    shocks = rng.normal(size=n) * math.sqrt(1 - AR_PHI**2)
    noise = np.empty(n)
    noise[0] = rng.normal()
    for t in range(1, n):
        noise[t] = AR_PHI * noise[t - 1] + shocks[t]
    return _friedman_stream(f"Friedman #1, AR(1) noise φ = {AR_PHI:g}", X, noise)


# -- river's drifting Friedman -----------------------------------------------------------
def drift_geometry(kind: str, n: int) -> tuple[tuple[int, ...], int]:
    """river's default change points and transition window, scaled by n / 200 000."""
    scale = n / 200_000
    points = (50_000, 100_000, 150_000) if kind == "lea" else (50_000, 100_000)
    return tuple(round(p * scale) for p in points), round(10_000 * scale)


# Share of the input space a lea change alters, per concept (river's two regions).
LEA_SHARE = (2 * 0.3**4, 2 * 0.3**3, 2 * 0.3**2)


def lea_region(X: np.ndarray, concept: int) -> np.ndarray:
    """Whether each raw input (a row of ``X``) lies where lea's ``concept`` (1, 2, 3: after
    its first, second, third change; 0: before any) differs from the original function:
    river's two regions (``FriedmanDrift.__lea_in_r1`` and ``__lea_in_r2``), whose last
    ``3 - concept`` conditions are dropped as the concepts expand."""
    if concept == 0:
        return np.zeros(len(X), dtype=bool)
    low = (X[:, 1] < 0.3) & (X[:, 2] < 0.3)
    high = (X[:, 1] > 0.7) & (X[:, 2] > 0.7)
    if concept <= 2:
        low, high = low & (X[:, 3] > 0.7), high & (X[:, 3] < 0.3)
    if concept == 1:
        low, high = low & (X[:, 4] < 0.3), high & (X[:, 4] > 0.7)
    return low | high


def lea_altered(X: np.ndarray, change: int) -> np.ndarray:
    """Whether lea's ``change`` (1, 2, 3) alters the target at each raw input: in the new
    concept's region, not in the last one's (there the target changed before)."""
    return lea_region(X, change) & ~lea_region(X, change - 1)


def _gsg_new(index: np.ndarray, position: tuple[int, ...], window: int, seed: int
             ) -> np.ndarray:
    """Whether each sample of river's gsg stream is drawn from the concept after the last
    change: in a transition window a random bit (river's own generator, ``Random(seed)``,
    drawn at the same samples in the same order) keeps half of them on the one before."""
    import random

    bits = random.Random(seed)
    new = index >= position[0]
    for start in position:
        for i in range(start, min(start + window, len(index))):
            new[i] = not bits.getrandbits(1)
    return new


def _altered(kind: str, data: list[tuple[dict, float]], position: tuple[int, ...],
             window: int, seed: int) -> np.ndarray:
    """``Stream.altered`` of a FriedmanDrift stream."""
    index = np.arange(len(data))
    if kind == "gsg":
        return _gsg_new(index, position, window, seed)
    concept = np.searchsorted(np.array(position), index, side="right")
    if kind == "gra":  # (every target changes at each change: the features are swapped)
        return concept > 0
    X = np.array([[x[j] for j in range(FRIEDMAN_INPUTS)] for x, _ in data])
    altered = np.zeros(len(data), dtype=bool)
    for change in range(1, len(position) + 1):
        at = concept == change
        altered[at] = lea_altered(X[at], change)
    return altered


def friedman_drift(kind: str, n: int, seed: int = SEED) -> Stream:
    from river import datasets

    position, window = drift_geometry(kind, n)
    stream = datasets.synth.FriedmanDrift(drift_type=kind, position=position,
                                          transition_window=window, seed=seed)
    title = (f"FriedmanDrift({kind}, seed {seed}, position={position}"
             + (f", transition_window={window})" if kind == "gsg" else ")"))
    about = ""
    if kind == "lea":
        about = ("share of the input space the concept in force alters after each change: "
                 + ", ".join(f"{100 * s:.1f} %" for s in LEA_SHARE))
    data = list(stream.take(n))
    return Stream(title, data, position, about, _altered(kind, data, position, window, seed))


GENERATORS = {"spikes": spikes, "emg": emg, "panda": panda, "hetero": heteroscedastic,
              "t3": student_t, "ar1": ar1}
DRIFTS = ("gra", "gsg", "lea")
KEYS = (*GENERATORS, *DRIFTS)


def build(key: str, n: int, seed: int = SEED) -> Stream:
    """The stream ``key`` (one of ``KEYS``) with ``n`` samples."""
    if key in GENERATORS:
        return GENERATORS[key](n, seed)
    return friedman_drift(key, n, seed)
