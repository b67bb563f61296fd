"""Change detection on a model's prequential errors: Page's CUSUM (Page 1954) on errors
whitened by the stream's own persistence.

A cut of the memory costs what the forgotten patterns knew, so an alarm must mean that
the stream changed, not that its errors are other than independent and Gaussian. The
detector reads the error of the prediction as made (the model plus the errors' level,
:mod:`~onlinesparse.stream.level`, whose local-level filters already take out a slowly
wandering offset) in units of an in-control deviation, ``z`` (clipped at ±3), and runs
three one-sided statistics: the errors' mean going up, going down, and their scale
doubling (the log-likelihood ratio of N(0, 4) against N(0, 1)). Each is
``max(0, S + increment)``; the samples since it was last 0 are its estimate of how long
ago the stream changed. When one passes ``CHANGE_THRESHOLD``, ``keep`` is set to that
estimate (the owner's memory forgets the patterns before it,
:mod:`~onlinesparse.stream.memory`) and every statistic starts again.

What it assumes, and how each assumption is made to hold on the streams users have:

* **A deviation that means "in control".** The interval's own factor κ
  (:mod:`~onlinesparse.stream.calibration`) follows a change of scale within a few dozen
  samples, hiding the change from statistics measured in it (FriedmanDrift's gradual
  change went unseen). The detector calibrates a factor of its own, ten times slower, and
  holds it while a change builds up.
* **Independent errors.** A model's errors along a trajectory, on a count stream whose
  rate wanders, or under autocorrelated noise come in runs: sums of them vary more than
  sums of independent errors, and a CUSUM reads the runs as changes (a stationary
  spike-count stream cut its memory every 40 samples). The detector measures, in control,
  the :func:`persistence` of ``z`` and of the scale increment — the long-run variance over
  the variance, over runs of ``1/RECENT_RATE`` samples — and shrinks each increment's
  deviation from its in-control mean by its square root, which leaves the statistics'
  false-alarm rate about what it is for independent errors (one in about 10⁶ samples per
  statistic with k = 0.5, h = 12) and independent errors as they were.
* **Heavy tails and counts** are bounded by the clip at ±3: one wild error adds at most
  2.7 to the scale statistic.

A change that moves the errors by several in-control deviations still raises an alarm
within a few samples; a change that touches a small part of the input space moves the
errors too little to be told from noise (FriedmanDrift "lea": its first changes alter
2–5 % of the inputs).
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse._jit import jit
from onlinesparse._validation import register_records
from onlinesparse.stream.calibration import CALIBRATION_STEP, calibration_step

__all__ = ["CHANGE", "CHANGE_ALLOWANCE", "CHANGE_THRESHOLD", "YOUNG_WINDOW", "new_change",
           "restart_reference", "watch_errors", "watch_for_change", "persistence",
           "track_persistence", "change_underway", "hold_noise_estimate"]

CHANGE = np.dtype([("up", np.float64), ("down", np.float64), ("scale", np.float64),
                   ("run_up", np.int64), ("run_down", np.int64), ("run_scale", np.int64),
                   ("keep", np.int64), ("log_scale", np.float64), ("z", np.float64),
                   ("persistence", np.float64, (2, 5))])
# The allowance k (a shift of the errors' mean by 2k deviations is what the bias statistics
# are tuned to) and the threshold h: with k = 0.5 and h = 12 a one-sided statistic of
# independent standard normal errors raises a false alarm about once in 10⁶ samples
# (Siegmund's approximation; h = 10, once in 10⁵, left the persistence's residual
# underestimate cutting an AR(1) stream twice in 10⁴) and finds a shift of one deviation
# in about 25.
CHANGE_ALLOWANCE = 0.5
CHANGE_THRESHOLD = 12.0
# The scale statistic's increment, the log-likelihood ratio of a deviation twice the
# calibrated one: (1 − 1/4)·z²/2 − log 2; its mean and variance for standard normal z.
SCALE_WEIGHT = 0.375
SCALE_OFFSET = math.log(2.0)
SCALE_MEAN = SCALE_WEIGHT - SCALE_OFFSET
SCALE_VARIANCE = 2.0 * SCALE_WEIGHT**2
# The step of the detector's own factor: a tenth of the interval's
# (calibration.CALIBRATION_STEP), so that it follows the in-control scale over some hundreds
# of samples and a change's errors reach the statistics before the factor absorbs them.
IN_CONTROL_STEP = 0.01
# Persistence (:func:`persistence`) is measured over runs of about 1/RECENT_RATE samples,
# the length of the runs that raise an alarm, and estimated at IN_CONTROL_RATE (over some
# hundreds of samples); it is at most MAX_PERSISTENCE.
RECENT_RATE = 1.0 / 20.0
IN_CONTROL_RATE = 1.0 / 500.0
MAX_PERSISTENCE = 25.0
# The trackers' fields: the value's mean, the recent mean of its deviation from it, the
# recent mean's mean square, the deviation's mean square, and the values tracked. The
# starting point (independent values) counts as PRIOR_SAMPLES values: until the tracked ones
# outnumber them by 1/IN_CONTROL_RATE the averages are running means from it, so that a
# stream's persistence is known within some dozens of samples, not hundreds.
MEAN, RECENT, RECENT_SQUARE, SQUARE, SAMPLES = range(5)
PRIOR_SAMPLES = 2.0 / RECENT_RATE
# The statistics start once the references have this many in-control samples: a change in
# the first hundred samples of a stream finds a young model, whose errors are no
# reference yet.
WARM_UP = 100.0
# Patterns a memory holds before a building change holds its noise estimate back: a
# younger model is still learning and its errors are biased.
YOUNG_WINDOW = 60.0
# (the layout a pickle is stamped with: _validation.Versioned)
register_records(CHANGE=CHANGE)


def new_change() -> np.ndarray:
    """No statistic yet; the persistence of ``z`` and of the scale increment as independent
    standard normal errors would show it (a factor of 1)."""
    record = np.zeros(1, dtype=CHANGE)
    for tracker, mean, variance in ((0, 0.0, 1.0), (1, SCALE_MEAN, SCALE_VARIANCE)):
        record[0]["persistence"][tracker] = (mean, 0.0,
                                             variance * RECENT_RATE / (2.0 - RECENT_RATE),
                                             variance, 0.0)
    return record


def restart_reference(change: np.ndarray) -> None:
    """After a cut: the model, refitted to a shorter memory, makes errors of its own, and
    the statistics wait ``WARM_UP`` in-control samples again while the detector's deviation
    and the errors' persistence learn from them (the trackers at the fast rate of a new
    stream's). (Measured in its predecessor's
    deviation, a young model's errors read as a change: each cut of a 7-joint control
    loop's memory left a model that raised the next alarm, 67 cuts in 20 s.)"""
    change["persistence"][..., SAMPLES] = 0.0


