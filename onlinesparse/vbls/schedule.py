"""The online schedule of VBLS regression: one pass that tracks the batch fixed point.

The EM sweeps of :mod:`onlinesparse.vbls.engine` reach the VBLS fixed point of Ting et al.
(sections 3.1, 4.1–4.2) slowly in high dimension, for two reasons this module removes without
changing the fixed point (every equation below is a fixed point of the paper's updates):

* **The weights.** The parallel backfitting update (eq. 4.4 / 4.8) moves each weight by
  the step ``ψ_zm/s`` (3.2), about 1/M of its correction; with correlated inputs it needs
  thousands of sweeps. Its fixed point is the ridge system ``(G + s·diag⟨α⟩)⟨b⟩ = c``
  (set ⟨b_m⟩ unchanged in 4.8). :func:`solve_weights` solves it: exactly (Cholesky) for
  M ≤ :data:`EXACT_UNITS`, otherwise by ``iterations`` steps of Jacobi-preconditioned
  conjugate gradients warm-started from the current ⟨b⟩, O(M²) each.
* **The noise split.** Given ⟨b⟩ and ⟨α⟩, the M-step of 3.1 for ψ_zm changes it by
  ``ψ_zm²(Σe² − Σκ)/p + σ²_bm G_mm/p`` per sweep, a relative step of order ``ψ_zm/s ≈ 1/M``,
  so the noise s = ψ_y + Σψ_zm relaxes over hundreds of sweeps, and while it is too large
  the prior's precision ``s⟨α_m⟩`` prunes relevant inputs. Its fixed point has a closed
  form (:func:`noise_fixed_point`): with ``k = Σκ − Σe² = p/s − RSS/s²`` and
  ``σ²_bm = ψ_zm/(G_mm + ψ_zm⟨α_m⟩)`` (4.7), a zero step means
  ``k⟨α_m⟩ψ_zm² + kG_mmψ_zm − G_mm = 0``, one positive root per unit for each s; the output
  noise's update ``ψ_y ← (ψ_y/s)²RSS/p + ψ_y(s − ψ_y)/s`` shrinks ψ_y whenever s > RSS/p,
  so its fixed point is ψ_y = 0 (kept at the noise floor). What is left is one equation in
  the scalar s, ``s = ψ_y + Σ_m ψ_zm(s)``, solved in the direction the EM would move s
  (so the root is the one the sweeps would reach). With a constant ⟨α⟩ it
  gives ``s = RSS/(p − M)``: the noise has no finite fixed point while p ≤ M.

One *fixed-point sweep* (:func:`fixed_point_sweep`) is: solve for ⟨b⟩, then the paper's
sweep (:func:`~onlinesparse.vbls.engine.sweep_regression`: E-step, ``Q(b)``, ``Q(α)`` and
the noise M-step), then the noise at its fixed point. Batch (:func:`fit_fixed_point`), with
exact solves, it converges in tens of sweeps where the plain EM needs tens of thousands.

The online schedule (:class:`OnlineSchedule`) adds, for a stream:

* **No lock-in while p ≤ M.** While the memory holds no more patterns than units, the
  precisions stay at the prior's ⟨α⟩ = a₀/b₀ = 1 (4.4) and the noise follows the plain EM
  step: with fewer patterns than weights the data cannot say which inputs matter, and the
  ARD update would prune most of them on a noise that has no fixed point (above).
* **Restarts from a neutral point.** ARD has several fixed points; the one reached from a
  state fitted on few patterns can keep relevant inputs pruned (at the precision cap the
  factorised posterior lets a unit back only when its t-statistic given the others exceeds
  about √11). So a second state, started from the neutral point of
  :func:`~onlinesparse.vbls.engine.initial_state` (every ⟨α⟩ at the prior, the noise at the
  targets' second moment), is swept once per sample beside the model on the same
  statistics; after ``restart_every`` samples (or sooner, once it has converged) it replaces
  the model's state if its variational lower bound (:func:`~onlinesparse.vbls.engine.
  lower_bound_regression`) is higher, and a new one starts. With ARD every other restart
  starts instead from the model's state with its capped inputs re-admitted
  (:func:`readmission`), when the test re-admits any.

The batch fit (``VBLSRegressor.refine`` / ``learn_many``) adds **re-admission**
(:func:`readmission`): once the fixed-point sweeps have converged, every input at the
precision cap whose t-statistic given all the others passes Tipping and Faul's test (t² above
:data:`READMIT_T2`) is put back at the marginal likelihood's optimum for its precision, the
sweeps run again, and the result is kept if its lower bound is higher. On the 200-input
design of benchmarks/vbls_synthetic.py this raised the bound in three trials of five. The
online schedule offers it as every other restart (below), judged by the lower bound like
the restarts from the neutral point.

Work per sample, worst case: two fixed-point sweeps (the model's and the restart's) of
``sweeps_per_sample`` each, O(M²·(iterations + 4)) per sweep for M > EXACT_UNITS (the
conjugate-gradient steps, the E-step's ``G⟨b⟩`` and the residual sum of squares) plus
O(M) per evaluation of the noise equation (Newton's method inside a bracket, compiled: a
few evaluations, at most 60 to bracket and 200 to converge), and one lower bound, O(M²),
when a restart ends, and one re-admission test, O(M³) with M ≤ READMIT_ONLINE_UNITS, when
a re-admission restart begins (one sample in about 2·``restart_every``); O(M³) ≤
EXACT_UNITS·M² for smaller models.
Nothing depends on the number of patterns.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import lapack

from onlinesparse.vbls import _compiled, engine

__all__ = ["EXACT_UNITS", "READMIT_T2", "READMIT_ONLINE_UNITS", "solve_weights",
           "noise_fixed_point",
           "fixed_point_sweep", "fit_fixed_point", "readmission", "OnlineSchedule"]

# Up to this many units the weights are solved exactly (Cholesky, M³/3 flops: at M = 64
# about as much as 4 conjugate-gradient steps' matrix-vector products cost at M = 200).
EXACT_UNITS = 64
# Conjugate-gradient steps per fixed-point sweep for larger models. On the 200-input design
# of benchmarks/vbls_synthetic.py 2, 5 and 10 steps per sample gave the same one-pass error
# (warm starts: the system changes little from one sample to the next); 5 leaves a margin.
CG_ITERATIONS = 5
_TINY = float(np.finfo(float).tiny)


def solve_weights(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray,
                  iterations: int | None = CG_ITERATIONS) -> None:
    """Move ⟨b⟩ to (or towards) the fixed point of eq. 4.8, ``(G + s·diag⟨α⟩)⟨b⟩ = c``.

    Exact (Cholesky) when ``iterations`` is None or M ≤ :data:`EXACT_UNITS`; otherwise
    ``iterations`` steps of conjugate gradients preconditioned by the diagonal, from the
    current ⟨b⟩. A singular system (a unit without data and without prior) is left to the
    sweeps."""
    m = state.n_units
    if m == 0:
        return
    ridge = state.total_noise * state.precisions
    if iterations is None or m <= EXACT_UNITS:
        system = gram.copy()
        system[np.diag_indices(m)] += ridge
        if not np.all(np.isfinite(system)):
            return
        # LAPACK directly: at a stream's small M the wrappers cost more than the solve.
        factor, info = lapack.dpotrf(system, lower=1)
        if info != 0:
            return
        solution, info = lapack.dpotrs(factor, cross, lower=1)
        if info == 0 and np.all(np.isfinite(solution)):
            state.weights = solution
        return
    # The system is applied as G·v + ridge∘v: forming it would copy G (M² numbers) per call.
    diag = np.diagonal(gram) + ridge
    diag[~(diag > 0.0)] = 1.0
    x = state.weights.copy()
    residual = cross - gram @ x - ridge * x
    z = residual / diag
    direction = z.copy()
    rz = float(residual @ z)
    for _ in range(iterations):
        if not rz > 0.0:
            break
        product = gram @ direction + ridge * direction
        curvature = float(direction @ product)
        if not curvature > 0.0:
            break
        step = rz / curvature
        x += step * direction
        residual -= step * product
        z = residual / diag
        rz_new = float(residual @ z)
        direction = z + (rz_new / rz) * direction
        rz = rz_new
    if np.all(np.isfinite(x)):
        state.weights = x


def _branch_noises(t: float, alpha: np.ndarray, gram_diag: np.ndarray,
                   floor: float) -> np.ndarray:
    """The positive root of ``kαψ² + kGψ − G = 0`` for every unit, in units of the noise
    ``t = 1/k``: ``2Gt/(G + √(G² + 4αGt))`` (no cancellation, and no k·G that overflows
    when the noise is near the smallest float); a unit without data gets the floor."""
    root = np.sqrt(gram_diag * gram_diag + 4.0 * alpha * gram_diag * t)
    out = np.full(len(gram_diag), floor)
    np.divide(2.0 * gram_diag * t, gram_diag + root, out=out, where=gram_diag > 0.0)
    return np.maximum(out, floor)


def noise_fixed_point(state: engine.VBLSState, gram_diag: np.ndarray, rss: float,
                      count: float) -> bool:
    """Set ψ_y and every ψ_zm to the fixed point of their M-step updates (Ting et al. 3.1)
    for the current ⟨b⟩ (through ``rss``) and ⟨α⟩; see the module docstring. Returns False,
    leaving the state as it was, when the noise equation has no root in the direction the
    EM moves s (e.g. p ≤ M with moderate precisions)."""
    if count <= 0.0 or state.n_units == 0:
        return False
    # The floor of the targets' current second moment (engine.noise_floor): the sweep
    # before this one moved state.scale to yy/count.
    floor = engine.noise_floor(state.scale)
    alpha = np.ascontiguousarray(state.precisions, dtype=float)
    lowest = max(rss / count, floor)
    target = _compiled.noise_root(alpha, np.ascontiguousarray(gram_diag, dtype=float),
                                  float(rss), float(count), floor,
                                  max(state.total_noise, lowest * (1.0 + 1e-9)), lowest)
    if not math.isfinite(target):
        return False
    # t = 1/k = s/(p − RSS/s) (_compiled._noise_excess: s² underflows for tiny targets)
    branch = _branch_noises(target / (count - rss / target), alpha, gram_diag, floor)
    # Finite or unchanged (engine.update_posteriors): ψ finite and 1/s finite.
    if not (np.all(np.isfinite(branch)) and math.isfinite(1.0 / (floor + branch.sum()))):
        return False
    state.branch_noise = branch
    state.output_noise = floor
    state.noise_precision = 1.0 / state.total_noise
    return True


def _rss(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray, yy: float) -> float:
    mu = state.weights
    return max(float(yy - 2.0 * mu @ cross + mu @ (gram @ mu)), 0.0)


def fixed_point_sweep(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray,
                      yy: float, count: float, prior: str = "ard",
                      precision_cap: float = math.inf,
                      iterations: int | None = CG_ITERATIONS) -> float:
    """One fixed-point sweep (module docstring): ⟨b⟩ by :func:`solve_weights`, the paper's
    sweep (:func:`~onlinesparse.vbls.engine.sweep_regression`), then the noise at its fixed
    point (when it has one). Returns ``max|Δ⟨b⟩| / max|⟨b⟩|`` over the whole sweep."""
    if count <= 0.0:
        return 0.0
    before = state.weights.copy()
    solve_weights(state, gram, cross, iterations)
    engine.sweep_regression(state, gram, cross, yy, count, prior, precision_cap)
    noise_fixed_point(state, np.diagonal(gram), _rss(state, gram, cross, yy), count)
    top = float(np.max(np.abs(state.weights))) if state.n_units else 0.0
    change = float(np.max(np.abs(state.weights - before))) / top if top > 0.0 else 0.0
    state.last_change = change
    return change


def fit_fixed_point(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray, yy: float,
                    count: float, prior: str = "ard", precision_cap: float = math.inf,
                    tol: float = 1e-10, max_sweeps: int = 10_000) -> int:
    """Fixed-point sweeps with exact solves, warm-started from ``state``, until the relative
    change of the weights stays below ``tol`` for three sweeps in a row (or ``max_sweeps``);
    returns the sweeps run. O(M³) per sweep."""
    calm = 0
    for n in range(1, max_sweeps + 1):
        change = fixed_point_sweep(state, gram, cross, yy, count, prior, precision_cap, None)
        calm = calm + 1 if change < tol else 0
        if calm >= 3:
            return n
    return max_sweeps


# A unit at the precision cap is offered back (:func:`readmission`) when its t² given the
# others exceeds this: for an isolated unit the factorised posterior's precision update has
# a finite fixed point only when t² ≥ 4 (module docstring), so below it a re-added unit
# would drift back to the cap.
READMIT_T2 = 4.0
# The online schedule re-admits only up to this many units: the test's factorisation is
# O(M³) on the sample that starts the restart (about 1 ms at M = 200, a few at 256), which
# above this would be the one sample's dominant cost by far (the sweeps are O(M²) there).
READMIT_ONLINE_UNITS = 256


def readmission(state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray,
                precision_cap: float) -> engine.VBLSState | None:
    """Tipping and Faul's test, for the units at the precision cap: a copy of ``state`` in
    which every capped unit whose evidence says it belongs is back at its optimum, or None
    when there is none. O(M³).

    With ``P = G + s·diag⟨α⟩`` (the flat units' α at 0) the marginal covariance of the
    targets is ``C = sI + HA⁻¹Hᵀ`` and ``C⁻¹ = (I − HP⁻¹Hᵀ)/s`` (Woodbury), so for unit m
    ``S̃ = (G_mm − (GP⁻¹G)_mm)/s`` and ``Q̃ = (c_m − (GP⁻¹c)_m)/s``; without the unit in C,
    ``S = αS̃/(α − S̃)`` and ``Q = αQ̃/(α − S̃)`` (Tipping and Faul 2003). ``t² = Q²/S`` is
    its squared t-statistic given all the others; a capped unit with ``t² >``
    :data:`READMIT_T2` gets ``⟨α⟩ = S/(t² − 1)``, the marginal likelihood's optimum. The
    caller keeps the copy only if its fixed point has the higher lower bound: this is a
    proposal, not a step of the EM."""
    if state.n_units == 0 or not math.isfinite(precision_cap):
        return None
    ratios = engine.precision_ratio(state, np.diagonal(gram))
    capped = np.flatnonzero(ratios >= precision_cap * (1.0 - 1e-6))
    if capped.size == 0:
        return None
    s = state.total_noise
    alpha = state.precisions
    system = gram.copy()
    system[np.diag_indices(state.n_units)] += s * alpha
    factor, info = lapack.dpotrf(system, lower=1)
    if info != 0:
        return None
    columns = np.ascontiguousarray(gram[:, capped])
    solved = lapack.dpotrs(factor, columns, lower=1)[0]  # P⁻¹G for the capped columns
    mean = lapack.dpotrs(factor, cross, lower=1)[0]  # P⁻¹c
    s_tilde = (np.diagonal(gram)[capped] - np.einsum("ij,ij->j", columns, solved)) / s
    q_tilde = (cross[capped] - columns.T @ mean) / s
    a = alpha[capped]
    gap = a - s_tilde
    with np.errstate(divide="ignore", invalid="ignore"):
        big_s = a * s_tilde / gap
        big_q = a * q_tilde / gap
        t2 = big_q * big_q / big_s
    back = (gap > 0.0) & (big_s > 0.0) & (t2 > READMIT_T2)
    if not np.any(back):
        return None
    out = state.copy()
    units = capped[back]
    new_alpha = big_s[back] / (t2[back] - 1.0)
    out.precision_rate[units] = out.precision_shape[units] / new_alpha
    return out


def neutral_state(n_units: int, yy: float, count: float, prior: str,
                  n_flat: int = 0) -> engine.VBLSState:
    """The neutral point of a restart: :func:`~onlinesparse.vbls.engine.initial_state` on the
    current statistics (⟨b⟩ = 0, every ⟨α⟩ at the prior's 1, the noise the targets' second
    moment)."""
    return engine.initial_state(n_units, yy / count if count > 0.0 else 1.0, prior,
                                n_flat=n_flat)


class OnlineSchedule:
    """What one ``learn_one`` does to a VBLS regression state (module docstring).

    Parameters
    ----------
    prior, precision_cap
        As :class:`~onlinesparse.vbls.VBLSRegressor`.
    sweeps_per_sample
        Fixed-point sweeps of the model (and of the restart) per sample.
    restart_every
        Samples a restart from the neutral point runs before it is compared with the model
        (0: no restarts).
    """

    def __init__(self, prior: str, precision_cap: float, sweeps_per_sample: int,
                 restart_every: int) -> None:
        self.prior = prior
        self.precision_cap = precision_cap
        self.sweeps_per_sample = sweeps_per_sample
        self.restart_every = restart_every
        self.restart: engine.VBLSState | None = None
        self.restart_age = 0
        self.n_restarts_kept = 0
        # Restarts alternate between the neutral point and a re-admission (readmission):
        # whether the next one is a re-admission.
        self.readmit_next = False

    def _frozen_sweep(self, state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray,
                      yy: float, count: float) -> None:
        """While p ≤ M: ⟨α⟩ held at the prior's, the noise at the residual variance of the
        flat-prior units (the bias) alone, split evenly as
        :func:`~onlinesparse.vbls.engine.initial_state` splits it (the noise has no fixed
        point yet), the weights solved for those (eq. 4.8 at its fixed point, a ridge
        regression with λ = s), then the paper's sweep for the posterior variances."""
        if self.prior != "none":
            shape, rate = engine.prior_posterior(self.prior, state.n_units)
            state.precision_shape = np.full(state.n_units, shape)
            state.precision_rate = np.full(state.n_units, rate)
        flat = state.n_flat
        explained = 0.0
        if flat:
            solution = np.linalg.lstsq(gram[:flat, :flat], cross[:flat], rcond=None)[0]
            explained = float(cross[:flat] @ solution)
        if yy > 0.0:  # (the floor of the targets' current second moment, as every sweep)
            state.scale = yy / count
        floor = engine.noise_floor(state.scale)
        share = max((yy - explained) / count, floor) / (state.n_units + 1)
        state.branch_noise = np.full(state.n_units, share)
        state.output_noise = share
        solve_weights(state, gram, cross, None)
        engine.sweep_regression(state, gram, cross, yy, count, self.prior, self.precision_cap)
        if self.prior != "none":
            state.precision_shape = np.full(state.n_units, shape)
            state.precision_rate = np.full(state.n_units, rate)

    def _sweeps(self, state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray,
                yy: float, count: float) -> float:
        change = 0.0
        for _ in range(self.sweeps_per_sample):
            if count <= state.n_units:
                self._frozen_sweep(state, gram, cross, yy, count)
            else:
                change = fixed_point_sweep(state, gram, cross, yy, count, self.prior,
                                           self.precision_cap)
        return change

    def _new_restart(self, state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray,
                     yy: float, count: float) -> engine.VBLSState:
        """The next restart: the neutral point, or every other time (with ARD and at most
        :data:`READMIT_ONLINE_UNITS` units) the model's state with the capped inputs that
        pass Tipping and Faul's test re-admitted (:func:`readmission`, O(M³) on that
        sample), when there are any."""
        # (getattr: a schedule pickled before re-admission existed)
        readmit = getattr(self, "readmit_next", False)
        self.readmit_next = not readmit
        if readmit and self.prior == "ard" and state.n_units <= READMIT_ONLINE_UNITS:
            proposal = readmission(state, gram, cross, self.precision_cap)
            if proposal is not None:
                return proposal
        return neutral_state(state.n_units, yy, count, self.prior, state.n_flat)

    def step(self, state: engine.VBLSState, gram: np.ndarray, cross: np.ndarray, yy: float,
             count: float) -> engine.VBLSState:
        """Sweep ``state`` (and the restart) on the statistics; returns the state to keep."""
        self._sweeps(state, gram, cross, yy, count)
        if not self.restart_every or count <= state.n_units or self.prior == "none":
            return state
        if self.restart is None or self.restart.n_units != state.n_units:
            self.restart = self._new_restart(state, gram, cross, yy, count)
            self.restart_age = 0
        change = self._sweeps(self.restart, gram, cross, yy, count)
        self.restart_age += 1
        if self.restart_age < self.restart_every and not (self.restart_age > 3
                                                          and change < 1e-8):
            return state
        candidate, self.restart = self.restart, None
        kept = engine.lower_bound_regression(state, gram, cross, yy, count, self.prior)
        challenger = engine.lower_bound_regression(candidate, gram, cross, yy, count,
                                                   self.prior)
        if challenger > kept:
            self.n_restarts_kept += 1
            candidate.n_sweeps += state.n_sweeps
            return candidate
        return state
