"""Adaptive memory: how much of a model's memory a change of the stream costs, and how long
the memory may grow again — for any model that implements :class:`Forgetful`.

The change statistics (:mod:`~onlinesparse.stream.change`: Page's CUSUM on the calibrated
prequential errors) raise an alarm with an estimate of how many samples ago the stream
changed. Where the model offers its memory as a ridge regression, a refit judges whether
the change is worth a cut (:mod:`~onlinesparse.stream.refit`: a shift of the errors' level
is not); :meth:`AdaptiveMemory.after_alarm` then has the model forget every pattern before
that sample, keeping at least as many patterns as it has parameters plus ten, and
``MIN_MEMORY`` (the floor); a memory holding fewer than twice its floor is not cut. For
the Orr family this is ``IncrementalRidge.forget_oldest``,
O(W·n² + M³): that sample's heavy work.

A stream that keeps changing is best fitted on about the stretch between its changes.
From the second alarm on, the window refills only up to the interval between the last two
alarms (:meth:`AdaptiveMemory.hold`). A single change leaves it to refill up to the
window size.

Which samples a full memory holds is a decision of its own (:class:`Horizon`): where
consecutive inputs are alike (a control loop at 1 kHz, a trajectory sampled at 100 Hz), its
``window_size`` patterns are one sample in a stride measured on the stream, so that it keeps
the trajectory's past, not its last second; where they are not, the last ``window_size``
samples. Until the memory is full, after a cut and after an alarm, every sample enters.
Where the inputs do not decorrelate within the longest stride (a trajectory sampled fast),
a memory that does not yet span its horizon is not cut: it is still meeting parts of the
trajectory for the first time, and its errors grow there for want of data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from onlinesparse.stream.refit import CUT, LOOK_AGAIN, refit_verdict

__all__ = ["MIN_MEMORY", "RELAX", "DECORRELATED", "MEASURED", "Forgetful",
           "Horizon", "Plan", "AdaptiveMemory", "decorrelation_stride"]

# The fewest patterns a cut keeps; how many caps' worth of samples without a change relax
# the cap on a stream that keeps changing (a stream that drifts throughout is fitted best
# on about the stretch between its changes).
MIN_MEMORY = 30
# How many times the memory looks again at a change the refit could not yet judge, each
# when the samples since it have doubled (an alarm dates a change some 10-25 samples back:
# the look comes some 20-50 samples after it). Three looks let more of the EMG stream's
# passing epochs through, and caught no change more (memory_alarms, one-off runs).
REVIEWS = 1
RELAX = 4


class Forgetful(Protocol):
    """What a model offers the adaptive memory: how many patterns it stores, how many
    parameters it fits to them, and forgetting the oldest ``k`` exactly. A model that also
    offers ``ridge_view()`` (:class:`~onlinesparse.stream.refit.RidgeView`) has its alarms
    judged by a refit before a cut (:meth:`AdaptiveMemory.plan`), and one that offers
    ``stored_inputs()`` (:class:`StoresInputs`) has them measured at an alarm before its
    horizon's first measurement (:meth:`Horizon.spans`)."""

    @property
    def n_stored(self) -> int: ...

    @property
    def n_parameters(self) -> int: ...

    def forget_oldest(self, k: int) -> None: ...


# Inputs are alike at a lag where their pooled autocorrelation (standardised over the
# memory) is at least this (decorrelation_stride).
DECORRELATED = 0.5
# The stride is first measured on this many stored patterns (then on the full memory). On
# 100, a 1 kHz loop starting at rest looked decorrelated at 15 samples (its first 0.1 s:
# encoder noise on an arm that barely moves); on 150 and more, at none.
MEASURED = 200


class StoresInputs(Protocol):
    """A memory whose stored inputs can be read, oldest first (a row each)."""

    def stored_inputs(self) -> np.ndarray: ...


