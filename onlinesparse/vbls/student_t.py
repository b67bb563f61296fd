"""The alternative factorisation of Ting et al. section 4.3: ``Q(Z)Q(b, α)``.

The model (eq. 4.9, with one precision per weight as in figure 7b, or one for all as in 7a)
lets the branch noise scale with the prior's variance::

    y_i | z_i ~ N(1ᵀz_i, ψ_y)
    z_im | b_m, α_m ~ N(b_m f_m(x_i), ψ_zm/α_m)
    b_m | α_m ~ N(0, 1/α_m),   α_m ~ Gamma(a₀, b₀)

so that ``Q(b_m, α_m)`` need not factorise: it is a normal-gamma, ``b_m | α_m ~
N(μ_m, ψ_zm/(α_m(G_mm + ψ_zm)))`` with ``α_m ~ Gamma(â_m, b̂_m)``, whose marginal over b_m is
a Student-t with ``ν = 2â`` degrees of freedom (eq. 4.11; eq. 4.10 for the shared precision):

* ``â_m = a₀ + N/2`` (shared: ``a₀ + NM/2``),
* ``b̂_m = b₀ + [Σ_i⟨z_im²⟩ − (Σ_i⟨z_im⟩f_im)²/(G_mm + ψ_zm)]/(2ψ_zm)`` (shared: the sum over m),
* ``μ_m = Σ_i⟨z_im⟩f_im/(G_mm + ψ_zm)``,
* ``σ²_m = (b̂_m ψ_zm/â_m)/(G_mm + ψ_zm)``, the Student-t's squared scale.

The E-step is the one of section 3.1 with the branch noise ``ψ'_zm = ψ_zm⟨α_m⟩⁻¹``
(``⟨α_m⟩ = â_m/b̂_m``) and ``b → μ``: with ``s' = ψ_y + Σψ'_zm``, ``ρ = (c − Gμ)/s'`` and
``Σe² = RSS/s'²``, every sum the update needs is read from the statistics in O(M²):
``Σ_i⟨z_im⟩f_im = μ_m G_mm + ψ'_m ρ_m`` and
``Σ_i⟨z_im²⟩ = μ_m²G_mm + 2μ_mψ'_mρ_m + ψ'_m²Σe² + N(ψ'_m − ψ'_m²/s')``.
The M-step (the paper leaves it implicit, as for 4.1–4.2) maximises the expected complete
log-likelihood over ψ_zm: ``ψ_zm ← ⟨α_m⟩Σ_i⟨(z_im − μ_m f_im)²⟩/N + ψ_zm G_mm/(N(G_mm + ψ_zm))``
(the last term is ``⟨α_m b_m²⟩ − ⟨α_m⟩μ_m²`` times G_mm), and ψ_y as in 3.1 with s'.

At the fixed point ``⟨α_m⟩μ_m = ρ_m``, i.e. ``(G + s'·diag⟨α⟩)μ = c``: the same ridge form as
the factorised model's, with the noise s'.

Relevance (the paper's footnote 5): a weight is relevant when a t-test rejects ``b_m = 0``
at the 5 % level, ``|μ_m|/σ_m > t_{ν, 0.975}``.

Predictive distribution (the analogue of eq. 4.12): marginalising z, b and α,
``y | x`` has mean ``μᵀf(x)`` and variance
``ψ_y + Σ_m ψ_zm E[1/α_m] + Σ_m f_m(x)² Var(b_m)`` with ``E[1/α_m] = b̂_m/(â_m − 1)`` and
``Var(b_m) = σ²_m ν/(ν − 2)`` (before these moments exist, â ≤ 1 or ν ≤ 2: 1/⟨α_m⟩ and
σ²_m); it is reported as a Student-t with ν = 2â degrees of freedom and
that variance (a sum of Student-t terms with the same ν, matched in its first two moments).
"""

from __future__ import annotations

import math

import numpy as np
from river.proba import base as proba_base
from scipy import special, stats

from onlinesparse.vbls import engine

__all__ = ["StudentT", "initial_state", "sweep", "fit", "predictive", "t_statistics",
           "relevant", "centre"]

_TINY = float(np.finfo(float).tiny)


