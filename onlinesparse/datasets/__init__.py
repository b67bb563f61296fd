"""Deterministic simulated recordings with known ground truth, for demos and tests."""

from onlinesparse.datasets.motor_cortex import (
    MUSCLES,
    MotorCortexSession,
    make_motor_cortex_session,
)
from onlinesparse.datasets.spike_counts import make_spike_count_session

__all__ = ["MUSCLES", "MotorCortexSession", "make_motor_cortex_session",
           "make_spike_count_session"]
