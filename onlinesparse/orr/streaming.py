"""The machinery of the Orr family's streaming regressors, for one target or several.

:class:`StreamingRBF` keeps the window, the ridge state, the buffer manager, the pruner and
the stream layer's records of a model of K targets that share one basis, one S and one G
(``core.state.Targets`` holds what is each target's: its weights' column, Σy², noise level,
weight in the criteria, error), and runs a sample in one compiled call
(:mod:`onlinesparse.orr.sample`). :class:`~onlinesparse.orr.rbf.SparseRBFRegressor` is its
single-output face (K = 1, a number per target) and
:class:`~onlinesparse.orr.multi_target.SparseRBFMultiTargetRegressor` its multi-output one
(a dict per sample): the same calls, so that one target of the second is the first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import NamedTuple

import numpy as np

from onlinesparse import core
from onlinesparse._blas import single_blas_thread
from onlinesparse._jit import entry_point
from onlinesparse._validation import (
    Versioned,
    check_choice,
    check_int,
    check_radii,
    check_real,
)
from onlinesparse.core.state import SAMPLE, Field, RecordOwner, new_record
from onlinesparse.features import FeatureMap, as_targets
from onlinesparse.orr import sample as fused
from onlinesparse.orr.buffer import BufferManager
from onlinesparse.orr.input_metric import InputMetric, prediction_moves
from onlinesparse.orr.kernels import KERNELS, BasisSpec, FrozenBasis
from onlinesparse.orr.pruner import GCVPruner
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge
from onlinesparse.orr.upkeep import Upkeep
from onlinesparse.stream import AdaptiveMemory, ConceptMemory, Horizon, StreamLayer
from onlinesparse.stream.concepts import LASTED
from onlinesparse.stream.layer import after_learning, new_streams

__all__ = ["StreamingRBF"]


class _Scratch(NamedTuple):
    """A model's reused arrays of K: a prediction's ``out`` and its rows, a sample's
    targets."""

    out: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    novelty: np.ndarray
    targets: np.ndarray


class _Compiled(NamedTuple):
    """A model's compiled-call bundle and the entry points of its three compiled calls."""

    bundle: fused.SampleState
    sample: Callable
    observe: Callable
    carry_on: Callable
    predict: Callable
    reads: tuple  # (what orr.sample.prediction reads of the bundle)

    @classmethod
    def of(cls, bundle: fused.SampleState, n_features: int, n_targets: int,
           before: _Compiled | None = None) -> _Compiled:
        """The entry points for ``bundle``: those of the bundle ``before`` it (a rebuilt
        bundle has arrays of the same dtypes, dimensions and layout, so the same machine
        code: tests/test_rbf.py holds the bundle's numba type fixed over a stream), else
        resolved now (a few hundred µs, once per model)."""
        reads = (bundle.window, bundle.ring.targets, bundle.stream, bundle.tracked,
                 bundle.state)
        if before is not None:
            return before._replace(bundle=bundle, reads=reads)
        x = np.zeros(n_features)  # (the types of the calls' arguments)
        y = np.zeros(n_targets)
        return cls(bundle,
                   entry_point(fused.stream_sample, x, y, x, 1, 1, 0, bundle),
                   entry_point(fused.observe_sample, x, y, x, 1, 1, 0, bundle),
                   entry_point(fused.continue_sample, bundle, x, 1, 0),
                   entry_point(fused.prediction, x, *reads, np.zeros((3, n_targets))), reads)


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
BATCH_ROUNDS = 50


