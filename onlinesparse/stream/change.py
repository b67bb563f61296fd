"""Change detection on a model's calibrated errors: Page's CUSUM (Page 1954).

Three one-sided statistics on ``z``, the model's error before learning in units of its
calibrated deviation (:mod:`~onlinesparse.stream.calibration`): the errors' mean going up,
going down, and their scale doubling (the log-likelihood ratio of N(0, 4) against
N(0, 1)). Each is ``max(0, S + increment)``; the samples since it was last 0 are its
estimate of how long ago the stream changed. When one passes ``CHANGE_THRESHOLD``,
``keep`` is set to that estimate (the owner's memory forgets the patterns before it,
:mod:`~onlinesparse.stream.memory`) and every statistic starts again.

It assumes the calibrated errors are independent from sample to sample: on a stationary
stream the statistics then drift back to 0 (the increments' means are −k and about −0.32),
and a change that moves the errors by several deviations raises an alarm within a few
samples.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit

__all__ = ["CHANGE", "CHANGE_ALLOWANCE", "CHANGE_THRESHOLD", "YOUNG_WINDOW", "new_change",
           "watch_for_change", "change_underway", "hold_noise_estimate"]

CHANGE = np.dtype([("up", np.float64), ("down", np.float64), ("scale", np.float64),
                   ("run_up", np.int64), ("run_down", np.int64), ("run_scale", np.int64),
                   ("keep", np.int64)])
# The allowance k (a shift of the errors' mean by 2k deviations is what the bias statistics
# are tuned to) and the threshold h: with k = 0.5 and h = 10 a one-sided statistic of
# standard normal errors raises a false alarm about once in 10⁵ samples (Siegmund's
# approximation) and finds a shift of one deviation in about 20.
CHANGE_ALLOWANCE = 0.5
CHANGE_THRESHOLD = 10.0
# The scale statistic's increment, the log-likelihood ratio of a deviation twice the
# calibrated one: (1 − 1/4)·z²/2 − log 2.
SCALE_WEIGHT = 0.375
SCALE_OFFSET = math.log(2.0)
# Patterns a memory holds before a building change holds its noise estimate back: a
# younger model is still learning and its errors are biased.
YOUNG_WINDOW = 60.0


def new_change() -> np.ndarray:
    return np.zeros(1, dtype=CHANGE)


@jit
def watch_for_change(change: np.ndarray, z: float) -> None:
    """One sample's step of the three statistics on the calibrated error ``z`` (module
    docstring); an alarm leaves its change-point estimate in ``keep``."""
    s = change[0]
    s.up, s.run_up = _cusum_step(s.up, s.run_up, z - CHANGE_ALLOWANCE)
    s.down, s.run_down = _cusum_step(s.down, s.run_down, -z - CHANGE_ALLOWANCE)
    s.scale, s.run_scale = _cusum_step(s.scale, s.run_scale,
                                       SCALE_WEIGHT * z * z - SCALE_OFFSET)
    run = -1
    if s.up > CHANGE_THRESHOLD:
        run = s.run_up
    if s.down > CHANGE_THRESHOLD:
        run = max(run, s.run_down)
    if s.scale > CHANGE_THRESHOLD:
        run = max(run, s.run_scale)
    if run < 0:
        return
    s.keep = max(run, 1)
    s.up = s.down = s.scale = 0.0
    s.run_up = s.run_down = s.run_scale = 0


@jit
def _cusum_step(statistic: float, run: int, increment: float) -> tuple[float, int]:
    statistic = max(statistic + increment, 0.0)
    return statistic, (run + 1 if statistic > 0.0 else 0)


@jit
def change_underway(change: np.ndarray) -> bool:
    """Whether a change is building up: a statistic is past half its threshold."""
    s = change[0]
    return max(s.up, s.down, s.scale) > 0.5 * CHANGE_THRESHOLD


@jit
def hold_noise_estimate(change: np.ndarray, count: float, period: float) -> bool:
    """Whether a model's noise estimate should wait: a change is building up
    (:func:`change_underway`) in a memory of at least ``YOUNG_WINDOW`` patterns and three
    estimate periods. Patterns of a new concept raise the estimate within a few samples,
    and errors measured in the raised noise no longer reach the alarm; an in-control scale
    is estimated from in-control data. A young memory is not in control yet."""
    return count >= max(YOUNG_WINDOW, 3.0 * period) and change_underway(change)
