"""Recurring concepts: the models a stream has left, kept to predict when it returns.

A robot picks up the same tools again; a plant runs the same recipes in turn; a market
goes back to a regime it has been in. When the adaptive memory cuts a model's memory at a
change (:mod:`~onlinesparse.stream.memory`), the model fitted to the stretch that just ended
would be thrown away and, if that stretch comes back, learned again from nothing.

So the outgoing model is kept, frozen (its owner's ``freeze()``: any object with
``predict(x) -> float``, O(M·d) numbers for an RBF network), with its noise level
(:class:`Concept`); its intervals are calibrated on its own errors while it is in use. A
stretch earns this only if it lasted ``LASTED`` samples without a change: shorter ones
leave models fitted to a handful of patterns. At most ``capacity`` are kept; the one that
has gone longest without outweighing the live model gives way.

A kept concept competes with the live model by the stream layer's evidence
(:mod:`~onlinesparse.stream.evidence`): from prior odds of e^``PRIOR_LOG_ODDS``, each sample
adds the log-likelihood ratio of their errors, both scored by one predictive (the live
model's calibrated deviation; a Student-t while the memory is young), and forgets a little
of the old evidence (``FORGET``). The prediction is the mixture of the live model's and the
concepts' (:mod:`~onlinesparse.stream.mixture`). A concept ``SLEEP_LOG_ODDS`` nats behind
the live model is no longer evaluated; it wakes, from the prior odds, when a change builds
up or an alarm comes — which is when a stream that returns to it shows. The live model is
not touched: it keeps learning the stream, and takes over as its evidence grows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from onlinesparse.stream.calibration import aim, calibration_step
from onlinesparse.stream.evidence import PRIOR_LOG_ODDS, accumulate, log_ratio
from onlinesparse.stream.mixture import mixture

__all__ = ["FORGET", "LASTED", "SLEEP_LOG_ODDS", "Predictor", "Concept", "ConceptMemory"]

# Samples without a change after which the model of a stretch is worth keeping; and how
# far behind the live model a concept may fall before it stops being evaluated.
LASTED = 300
SLEEP_LOG_ODDS = -10.0
# The evidence's forgetting: the log-odds weigh about the last 20 samples, so that where
# two functions alternate at random the prediction does not jump by the last few samples'
# luck, and a kept model retires once the live model has caught up with it.
FORGET = 0.95


class Predictor(Protocol):
    """A frozen model: its prediction at an input vector."""

    def predict(self, x: np.ndarray) -> float: ...


@dataclass(eq=False)  # (a concept is itself, not its values)
class Concept:
    """A model the stream has left and its standing against the live model.

    Attributes
    ----------
    predictor
        The frozen model (targets measured as the live model measures them).
    variance
        Its noise variance σ² when it was left.
    calibration
        The logarithm of its own calibration factor κ (its predictive variance is κ²σ²),
        calibrated on its own errors while it is awake.
    log_odds
        The evidence for it against the live model since it last woke.
    awake
        Whether it is evaluated.
    last_won
        The last sample at which it outweighed the live model (or was kept).
    """

    predictor: Predictor
    variance: float
    calibration: float = 0.0
    log_odds: float = PRIOR_LOG_ODDS
    awake: bool = True
    last_won: int = 0

    def predict(self, x: np.ndarray) -> float:
        return self.predictor.predict(x)

    @property
    def spread(self) -> float:
        """Its calibrated predictive variance, ``κ²σ²``."""
        return self.variance * math.exp(2.0 * self.calibration)

    def wake(self) -> None:
        """Evaluated again, from the prior odds (one already awake keeps its evidence)."""
        if not self.awake:
            self.awake = True
            self.log_odds = PRIOR_LOG_ODDS


@dataclass
class ConceptMemory:
    """The concepts kept (module docstring).

    Parameters
    ----------
    capacity
        Concepts kept at most (0: none). Each costs its frozen model's memory, and one of
        its predictions per ``learn_one`` and ``predict_one`` while it is awake.
    lasted
        Samples without a change after which the outgoing model is kept.
    coverage
        The central probability each concept's interval is calibrated to, the live
        model's (:func:`~onlinesparse.stream.calibration.aim`).
    """

    capacity: int = 3
    lasted: int = LASTED
    coverage: float = 0.95
    concepts: list[Concept] = field(default_factory=list)
    last_alarm: int = 0

    def __post_init__(self) -> None:
        self.quantile, self.miss_rate = aim(self.coverage)

    @property
    def kept(self) -> bool:
        return bool(self.concepts)

    def wake(self) -> None:
        """Every concept evaluated again (:meth:`Concept.wake`): an alarm, even one the
        memory does not cut on, is when a stream that returns to a concept shows."""
        for concept in self.concepts:
            concept.wake()

    def after_alarm(self, freeze: Callable[[], tuple[Predictor, float] | None],
                    learned: int) -> None:
        """A change was detected at sample ``learned``, before the memory is cut: keep the
        outgoing model (``freeze()`` makes its :class:`Predictor` and noise variance, None
        for an empty model) if its stretch lasted, and wake every concept."""
        lasted = learned - self.last_alarm >= self.lasted
        self.last_alarm = learned
        self.wake()
        if not (lasted and self.capacity):
            return
        frozen = freeze()
        if frozen is None:
            return
        self.concepts.append(Concept(*frozen, last_won=learned))
        if len(self.concepts) > self.capacity:
            concepts = self.concepts
            del concepts[min(range(len(concepts)), key=lambda i: concepts[i].last_won)]

    def judge(self, x: np.ndarray, target: float, error: float, variance: float,
              dof: float, building: bool, learned: int) -> None:
        """Sample ``learned``'s evidence: the awake concepts' errors at ``x`` against the
        live model's ``error``, both scored by a Student-t of scale² ``variance`` (the live
        model's calibrated predictive variance) and ``dof`` degrees of freedom.
        ``building``: a change is building, every concept wakes."""
        for concept in self.concepts:
            if building:
                concept.wake()
            if not concept.awake:
                continue
            miss = target - concept.predict(x)
            concept.calibration = calibration_step(concept.calibration, miss,
                                                   math.sqrt(concept.spread),
                                                   self.quantile, self.miss_rate)
            concept.log_odds = accumulate(concept.log_odds,
                                          log_ratio(miss, error, variance, dof),
                                          PRIOR_LOG_ODDS, FORGET)
            if concept.log_odds > 0.0:
                concept.last_won = learned
            concept.awake = concept.log_odds >= SLEEP_LOG_ODDS

    def _shares(self) -> tuple[float, list[tuple[float, Concept]]]:
        """The posterior weights, unnormalised, of the live model (log-odds 0) and of each
        awake concept, relative to the largest so that none overflows."""
        awake = [c for c in self.concepts if c.awake]
        top = max([0.0] + [c.log_odds for c in awake])
        return math.exp(-top), [(math.exp(c.log_odds - top), c) for c in awake]

    def blend(self, x: np.ndarray, mean: float, variance: float, share: float = 1.0
              ) -> tuple[float, float]:
        """The mixture of the live prediction (``mean``, ``variance``) and the awake
        concepts' at x. ``share`` is the model's share of the live prediction (the rest is
        the stream's experts', :func:`~onlinesparse.stream.baseline.model_share`): the
        concepts were judged against the model, so they take their posterior's part of its
        share, and a stream the experts predict better is not handed to an old model."""
        live, shares = self._shares()
        if not shares:
            return mean, variance
        # (each concept's posterior against the model alone, times the model's share: the
        # concepts take their part of the model's share and none of the experts')
        total = live + sum(w for w, _ in shares)
        parts = [share * w / total for w, _ in shares]
        weights = np.array([1.0 - sum(parts)] + parts)
        means = np.array([mean] + [c.predict(x) for _, c in shares])
        variances = np.array([variance] + [c.spread for _, c in shares])
        blended, spread = mixture(weights, means, variances)
        return float(blended), float(spread)

    def weight(self) -> float:
        """The concepts' share of the prediction now (0: the live model alone)."""
        live, shares = self._shares()
        weights = sum(w for w, _ in shares)
        return weights / (live + weights)
