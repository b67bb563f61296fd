"""VBLS on kernel basis functions (the VBLS-RVM of Ting et al. 5.2), grown and pruned online.

The weights are fitted by the VBLS engine (:mod:`onlinesparse.vbls.engine`, eqs. 4.7–4.8 on the
window statistics); the kernel centres come from the shared
:class:`~onlinesparse.orr.buffer.BufferManager`; the ARD precisions decide which kernels stay.

Why the online path (factorised posterior, O(M²) sweeps) and the batch path (full
covariance of eq. 5.2, :mod:`onlinesparse.vbls.kernel_batch`) differ is explained there.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping

import numpy as np
import pandas as pd
from river import base, proba

from onlinesparse._blas import single_blas_thread
from onlinesparse._distributions import gaussian
from onlinesparse._validation import Versioned, check_choice, check_int, check_radii, check_real
from onlinesparse.features import FeatureMap, as_rows
from onlinesparse.orr.buffer import BufferManager
from onlinesparse.orr.input_metric import prediction_moves
from onlinesparse.orr.kernels import KERNELS, BasisSpec
from onlinesparse.orr.window import WindowStatistics
from onlinesparse.stream.refit import RidgeView
from onlinesparse.vbls import _compiled, admission, engine, kernel_batch, proposals
from onlinesparse.vbls._many import predict_series
from onlinesparse.vbls.evidence import (  # noqa: F401  (re-exported: the public home before)
    evidence_hyperparameters,
    evidence_length_scale,
    gp_log_evidence,
)
from onlinesparse.vbls.regressor import _as_target

__all__ = ["VBLSKernelRegressor", "evidence_hyperparameters", "evidence_length_scale",
           "gp_log_evidence"]

# Radii as multiples of √d for standardised inputs (the typical distance between two
# standardised points is √(2d)), used before the data have chosen a width:
# * the online pool's ladder until a batch fit (``refine``/``learn_many``) replaces it. It
#   reaches half an octave below the batch ladder: grown one kernel at a time under the
#   factorised posterior, the online model cannot build a feature narrower than its
#   narrowest kernel out of overlapping broader ones (kernel_batch), the batch fit can;
_AUTO_RADII = (0.5, math.sqrt(0.5), math.sqrt(2.0))
# The batch fit's width rules (``width``): see :func:`kernel_batch.batch_metric`.
_WIDTHS = kernel_batch.WIDTHS
# A unit counts as "at the precision cap" when its ratio is within this of the cap.
_AT_CAP = 1.0 - 1e-6


class VBLSKernelRegressor(Versioned, base.Regressor):
    """Sparse kernel regression by variational Bayesian least squares, one sample at a time.

    The VBLS-RVM of Ting, D'Souza, Vijayakumar and Schaal (section 5.2): the prediction is
    ``b₀ + Σ_m b_m k(x, c_m)``, a linear model on kernel basis functions
    ``f_m(x) = k(x, c_m)`` (eq. 5.1 with f_m = k(·, x_m)), each weight with its own
    Gaussian prior whose precision α_m has a flat Gamma hyper-prior (ARD, section 4.2), the
    posterior fitted by the EM sweeps of probabilistic backfitting (eqs. 4.7 and 4.8, see
    :mod:`onlinesparse.vbls.engine`). The batch RVM puts one kernel on every training input;
    a stream has no "every input", so the basis set is grown and pruned instead — the two
    optimisations of Tipping (2001) and Tipping and Faul (2003) the paper mentions in 5.2 as
    "easy to introduce into our framework":

    * **Proposal.** The shared :class:`~onlinesparse.orr.buffer.BufferManager` proposes an input
      as a centre when it is novel (far from every tracked centre) or badly predicted (error
      above ``error_threshold`` predictive standard deviations, eq. 4.12); each proposal
      enters a candidate pool once per radius. The pool's cross statistics with the model
      (``Hᵀφ``, ``φᵀφ``, ``φᵀy``) live in the same
      :class:`~onlinesparse.orr.window.WindowStatistics` as the model's. A column that the next
      radius's column would evict from a full pool before it is ever scored is not
      computed (:mod:`onlinesparse.vbls.proposals`).
    * **Admission.** While the model has fewer than ``max_basis`` basis functions, the
      candidate that raises the marginal likelihood most is admitted when its statistic
      ``t² = Q²/S`` exceeds ``admit_threshold`` (1 is Tipping and Faul's inclusion test
      ``Q² > S``; the default is 2, see the parameter). ``S = φᵀC⁻¹φ`` and
      ``Q = φᵀC⁻¹y`` use the marginal covariance ``C = sI + HA⁻¹Hᵀ`` of the current
      model, i.e. the RVM posterior of eq. 5.2 with ``⟨α⟩`` and s = ``ψ_y + Σψ_zm``: t²
      is the squared t-statistic of φ on the residual with the model's columns projected
      out, read from the window statistics in
      O(M³ + M²·C) for M basis functions and C candidates
      (:mod:`onlinesparse.vbls.admission`). The new unit starts at Tipping and Faul's
      optimum ``α = S²/(Q² − S)``, and every weight jumps to the fixed point of eq. 4.8
      for the new precisions (O(M²), from the scoring's Cholesky factor bordered by the new
      row), so that the kernels already in the model make room for it at once; the ARD
      precisions then decide.
    * **Pruning.** The precision of a basis function that does not explain the data grows
      without bound under the factorised posterior (engine module); it stops at
      ``precision_cap`` times the data's precision. A kernel whose precision has stayed at
      the cap for ``prune_after`` consecutive sweeps is removed from the model ("⟨α_m⟩
      diverges"); its branch noise ψ_zm moves to ψ_y so that the noise variance s is
      continuous. A kernel whose data have left the window has no data precision and goes
      the same way.

    The sweeps run on the *centred* basis ``[1, f_1 − μ_1, …]`` (μ_m the window mean of
    f_m): the same model (the ARD priors of the kernel weights are unchanged, only the bias
    moves), but the constant is no longer nearly collinear with the broad kernels, which
    backfitting converges on very slowly. Weights are reported for the raw kernels.

    Memory is a window of the last ``window_size`` patterns (a new candidate's column must be
    evaluated over the patterns in memory). Each ``learn_one`` adds the pattern to the
    window statistics (O(M² + C·M)), lets the buffer manager compute at most one proposal's
    columns over the window (O(W·(M + C + d)) per radius that will stay in the pool), scores
    the pool and admits at most one candidate (O(M³ + M²·C)), and runs
    ``sweeps_per_sample`` warm-started EM sweeps,
    O(M²) each: the work per sample is bounded by ``max_basis``, ``n_candidates``,
    ``window_size`` and ``sweeps_per_sample``.

    :meth:`refine` (and :meth:`learn_many`, which adds the patterns and then refines) is the
    batch fit of the window, the VBLS-RVM of 5.2 run as the paper runs it: a kernel of every
    radius on every stored pattern (at most ``max_start`` kernels), all precisions updated
    every sweep, kernels whose ⟨α_m⟩ diverges pruned; but with the full posterior covariance
    of eq. 5.2 in the precision update (the factorised one under-fits, see kernel_batch),
    the updates taken at their fixed-point form, and a stop when the log-precisions change
    by less than ``tol``. The model is then rebuilt on the kept kernels and the online path
    continues from it.

    Kernel width and input metric. Kernels of several radii compete for the same data: every
    proposed centre enters the pool at each radius of a ladder, the admission test picks the
    width that explains the residual best, and ARD prunes the ones that stop mattering; the
    batch fit starts from every width. With ``radii=None`` the batch fit chooses the distance
    metric by the evidence of a Gaussian process (``width``, the route Ting et al. recommend
    after eq. 5.4; the rules are in :mod:`onlinesparse.vbls.kernel_batch`); with
    ``width="ard"`` every input, stored and future, is then divided by its length scale
    (:attr:`input_scales`) before a kernel sees it. Online, before any batch fit, the input
    scales are 1 and the pool's ladder is ``(1/2, 1/√2, √2)·√d`` for standardised inputs
    (put a ``preprocessing.StandardScaler`` in front): around √d, scikit-learn's
    ``gamma="auto"``, and half an octave below the batch ladder, since a model grown one
    kernel at a time cannot build a narrow feature out of broad kernels (without the 1/2 a
    pass over Tipping's sinc got stuck in 3 of 10 trials: nMSE 0.048 against 0.017). After
    a batch fit the pool proposes the batch's radii, in its scaled space.

    Targets. The bias is shrunk towards 0 like every weight, so the model does best on
    targets centred there, and on a target whose mean is far above its spread the window
    statistics lose digits. Put it behind ``preprocessing.TargetStandardScaler`` for such
    a target (``docs/numerics.md`` §8). Measuring the targets from the first one, as
    ``SparseRBFRegressor`` does, cost the one-pass sinc and Boston results here.

    Parameters
    ----------
    max_basis
        Budget on M, the number of basis functions in the model (the constant included).
    window_size
        Number of most recent patterns in memory.
    kernel
        ``"gaussian"`` (``exp(−‖x − c‖²/r²)``), ``"multiquadric"``,
        ``"inverse_multiquadric"`` or ``"cauchy"`` (see :mod:`onlinesparse.orr.kernels`).
    radii
        Kernel radii for every new centre and for the batch fit's start set; ``None``: chosen
        from the data (``width``) for the batch fit, ``(1/2, 1/√2, √2)·√d`` for the online
        pool until then (see "Kernel width" above).
    n_candidates
        Capacity of the candidate pool (columns).
    sweeps_per_sample
        EM sweeps after each ``learn_one``.
    admit_threshold
        A candidate is admitted when its Tipping–Faul statistic ``Q²/S`` (its squared
        t-statistic on the residual, the model projected out) exceeds this. Tipping and
        Faul's test is 1; 2 admits the kernels the factorised sweeps then keep (with 1,
        99.8 % of those admitted below 2 were pruned again: docs/vbls_online.md).
    precision_cap
        Largest ratio ``s⟨α_m⟩/G_mm`` of a weight's prior precision to its data precision
        (engine module); a kernel at the cap is on its way out.
    prune_after
        Consecutive sweeps at the cap after which a kernel is removed.
    relevance_threshold
        ``diagnostics()["n_relevant"]`` counts basis functions with ratio below this.
    novelty, error_threshold
        The buffer manager's proposal rules (see :class:`~onlinesparse.orr.buffer.BufferManager`);
        each proposal costs a column per radius over the window, or a single one when the
        pool is full of scored candidates (the others would be evicted unscored).
    tol
        :meth:`refine` stops when no ⟨α_m⟩ changed by more than this relative amount
        (``|Δlog⟨α_m⟩| < tol``) in a sweep and no kernel was pruned (10⁻³ is the
        ``EMRVR`` default of ``sklearn-rvm``; the weights are then exact for those ⟨α⟩).
    max_sweeps
        Most sweeps one :meth:`refine` (or :meth:`learn_many`) runs.
    max_start
        Most kernels the batch fit starts from (all radii together); a larger window gives
        kernels to evenly spaced stored patterns only. The first sweeps cost O(max_start³).
    width
        How the batch fit chooses its metric and radii when ``radii`` is ``None``: ``"ard"``
        (one length scale per input by the Gaussian-process marginal likelihood on the
        window, radii √2·(1, √2) in the scaled inputs), ``"evidence"`` (one length scale for
        all, radii √2·ℓ̂·(1, √2)) or ``"fixed"`` (``(1/√2, √2)·√d``). See "Kernel width and
        input metric" above.
    candidate_every
        The candidate columns and the admission test run on one ``learn_one`` in this many
        (the others only sweep): cheaper samples, a more slowly growing model.
    strict
        Raise on missing or unseen features instead of imputing / ignoring them (see
        :mod:`onlinesparse.features`).

    Attributes
    ----------
    n_admitted, n_pruned
        Kernels admitted into the model and pruned back out so far.
    input_scales
        The length scales ℓ_i the inputs are divided by (ones until a batch fit with
        ``width="ard"``).

    Examples
    --------
    >>> import math, random
    >>> from river import preprocessing
    >>> from onlinesparse.vbls import VBLSKernelRegressor
    >>> rng = random.Random(0)
    >>> model = preprocessing.StandardScaler() | VBLSKernelRegressor()
    >>> for _ in range(1000):
    ...     x = rng.uniform(-10, 10)
    ...     model.learn_one({"x": x}, math.sin(x) / x + rng.uniform(-0.2, 0.2))
    >>> abs(model.predict_one({"x": 0.5}) - math.sin(0.5) / 0.5) < 0.1
    True
    >>> model["VBLSKernelRegressor"].diagnostics()["n_basis"] < 20
    True
    """

    def __init__(self, max_basis: int = 100, window_size: int = 1000, kernel: str = "gaussian",
                 radii: tuple[float, ...] | None = None, n_candidates: int = 30,
                 sweeps_per_sample: int = 2, admit_threshold: float = 2.0,
                 precision_cap: float = 10.0, prune_after: int = 3,
                 relevance_threshold: float = 1.0, novelty: float = 1.0,
                 error_threshold: float = 2.0, tol: float = 1e-3, max_sweeps: int = 20_000,
                 max_start: int = 1000, width: str = "ard", candidate_every: int = 1,
                 strict: bool = False) -> None:
        self.max_basis = max_basis
        self.window_size = window_size
        self.kernel = kernel
        self.radii = radii
        self.n_candidates = n_candidates
        self.sweeps_per_sample = sweeps_per_sample
        self.admit_threshold = admit_threshold
        self.precision_cap = precision_cap
        self.prune_after = prune_after
        self.relevance_threshold = relevance_threshold
        self.novelty = novelty
        self.error_threshold = error_threshold
        self.tol = tol
        self.max_sweeps = max_sweeps
        self.max_start = max_start
        self.width = width
        self.candidate_every = candidate_every
        self.strict = strict
        self._validate_parameters()
        self._features = FeatureMap(strict=strict)
        self._stats: WindowStatistics | None = None
        self._state: engine.VBLSState | None = None
        self._buffer: BufferManager | None = None
        # Consecutive sweeps each unit has spent at the precision cap (aligned with units).
        self._at_cap = np.zeros(0, dtype=np.int64)
        # Window means μ_m of the model's columns that the state's parametrisation uses.
        self._means = np.zeros(0)
        # Full covariance Σ_b of the last batch fit (eq. 5.2), for the predictive until the
        # next learn_one changes the posterior; None otherwise.
        self._covariance: np.ndarray | None = None
        # The input metric: stored and future inputs are divided by these (one per input)
        # before any kernel sees them; set by a batch fit with width="ard", None (all ones)
        # otherwise.
        self._input_scales: np.ndarray | None = None
        self.n_admitted = 0
        self.n_pruned = 0

    def _validate_parameters(self) -> None:
        check_int("max_basis", self.max_basis)
        check_int("window_size", self.window_size, 2)
        check_int("n_candidates", self.n_candidates)
        check_int("sweeps_per_sample", self.sweeps_per_sample, 0)
        check_int("prune_after", self.prune_after)
        check_int("max_sweeps", self.max_sweeps, 0)
        check_int("max_start", self.max_start)
        check_int("candidate_every", self.candidate_every)
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("width", self.width, _WIDTHS)
        check_radii("radii", self.radii)
        for name in ("admit_threshold", "novelty", "error_threshold", "tol"):
            check_real(name, getattr(self, name), 0.0)
        check_real("precision_cap", self.precision_cap, 0.0, low_open=True)

    @classmethod
    def _unit_test_params(cls) -> Iterable[dict]:
        yield {}

    # -- structure --------------------------------------------------------------------------
    def _start(self, n_features: int,
               radii: tuple[float, ...] | None = None) -> WindowStatistics:
        """Fresh window statistics (the constant in column 0) and buffer manager, whose pool
        proposes kernels of ``radii`` (default: the ``radii`` parameter, else the online
        ladder ``(1/2, 1/√2, √2)·√d``)."""
        radii = radii or self.radii or tuple(
            r * math.sqrt(max(n_features, 1)) for r in _AUTO_RADII)
        stats = WindowStatistics(n_features, memory="window", size=self.window_size)
        stats.add_column(BasisSpec.constant())  # column 0: the bias, never pruned
        stats.promote(0)
        # Each proposal's columns enter the pool together, so the radii compete on equal terms.
        self._buffer = BufferManager(radii=tuple(float(r) for r in radii), kernel=self.kernel,
                                     capacity=self.n_candidates, novelty=self.novelty,
                                     error_threshold=self.error_threshold,
                                     max_new_per_sample=len(radii),
                                     column_every=self.candidate_every)
        return stats

    # -- the centred parametrisation ---------------------------------------------------------
    def _raw_weights(self) -> np.ndarray:
        """Weights of the raw basis ``[1, f_1, …]``: ``b₀ = b₀' − Σ_m b_m μ_m``."""
        weights = self._state.weights.copy()
        weights[0] -= float(weights[1:] @ self._means[1:])
        return weights

    def _statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """``G' = TGTᵀ`` and ``c' = Tc`` of the basis ``[1, f_1 − μ_1, …]`` the state uses
        (``T`` subtracts μ_m times the constant column from column m). O(M²), pure."""
        stats = self._stats
        return _compiled.centred_statistics(np.ascontiguousarray(stats.gram_model),
                                            stats.cross_y_model, self._means)

    def _centred(self) -> tuple[np.ndarray, np.ndarray]:
        """Re-centre on the window's current means and return :meth:`_statistics`.

        ``μ_m = 1ᵀf_m/p`` (so that ``G'_0m = 0``: the constant and the kernels are no longer
        collinear, which backfitting converges slowly on); the ARD prior on the kernel
        weights is unchanged by the shift, and the bias weight moves to keep the prediction:
        ``b₀' ← b₀' + Σ_m b_m(μ_m^new − μ_m^old)``.
        """
        stats, state = self._stats, self._state
        # (compiled, in one pass: _compiled.recentre; G'_0m = 0 exactly, not to rounding)
        weights = np.ascontiguousarray(state.weights, dtype=float)
        gram, cross, self._means = _compiled.recentre(
            stats.gram_model, stats.cross_y_model, float(stats.count), self._means, weights)
        state.weights = weights
        return gram, cross

    def _centred_row(self, row: np.ndarray) -> np.ndarray:
        out = row[: self._stats.n_model] - self._means
        out[0] = 1.0
        return out

    # -- structure --------------------------------------------------------------------------
    def _swap_units(self, i: int, j: int) -> None:
        state = self._state
        for name in ("weights", "weight_variances", "precision_shape", "precision_rate",
                     "branch_noise"):
            arr = getattr(state, name)
            arr[[i, j]] = arr[[j, i]]
        self._at_cap[[i, j]] = self._at_cap[[j, i]]
        self._means[[i, j]] = self._means[[j, i]]
        self._stats.swap_columns(i, j)

    def _prune_unit(self, j: int) -> None:
        """Remove kernel ``j`` from the model and forget its column (Ting et al. 5.2: a basis
        function whose precision diverges is "unneeded")."""
        stats, state = self._stats, self._state
        last = stats.n_model - 1
        self._swap_units(j, last)
        # Keep s = ψ_y + Σψ_zm (and so every step size and the predictive noise) continuous.
        state.output_noise += float(state.branch_noise[last])
        state.drop_unit(last)
        self._at_cap = self._at_cap[:last]
        self._means = self._means[:last]
        stats.demote(last)
        stats.drop_column(last)
        self.n_pruned += 1

    def _score_pool(self) -> admission.PoolScores:
        """Tipping and Faul's inclusion statistic ``t² = Q²/S`` of every candidate with the
        model's columns projected out (:func:`~onlinesparse.vbls.admission.score_pool`:
        ``S = φᵀC⁻¹φ``, ``Q = φᵀC⁻¹y``, ``C = sI + HA⁻¹Hᵀ`` the marginal covariance of the
        targets under the RVM posterior of eq. 5.2 with ``⟨α⟩``, the bias flat, and
        s = ``ψ_y + Σψ_zm``), O(M³ + M²·C). The marginal likelihood has a finite optimum
        for the candidate's precision, ``α = S²/(Q² − S)``, exactly when ``Q² > S``, and the
        likelihood gain of adding it, ``t² − 1 − log t²``, grows with t². The scores go to
        the columns' merit, which evicts the lowest first."""
        stats, state = self._stats, self._state
        m, n = stats.n_model, stats.n_columns
        # (the norms copied: a strided view of one candidate would have another numba type,
        # and machine code of its own to load in the middle of a stream)
        pool = admission.score_pool(stats.gram_model, stats.cross_y_model, state.precisions,
                                    state.total_noise, stats.cross_candidates,
                                    stats.cross_y_candidates, np.diagonal(stats.gram)[m:n].copy())
        stats.merit[m:n] = pool.t2  # the buffer manager evicts the lowest first
        return pool

    def _admit(self) -> bool:
        """Admit the candidate with the largest :meth:`_score_pool` statistic if it passes
        ``admit_threshold`` and the budget allows.

        The new unit starts where the marginal likelihood puts it: its precision at Tipping
        and Faul's optimum ``α = S²/(Q² − S) = sS/(s(t² − 1))`` (the flat prior's
        ⟨α⟩ = a₀/b₀ = 1 of 4.4 if ``t² ≤ 1``), every weight at the fixed point of eq. 4.8
        for the new set of precisions (the posterior mean of eq. 5.2, from the pool's
        factor bordered by the new row in O(M²):
        :func:`~onlinesparse.vbls.admission.bordered_mean`), so that the kernels already in
        the model make room for it at once instead of over many backfitting sweeps, during
        which ARD would judge the newcomer on a residual that has not yet adjusted. The noise
        variance s is kept continuous: the new branch gets the mean branch noise (a typical
        step size ψ_zm/s, 3.2) and every ψ is rescaled so that ``ψ_y + Σψ_zm`` is unchanged.
        """
        stats, state = self._stats, self._state
        m, n = stats.n_model, stats.n_columns
        if state is None or n == m or stats.count <= 1.0:
            return False
        pool = self._score_pool()
        best = int(np.argmax(pool.t2))
        t2 = float(pool.t2[best])
        if m >= self.max_basis or not t2 > self.admit_threshold:
            return False
        position = m + best
        stats.merit[position] = np.nan  # its pool score says nothing about it in the model
        mean = float(stats.gram[0, position]) / stats.count
        s = state.total_noise
        stats.promote(position)
        state.add_units(1, "ard")
        if t2 > 1.0:
            alpha = float(pool.spread[best]) / (s * (t2 - 1.0))
            state.precision_rate[-1] = state.precision_shape[-1] / alpha
        scale = s / state.total_noise
        state.branch_noise *= scale
        state.output_noise *= scale
        self._means = np.append(self._means, mean)
        self._at_cap = np.append(self._at_cap, 0)
        raw = admission.bordered_mean(pool, best, stats.cross_y_model, s,
                                      float(state.precisions[-1]))
        if raw is not None:  # (else the sweeps move the weights)
            # The centred basis's weights: b₀' = b₀ + Σ_m b_m μ_m (_raw_weights inverted).
            raw[0] += float(raw[1:] @ self._means[1:])
            state.weights = raw
        self.n_admitted += 1
        return True

    def _jump(self) -> None:
        """Move every weight to the fixed point of eq. 4.8 for the current ``⟨α⟩`` and s,
        ``(G' + s·diag⟨α⟩)⟨b⟩ = c'``: the limit of the backfitting sweeps with Q(α) and ψ
        held. O(M³)."""
        state = self._state
        gram, cross = self._statistics()
        system = gram + state.total_noise * np.diag(state.precisions)
        try:
            state.weights = np.linalg.solve(system, cross)
        except np.linalg.LinAlgError:
            pass  # singular: leave the weights to the sweeps

    def _sweep(self, n: int) -> float:
        """``n`` EM sweeps (Ting et al. 4.7, 4.8) on the centred statistics, each followed by
        the pruning rule (compiled: :func:`~onlinesparse.vbls._compiled.online_sweeps`);
        returns the relative change of the weights over the last sweep."""
        stats, state = self._stats, self._state
        if n <= 0:
            return 0.0
        gram, cross = self._centred()
        radial = stats.basis.radial_mask[: stats.n_model]  # only kernels are pruned
        floor = engine.raise_noise_floor(state, stats.yy, stats.count)  # (as each sweep)
        while n > 0:
            # In place: the compiled call undoes a sweep that is not finite by itself.
            weights, variances, rate, psi = (np.ascontiguousarray(a, dtype=float) for a in (
                state.weights, state.weight_variances, state.precision_rate, state.branch_noise))
            run, kept, psi_y, precision, change, kept_change = _compiled.online_sweeps(
                n, weights, variances, np.ascontiguousarray(state.precision_shape), rate,
                psi, float(state.output_noise), float(state.noise_precision), gram, cross,
                float(stats.yy), float(stats.count), float(self.precision_cap), floor,
                engine.PRIOR_RATE, radial, self._at_cap, self.precision_cap * _AT_CAP,
                self.prune_after)
            state.weights, state.weight_variances = weights, variances
            state.precision_rate, state.branch_noise = rate, psi
            state.output_noise, state.noise_precision = psi_y, precision
            state.n_sweeps += kept
            state.last_change = kept_change if kept else state.last_change
            n -= run
            if self._at_cap.size and int(self._at_cap.max()) >= self.prune_after:
                for j in np.flatnonzero(self._at_cap >= self.prune_after)[::-1]:
                    self._prune_unit(int(j))
                gram, cross = self._centred()
                radial = stats.basis.radial_mask[: stats.n_model]
                change = math.inf
        return change

    def _push(self, vector: np.ndarray, target: float, row: np.ndarray) -> None:
        stats = self._stats
        if stats.is_full:
            stats.pop_oldest()
        stats.push(vector, target, row)
        # Adding and subtracting patterns accumulates rounding: a full window recomputes its
        # statistics from the stored rows a column at a time, about once per window for
        # each (WindowStatistics.refresh_step; FGCV 3.2 point 5).
        stats.refresh_step()
        if self._state is None:
            self._state = engine.initial_state(stats.n_model, stats.yy / stats.count, "ard")
            self._at_cap = np.zeros(stats.n_model, dtype=np.int64)
            self._means = np.zeros(stats.n_model)

    def _predictive(self, row: np.ndarray) -> tuple[float, float]:
        """Mean and variance of eq. 4.12 from a row over (at least) the model's columns;
        right after a batch fit with the full covariance of its posterior (eq. 5.2)."""
        state = self._state
        if self._covariance is None:  # (on the centred row without forming it)
            return engine.predictive_regression(state, row, self._means)
        centred = self._centred_row(row)
        mean = float(centred @ state.weights)
        return mean, state.total_noise + float(centred @ self._covariance @ centred)

    # -- the adaptive memory's protocol (stream.memory.Forgetful; stream.StreamRegressor) ---
    @property
    def n_stored(self) -> int:
        return 0 if self._stats is None else int(self._stats.n_stored)

    @property
    def n_parameters(self) -> int:
        return 0 if self._stats is None else int(self._stats.n_model)

    def ridge_view(self) -> RidgeView | None:
        """The window as a ridge regression (:meth:`VBLSRegressor.ridge_view`), or None."""
        state = self._state  # (raw rows: the refit's free constant takes the centring)
        return None if state is None else self._stats.ridge_view(
            state.ridge_penalty(state.total_noise))

    def forget_oldest(self, k: int) -> None:
        """Forget the ``k`` oldest patterns (the window's statistics recomputed from the
        rest) and sweep on what is left; the posterior's batch covariance no longer holds."""
        self._stats.drop_oldest(k)
        self._covariance = None
        if self._state is not None:
            self._sweep(max(self.sweeps_per_sample, 1))

    # -- river API --------------------------------------------------------------------------
    @single_blas_thread
    def learn_one(self, x: dict, y: float) -> None:
        """Learn one pattern: statistics, proposal, admission, ``sweeps_per_sample`` sweeps.

        Bad input raises ``ValueError`` naming the feature and leaves the model unchanged.
        """
        target = _as_target(y)
        vector = self._features.transform(x, learning=True)
        if self._stats is None:
            self._stats = self._start(len(vector))
        stats = self._stats
        scaled = self._scaled(vector)
        row = stats.row(scaled)
        if self._state is not None:
            mean, var = self._predictive(row)
            error, std = target - mean, math.sqrt(var)
        else:
            error, std = 0.0, 0.0
        self._covariance = None  # the sweeps below move the posterior off the batch one
        self._push(scaled, target, row)
        # The heavy work (candidate columns, admission test): one sample in candidate_every.
        heavy = self._buffer.column_due()
        # (the buffer manager's step, without the columns their siblings would evict)
        proposals.consider(self._buffer, stats, scaled, error, std)
        if heavy:
            self._admit()
        self._sweep(self.sweeps_per_sample)
        self._features.commit(vector, x)

    @single_blas_thread
    def learn_many(self, X: Iterable[Mapping[Hashable, object]] | object,
                   y: Iterable[object]) -> None:
        """Add many patterns, then :meth:`refine`: the batch VBLS-RVM fit of the window.

        ``X`` is a pandas ``DataFrame`` (or any iterable of feature dicts) and ``y`` the
        matching targets. Every row is validated before anything changes. This is not river's
        mini-batch ``learn_many`` (which must equal repeated ``learn_one``): it fits to
        convergence. Patterns beyond ``window_size`` push the oldest out, as in a stream.
        """
        rows = as_rows(X)
        targets = [_as_target(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]
        if len(rows) != len(targets):
            raise ValueError(f"{len(rows)} rows of features but {len(targets)} targets")
        features, vectors = self._features.rehearse(rows)
        if not vectors:
            return
        if self._stats is None:
            self._stats = self._start(len(vectors[0]))
        stats = self._stats
        for vector, target in zip(vectors, targets, strict=True):
            scaled = self._scaled(vector)
            self._push(scaled, target, stats.row(scaled))
        self._features = features
        self.refine()

    @single_blas_thread
    def refine(self, max_sweeps: int | None = None) -> int:
        """Spend idle time on the batch fit of the window; returns the sweeps run.

        The VBLS-RVM of Ting et al. 5.2 as the paper runs it: one kernel per stored pattern
        and radius (at most ``max_start`` kernels, on patterns spread evenly over the window;
        the input metric and radii from :meth:`_batch_metric`, by default chosen by the
        evidence of a Gaussian process with one length scale per input) and the
        constant, every ⟨α_m⟩ updated each sweep, the kernels whose ⟨α_m⟩ diverges
        pruned. Unlike the online sweeps, ``Q(b)`` keeps the full covariance of eq. 5.2, so
        that a weight's posterior variance includes what its correlated neighbours leave
        undetermined (under the factorised ``Q(b)`` the variance is conditional on the
        others, so overlapping kernels look more certain, their ⟨α⟩ grows and the model
        under-fits; see :mod:`~onlinesparse.vbls.kernel_batch`). Each sweep is O(M³) in the
        M kernels still in the model, which shrinks quickly from the start set.

        A sweep (:func:`~onlinesparse.vbls.kernel_batch.fit_window`): the posterior of the
        weights for the current ⟨α⟩ and noise s, then ⟨α⟩ and s moved to the fixed points of
        their updates, then every kernel whose precision ratio ``s⟨α_m⟩/G_mm`` exceeds
        ``precision_cap`` is pruned (the rule of the online path, without the wait). The fit
        stops when no log⟨α_m⟩ moved by more than ``tol`` and nothing was pruned, or after
        ``max_sweeps`` sweeps (default: the parameter). If more kernels than the budget
        remain, the ones with the largest ratios go and the sweeps go on.

        The model is then rebuilt on the surviving kernels: the window statistics, an empty
        candidate pool, and the VBLS state with the batch posterior (weights at the fixed
        point of eq. 4.8 for its ⟨α⟩ and s), so that :meth:`learn_one` continues from it.
        Until the next :meth:`learn_one`, :meth:`predict_one` uses the full covariance of the
        batch posterior in eq. 4.12.
        """
        if self._state is None:
            return 0
        budget = self.max_sweeps if max_sweeps is None else max(int(max_sweeps), 0)
        stats = self._stats
        scales, radii = self._batch_metric()
        inputs = self._window_inputs(scales)
        specs, design = kernel_batch.start_design(self.kernel, self.max_start, radii, inputs)
        fit = kernel_batch.fit_window(design, stats.stored_targets(), stats.yy / stats.count,
                                      self.precision_cap, self.tol, budget,
                                      self.max_basis - 1)
        if fit is None:
            return 0  # nothing to explain (or no time): keep the model as it is
        active, precisions, noise, done, change = fit
        self._install([specs[j] for j in active], precisions[active], noise, radii, scales,
                      inputs)
        # Every start kernel counts as admitted, the ones the sweeps removed as pruned.
        self.n_admitted += len(specs)
        self.n_pruned += len(specs) - len(active)
        self._state.n_sweeps = done
        self._state.last_change = change
        return done

    def _batch_metric(self) -> tuple[np.ndarray | None, tuple[float, ...]]:
        """The input metric and radii of the batch fit
        (:func:`~onlinesparse.vbls.kernel_batch.batch_metric` on the stored inputs)."""
        return kernel_batch.batch_metric(self.width, self.radii, self._window_inputs(None),
                                         self._stats.stored_targets())

    def _scaled(self, vector: np.ndarray) -> np.ndarray:
        """An input vector in the space the kernels measure distance in (``x_i/ℓ_i``)."""
        return vector if self._input_scales is None else vector / self._input_scales

    def _window_inputs(self, scales: np.ndarray | None) -> np.ndarray:
        """The stored inputs (oldest first) divided by ``scales`` (``None``: as they came)."""
        X = self._stats.stored_inputs()
        if self._input_scales is None and scales is None:
            return X
        if self._input_scales is not None:
            X = X * self._input_scales
        return X if scales is None else X / scales

    @property
    def input_scales(self) -> np.ndarray:
        """The input metric: the kernels see ``x_i/ℓ_i`` with these ``ℓ_i`` (in the order of
        the features seen first); all ones until a batch fit with ``width="ard"``."""
        if self._input_scales is not None:
            return self._input_scales.copy()
        return np.ones(0 if self._stats is None else self._stats.n_features)

    def _install(self, specs: list[BasisSpec], precisions: np.ndarray, noise: float,
                 radii: tuple[float, ...], scales: np.ndarray | None, X: np.ndarray) -> None:
        """Rebuild the model on the kernels ``specs`` with the batch posterior: fresh window
        statistics over the stored patterns ``X`` (oldest first, already divided by the new
        input ``scales``, which every later input is divided by too), an empty candidate pool
        proposing ``radii``, and a
        VBLS state with ⟨α_m⟩ = ``precisions`` (the constant's ⟨α⟩ from eq. 4.7 and its
        posterior), the noise ``noise`` split evenly between ψ_y and the branches (as
        :func:`engine.initial_state` splits it), the weights at the fixed point of eq. 4.8
        (:meth:`_jump`) and the full covariance of eq. 5.2 kept for the predictive."""
        targets = self._stats.stored_targets()
        # Also a fresh buffer manager, whose (empty) pool proposes the batch fit's radii; from
        # now on every input is divided by ``scales`` (X: the stored inputs, so divided).
        stats = self._start(X.shape[1], radii)
        self._input_scales = None if scales is None else np.array(scales, dtype=float)
        for spec in specs:
            stats.add_column(spec)
            stats.promote(stats.n_columns - 1)
        for x, target in zip(X, targets, strict=True):
            stats.push(x, float(target), stats.row(x))
        self._stats = stats
        m = stats.n_model
        state = engine.initial_state(m, stats.yy / stats.count, "ard")
        self._means = stats.gram_model[0] / stats.count
        self._means[0] = 0.0
        state.branch_noise[:] = noise / (m + 1)
        state.output_noise = noise / (m + 1)
        state.noise_precision = 1.0 / noise
        state.weights[0] = float(targets.mean())
        # ⟨α⟩ = â/b̂ with â = a₀ + ½ (4.7): b̂ follows from the batch ⟨α⟩; the constant's b̂
        # from its posterior (mean ȳ, variance s/p), which leaves it all but unregularised.
        shape = state.precision_shape
        state.precision_rate[1:] = shape[1:] / precisions
        state.precision_rate[0] = engine.PRIOR_RATE + 0.5 * (
            state.weights[0] ** 2 + noise / stats.count)
        self._state = state
        self._at_cap = np.zeros(m, dtype=np.int64)
        self._jump()
        gram, _ = self._statistics()
        _, _, inverse = kernel_batch.full_posterior(gram, np.zeros(m), state.precisions, noise)
        self._covariance = noise * (inverse.T @ inverse)
        psi = state.branch_noise
        state.weight_variances = psi / (np.diagonal(gram) + psi * state.precisions)  # eq. 4.7

    def predict_one(self, x: dict, with_dist: bool = False) -> float | proba.Gaussian:
        """Posterior mean, or with ``with_dist`` the Gaussian predictive of eq. 4.12:
        ``N(⟨b⟩ᵀf(x), ψ_y + Σψ_zm + f(x)ᵀΣ_b f(x))``. Before any data: 0, or a standard
        normal."""
        vector = self._features.transform(x)
        if self._state is None:
            return gaussian(0.0, 1.0) if with_dist else 0.0
        row = self._stats.basis.evaluate(self._scaled(vector), 0, self._stats.n_model)
        mean, var = self._predictive(row)
        if not (math.isfinite(mean) and (math.isfinite(var) or not with_dist)):
            raise self._features.overflow(vector)
        if with_dist:
            return gaussian(mean, var)
        return mean

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        """The posterior mean of every row of ``X``, as river's ``predict_many``: a ``Series``
        on ``X``'s index, exactly :meth:`predict_one` row by row; nothing is learned."""
        return predict_series(self.predict_one, X)

    # -- inspection -------------------------------------------------------------------------
    @property
    def n_basis(self) -> int:
        """Basis functions in the model (the constant included)."""
        return 0 if self._stats is None else self._stats.n_model

    def _ratios(self) -> np.ndarray:
        return engine.precision_ratio(self._state, np.diagonal(self._statistics()[0]))

    def basis_functions(self) -> list[dict]:
        """Every basis function of the model: kind, centre (as a feature dict, in the inputs'
        units), radius (in the scaled inputs ``x_i/ℓ_i`` of :attr:`input_scales`: the kernel
        is ``k(‖(x − c)/ℓ‖/r)``), weight ⟨b_m⟩, precision ⟨α_m⟩ and precision ratio
        ``s⟨α_m⟩/G_mm``."""
        if self._state is None:
            return []
        stats, state = self._stats, self._state
        ratios = self._ratios()
        weights = self._raw_weights()
        scales = self.input_scales
        out = []
        for j in range(stats.n_model):
            spec = stats.basis.spec(j)
            # Centres in the inputs' own units (the kernels store them scaled).
            centre = (self._features.to_dict(np.asarray(spec.centre) * scales)
                      if spec.kind in KERNELS else None)
            out.append({"kind": spec.kind, "centre": centre,
                        "radius": spec.radius if spec.kind in KERNELS else None,
                        "weight": float(weights[j]),
                        "precision": float(state.precisions[j]),
                        "ratio": float(ratios[j])})
        return out

    def diagnostics(self) -> dict[str, float]:
        """Numbers for a replay report, all O(M²) or less.

        ``n_basis`` basis functions in the model (the constant included),
        ``n_relevance_vectors`` kernels in the model, ``n_relevant`` basis functions whose
        precision ratio is below ``relevance_threshold``, ``n_candidates`` in the pool,
        ``noise_std`` ``√(ψ_y + Σψ_zm)``, ``output_noise_std`` ``√ψ_y``, ``n_patterns``,
        ``n_sweeps``, ``n_admitted``, ``n_pruned``, ``last_change`` and ``lower_bound``
        (the variational bound F of the current basis set).
        """
        if self._state is None:
            return {"n_basis": 0.0, "n_relevance_vectors": 0.0, "n_relevant": 0.0,
                    "n_candidates": 0.0, "noise_std": 0.0, "output_noise_std": 0.0,
                    "n_patterns": 0.0, "n_sweeps": 0.0, "n_admitted": 0.0, "n_pruned": 0.0,
                    "last_change": 0.0, "lower_bound": 0.0}
        state, stats = self._state, self._stats
        gram, cross = self._statistics()
        return {
            "n_basis": float(stats.n_model),
            "n_relevance_vectors": float(stats.n_model - 1),
            "n_relevant": float(np.sum(self._ratios() < self.relevance_threshold)),
            "n_candidates": float(stats.n_candidates),
            "noise_std": math.sqrt(state.total_noise),
            "output_noise_std": math.sqrt(state.output_noise),
            "n_patterns": float(stats.count),
            "n_sweeps": float(state.n_sweeps),
            "n_admitted": float(self.n_admitted),
            "n_pruned": float(self.n_pruned),
            "last_change": (float(state.last_change) if math.isfinite(state.last_change)
                            else 0.0),
            "lower_bound": engine.lower_bound_regression(
                state, gram, cross, stats.yy, stats.count, "ard"),
        }

    def input_relevance(self) -> dict[Hashable, float]:
        """How much the prediction moves with each input over the window: the mean absolute
        change of the prediction for a ±½ standard deviation change of that input (finite
        differences, as :meth:`SparseRBFRegressor.input_relevance`), O(d·W·M), on demand."""
        names = self._features.names
        if self._state is None or self._stats.n_stored == 0:
            return {name: 0.0 for name in names}
        stats = self._stats
        moves = prediction_moves(stats.basis, self._raw_weights(), stats.stored_inputs())
        return dict(zip(names, moves.tolist(), strict=True))

