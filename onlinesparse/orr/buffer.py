"""The buffer manager: proposes kernel centres from the stream and keeps the candidate pool.

A new input becomes a candidate centre when it is *novel* — its squared distance to every
tracked centre exceeds ``novelty`` times the squared middle radius — or *badly
predicted* — its error
before learning exceeds ``error_threshold`` predictive standard deviations. Each proposal
enters the pool once per radius in ``radii``, so that kernels of several widths compete
for the same data through GCV (the width is selected, not tuned by hand). At most
``max_new_per_sample`` columns are computed per sample (each costs O(W·n) over the stored
window), the rest wait in a short queue; when the pool is full the candidate that has
proved least useful is evicted, by the verdict each column carries
(``WindowStatistics.merit``): lowest GCV gain first, the never-evaluated after the evaluated
useless ones, oldest first among equals. The statistics of every candidate are exact: they
live in the window's Gram matrix beside the model's.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from onlinesparse import core
from onlinesparse.orr.window import WindowStatistics

__all__ = ["BufferManager"]


@dataclass
class BufferManager:
    """Candidate pool of kernel basis functions.

    Parameters
    ----------
    radii
        Kernel radii proposed for every new centre.
    kernel
        Radial type (see :mod:`onlinesparse.orr.kernels`).
    capacity
        Maximum number of candidates in the pool (protected ones included).
    novelty
        A centre is novel when its squared distance to every tracked centre exceeds
        ``novelty`` times the squared middle radius of ``radii``.
    error_threshold
        ...or when ``|y − ŷ| > error_threshold · σ̂``.
    max_new_per_sample
        New candidate columns computed per sample that computes any.
    column_every
        Compute new columns on one sample in this many (each costs O(W·n), the largest
        single piece of per-sample work: spacing them out keeps the typical sample cheap
        and the worst case known; proposals wait in the queue meanwhile).
    """

    radii: tuple[float, ...]
    kernel: str = "gaussian"
    capacity: int = 30
    novelty: float = 0.25
    error_threshold: float = 2.0
    max_new_per_sample: int = 1
    column_every: int = 1
    queue: deque = field(default_factory=lambda: deque(maxlen=8))
    protected: set[int] = field(default_factory=set)
    n_proposed: int = 0
    n_evicted: int = 0
    n_considered: int = 0

    def __post_init__(self) -> None:
        # The middle proposed radius: the scale novelty is measured in.
        self._reference_radius = float(np.median(self.radii))
        self._protected_ids = np.zeros(0, dtype=np.int64)

    def consider(self, window: WindowStatistics, x: np.ndarray, error: float,
                 noise_std: float, column: bool = True,
                 nearest: float | None = None, proposal: bool | None = None,
                 metric: np.ndarray | None = None) -> None:
        """Look at a learned input; maybe queue it as a centre; add ≤ max_new candidates
        (on one call in ``column_every``).

        Needs only the window statistics, so any model built on them (the Orr family's
        ridge state, the VBLS state) shares this pool. ``column=False`` computes none this
        time (the caller's sample already did heavy work); proposals still queue.
        ``nearest`` is the novelty distance, ``proposal`` the verdict, if the caller has
        them already (``orr.sample.stream_sample`` makes both).
        """
        if proposal is None:
            if nearest is None:
                basis = window.basis
                kinds, centres, inv_r2 = basis.arrays()[:3]
                # ∞ when no radial column is tracked yet: then every input is novel.
                nearest = core.nearest_sq_distance(kinds, centres, inv_r2, basis.size, x)
            proposal = core.proposes(nearest, self.novelty_threshold, error, noise_std,
                                     self.error_threshold)
        if proposal:
            self.propose(x.copy(), metric)
        # Basis functions the pruner sends back to the pool can overfill it: trim first.
        while window.n_candidates > self.capacity and self._evict(window):
            pass
        due = self.column_due()
        self.n_considered += 1
        if column and due:
            self.add_columns(window)

    def add_columns(self, window: WindowStatistics) -> int:
        """Make up to ``max_new_per_sample`` queued proposals candidates (a column each over
        the stored window, O(W·n)); returns how many."""
        added = 0
        for _ in range(min(self.max_new_per_sample, len(self.queue))):
            # (the centre is a validated input and the radii were checked at creation)
            if window.n_candidates < self.capacity:
                centre, radius, metric = self.queue.popleft()
                window.add_radial(centre, radius, self.kernel, metric)
                added += 1
                continue
            # A full pool: the new candidate takes the least useful one's place.
            position = self._least_useful(window)
            if position < 0:
                break
            centre, radius, metric = self.queue.popleft()
            window.replace_radial(position, centre, radius, self.kernel, metric)
            self.n_evicted += 1
            added += 1
        return added

    def propose(self, centre: np.ndarray, metric: np.ndarray | None = None) -> None:
        """Queue ``centre`` (the caller's to give away) once per radius, with the inputs'
        ``metric`` (positive weights averaging 1; None for the isotropic one)."""
        self.n_proposed += 1
        # (centre, radius, metric): the spec is built only if the proposal is ever used;
        # most are pushed out of the short queue by newer ones first.
        self.queue.extend([(centre, radius, metric) for radius in self.radii])

    def _least_useful(self, window: WindowStatistics) -> int:
        """The candidate to evict first, or −1 when every one is protected. The rule is
        core.least_useful's, on the verdicts the columns carry
        (WindowStatistics.merit: the pruner's GCV gain, or a Bayesian model's score)."""
        return core.least_useful(window.merit, window.ids, window.n_model,
                                   window.n_columns, self.protected_ids())

    def _evict(self, window: WindowStatistics) -> bool:
        position = self._least_useful(window)
        if position < 0:
            return False
        window.drop_column(position)
        self.n_evicted += 1
        return True

    @property
    def reference_radius(self) -> float:
        """The middle proposed radius: the scale in which novelty is measured."""
        return self._reference_radius

    @property
    def novelty_threshold(self) -> float:
        """The squared distance beyond which an input is novel."""
        return self.novelty * self._reference_radius ** 2

    def column_due(self) -> bool:
        """Whether :meth:`consider`, called now, would compute a new candidate column (if
        it is allowed to and proposals wait)."""
        return (self.n_considered + 1) % self.column_every == 0

    def protected_ids(self) -> np.ndarray:
        """The ids of ``protected`` as an array, for the compiled loops (the set only ever
        grows, so its size tells when the array is stale)."""
        if len(self._protected_ids) != len(self.protected):
            self._protected_ids = np.fromiter(self.protected, np.int64, len(self.protected))
        return self._protected_ids

    def __setstate__(self, state: dict) -> None:
        # Checkpoints written when the scores lived here rather than on the columns.
        state.pop("scores", None)
        state.setdefault("_protected_ids", np.zeros(0, dtype=np.int64))
        queue = state.get("queue")
        if queue and len(queue[0]) == 2:  # (proposals queued before the metric)
            state["queue"] = deque([(c, r, None) for c, r in queue], maxlen=queue.maxlen)
        self.__dict__.update(state)