class StreamingRBF(Versioned, RecordOwner):
    """The shared machinery (module docstring); the parameters are documented on
    :class:`~onlinesparse.orr.rbf.SparseRBFRegressor`."""

    def __init__(self, max_basis: int = 100, window_size: int = 1000, memory: str = "adaptive",
                 kernel: str = "gaussian",
                 radii: tuple[float, ...] | None = None, n_candidates: int = 10,
                 evaluations_per_sample: int = 1, candidate_every: int = 3,
                 linear: bool = True, novelty: float = 0.25, error_threshold: float = 2.0,
                 noise_every: int = 1, strict: bool = False, metric: str = "gradient",
                 concepts: int = 3, coverage: float = 0.95, last_target: bool = True,
                 horizon: int | None = None):
        self.max_basis = max_basis
        self.window_size = window_size
        self.memory = memory
        self.horizon = horizon
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
        self._upkeep = Upkeep()
        self._features = FeatureMap(strict=strict)
        self._buffer: BufferManager | None = None
        # The constant is the intercept, unpenalised: the model's choices do not depend on
        # the origin of the target's unit (core.selection.intercept_move).
        self._pruner = GCVPruner(max_basis=max_basis, free_intercept=True)
        self.record = self._new_record()
        self._spares = None
        if self._fixed_targets:  # (the stream layer is there before the first sample)
            self._stream_records = new_streams(self._fixed_targets, coverage, last_target)
        self._bind_layers()

    def _validate_parameters(self) -> None:
        check_int("max_basis", self.max_basis)
        check_int("window_size", self.window_size, 2)
        check_int("n_candidates", self.n_candidates)
        check_int("evaluations_per_sample", self.evaluations_per_sample, 0)
        check_int("candidate_every", self.candidate_every)
        check_int("noise_every", self.noise_every)
        check_int("concepts", self.concepts, 0)
        check_choice("memory", self.memory, ("adaptive", "window"))
        if self.horizon is not None:
            check_int("horizon", self.horizon)
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("metric", self.metric, ("gradient", "isotropic"))
        check_radii("radii", self.radii)
        check_real("novelty", self.novelty, 0.0)
        check_real("error_threshold", self.error_threshold, 0.0)
        check_real("coverage", self.coverage, 0.0, 1.0, low_open=True, high_open=True)

    # The estimator's scalars live in `record` (core.state.SAMPLE), where the compiled
    # sample reads and advances them, with what a call reports (the verdict on the input
    # as a centre); each target's noise and error live in the window's core.state.Targets.
    _n_learned = Field()
    _propose = Field()
    _error_square = Field()

    # Whether the basis set changed since the buffer last looked: a deleted constant or
    # linear function returns to the pool, which may then hold more than its capacity.
    _overfilled = False
    # The memory's cuts so far (memory="adaptive": stream.layer.after_learning); 0 before
    # the first sample too.
    n_memory_cuts = 0
    # The concepts the stream has left (onlinesparse.stream.concepts); None before the first
    # sample, for several targets, and for a model built from a batch fit.
    _concepts: ConceptMemory | None = None
    # The compiled calls' bundle, kept while the arrays stay (see _compiled).
    _cached_bundle = None
    # Whether the prediction's novelty row holds the last interval's variances.
    _novelty_held = False
    # The stream layer's records of every target (stream.layer.Streams), and a layer per
    # target owning views of them; None before the first sample unless the targets are
    # fixed by the class (_fixed_targets: a single-output model's one).
    _stream_records = None
    _fixed_targets: int | None = None

    @property
    def model(self) -> IncrementalRidge | None:
        return self._model

    @model.setter
    def model(self, value: IncrementalRidge | None) -> None:
        self._model = value

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)  # (Versioned: refuses another version's pickle)
        self._spares = None
        self._bind_layers()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        # (made anew: scratch arrays, the compiled bundle, the layers' views of the records)
        for name in ("_spares", "_row_scratch", "_cached_bundle", "_target_scratch",
                     "_layers"):
            state.pop(name, None)
        return state

    def _bind_layers(self) -> None:
        """A stream layer per target over views of the shared records (after a copy or an
        unpickling, the views are made again: a copied view would be an array of its own)."""
        records = self._stream_records
        self._layers = ([] if records is None
                        else StreamLayer.for_targets(records, self.coverage))

    def _new_record(self) -> np.ndarray:
        record = new_record(SAMPLE)
        record[0]["noise_every"] = self.noise_every
        record[0]["error_threshold"] = self.error_threshold
        return record

    @property
    def _stream(self) -> StreamLayer:
        """The first target's stream layer (a single-output model's only one)."""
        return self._layers[0]

    @property
    def n_targets(self) -> int:
        """K, the targets the model fits (0 before the first sample)."""
        return 0 if self._model is None else self._model.n_targets

    # -- learning -------------------------------------------------------------------------
    def prepare(self, x: dict, y: dict | None = None) -> None:
        """Build, before the first sample, what a model for inputs like ``x`` holds: its
        window's arrays, its candidates, its stream layer and its compiled calls' bundle.

        For a loop whose every tick has a budget: a fresh model builds these on its first
        ``learn_one`` (1–2 ms on the defaults, 21 inputs; the compiled code itself is
        :func:`~onlinesparse.warm_up`'s), which a prepared model then takes as it is: its
        first tick is several times shorter, though still several steady ticks long (the
        first pattern adds the constant basis function; ``benchmarks/first_ticks.py``,
        docs/performance.md, has today's figures). Nothing is learned: the model
        predicts and learns exactly as an unprepared one (tested), and a first sample of
        other inputs or another number of targets than prepared for builds anew. ``y``
        names the targets of a multi-output model (its values are not read); ``x`` is
        validated as ``learn_one`` does (a bad value raises ``ValueError``, nothing kept).
        """
        if self._model is not None:
            raise ValueError("prepare() is for a model that has not learned yet")
        n_features = len(self._features.transform(x, learning=True))
        n_targets = self._fixed_targets or len(as_targets(y, None)[1])
        self._features.declare(x)  # (a first sample of x's features then reads at once)
        shadow = self.clone()
        shadow._start(n_features, n_targets)
        shadow._compiled()
        shadow._scratch()
        self._staged = (n_features, n_targets, shadow, self._get_params())

    def _adopt_staged(self, n_features: int, n_targets: int) -> bool:
        """Take what :meth:`prepare` built, if it was built for these inputs and targets
        and these parameters; whatever it built is dropped either way."""
        staged = self.__dict__.pop("_staged", None)
        if staged is None or staged[:2] != (n_features, n_targets):
            return False
        shadow, params = staged[2:]
        # (a parameter set since; river's _get_params() reads the signature: 300 µs)
        if any(getattr(self, name) != value for name, value in params.items()):
            return False
        # (the features and the upkeep's mode are the model's own; the rest is built state)
        kept = {name: self.__dict__[name] for name in ("_features", "_upkeep")}
        self.__dict__.update(shadow.__dict__)
        self.__dict__.update(kept)
        return True

    def _start(self, n_features: int, n_targets: int) -> None:
        if self._adopt_staged(n_features, n_targets):
            return
        radii = self.radii or tuple(r * math.sqrt(max(n_features, 1)) for r in _AUTO_RADII)
        self.model = IncrementalRidge(n_features, memory="window", size=self.window_size,
                                      refresh_every=_REFRESH_WINDOWS * self.window_size,
                                      defer_refreshes=True, n_targets=n_targets)
        self._buffer = BufferManager(radii=tuple(radii), kernel=self.kernel,
                                     capacity=self.n_candidates + 1 + n_features,
                                     novelty=self.novelty,
                                     error_threshold=self.error_threshold,
                                     column_every=self.candidate_every)
        self.record[0]["novelty_sq"] = self._buffer.novelty_threshold
        self._pruner.make_room(n_targets)
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
        self._horizon = Horizon.of(self.window_size, self.horizon)
        self._adaptive = AdaptiveMemory(self.window_size, self._horizon)
        if self._stream_records is None or len(self._stream_records.calibration) != n_targets:
            self._stream_records = new_streams(n_targets, self.coverage, self.last_target)
            self._bind_layers()
        # (a kept concept is one target's frozen model: several targets keep none)
        self._concepts = (self._stream.concept_memory(self.concepts,
                                                      min(LASTED, self.window_size))
                          if n_targets == 1 else None)
        self.n_memory_cuts = 0  # (memory="adaptive": stream.layer.after_learning)

    def _noise_level(self, k: int = 0) -> float:
        """Target k's noise variance in use (``orr.sample.noise_level``): the last
        estimate, or the target's variance before the first one; 1 before any pattern."""
        if self._model is None or not self._model.n_patterns:
            return 1.0
        window = self._model.window
        return fused.noise_level(window.record, window.targets, k)

    @property
    def _lambda_min(self) -> float:
        window = self._model.window
        return fused.shared_lambda_min(window.record, window.targets)

    @property
    def _error(self) -> float:
        """The first target's error before learning, at the last sample."""
        return float(self._model.window.targets.error[0])

    @single_blas_thread
    def _learn(self, vector: np.ndarray, x: dict, known: bool, targets: np.ndarray) -> None:
        """A sample (``learn_one``) from its validated input (``vector``, from ``x``;
        ``known``: its features were all seen before) and its K targets, as differences
        from the first targets learned."""
        features = self._features
        model, pruner = self._model, self._pruner
        # Bounded work per sample: a refresh of S that an earlier sample called for
        # (IncrementalRidge.defer_refreshes) runs at the start of the first sample that is
        # not due for a candidate column, so that the two heavy pieces do not meet (with
        # candidate_every=1 every sample is due: it runs at once); at the budget, a sample
        # whose pruner added or traded a basis function computes no new column. The
        # refresh sample then selects as any other: when a refresh is called for is
        # decided by rounding (the accounts and the drift probe measure it), so it must
        # not decide what the model does (docs/numerics.md §10).
        upkeep = self._upkeep
        if upkeep.overdue(self._n_learned):  # (a loop that stopped calling maintain())
            self.maintain()
        if upkeep.refresh_inline(model, self.candidate_every == 1
                                 or not self._buffer.column_due(), self._n_learned):
            model.maintain()
        size = model.size
        evaluations, first = self._schedule(size)
        evaluations = upkeep.evaluations(evaluations)
        added = pruner.n_added if size >= self.max_basis else -1  # (-1: not at the budget)
        fast = known and features.is_fitted
        means = features.means if fast else np.empty(len(vector))
        compiled = self._compiled()
        # (a sample the memory does not take in moves the stream layer and the pruner all
        # the same: stream.memory.Horizon)
        horizon = self._horizon
        enters = horizon.admits(model.n_stored, self._n_learned, model.window,
                                defer=upkeep.maintained)
        if horizon.due:  # (a loop's model measures its stride in maintain())
            upkeep.owe_measurement(self._n_learned)
        status = (compiled.sample if enters else compiled.observe)(
            vector, targets, means, features.n_committed + 1, evaluations, first,
            compiled.bundle)
        if status == core.SLIDE_REFUSED:  # the add-first order, by the model's operations
            row = self._row_buffer()[: model.window.n_columns].copy()
            try:
                model.add_pattern(vector, targets, row=row)
            except IllConditionedError:  # not even that: re-solve without the oldest
                model.rebuild_without_oldest(vector, targets, row)
            self._n_learned += 1
            status = fused.MOVE  # (nothing to carry out: the pruner's evaluations follow)
            pruner.record[0]["done"] = 0
            pruner.record[0]["stop"] = core.pruning.FINISHED
        if fast:
            features.n_committed += 1
        else:
            features.commit(vector, x, known)
        while status != fused.QUIET:
            if status == fused.MOVE and upkeep.holds(pruner):
                self._adopt_resized()  # (the move waits for maintain(): orr.upkeep)
                upkeep.hold(pruner, model.window.ids, self._n_learned)
                evaluations = 0
            else:
                evaluations, first = self._carry_on(status, evaluations, first)
            compiled = self._compiled()
            status = compiled.carry_on(compiled.bundle, vector, evaluations, first)
        self._after_sample(vector, targets, size, added)

    def _after_sample(self, vector: np.ndarray, targets: np.ndarray, size: int,
                      added: int) -> None:
        """The Python side of a sample once the compiled calls are done: a resized state,
        the cold start's constant, the kept concepts' evidence, the buffer manager's share
        and the memory's response to an alarm."""
        pruner = self._pruner
        if pruner.resized:
            self._adopt_resized()
        elif not size:
            self._start_with_the_mean()
        busy = added >= 0 and pruner.n_added != added
        if self._concepts is not None and self._concepts.kept:
            self._stream.judge_concepts(self._concepts, vector, float(targets[0]),
                                        self._error, self._noise_level(),
                                        self._model.window.count, self._n_learned)
        self._consider(vector, busy)
        memory = self._adaptive if self.memory == "adaptive" else None
        if after_learning(self._layers, memory, self._concepts, self._model, self._freeze,
                          self._n_learned):
            self.n_memory_cuts += 1

    def _freeze(self) -> tuple[FrozenBasis, float] | None:
        """The model as it stands, frozen (its basis functions and weights), and its noise
        variance; None while it has no basis function (one target's: see _start)."""
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

    def maintain(self, max_pieces: int | None = None) -> int:
        """Do the heavy work ``learn_one`` owes (:mod:`onlinesparse.orr.upkeep`): the
        memory's measurement of its stride, a move of the pruner, a refresh of S, a new
        candidate's column, at most ``max_pieces`` of them (all by default). Returns how
        many were done.

        For a control loop, in the time between its ticks: once called, ``learn_one``
        leaves those pieces to it — its tick is then the sample's light work alone (the
        7-joint Panda loop: no tick over 1 ms after the first 2 s, where 20 carried a
        piece inline) — and a piece owed for ``MAX_DEFERRAL`` (100) samples is done by
        ``learn_one`` again. A model that is never maintained does at most one piece per
        sample, as before."""
        if self._model is None:
            self._upkeep.maintained = True
            return 0
        moved = self._upkeep.move is not None
        done = self._upkeep.run(self._model, self._pruner, self._buffer, self._horizon,
                                max_pieces)
        self._adopt_resized()
        if moved:
            self._overfilled = True
        return done

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
        compiled = _Compiled.of(self._new_bundle(), model.n_features, model.n_targets,
                                None if cached is None else cached[4])
        self._cached_bundle = (window.layout, state.variance, state.weights, self._spares,
                               compiled)
        return compiled

    def _new_bundle(self) -> fused.SampleState:
        model = self._model
        window, state = model.window, model.state
        pruner = self._pruner
        return fused.SampleState(
            self.record, self._stream_records, fused.Inputs(*self._inputs.tracked),
            pruner.record, model.record, window.record, self._row_buffer(),
            window.tracked(), fused.Ring(*window.ring()), core.Ridge(*state.arrays()),
            core.Ridge(*self._spare_arrays()), self._buffer.protected_ids(), pruner.move)

    def _row_buffer(self) -> np.ndarray:
        row = getattr(self, "_row_scratch", None)
        capacity = self._model.window.gram_buffer.shape[0]
        if row is None or row.shape[0] < capacity:
            row = self._row_scratch = np.empty(capacity)
        return row

    def _scratch(self) -> _Scratch:
        """Arrays of K, reused (a new array, or even a new view, per call costs more than
        the copy into it): a prediction's rows (``orr.sample.prediction``'s ``out``) and a
        sample's targets."""
        scratch = self.__dict__.get("_target_scratch")
        if scratch is None:
            out = np.zeros((3, self.n_targets))
            scratch = self.__dict__["_target_scratch"] = _Scratch(
                out, out[fused.MEAN], out[fused.VARIANCE], out[fused.NOVELTY],
                np.zeros(self.n_targets))
        return scratch

    def _spare_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arrays for the first addition or deletion of a compiled call to write the
        resized state into (returning new arrays from every call cost more)."""
        if getattr(self, "_spares", None) is None:
            size = max(self.max_basis, self._model.size) + 1
            self._spares = (np.empty(size * size), np.empty((size, self.n_targets)),
                            np.empty(size))
        return self._spares

    def _consider(self, vector: np.ndarray, busy: bool) -> None:
        """The buffer manager's share of the sample, the compiled call having judged the
        input (``record.propose``): queue it as a centre, and on a sample due for one
        compute a new candidate column (or trim a pool that :meth:`refine` overfilled)."""
        buffer = self._buffer
        proposal = bool(self._propose)
        due = buffer.column_due() and bool(proposal or buffer.queue)
        column = not busy and self._upkeep.columns_inline(due, self._n_learned)
        if ((column and due)
                or (self._overfilled
                    and self._model.window.n_candidates > buffer.capacity)):
            # (with the verdict given, consider reads neither the error nor a noise level)
            buffer.consider(self._model.window, vector, 0.0, 0.0,
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
        """Every target's noise estimate now (FGCV eq. 8) and the targets' weights."""
        model = self.model
        targets = model.window.targets
        errors, gamma = model.target_errors, model.effective_parameters
        for k in range(model.n_targets):
            targets.noise[k] = core.noise_estimate(float(errors[k]), gamma, model.n_patterns,
                                                   float(targets.noise[k]))
        if fused.weigh_targets(model.window.record, targets):
            model.record[0]["summary_version"] = -1

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

    def _refine_to_convergence(self) -> None:
        """:meth:`refine` until a round changes no basis function and no λ (``learn_many``),
        at most ``BATCH_ROUNDS`` rounds."""
        if self._model is None:
            return
        pruner = self._pruner
        for _ in range(BATCH_ROUNDS):
            before = (pruner.n_added, pruner.n_deleted, pruner.n_reestimated)
            self.refine(2 * (self._model.size + self._model.window.n_candidates) + 2)
            if (pruner.n_added, pruner.n_deleted, pruner.n_reestimated) == before:
                break

    # -- prediction -----------------------------------------------------------------------
    def _predict(self, vector: np.ndarray, with_dist: bool) -> tuple[np.ndarray, np.ndarray]:
        """Every target's prediction as made and its predictive variance (differences
        from the first targets learned), into a reused buffer: the model's, returned toward
        the targets' mean where it knows little, then calibration, the errors' level and
        the experts (``orr.sample.prediction``); the kept concepts' blend for one target."""
        model = self._model
        if model is None or not model.size:
            return self._predict_without_model(vector, with_dist)
        scratch = self._scratch()
        if with_dist:
            scratch.novelty[:] = self._novelty_variance(vector)
            self._novelty_held = True
        elif self._novelty_held:  # (zero while no interval was asked for since)
            scratch.novelty.fill(0.0)
            self._novelty_held = False
        compiled = self._compiled()
        compiled.predict(vector, *compiled.reads, scratch.out)
        means, variances = scratch.means, scratch.variances
        if self._concepts is not None and self._concepts.kept:
            means[0], variances[0] = self._concepts.blend(vector, means[0], variances[0],
                                                          self._stream.model_weight)
        return means, variances

    def _novelty_variance(self, vector: np.ndarray) -> np.ndarray:
        """What the basis set cannot know at x, for each target: the posterior variance of
        the weight of a new basis function of the model's kernel at x (height 1, the
        middle proposed radius), given the data near it and a prior variance of s², the
        target's variance in memory — ``1 / (1/s² + Σᵢ φ(xᵢ)²/σ²)`` (the augmentation of
        Rasmussen and Quiñonero-Candela 2005, taken conditionally on the other weights).
        Far from every stored input it is s² (anything in the target's range); where the
        window is dense it is σ² divided by the data near x, a few per cent of σ² on
        Friedman #1. O(W·d) (the data near x, shared by the targets), paid by
        ``with_dist=True`` only."""
        model = self._model
        out = np.zeros(self.n_targets)
        if model is None or not model.n_patterns:
            return out
        window = model.window
        near = window.support(vector, self._buffer.reference_radius, KERNELS[self.kernel])
        for k in range(self.n_targets):
            prior = core.target_variance(window.record, window.targets.moments, k)
            noise = self._noise_level(k)
            if prior > 0.0 and noise > 0.0:
                out[k] = 1.0 / (1.0 / prior + near / noise)
        return out

    def _predict_without_model(self, vector: np.ndarray, with_dist: bool
                               ) -> tuple[np.ndarray, np.ndarray]:
        """A model without basis functions predicts what the stream layer's experts do (the
        running mean and the last target, by their evidence), else the mean of the targets
        in memory (0 before any)."""
        model = self._model
        if model is None:
            return np.zeros(max(self.n_targets, 1)), np.ones(max(self.n_targets, 1))
        window = model.window
        novelty = self._novelty_variance(vector) if with_dist else np.zeros(self.n_targets)
        means, variances = np.zeros(self.n_targets), np.zeros(self.n_targets)
        for k, layer in enumerate(self._layers):
            mean = (core.target_mean(window.record, window.targets.moments, k)
                    if window.count else 0.0)
            noise = self._noise_level(k)
            means[k], variances[k] = layer.predict_without_model(mean, noise + novelty[k])
        return means, variances

    # -- diagnostics ----------------------------------------------------------------------
    @property
    def n_basis(self) -> int:
        return 0 if self.model is None else self.model.size

    def _basis_function(self, j: int) -> dict:
        """Basis function j: kind, centre, radius, metric (the inputs' weights, averaging
        1; () when isotropic), λ."""
        spec = self.model.window.basis.spec(j)
        return {"kind": spec.kind, "centre": spec.centre, "radius": spec.radius,
                "metric": spec.metric,
                "feature": (self._features.names[spec.feature]
                            if spec.kind == "linear" else None),
                "lambda": float(self.model.lambdas[j])}

    def _shared_diagnostics(self) -> dict[str, float]:
        """The numbers of the shared model a user can read at any time (O(M) or less)."""
        model = self.model
        return {
            "n_basis": float(model.size),
            "n_candidates": float(model.window.n_candidates),
            "effective_parameters": model.effective_parameters,
            "gcv": model.gcv,
            "n_patterns": model.n_patterns,
            "n_refreshes": float(model.n_refreshes),
            "n_added": float(self._pruner.n_added),
            "n_deleted": float(self._pruner.n_deleted),
            "memory": float(model.window.n_stored),
            "memory_cuts": float(getattr(self, "n_memory_cuts", 0)),
        }

    def _target_diagnostics(self, k: int) -> dict[str, float]:
        """Target k's noise level and its stream layer's numbers (κ, the errors' level added
        to predictions, κ_o, the model's weight against the experts)."""
        return {"noise_std": math.sqrt(self._noise_level(k)), **self._layers[k].summary()}

    def loo(self) -> float:
        """Leave-one-out error over the window (Orr 5.1), O(WM²), the targets' weighed as
        every criterion: on demand only."""
        return math.nan if self.model is None else self.model.loo()

    def input_relevance(self) -> dict[Hashable, float]:
        """How much the prediction moves with each input over the window
        (:func:`~onlinesparse.orr.input_metric.prediction_moves`; several targets: summed
        over them in units of their noise levels), O(d·W·M·K), on demand only."""
        if self.model is None or not self.model.size:
            return {name: 0.0 for name in self._features.names}
        window, model = self.model.window, self.model
        inputs = window.stored_inputs()
        columns = [prediction_moves(window.basis, np.ascontiguousarray(model.state.weights[:, k]),
                                    inputs) for k in range(model.n_targets)]
        moves = columns[0] if len(columns) == 1 else np.sqrt(sum(
            scale * column**2 for scale, column in zip(window.targets.scales, columns,
                                                        strict=True)))
        return dict(zip(self._features.names, moves.tolist(), strict=True))
