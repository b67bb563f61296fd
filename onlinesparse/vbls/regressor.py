"""Variational Bayesian least squares regression on the inputs, learned one sample at a time."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping

import numpy as np
import pandas as pd
from river import base, proba
from scipy import special

from onlinesparse._blas import single_blas_thread
from onlinesparse._distributions import gaussian
from onlinesparse._validation import Versioned, check_choice, check_int, check_real
from onlinesparse.core.pattern import target_variance
from onlinesparse.features import FeatureMap, as_rows
from onlinesparse.features import as_target as _as_target
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.window import MEMORY_POLICIES, WindowStatistics
from onlinesparse.stream.concepts import LASTED
from onlinesparse.stream.layer import StreamLayer
from onlinesparse.stream.memory import AdaptiveMemory, Horizon
from onlinesparse.stream.refit import RidgeView
from onlinesparse.vbls import engine, schedule, student_t
from onlinesparse.vbls._many import predict_series

__all__ = ["VBLSRegressor", "MEMORY_PER_WEIGHT", "FACTORISATIONS", "FrozenLinear"]

FACTORISATIONS = ("gaussian", "student_t")

# The default memory forgets with the factor 1 − 1/(MEMORY_PER_WEIGHT·M): an effective memory
# of MEMORY_PER_WEIGHT patterns per weight: short enough to follow a drift, long enough to
# fit the weights (benchmarks/vbls_stream.py measures the trade).
MEMORY_PER_WEIGHT = 5


# Rounds of re-admission after a batch fit (VBLSRegressor._readmit); one or two sufficed on
# the 200-input design, each costs O(M³) and a batch fit.
_READMIT_ROUNDS = 5

class FrozenLinear:
    """A linear model frozen as it stood, ``b₀ + bᵀx`` (a kept concept's predictor)."""

    def __init__(self, intercept: float, weights: np.ndarray) -> None:
        self.intercept = float(intercept)
        self.weights = np.array(weights, dtype=float)

    def predict(self, x: np.ndarray) -> float:
        return self.intercept + float(self.weights @ x)


class VBLSRegressor(Versioned, base.Regressor):
    """Variational Bayesian least squares (VBLS) linear regression with relevance detection.

    The model of Ting, D'Souza, Vijayakumar and Schaal: the prediction is
    ``b₀ + Σ_m b_m x_m``, every weight has a Gaussian prior whose precision has a flat Gamma
    hyper-prior (one precision per weight, ``prior="ard"``, section 4.2, or one for all,
    ``prior="shared"``, 4.1), and the posterior is fitted by the EM of probabilistic
    backfitting (section 3). Each EM sweep needs only ``HᵀH``, ``Hᵀy``, ``yᵀy`` and the
    number of patterns, which :class:`~onlinesparse.orr.window.WindowStatistics` keeps; so
    ``learn_one`` adds the pattern to the statistics and runs the online schedule of
    :mod:`onlinesparse.vbls.schedule`: ``sweeps_per_sample`` fixed-point sweeps (the
    weights and the noise moved to the fixed points of their updates, the precisions by the
    paper's update) warm-started from the previous posterior, the precisions held at the
    prior while there are no more patterns than weights, and a second state restarted from
    the neutral point that replaces the model's when its lower bound is higher. The work per
    sample is O(M²) with M = inputs + 1, whatever the number of samples (worst case in the
    schedule module). ``learn_many`` and ``refine`` sweep until the weights stop changing:
    the batch VBLS fixed point on the data in memory, which one pass of ``learn_one``
    tracks. The bias has a flat prior (no shrinkage; the paper assumes centred targets).

    Inputs whose weight the ARD prior switches off are reported by :meth:`relevance`; the
    rule is in :mod:`onlinesparse.vbls.engine`: an input is relevant while the precision its
    data give its weight exceeds the prior's, ``s⟨α_m⟩/Σx_m² < relevance_threshold``.

    Parameters
    ----------
    prior
        ``"ard"`` (one precision per weight, 4.2), ``"shared"`` (one precision, ridge-like,
        4.1) or ``"none"`` (probabilistic backfitting, 3.1: converges to least squares).
    sweeps_per_sample
        Fixed-point sweeps after each ``learn_one`` (and as many for the restart): more
        track a moving fixed point more closely, each costs O(M²).
    memory
        ``"adaptive"`` (default): a window of ``window_size`` that forgets the patterns
        before a change of the stream the prequential errors show
        (:mod:`onlinesparse.stream.memory`, the same as
        :class:`~onlinesparse.SparseRBFRegressor`'s); or ``"forgetting"``, ``"window"``,
        ``"unbounded"`` (see :class:`~onlinesparse.orr.window.WindowStatistics`).
        Forgetting tracks a drift at the price of the accuracy more patterns would give on
        a stationary stream; adaptive memory keeps them until a change, at the price of a
        recomputation (O(W·M²)) on the sample that detects it, and of the stream layer's
        O(M²) per sample (``coverage``). Chosen on ``benchmarks/vbls_stream.py``: adaptive
        is within 1.05× lin-1 on every stationary stream there and better than river's
        LinearRegression on every drifting one, and ahead of forgetting on six of eight.
    window_size
        Number of patterns of a ``"window"`` (the most an ``"adaptive"`` memory keeps).
    horizon
        With a window (``"adaptive"``, ``"window"``), how far back in samples a full
        window may reach: one sample in a stride measured on the stream enters it, 1 where
        consecutive inputs are as unlike as any two, more on a trajectory sampled fast
        (``stream.memory.Horizon``, as :class:`~onlinesparse.SparseRBFRegressor`'s).
        ``None`` (default): ``window_size``, the last ``window_size`` samples. Unlike the
        RBF network, a linear model fits a wandering operating point locally, and a window
        spread over a random walk of the inputs — smooth as a trajectory within one
        window — fits a line to a wider region: on ``benchmarks/vbls_stream.py``'s
        wandering robot, 1.122× river's LinearRegression with 20 windows against 0.858×
        with one (the 100 Hz Panda stream of ``benchmarks/memory_alarms.py``: RMSE 0.1034
        against 0.1031).
    forgetting_factor
        Factor of ``"forgetting"`` memory; ``None``: ``1 − 1/(5M)`` for M weights (an
        effective memory of five patterns per weight, :data:`MEMORY_PER_WEIGHT`). Closer to 1
        is more accurate on stationary data and slower to follow a drift.
    precision_cap
        Largest ratio of a weight's prior precision to its data precision (see the engine
        module: it keeps the fixed point finite and pruning reversible).
    relevance_threshold
        An input is relevant while its precision ratio is below this.
    tol
        ``learn_many`` and ``refine`` stop when the relative change of the weights stays
        below this for three sweeps.
    max_sweeps
        Most sweeps ``learn_many`` and ``refine`` run.
    restart_every
        Samples a restart from the neutral point runs beside the model before the one with
        the higher lower bound is kept (0: never). Restarts let the model leave a fixed point
        reached on few patterns; they double the work per sample.
    factorisation
        ``"gaussian"`` (default): ``Q(b)Q(α)``, sections 4.1–4.2, with the online schedule;
        ``"student_t"``: ``Q(b, α)`` of section 4.3 (:mod:`onlinesparse.vbls.student_t`),
        whose weights have Student-t marginals, relevance by a t-test and a Student-t
        predictive; its sweeps are the paper's EM (the fixed-point schedule is derived for
        the factorised model only), so one pass follows the batch fit more loosely.
    strict
        Passed to :class:`~onlinesparse.features.FeatureMap`: raise on missing or unseen
        features instead of imputing / ignoring them.
    coverage
        The central probability the stream layer (:mod:`onlinesparse.stream`) calibrates
        the predictive interval to online; with it the layer follows a wandering level of
        the errors and weighs the model against the running mean and the last target, as
        :class:`~onlinesparse.SparseRBFRegressor` does (O(M²) more per sample). ``None``
        (default): 0.95 with ``memory="adaptive"``, which needs the layer; with another
        memory, no layer (``with_dist=True`` is the model's own predictive, eq. 4.12).
    last_target
        With the layer, whether the last target is an expert beside the model
        (:class:`~onlinesparse.SparseRBFRegressor`'s ``last_target``): False for a model
        queried at inputs of its owner's choosing whose output comes back as the target.
    concepts
        With ``memory="adaptive"``, how many of the models a change ended are kept frozen
        to predict again if their stretch returns (:mod:`onlinesparse.stream.concepts`);
        each costs M numbers and O(M) per sample while it is awake.

    Attributes
    ----------
    n_memory_cuts
        How many times the adaptive memory has cut the window after a change of the stream
        (``memory="adaptive"``). An alarm the refit refuses is not a cut.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinesparse.vbls import VBLSRegressor
    >>> model = preprocessing.StandardScaler() | VBLSRegressor()
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.19...

    The ARD prior reports which inputs matter, and the predictive distribution (eq. 4.12):

    >>> vbls = model["VBLSRegressor"]
    >>> sum(vbls.relevance().values()) <= len(vbls.relevance())
    True
    >>> x, _ = next(iter(datasets.TrumpApproval()))
    >>> dist = model.predict_one(x, with_dist=True)
    >>> dist.sigma > 0
    True
    """

    # The first target learned: targets enter the statistics as differences from it and
    # predictions add it back, so that a target far from 0 (an encoder count) keeps its
    # digits (docs/numerics.md §8).
    _target_reference = 0.0

    def __init__(self, prior: str = "ard", sweeps_per_sample: int = 1,
                 memory: str = "adaptive", window_size: int = 1000,
                 forgetting_factor: float | None = None, precision_cap: float = 10.0,
                 relevance_threshold: float = 1.0, tol: float = 1e-10,
                 max_sweeps: int = 20_000, restart_every: int = 20,
                 factorisation: str = "gaussian", strict: bool = False,
                 coverage: float | None = None, concepts: int = 0,
                 last_target: bool = True, horizon: int | None = None) -> None:
        check_choice("prior", prior, engine.PRIORS)
        check_choice("memory", memory, (*MEMORY_POLICIES, "adaptive"))
        if coverage is not None:
            check_real("coverage", coverage, 0.0, 1.0, low_open=True, high_open=True)
        check_int("concepts", concepts, 0)
        check_int("window_size", window_size)
        if horizon is not None:
            check_int("horizon", horizon)
        check_int("sweeps_per_sample", sweeps_per_sample, 0)
        if forgetting_factor is not None:
            check_real("forgetting_factor", forgetting_factor, 0.0, 1.0, low_open=True)
        check_real("precision_cap", precision_cap, 0.0, low_open=True)
        check_int("restart_every", restart_every, 0)
        check_choice("factorisation", factorisation, FACTORISATIONS)
        if factorisation == "student_t" and prior == "none":
            raise ValueError("factorisation='student_t' needs a prior ('ard' or 'shared')")
        self.prior = prior
        self.sweeps_per_sample = sweeps_per_sample
        self.memory = memory
        self.window_size = window_size
        self.forgetting_factor = forgetting_factor
        self.precision_cap = precision_cap
        self.relevance_threshold = relevance_threshold
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.restart_every = restart_every
        self.factorisation = factorisation
        self.strict = strict
        self.coverage = coverage
        self.concepts = concepts
        self.last_target = last_target
        self.horizon = horizon
        self._features = FeatureMap(strict=strict)
        self._layer: StreamLayer | None = None
        # (which samples a window keeps: by default the last window_size; with a longer
        # horizon, one in a stride on a trajectory sampled fast)
        self._horizon = (Horizon.of(window_size, window_size if horizon is None else horizon)
                         if memory in ("adaptive", "window") else None)
        if coverage is not None or memory == "adaptive":
            self._layer = StreamLayer(0.95 if coverage is None else coverage, last_target)
            self._adaptive = (AdaptiveMemory(window_size, self._horizon)
                              if memory == "adaptive" else None)
            self._concepts = self._layer.concept_memory(concepts, min(LASTED, window_size))
        self._n_learned = 0
        self._stats: WindowStatistics | None = None
        self._state: engine.VBLSState | None = None
        self._schedule: schedule.OnlineSchedule | None = None

    # -- internals --------------------------------------------------------------------------
    @property
    def effective_forgetting_factor(self) -> float:
        """The forgetting factor in use: 1 for a memory that does not forget
        (``"adaptive"``, ``"window"``, ``"unbounded"``); for ``"forgetting"``,
        ``forgetting_factor``, or by default ``1 − 1/(MEMORY_PER_WEIGHT·M)`` for the
        M = inputs + 1 weights (1 before any data)."""
        if self.memory != "forgetting":
            return 1.0
        if self.forgetting_factor is not None:
            return float(self.forgetting_factor)
        if self._stats is None:
            return 1.0
        return 1.0 - 1.0 / (MEMORY_PER_WEIGHT * self._stats.n_model)

    def _new_statistics(self, n_features: int) -> WindowStatistics:
        factor = self.forgetting_factor
        if factor is None:
            factor = 1.0 - 1.0 / (MEMORY_PER_WEIGHT * (n_features + 1))
        # The linear model never reads stored patterns (no candidate columns): a forgetting
        # memory keeps only the statistics (a tolerance of 1 stores one pattern).
        memory = "window" if self.memory == "adaptive" else self.memory
        stats = WindowStatistics(n_features, memory=memory, size=self.window_size,
                                 factor=factor,
                                 tolerance=1.0 if self.memory == "forgetting" else 1e-12)
        # Column 0 is the bias, column 1 + i the i-th input in FeatureMap order.
        stats.add_column(BasisSpec.constant())
        stats.promote(0)
        for i in range(n_features):
            stats.add_column(BasisSpec.linear(i))
            stats.promote(i + 1)
        return stats

    def _admits(self, stats: WindowStatistics, learned: int) -> bool:
        """Whether the memory ``stats`` takes in sample ``learned`` (the samples learned
        before it; ``stream.memory.Horizon``): a sample it does not take still moves the
        sweeps and the stream layer."""
        horizon = self._horizon
        return horizon is None or horizon.admits(stats.n_stored, learned, stats)

    def _push(self, stats: WindowStatistics, vector: np.ndarray, y: float) -> None:
        if stats.is_full:
            stats.pop_oldest()
        # The row of a linear basis is the input behind a 1: cheaper than evaluating specs.
        stats.push(vector, y, np.concatenate(([1.0], vector)))
        # Adding and subtracting patterns accumulates rounding: a full window recomputes its
        # statistics from the stored rows a column at a time, about once per window for
        # each (WindowStatistics.refresh_step; FGCV 3.2 point 5).
        stats.refresh_step()

    @property
    def _student(self) -> bool:
        return self.factorisation == "student_t"

    def _centred(self) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, float]:
        """The section 4.3 model's statistics (:func:`~onlinesparse.vbls.student_t.centre`)."""
        stats = self._stats
        return student_t.centre(stats.gram_model, stats.cross_y_model, stats.yy)

    def _sweep(self) -> None:
        """The online schedule of :mod:`onlinesparse.vbls.schedule` for one sample (the
        Student-t model: ``sweeps_per_sample`` of its EM sweeps)."""
        stats = self._stats
        if self._student:
            gram, cross, yy, _, _ = self._centred()
            if stats.count <= self._state.n_units:
                # No lock-in while p ≤ M (as the schedule's warm-up): the EM starts from the
                # neutral point once the data can determine the weights.
                self._state = student_t.initial_state(
                    self._state.n_units, (yy if yy > 0.0 else stats.yy) / stats.count,
                    self.prior)
                return
            for _ in range(self.sweeps_per_sample):
                student_t.sweep(self._state, gram, cross, yy, stats.count, self.prior)
            return
        if self._schedule is None:
            self._schedule = schedule.OnlineSchedule(self.prior, self.precision_cap,
                                                     self.sweeps_per_sample, self.restart_every)
        self._state = self._schedule.step(self._state, stats.gram_model, stats.cross_y_model,
                                          stats.yy, stats.count)

    def _ensure_state(self) -> None:
        stats = self._stats
        if self._state is None and stats is not None and stats.count > 0 and self._student:
            _, _, yy, _, _ = self._centred()
            self._state = student_t.initial_state(
                stats.n_model - 1, (yy if yy > 0.0 else stats.yy) / stats.count, self.prior)
        elif self._state is None and stats is not None and stats.count > 0:
            # The bias (column 0) has a flat prior: no shrinkage towards 0 (Ting et al.
            # assume centred targets).
            self._state = engine.initial_state(stats.n_model, stats.yy / stats.count,
                                               self.prior, n_flat=1)

    # -- river API --------------------------------------------------------------------------
    @single_blas_thread
    def learn_one(self, x: dict, y: float) -> None:
        """Add one pattern to the statistics and run ``sweeps_per_sample`` EM sweeps.

        Bad input raises ``ValueError`` naming the feature and leaves the model unchanged.
        """
        target = _as_target(y)
        vector = self._features.transform(x, learning=True)
        if self._stats is None:
            self._target_reference = target
        target -= self._target_reference
        made = self._model_predictive(vector) if self._layer is not None else None
        stats = self._stats if self._stats is not None else self._new_statistics(len(vector))
        if self._admits(stats, self._n_learned):
            self._push(stats, vector, target)
        self._stats = stats
        self._ensure_state()
        self._sweep()
        self._features.commit(vector, x)
        self._n_learned += 1
        if self._layer is not None:
            self._observe(vector, target, made)

    def _observe(self, vector: np.ndarray, target: float,
                 made: tuple[float, float, float] | None) -> None:
        """The stream layer's step on this target (:meth:`_observe_target`), then the
        memory's response to an alarm."""
        self._observe_target(vector, target, made)
        if self._layer.after_learning(self._adaptive, self._concepts, self, self._freeze,
                                      self._n_learned):
            self.n_memory_cuts += 1

    def _observe_target(self, vector: np.ndarray, target: float,
                        made: tuple[float, float, float] | None) -> None:
        """The stream layer's step on this target (:meth:`StreamLayer.learn`): the model's
        error before learning, its noise and the relative variance of its estimate at the
        input; then the kept concepts' evidence."""
        stats, layer = self._stats, self._layer
        count, total, variance = stats.count, stats.sum_y, target_variance(
            stats.record, stats.targets.moments, 0)
        if made is None:
            layer.learn_without_model(target, count, total, variance)
        else:
            mean, var, noise = made
            layer.learn(target - mean, noise, max(var - noise, 0.0) / noise, target, count,
                        total, variance)
            layer.judge_concepts(self._concepts, vector, target, target - mean, noise, count,
                                 self._n_learned)

    n_memory_cuts = 0

    # -- the adaptive memory's protocol (stream.memory.Forgetful) ---------------------------
    @property
    def n_stored(self) -> int:
        return 0 if self._stats is None else int(self._stats.n_stored)

    @property
    def n_parameters(self) -> int:
        """What the adaptive memory must keep patterns for: ``MEMORY_PER_WEIGHT`` per
        weight, the memory the forgetting default gives each weight. A cut to fewer left the
        ARD posterior of a weight whose input barely varied in memory overconfident and far
        from 0 (TrumpApproval's prediction missed by 37 after an input jumped)."""
        return 0 if self._stats is None else MEMORY_PER_WEIGHT * int(self._stats.n_model)

    def ridge_view(self) -> RidgeView | None:
        """The window as a ridge regression (:class:`~onlinesparse.stream.refit.RidgeView`:
        the stored rows, the targets, :meth:`~onlinesparse.vbls.engine.VBLSState.\
ridge_penalty` at the model's noise); None before the first sweep."""
        if self._state is None:
            return None
        # (the Student-t factorisation's units leave out the bias: the refit's constant)
        return self._stats.ridge_view(self._state.ridge_penalty(self._noise()),
                                      first=int(self._student))

    def stored_inputs(self) -> np.ndarray:
        """The window's stored inputs, oldest first (``stream.memory.StoresInputs``)."""
        return np.zeros((0, 0)) if self._stats is None else self._stats.stored_inputs()

    def forget_oldest(self, k: int) -> None:
        """Forget the ``k`` oldest patterns (the statistics recomputed from the rest) and
        refit from the neutral point: the posterior of the patterns before a change is no
        start for the ones after it."""
        self._stats.drop_oldest(k)
        self._restart()

    def _restart(self) -> None:
        """Refit from the neutral point on the statistics as they are now."""
        self._state = None
        self._schedule = None
        self._ensure_state()
        self._sweep()

    def _freeze(self) -> tuple[FrozenLinear, float] | None:
        """The model as it stands (targets measured from the first one) and its noise."""
        if self._state is None:
            return None
        return FrozenLinear(self.intercept - self._target_reference,
                            np.array(list(self.weights.values()))), self._noise()

    def _noise(self) -> float:
        """The noise variance of a prediction (eq. 4.12 without the weights' variance)."""
        state = self._state
        if self._student:
            return float(state.output_noise
                         + np.sum(state.branch_noise / state.precisions))
        return state.total_noise

    def _model_predictive(self, vector: np.ndarray) -> tuple[float, float, float] | None:
        """The model's mean and variance at ``vector`` (targets measured from the first
        one), returned toward the targets' mean where its estimate is uncertain
        (:meth:`StreamLayer.shrink`: a linear fit to a short memory extrapolates), and its
        noise variance; None before a model exists."""
        if self._state is None:
            return None
        if self._student:
            mean, var, _ = self._student_moments(vector)
        else:
            mean, var = engine.predictive_regression(self._state,
                                                     np.concatenate(([1.0], vector)))
        stats, noise = self._stats, self._noise()
        mean, var = self._layer.shrink(mean, var, noise, stats.count,
                                       stats.sum_y,
                                       target_variance(stats.record, stats.targets.moments, 0))
        return mean, var, noise

    @single_blas_thread
    def learn_many(self, X: Iterable[Mapping[Hashable, object]] | object,
                   y: Iterable[object]) -> None:
        """Add many patterns, then sweep to the VBLS fixed point (the batch fit).

        ``X`` is a pandas ``DataFrame`` (or any iterable of feature dicts) and ``y`` the
        matching targets. Every row is validated before anything changes. This is not river's
        mini-batch ``learn_many`` (which must equal repeated ``learn_one``): it fits to
        convergence, which repeated ``learn_one`` reaches only after ``refine``.
        """
        rows = as_rows(X)
        targets = [_as_target(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]
        if len(rows) != len(targets):
            raise ValueError(f"{len(rows)} rows of features but {len(targets)} targets")
        features, vectors = self._features.rehearse(rows)
        if not vectors:
            return
        if self._stats is None:
            self._target_reference = targets[0]
        stats = self._stats if self._stats is not None else self._new_statistics(
            len(vectors[0]))
        for vector, target in zip(vectors, targets, strict=True):
            self._push(stats, vector, target - self._target_reference)
        self._stats = stats
        self._features = features
        self._n_learned += len(vectors)
        self._ensure_state()
        self.refine()
        if self._layer is not None:
            # (a batch fit did not earn its weight against the running mean sample by
            # sample: it predicts with its own fit, as SparseRBFRegressor.from_batch does)
            self._layer.trust_the_model()

    @single_blas_thread
    def refine(self, max_sweeps: int | None = None) -> int:
        """Spend idle time on the batch fixed point of the data in memory; returns the
        number of sweeps run.

        Fixed-point sweeps with exact solves (:func:`~onlinesparse.vbls.schedule.
        fit_fixed_point`, O(M³) each) until the weights change by less than ``tol`` (or
        ``max_sweeps``), from the current state and, unless the state is still the neutral
        one, from the neutral point as well (the fit :meth:`learn_many` makes on a new
        model); the one with the higher variational lower bound is kept.
        """
        if self._state is None:
            return 0
        stats = self._stats
        budget = self.max_sweeps if max_sweeps is None else max(int(max_sweeps), 0)
        if self._student:
            gram, cross, yy, _, _ = self._centred()
            return student_t.fit(self._state, gram, cross, yy, stats.count, self.prior,
                                 self.tol, budget)
        args = (stats.gram_model, stats.cross_y_model, stats.yy, stats.count)
        done = schedule.fit_fixed_point(self._state, *args, self.prior, self.precision_cap,
                                        self.tol, budget)
        if self._state.n_sweeps != done:  # (not started from the neutral point)
            fresh = schedule.neutral_state(stats.n_model, stats.yy, stats.count, self.prior,
                                           self._state.n_flat)
            done += schedule.fit_fixed_point(fresh, *args, self.prior, self.precision_cap,
                                             self.tol, budget)
            if (engine.lower_bound_regression(fresh, *args, self.prior)
                    > engine.lower_bound_regression(self._state, *args, self.prior)):
                fresh.n_sweeps = done
                self._state = fresh
        return done + self._readmit(args, budget)

    def _readmit(self, args: tuple, budget: int) -> int:
        """Offer the inputs at the precision cap back (:func:`~onlinesparse.vbls.schedule.
        readmission`, Tipping and Faul's test given the others) and keep the fixed point
        reached from there while its lower bound is higher; at most
        :data:`_READMIT_ROUNDS` rounds of O(M³) plus their sweeps. Returns the sweeps run.

        The factorised posterior lets a unit at the cap back only when its t-statistic
        given the others exceeds about √11 (schedule module), the marginal likelihood
        already at 1: on the 200-input design of benchmarks/vbls_synthetic.py the batch fit
        stopped, in three trials of five, where re-admitting raised the lower bound."""
        if self.prior != "ard":
            return 0
        done = 0
        best = engine.lower_bound_regression(self._state, *args, self.prior)
        for _ in range(_READMIT_ROUNDS):
            trial = schedule.readmission(self._state, args[0], args[1], self.precision_cap)
            if trial is None:
                break
            done += schedule.fit_fixed_point(trial, *args, self.prior, self.precision_cap,
                                             self.tol, budget)
            bound = engine.lower_bound_regression(trial, *args, self.prior)
            if not bound > best:
                break
            self._state, best = trial, bound
        return done

    def predict_one(self, x: dict, with_dist: bool = False) -> float | proba.Gaussian:
        """Posterior mean, or with ``with_dist`` the Gaussian predictive of eq. 4.12.

        Before any data: 0, or a standard normal.
        """
        return self._predict_vector(self._features.transform(x), with_dist)

    def _predict_vector(self, vector: np.ndarray, with_dist: bool
                        ) -> float | proba.Gaussian | student_t.StudentT:
        """:meth:`predict_one` of a validated input."""
        if self._state is None:
            return gaussian(0.0, 1.0) if with_dist else 0.0
        if self._layer is not None:
            return self._predict_through_layer(vector, with_dist)
        if self._student:
            return self._predict_student(vector, with_dist)
        row = np.concatenate(([1.0], vector))
        mean, var = engine.predictive_regression(self._state, row)
        if not (math.isfinite(mean) and (math.isfinite(var) or not with_dist)):
            raise self._features.overflow(vector)
        mean += self._target_reference
        if with_dist:
            return gaussian(mean, var)
        return mean

    def _predict_through_layer(self, vector: np.ndarray, with_dist: bool
                               ) -> float | proba.Gaussian | student_t.StudentT:
        """The prediction as made by the stream layer (:meth:`StreamLayer.predict`:
        calibration, the errors' level, the running mean) and the kept concepts; a
        Student-t predictive keeps its degrees of freedom."""
        mean, var, _ = self._model_predictive(vector)
        if not (math.isfinite(mean) and (math.isfinite(var) or not with_dist)):
            raise self._features.overflow(vector)
        mean, var = self._layer.predict(mean, var)
        if self._concepts.kept:
            mean, var = self._concepts.blend(vector, mean, var, self._layer.model_weight)
        mean += self._target_reference
        if not with_dist:
            return mean
        if self._student:
            return self._student_distribution(mean, var, self._student_moments(vector)[2])
        return gaussian(mean, var)

    def _student_moments(self, vector: np.ndarray) -> tuple[float, float, float]:
        """The section 4.3 predictive's mean (targets measured from the first one),
        variance and degrees of freedom (:func:`~onlinesparse.vbls.student_t.predictive` on
        the centred inputs, plus the mean of the targets, the centred problem's bias)."""
        count = self._stats.count
        _, _, _, sums, target_sum = self._centred()
        mean, var, nu = student_t.predictive(self._state, vector - sums / count)
        return mean + target_sum / count, var, nu

    @staticmethod
    def _student_distribution(mean: float, var: float, nu: float) -> student_t.StudentT:
        scale2 = var * (nu - 2.0) / nu if math.isfinite(nu) and nu > 2.0 else var
        return student_t.StudentT(mean, math.sqrt(max(scale2, 0.0)), nu)

    def _predict_student(self, vector: np.ndarray, with_dist: bool
                         ) -> float | student_t.StudentT:
        """The section 4.3 predictive on its own (:meth:`_student_moments`)."""
        mean, var, nu = self._student_moments(vector)
        mean += self._target_reference
        if not with_dist:
            return mean
        return self._student_distribution(mean, var, nu)

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        """The posterior mean of every row of ``X``, as river's ``predict_many``: a ``Series``
        on ``X``'s index, exactly :meth:`predict_one` row by row; nothing is learned."""
        return predict_series(self.predict_one, X)

    # -- inspection -------------------------------------------------------------------------
    def _ratios(self) -> np.ndarray:
        if self._state is None:
            return np.zeros(self._features.n_features + 1)
        if self._student:  # the t-test decides; 0 (relevant) / inf (not), the bias first
            return np.concatenate(([0.0], np.where(student_t.relevant(self._state), 0.0,
                                                   np.inf)))
        return engine.precision_ratio(self._state, np.diagonal(self._stats.gram_model))

    @property
    def weights(self) -> dict[Hashable, float]:
        """Posterior mean ⟨b_m⟩ of each input's weight."""
        if self._state is None:
            return {name: 0.0 for name in self._features.names}
        return self._features.to_dict(self._state.weights[int(not self._student):])

    @property
    def intercept(self) -> float:
        if self._state is None:
            return 0.0
        if self._student:
            _, _, _, sums, target_sum = self._centred()
            return float((target_sum - sums @ self._state.weights) / self._stats.count
                         + self._target_reference)
        return float(self._state.weights[0]) + self._target_reference

    def precisions(self) -> dict[Hashable, float]:
        """Posterior mean ⟨α_m⟩ of each input's prior precision (4.3 / 4.7)."""
        if self._state is None:
            return {name: 1.0 for name in self._features.names}
        return self._features.to_dict(self._state.precisions[int(not self._student):])

    def relevance(self) -> dict[Hashable, bool]:
        """Every input seen → relevant (True) or judged irrelevant (False).

        Relevant while ``s⟨α_m⟩/Σx_m² < relevance_threshold``: the data's precision on the
        weight exceeds the prior's (with the default threshold 1, the weight keeps more than
        half of its unregularised value). With ``factorisation="student_t"``: the t-test of
        Ting et al. (footnote 5) on the Student-t marginal of the weight rejects b_m = 0 at
        the 5 % level. Before any data every input is relevant.
        """
        ratios = self._ratios()[1:]
        return {name: bool(r < self.relevance_threshold)
                for name, r in zip(self._features.names, ratios, strict=True)}

    def input_relevance(self) -> dict[Hashable, float]:
        """Every input → ``1/(1 + s⟨α_m⟩/Σx_m²)`` in [0, 1]: the fraction of its
        unregularised weight the prior lets it keep (1: the data decide; near 0: pruned).
        Scale-free; above ``1/(1 + relevance_threshold)`` exactly when :meth:`relevance` says
        True. With ``factorisation="student_t"``: one minus the two-sided p-value of the
        t-test on the weight (above 0.95 exactly when :meth:`relevance` says True)."""
        if self._student and self._state is not None:
            nu = student_t.degrees_of_freedom(self._state)
            p_value = 2.0 * special.stdtr(nu, -student_t.t_statistics(self._state))
            return self._features.to_dict(1.0 - p_value)
        ratios = self._ratios()[1:]
        return self._features.to_dict(1.0 / (1.0 + ratios))

    def diagnostics(self) -> dict[str, float]:
        """Numbers for a replay report.

        ``n_basis`` relevant basis functions (the bias included), ``noise_std``
        ``√(ψ_y + Σψ_zm)``, ``output_noise_std`` ``√ψ_y``, ``n_patterns``, ``n_sweeps``,
        ``last_change`` (relative change of the weights in the last sweep) and
        ``lower_bound`` (the variational bound F).
        """
        if self._state is None:
            return {"n_basis": 0.0, "noise_std": 0.0, "output_noise_std": 0.0,
                    "n_patterns": 0.0, "n_sweeps": 0.0, "last_change": 0.0,
                    "lower_bound": 0.0}
        state, stats = self._state, self._stats
        ratios = self._ratios()
        noise = self._noise()
        return {
            "n_basis": float(np.sum(ratios < self.relevance_threshold)),
            "noise_std": math.sqrt(noise),
            "output_noise_std": math.sqrt(state.output_noise),
            "n_patterns": float(stats.count),
            "n_sweeps": float(state.n_sweeps),
            "last_change": float(state.last_change) if math.isfinite(state.last_change)
            else 0.0,
            "lower_bound": math.nan if self._student else engine.lower_bound_regression(
                state, stats.gram_model, stats.cross_y_model, stats.yy, stats.count,
                self.prior),
        }
