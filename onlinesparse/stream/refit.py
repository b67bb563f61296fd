"""Whether a change alarm is worth a cut: a model refitted to the patterns after the change
against the full memory, by blocked cross-validation on those patterns.

The change statistics (:mod:`~onlinesparse.stream.change`) say that the errors moved; they
cannot say whether a shorter memory would predict better. On a stream whose errors come in
epochs — an EMG envelope's bursts decoded from spike counts, a trajectory's slow regions —
the errors' level moves for some dozens of samples without the function changing, and a
cut throws away what the memory knew. So before a cut, both memories are refitted to the
model's basis (its :class:`RidgeView`) and asked to predict the patterns the alarm dates
after the change:

* **the recent memory**: the ``keep`` patterns the cut would leave, with a free constant,
  its penalties scaled by generalised cross-validation on those patterns
  (:func:`gcv_shrinkage`: a penalty chosen on a full window is too weak for M + 10
  patterns, and the refit would interpolate them);
* **the full memory with a level shift**: every stored pattern, a free constant and a free
  constant on the patterns after the change. A shift of the errors' level alone is what the
  level filters (:mod:`~onlinesparse.stream.level`) follow without a cut; the full memory
  with that shift loses to the recent one only where the function itself changed.

Each predicts the patterns after the change by **blocked cross-validation**: those
patterns in ``FOLDS`` contiguous blocks, each left out in turn (exactly, from the hat
matrix: ``r_B = (I − H_BB)⁻¹ e_B``; Hastie, Tibshirani and Friedman 2009, 7.10). Contiguous
blocks, not single patterns: consecutive patterns of a time-ordered stream are alike, and
leaving one out of a short recent memory lets its neighbours predict it (Bergmeir and
Benítez 2012 for blocked cross-validation of time series). The cut goes ahead when the
recent memory's squared errors, summed over the targets in the model's own weights, are the
smaller by more than one standard error of the blocks' paired differences (the
one-standard-error rule, :func:`verdict`); where they are smaller by less, the memory looks
again once the samples since the change have doubled
(:class:`~onlinesparse.stream.memory.AdaptiveMemory`). Ten blocks of a pattern or two are
thin evidence: a cut on any gain let a linear model's memory be cut on a stationary stream
whenever a passing epoch of its errors favoured a local fit, and a refusal of any gain
within one standard error missed real changes whose first patterns were still few.
O(W·M² + M³) at an alarm, the order of the cut's own refit.

Measured on ``benchmarks/memory_alarms.py`` (its results file): the alarms it refuses and
the cuts that remain, per stream.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import linalg

from onlinesparse.core.criteria import gcv

__all__ = ["FOLDS", "SHRINKAGE", "CUT", "LOOK_AGAIN", "REFUSE", "RidgeView",
           "shorter_memory_wins", "refit_verdict", "verdict", "gcv_shrinkage",
           "blocked_errors"]

# The blocks the patterns after a change are left out in (ten-fold cross-validation; an
# alarm dates its change some 10-25 patterns back, so that a block is a pattern or two).
FOLDS = 10
# A free column's penalty, relative to its own Gram diagonal: enough to keep a constant
# beside a model that already has one positive definite.
FREE = 1e-9
# The scales of the model's penalties the recent memory is refitted at, by GCV: never
# below the full window's (a few patterns are no reason to trust the data more; scales
# below 1 let more of the EMG stream's false alarms through in a one-off run).
SHRINKAGE = (1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6)
# What the refit says of an alarm (verdict): cut, look again once more patterns have come,
# or refuse.
CUT, LOOK_AGAIN, REFUSE = 1, 0, -1


class RidgeView(NamedTuple):
    """A model's memory as a ridge regression: ``rows`` (n × M, the stored patterns' design
    rows, oldest first), ``targets`` (n × K), ``penalty`` (M: each column's λ, the prior
    precision times the noise variance for a Bayesian model; M × K where each target has
    its own) and ``scales`` (K: each target's weight in the model's criteria)."""

    rows: np.ndarray
    targets: np.ndarray
    penalty: np.ndarray
    scales: np.ndarray


def shorter_memory_wins(view: RidgeView, keep: int, after: int) -> bool:
    """Whether the last ``keep`` stored patterns predict the last ``after`` of them better
    than the full memory with a level shift on those ``after`` (module docstring), beyond
    one standard error (:func:`verdict` ``CUT``)."""
    return refit_verdict(view, keep, after) == CUT


def refit_verdict(view: RidgeView, keep: int, after: int) -> int:
    """:func:`verdict` on the gains of the last ``keep`` stored patterns over the full
    memory with a level shift, in predicting the last ``after`` (module docstring);
    ``REFUSE`` where the cut would keep everything."""
    rows = view.rows
    n = rows.shape[0]
    keep = min(keep, n)
    after = min(max(after, 1), keep)
    if keep >= n:
        return REFUSE
    blocks = np.array_split(np.arange(after), min(FOLDS, after))
    level = np.zeros(n)
    level[n - after:] = 1.0
    full = np.column_stack([rows, np.ones(n), level])
    targets = view.targets.reshape(n, -1)
    design = full[n - keep:, :-1]
    shrinkage = gcv_shrinkage(design, targets[n - keep:], view)
    recent = _weighed_errors(design, targets[n - keep:],
                             view._replace(penalty=shrinkage * view.penalty), 1,
                             [b + keep - after for b in blocks])
    gains = _block_sums(_weighed_errors(full, targets, view, 2,
                                        [b + n - after for b in blocks]) - recent, blocks)
    return verdict(gains)


def verdict(gains: np.ndarray) -> int:
    """What the paired gains of the recent memory over the full one (a number per left-out
    block) say: ``CUT`` where their mean exceeds its standard error — the one-standard-
    error rule of cross-validation (Hastie, Tibshirani and Friedman 2009, 7.10), which keeps
    the simpler choice, here the full memory, unless the other wins by more than the
    scatter of its own estimate; ``LOOK_AGAIN`` where the mean is positive but within it (a
    real change gathers evidence as its patterns come, a passing epoch of errors does not);
    ``REFUSE`` otherwise. Fewer than two blocks give no scatter: ``LOOK_AGAIN`` if the gain
    is positive."""
    mean = float(np.mean(gains)) if gains.shape[0] else 0.0
    if not mean > 0.0:
        return REFUSE
    if gains.shape[0] < 2:
        return LOOK_AGAIN
    unit = gains / float(np.max(np.abs(gains)))  # (errors of any unit: no squares underflow)
    spread = float(np.std(unit, ddof=1)) / math.sqrt(gains.shape[0])
    return CUT if float(np.mean(unit)) > spread else LOOK_AGAIN


def _weighed_errors(design: np.ndarray, targets: np.ndarray, view: RidgeView, free: int,
                    blocks: list[np.ndarray]) -> np.ndarray:
    """:func:`blocked_errors` of each left-out pattern, summed over the targets in
    ``view.scales``: one fit for every target where they share the penalties, one per
    target where each has its own; the last ``free`` columns of ``design`` unpenalised."""
    penalties = view.penalty.reshape(view.rows.shape[1], -1)
    if penalties.shape[1] == 1:
        errors = blocked_errors(design, targets, np.r_[penalties[:, 0], np.zeros(free)],
                                blocks)
        return errors @ view.scales
    return sum(view.scales[k] * blocked_errors(
        design, targets[:, k:k + 1], np.r_[penalties[:, k], np.zeros(free)], blocks)[:, 0]
        for k in range(targets.shape[1]))


def _block_sums(values: np.ndarray, blocks: list[np.ndarray]) -> np.ndarray:
    """``values`` (one per left-out pattern, in the blocks' order) summed block by block."""
    ends = np.cumsum([len(b) for b in blocks])
    return np.add.reduceat(values, np.r_[0, ends[:-1]])


def gcv_shrinkage(design: np.ndarray, targets: np.ndarray, view: RidgeView) -> float:
    """The scale of the model's penalties (one of ``SHRINKAGE``) that minimises the
    generalised cross-validation error ``n·RSS/(n − tr H)²`` (Orr eq. 5.6,
    :func:`~onlinesparse.core.criteria.gcv`) of the ridge fit of ``targets`` on ``design``
    (the last column a free constant), the targets weighed by ``view.scales``. A penalty
    chosen on a full window leaves a refit to its last M + 10 patterns nearly
    interpolating them."""
    penalty = np.r_[view.penalty.reshape(view.rows.shape[1], -1).mean(axis=1), 0.0]
    gram = design.T @ design
    floor = _floor(gram)
    n = design.shape[0]
    best, choice = np.inf, 1.0
    for shrinkage in SHRINKAGE:
        a = gram + np.diag(np.maximum(shrinkage * penalty, floor))
        try:  # (Cholesky: a scale too weak to pose the fit is skipped, without a warning)
            factor = linalg.cho_factor(a, check_finite=False)
        except linalg.LinAlgError:
            continue
        solved = linalg.cho_solve(factor, np.column_stack([design.T @ targets, design.T]),
                                  check_finite=False)
        k = targets.shape[1]
        rss = float(np.sum((targets - design @ solved[:, :k]) ** 2 @ view.scales))
        score = gcv(rss, float(np.einsum("ij,ji->", design, solved[:, k:])), float(n))
        if score < best:
            best, choice = score, shrinkage
    return choice


def blocked_errors(design: np.ndarray, targets: np.ndarray, penalty: np.ndarray,
                   blocks: list[np.ndarray]) -> np.ndarray:
    """The squared errors (rows of ``blocks`` × K) of the ridge fit of ``targets`` on
    ``design`` with column penalties ``penalty``, each block's predicted by the fit without
    it: ``(I − H_BB)⁻¹ e_B``, H the hat matrix. Every penalty is at least :func:`_floor`."""
    gram = design.T @ design
    gram[np.diag_indices_from(gram)] += np.maximum(penalty, _floor(gram))
    factor = linalg.cho_factor(gram, check_finite=False)
    residuals = targets - design @ linalg.cho_solve(factor, design.T @ targets,
                                                    check_finite=False)
    out = []
    for block in blocks:
        rows = design[block]
        hat = rows @ linalg.cho_solve(factor, rows.T, check_finite=False)
        left_out = np.linalg.solve(np.eye(len(block)) - hat, residuals[block])
        out.append(left_out ** 2)
    return np.concatenate(out)


def _floor(gram: np.ndarray) -> np.ndarray:
    """The least penalty of each column: ``FREE`` of its own Gram diagonal, in its own
    units, so that the decision does not change with an input's (one floor from the
    largest diagonal shrank the level column of a window with an input in large units, and
    a step of the target was cut)."""
    return FREE * np.maximum(np.diag(gram), 1e-300)
