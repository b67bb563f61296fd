"""The samples benchmarks/control_panda.py's learned controllers learn (its ``Samples``):
each q̈ estimator is what its docstring says, dated to the tick whose torque it pairs
with. The loop itself (pybullet) is left to the script and to examples/control_loop.py."""

from __future__ import annotations

import numpy as np
import pytest

from tests.reference import import_benchmarks

(control_panda,) = import_benchmarks("control_panda")


class _Inputs:
    def __call__(self, q, qd, qdd):
        return {"q": q.copy(), "qd": qd.copy(), "qdd": qdd.copy()}


@pytest.mark.parametrize("acceleration", ["measured", "central", "simulator"])
def test_each_estimator_pairs_a_tick_s_state_and_torque_with_its_acceleration(acceleration):
    """A velocity that grows by a known q̈ per tick (with noise on the measured one only
    for the central estimate to average): the sample learned pairs tick j's q̃, q̃̇ and
    torque with q̈ at j, learned 1 tick late (h for the central difference)."""
    dt, arm = control_panda.DT, control_panda.ARM
    rng = np.random.default_rng(0)
    qdd_true = np.linspace(-2.0, 2.0, arm)
    samples = control_panda.Samples(_Inputs(), acceleration)
    h = control_panda.CENTRAL_TICKS if acceleration == "central" else 1
    learned = []
    for k in range(40):
        qd = qdd_true * k * dt
        qd_meas = qd + (1e-6 * rng.standard_normal(arm) if acceleration == "central" else 0)
        sample = samples.due(qd_meas, qd)
        if sample is not None:
            learned.append((k, sample))
        samples.record(np.full(arm, float(k)), qd_meas, np.full(arm, 10.0 * k), qd)
    first = 2 * h if acceleration == "central" else 1
    assert learned[0][0] == first and len(learned) == 40 - first
    for k, (x, y) in learned:
        j = k - h  # (the tick whose torque the sample pairs with)
        assert np.all(x["q"] == j) and list(y.values()) == [10.0 * j] * arm
        np.testing.assert_allclose(x["qdd"], qdd_true, atol=1e-3)
