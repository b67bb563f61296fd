"""The mathematics of variational Bayesian least squares (Ting, D'Souza, Vijayakumar, Schaal).

Everything here operates on the sufficient statistics ``G = HᵀH``, ``c = Hᵀy``, ``yᵀy``, ``p``
and knows nothing about
where the basis functions come from (inputs, kernels…), so the linear regressor, the
classifier and a kernel regressor share it. Section and equation numbers refer to Ting,
D'Souza, Vijayakumar and Schaal, *Efficient Learning and Feature Selection in
High-Dimensional Regression*.

The model (eq. 3.1, with the priors of 4.1 / 4.5)
-------------------------------------------------
Each of the M basis functions ``f_m`` feeds a hidden branch target
``z_im ~ N(b_m f_m(x_i), ψ_zm)``; the output is ``y_i ~ N(Σ_m z_im, ψ_y)``. The weights have
the prior ``b_m ~ N(0, 1/α_m)`` with ``α_m ~ Gamma(a₀, b₀)``, one α per weight ("ard", 4.2)
or one shared ("shared", 4.1); ``prior="none"`` is the probabilistic backfitting of 3.1
(maximum likelihood, no prior). The posterior is approximated by ``Q(Z)Q(b)Q(α)`` and fitted
by EM sweeps. One sweep is

1. E-step for ``Q(Z)`` (3.1 with ``b → ⟨b⟩``). It is never formed: every later step needs
   only the *scaled residual correlation* ``ρ_m = Σ_i f_m(x_i) e_i``, the sum ``Σ e_i²`` and
   the curvature ``Σ κ_i``, where for regression ``e_i = (y_i − ⟨b⟩ᵀf_i)/s``,
   ``κ_i = 1/s``, ``s = ψ_y + Σ_m ψ_zm``. With ``G = HᵀH`` and ``c = Hᵀy`` these are
   ``ρ = (c − G⟨b⟩)/s``, ``Σe² = (yᵀy − 2⟨b⟩ᵀc + ⟨b⟩ᵀG⟨b⟩)/s²``, ``Σκ = p/s``: O(M²), no
   dependence on p.
2. ``Q(b)`` for every unit at once (eq. 4.3 / 4.7, equivalently the mean update 4.4 / 4.8):
   ``σ²_bm = ψ_zm/(G_mm + ψ_zm⟨α_m⟩)``,
   ``⟨b_m⟩ ← (G_mm⟨b_m⟩ + ψ_zm ρ_m)/(G_mm + ψ_zm⟨α_m⟩)`` — O(1) per unit given ρ.
3. ``Q(α)`` (4.3 / 4.7): Gamma with ``â = a₀ + ½`` (``a₀ + M/2`` shared) and
   ``b̂ = b₀ + ⟨b_m²⟩/2`` (``b₀ + Σ⟨b_m²⟩/2`` shared).
4. M-step for ψ_zm and ψ_y (3.1): the expected squared branch residual under ``Q(Z)Q(b)``,
   which in the Bayesian model also contains ``σ²_bm G_mm`` (the paper leaves this step
   implicit; it is what maximises the bound), and ``ψ_y = (ψ_y/s)²·RSS/p + ψ_y Σψ_zm/s``.

The classifier (4.6) uses the same steps 2–4: the Jaakkola–Jordan bound
``g(x) ≥ g(ξ) exp{(x − ξ)/2 − φ(ξ)(x² − ξ²)}`` makes the likelihood of ``x_i = Σ_m z_im``
Gaussian, ``∝ N(x_i; y_i/(4φ_i), 1/(2φ_i))``: a regression on the transformed target
``y_i/(4φ_i)`` whose output noise ``1/(2φ_i)`` differs per sample. Only step 1 changes:
``e_i = (y_i/2 − 2φ_i⟨b⟩ᵀf_i)/s_i`` and ``κ_i = 2φ_i/s_i`` with ``s_i = 1 + 2φ_i Σψ_zm``
(the E-step of 4.6, whose mean update is eq. 4.15). Because ``φ_i`` and ``s_i`` differ per
sample and change every sweep, weighted Gram matrices would have to be rebuilt every sweep;
:func:`classification_terms` therefore reads the stored rows of a bounded window of W
patterns, O(W·M) per sweep, a cost fixed by the window size, and updates every ``ξ_i``
exactly (no staleness).

Two guard rails the paper does not need in batch but a stream does
------------------------------------------------------------------
* **Precision cap.** Under the factorised posterior the precision of an irrelevant weight
  grows without bound (linearly in the number of sweeps) and its weight decays like
  1/sweeps, so the fixed point is never reached; and a weight pruned while the data were few
  could never come back. ``⟨α_m⟩`` is therefore capped at ``precision_cap`` times the
  precision the data give the weight, ``G_mm Σκ/p`` (``G_mm/s`` in regression), by a floor
  on ``b̂`` (so ``Q(α)`` stays a Gamma). At the cap the weight is shrunk to at most
  ``1/(1 + precision_cap)`` of its unregularised value.
* **Noise floor.** Every ψ is kept above ``1e-12`` times the targets' current second moment
  so that a perfect fit cannot divide by zero, nor a tiny first target leave ``s`` too small
  for the targets that follow.
* **Finite or unchanged.** A sweep whose result the floats cannot hold (data whose
  magnitudes lie hundreds of orders apart) leaves the posterior as it was.

Relevance rule
--------------
At the fixed point the weights solve ``(G + s·diag⟨α⟩)⟨b⟩ = c`` (set ``⟨b_m⟩`` unchanged in
4.8), a ridge regression with ``λ_m = s⟨α_m⟩``. The *precision ratio*
``ratio_m = s⟨α_m⟩/G_mm`` compares the prior's precision with the data's; the weight keeps
the fraction ``1/(1 + ratio_m)`` of its unregularised value. A unit is **relevant when
ratio_m < 1** (the data carry more precision than the prior, the weight keeps more than half);
for an isolated input ``ratio ≈ 1/(t² − 1)`` with t its t-statistic in automatic relevance
determination, while a pruned unit sits at ``precision_cap`` (10 by default for the regressor,
1 for the classifier).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import special

from onlinesparse.vbls import _compiled

__all__ = [
    "PRIOR_SHAPE",
    "PRIOR_RATE",
    "PRIORS",
    "VBLSState",
    "ResidualTerms",
    "initial_state",
    "regression_terms",
    "classification_terms",
    "update_posteriors",
    "sweep_regression",
    "sweep_regression_reference",
    "sweep_classification",
    "fit_regression",
    "predictive_regression",
    "predictive_probability",
    "lower_bound_regression",
    "precision_ratio",
    "jaakkola_jordan_phi",
]

# Ting et al. 4.4: a = b = 1e-8 gives a flat Gamma over α with mean 1; "need never be modified".
PRIOR_SHAPE = 1e-8
PRIOR_RATE = 1e-8
PRIORS = ("ard", "shared", "none")

# Relative floor of every noise variance (times the target scale), against division by zero.
_NOISE_FLOOR = 1e-12
_TINY = np.finfo(float).tiny
# predictive_regression's means for an uncentred row (no copy, no allocation per call)
_RAW = np.zeros(0)


def noise_floor(scale: float) -> float:
    """The floor of a noise variance: ``_NOISE_FLOOR`` times the targets' second moment, and
    never below the smallest normal float, so that ``1/s`` stays finite when the targets' squares
    underflow (targets of order 1e-160)."""
    return max(_NOISE_FLOOR * scale, _TINY)


@dataclass
class VBLSState:
    """Posterior and noise parameters of M backfitting units.

    Attributes
    ----------
    weights
        ``⟨b_m⟩``, the posterior means of the weights.
    weight_variances
        ``σ²_bm``, the posterior variances (0 for ``prior="none"``).
    precision_shape, precision_rate
        ``â_m``, ``b̂_m`` of ``Q(α_m) = Gamma(â, b̂)`` (all equal for a shared prior).
    branch_noise
        ``ψ_zm``, the noise variance of each hidden branch target.
    output_noise
        ``ψ_y`` (0 for the classifier, whose output noise is the Jaakkola–Jordan term).
    noise_precision
        ``Σκ_i / p`` of the last sweep: ``1/s`` in regression; the data precision of weight m
        is ``G_mm · noise_precision``.
    scale
        Second moment of the targets (at the start, then at the last regression sweep):
        the unit of the floors.
    n_flat
        The first ``n_flat`` units have a flat prior (⟨α⟩ = 0: no shrinkage, never pruned),
        e.g. a bias: the paper's models assume centred targets (section 6 standardises the
        data), and a flat prior on the constant is the same model without that assumption.
    """

    weights: np.ndarray
    weight_variances: np.ndarray
    precision_shape: np.ndarray
    precision_rate: np.ndarray
    branch_noise: np.ndarray
    output_noise: float
    noise_precision: float
    scale: float
    n_sweeps: int = 0
    last_change: float = field(default=math.inf)
    n_flat: int = 0

    @property
    def n_units(self) -> int:
        return len(self.weights)

    @property
    def precisions(self) -> np.ndarray:
        """``⟨α_m⟩ = â_m / b̂_m`` (0 for the first ``n_flat`` units)."""
        out = self.precision_shape / self.precision_rate
        out[: self.n_flat] = 0.0
        return out

    @property
    def total_noise(self) -> float:
        """``s = ψ_y + Σ_m ψ_zm``: the noise variance of a prediction (eq. 4.12 without Σ_b)."""
        return float(self.output_noise + self.branch_noise.sum())

    def ridge_penalty(self, noise: float) -> np.ndarray:
        """The penalties of the ridge regression whose solution is the posterior mean of a
        Gaussian prior of precision ``⟨α_m⟩`` under noise variance ``noise``:
        ``⟨α_m⟩·noise`` (0 for the flat units). What the adaptive memory refits to judge a
        cut (:class:`~onlinesparse.stream.refit.RidgeView`)."""
        return self.precisions * noise

    def copy(self) -> VBLSState:
        return replace(
            self,
            weights=self.weights.copy(),
            weight_variances=self.weight_variances.copy(),
            precision_shape=self.precision_shape.copy(),
            precision_rate=self.precision_rate.copy(),
            branch_noise=self.branch_noise.copy(),
        )

    def add_units(self, count: int, prior: str = "ard") -> None:
        """Append ``count`` units with ⟨b⟩ = 0 and, for ARD, the initial prior ⟨α⟩ = a₀/b₀
        (4.4); a shared Gamma gains ½ in shape per unit (4.3). For a kernel model that grows
        its basis.

        Each new branch gets the mean of the existing branch noises, so that its backfitting
        step size ψ_zm/s (3.2) is that of a typical unit.
        """
        if count <= 0:
            return
        psi = float(self.branch_noise.mean()) if len(self.branch_noise) else self.scale
        m = self.n_units + count
        self.weights = np.concatenate([self.weights, np.zeros(count)])
        self.weight_variances = np.concatenate([self.weight_variances, np.zeros(count)])
        self.branch_noise = np.concatenate([self.branch_noise, np.full(count, psi)])
        if prior == "shared" and len(self.precision_rate):
            shape = PRIOR_SHAPE + 0.5 * m
            self.precision_shape = np.full(m, shape)
            self.precision_rate = np.full(m, float(self.precision_rate[0]))
        else:
            shape, rate = prior_posterior(prior, m)
            self.precision_shape = np.concatenate([self.precision_shape, np.full(count, shape)])
            self.precision_rate = np.concatenate([self.precision_rate, np.full(count, rate)])

    def drop_unit(self, j: int) -> None:
        """Remove unit ``j`` (its weight leaves the model; its branch noise goes with it)."""
        keep = np.arange(self.n_units) != j
        self.weights = self.weights[keep]
        self.weight_variances = self.weight_variances[keep]
        self.precision_shape = self.precision_shape[keep]
        self.precision_rate = self.precision_rate[keep]
        self.branch_noise = self.branch_noise[keep]


@dataclass(frozen=True)
class ResidualTerms:
    """What the E-step leaves for the rest of a sweep (see the module docstring, step 1).

    ``correlation`` is ρ (length M), ``sq_sum`` is Σe_i², ``curvature`` is Σκ_i, ``count``
    is p, ``rss`` the residual sum of squares (regression only, for ψ_y).
    """

    correlation: np.ndarray
    sq_sum: float
    curvature: float
    count: float
    rss: float = 0.0


def prior_posterior(prior: str, n_units: int) -> tuple[float, float]:
    """Initial ``(â, b̂)``: the shape of 4.3 / 4.7 and a rate giving ⟨α⟩ = a₀/b₀ = 1 (4.4).
    ``prior="none"`` has ⟨α⟩ = 0 (no prior)."""
    if prior == "none":
        return 0.0, 1.0
    shape = PRIOR_SHAPE + (0.5 * n_units if prior == "shared" else 0.5)
    return shape, shape * PRIOR_RATE / PRIOR_SHAPE


def initial_state(n_units: int, target_second_moment: float, prior: str = "ard",
                  output_noise: bool = True, n_flat: int = 0) -> VBLSState:
    """Start of EM: ⟨b⟩ = 0, ``Q(α)`` the prior (a₀ = b₀ = 1e-8, so ⟨α⟩ = 1, Ting et al. 4.4).

    The noise is split evenly: ``ψ_y = ψ_zm = v/(M + 1)`` with ``v = yᵀy/p`` so that
    ``s = v``, the residual variance of the initial ⟨b⟩ = 0 (the paper does not say how ψ is
    initialised; this makes the first E-step consistent with the first residuals and is
    invariant to the scale of y). Without an output noise (the classifier) ``v`` is the
    Jaakkola–Jordan noise ``1/(2φ(0)) = 4`` and ``ψ_zm = v/(M + 1)``. The first ``n_flat``
    units get a flat prior (:class:`VBLSState`).
    """
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
    v = float(target_second_moment)
    if not (v >= _TINY and math.isfinite(v)):  # (1/v must be finite)
        v = 1.0
    split = v / (n_units + 1)
    shape, rate = prior_posterior(prior, n_units)
    shape_arr, rate_arr = np.full(n_units, shape), np.full(n_units, rate)
    return VBLSState(
        weights=np.zeros(n_units),
        weight_variances=np.zeros(n_units),
        precision_shape=shape_arr,
        precision_rate=rate_arr,
        branch_noise=np.full(n_units, split),
        output_noise=split if output_noise else 0.0,
        noise_precision=1.0 / v,
        scale=v,
        n_flat=int(n_flat),
    )


def regression_terms(state: VBLSState, gram: np.ndarray, cross_y: np.ndarray, yy: float,
                     count: float) -> ResidualTerms:
    """E-step of Ting et al. 3.1 (with ``b → ⟨b⟩``, section 4.1) reduced to the statistics.

    ``⟨z_im⟩ = ⟨b_m⟩f_im + (ψ_zm/s)(y_i − ⟨b⟩ᵀf_i)``, so every sum over patterns the M-step
    needs is ``ρ = (c − G⟨b⟩)/s``, ``Σe² = RSS/s²`` with ``RSS = yᵀy − 2⟨b⟩ᵀc + ⟨b⟩ᵀG⟨b⟩``,
    and ``Σκ = p/s``. Cost O(M²) (one product ``G⟨b⟩``).
    """
    s = state.total_noise
    g_b = gram @ state.weights
    residual_corr = cross_y - g_b
    rss = max(float(yy - state.weights @ (cross_y + residual_corr)), 0.0)
    # (rss/s/s rather than rss/(s·s): s² underflows to 0 for targets of order 1e-80)
    return ResidualTerms(residual_corr / s, rss / s / s, count / s, float(count), rss)


def jaakkola_jordan_phi(xi: np.ndarray) -> np.ndarray:
    """``φ(ξ) = tanh(ξ/2)/(4ξ)`` of the Jaakkola–Jordan bound (Ting et al. 4.6, where the
    text garbles tanh as "tan"); ``φ(0) = 1/8`` by continuity."""
    xi = np.abs(np.asarray(xi, dtype=float))
    out = np.full(xi.shape, 0.125)
    big = xi > 1e-6
    out[big] = np.tanh(0.5 * xi[big]) / (4.0 * xi[big])
    return out


def classification_terms(state: VBLSState, rows: np.ndarray, signs: np.ndarray,
                         xi: np.ndarray) -> tuple[ResidualTerms, np.ndarray]:
    """E-step of Ting et al. 4.6 over the stored rows, and the new ξ (same section).

    With ``φ_i = φ(ξ_i)``, ``Ψ = Σψ_zm`` and ``s_i = 1 + 2φ_iΨ``:
    ``⟨z_im⟩ = ⟨b_m⟩f_im + (ψ_zm/s_i)(y_i/2 − 2φ_i⟨b⟩ᵀf_i)``, ``1ᵀΣ_zi1 = Ψ/s_i`` and
    ``σ²_zim = ψ_zm(1 − 2φ_iψ_zm/s_i)``; so ``e_i = (y_i/2 − 2φ_i⟨b⟩ᵀf_i)/s_i``,
    ``κ_i = 2φ_i/s_i``. The variational parameters are then re-estimated as
    ``ξ_i² = 1ᵀ⟨z_iz_iᵀ⟩1 = (⟨b⟩ᵀf_i + Ψe_i)² + Ψ/s_i``. ``signs`` are ±1. Cost O(W·M).
    """
    psi_sum = float(state.branch_noise.sum())
    phi = jaakkola_jordan_phi(xi)
    s_i = 1.0 + 2.0 * phi * psi_sum
    fitted = rows @ state.weights
    e = (0.5 * signs - 2.0 * phi * fitted) / s_i
    kappa = 2.0 * phi / s_i
    new_xi = np.sqrt((fitted + psi_sum * e) ** 2 + psi_sum / s_i)
    terms = ResidualTerms(rows.T @ e, float(e @ e), float(kappa.sum()), float(len(signs)))
    return terms, new_xi


def update_posteriors(state: VBLSState, gram_diag: np.ndarray, terms: ResidualTerms,
                      prior: str, precision_cap: float = math.inf) -> float:
    """Steps 2–4 of a sweep, shared by regression and classification; returns the change.

    * ``Q(b)``, Ting et al. eq. 4.7 (ARD) / 4.3 (shared), mean update eq. 4.8 / 4.4
      (classification: 4.15): ``σ²_bm = ψ_zm/(G_mm + ψ_zm⟨α_m⟩)``,
      ``⟨b_m⟩ ← (G_mm⟨b_m⟩ + ψ_zm ρ_m)/(G_mm + ψ_zm⟨α_m⟩)``. Without a prior this is the
      probabilistic backfitting update eq. 3.5.
    * ``Q(α)``, eq. 4.7 / 4.3, with ``⟨α_m⟩`` capped at ``precision_cap · G_mm Σκ/p``.
    * ψ_zm, the M-step of 3.1 under ``Q(Z)Q(b)``:
      ``ψ_zm ← [Δ_m²G_mm + 2Δ_mψ_zmρ_m + ψ_zm²Σe² + pψ_zm − ψ_zm²Σκ + σ²_bm G_mm]/p``
      with ``Δ_m`` the change of ``⟨b_m⟩`` (the first three terms are
      ``Σ_i(⟨z_im⟩ − ⟨b_m⟩f_im)²``, the next two ``Σ_i σ²_zim``, the last the weight's
      posterior variance, absent from the maximum-likelihood version of 3.1).

    Every unit is updated from the same E-step (the paper's parallel update, whose step
    sizes ψ_zm/s sum to less than one and so never diverge, 3.2). The change returned is
    ``max|Δ⟨b⟩| / max|⟨b⟩|``. The caller updates ψ_y (regression) afterwards.
    """
    count = terms.count
    if count <= 0.0:
        return 0.0
    psi = state.branch_noise
    mu = state.weights
    has_data = gram_diag > 0.0
    if prior == "none":
        # Eq. 3.5: ⟨b_m⟩ += ψ_zm ρ_m / G_mm; a unit without data keeps its weight.
        step = np.divide(psi * terms.correlation, gram_diag, out=np.zeros_like(mu),
                         where=has_data)
        new_mu = mu + step
        new_var = np.zeros_like(mu)
    else:
        alpha = state.precisions
        denom = gram_diag + psi * alpha
        new_mu = (gram_diag * mu + psi * terms.correlation) / denom
        new_var = psi / denom
        second_moment = new_mu * new_mu + new_var
        flat = state.n_flat
        if prior == "ard":
            rate = PRIOR_RATE + 0.5 * second_moment
        else:
            rate = np.full_like(mu, PRIOR_RATE + 0.5 * float(second_moment[flat:].sum()))
        if math.isfinite(precision_cap):
            data_precision = gram_diag * (terms.curvature / count)
            if prior == "shared" and len(mu) > flat:
                data_precision = np.full_like(mu, float(data_precision[flat:].mean()))
            # ⟨α⟩ = â/b̂ ≤ cap·data precision  ⟺  b̂ ≥ â/(cap·data precision).
            cap = precision_cap * data_precision
            floor = np.divide(state.precision_shape, cap, out=np.zeros_like(mu),
                              where=cap > 0.0)
            rate = np.maximum(rate, floor)
    delta = mu - new_mu
    psi_new = (delta * delta * gram_diag + 2.0 * delta * psi * terms.correlation
               + psi * psi * terms.sq_sum + count * psi - psi * psi * terms.curvature
               + new_var * gram_diag) / count
    psi_new = np.maximum(psi_new, noise_floor(state.scale))
    # A sweep the floats cannot hold (data of magnitudes far apart, e.g. features of 1e-160
    # whose squares underflow) leaves the posterior as it was instead of turning it NaN for
    # good. One product checks it: every rate (≥ b₀, it holds ⟨b_m²⟩ = μ² + σ²) and every ψ
    # (≥ the floor) is positive, and np.maximum passes a NaN on, so rateᵀψ is finite exactly
    # when all of them are (or, refused too, when it overflows near the largest float).
    if prior == "none":
        rate = state.precision_rate
        finite = math.isfinite(float(new_mu @ new_mu + psi_new.sum()))
    else:
        finite = math.isfinite(float(rate @ psi_new))
    if not finite:
        return 0.0
    state.precision_rate = rate
    state.branch_noise = psi_new
    state.weights = new_mu
    state.weight_variances = new_var
    state.noise_precision = terms.curvature / count
    state.n_sweeps += 1
    top = float(np.max(np.abs(new_mu))) if len(new_mu) else 0.0
    change = float(np.max(np.abs(delta))) / top if top > 0.0 else 0.0
    state.last_change = change
    return change


def raise_noise_floor(state: VBLSState, yy: float, count: float) -> float:
    """Move the state's scale to the targets' current second moment ``yy/count`` and raise
    every ψ to the floor of that scale (:func:`noise_floor`); returns the floor.

    The floor follows the current second moment, not only the first target's: after a tiny
    first target (1e-125) s would stay so small that the next ordinary target overflows the
    E-step (ρ = (c − G⟨b⟩)/s, RSS/s²)."""
    second_moment = yy / count
    if second_moment > 0.0:
        state.scale = second_moment
    floor = noise_floor(state.scale)
    np.maximum(state.branch_noise, floor, out=state.branch_noise)
    state.output_noise = max(state.output_noise, floor)
    return floor


def sweep_regression(state: VBLSState, gram: np.ndarray, cross_y: np.ndarray, yy: float,
                     count: float, prior: str = "ard",
                     precision_cap: float = math.inf) -> float:
    """One EM sweep of VBLS regression (Ting et al. 3.1, 4.3/4.7, 4.8) in O(M²).

    E-step (:func:`regression_terms`), then ``Q(b)``, ``Q(α)``, ψ_zm
    (:func:`update_posteriors`), then the output noise, the ψ_y M-step of 3.1:
    ``ψ_y ← (ψ_y/s)²·RSS/p + ψ_y(s − ψ_y)/s``. Returns the relative change of the weights.
    Compiled (:mod:`onlinesparse.vbls._compiled`); :func:`sweep_regression_reference` is
    the same sweep in NumPy.
    """
    if count <= 0.0:
        return 0.0
    if state.n_units == 0:
        return sweep_regression_reference(state, gram, cross_y, yy, count, prior,
                                          precision_cap)
    second_moment = yy / count  # (the floor of _raise_noise_floor, applied in the sweep)
    if second_moment > 0.0:
        state.scale = second_moment
    weights = np.array(state.weights, dtype=float)
    variances = np.array(state.weight_variances, dtype=float)
    rate = np.array(state.precision_rate, dtype=float)
    psi = np.array(state.branch_noise, dtype=float)
    shape = np.ascontiguousarray(state.precision_shape, dtype=float)
    psi_y, precision, change, held = _compiled.sweep_regression(
        weights, variances, shape, rate, psi, float(state.output_noise),
        np.ascontiguousarray(gram, dtype=float), np.ascontiguousarray(cross_y, dtype=float),
        float(yy), float(count), _compiled.PRIOR_CODES[prior], float(precision_cap),
        int(state.n_flat), noise_floor(state.scale), PRIOR_RATE)
    if not math.isfinite(held):
        # Finite or unchanged (update_posteriors): the compiled sweep worked on copies, so
        # the posterior is as it was; its floors are met, as in the reference.
        raise_noise_floor(state, yy, count)
        return 0.0
    state.weights, state.weight_variances, state.branch_noise = weights, variances, psi
    if prior != "none":
        state.precision_rate = rate
    state.output_noise = psi_y
    state.noise_precision = precision
    state.n_sweeps += 1
    state.last_change = change
    return change


def sweep_regression_reference(state: VBLSState, gram: np.ndarray, cross_y: np.ndarray,
                               yy: float, count: float, prior: str = "ard",
                               precision_cap: float = math.inf) -> float:
    """One EM sweep of VBLS regression (Ting et al. 3.1, 4.3/4.7, 4.8) in O(M²), in NumPy:
    the reference :func:`sweep_regression` (compiled) is tested against.

    E-step (:func:`regression_terms`), then ``Q(b)``, ``Q(α)``, ψ_zm
    (:func:`update_posteriors`), then the output noise, the ψ_y M-step of 3.1:
    ``ψ_y ← (1/p)Σ_i(y_i − 1ᵀ⟨z_i⟩)² + 1ᵀΣ_z1 = (ψ_y/s)²·RSS/p + ψ_y(s − ψ_y)/s``.
    Returns the relative change of the weights.
    """
    if count <= 0.0:
        return 0.0
    raise_noise_floor(state, yy, count)
    terms = regression_terms(state, gram, cross_y, yy, count)
    s = state.total_noise
    psi_y = state.output_noise
    n_sweeps = state.n_sweeps
    change = update_posteriors(state, np.diagonal(gram), terms, prior, precision_cap)
    psi_y_new = (psi_y / s) ** 2 * terms.rss / count + psi_y * (s - psi_y) / s
    if state.n_sweeps > n_sweeps and math.isfinite(psi_y_new):  # (the sweep was kept)
        state.output_noise = max(psi_y_new, noise_floor(state.scale))
    return change


def sweep_classification(state: VBLSState, rows: np.ndarray, signs: np.ndarray,
                         xi: np.ndarray, gram_diag: np.ndarray | None = None,
                         prior: str = "ard", precision_cap: float = math.inf
                         ) -> tuple[float, np.ndarray]:
    """One EM sweep of VBLS classification (Ting et al. 4.6, 4.6.1, eq. 4.15) in O(W·M).

    Returns the relative change of the weights and the re-estimated ξ.
    """
    if len(signs) == 0:
        return 0.0, xi
    terms, new_xi = classification_terms(state, rows, signs, xi)
    if gram_diag is None:
        gram_diag = np.einsum("ij,ij->j", rows, rows)
    change = update_posteriors(state, gram_diag, terms, prior, precision_cap)
    return change, new_xi


def fit_regression(state: VBLSState, gram: np.ndarray, cross_y: np.ndarray, yy: float,
                   count: float, prior: str = "ard", precision_cap: float = math.inf,
                   tol: float = 1e-10, max_sweeps: int = 100_000) -> int:
    """Sweep (warm-started from ``state``) until the relative change of the weights stays
    below ``tol`` for three sweeps in a row, or ``max_sweeps``; returns the sweeps done."""
    calm = 0
    for n in range(1, max_sweeps + 1):
        change = sweep_regression(state, gram, cross_y, yy, count, prior, precision_cap)
        calm = calm + 1 if change < tol else 0
        if calm >= 3:
            return n
    return max_sweeps


def predictive_regression(state: VBLSState, row: np.ndarray,
                          means: np.ndarray = _RAW) -> tuple[float, float]:
    """Predictive distribution, Ting et al. eq. 4.12:
    ``y | x ~ N(⟨b⟩ᵀf(x), ψ_y + 1ᵀΨ_z1 + f(x)ᵀΣ_b f(x))`` with Σ_b = diag(σ²_b), f(x) the
    first ``n_units`` entries of ``row``, less ``means`` if given (a centred basis).
    Compiled (:func:`onlinesparse.vbls._compiled.predictive`): a handful of NumPy calls
    cost more than the arithmetic at a stream's M."""
    mean, var = _compiled.predictive(row, means, state.weights, state.weight_variances,
                                     float(state.output_noise), state.branch_noise)
    return float(mean), float(var)


