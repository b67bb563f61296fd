"""The measuring helpers of benchmarks/stream_real.py and benchmarks/robot_panda.py.

The benchmarks print the numbers issue 18 is judged by; these tests check that what they
compute is what their tables say (the drift-recovery rule, river's drift points scaled to
the stream, the robot's 5σ tail, the robot trajectory's derivatives and limits). The loop
and its scores are benchmarks/harness.py's, tested in test_bench_harness.py. The scripts
themselves are run from ``benchmarks/``, not here.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.reference import import_benchmarks

robot_panda, stream_real = import_benchmarks("robot_panda", "stream_real")


def test_drift_geometry_keeps_rivers_default_proportions():
    position, window = stream_real.drift_geometry(150_000)
    assert position == (50_000, 100_000) and window == 10_000  # river's defaults
    position, window = stream_real.drift_geometry(5000)
    assert position == (1667, 3333) and window == 333


def test_recovery_reports_the_first_block_back_within_the_factor():
    rng = np.random.default_rng(0)
    errors = rng.normal(size=2000)
    errors[1000:1200] *= 5.0  # two bad blocks after a change at 1000
    pre, after = stream_real.recovery(errors, 1000)
    assert pre == pytest.approx(np.sqrt(np.mean(errors[700:1000] ** 2)))
    assert after == 300  # block 1200–1300 is the first one back
    errors[1000:1700] *= 5.0
    assert stream_real.recovery(errors, 1000)[1] is None


def test_recovery_and_the_tail_skip_unscored_samples():
    errors = np.ones(2000)
    errors[0] = np.nan  # the first prediction: never scored
    errors[1000:1100] = np.nan  # missing predictions
    errors[1100:1200] = 1.1
    assert stream_real.recovery(errors, 1000) == (pytest.approx(1.0), 200)
    sigma = np.full(2000, 0.5)
    errors[1500] = 3.0  # beyond 5σ
    # 1900 samples after the warm-up, 100 of them missing
    assert robot_panda.tail_fraction(errors, sigma) == pytest.approx(1 / 1800)


def test_panda_trajectory_is_smooth_within_limits_and_wanders():
    lower = np.array([-2.9671, -1.8326, -2.9671, -3.1416, -2.9671, -0.0873, -2.9671])
    upper = np.array([2.9671, 1.8326, 2.9671, 0.0, 2.9671, 3.8223, 2.9671])
    n = 3000
    q, qd, qdd = robot_panda.trajectory(n, lower, upper, np.random.default_rng(1))
    assert q.shape == qd.shape == qdd.shape == (n, 7)
    assert np.all(q > lower) and np.all(q < upper)
    dt = 1 / robot_panda.RATE
    # Central differences of the analytic q and q̇ match q̇ and q̈ (O(dt²) error).
    np.testing.assert_allclose((q[2:] - q[:-2]) / (2 * dt), qd[1:-1], atol=5e-3)
    np.testing.assert_allclose((qd[2:] - qd[:-2]) / (2 * dt), qdd[1:-1], atol=2e-2)
    # The posture moves on: the last 10 s lie far (in joint space) from the first 10 s.
    seg = int(robot_panda.SEGMENT * robot_panda.RATE)
    first, last = q[:seg], q[-seg:]
    gaps = np.linalg.norm(last[:, None, :] - first[None, :, :], axis=2).min(axis=1)
    assert np.median(gaps) > 0.5


def test_the_multi_summary_compares_one_multi_output_model_with_one_model_per_joint():
    from tests.test_bench_harness import MeanOfEach

    class Half:
        """A single-output model predicting half the last target, σ = 1."""

        def __init__(self):
            self.last = None

        def predict_one(self, x, with_dist=False):
            from river import proba

            if self.last is None:
                return None
            return proba.Gaussian._from_state(1, self.last / 2, 1.0, 0) if with_dist \
                else self.last / 2

        def learn_one(self, x, y):
            self.last = y

    harness = robot_panda.harness
    rng = np.random.default_rng(0)
    tau = rng.normal(size=(300, 2))
    names = ("tau1", "tau2")
    multi = harness.Model(robot_panda.MULTI, MeanOfEach, with_dist=True, scale=False)
    single = harness.Model(robot_panda.SINGLE, Half, with_dist=True, scale=False)
    runs = harness.interleaved([{"x": 0.0}] * 300, {"tau1": tau[:, 0], "tau2": tau[:, 1]},
                               [(multi, names), (single, "tau1"), (single, "tau2")])
    summary = robot_panda.multi_summary(runs, tau)
    var = tau.var(axis=0)
    for label in (robot_panda.MULTI, robot_panda.SINGLE):
        expected = [runs[n][label].rmse() ** 2 / var[j] for j, n in enumerate(names)]
        np.testing.assert_allclose(summary[label]["nmse"], expected)
    assert summary["nmse_ratio"] == pytest.approx(
        np.mean(summary[robot_panda.MULTI]["nmse"]) / np.mean(summary[robot_panda.SINGLE]["nmse"]))
    one = runs["tau1"][robot_panda.SINGLE].seconds
    assert summary["cost_ratio"] == pytest.approx(
        np.median(runs["tau1"][robot_panda.MULTI].seconds) / np.median(one))
    together = summary["cost"][f"2 × {robot_panda.SINGLE} together"]["us_median"]
    assert together == pytest.approx(1e6 * np.median(
        runs["tau1"][robot_panda.SINGLE].seconds + runs["tau2"][robot_panda.SINGLE].seconds))
    assert summary["goals"] == {
        "cost": summary["cost_ratio"] <= robot_panda.COST_GOAL,
        "nmse": summary["nmse_ratio"] <= robot_panda.NMSE_GOAL,
        "coverage": all(0.93 <= c <= 0.97 for c in summary[robot_panda.MULTI]["coverage"])}
    assert summary["end"][robot_panda.MULTI] == [{"n_basis": None, "memory_cuts": None}]
    assert len(summary["end"][robot_panda.SINGLE]) == 2
