"""The streaming sparse RBF regressor: Orr's incremental ridge with a GCV-driven basis set."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
from river import base, proba

from onlinesparse._distributions import gaussian
from onlinesparse.features import as_rows, as_target
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.streaming import StreamingRBF

__all__ = ["SparseRBFRegressor"]


class SparseRBFRegressor(StreamingRBF, base.Regressor):
    """Sparse radial-basis-function regression learned one sample at a time.

    Every ``learn_one`` adds the sample to a sliding window of the last ``window_size``
    patterns and updates the weights exactly by Orr's incremental operations (add the
    pattern, remove the oldest: Orr eqs. (A.8) and (A.11), O(M²)). Between samples, a bounded
    amount of model selection runs (:class:`~onlinesparse.orr.pruner.GCVPruner`): each basis
    function's regularisation λⱼ is re-estimated to its GCV optimum in closed form (Orr's
    local ridge, A.11), a basis function whose optimum is λⱼ = ∞ is deleted, and
    candidate kernels proposed by the :class:`~onlinesparse.orr.buffer.BufferManager` are added
    when their GCV-optimal λ lowers GCV (the fast GCV algorithm of Sundararajan, Shevade and
    Keerthi). A constant and one linear function per input start in the candidate pool and
    are subject to the same decisions.

    The work per ``learn_one`` is bounded by the parameters — ``max_basis``,
    ``n_candidates``, ``window_size`` and ``evaluations_per_sample`` — and does not grow with
    the length of the stream; :meth:`refine` spends extra idle time the same way. A
    sample does at most one heavy piece of work, so that the worst case is the largest
    of them rather than their sum: a refresh of the variance matrix that rounding calls
    for (O(M³)) is deferred to the start of the next sample that computes no candidate
    column, and that sample then selects as any other (rounding decides when a refresh
    comes, so it must not decide what the model does); at the budget, a sample that adds
    or trades a basis function computes no new column.

    A sample is one compiled call (``orr.sample.stream_sample``: the pattern, the accounts, the
    pruner's evaluations and their common moves, the buffer manager's test of the input),
    made of the same compiled operations :class:`~onlinesparse.orr.ridge.IncrementalRidge` and
    :class:`~onlinesparse.orr.pruner.GCVPruner` use; what it cannot do (a refresh of S, a move
    that needs the stored rows) it hands back by a status, and the model's own operations
    do it before the sample continues (``orr.sample.continue_sample``). ``docs/architecture.md``
    follows a sample through the layers.

    Kernel width: candidates are proposed at several radii (``radii``, by default
    ``(0.5, 1, 2)·√d`` for d inputs, which suits standardised inputs) and compete in the
    same pool, so GCV selects the widths. Each proposal queues every radius, and with one
    column in ``candidate_every`` samples the short queue decides which is computed: where
    nearly every input is proposed (Friedman #1) that is always the middle radius, elsewhere
    mostly (``docs/rbf_on_streams.md``, kernel widths).

    Early samples: a model without basis functions predicts the mean of the targets seen,
    and the constant joins at λ = 0 with the first pattern, so predictions start at the
    mean rather than at 0; GCV on a handful of patterns is easily fooled, so the model
    holds at most half as many basis functions as it has patterns, and its predictions
    are averaged with the running mean's by the prequential evidence for each
    (``stream.baseline.weigh_against_mean``): the model takes over as it proves the better. Inputs
    far outside what a young scaler has seen can still be extrapolated far by the linear
    basis functions while the model's weight is high; predictions are not clipped, but
    ``with_dist=True`` widens the interval there (see below).

    Units, memory and intervals (``docs/rbf_on_streams.md``): the model is equivariant to
    the unit of its target and to a shift of it (targets enter as differences from the
    first one); ``memory="adaptive"`` forgets the patterns before a change of
    the stream; errors that wander together from sample to sample (a stream in time
    order) are followed by a level added to the predictions (``stream.level``), which fades
    to 0 where they do not; the predictive deviation of ``predict_one(x, with_dist=True)``
    is calibrated online to 95 % coverage.

    Parameters
    ----------
    max_basis
        Maximum number of basis functions in the model. When it is reached a candidate
        enters only if removing the least useful basis function and adding it lowers GCV.
    window_size
        The most patterns the model is fitted to: the sliding window's length, and with
        adaptive memory its upper bound. A bounded window keeps the cost per sample and the
        memory constant; a shorter one follows drift faster but fits less.
    memory
        ``"adaptive"`` (the default) forgets the patterns before a change of the stream
        that the prequential errors show (CUSUM on their mean and scale, see
        ``docs/rbf_on_streams.md``); ``"window"`` keeps a fixed sliding window of
        ``window_size``. Adaptive memory follows drift, at the cost of an O(W·n² + M³)
        recomputation on a sample that detects a change. Where the inputs come in a
        trajectory (``horizon`` below) the memory is first cut once it spans its horizon,
        and again once it spans it anew: until then its errors grow wherever the trajectory
        goes where it has no data, which a cut would only make worse.
    kernel
        ``"gaussian"``, ``"multiquadric"``, ``"inverse_multiquadric"`` or ``"cauchy"``.
    radii
        Kernel radii proposed for each new centre; ``None`` for ``(0.5, 1, 2)·√d``.
    n_candidates
        Size of the candidate pool, besides the constant and linear basis functions that
        the pruner sent back to it (those stay, so that GCV can take them back). Every
        tracked column costs O(n) in each sample's update of the window statistics; a
        larger pool rarely helps accuracy (docs/performance.md).
    evaluations_per_sample
        GCV evaluations per ``learn_one`` (each O(M²)) at the full budget M = max_basis:
        the pruner's work per sample. A smaller model runs as many more as cost the same
        (``(max_basis/M)²`` times as many, at most four times as many); around the
        candidate columns they are arranged so that most samples stay light
        (:meth:`_schedule`). More evaluations select the model faster at a higher cost per
        sample; :meth:`refine` adds evaluations when a loop has slack.
    candidate_every
        A new candidate centre's column (O(W·(M + C)), the largest single piece of
        per-sample work) is computed on one ``learn_one`` in this many; proposals made in
        between wait in a short queue that keeps the most recent few. A smaller value
        grows the basis set faster (it helps a small budget) at the price of more heavy
        samples; the default 3 keeps two samples in three free of a column.
    linear
        Offer one linear basis function per input (beside the constant).
    novelty
        An input is proposed as a centre when its squared distance to every centre exceeds
        ``novelty`` times the squared middle radius...
    error_threshold
        ...or when its prediction error exceeds this many predictive standard deviations.
    noise_every
        Re-estimate the noise variance (FGCV eq. 8, an O(M²) pass) every this many
        samples; it sets the floor ``λ_min = σ²/p`` (FGCV's α_min = 1/N) and the
        predictive distribution. Every sample by default: an estimate that waits keeps
        the noise of a memory that has just been cut, or of the hours before a sensor
        stuck, and its intervals are too narrow meanwhile (``docs/rbf_on_streams.md``).
    strict
        Raise on missing or unseen features instead of imputing / ignoring them (see
        :mod:`onlinesparse.features`).
    metric
        ``"gradient"``: a new kernel weighs each input by how steeply the model varies
        along it and by the structure its errors still show along it
        (:mod:`onlinesparse.core.relevance`), so that inputs the target ignores cost
        neither width nor novelty, and an input the model has not learned yet is not
        locked out (Friedman #1: RMSE −20 to −25 %; O(M·d) per sample);
        ``"isotropic"``: every input weighs the same.
    concepts
        With adaptive memory, how many of the models a change ended (after at least 300
        samples without one) are kept, frozen, to predict again if their stretch of the
        stream returns (:mod:`onlinesparse.stream.concepts`); 0 keeps none. Each costs
        O(M·d) memory, and O(M·d) per call while it is on trial (after a change) or in use.
    coverage
        The central probability of the interval ``predict_one(x, with_dist=True)`` is
        calibrated to (:mod:`onlinesparse.stream.calibration`): 0.95 makes mean ± 1.96σ a
        95 % interval. A higher coverage widens the intervals.
    last_target
        Whether the last target joins the running mean as an expert beside the model
        (:mod:`onlinesparse.stream.baseline`). True (default) suits a stream predicted one
        sample ahead — replay, progressive validation, a recording in time order — where a
        slowly moving target is often best predicted by its last value. Pass False when the
        model is queried at inputs of your choosing and its output comes back as the
        target, as a controller's feedforward at the desired state does: there the last
        applied torque would feed the loop's own output back (a 7-joint Panda loop tracked
        at 0.27 rad with it, 0.10 without).
    horizon
        How far back, in samples, a full window may reach (by default 20 windows). Once the
        window is full its ``window_size`` patterns are one sample in a stride measured on
        the stream: 1 where consecutive inputs are as unlike as any two (the last
        ``window_size`` samples, as a plain sliding window), up to ``horizon /
        window_size`` where they are nearly the same — a control loop at 1 kHz, a
        trajectory at 100 Hz — so that the window keeps the whole trajectory rather than
        its last second (``stream.memory.Horizon``; a 7-joint Panda loop tracked at 0.0017
        rad with it, 0.13 with the last 1000 samples). A longer horizon remembers more of
        a trajectory and forgets a slow drift later; ``horizon=window_size`` turns it off.
        A skipped sample costs its prediction, the stream layer's step and the pruner's
        evaluations, not the pattern's update.

    Attributes
    ----------
    model
        The :class:`~onlinesparse.orr.ridge.IncrementalRidge` (``None`` before the first sample);
        it fits the targets minus the first target learned.
    n_memory_cuts
        How many times the adaptive memory has cut the window after a change of the stream
        (``memory="adaptive"``; also ``diagnostics()["memory_cuts"]``). An alarm the refit
        refuses is not a cut (``docs/rbf_on_streams.md``, the adaptive memory).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinesparse import SparseRBFRegressor
    >>> model = preprocessing.StandardScaler() | SparseRBFRegressor(max_basis=30, window_size=300)
    >>> evaluate.progressive_val_score(
    ...     datasets.synth.Friedman(seed=42).take(1000), model, metrics.RMSE())
    RMSE: ...
    >>> model[-1].diagnostics()["n_basis"] > 5
    True
    """

    @classmethod
    def _unit_test_params(cls) -> Iterable[dict]:
        yield {}

    _fixed_targets = 1
    # The first target learned: every target enters the window as its difference from it
    # and every prediction adds it back, which makes the model equivariant to a shift of
    # the target (docs/numerics.md §8).
    _target_reference = 0.0

    def learn_one(self, x: dict, y: float) -> None:
        features = self._features
        vector = features.transform_known(x)
        known = vector is not None
        if not known:
            vector = features.transform(x, learning=True)
        target = as_target(y)
        if self._model is None:
            self._start(len(vector), 1)
            self._target_reference = target
        targets = self._scratch().targets
        targets[0] = target - self._target_reference
        self._learn(vector, x, known, targets)

    def learn_many(self, X: pd.DataFrame | Iterable[dict], y: Iterable[float]) -> None:
        """Add many patterns, then bring the model to its batch optimum on its window.

        The meaning of ``learn_many`` in every estimator of the package: every row is
        validated first (a bad one refuses the batch with nothing changed), the rows are
        learned in order (as many ``learn_one`` calls), and the model is then refined to
        convergence on its memory — here the pruner's evaluations (:meth:`refine`) repeat
        until a round of them changes no basis function and no λ, at most
        ``BATCH_ROUNDS`` rounds. (Not river's mini-batch ``learn_many``, which equals
        repeated ``learn_one``: that is a loop of :meth:`learn_one`.)
        """
        rows = as_rows(X)
        targets = [as_target(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]
        if len(rows) != len(targets):
            raise ValueError(f"{len(rows)} rows of features but {len(targets)} targets")
        self._features.rehearse(rows)  # (validates every row on a copy)
        for row, target in zip(rows, targets, strict=True):
            self.learn_one(row, target)
        self._refine_to_convergence()

    @classmethod
    def from_batch(cls, result, X: pd.DataFrame, y: Iterable[float], radius: float,
                   kernel: str = "gaussian", **params) -> SparseRBFRegressor:
        """A streaming model whose initial state is a batch selection (Orr 6.4's head start).

        ``result`` is a :class:`~onlinesparse.batch.SelectionResult` computed on the rows of
        ``X`` (columns in the order its centres use) with kernels of ``radius``; its chosen
        centres and λ's become the model's basis functions, the last ``window`` rows of
        ``X``, ``y`` its window, and streaming continues from there with the usual pruner.
        """
        if result.centres is None:
            raise ValueError("the selection result has no centres: pass centres to the "
                             "batch algorithm when selecting among kernels")
        model = cls(kernel=kernel, **params)
        rows = X.to_dict(orient="records")
        targets = [float(t) for t in y]
        if len(rows) != len(targets):
            raise ValueError(f"X has {len(rows)} rows but y has {len(targets)} targets")
        if not rows:
            raise ValueError("from_batch needs the data the selection was made on")
        for row, target in zip(rows, targets, strict=True):
            vector = model._features.transform(row, learning=True)
            target = as_target(target)
            if model.model is None:
                model._start(len(vector), 1)
            model.model.add_pattern(vector, target)  # (reference 0: the batch fit's y)
            model._features.commit(vector, row)
            model._n_learned += 1
        # Centres are in X's column order; the model orders inputs by name.
        order = [list(X.columns).index(name) for name in model._features.names]
        for centre, lam in zip(result.centres, result.lambdas, strict=True):
            model.model.add_basis(BasisSpec.radial(np.asarray(centre)[order], radius, kernel),
                                  float(lam))
        model._update_noise()
        model._trust_the_model()
        return model

    def predict_one(self, x: dict, with_dist: bool = False) -> float | proba.Gaussian:
        means, variances = self._predict(self._features.transform(x), with_dist)
        mean = float(means[0]) + self._target_reference
        return gaussian(mean, float(variances[0])) if with_dist else mean

    def _trust_the_model(self) -> None:
        """A model that did not earn its weight sample by sample (built from a batch fit)
        predicts with its own fit alone."""
        self._stream.trust_the_model()

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        return pd.Series([self.predict_one(row.to_dict()) for _, row in X.iterrows()],
                         index=X.index, dtype=float)

    # -- diagnostics ----------------------------------------------------------------------
    @property
    def target_reference(self) -> float:
        """The first target learned (0 before any, and for :meth:`from_batch`):
        :attr:`model` fits the targets minus it; every prediction adds it back."""
        return self._target_reference

    def basis_functions(self) -> list[dict]:
        """Every basis function of the model: kind, centre, radius, metric (the inputs'
        weights, averaging 1; () when isotropic), λ and weight."""
        if self.model is None:
            return []
        return [{**self._basis_function(j), "weight": float(self.model.weights[j])}
                for j in range(self.model.size)]

    def diagnostics(self) -> dict[str, float]:
        """Numbers a user can read at any time (all O(M) or less)."""
        if self.model is None:
            return {"n_basis": 0.0, "noise_std": math.sqrt(self._noise_level())}
        target = self._target_diagnostics(0)
        target.pop("model_weight")
        return {
            **self._shared_diagnostics(),
            **target,
            # (onlinesparse.stream.concepts: how many are kept, and their share of predictions)
            "concepts": float(len(self._concepts.concepts) if self._concepts else 0),
            "concept_weight": self._concepts.weight() if self._concepts else 0.0,
        }