# A full memory's patterns reach back at most this many windows' worth of samples by
# default: the longest stride (the estimators' ``horizon=None``).
HORIZON_WINDOWS = 20


@dataclass
class Horizon:
    """Which samples a memory of ``window_size`` patterns takes in: every one until it is
    full; then one in ``stride`` (the first, and every ``stride``-th after it), the stride
    measured on the full memory as the lag at which its inputs decorrelate
    (:func:`decorrelation_stride`), at most ``max_stride``.

    On a stream whose consecutive inputs are alike — a control loop at 1 kHz, a trajectory
    sampled at 100 Hz — the last ``window_size`` samples cover a second of it, and the model
    forgets the rest of the trajectory while it learns; one sample in ``stride`` spreads
    the same patterns over ``stride`` times as long. Where consecutive inputs are as unlike
    as any two (shuffled data, spike counts), the stride is 1: the last ``window_size``
    samples, as before. A sample the memory does not take still moves everything that
    reads the stream (the errors' calibration and change statistics, the pruner's
    evaluations). An alarm makes the next ``dense`` samples enter whatever the stride (a
    change is learned at the stream's full rate, and its patterns are there for the cut);
    after a cut every sample enters until the memory is full again.

    Attributes
    ----------
    window_size
        The memory's patterns.
    max_stride
        The longest stride: the full memory reaches back at most ``max_stride ·
        window_size`` samples (1: the last ``window_size`` samples, always).
    stride
        The stride in force.
    full_since
        The sample at which the memory was last found full (−1: not since the start or the
        last cut).
    measured
        Whether the stride has been measured (on ``MEASURED`` patterns, then on the full
        memory).
    dense_from, dense_until
        The samples an alarm lets in, whatever the stride (``[dense_from, dense_until)``).
    due
        Whether a measurement of the stride is owed (``admits(defer=True)``), to be made
        by :meth:`measure`; the stride in force until then is the last one measured.
    """

    window_size: int
    max_stride: int
    stride: int = 1
    full_since: int = -1
    measured: bool = False
    dense_from: int = 0
    dense_until: int = 0
    due: bool = False

    @classmethod
    def of(cls, window_size: int, horizon: int | None) -> Horizon:
        """The horizon of a memory of ``window_size`` patterns that may reach ``horizon``
        samples back (an estimator's parameter; ``None``: ``HORIZON_WINDOWS`` windows)."""
        stride = HORIZON_WINDOWS if horizon is None else max(horizon // window_size, 1)
        return cls(window_size, stride)

    def admits(self, stored: int, learned: int, window: StoresInputs,
               defer: bool = False) -> bool:
        """Whether sample ``learned`` (the samples learned before it) enters a memory that
        holds ``stored`` patterns; ``window`` gives the stored inputs when the stride is
        measured — on ``MEASURED`` patterns and when the memory is found full, O(W·d log
        W), about 0.5 ms at W = 1000, d = 21 — now, or with ``defer`` by :meth:`measure`
        later (a loop's idle time)."""
        if self.stride == 1 and self.full_since >= 0 and learned >= self.dense_until:
            return True  # (the last window_size samples: every sample, the common case)
        if self.full_since < 0:
            # (measured early too, so that a trajectory's young memory is known for one)
            self.due |= stored == min(MEASURED, self.window_size - 1) and self.max_stride > 1
            if stored >= self.window_size:
                self.full_since = learned
                self.due = self.max_stride > 1
            if not defer:
                self.measure(window)
            if stored < self.window_size:
                return True
        if learned < self.dense_until:
            return True
        return (learned - self.full_since) % self.stride == 0

    def measure(self, window: StoresInputs) -> bool:
        """Measure the stride on the stored inputs if a measurement is owed; whether one
        was made."""
        if not self.due:
            return False
        self.stride = decorrelation_stride(window.stored_inputs(), self.max_stride)
        self.measured, self.due = True, False
        return True

    def patterns_in(self, samples: int, learned: int) -> int:
        """How many of the patterns that came in stay from the last ``samples`` samples (at
        sample ``learned``): every one before the memory was full and while an alarm's
        samples entered, one in ``stride`` else."""
        if self.full_since < 0 or self.stride == 1:
            return samples
        start = max(learned - samples, 0)
        before = max(min(self.full_since, learned) - start, 0)
        start = max(start, self.full_since)
        lo, hi = max(start, self.dense_from), min(self.dense_until, learned)
        dense = max(hi - lo, 0) - (self._on_stride(lo, hi) if hi > lo else 0)
        return before + self._on_stride(start, learned) + dense

    def _on_stride(self, lo: int, hi: int) -> int:
        """The samples in [lo, hi) on the stride (lo at or after ``full_since``)."""
        f, s = self.full_since, self.stride
        return -(-(hi - f) // s) - -(-(lo - f) // s)

    def spans(self, learned: int, inputs: np.ndarray | None = None) -> bool:
        """Whether the memory spans its horizon at sample ``learned``: always unless the
        inputs did not decorrelate within the longest stride (a trajectory sampled fast:
        a control loop, a robot at 100 Hz); then once every stored pattern came in at the
        stride. A memory that spans less of such a trajectory is still meeting parts of
        it for the first time, and its errors grow there for want of data, not because
        the stream changed. Before the stride's first measurement, the stored ``inputs``
        given (an alarm's: those before the change it dates, so that a step of the inputs
        is not read as smoothness) are measured now (not kept: the measurements at
        ``MEASURED`` patterns and at the full memory decide the stride); without them,
        always. An arm already moving when learning began had its memory cut at samples
        145–181 of a 1 kHz loop, before the first measurement, and again and again after,
        each cut keeping the memory short of it (one to three cuts in 450 samples,
        1.6–2 ms each)."""
        if self.max_stride == 1:
            return True
        if not self.measured:
            return inputs is None or decorrelation_stride(inputs, self.max_stride) < \
                self.max_stride
        if self.stride < self.max_stride:
            return True
        return self.full_since >= 0 and learned - self.full_since >= self.stride * self.window_size

    def alarm(self, learned: int, dense: int) -> None:
        """A change may have begun: the next ``dense`` samples enter."""
        self.dense_from = learned + 1
        self.dense_until = learned + 1 + dense

    def restart(self) -> None:
        """After a cut the memory is not full: every sample enters until it is again."""
        self.full_since = -1


def _inputs_before(model: object, after: int) -> np.ndarray | None:
    """The inputs ``model`` stores from before the last ``after`` patterns, oldest first,
    where it offers them (:class:`StoresInputs`); else None."""
    if not hasattr(model, "stored_inputs"):
        return None
    inputs = model.stored_inputs()
    return inputs[: max(len(inputs) - after, 0)]


def decorrelation_stride(inputs: np.ndarray, max_stride: int) -> int:
    """How many samples apart a full memory keeps its patterns, from its stored ``inputs``
    (oldest first, a row each): 1 when the inputs decorrelate at once, or return within
    half the memory, alike again at twice the lag at which they first decorrelated or
    later (its patterns already span the stream's cycle: an hourly cycle, a trajectory
    whose period the memory holds twice); else the lag at which they first decorrelate,
    at most ``max_stride``. Alike means a pooled autocorrelation of the
    inputs standardised over the memory (constant inputs left out) of ``DECORRELATED``
    or more. Noise on some inputs does not hide the others' smoothness as long as the
    smooth ones carry at least half of the variance."""
    spread = inputs.std(axis=0)
    varying = spread > 0.0
    n = inputs.shape[0]
    if not np.any(varying) or n < 4:
        return 1
    alike = _autocorrelation(inputs[:, varying], spread[varying]) >= DECORRELATED
    half = n // 2
    apart = np.flatnonzero(~alike[1:half + 1])
    if not apart.size:
        return max_stride  # (never decorrelated: a trajectory sampled fast)
    lag = int(apart[0]) + 1
    if lag == 1 or np.any(alike[2 * lag:half + 1]):
        return 1
    return min(lag, max_stride)


def _autocorrelation(inputs: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """The pooled autocorrelation of the standardised columns of ``inputs`` at every lag
    (``Σₜ zₜ·zₜ₊ℓ / ((n − ℓ)·d)``), by FFT: O(n log n · d)."""
    n, d = inputs.shape
    z = (inputs - inputs.mean(axis=0)) / spread
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(z, size, axis=0)
    products = np.fft.irfft(np.sum(np.abs(spectrum) ** 2, axis=1), size)[:n]
    return products / ((n - np.arange(n)) * d)


class Plan(NamedTuple):
    """What an alarm does to the memory (:meth:`AdaptiveMemory.plan`): the patterns to
    keep (0: no cut), the patterns after the change (counted before the cut moves the
    horizon), the samples since the change, whether a refit refused the cut, and whether
    it will look again (:attr:`AdaptiveMemory.review_at`)."""

    keep: int
    after: int
    since: int
    refused: bool = False
    pending: bool = False


@dataclass
class AdaptiveMemory:
    """The memory's state between alarms.

    Attributes
    ----------
    window_size
        The window's maximum, where a relaxed cap is dropped.
    horizon
        Which samples the memory holds (:class:`Horizon`): the alarms date a change in
        samples, the memory counts patterns.
    last_alarm
        The sample of the last alarm that began a change (−1: none yet).
    cap
        The window's size on a stream that keeps changing: the interval between its last
        two changes (0: no cap).
    cap_since
        The sample since which the cap holds.
    stale
        Patterns from before the last change still in the window, kept to reach the floor.
    vetoed
        Alarms a refit found not worth a cut (:meth:`plan`).
    review_at, review_change, reviews
        A change the refit could not yet judge (``LOOK_AGAIN``): the sample at which it
        looks again (−1: none), the sample the change began at, and how many times it has
        looked since the alarm (at most ``REVIEWS``).
    """

    window_size: int
    horizon: Horizon | None = None
    last_alarm: int = -1
    cap: int = 0
    cap_since: int = 0
    stale: int = 0
    vetoed: int = 0
    review_at: int = -1
    review_change: int = -1
    reviews: int = 0

    @property
    def holding(self) -> bool:
        """Whether :meth:`hold` has anything to do."""
        return bool(self.cap or self.stale)

    def after_alarm(self, model: Forgetful, since: int, learned: int) -> bool:
        """An alarm at sample ``learned`` dating the change ``since`` samples back: cut the
        window of ``model`` to the patterns after it as :meth:`plan` decides (:meth:`cut`).
        Returns whether patterns were forgotten. (A look the plan owes is taken by the
        caller that asks :meth:`review_due`: ``stream.layer.after_learning``.)"""
        return self.cut(model, self.plan(model, since, learned), learned)

    def plan(self, model: Forgetful, since: int, learned: int) -> Plan:
        """What an alarm at sample ``learned`` dating the change ``since`` samples back
        does (:class:`Plan`). None is cut where the memory does not span its horizon
        (:meth:`Horizon.spans`) or holds less than twice its floor; a model that offers a
        :class:`~onlinesparse.stream.refit.RidgeView` (``ridge_view()``) is cut only where
        the refit says ``CUT`` (:func:`~onlinesparse.stream.refit.refit_verdict`); where it
        says ``LOOK_AGAIN`` the memory looks again when the samples since the change have
        doubled (:meth:`review_due`), at most ``REVIEWS`` times per change, and then
        refuses; an alarm refused counts in ``vetoed``. An alarm dating another change
        replaces the look owed (the change it dates gets its own looks, and the one left
        undecided is counted nowhere); a look the memory has grown too young to take ends
        as a refusal, uncounted."""
        change = learned - since
        looking = change == self.review_change  # (the look owed, or an alarm dating it)
        if not looking:
            self.reviews = 0
        self.review_at, self.review_change = -1, -1
        floor, stored = _floor(model), model.n_stored
        # (a trajectory's young memory, Horizon.spans; or one short of twice its floor,
        # young or just cut: its model's errors are still falling, and a cut would keep
        # most of it)
        after = self._patterns_in(since, learned)
        if (stored < 2 * floor
                or (self.horizon is not None
                    and not self.horizon.spans(learned, _inputs_before(model, after)))):
            self.reviews = 0
            return Plan(0, 0, since, refused=looking)
        keep = max(after, floor)
        view = getattr(model, "ridge_view", None)
        view = view() if view is not None and keep < stored else None
        said = CUT if view is None else refit_verdict(view, keep, after)
        if said == LOOK_AGAIN and self.reviews < REVIEWS:
            # (the next look when the samples since the change have doubled)
            self.reviews += 1
            self.review_at, self.review_change = learned + since, change
            return Plan(0, after, since, pending=True)
        self.reviews = 0
        if said != CUT:
            self.vetoed += 1
            return Plan(0, after, since, refused=True)
        return Plan(keep, after, since)

    def review_due(self, learned: int) -> int:
        """The samples since a change the refit said to look at again, when the look is
        due at sample ``learned`` (0: none due); the look is then taken."""
        if self.review_at < 0 or learned < self.review_at:
            return 0
        self.review_at = -1
        return learned - self.review_change

    def cut(self, model: Forgetful, plan: Plan, learned: int) -> bool:
        """Carry out ``plan`` (:meth:`plan`) at sample ``learned``: the memory cut to its last
        ``plan.keep`` patterns, the next samples entering whatever the horizon's stride,
        and the interval between changes setting the cap. Returns whether patterns were
        forgotten (none where the plan keeps none)."""
        if not plan.keep:
            return False
        floor, stored, keep = _floor(model), model.n_stored, plan.keep
        if self.horizon is not None:
            self.horizon.alarm(learned, 2 * floor)
        interval = learned - self.last_alarm
        # (an alarm within two floors of the last is the same change, still settling: it
        # cuts, and leaves the interval between changes as it was)
        if self.last_alarm < 0 or interval >= 2 * max(plan.since, floor):
            if self.last_alarm >= 0:
                self.cap = interval
                self.cap_since = learned
            self.last_alarm = learned
        if keep < stored:
            self._forget(model, stored - keep)
        # (the patterns from before the change kept to reach the floor go as soon as as
        # many new ones have come: hold)
        self.stale = max(min(keep, stored) - plan.after, 0)
        return keep < stored

    def _forget(self, model: Forgetful, count: int) -> None:
        """The ``count`` oldest patterns forgotten: the memory is no longer full, and every
        sample enters again until it is (:meth:`Horizon.restart`)."""
        model.forget_oldest(count)
        if self.horizon is not None:
            self.horizon.restart()

    def _patterns_in(self, samples: int, learned: int) -> int:
        return (samples if self.horizon is None
                else self.horizon.patterns_in(samples, learned))

    def hold(self, model: Forgetful, learned: int) -> None:
        """Forget the stale patterns once the floor is reached without them, and keep the
        window of a stream that keeps changing at about ``cap``: once it holds half as much
        again, the oldest patterns beyond the cap are forgotten (``forget_oldest``, one
        heavy sample in every cap/2). When no change comes for ``RELAX`` caps' worth of
        samples the stream has settled: the cap doubles, and is dropped at
        ``window_size``."""
        stored = model.n_stored
        if self.stale and stored - self.stale >= _floor(model):
            self._forget(model, self.stale)
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
            self._forget(model, stored - cap)


def _floor(model: Forgetful) -> int:
    """The fewest patterns the window keeps: the basis functions plus ten, and
    ``MIN_MEMORY``, so that the model stays well posed."""
    return max(model.n_parameters + 10, MIN_MEMORY)