def predictive_probability(state: VBLSState, row: np.ndarray) -> float:
    """``P(y = +1 | x)`` for the classifier.

    The latent ``1ᵀz = Σ_m z_m`` is Gaussian with mean ``⟨b⟩ᵀf`` and variance
    ``v = Σψ_zm + fᵀΣ_b f`` (as in eq. 4.12, without ψ_y), and ``∫g(u)N(u; m, v)du`` is
    approximated by MacKay's probit matching ``g(m/√(1 + πv/8))`` (the paper does not give the
    predictive of the classifier).
    """
    mean = float(row @ state.weights)
    var = float(state.branch_noise.sum()) + float((row * row) @ state.weight_variances)
    return float(special.expit(mean / math.sqrt(1.0 + math.pi * var / 8.0)))


def precision_ratio(state: VBLSState, gram_diag: np.ndarray) -> np.ndarray:
    """``ratio_m = ⟨α_m⟩ / (G_mm Σκ/p)``: the prior's precision over the data's (``s⟨α_m⟩/G_mm``
    in regression). Relevant when < 1 (module docstring); ``inf`` for a unit without data."""
    data_precision = gram_diag * state.noise_precision
    out = np.full(state.n_units, np.inf)
    np.divide(state.precisions, data_precision, out=out, where=data_precision > 0.0)
    return out


