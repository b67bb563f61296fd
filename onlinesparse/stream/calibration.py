"""The predictive interval's calibration: adaptive conformal inference on a scale.

A factor κ multiplies a model's predictive deviation. After each target it grows by
``e^(η(1 − α))`` when the error fell outside the central ``coverage`` interval and shrinks
by ``e^(−ηα)`` when inside (α = 1 − coverage), so that in the long run a fraction α falls
outside whatever the stream: a noise estimate from few patterns, heavy tails, drift, inputs
far from the data (Gibbs and Candès 2021, adaptive conformal inference, on the logarithm of
a scale). Two factors are kept:

* κ (``log_scale``), of the model's own deviation, on the model's own error (the change
  detector, :mod:`~onlinesparse.stream.change`, measures errors in a slower factor of its
  own, which a change cannot absorb);
* κ_o (``outer_log_scale``), of the deviation of the prediction as returned (the model
  plus the errors' level, :mod:`~onlinesparse.stream.level`, mixed with the experts and
  blended with the last target, :mod:`~onlinesparse.stream.baseline`), on that
  prediction's error: the interval a user gets is the one calibrated. Where the level
  explains part of the errors, κ alone would leave it too wide; where the last target
  carries the prediction, its variance (a mean square of the stream's steps) would, on a
  stream of small steps and rare jumps, leave it many times too wide whatever
  ``coverage`` asked for (a sensor's flow recording: 98 % of errors inside a 50 %
  interval).

``coverage`` is the one parameter: the interval's quantile and the miss rate both follow
from it (:func:`new_calibration`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.stats import norm

from onlinesparse._jit import jit
from onlinesparse._validation import register_records

__all__ = ["CALIBRATION", "CALIBRATION_STEP", "CALIBRATION_LIMIT", "aim", "new_calibration",
           "calibration_step", "calibrate"]

CALIBRATION = np.dtype([("log_scale", np.float64), ("outer_log_scale", np.float64),
                        ("quantile", np.float64), ("miss_rate", np.float64)])
# The step η of log κ: a few dozen samples to follow a change of scale, a wobble of about
# ±0.1 in log κ on a stationary stream.
CALIBRATION_STEP = 0.1
CALIBRATION_LIMIT = 5.0  # |log κ| at most: κ within [0.007, 148]
# (the layout a pickle is stamped with: _validation.Versioned)
register_records(CALIBRATION=CALIBRATION)


@functools.lru_cache(maxsize=16)
def aim(coverage: float = 0.95) -> tuple[float, float]:
    """What calibrating to ``coverage`` (the central interval's probability) means: the
    quantile ``Φ⁻¹(½ + coverage/2)`` and the miss rate ``1 − coverage`` (rounded to 15
    digits, so that 0.95 gives the decimal 0.05). Remembered per coverage: scipy's
    ``norm.ppf`` takes some 150 µs a call, which a new model's first sample paid (its
    concept memory) in the middle of a stream."""
    if not 0.0 < coverage < 1.0:
        raise ValueError(f"coverage must lie strictly between 0 and 1, got {coverage!r}")
    return float(norm.ppf(0.5 + coverage / 2.0)), round(1.0 - coverage, 15)


def new_calibration(coverage: float = 0.95) -> np.ndarray:
    """A calibration record aiming at ``coverage`` (:func:`aim`)."""
    record = np.zeros(1, dtype=CALIBRATION)
    record[0]["quantile"], record[0]["miss_rate"] = aim(coverage)
    return record


@jit
def calibration_step(log_scale: float, error: float, deviation: float, quantile: float,
                     miss_rate: float, step: float = CALIBRATION_STEP) -> float:
    """One step of a factor's logarithm (η = ``step``): up by ``η(1 − α)`` when ``error``
    fell outside ``±quantile·deviation``, down by ``ηα`` when inside, bounded by
    ±``CALIBRATION_LIMIT``."""
    miss = abs(error) > quantile * deviation
    log_scale += step * ((1.0 if miss else 0.0) - miss_rate)
    return min(max(log_scale, -CALIBRATION_LIMIT), CALIBRATION_LIMIT)


@jit
def calibrate(calibration: np.ndarray, spread: float, error: float, returned: float,
              returned_variance: float) -> bool:
    """One target's step of both factors (module docstring). ``spread`` is the model's
    calibrated predictive variance ``κ²σ²(1 + hᵀSh)`` before this step and ``error`` its
    error; ``returned`` is the error of the prediction as returned, whose deviation is
    ``κ_o√returned_variance``. Returns False (nothing stepped) when there is no spread."""
    c = calibration[0]
    if not spread > 0.0:
        return False
    deviation = math.sqrt(spread)
    outer = math.exp(c.outer_log_scale) * math.sqrt(returned_variance)
    c.log_scale = calibration_step(c.log_scale, error, deviation, c.quantile, c.miss_rate)
    c.outer_log_scale = calibration_step(c.outer_log_scale, returned, outer, c.quantile,
                                         c.miss_rate)
    return True
