"""Python's cyclic garbage collector, run between the rows of a replay instead of inside them.

The collector starts whenever enough container objects have been allocated, wherever that
happens: inside a timed ``predict_one`` or ``learn_one`` it added its pause to that sample's
latency (a replay with ``--out`` measured a worst case of 105 ms, 3.2 ms with the collector
off), so the reported worst case was Python's rather than the model's. A control loop that
cares about its worst case runs the collector at a moment it chooses; a replay does the same:

* :class:`RowCollector` turns the automatic collector off for the replay, after one full
  collection and a :func:`gc.freeze` of what survives it (the imported modules and the
  model), so that the later collections walk only the objects the replay itself creates;
* :meth:`RowCollector.between_rows`, called after each row outside the timed calls, runs the
  collection CPython would have run by then (same thresholds and generations), and times it;
* on the way out, the collector is left as it was found.

A process that had turned the collector off (``gc.disable()``) keeps it off: nothing is
collected then. Replays in several threads of one process share the switch: the first one in
turns the collector off, the last one out turns it back on.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

from onlinesparse.replay.metrics import LatencyHistogram

__all__ = ["RowCollector"]

_LOCK = threading.Lock()


class _Switch:
    """The process-wide state the replays in this process share."""

    users = 0
    was_enabled = False
    froze = False


class RowCollector:
    """Keeps the garbage collector out of the timed part of a replay's rows.

    Use it as a context manager around the rows; call :meth:`between_rows` after each row.

    Parameters
    ----------
    pauses
        Histogram that receives the µs of each collection run between rows (the collector's
        own pauses, reported apart from the model's latency); ``None`` keeps no record.

    Examples
    --------
    >>> import gc
    >>> pauses = LatencyHistogram()
    >>> with RowCollector(pauses) as collector:
    ...     inside = gc.isenabled()
    ...     for _ in range(5000):
    ...         loop = []
    ...         loop.append(loop)  # cyclic garbage: only the collector frees it
    ...         collector.between_rows()
    >>> inside, gc.isenabled(), pauses.n > 0
    (False, True, True)

    """

    def __init__(self, pauses: LatencyHistogram | None = None):
        self.pauses = pauses
        self.active = False
        self.thresholds = gc.get_threshold()

    def __enter__(self) -> RowCollector:
        with _LOCK:
            if _Switch.users == 0:
                _Switch.was_enabled = gc.isenabled()
                _Switch.froze = False
                gc.disable()
                if _Switch.was_enabled and gc.get_freeze_count() == 0:
                    # (a freeze the process made itself, e.g. before forking, is left alone)
                    gc.collect()
                    gc.freeze()
                    _Switch.froze = True
            _Switch.users += 1
            self.active = _Switch.was_enabled
        self.thresholds = gc.get_threshold()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        with _LOCK:
            _Switch.users -= 1
            if _Switch.users == 0:
                if _Switch.froze:
                    gc.unfreeze()
                if _Switch.was_enabled:
                    gc.enable()
        self.active = False

    def due(self) -> int | None:
        """The generation CPython would collect now, or ``None`` when none is due."""
        if not self.active:
            return None
        counts, thresholds = gc.get_count(), self.thresholds
        if thresholds[0] <= 0 or counts[0] <= thresholds[0]:
            return None
        # As CPython does: the oldest generation whose count has passed its threshold.
        for generation in (2, 1):
            if counts[generation] > thresholds[generation]:
                return generation
        return 0

    def between_rows(self) -> None:
        """Run the collection that is due, if any, and record how long it took."""
        generation = self.due()
        if generation is None:
            return
        started = time.perf_counter()
        gc.collect(generation)
        if self.pauses is not None:
            self.pauses.add((time.perf_counter() - started) * 1e6)