def lower_bound_regression(state: VBLSState, gram: np.ndarray, cross_y: np.ndarray,
                           yy: float, count: float, prior: str = "ard") -> float:
    """The variational lower bound F (eq. 3.9 extended to ``Q(Z)Q(b)Q(α)`` of 4.1 / 4.2).

    With ``Q(Z)`` at its optimum for the current ``⟨b⟩`` and ψ (the E-step), the Z-part of F
    collapses to the marginal likelihood of ``y ~ N(⟨b⟩ᵀf, s)``, minus the weight variance
    seen by the branches:
    ``F = −(p/2)log(2πs) − RSS/(2s) − Σ_m σ²_bm G_mm/(2ψ_zm)
    + Σ_m (⟨log p(b_m|α)⟩ + H[Q(b_m)]) + Σ (⟨log p(α)⟩ + H[Q(α)])``.
    Every EM sweep without the precision cap leaves F no lower. O(M²).
    """
    s = state.total_noise
    mu = state.weights
    rss = max(float(yy - 2.0 * mu @ cross_y + mu @ (gram @ mu)), 0.0)
    bound = -0.5 * count * math.log(2.0 * math.pi * s) - 0.5 * rss / s
    if prior == "none":
        return bound
    var = state.weight_variances
    flat = state.n_flat
    if np.any(var <= 0.0):
        return -math.inf  # Q(b) is a point mass before the first sweep: its entropy is −∞
    bound -= 0.5 * float(np.sum(var * np.diagonal(gram) / state.branch_noise))
    # A unit with a flat prior has no prior term (a constant of the improper prior), only
    # the entropy of its Q(b).
    bound += float(np.sum(0.5 * np.log(var[:flat]) + 0.5))
    mu, var = mu[flat:], var[flat:]
    shape, rate = state.precision_shape[flat:], state.precision_rate[flat:]
    mean_alpha = shape / rate
    mean_log_alpha = special.digamma(shape) - np.log(rate)
    # ⟨log N(b; 0, 1/α)⟩ + H[N(μ, σ²)]: the ½log 2π terms cancel.
    bound += float(np.sum(0.5 * mean_log_alpha - 0.5 * mean_alpha * (mu * mu + var)
                          + 0.5 * np.log(var) + 0.5))
    groups = slice(None) if prior == "ard" else slice(0, 1)
    a, b = shape[groups], rate[groups]
    e_alpha, e_log_alpha = mean_alpha[groups], mean_log_alpha[groups]
    log_prior = (PRIOR_SHAPE * math.log(PRIOR_RATE) - special.gammaln(PRIOR_SHAPE)
                 + (PRIOR_SHAPE - 1.0) * e_log_alpha - PRIOR_RATE * e_alpha)
    entropy = a - np.log(b) + special.gammaln(a) + (1.0 - a) * special.digamma(a)
    bound += float(np.sum(log_prior + entropy))
    return bound
