"""The kernel regressor's step of the buffer manager, without the columns it would waste.

Each proposed centre enters the candidate pool once per radius, and each column costs
O(W·(M + C)) over the window. With the pool full, every new column takes the place of the
least useful candidate (``core.least_useful``: lowest merit first, a column never scored
counting as merit 0 and going after a scored one of equal merit). The kernel regressor's
merit is the admission statistic t² ≥ 0, so once the pool is full of scored candidates a new
column's place is taken by its own sibling of the next radius: of the three columns of a
proposal only the last is still in the pool when it is next scored. On a stream whose
inputs are nearly always novel (Friedman #1, ten inputs) that was two columns in three
computed for nothing. :func:`consider` runs the buffer manager's eviction rule on the
merits alone first and computes only the columns that survive it; the pool it leaves holds
the same candidates with the same statistics (the tests compare it with the buffer
manager's own step).
"""

from __future__ import annotations

import numpy as np

from onlinesparse import core
from onlinesparse.orr.buffer import BufferManager
from onlinesparse.orr.window import WindowStatistics
from onlinesparse.vbls import _compiled

__all__ = ["consider", "surviving_columns"]


def surviving_columns(buffer: BufferManager, window: WindowStatistics, due: int) -> int:
    """How many of the next ``due`` queued columns would still be in the pool after the
    buffer manager computed all of them, or ``due`` when those are not its last ones (then
    nothing may be skipped). The eviction rule replayed on the merits with placeholders for
    the new columns (never scored, newest ids), O(due·C), compiled
    (:func:`~onlinesparse.vbls._compiled.surviving_columns`)."""
    return int(_compiled.surviving_columns(window.merit, window.ids, window.n_model,
                                           window.n_columns, buffer.capacity, due,
                                           buffer.protected_ids()))


def consider(buffer: BufferManager, window: WindowStatistics, x: np.ndarray, error: float,
             noise_std: float) -> None:
    """``buffer.consider(window, x, error, noise_std)`` computing only the columns that
    survive their siblings (module docstring): the same proposal test (``core.proposes``:
    novel, or badly predicted), the queue entries whose columns would be evicted before
    they are scored dropped, then the buffer manager's step on the rest."""
    kinds, centres, inv_r2 = window.basis.arrays()[:3]
    nearest = core.nearest_sq_distance(kinds, centres, inv_r2, window.basis.size, x)
    if core.proposes(nearest, buffer.novelty_threshold, error, noise_std,
                     buffer.error_threshold):
        buffer.propose(x.copy())
    every = buffer.max_new_per_sample
    due = min(every, len(buffer.queue)) if buffer.column_due() else 0
    if due < 2 or window.n_candidates > buffer.capacity:
        buffer.consider(window, x, error, noise_std, proposal=False)
        return
    kept = surviving_columns(buffer, window, due)
    for _ in range(due - kept):
        buffer.queue.popleft()
    buffer.max_new_per_sample = kept  # (the buffer computes this many; restored below)
    try:
        buffer.consider(window, x, error, noise_std, proposal=False)
    finally:
        buffer.max_new_per_sample = every
