"""A 1 kHz torque-control loop on pybullet's Franka Panda, with learned feed-forward.

The plant. pybullet's Franka Panda (``pybullet_data`` → ``franka_panda/panda.urdf``, fixed
base, gravity 9.81 m/s², DIRECT mode, loaded as ``benchmarks/robot_panda.py`` does),
stepped at 1 kHz (``setTimeStep(1e-3)``). The 7 arm joints are torque-controlled: their
default velocity motors are switched off (``VELOCITY_CONTROL`` with ``forces=0``) and every
tick sets ``TORQUE_CONTROL`` torques, clipped to the URDF's effort limits (87 N·m for joints
1–4, 12 N·m for 5–7). Linear, angular and joint damping are set to 0 on every link
(``changeDynamics``), so that ``calculateInverseDynamics`` is the exact inverse of the
simulator's dynamics: the ideal controller below. The two finger joints are held closed
(``POSITION_CONTROL`` at 0) and left out of everything else (inverse dynamics with the
fingers at rest).

The reference. Each joint follows a periodic sum of harmonics of a 4 s period, drawn as
``benchmarks/alarm_streams.py``'s Panda stream draws its own,

    q_d(t) = c + s(t) · Σ_k a_k sin(2π k t / 4 s + φ_k),   k = 1..3,

a_k ~ U(0.3, 1) · min(10 % of the joint's range, 0.3 rad) / k (peaks up to 1.4 rad/s and
4.4 rad/s²), c robot_panda's home posture; s(t) is a quintic smoothstep from 0 to 1 over
the first 2 s (the fade-in), so q_d, q̇_d and q̈_d start at rest at c, where the arm starts.
q̇_d and q̈_d are exact derivatives. Seed 42.

The sensors. The controller sees q + N(0, (1e-4 rad)²) (encoder noise) and q̇ + N(0,
(1e-3 rad/s)²) (the noise of a velocity estimate), independent per joint and tick;
tracking errors are measured on the true q. The noise is drawn once per seed: every
controller sees the same noise sequence and starts from the same state.

The controllers. All share one PD law, τ = τ_ff(q_d, q̇_d, q̈_d) + K_p (q_d − q̃) + K_d (q̇_d
− q̃̇) on the measured q̃, q̃̇, with low gains: per joint K_p = M_jj ω², K_d = 2 ζ M_jj ω,
M_jj the diagonal of the mass matrix at c, ω = 10 rad/s (1.6 Hz), ζ = 1 (about K_p = 45,
133, 84, 80, 5, 4.5, 0.4 N·m/rad; alone it leaves gravity as an error of 0.1–0.25 rad).

* ``pd``: τ_ff = 0;
* ``ideal``: τ_ff = ``calculateInverseDynamics`` at (q_d, q̇_d, q̈_d): a perfect model;
* ``linear``: τ_ff from river's ``LinearRegression`` per joint, ``optim.SGD(0.003)``,
  ``intercept_lr=0.003``. The rate is ``--tune``'s: on three other references and noise
  sequences (seeds 43–45, 10 s each), among 1e-4, 3e-4, …, 0.03 (3 × apart), the lowest
  worst tracking RMS among the rates whose next larger rate is stable too on all three (a
  factor-3 margin). Without the margin 0.01 would win there (worst 0.0022 rad against
  0.0050 at 0.003; 0.03 diverges on all three), but 0.01 diverges on seed 42 within 21
  ticks: the first ticks' large errors and accelerations push SGD past its stability
  bound, and the wrist joints' small inertia turns the torque errors into more of them;
* ``ours``: τ_ff from ``onlinesparse.SparseRBFRegressor(last_target=False)``, one per joint:
  the defaults but for the last-target expert, which in a loop would feed the last
  applied torque (PD included) back as the next feed-forward (0.27 rad with it against
  0.10 without, 10 s runs).

A learned model (``linear``, ``ours``) answers the multi-target interface
``predict_one(x) -> {"tau1": …, …, "tau7": …}`` / ``learn_one(x, y: dict)``; ``PerJoint``
holds one single-output model per joint behind it (``--model`` picks what ``ours`` is:
``MODELS`` below; a multi-output model is one more entry). Its inputs are 21 keys, q1..q7,
qd1..qd7, qdd1..qdd7, scaled by fixed constants of the reference: (q − c) / Σ_k a_k,
q̇ / Σ_k a_k ω_k, q̈ / Σ_k a_k ω_k² per joint (the reference's bounds, so each lies in
[−1, 1] on the reference; a controller knows its trajectory, and a running scaler would move
the inputs under the model while it learns). Its target is the applied torque (N·m). It
predicts the feed-forward at the desired state every tick, and learns every tick the
sample (q̃, q̃̇, q̈ estimated from the *measured* velocity) → the torque applied at tick k,
under two estimators of q̈, each a run of both learned controllers:

* forward difference (``measured``): (q̃̇ₖ₊₁ − q̃̇ₖ) / 1 ms, learned one tick late; noise σ ≈
  1.4 rad/s² on that q̈, 0.4–0.7 in the scaled units;
* central difference (``central``): (q̃̇ₖ₊₅ − q̃̇ₖ₋₅) / 10 ms, learned five ticks late, as a
  robot's learning loop (which need not learn at once) would estimate it; noise σ ≈ 0.14
  rad/s², and q̈ averaged over ±5 ms of a 4 s trajectory.

The learned feed-forward's error follows the noise on its q̈ input: a one-off sweep of the
velocity noise (seeds 42 and 43, 20 s) gave ours 0.00045 / 0.00038 rad at a quarter of the
benchmark's, 0.0025 / 0.0020 at it, 0.0042 / 0.0029 at twice, while river's
LinearRegression stayed at 0.0024–0.0040 (its error is its linear form's). LinearRegression's
rate is the forward difference's tuning (``--tune --acceleration central`` chooses 0.001,
worse there than 0.003). ``--acceleration simulator`` learns the simulator's exact q̈ (a
diagnosis; not a sensor a robot has).

The tick: read the sensors (untimed: I/O), compute the torque (feed-forward + PD, timed as
"predict"), learn the previous tick's sample (timed as "learn"), then apply the torque and
step the simulator (untimed: the physical world); in the idle time until the next tick a
model that has one runs ``maintain(1)`` (timed apart: one piece of the heavy work its
``learn_one`` leaves to it, ``onlinesparse.orr.upkeep``; the tick and it must fit the
period together).
The compute time of a tick is predict + learn, ``time.perf_counter_ns`` (wall clock; the
thread's CPU time beside it). Before each
run: ``onlinesparse.warm_up()`` (once per process), the model's ``prepare(x, y)`` if it has
one (its state built for these inputs and targets before the first tick), ``gc.collect()``,
``gc.freeze()``, and
``gc.disable()`` for the whole loop (re-enabled and unfrozen after it).

Printed per controller: the tracking RMS (rad) over the second half of the run, all joints
pooled and per joint; the compute per tick (µs): median, 99th percentile and maximum over
the run (wall clock and CPU), the ticks over the 1 ms budget in the first 2 s and after;
the ticks whose torque hit an effort limit. For ours, the compute of the first 20 ticks
against the median of the ticks after the first 2 s.

Run: ``.venv/bin/python benchmarks/control_panda.py`` (20 s simulated per controller, about
a minute), ``--quick`` (4 s), ``--seconds S``, ``--controllers pd,ideal,linear,ours``,
``--model per-joint``, ``--tune`` (prints the rate search for ``linear`` and exits). Needs
the ``bench`` extra (pybullet). Writes ``benchmarks/results/control_panda.json``
(``benchmarks/results/quick/`` for a quick or partial run).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402
from alarm_streams import HOME, PANDA_HARMONICS, PANDA_PERIOD  # noqa: E402
from robot_panda import ARM, _smoothstep, joint_limits  # noqa: E402

SEED = harness.SEED  # the reference and the noise of the benchmark
TUNE_SEEDS = (43, 44, 45)  # other references and noise, for --tune
DT = 1e-3  # s: 1 kHz
BUDGET_NS = 1_000_000  # a tick's budget
FADE = 2.0  # s: the reference fades in, and ticks over budget are counted after it
Q_NOISE = 1e-4  # rad: encoder noise (σ)
QD_NOISE = 1e-3  # rad/s: velocity-estimate noise (σ)
OMEGA, ZETA = 10.0, 1.0  # the PD's natural frequency (rad/s) and damping ratio per joint
LINEAR_LR = 0.003  # river LinearRegression's SGD rate: --tune (seeds 43–45)
TUNE_RATES = (1e-4, 3e-4, 0.001, 0.003, 0.01, 0.03)  # 3 × apart
TUNE_SECONDS = 10.0
FINGERS = (9, 10)
FINGER_FORCE = 20.0  # N: the URDF's effort limit of a finger
JOINTS = list(range(ARM))
TARGETS = [f"tau{j + 1}" for j in range(ARM)]
FEATURES = [f"{kind}{j + 1}" for kind in ("q", "qd", "qdd") for j in range(ARM)]
CONTROLLERS = ("pd", "ideal", "linear", "ours")
LABELS = {"pd": "PD only", "ideal": "ideal (inverse dynamics + PD)",
          "linear": f"river LinearRegression (SGD {LINEAR_LR:g}) + PD",
          "ours": "ours SparseRBFRegressor(last_target=False) + PD"}


# -- the plant ------------------------------------------------------------------------------
class Panda:
    """The simulated arm: torque control of the 7 arm joints at 1 kHz, damping off, fingers
    held closed. ``state()`` and ``step(tau)`` are the robot's I/O."""

    def __init__(self) -> None:
        import pybullet as p
        import pybullet_data

        self.p = p
        self.client = p.connect(p.DIRECT)
        c = self.client
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=c)
        p.setGravity(0, 0, -9.81, physicsClientId=c)
        p.setTimeStep(DT, physicsClientId=c)
        self.robot = p.loadURDF("franka_panda/panda.urdf", useFixedBase=True,
                                physicsClientId=c)
        for link in range(-1, p.getNumJoints(self.robot, physicsClientId=c)):
            p.changeDynamics(self.robot, link, linearDamping=0, angularDamping=0,
                             jointDamping=0, physicsClientId=c)
        self.lower, self.upper = joint_limits(p, self.robot, c)
        self.effort = np.array([p.getJointInfo(self.robot, j, physicsClientId=c)[10]
                                for j in JOINTS])

    def reset(self, q: np.ndarray) -> None:
        """At rest at ``q``, the arm's velocity motors off, the fingers held closed."""
        p, c, r = self.p, self.client, self.robot
        for j in JOINTS:
            p.resetJointState(r, j, float(q[j]), 0.0, physicsClientId=c)
        for f in FINGERS:
            p.resetJointState(r, f, 0.0, 0.0, physicsClientId=c)
        p.setJointMotorControlArray(r, JOINTS, p.VELOCITY_CONTROL, forces=[0.0] * ARM,
                                    physicsClientId=c)
        p.setJointMotorControlArray(r, list(FINGERS), p.POSITION_CONTROL,
                                    targetPositions=[0.0, 0.0],
                                    forces=[FINGER_FORCE] * 2, physicsClientId=c)

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """True joint positions and velocities of the arm."""
        states = self.p.getJointStates(self.robot, JOINTS, physicsClientId=self.client)
        return np.array([s[0] for s in states]), np.array([s[1] for s in states])

    def step(self, tau: np.ndarray) -> None:
        p = self.p
        p.setJointMotorControlArray(self.robot, JOINTS, p.TORQUE_CONTROL,
                                    forces=tau.tolist(), physicsClientId=self.client)
        p.stepSimulation(physicsClientId=self.client)

    def inverse_dynamics(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        rest = [0.0, 0.0]
        return np.array(self.p.calculateInverseDynamics(
            self.robot, q.tolist() + rest, qd.tolist() + rest, qdd.tolist() + rest,
            physicsClientId=self.client)[:ARM])

    def gains(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """K_p = M_jj ω², K_d = 2ζ M_jj ω, on the mass matrix's diagonal at ``q``."""
        mass = np.array(self.p.calculateMassMatrix(self.robot, q.tolist() + [0.0, 0.0],
                                                   physicsClientId=self.client))
        m = np.diag(mass)[:ARM]
        return m * OMEGA**2, 2 * ZETA * m * OMEGA

    def close(self) -> None:
        self.p.disconnect(self.client)


# -- the reference --------------------------------------------------------------------------
@dataclass
class Reference:
    """The faded-in periodic reference; ``scale`` holds the fixed input scaling."""

    centre: np.ndarray  # (7,)
    amp: np.ndarray  # (H, 7)
    phase: np.ndarray  # (H, 7)
    w: np.ndarray = field(init=False)  # (H, 1) rad/s

    def __post_init__(self) -> None:
        self.w = 2 * np.pi * np.arange(1, len(self.amp) + 1)[:, None] / PANDA_PERIOD

    @classmethod
    def draw(cls, lower: np.ndarray, upper: np.ndarray, seed: int) -> Reference:
        rng = np.random.default_rng(seed)
        span = upper - lower
        k = np.arange(1, PANDA_HARMONICS + 1)[:, None]
        amp = rng.uniform(0.3, 1.0, (PANDA_HARMONICS, ARM)) * np.minimum(0.1 * span, 0.3) / k
        phase = rng.uniform(0, 2 * np.pi, (PANDA_HARMONICS, ARM))
        room = amp.sum(axis=0) + 0.05 * span
        return cls(np.clip(HOME, lower + room, upper - room), amp, phase)

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q_d, q̇_d, q̈_d (each len(t) × 7) at the times ``t`` (s)."""
        arg = t[:, None, None] * self.w + self.phase  # (n, H, 7)
        osc = (self.amp * np.sin(arg)).sum(axis=1)
        osc_d = (self.amp * self.w * np.cos(arg)).sum(axis=1)
        osc_dd = -(self.amp * self.w**2 * np.sin(arg)).sum(axis=1)
        u = np.clip(t / FADE, 0.0, 1.0)[:, None]
        s, ds, dds = _smoothstep(u)
        ds, dds = ds / FADE, dds / FADE**2
        return (self.centre + s * osc, ds * osc + s * osc_d,
                dds * osc + 2 * ds * osc_d + s * osc_dd)

    def scale(self) -> tuple[np.ndarray, np.ndarray]:
        """The fixed input scaling: (centre, divisor) of the 21 inputs (q, q̇, q̈)."""
        bounds = [(self.amp * self.w**p).sum(axis=0) for p in (0, 1, 2)]
        return (np.concatenate([self.centre, np.zeros(2 * ARM)]), np.concatenate(bounds))


class Inputs:
    """(q, q̇, q̈) → the model's 21-key dict, by the reference's fixed scaling."""

    def __init__(self, reference: Reference) -> None:
        self.centre, self.divisor = reference.scale()

    def __call__(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> dict[str, float]:
        x = (np.concatenate((q, qd, qdd)) - self.centre) / self.divisor
        return dict(zip(FEATURES, x.tolist(), strict=True))


# Ticks each side of a central difference (``--acceleration central``): the noise of q̈
# falls by about this factor (√2·σ/(2h·dt) against √2·σ/dt), the sample is learned this
# many ticks late, and the difference averages q̈ over ±5 ms of a 4 s trajectory.
CENTRAL_TICKS = 5
ACCELERATIONS = ("measured", "central", "simulator")
ESTIMATORS = {"measured": "forward difference", "central": f"central ±{CENTRAL_TICKS}",
              "simulator": "exact (simulator)"}
LEARNED = ("linear", "ours")


class Samples:
    """The samples a learned model learns, (q̃, q̃̇, q̈) → the torque applied, as the loop
    measures them: q̈ estimated from the measured velocity by the forward difference
    (``measured``: the next tick's q̃̇ minus this one's, over 1 ms; learned one tick late),
    by the central difference over ±``CENTRAL_TICKS`` ticks (``central``: learned that
    many ticks late), or taken from the simulator's true velocity (``simulator``: exact,
    the simulator integrating by semi-implicit Euler steps; a diagnosis, not a sensor)."""

    def __init__(self, inputs: Inputs, acceleration: str) -> None:
        self.inputs, self.acceleration = inputs, acceleration
        self.h = CENTRAL_TICKS if acceleration == "central" else 1
        self.past: list[tuple[np.ndarray, ...]] = []  # (q̃, q̃̇, τ, q̇) of the last 2h ticks

    def due(self, qd_meas: np.ndarray, qd: np.ndarray | None = None
            ) -> tuple[dict, dict] | None:
        """The sample to learn at a tick whose measured (and true: ``simulator`` only)
        velocities are these (None until there is one)."""
        h, past = self.h, self.past
        if len(past) < (2 * h if self.acceleration == "central" else 1):
            return None
        q0, qd0, tau0, qd_true0 = past[-h]
        if self.acceleration == "central":
            qdd = (qd_meas - past[0][1]) / (2 * h * DT)
        else:
            qdd = (qd - qd_true0 if self.acceleration == "simulator" else qd_meas - qd0) / DT
        return self.inputs(q0, qd0, qdd), dict(zip(TARGETS, tau0.tolist(), strict=True))

    def record(self, q_meas: np.ndarray, qd_meas: np.ndarray, tau: np.ndarray,
               qd: np.ndarray | None = None) -> None:
        """This tick's measurements and applied torque (and true velocity: ``simulator``)."""
        self.past.append((q_meas, qd_meas, tau, qd))
        if len(self.past) > 2 * self.h:
            del self.past[0]


# -- the learned models ---------------------------------------------------------------------
class PerJoint:
    """One single-output model per joint behind the multi-target interface
    ``predict_one(x) -> dict`` / ``learn_one(x, y: dict)``."""

    def __init__(self, factory: Callable[[], Any], targets: Sequence[str] = TARGETS) -> None:
        self.models = {name: factory() for name in targets}

    def predict_one(self, x: dict) -> dict[str, float | None]:
        return {name: model.predict_one(x) for name, model in self.models.items()}

    def learn_one(self, x: dict, y: dict[str, float]) -> None:
        for name, model in self.models.items():
            model.learn_one(x, y[name])


def _ours_per_joint() -> PerJoint:
    from onlinesparse import SparseRBFRegressor

    return PerJoint(lambda: SparseRBFRegressor(last_target=False))


def _ours_multi() -> Any:
    from onlinesparse import SparseRBFMultiTargetRegressor

    return SparseRBFMultiTargetRegressor(last_target=False)


#: What ``ours`` is (``--model``): one multi-output model for the 7 joints (one basis,
#: one window, a weight column per joint), or one single-output model per joint.
MODELS: dict[str, Callable[[], Any]] = {"multi": _ours_multi, "per-joint": _ours_per_joint}


def linear_model(rate: float = LINEAR_LR) -> PerJoint:
    from river import linear_model, optim

    return PerJoint(lambda: linear_model.LinearRegression(optimizer=optim.SGD(rate),
                                                          intercept_lr=rate))


def torques(prediction: dict[str, float | None]) -> np.ndarray:
    """A model's answer as 7 torques; a missing or non-finite one counts as 0."""
    out = np.zeros(ARM)
    for j, name in enumerate(TARGETS):
        v = prediction.get(name)
        if v is not None and math.isfinite(v):
            out[j] = v
    return out


# -- the loop -------------------------------------------------------------------------------
@dataclass
class Run:
    controller: str
    errors: np.ndarray  # (n, 7) q_d − q, true q
    predict_ns: np.ndarray  # (n,) feed-forward + PD
    learn_ns: np.ndarray  # (n,)
    cpu_ns: np.ndarray  # (n,) thread CPU time of the same
    maintain_ns: np.ndarray  # (n,) the model's maintain() in the idle time after the step
    clipped: int  # ticks with a torque at an effort limit
    failures: list[str]
    gains: tuple[np.ndarray, np.ndarray]
    acceleration: str = "measured"  # the q̈ estimator of its samples (Samples)

    @property
    def tick_ns(self) -> np.ndarray:
        return self.predict_ns + self.learn_ns

    @property
    def cycle_ns(self) -> np.ndarray:
        """A tick and the idle-time work after it: what must fit the 1 ms period."""
        return self.tick_ns + self.maintain_ns

    def rms(self, start: int = 0) -> tuple[float, np.ndarray]:
        """Tracking RMS (rad) from tick ``start``: all joints pooled, and per joint."""
        e = self.errors[start:]
        return float(np.sqrt(np.mean(e**2))), np.sqrt(np.mean(e**2, axis=0))


def sensor_noise(n: int, seed: int) -> np.ndarray:
    """(n, 2, 7): the encoder and velocity noise of every tick, the same for every controller."""
    rng = np.random.default_rng([seed, 1])
    return rng.standard_normal((n, 2, ARM)) * np.array([Q_NOISE, QD_NOISE])[:, None]


def run(controller: str, seconds: float, seed: int = SEED, model: Any = None,
        acceleration: str = "measured") -> Run:
    """One controller's closed loop, a fresh simulation from the reference's start. A
    learned model learns the loop's :class:`Samples`, its q̈ estimated as ``acceleration``
    says."""
    sim = Panda()
    try:
        reference = Reference.draw(sim.lower, sim.upper, seed)
        n = round(seconds / DT)
        q_ref, qd_ref, qdd_ref = reference.at(np.arange(n) * DT)
        noise = sensor_noise(n, seed)
        inputs = Inputs(reference)
        kp, kd = sim.gains(reference.centre)
        sim.reset(reference.centre)
        errors = np.empty((n, ARM))
        predict_ns, learn_ns, cpu_ns, maintain_ns = (np.zeros(n, dtype=np.int64)
                                                     for _ in range(4))
        maintain = getattr(model, "maintain", None)
        prepare = getattr(model, "prepare", None)
        if prepare is not None:  # (the model's state built before the first tick)
            prepare(inputs(q_ref[0], qd_ref[0], qdd_ref[0]), dict.fromkeys(TARGETS, 0.0))
        clipped, failures = 0, []
        samples = Samples(inputs, acceleration)
        now, cpu = time.perf_counter_ns, time.thread_time_ns
        gc.collect()
        gc.freeze()  # the libraries and the models are long-lived: no GC pass walks them
        gc.disable()  # and none interrupts a tick
        try:
            for k in range(n):
                q, qd = sim.state()
                errors[k] = q_ref[k] - q
                q_meas, qd_meas = q + noise[k, 0], qd + noise[k, 1]

                c0, t0 = cpu(), now()
                if controller == "ideal":
                    ff = sim.inverse_dynamics(q_ref[k], qd_ref[k], qdd_ref[k])
                elif model is not None:
                    ff = torques(model.predict_one(inputs(q_ref[k], qd_ref[k], qdd_ref[k])))
                else:
                    ff = 0.0
                tau = ff + kp * (q_ref[k] - q_meas) + kd * (qd_ref[k] - qd_meas)
                t1 = now()
                sample = samples.due(qd_meas, qd) if model is not None else None
                if sample is not None:
                    try:
                        model.learn_one(*sample)
                    except Exception as error:  # noqa: BLE001 - the loop goes on
                        failures.append(f"tick {k}: {type(error).__name__}: {error}")
                t2 = now()
                predict_ns[k], learn_ns[k], cpu_ns[k] = t1 - t0, t2 - t1, cpu() - c0

                limited = np.clip(tau, -sim.effort, sim.effort)
                clipped += bool(np.any(limited != tau))
                samples.record(q_meas, qd_meas, limited, qd)
                sim.step(limited)
                if maintain is not None:  # (the idle time until the next tick: one piece)
                    t3 = now()
                    maintain(1)
                    maintain_ns[k] = now() - t3
        finally:
            gc.enable()
            gc.unfreeze()
    finally:
        sim.close()
    return Run(controller, errors, predict_ns, learn_ns, cpu_ns, maintain_ns, clipped,
               failures, (kp, kd), acceleration)


def make_model(controller: str, model_key: str = "per-joint") -> Any:
    if controller == "linear":
        return linear_model()
    if controller == "ours":
        return MODELS[model_key]()
    return None


# -- the report -----------------------------------------------------------------------------
def us(ns: np.ndarray, q: float | None = None) -> float:
    return float((np.max(ns) if q is None else np.percentile(ns, q)) / 1e3)


def report_runs(report: harness.Report, runs: dict[str, Run], seconds: float) -> None:
    n = len(next(iter(runs.values())).errors)
    half, fade = n // 2, round(FADE / DT)
    rows = []
    for key, r in runs.items():
        pooled, per = r.rms(half)
        rows.append([LABELS[key], f"{pooled:.3g}", *(f"{v:.3g}" for v in per)])
    report.table(f"tracking RMS (rad) over the second half ({seconds / 2:g}–{seconds:g} s)",
                 ["controller", "all joints", *(f"joint {j + 1}" for j in range(ARM))], rows,
                 doc=False)
    rows = []
    for key, r in runs.items():
        tick = r.tick_ns
        rows.append([LABELS[key], f"{us(tick, 50):.1f}", f"{us(tick, 99):.1f}",
                     f"{us(tick):.0f}", str(int(np.sum(tick[:fade] > BUDGET_NS))),
                     str(int(np.sum(tick[fade:] > BUDGET_NS))), f"{us(r.cpu_ns, 50):.1f}",
                     f"{us(r.cpu_ns, 99):.1f}", f"{us(r.cpu_ns):.0f}",
                     f"{us(r.predict_ns, 50):.1f}", f"{us(r.maintain_ns, 99):.0f}",
                     f"{us(r.maintain_ns):.0f}", str(int(np.sum(r.cycle_ns[fade:] > BUDGET_NS))),
                     str(r.clipped)])
    report.table(f"compute per tick, µs (predict + learn; budget {BUDGET_NS / 1e3:.0f} µs, "
                 f"{n} ticks; maintain(): the idle-time work after the step)",
                 ["controller", "median", "p99", "max", f"> 1 ms, first {FADE:g} s",
                  f"> 1 ms after {FADE:g} s", "CPU median", "CPU p99", "CPU max",
                  "predict median", "maintain p99", "maintain max",
                  f"tick + maintain > 1 ms after {FADE:g} s", "ticks clipped"], rows,
                 doc=False)
    for key, r in runs.items():
        if r.failures:
            report.note(f"{LABELS[key]}: {len(r.failures)} learning failures, first "
                        f"{r.failures[0]}")


def report_first_ticks(report: harness.Report, r: Run, count: int = 20) -> list[float]:
    steady = float(np.median(r.tick_ns[round(FADE / DT):]))
    ratios = [float(v / steady) for v in r.tick_ns[:count]]
    rows = [[str(k + 1), f"{r.tick_ns[k] / 1e3:.0f}", f"{r.predict_ns[k] / 1e3:.0f}",
             f"{r.learn_ns[k] / 1e3:.0f}", f"{ratios[k]:.2f}"] for k in range(count)]
    report.table(f"{LABELS[r.controller]}: the first {count} ticks against the median of the "
                 f"ticks after {FADE:g} s ({steady / 1e3:.0f} µs)",
                 ["tick", "µs", "predict µs", "learn µs", "× steady median"], rows, doc=False)
    return ratios


def summary(runs: dict[str, Run]) -> dict[str, Any]:
    n = len(next(iter(runs.values())).errors)
    fade = round(FADE / DT)
    out = {}
    for key, r in runs.items():
        pooled, per = r.rms(n // 2)
        tick = r.tick_ns
        out[key] = {"label": LABELS[key], "rms_second_half": pooled,
                    "rms_per_joint": [float(v) for v in per],
                    "us_median": us(tick, 50), "us_p99": us(tick, 99), "us_max": us(tick),
                    "cpu_us_median": us(r.cpu_ns, 50), "cpu_us_p99": us(r.cpu_ns, 99),
                    "cpu_us_max": us(r.cpu_ns),
                    "predict_us_median": us(r.predict_ns, 50),
                    "learn_us_median": us(r.learn_ns, 50),
                    "over_budget_first": int(np.sum(tick[:fade] > BUDGET_NS)),
                    "over_budget_after": int(np.sum(tick[fade:] > BUDGET_NS)),
                    "maintain_us_p99": us(r.maintain_ns, 99),
                    "maintain_us_max": us(r.maintain_ns),
                    "cycle_over_budget_after": int(np.sum(r.cycle_ns[fade:] > BUDGET_NS)),
                    "ticks_clipped": r.clipped, "failures": len(r.failures)}
    return {k: {kk: harness._finite(vv) for kk, vv in v.items()} for k, v in out.items()}


def summary_note(runs: dict[str, Run], seconds: float) -> str:
    n = len(next(iter(runs.values())).errors)
    fade = round(FADE / DT)
    parts = []
    for key, r in runs.items():
        parts.append(f"{key} {r.rms(n // 2)[0]:.3g} rad, "
                     f"{int(np.sum(r.tick_ns[fade:] > BUDGET_NS))} ticks > 1 ms "
                     f"(max {us(r.tick_ns):.0f} µs; with the idle-time maintain() "
                     f"{int(np.sum(r.cycle_ns[fade:] > BUDGET_NS))} over)")
    return (f"tracking RMS over {seconds / 2:g}–{seconds:g} s, and ticks over 1 ms after "
            f"{FADE:g} s: " + "; ".join(parts) + "; every table is in "
            "benchmarks/results/control_panda.json")


def tune(seconds: float, acceleration: str = "measured") -> float:
    """The rate search for ``linear`` on other references and noise (``TUNE_SEEDS``), its
    samples' q̈ estimated as ``acceleration`` says (:class:`Samples`): the
    rate with the lowest worst tracking RMS over them, among the rates whose next larger
    rate on the grid (3 ×) is stable too on every one of them (tracking RMS below PD
    alone's): a factor-3 margin of stability, as a controller needs."""
    print(f"river LinearRegression per joint, SGD rate search on seeds "
          f"{', '.join(map(str, TUNE_SEEDS))}, {seconds:g} s each, q̈ {acceleration}: "
          "tracking RMS (rad) over the second half")
    pd = [run("pd", seconds, seed) for seed in TUNE_SEEDS]
    pd_rms = [r.rms(len(r.errors) // 2)[0] for r in pd]
    print("  PD only: " + ", ".join(f"{v:.4g}" for v in pd_rms), flush=True)
    worst, stable = {}, {}
    for rate in TUNE_RATES:
        scores = []
        for seed in TUNE_SEEDS:
            r = run("linear", seconds, seed, linear_model(rate), acceleration)
            scores.append(r.rms(len(r.errors) // 2)[0])
        worst[rate] = max(scores)
        stable[rate] = all(v < p for v, p in zip(scores, pd_rms, strict=True))
        print(f"  lr {rate:g}: " + ", ".join(f"{v:.4g}" for v in scores)
              + f"; worst {worst[rate]:.4g}{'' if stable[rate] else ' (unstable)'}",
              flush=True)
    margin = [a for a, b in itertools.pairwise(TUNE_RATES) if stable[a] and stable[b]]
    best = min(margin, key=worst.get)
    print(f"chosen: {best:g} (best without the margin: {min(worst, key=worst.get):g}; "
          f"LINEAR_LR is {LINEAR_LR:g})")
    return best


def ratio_note(runs: dict[str, Run]) -> str | None:
    """Ours' tracking RMS over river LinearRegression's under each q̈ estimator, and ours'
    best against the linear model's best (each with the estimator that suits it)."""
    half = len(next(iter(runs.values())).errors) // 2
    rms = {key: r.rms(half)[0] for key, r in runs.items()}
    pairs = [(key, "linear" + key[len("ours"):]) for key in rms if key.split("@")[0] == "ours"]
    pairs = [(o, li) for o, li in pairs if li in rms]
    if not pairs:
        return None
    parts = [f"{ESTIMATORS[runs[o].acceleration]} {rms[o] / rms[li]:.3g}×" for o, li in pairs]
    ours = min((o for o, _ in pairs), key=rms.get)
    linear = min((li for _, li in pairs), key=rms.get)
    ideal = f"; the ideal {rms['ideal']:.3g} rad" if "ideal" in rms else ""
    fade = round(FADE / DT)
    over = int(np.sum(runs[ours].tick_ns[fade:] > BUDGET_NS))
    met = (rms[ours] <= 0.5 * rms[linear] and over == 0
           and ("pd" not in rms or rms[ours] < rms["pd"]))
    return (f"ours over river LinearRegression, tracking RMS: {', '.join(parts)}; ours' best "
            f"({ESTIMATORS[runs[ours].acceleration]}) {rms[ours]:.3g} rad against the linear "
            f"model's best ({ESTIMATORS[runs[linear].acceleration]}) {rms[linear]:.3g} rad: "
            f"{rms[ours] / rms[linear]:.3g}×, {over} ticks over 1 ms after {FADE:g} s "
            f"(target ≤ 0.5×, below PD alone, 0 ticks over: {'met' if met else 'NOT met'})"
            f"{ideal}")


def run_keys(controllers: list[str], accelerations: list[str]) -> list[tuple[str, str]]:
    """(key, q̈ estimator) of every run: a controller that learns runs once per estimator,
    the first under its own name, the others as ``name@estimator`` (labelled so)."""
    keys = []
    for key in controllers:
        for i, acceleration in enumerate(accelerations if key in LEARNED else accelerations[:1]):
            name = key if i == 0 else f"{key}@{acceleration}"
            LABELS.setdefault(name, f"{LABELS[key]}, q̈ {ESTIMATORS[acceleration]}")
            keys.append((name, acceleration))
    return keys


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated seconds")
    parser.add_argument("--quick", action="store_true", help="4 simulated seconds")
    parser.add_argument("--controllers", default=",".join(CONTROLLERS),
                        help=f"comma-separated subset of {','.join(CONTROLLERS)}")
    parser.add_argument("--model", default="multi", choices=list(MODELS),
                        help="the model behind 'ours'")
    parser.add_argument("--acceleration", default="measured,central",
                        help="comma-separated estimators of the q̈ the learned models "
                        f"learn, each a run of theirs ({', '.join(ACCELERATIONS)}): the "
                        "forward difference of the measured velocity, its central "
                        f"difference over ±{CENTRAL_TICKS} ticks, the simulator's exact q̈")
    parser.add_argument("--tune", action="store_true",
                        help="print the rate search for 'linear' (seeds "
                        f"{', '.join(map(str, TUNE_SEEDS))}) and exit")
    harness.add_common_args(parser)
    args = parser.parse_args()
    args.controllers = [c.strip() for c in args.controllers.split(",") if c.strip()]
    args.acceleration = [a.strip() for a in args.acceleration.split(",") if a.strip()]
    if not args.acceleration or set(args.acceleration) - set(ACCELERATIONS):
        parser.error(f"--acceleration: choose from {list(ACCELERATIONS)}")
    unknown = [c for c in args.controllers if c not in CONTROLLERS]
    if unknown:
        parser.error(f"unknown controllers {unknown}; choose from {list(CONTROLLERS)}")
    args.partial = (args.seconds != 20.0 or args.model != "multi"
                    or args.acceleration != ["measured", "central"]
                    or args.controllers != list(CONTROLLERS))
    if args.quick:
        args.seconds = 4.0
    if args.seconds < 2 * FADE:
        parser.error(f"need --seconds ≥ {2 * FADE:g}")
    return args


def main() -> None:
    args = parse_args()
    from onlinesparse import warm_up

    warm_up()  # every compiled loop loaded before the first tick
    if args.tune:
        for acceleration in args.acceleration:
            tune(TUNE_SECONDS, acceleration)
        return
    if args.model != "per-joint":
        LABELS["ours"] = f"ours ({args.model}) + PD"
    report = harness.Report("control_panda", __doc__.splitlines()[0],
                            {"seconds": args.seconds, "controllers": args.controllers,
                             "model": args.model, "acceleration": args.acceleration,
                             "seed": SEED, "dt": DT,
                             "q_noise": Q_NOISE, "qd_noise": QD_NOISE, "omega": OMEGA,
                             "zeta": ZETA, "linear_lr": LINEAR_LR, "fade": FADE,
                             "quick": args.quick},
                            quick=args.quick or args.partial, path=args.results)
    runs: dict[str, Run] = {}
    for key, acceleration in run_keys(args.controllers, args.acceleration):
        started = time.perf_counter()
        runs[key] = run(key.split("@")[0], args.seconds, SEED,
                        make_model(key.split("@")[0], args.model), acceleration)
        print(f"  {LABELS[key]}: {time.perf_counter() - started:.1f} s", flush=True)
    kp, kd = next(iter(runs.values())).gains
    report.note(f"Franka Panda, {args.seconds:g} s at {1 / DT:.0f} Hz, seed {SEED}; PD "
                f"K_p = " + ", ".join(f"{v:.3g}" for v in kp) + " N·m/rad, K_d = "
                + ", ".join(f"{v:.2g}" for v in kd) + f" N·m·s/rad (ω = {OMEGA:g} rad/s, "
                f"ζ = {ZETA:g}); noise σ {Q_NOISE:g} rad, {QD_NOISE:g} rad/s; linear SGD "
                f"rate {LINEAR_LR:g}")
    report_runs(report, runs, args.seconds)
    stream = summary(runs)
    if "ours" in runs:
        stream["ours"]["first_ticks_ratio"] = report_first_ticks(report, runs["ours"])
    report.data["streams"]["Franka Panda, 1 kHz"] = stream
    ratios = ratio_note(runs)  # (one note: the page of today's figures stays short)
    report.note(summary_note(runs, args.seconds) + (f"; {ratios}" if ratios else ""))
    report.write()


if __name__ == "__main__":
    main()
