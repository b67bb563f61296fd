"""Sufficient statistics of the patterns in memory, for the model and a pool of candidates.

Every model in the library is a linear combination of basis functions, so everything it
needs from the data is (Orr (1996) 4.1, the normal equations): ``G = HᵀH``, ``c = Hᵀy``,
``yᵀy`` and ``p``; with K targets sharing the basis, ``C = HᵀY`` has a column per target and
``yᵀy`` is one per target (``core.state.Targets``). This module keeps those numbers for a
set of *tracked columns*: the basis functions of the model followed by a pool of candidate
basis functions. Keeping the candidates' cross statistics (``Hᵀφ``, ``φᵀφ``, ``φᵀy``) in the
same Gram matrix means a candidate can join the model without looking at the data again, and
a model column can step back into the pool.

Layout: positions ``0 … M−1`` are the model (``n_model``), ``M … n−1`` the candidates. The
blocks the ridge state and the criteria read are views, so reading them costs nothing.

Memory policies
---------------
``"window"``
    The last ``size`` patterns. They are stored (inputs, targets and their rows over every
    tracked column), so the oldest can be removed exactly (Orr A.7.4), a new candidate's
    column can be computed over the window, leave-one-out is available, and a periodic
    :meth:`refresh` recomputes the statistics from the stored rows to wipe out the rounding
    that adding and subtracting accumulates.
``"unbounded"``
    Every pattern ever seen, as statistics only. Nothing is stored, so candidates must be
    registered before the first pattern; adding one later raises ``ValueError``.
``"forgetting"``
    Exponential forgetting: before each new pattern the statistics are multiplied by
    ``factor`` in (0, 1], so ``p`` is the effective count ``Σ factorᵃᵍᵉ``. The recent
    patterns whose weight is still above ``tolerance`` are stored, so a new candidate's
    column is exact up to that relative weight.
"""

from __future__ import annotations

import math

import numpy as np

from onlinesparse import core
from onlinesparse.core.state import WINDOW, Field, RecordOwner, new_record
from onlinesparse.orr.kernels import Basis, BasisSpec
from onlinesparse.stream.refit import RidgeView

__all__ = ["WindowStatistics", "MEMORY_POLICIES"]

MEMORY_POLICIES = ("window", "unbounded", "forgetting")


