"""Recurring concepts: the models a stream has left, kept to predict when it returns.

A robot picks up the same tools again; a plant runs the same recipes in turn; a market
goes back to a regime it has been in. When the adaptive memory of
:class:`~onlinesparse.orr.rbf.SparseRBFRegressor` cuts its window at a change
(:mod:`onlinesparse.memory`), the model fitted to the stretch that just ended is thrown
away and, if that stretch comes back, learned again from nothing: on
``FriedmanDrift(gra)``, whose first function returns at the second change, the model took
500 samples to come within 1.2× of its error before the change.

So the outgoing model is kept, frozen: its basis functions and weights, O(M·d) numbers,
and its noise level (:class:`Concept`); its intervals are calibrated on its own errors
while it is in use. A stretch earns this
only if it lasted ``LASTED`` samples without a change: shorter ones (TrumpApproval and
ChickWeights cut their memory every 40–150 samples) leave models fitted to a handful of
patterns. At most ``capacity`` are kept; the one that has gone longest without
outweighing the live model gives way.

A kept concept competes with the live model by the same prequential evidence that weighs
the live model against the running mean (``core.sample.weigh_against_mean``): from prior
odds of e^``PRIOR_LOG_ODDS``, each sample adds the log-likelihood ratio of their errors,
both scored by one predictive (the live model's calibrated deviation; a Student-t while
the window is young), bounded by ±``LOG_ODDS_LIMIT``, and forgets a little of the old
evidence (``FORGET``). The prediction is the posterior average of the live model's and
the concepts'. A concept ``SLEEP_LOG_ODDS`` nats behind
the live model (weight ≈ 5·10⁻⁵) is no longer evaluated; it wakes, from the prior odds,
when a change builds up (a change statistic past half its threshold) or an alarm comes —
which is when a stream that returns to it shows. On a stream without changes nothing is
kept and nothing is evaluated; while concepts are awake each costs O(M·d) in
``learn_one`` and in ``predict_one``.

The live model is not touched: it keeps learning the stream as before, and takes over as
its evidence grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from onlinesparse import core

__all__ = ["FORGET", "LASTED", "SLEEP_LOG_ODDS", "Concept", "ConceptMemory"]

# Samples without a change after which the model of a stretch is worth keeping; and how
# far behind the live model a concept may fall before it stops being evaluated.
LASTED = 300
SLEEP_LOG_ODDS = -10.0
# The evidence's forgetting: each sample the log-odds return by this factor toward the
# prior before the new ratio is added (dynamic model averaging, Raftery, Kárný and Ettler
# 2010, flattens the models' probabilities the same way), so that they weigh about the
# last 20 samples. Without it, on FriedmanDrift(gsg), whose functions alternate at random
# for 333 samples after a change, the prediction jumped between the kept model and the
# live one by the last few samples' luck (samples 3251–3500, around the second change:
# 3.26 without concepts, 3.60 with them unforgotten, 3.30 with FORGET); with it the kept
# model also retires once the live model has caught up with it.
FORGET = 0.95


@dataclass(eq=False)  # (arrays: a concept is itself, not its values)
class Concept:
    """A model the stream has left: its basis (``core.basis.evaluate_rows``'s arrays),
    weights, noise variance and calibration, and its standing against the live model.

    Attributes
    ----------
    kinds, centres, inv_r2, features, weights
        The frozen model: ``f(x) = h(x)ᵀw`` (targets measured from the live model's
        reference, which never changes).
    variance
        Its noise variance σ² when it was left (the estimate is held while a change
        builds up, so it is the stretch's own).
    calibration
        The logarithm of its own calibration factor κ: its predictive variance is
        ``κ²σ²``, calibrated on its own errors while it is awake, as the live model's is
        (``core.sample.calibrate``). It starts at 1: the live model's κ at the alarm has
        grown on the errors that raised it.
    log_odds
        The evidence for it against the live model since it last woke.
    awake
        Whether it is evaluated.
    last_won
        The last sample at which it outweighed the live model (or was kept).
    """

    kinds: np.ndarray
    centres: np.ndarray
    inv_r2: np.ndarray
    features: np.ndarray
    weights: np.ndarray
    variance: float
    calibration: float = 0.0
    log_odds: float = core.PRIOR_LOG_ODDS
    awake: bool = True
    last_won: int = 0

    def predict(self, x: np.ndarray) -> float:
        """``h(x)ᵀw``, O(M·d)."""
        return core.predict_mean(x, self.kinds, self.centres, self.inv_r2, self.features,
                                 self.weights)

    @property
    def spread(self) -> float:
        """Its calibrated predictive variance, ``κ²σ²``."""
        return self.variance * math.exp(2.0 * self.calibration)

    def wake(self) -> None:
        """Evaluated again, from the prior odds (a concept already awake keeps its
        evidence)."""
        if not self.awake:
            self.awake = True
            self.log_odds = core.PRIOR_LOG_ODDS


@dataclass
class ConceptMemory:
    """The concepts kept (module docstring).

    Parameters
    ----------
    capacity
        Concepts kept at most (0: none). Each costs O(M·d) memory, and O(M·d) per
        ``learn_one`` and ``predict_one`` while it is awake.
    lasted
        Samples without a change after which the outgoing model is kept.
    """

    capacity: int = 3
    lasted: int = LASTED
    concepts: list[Concept] = field(default_factory=list)
    last_alarm: int = 0

    @property
    def kept(self) -> bool:
        return bool(self.concepts)

    def after_alarm(self, basis: tuple[np.ndarray, ...], weights: np.ndarray,
                    variance: float, learned: int) -> None:
        """A change was detected at sample ``learned``, before the window is cut: keep the
        outgoing model (``basis`` arrays over its M = len(weights) columns, its noise
        ``variance``) if its stretch lasted, and wake every concept."""
        lasted = learned - self.last_alarm >= self.lasted
        self.last_alarm = learned
        for concept in self.concepts:
            concept.wake()
        m = len(weights)
        if not (lasted and m and self.capacity):
            return
        kinds, centres, inv_r2, features = (a[:m].copy() for a in basis[:4])
        self.concepts.append(Concept(kinds, centres, inv_r2, features, weights.copy(),
                                     variance, last_won=learned))
        if len(self.concepts) > self.capacity:
            concepts = self.concepts
            del concepts[min(range(len(concepts)), key=lambda i: concepts[i].last_won)]

    def judge(self, x: np.ndarray, target: float, error: float, variance: float,
              dof: float, building: bool, learned: int) -> None:
        """Sample ``learned``'s evidence: the awake concepts' errors at ``x`` against the
        live model's ``error``, both scored by a Student-t of scale² ``variance`` (the live
        model's calibrated predictive variance) and ``dof`` degrees of freedom
        (``core.evidence_ratio``). ``building``: a change is building, every concept
        wakes."""
        for concept in self.concepts:
            if building:
                concept.wake()
            if not concept.awake:
                continue
            miss = target - concept.predict(x)
            concept.calibration = core.calibration_step(concept.calibration, miss,
                                                        math.sqrt(concept.spread))
            ratio = core.evidence_ratio(miss, error, variance, dof)
            if ratio == ratio:  # (both errors overflowing the scale say nothing: NaN)
                prior = core.PRIOR_LOG_ODDS
                odds = prior + FORGET * (concept.log_odds - prior) + ratio
                concept.log_odds = min(max(odds, -core.LOG_ODDS_LIMIT),
                                       core.LOG_ODDS_LIMIT)
            if concept.log_odds > 0.0:
                concept.last_won = learned
            concept.awake = concept.log_odds >= SLEEP_LOG_ODDS

    def _shares(self) -> tuple[float, list[tuple[float, Concept]]]:
        """The posterior weights, unnormalised, of the live model (log-odds 0) and of each
        awake concept, relative to the largest so that none overflows."""
        awake = [c for c in self.concepts if c.awake]
        top = max([0.0] + [c.log_odds for c in awake])
        return math.exp(-top), [(math.exp(c.log_odds - top), c) for c in awake]

    def blend(self, x: np.ndarray, mean: float, variance: float) -> tuple[float, float]:
        """The posterior average of the live model's prediction (``mean``, ``variance``)
        and the awake concepts' at x: the mixture's mean and variance."""
        live, shares = self._shares()
        if not shares:
            return mean, variance
        pairs = [(live, mean, variance)] + [(w, c.predict(x), c.spread) for w, c in shares]
        total = sum(w for w, _, _ in pairs)
        blended = sum(w * m for w, m, _ in pairs) / total
        # (Σ wᵢ(vᵢ + (μᵢ − μ)²): the mixture's variance, without cancellation)
        spread = sum(w * (v + (m - blended) ** 2) for w, m, v in pairs) / total
        return blended, spread

    def weight(self) -> float:
        """The concepts' share of the prediction now (0: the live model alone)."""
        live, shares = self._shares()
        weights = sum(w for w, _ in shares)
        return weights / (live + weights)