@jit
def watch_errors(change: np.ndarray, error: float, variance: float, quantile: float,
                 miss_rate: float) -> None:
    """One target's step of the detector on the error of the prediction as made, whose
    predictive variance before calibration is ``variance``.

    The error in units of the in-control deviation ``e^log_scale·√variance``, clipped at
    ±3, is ``z``; ``z`` and the scale increment, each shrunk by the square root of its
    :func:`persistence`, step the statistics (:func:`watch_for_change`) once the references
    have ``WARM_UP`` in-control samples. While no change is
    underway the factor is calibrated to the interval's ``quantile`` and ``miss_rate`` as
    the interval's own is (:func:`~onlinesparse.stream.calibration.calibration_step`) and
    the persistence trackers learn: held while a change builds up, neither can absorb the
    change it should reveal."""
    s = change[0]
    if not variance > 0.0:
        s.z = 0.0
        return
    deviation = math.exp(s.log_scale) * math.sqrt(variance)
    z = s.z = min(max(error / deviation, -3.0), 3.0)
    increment = SCALE_WEIGHT * z * z - SCALE_OFFSET
    warming = s.persistence[0][SAMPLES] < WARM_UP  # (no reference to judge by yet)
    if not warming:
        watch_for_change(change, z / math.sqrt(persistence(s.persistence[0])),
                         SCALE_MEAN + (increment - SCALE_MEAN)
                         / math.sqrt(persistence(s.persistence[1])))
    if not change_underway(change):
        # (while the statistics wait, the deviation is learned at the interval's own rate:
        # it is their reference from the first step on)
        s.log_scale = calibration_step(s.log_scale, error, deviation, quantile, miss_rate,
                                       CALIBRATION_STEP if warming else IN_CONTROL_STEP)
        track_persistence(s.persistence[0], z)
        track_persistence(s.persistence[1], increment)


@jit
def track_persistence(tracker: np.ndarray, value: float) -> None:
    """One in-control ``value`` for a persistence tracker (:func:`persistence`)."""
    tracker[SAMPLES] += 1.0
    rate = max(1.0 / (tracker[SAMPLES] + PRIOR_SAMPLES), IN_CONTROL_RATE)
    deviation = value - tracker[MEAN]
    tracker[MEAN] += rate * deviation
    tracker[RECENT] += RECENT_RATE * (deviation - tracker[RECENT])
    tracker[RECENT_SQUARE] += rate * (tracker[RECENT] ** 2 - tracker[RECENT_SQUARE])
    tracker[SQUARE] += rate * (deviation * deviation - tracker[SQUARE])


@jit
def persistence(tracker: np.ndarray) -> float:
    """How much more a sum of a tracked value varies than a sum of as many independent
    values would (the long-run variance over the variance), at least 1: the mean square
    of its exponentially weighted recent mean against the ``a/(2 − a)`` of its variance
    that independent values give (a = ``RECENT_RATE``).

    A model's errors along a trajectory, or on a count stream whose rate wanders, stay on
    one side, or large, for runs of samples that independent errors would not make; the
    statistics built for independent errors read such runs as a change. Dividing an
    increment's deviation from its in-control mean by the square root keeps their
    false-alarm rate about what it is for independent errors, and leaves independent
    errors as they are."""
    if not tracker[SQUARE] > 0.0:
        return 1.0
    ratio = (tracker[RECENT_SQUARE] * (2.0 - RECENT_RATE)
             / (RECENT_RATE * tracker[SQUARE]))
    return min(max(ratio, 1.0), MAX_PERSISTENCE)


@jit
def watch_for_change(change: np.ndarray, z: float, scale_increment: float) -> None:
    """One sample's step of Page's statistics: the bias statistics on ``z`` (with the
    allowance k), the scale statistic on ``scale_increment`` (module docstring); an alarm
    leaves its change-point estimate in ``keep`` and starts every statistic again."""
    s = change[0]
    s.up, s.run_up = _cusum_step(s.up, s.run_up, z - CHANGE_ALLOWANCE)
    s.down, s.run_down = _cusum_step(s.down, s.run_down, -z - CHANGE_ALLOWANCE)
    s.scale, s.run_scale = _cusum_step(s.scale, s.run_scale, scale_increment)
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