class WindowStatistics(RecordOwner):
    """``HᵀH``, ``Hᵀy``, ``yᵀy`` and ``p`` over the patterns in memory.

    Parameters
    ----------
    n_features
        Input dimension.
    memory
        ``"window"``, ``"unbounded"`` or ``"forgetting"`` (see the module docstring).
    size
        Number of patterns of a ``"window"``.
    factor
        Forgetting factor in (0, 1] of ``"forgetting"``.
    tolerance
        ``"forgetting"`` stores patterns whose weight ``factorᵃᵍᵉ`` is at least this.
    n_targets
        K, the targets the patterns carry (1: a single-output model, whose views below are
        vectors and numbers; several: a column or an entry per target).

    Examples
    --------
    >>> stats = WindowStatistics(n_features=1, memory="window", size=2)
    >>> _ = stats.add_column(BasisSpec.constant())
    >>> stats.promote(0)
    >>> for x, y in [(0.0, 1.0), (1.0, 2.0), (2.0, 4.0)]:
    ...     if stats.is_full:
    ...         _ = stats.pop_oldest()
    ...     _ = stats.push(np.array([x]), y)
    >>> stats.count, stats.yy, stats.cross_y_model.tolist()
    (2.0, 20.0, [6.0])
    """

    # Scalars live in `record` (core.state.WINDOW), where the compiled core reads and
    # advances them: patterns seen, the ring's oldest slot and fill, the columns tracked
    # and in the model, the pattern count since which every column is exact, the rolling
    # refresh's credit, p, yᵀy and the forgetting factor.
    layout = 0
    n_seen = Field()
    _head = Field()
    n_stored = Field()
    n_columns = Field()
    n_model = Field()
    _exact_since = Field()
    store_capacity = Field()
    count = Field()
    _refresh_credit = Field()
    factor = Field()

    def __init__(self, n_features: int, memory: str = "window", size: int = 1000,
                 factor: float = 1.0, tolerance: float = 1e-12, n_targets: int = 1) -> None:
        self.record = new_record(WINDOW)
        # Bumped whenever an array is replaced by a larger one (the column arrays, the
        # basis description or the ring): an owner caching the arrays checks it.
        self.layout = 0
        if memory not in MEMORY_POLICIES:
            raise ValueError(f"memory must be one of {MEMORY_POLICIES}, got {memory!r}")
        if memory == "window" and not (isinstance(size, int | np.integer) and size >= 1):
            raise ValueError(f"a window needs an integer size ≥ 1, got {size!r}")
        if memory == "forgetting" and not (0.0 < factor <= 1.0):
            raise ValueError(f"the forgetting factor must lie in (0, 1], got {factor}")
        self.memory = memory
        self.factor = float(factor) if memory == "forgetting" else 1.0
        if memory == "window":
            self.store_capacity = int(size)
        elif memory == "forgetting":
            # Patterns older than this weigh less than `tolerance` and are no longer stored.
            # (factor 1 forgets nothing: it is unbounded memory and stores nothing.)
            self.store_capacity = (
                0 if self.factor == 1.0
                else max(1, math.ceil(math.log(tolerance) / math.log(self.factor)))
            )
        else:
            self.store_capacity = 0
        self.n_features = int(n_features)
        self.basis = Basis(self.n_features)
        self.ids = np.zeros(16, dtype=np.int64)
        # The last GCV verdict on each column, GCV without it − GCV with it (NaN: never
        # evaluated): a model column's usefulness, a candidate's gain. It is the same
        # quantity in or out of the model, so it travels with the column.
        self.merit = np.full(16, np.nan)
        # The pattern count (n_seen) at which each column's statistics were last computed
        # from the stored rows (add_column, refresh, refresh_step). It travels with the
        # column, like merit; the rolling refresh renews the stalest column first.
        self.stamps = np.zeros(16, dtype=np.int64)
        # What has passed through each column's Gram diagonal since it was last computed
        # from the stored rows: Σ (hᵢ² + |Gᵢᵢ|) over the patterns added or removed. Each of
        # those updates rounds Gᵢᵢ by at most ε times that, so traffic/Gᵢᵢ bounds Gᵢᵢ's
        # relative error in units of ε (core.statistics.column_error) — also when Gᵢᵢ
        # collapses by subtraction, which an account of each step's own cancellation misses.
        self.traffic = np.zeros(16)
        # Columns' worth of rolling refresh owed (refresh_step), and the pattern count
        # since which every tracked column has been exact (a lower bound).
        self._refresh_credit = 0.0
        self._exact_since = 0
        self._next_id = 0
        self.n_model = 0
        self.n_columns = 0
        if not (isinstance(n_targets, int | np.integer) and n_targets >= 1):
            raise ValueError(f"n_targets must be an integer ≥ 1, got {n_targets!r}")
        self.n_targets = int(n_targets)
        self._gram = np.zeros((16, 16))
        self._cross_y = np.zeros((16, self.n_targets))
        self.count = 0.0
        self.n_seen = 0
        # Ring buffer of stored patterns, oldest at `_head`.
        rows = min(self.store_capacity, 64)
        # The inputs feature by feature (one line per input over the ring): a new column's
        # kernel values are then loops over contiguous memory, which vectorise.
        self._XT = np.zeros((self.n_features, rows))
        # The targets: the ring's (one line per target), their Σy² and Σy, their weights in
        # the shared criteria and their training errors.
        self.targets = core.new_targets(self.n_targets, rows)
        # Stored rows, transposed (one line per tracked column): a new candidate's cross
        # statistics are then a product with contiguous lines, and moving a column is a
        # swap of two contiguous lines rather than of two strided columns.
        self._HT = np.zeros((16, rows))
        self._head = 0
        self.n_stored = 0

    # -- pickling: only what is in use, so a checkpoint does not carry spare capacity ------
    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["record"] = self.record.copy()
        n = self.n_columns
        state["_gram"] = self._gram[:n, :n].copy()
        state["_cross_y"] = self._cross_y[:n].copy()
        state["ids"] = self.ids[:n].copy()
        state["merit"] = self.merit[:n].copy()
        state["stamps"] = self.stamps[:n].copy()
        state["traffic"] = self.traffic[:n].copy()
        state["_HT"] = self._HT[:n].copy()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        n = self.n_columns
        cap = max(n, 1)
        gram = np.zeros((cap, cap))
        gram[:n, :n] = self._gram
        self._gram = gram
        self._cross_y = np.concatenate([self._cross_y,
                                        np.zeros((cap - n, self.n_targets))])
        self.ids = np.concatenate([self.ids, np.zeros(cap - n, dtype=np.int64)])
        self.merit = np.concatenate([self.merit, np.full(cap - n, np.nan)])
        self.stamps = np.concatenate([self.stamps, np.zeros(cap - n, dtype=np.int64)])
        self.traffic = np.concatenate([self.traffic, np.zeros(cap - n)])
        HT = np.zeros((cap, self._HT.shape[1]))
        HT[:n] = self._HT
        self._HT = HT

    # -- views
    def _per_target(self, values: np.ndarray) -> np.ndarray | float:
        """A view of per-target ``values`` (targets on the last axis) as a single-output
        caller reads it: its only target's entries (a number from a vector), or all of
        them."""
        if self.n_targets == 1:
            single = values[..., 0]
            return float(single) if single.ndim == 0 else single
        return values

    @property
    def yy(self) -> float | np.ndarray:
        """``yᵀy`` over the memory (per target)."""
        return self._per_target(self.targets.moments[core.YY])

    @property
    def sum_y(self) -> float | np.ndarray:
        """``Σy`` over the memory (per target)."""
        return self._per_target(self.targets.moments[core.SUM])

    @property
    def ring_size(self) -> int:
        """Slots in the stored ring (it grows to the memory's capacity)."""
        return self._XT.shape[1]

    @property
    def stores_patterns(self) -> bool:
        return self.store_capacity > 0

    @property
    def is_full(self) -> bool:
        """True when a ``"window"`` holds ``size`` patterns (the next push must pop first)."""
        return self.memory == "window" and self.n_stored >= self.store_capacity

    @property
    def n_candidates(self) -> int:
        return self.n_columns - self.n_model

    @property
    def gram(self) -> np.ndarray:
        """Gram matrix of every tracked column (model block first)."""
        return self._gram[: self.n_columns, : self.n_columns]

    @property
    def gram_model(self) -> np.ndarray:
        """``G = HᵀH`` of the model's columns."""
        return self._gram[: self.n_model, : self.n_model]

    @property
    def cross_y_model(self) -> np.ndarray:
        """``c = Hᵀy`` of the model's columns (per target)."""
        return self._per_target(self._cross_y[: self.n_model])

    @property
    def cross_candidates(self) -> np.ndarray:
        """``Hᵀφ`` for every candidate: an ``M × C`` block."""
        return self._gram[: self.n_model, self.n_model : self.n_columns]

    @property
    def candidate_sq_norms(self) -> np.ndarray:
        """``φᵀφ`` of every candidate."""
        idx = np.arange(self.n_model, self.n_columns)
        return self._gram[idx, idx]

    @property
    def cross_y_candidates(self) -> np.ndarray:
        """``φᵀy`` of every candidate (per target)."""
        return self._per_target(self._cross_y[self.n_model : self.n_columns])

    @property
    def gram_buffer(self) -> np.ndarray:
        """The whole allocated Gram array (the tracked block is its leading n × n): the
        compiled core works in place on it."""
        return self._gram

    @property
    def cross_y_buffer(self) -> np.ndarray:
        """The whole allocated ``HᵀY`` array, n × K (see :attr:`gram_buffer`)."""
        return self._cross_y

    def pattern_arrays(self) -> tuple[np.ndarray, ...]:
        """``(G, C, traffic, Hᵀ, Xᵀ, Yᵀ, moments, stamps)``: what ``core.learn_pattern``
        changes when a pattern enters, in its order."""
        return (self._gram, self._cross_y, self.traffic, self._HT, self._XT,
                self.targets.values, self.targets.moments, self.stamps)

    def health_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(G, traffic)``: what ``core.decide`` reads of the statistics."""
        return self._gram, self.traffic

    def tracked(self) -> core.Tracked:
        """Every array that travels with a tracked column, the basis description included
        (``core.Tracked``): what the compiled pruner moves when it swaps two columns."""
        basis = self.basis
        return core.Tracked(self._gram, self._cross_y, self.traffic, self._HT, self.ids,
                            self.merit, self.stamps, *basis.arrays())

    def ring(self) -> tuple[np.ndarray, core.Targets]:
        """The stored inputs (one column per slot) and the targets' bundle
        (``core.state.Targets``), as the compiled sample takes them (``orr.sample.Ring``)."""
        return self._XT, self.targets

    def make_room(self) -> None:
        """Grow a ring that is still filling up to its capacity when the next pattern
        would not fit (``reserve`` does it in advance)."""
        if self.n_stored == self.ring_size < self.store_capacity:
            self._grow_store(min(2 * self.ring_size, self.store_capacity))

    def position_of(self, column_id: int) -> int:
        """Current position of the column with a given id (ids survive swaps)."""
        hits = np.flatnonzero(self.ids[: self.n_columns] == column_id)
        if len(hits) == 0:
            raise ValueError(f"no tracked column has id {column_id}")
        return int(hits[0])

    # -- stored patterns ------------------------------------------------------------------
    def _order(self) -> np.ndarray:
        cap = self.ring_size
        return (self._head + np.arange(self.n_stored)) % cap

    def stored_inputs(self) -> np.ndarray:
        """Stored inputs, oldest first (one row per pattern)."""
        return np.ascontiguousarray(self._XT[:, self._order()].T)

    def support(self, x: np.ndarray, radius: float, kind: int = core.GAUSSIAN) -> float:
        """``Σᵢ φ(xᵢ)²`` over the stored inputs, φ the radial function of type ``kind`` and
        ``radius`` centred at x (``core.support``): how much of the window lies near x.
        O(W·d)."""
        return core.support(self._XT, self._head, self.n_stored, x, 1.0 / radius ** 2, kind)

    def stored_targets(self) -> np.ndarray:
        """Stored targets, oldest first (a vector; with several targets one row per
        pattern)."""
        return self._per_target(self.targets.values[:, self._order()].T)

    def stored_rows(self, model_only: bool = True) -> np.ndarray:
        """Stored design rows, oldest first (the model's columns, or every tracked column)."""
        stop = self.n_model if model_only else self.n_columns
        return self._HT[:stop, self._order()].T

    def ridge_view(self, penalty: np.ndarray, scales: np.ndarray | None = None,
                   first: int = 0) -> RidgeView:
        """The stored patterns as a ridge regression on the model's columns from ``first``
        on (:class:`~onlinesparse.stream.refit.RidgeView`), the columns penalised by
        ``penalty`` (M, or M × K) and the targets weighed by ``scales`` (1 each by
        default): what the adaptive memory refits to judge a cut."""
        targets = self.stored_targets().reshape(self.n_stored, -1)
        weights = np.ones(targets.shape[1]) if scales is None else scales
        return RidgeView(self.stored_rows()[:, first:], targets, penalty,
                         np.asarray(weights, dtype=float))

    def stored_weights(self) -> np.ndarray:
        """Weight of each stored pattern in the statistics (1 unless forgetting)."""
        if self.factor == 1.0:
            return np.ones(self.n_stored)
        ages = np.arange(self.n_stored - 1, -1, -1)
        return self.factor ** ages

    # -- columns --------------------------------------------------------------------------
    def _ensure_columns(self, needed: int) -> None:
        cap = self._gram.shape[0]
        if needed <= cap:
            return
        new_cap = max(needed, 2 * cap)
        gram = np.zeros((new_cap, new_cap))
        gram[:cap, :cap] = self._gram
        self._gram = gram
        self._cross_y = np.concatenate([self._cross_y,
                                        np.zeros((new_cap - cap, self.n_targets))])
        self.ids = np.concatenate([self.ids, np.zeros(new_cap - cap, dtype=np.int64)])
        self.merit = np.concatenate([self.merit, np.full(new_cap - cap, np.nan)])
        self.stamps = np.concatenate([self.stamps, np.zeros(new_cap - cap, dtype=np.int64)])
        self.traffic = np.concatenate([self.traffic, np.zeros(new_cap - cap)])
        HT = np.zeros((new_cap, self._HT.shape[1]))
        HT[:cap] = self._HT
        self._HT = HT
        self.basis.reserve(new_cap)
        self.layout += 1

    def reserve(self, columns: int) -> None:
        """Allocate room for ``columns`` tracked columns and for every pattern the memory
        will store, now.

        The arrays otherwise grow by doubling as columns and patterns arrive, and each
        growth copies them: at W = 1000 the copy when the ring passes 512 patterns cost one
        sample 3 ms. A real-time owner that knows its bounds reserves them before its first
        sample; exceeding them later still works (the arrays grow as before).
        """
        self._ensure_columns(int(columns))
        self.basis.reserve(columns)
        if self.ring_size < self.store_capacity:
            self._grow_store(self.store_capacity)

    def add_column(self, spec: BasisSpec) -> int:
        """Track a new candidate column; returns its id.

        Its statistics are computed over the stored patterns (exact for a window, exact to
        ``tolerance`` for forgetting). With unbounded memory it is only possible before the
        first pattern.
        """
        self._make_room()
        self.basis.append(spec)
        return self._new_column()

    def add_radial(self, centre: np.ndarray, radius: float, kernel: str,
                   metric: np.ndarray | None = None) -> int:
        """:meth:`add_column` of ``BasisSpec.radial(centre, radius, kernel, metric)`` for a
        centre, radius and metric the caller has validated (``Basis.append_radial``)."""
        self._make_room()
        self.basis.append_radial(centre, radius, kernel, metric)
        return self._new_column()

    def _make_room(self) -> None:
        self._require_stored_patterns()
        self._ensure_columns(self.n_columns + 1)

    def _require_stored_patterns(self) -> None:
        """A new column's statistics need the past patterns (or there must be none yet)."""
        if not self.stores_patterns and self.count > 0:
            raise ValueError(
                "unbounded memory keeps statistics only, so a new basis function cannot be "
                "evaluated over past patterns; register candidates before learning or use "
                "memory='window'"
            )

    def replace_radial(self, position: int, centre: np.ndarray, radius: float,
                       kernel: str, metric: np.ndarray | None = None) -> int:
        """Forget candidate ``position`` and track ``BasisSpec.radial(centre, radius,
        kernel)`` in its place (:meth:`drop_column` then :meth:`add_radial`, without
        moving any other column); returns the new column's id. For a caller whose
        centre and radius are valid (the buffer manager evicting to make room)."""
        if not self.n_model <= position < self.n_columns:
            raise ValueError(f"position {position} is not a candidate")
        self._require_stored_patterns()
        self.basis.put_radial(position, centre, radius, kernel, metric)
        return self._new_column(position)

    def _new_column(self, position: int | None = None) -> int:
        """The statistics of the column just written to the basis at ``position`` (by
        default appended, at ``n_columns``)."""
        if position is None:
            position = self.n_columns
            self.n_columns += 1
        n = self.n_columns
        if self.n_stored:
            core.new_column(*self.basis.arrays(), self._XT, self.targets.values, self._HT,
                            self._gram, self._cross_y, position, n, self._head,
                            self.n_stored, self.factor)
        else:
            self._gram[:n, position] = 0.0
            self._gram[position, :n] = 0.0
            self._cross_y[position] = 0.0
        self.ids[position] = self._next_id
        self.merit[position] = np.nan
        self.stamps[position] = self.n_seen  # computed from the stored rows just now: exact
        self.traffic[position] = 0.0
        self._next_id += 1
        return int(self.ids[position])

    def forget_new_column(self, position: int) -> None:
        """Undo :meth:`add_column` of the column at ``position``, its id included (an
        addition that failed after the column was made): as if it had never been."""
        self.drop_column(position)
        self._next_id -= 1

    def swap_columns(self, i: int, j: int) -> None:
        """Exchange the positions of two tracked columns (statistics, rows, spec, id)."""
        if i == j:
            return
        n = self.n_columns
        if not (0 <= i < n and 0 <= j < n):
            raise ValueError(f"column positions {i}, {j} out of range 0…{n - 1}")
        kinds, centres, inv_r2, features = self.basis.arrays()
        core.swap_columns(self._gram, self._HT, self._cross_y, self.ids, self.merit,
                          self.stamps, self.traffic, kinds, inv_r2, features, centres, i, j, n)

    def promote(self, position: int) -> None:
        """Move the candidate at ``position`` to the end of the model block."""
        if not self.n_model <= position < self.n_columns:
            raise ValueError(f"position {position} is not a candidate")
        self.swap_columns(position, self.n_model)
        self.n_model += 1

    def demote(self, position: int) -> None:
        """Move model column ``position`` into the candidate pool (it lands at ``n_model``).

        The caller moves it to the last model position first, so that the ridge state's
        order and the window's stay the same; this method requires that.
        """
        if position != self.n_model - 1:
            raise ValueError("demote the last model column; swap it there first")
        self.n_model -= 1

    def drop_column(self, position: int) -> None:
        """Forget a candidate column entirely."""
        if not self.n_model <= position < self.n_columns:
            raise ValueError(f"position {position} is not a candidate")
        last = self.n_columns - 1
        self.swap_columns(position, last)
        self.n_columns -= 1
        self.basis.truncate(self.n_columns)

    # -- patterns -------------------------------------------------------------------------
    def row(self, x: np.ndarray) -> np.ndarray:
        """Values of every tracked column at input ``x``."""
        return self.basis.evaluate(x, 0, self.n_columns)

    def push(self, x: np.ndarray, y: float | np.ndarray, h: np.ndarray | None = None
             ) -> np.ndarray:
        """Add one pattern, its target ``y`` (K of them: a vector) (forgetting first if the
        policy forgets). Returns its row ``h``.

        The caller checks :attr:`is_full` and pops first: a window never holds more than
        ``size`` patterns.
        """
        if h is None:
            h = self.row(x)
        y = self._as_targets(y)
        n = self.n_columns
        moments = self.targets.moments
        if self.factor != 1.0:
            self._gram[:n, :n] *= self.factor
            self._cross_y[:n] *= self.factor
            moments *= self.factor
            self.count *= self.factor
            self.traffic[:n] *= self.factor
        core.gram_rank_one(self._gram, self._cross_y, self.traffic, n, h, y, 1.0)
        moments[core.YY] += y * y
        moments[core.SUM] += y
        self.count += 1.0
        self.n_seen += 1
        if self.stores_patterns:
            self._store(x, y, h)
        return h

    def _as_targets(self, y: float | np.ndarray) -> np.ndarray:
        """A pattern's targets as the compiled core takes them (a vector of K)."""
        y = np.asarray(y, dtype=float).reshape(-1)
        if y.shape[0] != self.n_targets:
            raise ValueError(f"expected {self.n_targets} targets, got {y.shape[0]}")
        return y

    def _store(self, x: np.ndarray, y: np.ndarray, h: np.ndarray) -> None:
        cap = self.ring_size
        if self.n_stored == cap:
            if cap < self.store_capacity:
                self._grow_store(min(2 * cap, self.store_capacity))
                cap = self.ring_size
            else:  # forgetting horizon: the oldest stored pattern no longer matters
                self._head = (self._head + 1) % cap
                self.n_stored -= 1
        slot = (self._head + self.n_stored) % cap
        self._XT[:, slot] = x
        self.targets.values[:, slot] = y
        self._HT[: len(h), slot] = h
        self.n_stored += 1

    def _grow_store(self, rows: int) -> None:
        order = self._order()
        XT = np.zeros((self.n_features, rows))
        YT = np.zeros((self.n_targets, rows))
        HT = np.zeros((self._HT.shape[0], rows))
        XT[:, : self.n_stored] = self._XT[:, order]
        YT[:, : self.n_stored] = self.targets.values[:, order]
        HT[:, : self.n_stored] = self._HT[:, order]
        self._XT, self._HT, self._head = XT, HT, 0
        self.targets = self.targets._replace(values=YT)
        self.layout += 1

    def oldest(self) -> tuple[np.ndarray, np.ndarray]:
        """Row (every tracked column) and targets (a vector of K) of the oldest stored
        pattern."""
        if self.n_stored == 0:
            raise ValueError("the window is empty: there is no pattern to remove")
        # A contiguous copy: the caller's compiled loops want one, and it must survive
        # the slot being overwritten. (Not ascontiguousarray: with one column the slice is
        # already contiguous and would come back as a view of the slot.)
        return (self._HT[: self.n_columns, self._head].copy(),
                self.targets.values[:, self._head].copy())

    def pop_oldest(self) -> tuple[np.ndarray, np.ndarray]:
        """Remove the oldest stored pattern from the statistics (Orr A.7.4); returns it."""
        if self.memory != "window":
            raise ValueError(f"memory={self.memory!r} does not remove patterns one by one")
        h, y = self.oldest()
        core.gram_rank_one(self._gram, self._cross_y, self.traffic, self.n_columns, h, y,
                           -1.0)
        moments = self.targets.moments
        moments[core.YY] -= y * y
        moments[core.SUM] -= y
        self.count -= 1.0
        self._head = (self._head + 1) % self.ring_size
        self.n_stored -= 1
        return h, y

    def refresh(self) -> bool:
        """Recompute the statistics from the stored rows (only when they are the whole memory).

        Returns whether it did: a window's statistics are exactly its stored rows, so the
        rounding accumulated by adding and subtracting patterns is wiped out.
        """
        if self.memory != "window":
            return False
        order = self._order()
        n = self.n_columns
        H = self._HT[:n, order].T
        Y = self.targets.values[:, order].T
        self._gram[:n, :n] = H.T @ H
        self._cross_y[:n] = H.T @ Y
        moments = self.targets.moments
        moments[core.YY] = np.einsum("ik,ik->k", Y, Y)
        moments[core.SUM] = np.sum(Y, axis=0)
        self.count = float(self.n_stored)
        self.stamps[:n] = self.n_seen
        self.traffic[:n] = 0.0
        self._exact_since = self.n_seen
        return True

    def drop_oldest(self, count: int) -> None:
        """Forget the ``count`` oldest stored patterns of a window and recompute the
        statistics from the rest (exact: O(W·n²)). For a memory that shortens itself after
        a change of the stream; the window then fills up to its size again."""
        if self.memory != "window":
            raise ValueError(f"memory={self.memory!r} does not drop patterns")
        count = int(count)
        if not 0 <= count <= self.n_stored:
            raise ValueError(f"cannot drop {count} of {self.n_stored} stored patterns")
        self._head = (self._head + count) % self.ring_size
        self.n_stored -= count
        self.refresh()

    def drop_where(self, keep: np.ndarray) -> None:
        """Forget the stored patterns ``keep`` (booleans, oldest first) marks False and
        recompute the statistics from the rest (exact: O(W·n²)); the kept ones stay in
        their order, moved to the front of the ring. For a memory that forgets the region
        of the input space where the function changed, not its oldest patterns."""
        if self.memory != "window":
            raise ValueError(f"memory={self.memory!r} does not drop patterns")
        keep = np.asarray(keep)
        if keep.dtype != bool or keep.shape != (self.n_stored,):
            raise ValueError(f"keep must be {self.n_stored} booleans, one per stored "
                             f"pattern; got {keep.dtype} of shape {keep.shape}")
        order = self._order()[keep]
        kept = len(order)
        for ring in (self._XT, self.targets.values, self._HT):
            ring[:, :kept] = ring[:, order]  # (a gathered copy: no slot read after written)
        self._head, self.n_stored = 0, kept
        self.refresh()

    def column_error(self) -> float:
        """The largest relative rounding error of a model column's Gram diagonal, in
        units of ε (``core.statistics.column_error``): past the owner's threshold the
        statistics are recomputed from the stored rows."""
        return core.column_error(self._gram, self.traffic, self.n_model)

    def refresh_step(self, period: int | None = None) -> int | None:
        """One pattern's share of a rolling refresh of a full window's statistics, every
        column once per ``period`` patterns (by default the window's size).

        :meth:`refresh` recomputes the whole Gram matrix at once, O(W·n²): at W = 1000 and
        n = 141 tracked columns that is 0.7 ms in one sample, the largest single piece of
        work of a streaming model. Called once per pattern instead, this recomputes
        n/period columns' worth per pattern (one column — its Gram row and column and
        ``φᵀy``, a matrix-vector product over the stored rows, O(W·n) — every period/n
        patterns, with ``yᵀy``), the stalest first. The total work is the same as one full
        refresh per period, but no sample recomputes more than ⌈n/period⌉ columns, and
        every column is still recomputed about once per period: a column recomputed at
        pattern t is exact then and afterwards carries only the rounding of the updates
        since t, as a full refresh would leave it.

        Returns the pattern count since which every tracked column has been exact (a lower
        bound), or None when the window is not full (then nothing is done and the owner
        refreshes the statistics whole, as before).
        """
        if not self.is_full or not self.n_columns:
            return None
        credit, exact_since = core.rolling_refresh(
            self._HT, self.targets.values, self._gram, self._cross_y, self.stamps,
            self.traffic, self.n_columns, self.n_seen, self._refresh_credit,
            period or self.store_capacity, self.targets.moments)
        self._refresh_credit = credit
        if exact_since >= 0:
            # New columns enter exact and dropped ones leave, so the minimum only rises
            # between two refreshes: recomputing it here keeps it a lower bound.
            self._exact_since = exact_since
        return self._exact_since
