"""Named records of the scalars the compiled core reads and advances.

Each object of the Orr family keeps its scalars (counts, positions, rounding accounts,
cursors) in a one-element NumPy structured array rather than in Python attributes. The
compiled functions take the record and read and write its fields by name
(``r = record[0]; r.n_seen += 1``); the Python object reads the same fields through
:class:`Field` descriptors. There is one copy of every scalar, so nothing is packed before
a compiled call or written back after it, and nothing is indexed by position.

=================  ===============================  ===================================
record             owner                            what it holds
=================  ===============================  ===================================
``WINDOW``         ``WindowStatistics``             positions and counts of the stored
                                                    ring, ``yᵀy``, the rolling refresh
``RIDGE``          ``IncrementalRidge``             rounding accounts, refresh and check
                                                    counters, the model's version
``PRUNER``         ``GCVPruner``                    turn counter, cursors, move counts
``SAMPLE``         ``SparseRBFRegressor``           the noise level, the sample count and
                                                    what one compiled call reports (the
                                                    stream layer's records are its own:
                                                    ``onlinesparse.stream``)
=================  ===============================  ===================================
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from onlinesparse._validation import register_records

__all__ = ["WINDOW", "RIDGE", "PRUNER", "SAMPLE", "NO_REFRESH", "REFRESH_STATE",
           "REFRESH_STATISTICS", "YY", "SUM", "Field", "RecordOwner", "Targets", "new_record",
           "new_targets"]


def _dtype(ints: tuple[str, ...], floats: tuple[str, ...]) -> np.dtype:
    return np.dtype([(name, np.int64) for name in ints]
                    + [(name, np.float64) for name in floats])


WINDOW = _dtype(
    ("n_seen", "head", "n_stored", "n_columns", "n_model", "exact_since", "store_capacity"),
    ("count", "refresh_credit", "factor"))
RIDGE = _dtype(
    ("since_refresh", "since_check", "round_start", "version", "refresh_every",
     "check_every", "defer_refreshes", "pending", "summary_version"),
    # (training_error, gamma: the criteria's two numbers as of version summary_version)
    ("error_estimate", "statistics_error", "round_error", "drift_tolerance",
     "training_error", "gamma", "leverage"))
PRUNER = _dtype(
    ("turn", "basis_cursor", "candidate_cursor", "n_added", "n_deleted", "n_reestimated",
     "max_basis", "candidates_per_evaluation",
     # what a call of core.selection.evaluate reports: how far it got, and the move it
     # stopped at for the caller to carry out
     "stop", "done", "move_kind", "action", "move_basis", "protected", "traded_now",
     "added_now", "at_budget", "resized",
     # 1: the constant basis function is the model's unpenalised intercept
     # (core.selection.intercept_move); 0 in a pickle from before it
     "free_intercept"),
    ("min_gain",))
SAMPLE = _dtype(
    ("n_learned", "noise_every", "propose"),
    # nearest: the input's squared distance to the nearest centre; error_square: the
    # running mean of the squared error before learning, over about the window
    # (core.relevance.track_residual; a single target's). Each target's noise variance and
    # error are in core.state.Targets.
    ("novelty_sq", "error_threshold", "nearest", "error_square"))
# RIDGE.pending: no refresh waits, one of S alone, one of the statistics and S.
NO_REFRESH, REFRESH_STATE, REFRESH_STATISTICS = -1, 0, 1
# The rows of Targets.moments: each target's Σy² and Σy over the memory.
YY, SUM = 0, 1
# (the layout a pickle is stamped with: _validation.Versioned)
register_records(WINDOW=WINDOW, RIDGE=RIDGE, PRUNER=PRUNER, SAMPLE=SAMPLE)


class Targets(NamedTuple):
    """What a model keeps of each of its K targets (a single-output model has K = 1): the
    stored ring's targets ``values`` (K × W, one line per target), their ``moments``
    (2 × K: Σy² and Σy over the memory, forgetting's weights included), each target's
    weight ω in the shared criteria (``scales``,
    :func:`~onlinesparse.core.criteria.error_and_gamma`), its training error yₖᵀP²yₖ as of
    the ridge's summary (``training``), its noise variance estimate (``noise``, 0 until
    the first: the target's variance stands in) and the error of its last prediction
    before learning (``error``)."""

    values: np.ndarray
    moments: np.ndarray
    scales: np.ndarray
    training: np.ndarray
    noise: np.ndarray
    error: np.ndarray


def new_targets(n_targets: int, rows: int) -> Targets:
    """Zeroed :class:`Targets` for K targets and a ring of ``rows`` slots, every ω 1."""
    return Targets(np.zeros((n_targets, rows)), np.zeros((2, n_targets)),
                   np.ones(n_targets), np.zeros(n_targets), np.zeros(n_targets),
                   np.zeros(n_targets))


def new_record(dtype: np.dtype) -> np.ndarray:
    """A zeroed record (an array of one element, the form the compiled calls take)."""
    return np.zeros(1, dtype=dtype)


class RecordOwner:
    """An object whose scalars live in ``self.record``. Python reads and writes them
    through :class:`Field` descriptors, by way of one memoryview per field kept in the
    instance (about 80 ns a read, against 800 ns for ``record[0][name]``). The views are
    made on first use and never pickled; ``record`` is set once, by ``__init__`` or
    ``__setstate__``."""

    record: np.ndarray

    def _bind(self, field: str, key: str) -> memoryview:
        view = self.__dict__[key] = memoryview(self.record[field])
        return view

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_mv_")}


class Field:
    """An attribute of a :class:`RecordOwner` stored in its ``record`` under the field of
    the same name (without a leading underscore) or ``field``, read back as a Python
    ``int`` or ``float``."""

    def __init__(self, field: str | None = None) -> None:
        self.field = field

    def __set_name__(self, owner: type, name: str) -> None:
        if self.field is None:
            self.field = name.lstrip("_")
        self.key = "_mv_" + self.field

    def __get__(self, obj: RecordOwner | None, objtype: type | None = None) -> object:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.key][0]
        except KeyError:
            return obj._bind(self.field, self.key)[0]

    def __set__(self, obj: RecordOwner, value: object) -> None:
        try:
            view = obj.__dict__[self.key]
        except KeyError:
            view = obj._bind(self.field, self.key)
        view[0] = float(value) if view.format == "d" else int(value)
