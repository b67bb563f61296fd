"""Learning a pendulum's inverse dynamics online inside a 1 kHz control loop.

The plant is a single pendulum (a one-joint arm) driven by a torque motor::

    I q̈ = τ − b q̇ − F_c tanh(q̇ / v_c) − m g l sin q

with a payload mass the controller does not know, viscous friction ``b`` and (smoothed)
Coulomb friction ``F_c``. A compliant, low-gain PD controller tracks the reference
``q_d(t) = A sin(2π f t)``::

    τ = τ_ff + K_p (q_d − q) + K_d (q̇_d − q̇)

Alone (``τ_ff = 0``), the PD has to be wrong before it pushes: gravity and friction show up
as a tracking error of the order of ``m g l / K_p``. The learned model supplies the
feed-forward.

**What is learned, and why this target.** ``SparseRBFRegressor`` learns the *inverse
dynamics* ``τ = f(q, q̇, q̈)``: the torque that produces acceleration ``q̈`` in state
``(q, q̇)``. Every tick gives an exact sample of that map whatever the controller did: the
state measured at the start of the tick, the acceleration measured over the tick (finite
difference of the measured velocity), and the *full* torque that was applied. (The torque
minus the PD part would not do: it is whatever the model itself predicted, not a property of
the plant, so the model would be chasing its own output.) The feed-forward is the model
evaluated on the desired trajectory, ``τ_ff = f̂(q_d, q̇_d, q̈_d)``: the computed-torque law
with a learned model. The map is linear in ``q̈`` (the inertia) and nonlinear in ``q``
(gravity) and ``q̇`` (friction); the model's linear basis functions and Gaussian kernels
cover both.

Inputs are scaled by fixed, known ranges (``Q_SCALE``…) rather than by a running
``StandardScaler``: a controller knows its joint limits, and a drifting scaler would move
every kernel centre under the model while it learns.

**The tick.** At 1 kHz simulated time, every tick: read the (noisy) sensors, learn the
previous tick's sample if this is a learning tick, predict the feed-forward, apply the
torque, then spend the slack of the tick on :meth:`~onlinesparse.SparseRBFRegressor.refine`,
one GCV evaluation at a time, while the time left exceeds twice a running estimate of what
one evaluation costs. The simulated plant runs outside the timed section (it is the
physical world).

**The budget.** The model is small, as a controller's would be: ``max_basis=20``,
``n_candidates=8``, ``evaluations_per_sample=1``. It learns from every 10th tick (100 Hz):
consecutive 1 kHz samples are nearly the same point, so learning from all of them spends the
budget on redundant data and, for a given window, remembers ten times less of the motion.
``window_size=300`` learning samples then hold the last 3 s of motion — more than one period of
the reference, so the model never forgets one half of the swing while it is in the other —
and the slack of the nine other ticks goes to ``refine``. The mandatory work per tick
(``learn_one`` + ``predict_one``) is bounded by these parameters.

**Failures.** A controller must not stop because learning failed: an exception from
``learn_one`` or ``refine`` is caught, counted and printed at the end, and control goes on
with the model as it is.

Prints the tracking RMSE per second with and without the learned feed-forward, and the
median, 99th-percentile and worst compute time per tick against the 1 ms budget (wall clock,
and the thread's CPU time beside it), for the mandatory work and for the whole tick
including ``refine``. This is Python on a general-purpose, possibly shared OS: the
wall-clock worst case includes preemption by the scheduler. The garbage collector is
frozen before the loop (``gc.freeze()``), as a real-time deployment would do: its full
passes otherwise walk every object the libraries hold.

Run: ``python examples/control_loop.py [seconds]`` (default 10 s simulated; about 15 s).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before numpy: one BLAS thread in a control loop

import gc  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from onlinesparse import SparseRBFRegressor, warm_up  # noqa: E402

# -- the plant (unknown to the controller) --------------------------------------------------
DT = 1e-3  # control period: 1 kHz
SUBSTEPS = 10  # the simulator integrates at 10 kHz with the torque held over the tick
LENGTH = 0.5  # m
MASS = 1.4  # kg: link plus an unknown payload
INERTIA = MASS * LENGTH**2
GRAVITY = 9.81
VISCOUS = 0.1  # N·m·s/rad
COULOMB = 0.4  # N·m
COULOMB_VELOCITY = 0.02  # rad/s: smoothing of the Coulomb term
Q_NOISE, QD_NOISE = 1e-4, 2e-4  # encoder and velocity-estimate noise (rad, rad/s)

# -- the controller -------------------------------------------------------------------------
KP, KD = 30.0, 2.0  # a compliant PD: natural frequency ≈ 9 rad/s with this inertia
AMPLITUDE, FREQUENCY = 1.0, 0.5  # reference q_d = A sin(2π f t)
BUDGET = 1e-3  # s per tick
MARGIN = 0.85  # use at most this fraction of the tick for computing (the rest is I/O)
Q_SCALE, QD_SCALE, QDD_SCALE = 1.0, 2 * math.pi * 0.5, (2 * math.pi * 0.5) ** 2
MODEL_PARAMS = {"max_basis": 20, "window_size": 300, "evaluations_per_sample": 1, "n_candidates": 8}
LEARN_EVERY = 10  # learn from every 10th tick (100 Hz); predict at every tick (1 kHz)


def plant_step(q: float, qd: float, tau: float) -> tuple[float, float]:
    """Advance the true pendulum by one control period (semi-implicit Euler substeps)."""
    h = DT / SUBSTEPS
    for _ in range(SUBSTEPS):
        qdd = (tau - VISCOUS * qd - COULOMB * math.tanh(qd / COULOMB_VELOCITY)
               - MASS * GRAVITY * LENGTH * math.sin(q)) / INERTIA
        qd += h * qdd
        q += h * qd
    return q, qd


def reference(t: float) -> tuple[float, float, float]:
    w = 2 * math.pi * FREQUENCY
    return (AMPLITUDE * math.sin(w * t), AMPLITUDE * w * math.cos(w * t),
            -AMPLITUDE * w * w * math.sin(w * t))


def features(q: float, qd: float, qdd: float) -> dict[str, float]:
    return {"q": q / Q_SCALE, "qd": qd / QD_SCALE, "qdd": qdd / QDD_SCALE}


def run(seconds: float, learn: bool, seed: int = 0) -> dict:
    """Simulate the loop; with ``learn`` the model supplies the feed-forward."""
    rng = np.random.default_rng(seed)
    model = SparseRBFRegressor(**MODEL_PARAMS) if learn else None
    n_ticks = round(seconds / DT)
    q, qd = 0.0, 0.0
    errors = np.empty(n_ticks)
    wall = {"mandatory": np.zeros(n_ticks), "total": np.zeros(n_ticks)}
    cpu = {"mandatory": np.zeros(n_ticks), "total": np.zeros(n_ticks)}
    refines = np.zeros(n_ticks, dtype=int)
    failures: list[str] = []
    eval_cost = 1e-4  # running estimate of one refine(1), seconds
    previous = None  # (q, q̇ measured at the start of the last tick, torque applied)
    clock, cpu_clock = time.perf_counter, time.thread_time
    # Everything allocated so far (the libraries, the model) is long-lived: frozen, the
    # garbage collector's full passes no longer walk it. Unfrozen, such a pass took a
    # refine() call past the tick's budget (1–3.6 ms) a few dozen times in 10 s.
    gc.collect()
    gc.freeze()
    for k in range(n_ticks):
        q_meas = q + Q_NOISE * rng.standard_normal()
        qd_meas = qd + QD_NOISE * rng.standard_normal()
        q_d, qd_d, qdd_d = reference(k * DT)
        errors[k] = q_d - q

        start_cpu, start = cpu_clock(), clock()
        tau_ff = 0.0
        if model is not None:
            if previous is not None and k % LEARN_EVERY == 0:
                q0, qd0, tau0 = previous
                qdd_meas = (qd_meas - qd0) / DT  # the acceleration tau0 produced
                try:
                    model.learn_one(features(q0, qd0, qdd_meas), tau0)
                except Exception as error:  # noqa: BLE001 - never stop the controller
                    failures.append(f"tick {k} learn_one: {type(error).__name__}: {error}")
            tau_ff = model.predict_one(features(q_d, qd_d, qdd_d))
        tau = tau_ff + KP * (q_d - q_meas) + KD * (qd_d - qd_meas)
        wall["mandatory"][k], cpu["mandatory"][k] = clock() - start, cpu_clock() - start_cpu

        if model is not None:
            # Spend the slack: one GCV evaluation at a time while two estimated costs fit.
            deadline = start + MARGIN * BUDGET
            while (now := clock()) + 2 * eval_cost < deadline:
                try:
                    done = model.refine(1)
                except Exception as error:  # noqa: BLE001 - never stop the controller
                    failures.append(f"tick {k} refine: {type(error).__name__}: {error}")
                    break
                if not done:
                    break
                refines[k] += 1
                # Clipped update: one preempted call must not starve refine for long.
                eval_cost = 0.95 * eval_cost + 0.05 * min(clock() - now, 4 * eval_cost)
        wall["total"][k], cpu["total"][k] = clock() - start, cpu_clock() - start_cpu

        previous = (q_meas, qd_meas, tau)
        q, qd = plant_step(q, qd, tau)
    return {"errors": errors, "wall": wall, "cpu": cpu, "refines": refines,
            "failures": failures, "model": model, "eval_cost": eval_cost}


def rmse(e: np.ndarray) -> float:
    return float(np.sqrt(np.mean(e * e)))


def main(seconds: float) -> None:
    print(f"pendulum m={MASS} kg (unknown payload), l={LENGTH} m, Coulomb {COULOMB} N·m, "
          f"viscous {VISCOUS}; PD Kp={KP}, Kd={KD}; reference {AMPLITUDE}·sin(2π·"
          f"{FREQUENCY}·t) rad; {seconds:g} s at {1 / DT:.0f} Hz")
    print(f"SparseRBFRegressor({', '.join(f'{k}={v}' for k, v in MODEL_PARAMS.items())}), "
          f"learning every {LEARN_EVERY} ticks, predicting every tick")
    # Load every compiled loop before the first tick (a few hundred ms the first time in a
    # process), as a real-time program would before it starts its loop.
    warm_up()
    started = time.perf_counter()
    pd_only = run(seconds, learn=False)
    learned = run(seconds, learn=True)
    elapsed = time.perf_counter() - started

    per = round(1 / DT)
    print(f"\n{'second':>8s} {'PD only':>10s} {'PD + learned':>13s}   tracking RMSE (rad)")
    for s in range(len(pd_only["errors"]) // per):
        block = slice(s * per, (s + 1) * per)
        print(f"{s:>3d}–{s + 1:<4d} {rmse(pd_only['errors'][block]):10.4f} "
              f"{rmse(learned['errors'][block]):13.4f}")
    half = slice(len(pd_only["errors"]) // 2, None)
    print(f"{'all':>8s} {rmse(pd_only['errors']):10.4f} {rmse(learned['errors']):13.4f}")
    print(f"{'2nd half':>8s} {rmse(pd_only['errors'][half]):10.4f} "
          f"{rmse(learned['errors'][half]):13.4f}")

    print(f"\ncompute per tick, µs (budget {BUDGET * 1e6:.0f}; refine runs until "
          f"{MARGIN * BUDGET * 1e6:.0f})       wall clock                  | thread CPU time")
    print(f"{'':28s} {'median':>7s} {'p99':>7s} {'worst':>7s} {'>budget':>7s} | "
          f"{'median':>7s} {'p99':>7s} {'worst':>7s}")
    rows = [("PD only", pd_only, "total"),
            ("learn_one + predict_one", learned, "mandatory"),
            ("whole tick incl. refine", learned, "total")]
    for label, result, key in rows:
        us, cpu_us = result["wall"][key] * 1e6, result["cpu"][key] * 1e6
        print(f"{label:28s} {np.median(us):7.0f} {np.percentile(us, 99):7.0f} "
              f"{us.max():7.0f} {int(np.sum(us > BUDGET * 1e6)):>7d} | "
              f"{np.median(cpu_us):7.0f} {np.percentile(cpu_us, 99):7.0f} {cpu_us.max():7.0f}")
    learn_ticks = learned["wall"]["mandatory"][LEARN_EVERY::LEARN_EVERY] * 1e6
    print(f"{'  of which learning ticks':28s} {np.median(learn_ticks):7.0f} "
          f"{np.percentile(learn_ticks, 99):7.0f} {learn_ticks.max():7.0f}")
    print(f"refine evaluations per tick: mean {learned['refines'].mean():.2f}, "
          f"max {learned['refines'].max()} (estimated cost of one: "
          f"{learned['eval_cost'] * 1e6:.0f} µs)")
    failures = learned["failures"]
    print(f"learning failures (caught, control went on): {len(failures)}")
    for line in failures[:3]:
        print(f"  {line}")
    diag = learned["model"].diagnostics()
    print("model at the end: " + ", ".join(f"{k}={v:.4g}" for k, v in diag.items()))
    print(f"wall time {elapsed:.1f} s")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
