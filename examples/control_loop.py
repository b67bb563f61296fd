"""Learning a robot arm's inverse dynamics online, inside its 1 kHz torque-control loop.

The robot is pybullet's Franka Panda, simulated as ``benchmarks/control_panda.py`` simulates
it (that file's docstring has the details; this example imports its pieces): 7 joints
under torque control at 1 kHz, a periodic reference that fades in over 2 s, encoder and
velocity noise on what the controller sees, and a low-gain PD that alone lags behind
gravity by a tenth of a radian or more.

**What is learned.** One ``SparseRBFRegressor`` per joint learns the inverse dynamics
τ = f(q, q̇, q̈): the torque that produces acceleration q̈ in state (q, q̇). Every tick gives
an exact sample of it whatever the controller did: the state measured at the last tick, the
acceleration measured since (finite difference of the measured velocity), and the *full*
torque that was applied. The feed-forward is the model evaluated on the desired
trajectory, so τ = f̂(q_d, q̇_d, q̈_d) + K_p (q_d − q) + K_d (q̇_d − q̇): the computed-torque
law with a learned model. ``PerJoint`` puts the 7 models behind one multi-target
``predict_one(x) -> dict`` / ``learn_one(x, y: dict)``.

**The tick.** Read the sensors, predict the feed-forward of all 7 joints, send the torque,
then learn the last tick's sample *while the tick has time*: joint after joint, in turn
across ticks, one at least, and more as long as the time spent so far plus twice a running
estimate of one ``learn_one`` stays within 85 % of the 1 ms budget. Seven default models
cost more than 1 ms per tick to learn from every sample on a typical machine
(``benchmarks/control_panda.py`` measures it); this way each joint learns from a share of
the ticks, and a tick overruns only when a single ``learn_one`` does. Before the loop:
``warm_up()`` loads every compiled loop, ``gc.freeze()`` takes the long-lived objects
(libraries, models) out of the garbage collector's passes and ``gc.disable()`` keeps a
collection out of the ticks.

Prints the tracking RMS per second with and without the learned feed-forward and the
compute per tick against the budget. This is Python on a general-purpose OS: the
wall-clock worst case includes preemption by the scheduler. Needs pybullet (the ``bench``
extra).

Run: ``python examples/control_loop.py [seconds]`` (default 4 s simulated; about 15 s).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before numpy: one BLAS thread in a control loop

import gc  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from control_panda import (  # noqa: E402
    ARM,
    DT,
    TARGETS,
    Inputs,
    Panda,
    PerJoint,
    Reference,
    run,
    sensor_noise,
    torques,
)

from onlinesparse import SparseRBFRegressor, warm_up  # noqa: E402

BUDGET_NS = 1_000_000  # 1 kHz
DEADLINE_NS = 850_000  # learning stops here: the rest of the tick is the robot's I/O
SEED = 42


def learned_loop(seconds: float) -> dict:
    sim = Panda()
    reference = Reference.draw(sim.lower, sim.upper, SEED)
    n = round(seconds / DT)
    q_ref, qd_ref, qdd_ref = reference.at(np.arange(n) * DT)
    noise = sensor_noise(n, SEED)  # what the sensors add, tick by tick
    inputs = Inputs(reference)  # (q, q̇, q̈) → 21 inputs scaled by fixed constants
    kp, kd = sim.gains(reference.centre)
    # (last_target=False: the feed-forward is asked at the desired state and the applied torque
    # comes back as the target; the last-target expert would feed the loop's output back)
    model = PerJoint(lambda: SparseRBFRegressor(last_target=False))
    sim.reset(reference.centre)

    errors, tick_ns = np.empty((n, ARM)), np.zeros(n, dtype=np.int64)
    learned = np.zeros(n, dtype=int)  # joints that learned at each tick
    turn, learn_cost = 0, 200_000  # next joint to learn; running estimate of one learn, ns
    previous = None  # (q, q̇ measured at the last tick, the torque sent)
    gc.collect()
    gc.freeze()
    gc.disable()
    for k in range(n):
        q, qd = sim.state()  # the true state: the simulation's, for scoring only
        errors[k] = q_ref[k] - q
        q_meas, qd_meas = q + noise[k, 0], qd + noise[k, 1]

        start = time.perf_counter_ns()
        feed_forward = torques(model.predict_one(inputs(q_ref[k], qd_ref[k], qdd_ref[k])))
        tau = feed_forward + kp * (q_ref[k] - q_meas) + kd * (qd_ref[k] - qd_meas)
        tau = np.clip(tau, -sim.effort, sim.effort)
        # (on a robot the torque goes out here; the simulator steps at the end of the tick)

        if previous is not None:  # what the last torque did: (q, q̇, q̈) → τ
            q0, qd0, tau0 = previous
            x = inputs(q0, qd0, (qd_meas - qd0) / DT)
            while learned[k] < ARM:  # one joint at least, more while two more fit
                now = time.perf_counter_ns()
                if learned[k] and now - start + 2 * learn_cost > DEADLINE_NS:
                    break
                model.models[TARGETS[turn]].learn_one(x, float(tau0[turn]))
                turn, learned[k] = (turn + 1) % ARM, learned[k] + 1
                took = time.perf_counter_ns() - now
                learn_cost += (min(took, 4 * learn_cost) - learn_cost) // 20  # clipped EMA
        tick_ns[k] = time.perf_counter_ns() - start

        previous = (q_meas, qd_meas, tau)
        sim.step(tau)
    gc.enable()
    gc.unfreeze()
    sim.close()
    return {"errors": errors, "tick_ns": tick_ns, "learned": learned}


def rms(e: np.ndarray) -> float:
    return float(np.sqrt(np.mean(e * e)))


def main(seconds: float) -> None:
    print(f"Franka Panda, 7 joints, torque control at {1 / DT:.0f} Hz for {seconds:g} s; "
          "SparseRBFRegressor(last_target=False) per joint as the feed-forward")
    warm_up()  # every compiled loop loaded now, not in the first ticks
    started = time.perf_counter()
    pd_only = run("pd", seconds, SEED).errors
    result = learned_loop(seconds)
    learned = result["errors"]

    per = round(1 / DT)
    print(f"\n{'second':>8s} {'PD only':>10s} {'PD + learned':>13s}   tracking RMS (rad), "
          "all joints")
    for s in range(len(learned) // per):
        block = slice(s * per, (s + 1) * per)
        print(f"{s:>3d}–{s + 1:<4d} {rms(pd_only[block]):10.4f} {rms(learned[block]):13.4f}")
    half = slice(len(learned) // 2, None)
    print(f"{'2nd half':>8s} {rms(pd_only[half]):10.4f} {rms(learned[half]):13.4f}")

    us = result["tick_ns"] / 1e3
    over = int(np.sum(result["tick_ns"] > BUDGET_NS))
    print(f"\ncompute per tick (predict 7 joints, learn while the tick has time), µs: median "
          f"{np.median(us):.0f}, p99 {np.percentile(us, 99):.0f}, max {us.max():.0f}; "
          f"{over} of {len(us)} ticks over the {BUDGET_NS / 1e3:.0f} µs budget")
    print(f"joints learned per tick: mean {result['learned'].mean():.2f} of {ARM}")
    print(f"wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0)