class StudentT(proba_base.ContinuousDistribution):
    """A Student-t distribution (location ``mu``, scale ``scale``, ``df`` degrees of freedom)
    with river's distribution interface, for the predictive of the section 4.3 model.
    ``sigma`` is its standard deviation (``scale·√(df/(df − 2))``, for df > 2)."""

    def __init__(self, mu: float, scale: float, df: float, seed: int | None = None) -> None:
        super().__init__(seed)
        self.mu = float(mu)
        self.scale = float(scale)
        self.df = float(df)

    @property
    def sigma(self) -> float:
        if self.df > 2.0:
            return self.scale * math.sqrt(self.df / (self.df - 2.0))
        return math.inf

    @property
    def n_samples(self) -> float:
        return self.df

    @property
    def mode(self) -> float:
        return self.mu

    def __call__(self, x: float) -> float:
        return float(stats.t.pdf(x, self.df, loc=self.mu, scale=self.scale))

    def cdf(self, x: float) -> float:
        return float(stats.t.cdf(x, self.df, loc=self.mu, scale=self.scale))

    def interval(self, level: float) -> tuple[float, float]:
        """The central interval holding ``level`` of the probability."""
        half = float(stats.t.ppf(0.5 + 0.5 * level, self.df)) * self.scale
        return self.mu - half, self.mu + half

    def sample(self) -> float:
        return self.mu + self.scale * self._rng.gauss(0.0, 1.0) / math.sqrt(
            self._rng.gammavariate(0.5 * self.df, 2.0) / self.df)

    def update(self, x: float) -> None:  # a posterior predictive is not fitted to samples
        raise NotImplementedError("a predictive distribution is not updated by samples")

    def revert(self, x: float) -> None:
        raise NotImplementedError("a predictive distribution is not updated by samples")

    def __repr__(self) -> str:
        return f"t(μ={self.mu:.3f}, σ={self.scale:.3f}, ν={self.df:.1f})"


def centre(gram: np.ndarray, cross: np.ndarray, yy: float
           ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, float]:
    """The statistics of the inputs and the targets about their means, from those of
    ``[1, x]`` (column 0 the constant): ``G' = X'ᵀX'``, ``c' = X'ᵀy'``, ``y'ᵀy'``, the input
    sums and the target sum. In model 4.9 a flat prior on the bias cannot be written (its
    branch noise scales with 1/α), so the bias is the intercept of the centred problem,
    ``b₀ = (Σy − Σxᵀμ)/p``: the paper's experiments centre the data the same way."""
    count = float(gram[0, 0])
    sums, target_sum = gram[0, 1:], float(cross[0])
    if count <= 0.0:
        return gram[1:, 1:].copy(), cross[1:].copy(), yy, sums.copy(), target_sum
    g = gram[1:, 1:] - np.outer(sums, sums) / count
    c = cross[1:] - sums * (target_sum / count)
    return g, c, max(yy - target_sum * target_sum / count, 0.0), sums.copy(), target_sum


def initial_state(n_units: int, target_second_moment: float, prior: str = "ard"
                  ) -> engine.VBLSState:
    """The factorised model's start (:func:`~onlinesparse.vbls.engine.initial_state`, ⟨α⟩ = 1,
    Ting et al. 4.4) with the shape ``â`` of 4.10 / 4.11 set by the first sweep."""
    if prior not in ("ard", "shared"):
        raise ValueError(f"the Student-t factorisation needs prior 'ard' or 'shared', "
                         f"got {prior!r}")
    return engine.initial_state(n_units, target_second_moment, prior)


