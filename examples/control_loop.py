"""Learning a robot arm's inverse dynamics online, inside its 1 kHz torque-control loop.

The robot is pybullet's Franka Panda, simulated as ``benchmarks/control_panda.py`` simulates
it (that file's docstring has the details; this example imports its pieces): 7 joints
under torque control at 1 kHz, a periodic reference that fades in over 2 s, encoder and
velocity noise on what the controller sees, and a low-gain PD that alone lags behind
gravity by a tenth of a radian or more.

**What is learned.** One ``SparseRBFMultiTargetRegressor`` learns the inverse dynamics of
all 7 joints, τ = f(q, q̇, q̈): the torque that produces acceleration q̈ in state (q, q̇),
one basis and one window for the 7 torques. Every tick gives a sample of it whatever the
controller did: the state measured five ticks ago, the acceleration then (the central
difference of the measured velocity over ±5 ticks: learning can wait a few ticks, and
the one-tick difference carries ten times the noise, which the model's error follows),
and the *full* torque that was applied. The feed-forward is the model evaluated on the
desired trajectory, so τ = f̂(q_d, q̇_d, q̈_d) + K_p (q_d − q) + K_d (q̇_d − q̇): the
computed-torque law with a learned model.

**The tick.** Read the sensors, predict the feed-forward of all 7 joints, send the torque,
learn the sample of five ticks ago — every tick. The model's window keeps one sample in a stride
it measures on the stream (20 here: consecutive ticks are nearly the same), so that it
spans 20 s of the trajectory rather than its last second. Then, in the time left before the
next tick, ``maintain(1)``: one piece of the heavy work (a move of the model selection, a
refresh of the variance matrix, a new candidate) that ``learn_one`` leaves to it once the
loop has called it, so that no tick carries one. Before the loop: ``warm_up()`` loads every
compiled loop, ``prepare(x, y)`` builds the model's arrays for these inputs and targets
(else the first tick would, 1–2 ms), ``gc.freeze()`` takes the long-lived objects
(libraries, models) out of the garbage collector's passes and ``gc.disable()`` keeps a
collection out of the ticks.

Prints the tracking RMS per second with and without the learned feed-forward and the
compute per tick against the budget. This is Python on a general-purpose OS: the
wall-clock worst case includes preemption by the scheduler. Needs pybullet (the ``bench``
extra).

Run: ``python examples/control_loop.py [seconds]`` (default 20 s simulated; about 15 s).
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
    Reference,
    Samples,
    run,
    sensor_noise,
    torques,
)

from onlinesparse import SparseRBFMultiTargetRegressor, warm_up  # noqa: E402

BUDGET_NS = 1_000_000  # 1 kHz
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
    model = SparseRBFMultiTargetRegressor(last_target=False)
    model.maintain()  # (this loop has idle time: learn_one leaves the heavy pieces to it)
    # (its arrays and candidates built now for these 21 inputs and 7 targets, not in tick 1)
    model.prepare(inputs(q_ref[0], qd_ref[0], qdd_ref[0]), dict.fromkeys(TARGETS, 0.0))
    sim.reset(reference.centre)

    errors = np.empty((n, ARM))
    tick_ns, idle_ns = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    cpu_ns = np.zeros(n, dtype=np.int64)  # (this thread's CPU time: what the model cost)
    samples = Samples(inputs, "central")  # (what the last ticks measured and sent)
    gc.collect()
    gc.freeze()
    gc.disable()
    for k in range(n):
        q, qd = sim.state()  # the true state: the simulation's, for scoring only
        errors[k] = q_ref[k] - q
        q_meas, qd_meas = q + noise[k, 0], qd + noise[k, 1]

        start, cpu = time.perf_counter_ns(), time.thread_time_ns()
        feed_forward = torques(model.predict_one(inputs(q_ref[k], qd_ref[k], qdd_ref[k])))
        tau = feed_forward + kp * (q_ref[k] - q_meas) + kd * (qd_ref[k] - qd_meas)
        tau = np.clip(tau, -sim.effort, sim.effort)
        # (on a robot the torque goes out here)
        # what a torque five ticks ago did, now that q̈ then is known: (q, q̇, q̈) → τ
        sample = samples.due(qd_meas)
        if sample is not None:
            model.learn_one(*sample)
        tick_ns[k] = time.perf_counter_ns() - start
        cpu_ns[k] = time.thread_time_ns() - cpu

        samples.record(q_meas, qd_meas, tau)
        sim.step(tau)  # (the physical world)
        idle = time.perf_counter_ns()
        model.maintain(1)  # the idle time until the next tick: one heavy piece at most
        idle_ns[k] = time.perf_counter_ns() - idle
    gc.enable()
    gc.unfreeze()
    sim.close()
    return {"errors": errors, "tick_ns": tick_ns, "idle_ns": idle_ns, "cpu_ns": cpu_ns}


def rms(e: np.ndarray) -> float:
    return float(np.sqrt(np.mean(e * e)))


def main(seconds: float) -> None:
    print(f"Franka Panda, 7 joints, torque control at {1 / DT:.0f} Hz for {seconds:g} s; "
          "SparseRBFMultiTargetRegressor(last_target=False) as the feed-forward")
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

    us, cpu = result["tick_ns"] / 1e3, result["cpu_ns"] / 1e3
    after = slice(2 * per, None)  # (the first 2 s: the reference fades in)
    budget = BUDGET_NS / 1e3
    print(f"\ncompute per tick (predict and learn 7 joints), µs, wall clock / this thread's "
          f"CPU: median {np.median(us):.0f} / {np.median(cpu):.0f}, p99 "
          f"{np.percentile(us, 99):.0f} / {np.percentile(cpu, 99):.0f}, max {us.max():.0f} / "
          f"{cpu.max():.0f}; after the first 2 s, {int(np.sum(us[after] > budget))} / "
          f"{int(np.sum(cpu[after] > budget))} of {len(us[after])} ticks over the "
          f"{budget:.0f} µs budget (a wall clock far above the CPU time is the machine's "
          "other work)")
    cycle = (result["tick_ns"] + result["idle_ns"]) / 1e3
    print(f"with maintain(1) after the step: p99 {np.percentile(cycle, 99):.0f} µs, "
          f"{int(np.sum(cycle > budget))} ticks over the budget")
    print(f"wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 20.0)
