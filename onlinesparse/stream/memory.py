"""Adaptive memory: how much of a model's memory a change of the stream costs, and how long
the memory may grow again — for any model that implements :class:`Forgetful`.

The change statistics (:mod:`~onlinesparse.stream.change`: Page's CUSUM on the calibrated
prequential errors) raise an alarm with an estimate of how many samples ago the stream
changed. :meth:`AdaptiveMemory.after_alarm` then has the model forget every pattern before
that sample, keeping at least as many patterns as it has parameters plus ten, and
``MIN_MEMORY`` (the floor); a memory holding fewer than twice its floor is not cut. For
the Orr family this is ``IncrementalRidge.forget_oldest``,
O(W·n² + M³): that sample's heavy work.

A stream that keeps changing is best fitted on about the stretch between its changes.
From the second alarm on, the window refills only up to the interval between the last two
alarms (:meth:`AdaptiveMemory.hold`). A single change leaves it to refill up to the
window size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["MIN_MEMORY", "RELAX", "Forgetful", "AdaptiveMemory"]

# The fewest patterns a cut keeps; how many caps' worth of samples without a change relax
# the cap on a stream that keeps changing (a stream that drifts throughout is fitted best
# on about the stretch between its changes).
MIN_MEMORY = 30
RELAX = 4


class Forgetful(Protocol):
    """What a model offers the adaptive memory: how many patterns it stores, how many
    parameters it fits to them, and forgetting the oldest ``k`` exactly."""

    @property
    def n_stored(self) -> int: ...

    @property
    def n_parameters(self) -> int: ...

    def forget_oldest(self, k: int) -> None: ...


@dataclass
class AdaptiveMemory:
    """The memory's state between alarms.

    Attributes
    ----------
    window_size
        The window's maximum, where a relaxed cap is dropped.
    last_alarm
        The sample of the last alarm that began a change (−1: none yet).
    cap
        The window's size on a stream that keeps changing: the interval between its last
        two changes (0: no cap).
    cap_since
        The sample since which the cap holds.
    stale
        Patterns from before the last change still in the window, kept to reach the floor.
    """

    window_size: int
    last_alarm: int = -1
    cap: int = 0
    cap_since: int = 0
    stale: int = 0

    @property
    def holding(self) -> bool:
        """Whether :meth:`hold` has anything to do."""
        return bool(self.cap or self.stale)

    def after_alarm(self, model: Forgetful, since: int, learned: int) -> bool:
        """An alarm at sample ``learned`` dating the change ``since`` samples back: cut the
        window of ``model`` to the patterns after it (module docstring). Returns whether
        patterns were forgotten."""
        floor = _floor(model)
        stored = model.n_stored
        if stored < 2 * floor:
            # (a memory short of twice its floor is young, or just cut: its model's errors
            # are still falling, and a cut would keep most of it)
            return False
        keep = max(since, floor)
        interval = learned - self.last_alarm
        # (an alarm within two floors of the last is the same change, still settling: it
        # cuts, and leaves the interval between changes as it was)
        if self.last_alarm < 0 or interval >= 2 * keep:
            if self.last_alarm >= 0:
                self.cap = interval
                self.cap_since = learned
            self.last_alarm = learned
        cut = keep < stored
        if cut:
            model.forget_oldest(stored - keep)
        # (the patterns from before the change kept to reach the floor go as soon as as
        # many new ones have come: hold)
        self.stale = max(min(keep, stored) - since, 0)
        return cut

    def hold(self, model: Forgetful, learned: int) -> None:
        """Forget the stale patterns once the floor is reached without them, and keep the
        window of a stream that keeps changing at about ``cap``: once it holds half as much
        again, the oldest patterns beyond the cap are forgotten (``forget_oldest``, one
        heavy sample in every cap/2). When no change comes for ``RELAX`` caps' worth of
        samples the stream has settled: the cap doubles, and is dropped at
        ``window_size``."""
        stored = model.n_stored
        if self.stale and stored - self.stale >= _floor(model):
            model.forget_oldest(self.stale)
            self.stale = 0
            return
        cap = self.cap
        if not cap:
            return
        if learned - self.cap_since >= RELAX * cap:
            cap = self.cap = 2 * cap
            self.cap_since = learned
            if cap >= self.window_size:
                self.cap = 0
                return
        if stored >= 1.5 * cap:
            model.forget_oldest(stored - cap)


def _floor(model: Forgetful) -> int:
    """The fewest patterns the window keeps: the basis functions plus ten, and
    ``MIN_MEMORY``, so that the model stays well posed."""
    return max(model.n_parameters + 10, MIN_MEMORY)
