"""The streaming sparse RBF regressor: Orr's incremental ridge with a GCV-driven basis set."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable

import numpy as np
import pandas as pd
from river import base, proba

from onlinesparse import core
from onlinesparse._blas import single_blas_thread
from onlinesparse.buffer import BufferManager
from onlinesparse.features import FeatureMap, as_target
from onlinesparse.kernels import KERNELS, BasisSpec
from onlinesparse.pruner import _RELATIVE_GAIN, GCVPruner, _apply_basis_move
from onlinesparse.ridge import (
    _ACCOUNT_DRIFT,
    _MIN_RELATIVE_DELTA,
    _MIN_RESIDUAL_LEVERAGE,
    _PROJECT_BELOW,
    _REFRESH_AT,
    IncrementalRidge,
)

__all__ = ["SparseRBFRegressor", "warm_up"]

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
# many (each has a fixed cost too). Growth is where a stream's model is worst: on Friedman
# #1 this took the RMSE over 5000 samples from 1.92 to 1.84 at one evaluation per sample.
_GROWTH_EVALUATIONS = 4


class SparseRBFRegressor(base.Regressor):
    """Sparse radial-basis-function regression learned one sample at a time.

    Every ``learn_one`` adds the sample to a sliding window of the last ``window``
    patterns and updates the weights exactly by Orr's incremental operations (add the
    pattern, remove the oldest: Orr eqs. (A.8) and (A.11), O(M²)). Between samples, a bounded
    amount of model selection runs (:class:`~onlinesparse.pruner.GCVPruner`): each basis
    function's regularisation λⱼ is re-estimated to its GCV optimum in closed form (Orr's
    local ridge, A.11), a basis function whose optimum is λⱼ = ∞ is deleted, and
    candidate kernels proposed by the :class:`~onlinesparse.buffer.BufferManager` are added
    when their GCV-optimal λ lowers GCV (the fast GCV algorithm of Sundararajan, Shevade and
    Keerthi). A constant and one linear function per input start in the candidate pool and
    are subject to the same decisions.

    The work per ``learn_one`` is bounded by the parameters — ``max_basis``,
    ``n_candidates``, ``window`` and ``evaluations_per_sample`` — and does not grow with
    the length of the stream; :meth:`refine` spends extra idle time the same way. A
    sample does at most one heavy piece of work, so that the worst case is the largest
    of them rather than their sum: a refresh of the variance matrix that rounding calls
    for (O(M³)) is deferred to the start of the next sample, which then does no model
    selection and computes no candidate column; at the budget, a sample that adds or
    trades a basis function computes no new column.

    A sample runs as one compiled call (``core.stream_sample``) that takes the general
    path's steps in its order through the same compiled loops — pattern, rounding
    accounts, the pruner's evaluations and trades, the buffer's novelty test — and hands
    the sample back to the general path only where something rare happens (an addition
    or deletion of a basis function, a refresh); a test holds both to the same bits.

    Kernel width: candidates are proposed at several radii (``radii``, by default
    ``(0.5, 1, 2)·√d`` for d inputs, which suits standardised inputs) and compete in the
    same pool, so GCV selects the widths; no radius needs tuning by hand.

    Early samples: GCV on a handful of patterns is easily fooled, so the model holds at
    most half as many basis functions as it has patterns. Its first predictions can still
    be far off when the inputs are: behind a ``StandardScaler`` that has seen two
    samples, Friedman #1 (seed 2) puts the third input at −13 σ, where the one linear basis
    function fitted so far predicts 181 for a target of 13 — a single error that decides
    the RMSE over 5000 samples (3.1 instead of 1.9). Predictions are not clipped.

    Parameters
    ----------
    max_basis
        Maximum number of basis functions in the model. When it is reached a candidate
        enters only if removing the least useful basis function and adding it lowers GCV.
    window
        Number of most recent patterns the model is fitted to (a bounded window keeps the
        cost per sample and the memory constant, and lets the model follow drift).
    kernel
        ``"gaussian"``, ``"multiquadric"``, ``"inverse_multiquadric"`` or ``"cauchy"``.
    radii
        Kernel radii proposed for each new centre; ``None`` for ``(0.5, 1, 2)·√d``.
    n_candidates
        Size of the candidate pool, besides the constant and linear basis functions that
        the pruner sent back to it (those stay, so that GCV can take them back). Every
        tracked column costs O(n) in each sample's update of the window statistics; 10
        and 30 gave the same accuracy within ±0.02 RMSE on six Friedman streams.
    evaluations_per_sample
        GCV evaluations per ``learn_one`` (each O(M²)) at the full budget M = max_basis:
        the pruner's work per sample. A smaller model runs as many more as cost the same
        (``(max_basis/M)²`` times as many, at most four times as many); around the
        candidate columns they are arranged so that most samples stay light
        (:meth:`_schedule`). On Friedman #1 (seed 42, 5000 samples, M = 100, 10
        candidates, before that arrangement) one evaluation instead of two took the median
        sample from 4.6 to 4.0 times LinearRegression's and the RMSE from 1.812 to 1.844;
        over six Friedman streams the RMSE moved by −0.05 to +0.06, except where an early
        sample decided it (see the note on early samples above). On a small budget an
        evaluation is cheap: with ``max_basis=30``, window 300, two gave an RMSE over the
        last 200 of 1200 samples of 2.26 against 2.33 (twelve streams). :meth:`refine`
        adds more evaluations when a loop has slack.
    candidate_every
        A new candidate centre's column (O(W·(M + C)), the largest single piece of
        per-sample work: about 30 µs at W = 1000, M = 100) is computed on one ``learn_one``
        in this many; proposals made in between wait in a short queue that keeps the most
        recent few, and the pruner's evaluations are arranged around the columns (see
        :meth:`_schedule`). Measured on Friedman #1 (seed 42, 5000 samples behind a
        StandardScaler, other parameters at their defaults; RMSE all / last 1000, then the
        median and 99th percentile of predict + learn as multiples of river
        LinearRegression's median in the same run, single runs): 1 → 1.962 / 1.614, 6.1 /
        10.4; 2 → 1.832 / 1.564, 5.1 / 9.3; 3 → 1.831 / 1.596, 3.6 / 9.0; 4 → 1.888 /
        1.646, 3.3 / 9.0. The default 3 keeps two samples in three free of a column. On a
        small budget that needs columns more (``max_basis=30``, window 300, 1200 samples,
        six streams: RMSE over the last 200) 1 gives 2.28 against 2.38; set 1 (with a
        larger ``n_candidates``, since every sample then evicts a candidate) when latency
        does not matter.
    linear
        Offer one linear basis function per input (beside the constant).
    novelty
        An input is proposed as a centre when its squared distance to every centre exceeds
        ``novelty`` times the squared middle radius...
    error_threshold
        ...or when its prediction error exceeds this many predictive standard deviations.
    noise_every
        Re-estimate the noise variance (FGCV eq. 8) every this many samples; it sets the
        floor ``λ_min = σ²/p`` (FGCV's α_min = 1/N) and the predictive distribution.
    strict
        Raise on missing or unseen features instead of imputing / ignoring them (see
        :mod:`onlinesparse.features`).

    Attributes
    ----------
    model
        The :class:`~onlinesparse.ridge.IncrementalRidge` (``None`` before the first sample).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinesparse import SparseRBFRegressor
    >>> model = preprocessing.StandardScaler() | SparseRBFRegressor(max_basis=30, window=300)
    >>> evaluate.progressive_val_score(
    ...     datasets.synth.Friedman(seed=42).take(1000), model, metrics.RMSE())
    RMSE: ...
    >>> model[-1].diagnostics()["n_basis"] > 5
    True
    """

    def __init__(self, max_basis: int = 100, window: int = 1000, kernel: str = "gaussian",
                 radii: tuple[float, ...] | None = None, n_candidates: int = 10,
                 evaluations_per_sample: int = 1, candidate_every: int = 3,
                 linear: bool = True, novelty: float = 0.25, error_threshold: float = 2.0,
                 noise_every: int = 20, strict: bool = False):
        self.max_basis = max_basis
        self.window = window
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
        self._validate_parameters()
        self._model: IncrementalRidge | None = None
        self._features = FeatureMap(strict=strict)
        self._buffer: BufferManager | None = None
        self._pruner = GCVPruner(max_basis=max_basis)
        self._noise_variance = 1.0
        self._n_learned = 0

    def _validate_parameters(self) -> None:
        def positive_int(name: str, value: object, minimum: int = 1) -> None:
            if not (isinstance(value, int | np.integer) and value >= minimum):
                raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")

        positive_int("max_basis", self.max_basis)
        positive_int("window", self.window, 2)
        positive_int("n_candidates", self.n_candidates)
        positive_int("evaluations_per_sample", self.evaluations_per_sample, 0)
        positive_int("candidate_every", self.candidate_every)
        positive_int("noise_every", self.noise_every)
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {self.kernel!r}")
        if self.radii is not None and (
                not len(self.radii) or not all(r > 0 and math.isfinite(r) for r in self.radii)):
            raise ValueError(f"radii must be positive and finite, got {self.radii!r}")
        for name in ("novelty", "error_threshold"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be ≥ 0 and finite, got {value!r}")

    @classmethod
    def _unit_test_params(cls) -> Iterable[dict]:
        yield {}

    @property
    def model(self) -> IncrementalRidge | None:
        # While samples stay on the fused path a few of the model's scalars live in the
        # registers (see _learn_fused): whoever reads the model gets it up to date.
        if self._in_registers:
            self._sync()
        return self._model

    @model.setter
    def model(self, value: IncrementalRidge | None) -> None:
        if self._in_registers:
            self._sync()
        self._model = value

    def __setstate__(self, state: dict) -> None:
        if "model" in state:  # a checkpoint written before the fused path
            state["_model"] = state.pop("model")
        self.__dict__.update(state)

    # -- learning -------------------------------------------------------------------------
    def _start(self, n_features: int) -> None:
        radii = self.radii or tuple(r * math.sqrt(max(n_features, 1)) for r in _AUTO_RADII)
        self.model = IncrementalRidge(n_features, memory="window", size=self.window,
                                      refresh_every=_REFRESH_WINDOWS * self.window,
                                      defer_refreshes=True)
        self._buffer = BufferManager(radii=tuple(radii), kernel=self.kernel,
                                     capacity=self.n_candidates + 1 + n_features,
                                     novelty=self.novelty,
                                     error_threshold=self.error_threshold,
                                     column_every=self.candidate_every)
        # Everything the model can hold is known now: allocating it before the first
        # pattern keeps array growth (a copy of the stored window) out of the stream.
        self.model.window.reserve(self.max_basis + self._buffer.capacity + 2)
        specs = [BasisSpec.constant()]
        if self.linear:
            specs += [BasisSpec.linear(i) for i in range(n_features)]
        for spec in specs:
            self._buffer.protected.add(self.model.add_candidate(spec))

    @property
    def _lambda_min(self) -> float:
        return core.lambda_min(self._noise_variance, self._model.n_patterns)

    @single_blas_thread
    def learn_one(self, x: dict, y: float) -> None:
        features = self._features
        vector = features.transform_known(x)
        known = vector is not None
        if not known:
            vector = features.transform(x, learning=True)
        target = as_target(y)
        model = self._model
        if known and (self._in_registers or self._fuse and self._fused_ready()):
            stopped = self._learn_fused(vector, target)
            if stopped is None:
                return
            row, error = stopped  # the slide must wait: the general path takes over
            maintained = False
        else:
            model = self.model  # (up to date)
            if model is None:
                self._start(len(vector))
                model = self._model
            # Bounded work per sample: at most one heavy piece of work in a sample, so
            # that the worst case is one of them, not their sum. A refresh of S that the
            # last sample called for (IncrementalRidge.defer_refreshes) runs first, and
            # then that sample does no model selection and computes no candidate column;
            # at the budget, a sample whose pruner added or traded a basis function
            # computes no new column.
            maintained = model.maintain()
            row = model.window.row(vector)
            error = target - core.inner(row, model.weights, model.size)
        evaluations, first = self._schedule()
        model.add_pattern(vector, target, row=row)
        features.commit(vector, x, known)
        self._n_learned += 1
        self._select(model, vector, error, maintained, evaluations, first)

    def _select(self, model: IncrementalRidge, vector: np.ndarray, error: float,
                maintained: bool, evaluations: int, first: int,
                at_budget: bool | None = None, added: int | None = None) -> None:
        """The rest of a sample once its pattern is in: the pruner's evaluations (as many
        as ``evaluations``, in the order ``first``, see :meth:`_schedule`), the buffer
        manager's proposal, the periodic noise estimate. ``at_budget`` and ``added`` are
        as they stood when model selection began (a fused sample that stopped at a move
        began it already)."""
        if at_budget is None:
            at_budget = model.size >= self.max_basis
        if added is None:
            added = self._pruner.n_added
        if not maintained and evaluations > 0:
            self._pruner.step(model, evaluations, self._lambda_min, self._buffer.protected,
                              first)
        busy = maintained or (at_budget and self._pruner.n_added != added)
        self._buffer.consider(model.window, vector, error, math.sqrt(self._noise_variance),
                              column=not busy)
        if self._n_learned % self.noise_every == 0:
            self._update_noise()

    # -- the fused sample ---------------------------------------------------------------
    # A sample of a model with basis functions and no refresh waiting runs as one compiled
    # call, core.stream_sample, which follows the general path above step for step
    # through the same compiled loops as long as nothing unusual happens, and stops where
    # something does; the general path's own methods then finish the sample. A test holds
    # both paths to the same bits. At M = 100 the interpreter overhead of the general
    # path's dozen calls cost more than their arithmetic.
    #
    # The scalars the call advances (window position, rounding accounts, pruner cursors…)
    # stay in two register arrays while samples stay on the fused path, and go back to
    # their objects (_sync) when one leaves it or anything reads the model (the `model`
    # property): packing and unpacking them every sample cost more than the rest of a
    # quiet sample's Python.

    _in_registers = False  # (class default: checkpoints from before the fused path)
    _fuse = True  # False: every sample takes the general path (tests, warm_up)

    def _fused_ready(self) -> bool:
        """Whether this sample can start as one compiled call: a reserved window holding
        patterns, a model with basis functions and no refresh waiting. (Nothing but the
        general path changes that, so it holds as long as the registers do.)"""
        model = self._model
        if model is None:
            return False
        window = model.window
        return bool(model._pending is None and model.state.weights.shape[0]
                    and window.n_stored and window.store_capacity == len(window._y)
                    and window.basis.size == window.n_columns)

    def _pack(self) -> None:
        """Load the registers from the objects (they are then the authoritative copy), and
        gather the compiled call's arguments: between two packs only the registers and
        the arrays' contents change, so the call reuses them; and the arrays other than
        the ridge state's (which a move of the general path replaces) stay put from one
        pack to the next, as long as nothing grows past what the model reserved."""
        model, pruner, features = self._model, self._pruner, self._features
        window = model.window
        basis = window.basis
        stable = getattr(self, "_stable_arguments", None)
        if stable is None or stable[0] is not basis._kind or stable[4] is not window._gram:
            buffer = self._buffer
            self._record = core.new_record()
            self._row_buffer = np.empty(window._gram.shape[0])
            self._move_buffer = np.empty(8)
            stable = self._stable_arguments = (
                basis._kind, basis._centres, basis._inv_r2, basis._feature, window._gram,
                window._cross_y, window._HT, window._XT, window._y, window.stamps, window.traffic,
                window.merit, window.ids, window.store_capacity, self._record,
                self._row_buffer, self._move_buffer, model.refresh_every, model.check_every,
                _REFRESH_AT, _MIN_RESIDUAL_LEVERAGE, pruner.candidates_per_evaluation,
                pruner.min_gain, _RELATIVE_GAIN,
                buffer.protected_ids(), features.means, buffer.novelty_threshold,
                buffer.error_threshold, self.noise_every, _MIN_RELATIVE_DELTA,
                _PROJECT_BELOW, _ACCOUNT_DRIFT, model.drift_tolerance, self.max_basis)
        record = self._record
        record[0] = 0
        reg = record[0]  # (a view: writes reach the record)
        for name, value in (
                ("n_seen", window.n_seen), ("head", window._head),
                ("since_refresh", model._since_refresh), ("since_check", model._since_check),
                ("round_start", model._round_start), ("exact_since", window._exact_since),
                ("turn", pruner._turn), ("basis_cursor", pruner._basis_cursor),
                ("candidate_cursor", pruner._candidate_cursor),
                ("committed", features.n_committed), ("n_columns", window.n_columns),
                ("n_stored", window.n_stored), ("n_learned", self._n_learned),
                ("yy", window.yy), ("error_estimate", model._error_estimate),
                ("statistics_error", model._statistics_error),
                ("round_error", model._round_error), ("credit", window._refresh_credit),
                ("count", window.count), ("noise_variance", self._noise_variance)):
            reg[name] = value
        self._adopt_state()
        self._in_registers = True

    def _adopt_state(self) -> None:
        """The compiled call's arguments for the ridge state's current arrays, with spare
        arrays for the first addition or deletion it makes (``core.stream_sample``
        writes the new state there; returning new arrays would cost every call)."""
        state, basis = self._model.state, self._model.window.basis
        size = max(self.max_basis, state.weights.shape[0]) + 1
        self._arguments = self._stable_arguments + (
            state.variance, state.weights, state.lambdas, np.empty(size * size),
            np.empty(size), np.empty(size))
        self._predict_arguments = (basis._kind, basis._centres, basis._inv_r2,
                                   basis._feature, state.weights)

    def _sync(self) -> None:
        """Write the registers back to the objects (once: they are then authoritative)."""
        if not self._in_registers:
            return
        model, pruner = self._model, self._pruner
        window = model.window
        reg = self._record[0]
        (window.n_seen, window._head, model._since_refresh, model._since_check,
         model._round_start, window._exact_since, pruner._turn, pruner._basis_cursor,
         pruner._candidate_cursor, reestimated, updates) = (int(reg[name]) for name in (
             "n_seen", "head", "since_refresh", "since_check", "round_start", "exact_since",
             "turn", "basis_cursor", "candidate_cursor", "n_reestimated", "updates"))
        self._features.n_committed = int(reg["committed"])
        self._n_learned = int(reg["n_learned"])
        window.n_stored = int(reg["n_stored"])
        (window.yy, model._error_estimate, model._statistics_error, model._round_error,
         window._refresh_credit, training, gamma, window.count, self._noise_variance) = (
            float(reg[name]) for name in (
                "yy", "error_estimate", "statistics_error", "round_error", "credit",
                "training_error", "gamma", "count", "noise_variance"))
        model._version += updates
        pruner.n_reestimated += reestimated
        pruner.n_added += int(reg["n_traded"] + reg["n_added"])
        pruner.n_deleted += int(reg["n_traded"] + reg["n_deleted"])
        if reg["summary_valid"]:
            # The criteria of the current state: what model._summary() would compute next.
            model._summary_cache = (model._version, training, gamma)
        self._in_registers = False
        del self._arguments, self._predict_arguments  # (they hold arrays: a pickle must not)

    def __getstate__(self) -> dict:
        self._sync()
        state = self.__dict__.copy()
        for name in ("_record", "_row_buffer", "_move_buffer",
                     "_stable_arguments"):  # (the next pack makes them anew)
            state.pop(name, None)
        return state

    def _learn_fused(self, vector: np.ndarray, target: float
                     ) -> tuple[np.ndarray, float] | None:
        """:meth:`learn_one` from a known, validated input, starting as one compiled call.
        Returns None, or ``(row, error)`` when the slide must take the general path."""
        if not self._in_registers:
            self._pack()
        reg = self._record[0]
        evaluations, first = self._schedule()
        reg["evaluations"], reg["first"] = evaluations, first
        code = core.stream_sample(vector, target, *self._arguments)
        if reg["resized"]:
            # The pruner added or deleted a basis function: the state is now in the spare
            # arrays (and a deletion may have dropped the column from the pool too).
            model = self._model
            spare_variance, spare_weights, spare_lambdas = self._arguments[-3:]
            m = int(reg["n_model"])
            model.state.variance, model.state.weights, model.state.lambdas = (
                spare_variance[: m * m].reshape(m, m), spare_weights[:m], spare_lambdas[:m])
            window = model.window
            window.n_model = m
            window.n_columns = int(reg["n_columns"])
            window.basis.truncate(window.n_columns)
            self._adopt_state()
        if code == core.QUIET:
            # The general path's _select with nothing left to select and the noise estimate
            # made: only the buffer manager may have work, a proposal to queue or a column
            # to compute.
            buffer, window = self._buffer, self._model.window
            # (at the budget, a sample that added or traded a basis function computes no
            # column: _select's `busy`)
            column = not (reg["at_budget"]
                          and (reg["traded_now"] or reg["added_now"]))
            if ((column and buffer.column_due() and (reg["propose"] or buffer.queue))
                    or window.n_candidates > buffer.capacity):
                # A new column (or the trim of a pool that refine() overfilled) reads the
                # window's position and changes the number of columns; the registers stay
                # (the arrays are reserved and stay put).
                window.n_seen, window._head, window.n_stored = (
                    int(reg["n_seen"]), int(reg["head"]),
                    int(reg["n_stored"]))
                # (with the verdict given, consider reads no noise level: 0.0)
                buffer.consider(window, vector, float(self._record[0]["error"]), 0.0,
                                column=column, proposal=bool(reg["propose"]))
                reg["n_columns"] = window.n_columns
                if (window.basis._kind is not self._arguments[0]
                        or window._gram is not self._arguments[4]):
                    self._sync()  # (grown past what was reserved after all: pack anew)
            else:
                if reg["propose"]:
                    buffer.propose(vector)
                buffer.n_considered += 1
            return None
        error = float(self._record[0]["error"])
        self._sync()
        model, pruner = self._model, self._pruner
        if code == core.SLIDE_REFUSED:
            return self._row_buffer[: model.window.n_columns], error
        if code == core.DECIDE:
            model._decide(True, model.window._exact_since if reg["full"] else None,
                          bool(reg["healthy"]))
            self._select(model, vector, error, False, evaluations, first)
            return None
        done, move_kind, action, j, protected = (
            int(reg[name]) for name in ("done", "move_kind", "action", "move_basis", "protected"))
        # (n_added as it stood before this sample's moves, for _select's `busy`)
        move = self._move_buffer
        added = pruner.n_added - int(reg["traded_now"] + reg["added_now"])
        if move_kind == 1:
            pruner._apply_candidate_move(model, action, move)
        elif move_kind >= 3:  # a trade, addition or deletion made: its accounts remain
            model._after_update((float(move[4]), float(move[4])))
            pruner.n_added += move_kind != 5
            pruner.n_deleted += move_kind != 4
        else:
            outcome, usefulness = _apply_basis_move(model, j, action, move, bool(protected))
            pruner._record_basis_move(model, j, outcome, usefulness)
        # The rest of the sample's evaluations, in the order they would have come.
        first = core.continued_order(first, done)
        self._select(model, vector, error, False, evaluations - done - 1, first,
                     bool(reg["at_budget"]), added)
        return None

    def _schedule(self) -> tuple[int, int]:
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
        size = self._model.state.weights.shape[0]
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
        return self._pruner.step(self.model, max_evaluations, self._lambda_min,
                                 self._buffer.protected)

    def learn_many(self, X: pd.DataFrame, y: pd.Series) -> None:
        """Learn the rows of ``X`` in order (exactly as many ``learn_one`` calls)."""
        for (_, row), target in zip(X.iterrows(), y, strict=True):
            self.learn_one(row.to_dict(), target)

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
            model.model.add_pattern(vector, target)
            model._features.commit(vector, row)
            model._n_learned += 1
        # Centres are in X's column order; the model orders inputs by name.
        order = [list(X.columns).index(name) for name in model._features.names]
        for centre, lam in zip(result.centres, result.lambdas, strict=True):
            model.model.add_basis(BasisSpec.radial(np.asarray(centre)[order], radius, kernel),
                                  float(lam))
        model._update_noise()
        return model

    # -- prediction -----------------------------------------------------------------------
    # Prediction reads only what the fused path keeps in the objects (basis, weights, S),
    # so it uses _model directly rather than the synchronising `model` property.
    def _row(self, x: dict) -> np.ndarray | None:
        vector = self._features.transform(x)
        model = self._model
        if model is None or not model.size:
            return None
        return model.model_row(vector)

    def predict_one(self, x: dict, with_dist: bool = False) -> float | proba.Gaussian:
        if not with_dist:
            vector = self._features.transform(x)
            if self._in_registers:  # (the arrays stay put while the registers hold)
                return core.predict_mean(vector, *self._predict_arguments)
            model = self._model
            if model is None or not model.size:
                return 0.0
            basis = model.window.basis
            return core.predict_mean(vector, basis._kind, basis._centres, basis._inv_r2,
                                       basis._feature, model.weights)
        h = self._row(x)
        model = self._model
        mean = 0.0 if h is None else core.inner(h, model.weights, model.size)
        noise = (float(self._record[0]["noise_variance"]) if self._in_registers
                 else self._noise_variance)
        variance = noise if h is None else model.predictive_variance(h, noise)
        return proba.Gaussian._from_state(n=1, m=mean, var=variance, ddof=0)

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        return pd.Series([self.predict_one(row.to_dict()) for _, row in X.iterrows()],
                         index=X.index, dtype=float)

    # -- diagnostics ----------------------------------------------------------------------
    @property
    def n_basis(self) -> int:
        return 0 if self.model is None else self.model.size

    def basis_functions(self) -> list[dict]:
        """Every basis function of the model: kind, centre, radius, λ and weight."""
        if self.model is None:
            return []
        out = []
        for j in range(self.model.size):
            spec = self.model.window.basis.spec(j)
            out.append({"kind": spec.kind, "centre": spec.centre, "radius": spec.radius,
                        "feature": (self._features.names[spec.feature]
                                    if spec.kind == "linear" else None),
                        "lambda": float(self.model.lambdas[j]),
                        "weight": float(self.model.weights[j])})
        return out

    def diagnostics(self) -> dict[str, float]:
        """Numbers a user can read at any time (all O(M) or less)."""
        if self.model is None:
            return {"n_basis": 0.0, "noise_std": math.sqrt(self._noise_variance)}
        model = self.model
        return {
            "n_basis": float(model.size),
            "n_candidates": float(model.window.n_candidates),
            "effective_parameters": model.effective_parameters,
            "gcv": model.gcv,
            "noise_std": math.sqrt(self._noise_variance),
            "n_patterns": model.n_patterns,
            "n_refreshes": float(model.n_refreshes),
            "n_added": float(self._pruner.n_added),
            "n_deleted": float(self._pruner.n_deleted),
        }

    def loo(self) -> float:
        """Leave-one-out error over the window (Orr 5.1), O(WM²): on demand only."""
        return math.nan if self.model is None else self.model.loo()

    def input_relevance(self) -> dict[Hashable, float]:
        """How much the prediction moves with each input over the window: the mean absolute
        change of the prediction for a ±½ std change of the input (finite differences),
        O(d·W·M), on demand only."""
        if self.model is None or not self.model.size:
            return {name: 0.0 for name in self._features.names}
        X = self.model.window.stored_inputs()
        scale = X.std(axis=0)
        basis, weights = self.model.window.basis, self.model.weights
        size = self.model.size
        out = {}
        for i, name in enumerate(self._features.names):
            step = np.zeros(X.shape[1])
            step[i] = 0.5 * scale[i] if scale[i] > 0 else 0.5
            up = basis.evaluate_many(X + step, 0, size) @ weights
            down = basis.evaluate_many(X - step, 0, size) @ weights
            out[name] = float(np.mean(np.abs(up - down)))
        return out



def warm_up(seed: int = 0) -> None:
    """Load (or compile) every compiled loop a :class:`SparseRBFRegressor` uses, now.

    The numerical core runs through numba: the first call of each compiled function in a
    process loads its machine code from the on-disk cache, or compiles it when the cache
    is missing or stale — some hundreds of milliseconds in all, paid by whichever sample
    first needs each function. A real-time loop calls this once before its first tick, so
    that no tick pays it. A small throwaway model is driven through every path (growing,
    full window, budget, trades, refreshes); the types, hence the machine code, are those
    of any model. Takes well under a second once the cache exists.
    """
    rng = np.random.default_rng(seed)
    for fuse in (True, False):  # the fused sample, and the general path samples leave it for
        model = SparseRBFRegressor(max_basis=6, window=40, n_candidates=6)
        model._fuse = fuse
        for k in range(400):
            x = rng.uniform(-1.0, 1.0, 2)
            y = float(np.sin(3.0 * x[0]) + x[1] ** 2 + 0.05 * rng.standard_normal())
            model.learn_one({"a": float(x[0]), "b": float(x[1])}, y)
            model.predict_one({"a": float(x[0]), "b": float(x[1])}, with_dist=k % 2 == 0)
    model.refine(20)
    # Rarely reached in a short run: the measurement of the rounding in S, and a refresh.
    model.model.check_health()
    model.model.condition_bound()
    model.model.refresh()