def sweep(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray, yy: float,
          count: float, prior: str = "ard") -> float:
    """One EM sweep of the section 4.3 model (module docstring), O(M²); returns the relative
    change of the weights."""
    if count <= 0.0 or state.n_units == 0:
        return 0.0
    # The floor of the targets' current second moment, as the Gaussian sweeps (engine.
    # _raise_noise_floor): ψ_y ≥ the floor keeps s ≥ the smallest normal float.
    floor = engine.raise_noise_floor(state, yy, count)
    diag = np.diagonal(gram)
    psi, mu = state.branch_noise, state.weights
    alpha = state.precisions
    psi_eff = psi / alpha
    psi_y = state.output_noise
    s = psi_y + float(psi_eff.sum())
    residual = cross - gram @ mu
    rss = max(float(yy - mu @ (cross + residual)), 0.0)
    rho = residual / s
    sq_sum = rss / s / s  # (not rss/(s·s): s² underflows for targets of order 1e-80)
    zf = mu * diag + psi_eff * rho
    zz = (mu * mu * diag + 2.0 * mu * psi_eff * rho + psi_eff * psi_eff * sq_sum
          + count * (psi_eff - psi_eff * psi_eff / s))
    denom = diag + psi
    new_mu = zf / denom
    spread = np.maximum(zz - zf * zf / denom, 0.0) / (2.0 * psi)
    if prior == "ard":
        shape = np.full(state.n_units, engine.PRIOR_SHAPE + 0.5 * count)
        rate = engine.PRIOR_RATE + spread
    else:
        shape = np.full(state.n_units, engine.PRIOR_SHAPE + 0.5 * count * state.n_units)
        rate = np.full(state.n_units, engine.PRIOR_RATE + float(spread.sum()))
    new_alpha = shape / rate
    branch = zz - 2.0 * new_mu * zf + new_mu * new_mu * diag
    branch_noise = np.maximum(new_alpha * branch / count + psi * diag / (count * denom), floor)
    output_noise = max((psi_y / s) ** 2 * rss / count + psi_y * (s - psi_y) / s, floor)
    # Finite or unchanged (engine.update_posteriors): every rate and ψ is positive, so
    # rateᵀψ is finite exactly when all are (np.maximum passes a NaN on).
    if not (math.isfinite(float(rate @ branch_noise)) and math.isfinite(output_noise)):
        return 0.0
    state.branch_noise, state.output_noise = branch_noise, output_noise
    state.precision_shape, state.precision_rate = shape, rate
    state.weight_variances = (rate * psi / shape) / denom
    state.noise_precision = 1.0 / s
    top = float(np.max(np.abs(new_mu)))
    change = float(np.max(np.abs(new_mu - mu))) / top if top > 0.0 else 0.0
    state.weights = new_mu
    state.n_sweeps += 1
    state.last_change = change
    return change


def fit(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray, yy: float,
        count: float, prior: str = "ard", tol: float = 1e-10,
        max_sweeps: int = 20_000) -> int:
    """Sweep until the relative change of the weights stays below ``tol`` for three sweeps
    (or ``max_sweeps``); returns the sweeps run."""
    calm = 0
    for n in range(1, max_sweeps + 1):
        calm = calm + 1 if sweep(state, gram, cross, yy, count, prior) < tol else 0
        if calm >= 3:
            return n
    return max_sweeps


def degrees_of_freedom(state: engine.VBLSState) -> np.ndarray:
    """ν_m = 2â_m of every weight's marginal (eq. 4.10 / 4.11)."""
    return 2.0 * state.precision_shape


def t_statistics(state: engine.VBLSState) -> np.ndarray:
    """``|μ_m|/σ_m`` for every weight (0 where σ_m = 0)."""
    scale = np.sqrt(state.weight_variances)
    out = np.zeros(state.n_units)
    np.divide(np.abs(state.weights), scale, out=out, where=scale > 0.0)
    return out


def relevant(state: engine.VBLSState, level: float = 0.05) -> np.ndarray:
    """The t-test of footnote 5: ``b_m = 0`` rejected at ``level`` (two-sided)."""
    critical = special.stdtrit(np.maximum(degrees_of_freedom(state), _TINY), 1.0 - 0.5 * level)
    return t_statistics(state) > critical


def predictive(state: engine.VBLSState, row: np.ndarray) -> tuple[float, float, float]:
    """Mean, variance and degrees of freedom of the predictive (module docstring) at the
    centred row ``row``; the variance is the Student-t's (its scale² is variance·(ν − 2)/ν)."""
    shape, rate = state.precision_shape, state.precision_rate
    nu = float(np.min(degrees_of_freedom(state))) if state.n_units else math.inf
    # E[1/α] = b̂/(â − 1) exists for â > 1 (two patterns or more); before, 1/⟨α⟩ = b̂/â.
    inverse_alpha = np.where(shape > 1.0, rate / np.maximum(shape - 1.0, _TINY), rate / shape)
    # Var(b_m) = σ²ν/(ν − 2) exists for ν > 2; before, the squared scale σ².
    inflation = nu / (nu - 2.0) if nu > 2.0 else 1.0
    mean = float(row @ state.weights)
    var = (state.output_noise + float(state.branch_noise @ inverse_alpha)
           + float((row * row) @ state.weight_variances) * inflation)
    return mean, var, nu
