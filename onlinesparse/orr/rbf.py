"""The streaming sparse RBF regressor: Orr's incremental ridge with a GCV-driven basis set."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from typing import NamedTuple

import numpy as np
import pandas as pd
from river import base, proba

from onlinesparse import core
from onlinesparse._blas import single_blas_thread
from onlinesparse._distributions import gaussian
from onlinesparse._jit import entry_point
from onlinesparse._validation import (
    Versioned,
    check_choice,
    check_int,
    check_radii,
    check_real,
)
from onlinesparse.core.state import SAMPLE, Field, RecordOwner, new_record
from onlinesparse.features import FeatureMap, as_rows, as_target
from onlinesparse.orr import sample as fused
from onlinesparse.orr.buffer import BufferManager
from onlinesparse.orr.input_metric import InputMetric, prediction_moves
from onlinesparse.orr.kernels import KERNELS, BasisSpec, FrozenBasis
from onlinesparse.orr.pruner import GCVPruner
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge
from onlinesparse.stream import AdaptiveMemory, ConceptMemory, StreamLayer
from onlinesparse.stream.concepts import LASTED

__all__ = ["SparseRBFRegressor"]


class _Compiled(NamedTuple):
    """A model's compiled-call bundle and the entry points of its three compiled calls."""

    bundle: fused.SampleState
    sample: Callable
    carry_on: Callable
    predict: Callable
    reads: tuple  # (what orr.sample.prediction reads of the bundle)

    @classmethod
    def of(cls, bundle: fused.SampleState, n_features: int,
           before: _Compiled | None = None) -> _Compiled:
        """The entry points for ``bundle``: those of the bundle ``before`` it (a rebuilt
        bundle has arrays of the same dtypes, dimensions and layout, so the same machine
        code: tests/test_rbf.py holds the bundle's numba type fixed over a stream), else
        resolved now (a few hundred µs, once per model)."""
        reads = (bundle.record, bundle.window, bundle.ring.targets, bundle.stream,
                 bundle.tracked, bundle.state)
        if before is not None:
            return before._replace(bundle=bundle, reads=reads)
        x = np.zeros(n_features)  # (the types of the calls' arguments)
        return cls(bundle,
                   entry_point(fused.stream_sample, x, np.zeros(1), x, 1, 1, 0, bundle),
                   entry_point(fused.continue_sample, bundle, x, 1, 0),
                   entry_point(fused.prediction, x, *reads, 0.0), reads)

# Default radii, as multiples of √d: on standardised inputs the typical distance between
# two points is √(2d), so these span "local" to "broad" kernels whatever the dimension.
_AUTO_RADII = (0.5, 1.0, 2.0)
# The window's statistics are recomputed from the stored rows a column at a time, every
# column once per this many windows (IncrementalRidge.refresh_every). Each recomputed
# column is an O(W·n) product, as heavy as a new candidate's; once per window they made one
# sample in seven heavy at M = 100. The rounding they clear grows by about ε·(max h²/mean
# h²) per window per entry (1e-14 relative after ten), and the statistics' own account
# still calls for a full refresh if a subtraction ever cancels badly.
_REFRESH_WINDOWS = 10
# A model below its budget runs more of the pruner's O(M²) evaluations per sample, as many
# as cost what the budgeted ones cost at M = max_basis, but at most this many times as
# many (each has a fixed cost too): growth is where a stream's model is worst.
_GROWTH_EVALUATIONS = 4
# learn_many refines to convergence in at most this many rounds of the pruner (each visits
# every basis function and candidate about twice).
_BATCH_ROUNDS = 50


class SparseRBFRegressor(Versioned, RecordOwner, base.Regressor):
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
        recomputation on a sample that detects a change.
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

    Attributes
    ----------
    model
        The :class:`~onlinesparse.orr.ridge.IncrementalRidge` (``None`` before the first sample);
        it fits the targets minus the first target learned.

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

    def __init__(self, max_basis: int = 100, window_size: int = 1000, memory: str = "adaptive",
                 kernel: str = "gaussian",
                 radii: tuple[float, ...] | None = None, n_candidates: int = 10,
                 evaluations_per_sample: int = 1, candidate_every: int = 3,
                 linear: bool = True, novelty: float = 0.25, error_threshold: float = 2.0,
                 noise_every: int = 1, strict: bool = False, metric: str = "gradient",
                 concepts: int = 3, coverage: float = 0.95, last_target: bool = True):
        self.max_basis = max_basis
        self.window_size = window_size
        self.memory = memory
        self.kernel = kernel
        self.radii = radii
        self.n_candidates = n_candidates
        self.evaluations_per_sample = evaluations_per_sample
        self.candidate_every = candidate_every
        self.linear = linear
        self.novelty = novelty
        self.error_threshold = error_threshold
        self.noise_every = noise_every
        self.strict = strict
        self.metric = metric
        self.concepts = concepts
        self.coverage = coverage
        self.last_target = last_target
        self._validate_parameters()
        self._model: IncrementalRidge | None = None
        self._features = FeatureMap(strict=strict)
        self._buffer: BufferManager | None = None
        # The constant is the intercept, unpenalised: the model's choices do not depend on
        # the origin of the target's unit (core.selection.intercept_move).
        self._pruner = GCVPruner(max_basis=max_basis, free_intercept=True)
        self.record = self._new_record()
        self._stream = StreamLayer(coverage, last_target)
        self._spares = None

    def _validate_parameters(self) -> None:
        check_int("max_basis", self.max_basis)
        check_int("window_size", self.window_size, 2)
        check_int("n_candidates", self.n_candidates)
        check_int("evaluations_per_sample", self.evaluations_per_sample, 0)
        check_int("candidate_every", self.candidate_every)
        check_int("noise_every", self.noise_every)
        check_int("concepts", self.concepts, 0)
        check_choice("memory", self.memory, ("adaptive", "window"))
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("metric", self.metric, ("gradient", "isotropic"))
        check_radii("radii", self.radii)
        check_real("novelty", self.novelty, 0.0)
        check_real("error_threshold", self.error_threshold, 0.0)
        check_real("coverage", self.coverage, 0.0, 1.0, low_open=True, high_open=True)

    @classmethod
    def _unit_test_params(cls) -> Iterable[dict]:
        yield {}

    # The estimator's scalars live in `record` (core.state.SAMPLE), where the compiled
    # sample reads and advances them, with what a call reports (the error before learning,
    # the verdict on the input as a centre).
    _noise_variance = Field()
    _n_learned = Field()
    _propose = Field()
    _error = Field()
    _error_square = Field()

    @property
    def model(self) -> IncrementalRidge | None:
        return self._model

    @model.setter
    def model(self, value: IncrementalRidge | None) -> None:
        self._model = value

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)  # (Versioned: refuses another version's pickle)
        self._spares = None

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        for name in ("_spares", "_row_scratch", "_cached_bundle", "_target_scratch"):  # (anew)
            state.pop(name, None)
        return state

    def _new_record(self) -> np.ndarray:
        record = new_record(SAMPLE)
        record[0]["noise_every"] = self.noise_every
        record[0]["error_threshold"] = self.error_threshold
        return record

    # -- learning -------------------------------------------------------------------------
    def _start(self, n_features: int) -> None:
        radii = self.radii or tuple(r * math.sqrt(max(n_features, 1)) for r in _AUTO_RADII)
        self.model = IncrementalRidge(n_features, memory="window", size=self.window_size,
                                      refresh_every=_REFRESH_WINDOWS * self.window_size,
                                      defer_refreshes=True)
        self._buffer = BufferManager(radii=tuple(radii), kernel=self.kernel,
                                     capacity=self.n_candidates + 1 + n_features,
                                     novelty=self.novelty,
                                     error_threshold=self.error_threshold,
                                     column_every=self.candidate_every)
        self.record[0]["novelty_sq"] = self._buffer.novelty_threshold
        # Everything the model can hold is known now: allocating it before the first
        # pattern keeps array growth (a copy of the stored window) out of the stream.
        self.model.window.reserve(self.max_basis + self._buffer.capacity + 2)
        specs = [BasisSpec.constant()]
        if self.linear:
            specs += [BasisSpec.linear(i) for i in range(n_features)]
        ids = [self.model.add_candidate(spec) for spec in specs]
        self._buffer.protected.update(ids)
        self._constant_id = ids[0]
        self._inputs = InputMetric(n_features, self.metric)
        self._adaptive = AdaptiveMemory(self.window_size)
        self._concepts = self._stream.concept_memory(self.concepts,
                                                     min(LASTED, self.window_size))
        self.n_memory_cuts = 0  # (memory="adaptive": StreamLayer.after_learning)

    def _noise_level(self) -> float:
        """The noise variance in use (``core.noise_level``): the last estimate, or the
        target's variance before the first one; 1 before any pattern."""
        if self._model is None or not self._model.n_patterns:
            return 1.0
        window = self._model.window
        return fused.noise_level(self.record, window.record, window.targets)

    @property
    def _lambda_min(self) -> float:
        window = self._model.window
        return core.lambda_min(self._noise_level(), window.count,
                               core.target_variance(window.record, window.targets.moments, 0))

    @single_blas_thread
    def learn_one(self, x: dict, y: float) -> None:
        features = self._features
        vector = features.transform_known(x)
        known = vector is not None
        if not known:
            vector = features.transform(x, learning=True)
        target = as_target(y)
        if self._model is None:
            self._target_reference = target
            self._start(len(vector))
        target -= self._target_reference
        model, pruner = self._model, self._pruner
        # Bounded work per sample: a refresh of S that an earlier sample called for
        # (IncrementalRidge.defer_refreshes) runs at the start of the first sample that is
        # not due for a candidate column, so that the two heavy pieces do not meet (with
        # candidate_every=1 every sample is due: it runs at once); at the budget, a sample
        # whose pruner added or traded a basis function computes no new column. The
        # refresh sample then selects as any other: when a refresh is called for is
        # decided by rounding (the accounts and the drift probe measure it), so it must
        # not decide what the model does (docs/numerics.md §10).
        if self.candidate_every == 1 or not self._buffer.column_due():
            model.maintain()
        size = model.size
        evaluations, first = self._schedule(size)
        added = pruner.n_added if size >= self.max_basis else -1  # (-1: not at the budget)
        fast = known and features.is_fitted
        means = features.means if fast else np.empty(len(vector))
        compiled = self._compiled()
        self._target_buffer[0] = target
        status = compiled.sample(vector, self._target_buffer, means, features.n_committed + 1,
                                 evaluations, first, compiled.bundle)
        if status == core.SLIDE_REFUSED:  # the add-first order, by the model's operations
            row = self._row_buffer()[: model.window.n_columns].copy()
            try:
                model.add_pattern(vector, target, row=row)
            except IllConditionedError:  # not even that: re-solve without the oldest
                model.rebuild_without_oldest(vector, target, row)
            self._n_learned += 1
            status = fused.MOVE  # (nothing to carry out: the pruner's evaluations follow)
            pruner.record[0]["done"] = 0
            pruner.record[0]["stop"] = core.pruning.FINISHED
        if fast:
            features.n_committed += 1
        else:
            features.commit(vector, x, known)
        while status != fused.QUIET:
            evaluations, first = self._carry_on(status, evaluations, first)
            compiled = self._compiled()
            status = compiled.carry_on(compiled.bundle, vector, evaluations, first)
        if pruner.resized:
            self._adopt_resized()
        elif not size:
            self._start_with_the_mean()
        busy = added >= 0 and pruner.n_added != added
        if self._concepts is not None and self._concepts.kept:
            self._stream.judge_concepts(self._concepts, vector, target, self._error,
                                        self._noise_level(), self._model.window.count,
                                        self._n_learned)
        self._consider(vector, busy)
        memory = self._adaptive if self.memory == "adaptive" else None
        if self._stream.after_learning(memory, self._concepts, self._model, self._freeze,
                                       self._n_learned):
            self.n_memory_cuts += 1

    def _freeze(self) -> tuple[FrozenBasis, float] | None:
        """The model as it stands, frozen (its basis functions and weights), and its noise
        variance; None while it has no basis function."""
        model = self._model
        frozen = FrozenBasis.of(model.window.basis, model.weights)
        return None if frozen is None else (frozen, self._noise_level())

    def _start_with_the_mean(self) -> None:
        """Cold start: a model without basis functions takes the constant at λ = 0 as soon
        as it has a pattern, so that its predictions start at the mean of the targets (not
        at 0) and GCV builds on that. It stays at λ = 0: the pruner treats it as the
        intercept (``core.selection.intercept_move``)."""
        model = self._model
        window = model.window
        try:
            position = window.position_of(getattr(self, "_constant_id", -1))
        except ValueError:  # (not in the pool: nothing to add)
            return
        if position >= window.n_model and window.count:
            try:
                model.add_basis(self._constant_id, 0.0)
            except IllConditionedError:
                return

    def _carry_on(self, status: int, evaluations: int, first: int) -> tuple[int, int]:
        """Do what a compiled call stopped for — a refresh of S now, or a move the pruner
        handed back — and return the evaluations left and their order."""
        self._adopt_resized()
        if status == core.REFRESH and self._pruner.record[0]["stop"] != core.pruning.REFRESH:
            self._model.maintain()  # (the pattern's verdict: no evaluation ran yet)
            return evaluations, first
        ran = self._pruner.finish(self._model, None)
        self._overfilled = True
        return evaluations - ran, core.continued_order(first, ran - 1)

    # Whether the basis set changed since the buffer last looked: a deleted constant or
    # linear function returns to the pool, which may then hold more than its capacity.
    _overfilled = False
    # The concepts the stream has left (onlinesparse.stream.concepts); None before the first
    # sample, and for a model built from a batch fit.
    _concepts: ConceptMemory | None = None
    # The first target learned: every target enters the window as its difference from it
    # and every prediction adds it back, which makes the model equivariant to a shift of
    # the target (docs/numerics.md §8).
    _target_reference = 0.0
    # The compiled calls' bundle, kept while the arrays stay (see _bundle).
    _cached_bundle = None

    @property
    def _target_buffer(self) -> np.ndarray:
        """The target as the compiled sample takes it (a vector of one), reused."""
        buffer = self.__dict__.get("_target_scratch")
        if buffer is None:
            buffer = self.__dict__["_target_scratch"] = np.zeros(1)
        return buffer

    def _adopt_resized(self) -> None:
        """Take the state a compiled call resized into the spare arrays."""
        if self._pruner.resized:
            self._pruner.adopt(self._model, self._spares)
            self._spares = None
            self._overfilled = True

    def _compiled(self) -> _Compiled:
        """The bundle and the entry points of the three compiled calls for it
        (``_jit.entry_point``: numba's dispatch on a bundle of 35 arrays would cost more than
        half a sample). Kept between samples while none of the bundle's arrays is replaced
        (a resize, a refresh, a grown window)."""
        model = self._model
        window, state = model.window, model.state
        cached = self._cached_bundle
        # (the protected ids are fixed once the first sample has made the pool)
        if (cached is not None and cached[0] == window.layout and cached[1] is state.variance
                and cached[2] is state.weights and cached[3] is self._spares):
            return cached[4]
        compiled = _Compiled.of(self._new_bundle(), model.n_features,
                                None if cached is None else cached[4])
        self._cached_bundle = (window.layout, state.variance, state.weights, self._spares,
                               compiled)
        return compiled

    def _new_bundle(self) -> fused.SampleState:
        model = self._model
        window, state = model.window, model.state
        pruner = self._pruner
        t = window.tracked()
        bundle = fused.SampleState(
            self.record, self._stream.bundle, fused.Inputs(*self._inputs.tracked),
            pruner.record, model.record, window.record, self._row_buffer(), t,
            fused.Ring(*window.ring()), core.Ridge(*state.arrays()),
            core.Ridge(*self._spare_arrays()), self._buffer.protected_ids(), pruner.move)
        return bundle

    def _row_buffer(self) -> np.ndarray:
        row = getattr(self, "_row_scratch", None)
        capacity = self._model.window.gram_buffer.shape[0]
        if row is None or row.shape[0] < capacity:
            row = self._row_scratch = np.empty(capacity)
        return row

    def _spare_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arrays for the first addition or deletion of a compiled call to write the
        resized state into (returning new arrays from every call cost more)."""
        if getattr(self, "_spares", None) is None:
            size = max(self.max_basis, self._model.size) + 1
            self._spares = (np.empty(size * size), np.empty((size, 1)), np.empty(size))
        return self._spares

    def _consider(self, vector: np.ndarray, busy: bool) -> None:
        """The buffer manager's share of the sample, the compiled call having judged the
        input (``record.propose``): queue it as a centre, and on a sample due for one
        compute a new candidate column (or trim a pool that :meth:`refine` overfilled)."""
        buffer = self._buffer
        proposal = bool(self._propose)
        column = not busy
        if ((column and buffer.column_due() and (proposal or buffer.queue))
                or (self._overfilled
                    and self._model.window.n_candidates > buffer.capacity)):
            # (with the verdict given, consider reads no noise level: 0.0)
            buffer.consider(self._model.window, vector, self._error, 0.0,
                            column=column, proposal=proposal,
                            metric=self._proposal_metric() if proposal else None)
            self._overfilled = False  # (consider trims the pool first)
            return
        if proposal:
            buffer.propose(vector, self._proposal_metric())
        buffer.n_considered += 1

    def _proposal_metric(self) -> np.ndarray | None:
        """The inputs' weights for a kernel proposed now (:class:`InputMetric`)."""
        return self._inputs.for_proposal(self._n_learned, self._model.window.count,
                                         self._error_square)

    def _schedule(self, size: int) -> tuple[int, int]:
        """The pruner's evaluations for this sample and their order (``core.TURN_ORDER``,
        ``CANDIDATE_FIRST`` or ``BASIS_FIRST``).

        ``evaluations_per_sample`` at the full budget, and while the model is smaller as
        many more as fit the same work (an evaluation is O(M²)), at most
        ``_GROWTH_EVALUATIONS`` times as many. Around the candidate columns (one sample in
        ``candidate_every``, O(W·n) each) the work is arranged so that most samples stay
        light and none carries two heavy pieces: with proposals waiting, the sample that
        computes the column starts with a basis function's re-estimation (a move that
        never stops it from computing its column, unlike a trade), the others start with a
        candidate move, and with ``candidate_every`` ≥ 3 the sample after the column's
        runs one evaluation fewer — at one evaluation per sample and the default 3, one
        re-estimation and one candidate move in every three samples. With a column on
        every sample (``candidate_every=1``) the evaluations alternate by the pruner's
        turn counter.
        """
        evaluations = self.evaluations_per_sample
        if size < self.max_basis:
            scale = (self.max_basis / max(size, 1)) ** 2
            evaluations = int(evaluations * min(scale, _GROWTH_EVALUATIONS))
        buffer = self._buffer
        every = buffer.column_every
        if not buffer.queue or every == 1:
            return evaluations, core.TURN_ORDER
        if buffer.column_due():
            return evaluations, core.BASIS_FIRST
        if every >= 3 and buffer.n_considered % every == 0:  # the sample after a column's
            return max(evaluations - 1, 0), core.CANDIDATE_FIRST
        return evaluations, core.CANDIDATE_FIRST

    def _update_noise(self) -> None:
        model = self.model
        self._noise_variance = core.noise_estimate(model.training_error,
                                                   model.effective_parameters,
                                                   model.n_patterns, self._noise_variance)

    @single_blas_thread
    def refine(self, max_evaluations: int) -> int:
        """Spend up to ``max_evaluations`` GCV evaluations on model selection now.

        For control loops with slack between ticks. Returns the number done.
        """
        if self.model is None or max_evaluations <= 0:
            return 0
        self.model.maintain()  # idle time is the best time for a deferred refresh
        self._overfilled = True
        return self._pruner.step(self.model, max_evaluations, self._lambda_min,
                                 self._buffer.protected)

    def learn_many(self, X: pd.DataFrame | Iterable[dict], y: Iterable[float]) -> None:
        """Add many patterns, then bring the model to its batch optimum on its window.

        The meaning of ``learn_many`` in every estimator of the package: every row is
        validated first (a bad one refuses the batch with nothing changed), the rows are
        learned in order (as many ``learn_one`` calls), and the model is then refined to
        convergence on its memory — here the pruner's evaluations (:meth:`refine`) repeat
        until a round of them changes no basis function and no λ, at most
        ``_BATCH_ROUNDS`` rounds. (Not river's mini-batch ``learn_many``, which equals
        repeated ``learn_one``: that is a loop of :meth:`learn_one`.)
        """
        rows = as_rows(X)
        targets = [as_target(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]
        if len(rows) != len(targets):
            raise ValueError(f"{len(rows)} rows of features but {len(targets)} targets")
        self._features.rehearse(rows)  # (validates every row on a copy)
        for row, target in zip(rows, targets, strict=True):
            self.learn_one(row, target)
        if self._model is None:
            return
        pruner = self._pruner
        for _ in range(_BATCH_ROUNDS):
            before = (pruner.n_added, pruner.n_deleted, pruner.n_reestimated)
            self.refine(2 * (self._model.size + self._model.window.n_candidates) + 2)
            if (pruner.n_added, pruner.n_deleted, pruner.n_reestimated) == before:
                break

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
                model._start(len(vector))
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

    # -- prediction -----------------------------------------------------------------------
    def predict_one(self, x: dict, with_dist: bool = False) -> float | proba.Gaussian:
        vector = self._features.transform(x)
        model = self._model
        if model is None or not model.size:
            return self._predict_without_model(vector, with_dist)
        novelty = self._novelty_variance(vector, self._noise_level()) if with_dist else 0.0
        # The model's prediction, returned toward the targets' mean where it knows little,
        # then calibration, the errors' level and the running mean (orr.sample.prediction).
        compiled = self._compiled()
        mean, variance = compiled.predict(vector, *compiled.reads, novelty)
        if self._concepts is not None and self._concepts.kept:
            mean, variance = self._concepts.blend(vector, mean, variance,
                                                   self._stream.model_weight)
        mean += self._target_reference
        return gaussian(mean, variance) if with_dist else mean

    def _trust_the_model(self) -> None:
        """A model that did not earn its weight sample by sample (built from a batch fit)
        predicts with its own fit alone."""
        self._stream.trust_the_model()

    def _novelty_variance(self, vector: np.ndarray, noise: float) -> float:
        """What the basis set cannot know at x: the posterior variance of the weight of a
        new basis function of the model's kernel at x (height 1, the middle proposed radius),
        given the data near it and a prior variance of s², the target's variance in
        memory — ``1 / (1/s² + Σᵢ φ(xᵢ)²/σ²)`` (the augmentation of Rasmussen and
        Quiñonero-Candela 2005, taken conditionally on the other weights). Far from every
        stored input it is s² (anything in the target's range); where the window is dense
        it is σ² divided by the data near x, a few per cent of σ² on Friedman #1. O(W·d),
        paid by ``with_dist=True`` only; ``noise`` is σ², the noise variance in use."""
        model = self._model
        if model is None or not model.n_patterns:
            return 0.0
        window = model.window
        prior = core.target_variance(window.record, window.targets.moments, 0)
        if not (prior > 0.0 and noise > 0.0):
            return 0.0
        near = window.support(vector, self._buffer.reference_radius, KERNELS[self.kernel])
        return 1.0 / (1.0 / prior + near / noise)

    def _predict_without_model(self, vector: np.ndarray, with_dist: bool
                               ) -> float | proba.Gaussian:
        """A model without basis functions predicts what the stream layer's experts do (the
        running mean and the last target, by their evidence), else the mean of the targets
        in memory (0 before any)."""
        window = None if self._model is None else self._model.window
        if window is None or not window.count:
            mean = 0.0
        else:
            mean = window.sum_y / window.count
        noise = self._noise_level()
        variance = noise + self._novelty_variance(vector, noise) if with_dist else noise
        mean, variance = self._stream.predict_without_model(mean, variance)
        mean += self._target_reference
        return gaussian(mean, variance) if with_dist else mean

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        return pd.Series([self.predict_one(row.to_dict()) for _, row in X.iterrows()],
                         index=X.index, dtype=float)

    # -- diagnostics ----------------------------------------------------------------------
    @property
    def target_reference(self) -> float:
        """The first target learned (0 before any, and for :meth:`from_batch`):
        :attr:`model` fits the targets minus it; every prediction adds it back."""
        return self._target_reference

    @property
    def n_basis(self) -> int:
        return 0 if self.model is None else self.model.size

    def basis_functions(self) -> list[dict]:
        """Every basis function of the model: kind, centre, radius, metric (the inputs'
        weights, averaging 1; () when isotropic), λ and weight."""
        if self.model is None:
            return []
        out = []
        for j in range(self.model.size):
            spec = self.model.window.basis.spec(j)
            out.append({"kind": spec.kind, "centre": spec.centre, "radius": spec.radius,
                        "metric": spec.metric,
                        "feature": (self._features.names[spec.feature]
                                    if spec.kind == "linear" else None),
                        "lambda": float(self.model.lambdas[j]),
                        "weight": float(self.model.weights[j])})
        return out

    def diagnostics(self) -> dict[str, float]:
        """Numbers a user can read at any time (all O(M) or less)."""
        if self.model is None:
            return {"n_basis": 0.0, "noise_std": math.sqrt(self._noise_level())}
        model = self.model
        return {
            "n_basis": float(model.size),
            "n_candidates": float(model.window.n_candidates),
            "effective_parameters": model.effective_parameters,
            "gcv": model.gcv,
            "noise_std": math.sqrt(self._noise_level()),
            # (κ, the errors' level added to predictions and κ_o: onlinesparse.stream)
            **{k: v for k, v in self._stream.summary().items() if k != "model_weight"},
            "n_patterns": model.n_patterns,
            "n_refreshes": float(model.n_refreshes),
            "n_added": float(self._pruner.n_added),
            "n_deleted": float(self._pruner.n_deleted),
            "memory": float(model.window.n_stored),
            "memory_cuts": float(getattr(self, "n_memory_cuts", 0)),
            # (onlinesparse.stream.concepts: how many are kept, and their share of predictions)
            "concepts": float(len(self._concepts.concepts) if self._concepts else 0),
            "concept_weight": self._concepts.weight() if self._concepts else 0.0,
        }

    def loo(self) -> float:
        """Leave-one-out error over the window (Orr 5.1), O(WM²): on demand only."""
        return math.nan if self.model is None else self.model.loo()

    def input_relevance(self) -> dict[Hashable, float]:
        """How much the prediction moves with each input over the window
        (:func:`~onlinesparse.orr.input_metric.prediction_moves`), O(d·W·M), on demand only."""
        if self.model is None or not self.model.size:
            return {name: 0.0 for name in self._features.names}
        window = self.model.window
        moves = prediction_moves(window.basis, self.model.weights, window.stored_inputs())
        return dict(zip(self._features.names, moves.tolist(), strict=True))
