"""The batch fit of :class:`~onlinesparse.vbls.VBLSKernelRegressor`: VBLS-RVM on a window.

Ting et al. (5.2) run VBLS-RVM from a kernel on every training pattern and prune the kernels
whose precision ⟨α_m⟩ diverges. This module does that on the patterns a window holds, with two
departures: ``Q(b)`` keeps the full covariance of
eq. 5.2 in the precision update (the factorised posterior under-fits overlapping kernels), and
the precision and noise updates are taken in their fixed-point forms. It also holds the rule
that chooses the input metric and the kernel radii of the start set (the Gaussian-process
evidence route Ting et al. recommend after eq. 5.4, :mod:`onlinesparse.vbls.evidence`).

Everything here is a pure function of arrays; the estimator installs the result.

A property of the factorised posterior that shapes the results (derived from the fixed point
of 4.7 for an isolated unit, with ``u = s⟨α_m⟩/G_mm`` its precision ratio, ``t²`` its squared
t-statistic and ``ρ = ψ_zm/s`` its share of the noise): a finite ⟨α_m⟩ needs
``t² = (1 + u)²/(u(1 + ρu))`` to have a solution. With one unit (ρ = 1) that is t² > 1, the
RVM's own threshold (Tipping and Faul's ``q² > s``); with M units sharing the noise, ρ ≈ 1/M
and the minimum is close to t² = 4. VBLS-RVM therefore keeps fewer, stronger kernels than
an RVM on the same data (the paper's table 3 shows the same on sinc: 4.8 against 6.7), and
grown one kernel at a time under this posterior it under-fits (on Tipping's sinc 3–4
kernels and an nMSE about twice the RVM's).

The online path lives with this (its sweeps are O(M²), the bounded work a stream needs). The
batch path (:meth:`VBLSKernelRegressor.refine`, ``learn_many``)
does not have to: it runs VBLS-RVM as the paper's 5.2 does, from a kernel on every stored
pattern, pruning the ones whose ⟨α_m⟩ diverges, but with the full-covariance posterior of
eq. 5.2 in the precision update, whose fixed points are the RVM's (``⟨α_m⟩(μ_m² + Σ_mm) = 1``,
the marginal likelihood's stationary points, where the inclusion threshold is t² = 1).

Why the projection and the joint start matter online: under the factorised posterior a
kernel is kept only if it explains enough of the residual *given the others* (above), and
a newcomer judged against weights that have not yet made room for it (backfitting moves
collinear weights slowly) is pruned before it can help. Overlapping
kernels whose weights only matter together (the usual RVM solution) could therefore
never be grown one at a time; they are stable once reached (e.g. after a batch fit).

Kernel width and input metric. Kernels of several radii compete for the same data: every
proposed centre enters the pool at each radius of a ladder, the admission test picks the
width that explains the residual best, and ARD prunes the ones that stop mattering; the
batch fit starts from every width. With ``radii=None`` the batch fit chooses the distance
metric the Gaussian-process way, by the evidence (the route Ting et al. recommend after
eq. 5.4 instead of maximising the RVM's own likelihood over the metric, which favours
narrow kernels that fit the noise):

* ``width="ard"`` (default): the squared-exponential Gaussian process with one length
  scale per input, ``σ_f²·exp(−½Σ_i (x_i − x'_i)²/ℓ_i²) + σ_n²``, of largest marginal
  likelihood on the window (:func:`evidence_hyperparameters`, analytic gradients,
  L-BFGS-B). From then on every input, stored and future, is divided by its ℓ_i
  (the kernel regressor's ``input_scales``) before a kernel sees it, and the kernels are
  isotropic in that scaled space with the radii ``r̂·(1, √2)``, ``r̂ = √2``: the radius of
  the kernels in the Gaussian process's own posterior-mean expansion; the sparse model
  replaces that dense expansion by a few kernels, each covering the data of many, so the
  ladder starts there and goes half an octave up. An input the evidence finds irrelevant
  gets a length of up to 1000 standard deviations and all but drops out of the distance. Measured
  (benchmarks/vbls_kernel.py and five further data sets): equal to ``"evidence"`` with
  one input, better on every data set with several (Friedman 1: nMSE 0.009 against
  0.128). Cost: O(n³ + n²d) per evaluation of the evidence on at most 512 stored
  patterns (the isotropic start on at most 128), about a hundred evaluations on Boston
  housing's 404 × 13 training set (0.4 s of CPU here, about half of that batch fit).
* ``width="evidence"``: the isotropic special case, one length ℓ̂ for every input
  (:func:`evidence_length_scale`); the inputs are not rescaled and the radii are
  ``r̂·(1, √2)`` with ``r̂ = √2·ℓ̂``, the same rule.
* ``width="fixed"``: ``(1/√2, √2)·√d``, the earlier rule (chosen on sinc and Boston
  housing; it over-fits data whose noise is large or whose inputs are many).
* Given ``radii`` are in input units and win over ``width`` (no rescaling).

"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg
from scipy.linalg import lapack

from onlinesparse.orr.kernels import KERNELS, BasisSpec, radial_profile
from onlinesparse.vbls.evidence import evidence_hyperparameters, evidence_length_scale

__all__ = ["WIDTHS", "start_design", "batch_metric", "full_posterior",
           "precision_fixed_point", "noise_fixed_point", "fit_window"]

# * the batch start set with ``width="fixed"`` (the rule before the evidence width).
_FIXED_RADII = (math.sqrt(0.5), math.sqrt(2.0))
# The evidence width rule (``width="evidence"``): the batch start set has the radii
# r̂·(1, √2), where r̂ = √2·ℓ̂ is the radius of the kernels in the posterior-mean expansion of
# the Gaussian process whose marginal likelihood is largest on the window (ℓ̂ its length
# scale, :func:`evidence_length_scale`): the sparse model replaces that dense expansion by a
# few kernels, each of which has to cover the data of many, so no narrower than r̂, and the
# ladder goes half an octave up from there.
_EVIDENCE_LADDER = (1.0, math.sqrt(2.0))
# The batch fit's width rules (``width``): see :func:`batch_metric`.
WIDTHS = ("evidence", "ard", "fixed")
_TINY = float(np.finfo(float).tiny)


def _evenly_spaced(n: int, k: int) -> np.ndarray:
    """Indices of at most ``k`` of ``n`` items spread evenly from the first to the last."""
    if n <= k:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, k).round().astype(int))


def start_design(kernel: str, max_start: int, radii: tuple[float, ...],
                 X: np.ndarray) -> tuple[list[BasisSpec], np.ndarray]:
    """The batch fit's start set: kernels of every radius centred on (at most
    ``max_start // len(radii)``) of the stored patterns ``X`` (already in the batch fit's
    metric) spread evenly over the window, and their W × K design matrix over them.
    O(W²·(d + R))."""
    per_radius = max(max_start // len(radii), 1)
    picks = _evenly_spaced(len(X), per_radius)
    centres = X[picks]
    sq = np.einsum("ij,ij->i", X, X)
    dist = np.maximum(sq[:, None] + sq[picks][None, :] - 2.0 * X @ centres.T, 0.0)
    kind = KERNELS[kernel]
    specs, blocks = [], []
    for radius in radii:
        blocks.append(radial_profile(kind, dist / (radius * radius)))
        specs.extend(BasisSpec.radial(c, radius, kernel) for c in centres)
    return specs, np.hstack(blocks)


def batch_metric(width: str, radii: tuple[float, ...] | None, X: np.ndarray,
                 y: np.ndarray) -> tuple[np.ndarray | None, tuple[float, ...]]:
    """The input metric and the radii of the batch fit's start set, O(n³) per evaluation
    of the evidence on n ≤ 512 stored patterns ``X`` (as they came) with targets ``y``.
    Returns the input scales (``None``: the inputs as they come) and the radii, in the space
    of the inputs divided by the scales.

    * ``radii`` if given (no scales: the radii are in input units);
    * ``width="ard"``: scales ``ℓ_1 … ℓ_d`` and radii ``r̂·(1, √2)`` with ``r̂ = √2``, the
      ℓ_i the length scales of the ARD Gaussian process of largest evidence on the window
      (:func:`evidence_hyperparameters` with ``ard=True``): in the scaled inputs
      ``x_i/ℓ_i`` its covariance is isotropic with unit length, i.e. its posterior mean is
      an expansion in kernels of radius √2 on the training inputs, the expansion the RVM
      sparsifies; the ladder goes half an octave up from there, as for ``"evidence"``;
    * ``width="evidence"``: no scales, ``r̂·(1, √2)`` with ``r̂ = √2·ℓ̂`` from the isotropic
      process (:func:`evidence_length_scale`), the same rule with one length for all;
    * ``width="fixed"``: no scales, ``(1/√2, √2)·√d``.
    """
    if radii is not None:
        return None, tuple(float(r) for r in radii)
    if width == "fixed":
        return None, tuple(r * math.sqrt(max(X.shape[1], 1)) for r in _FIXED_RADII)
    if width == "ard":
        scales, _, _ = evidence_hyperparameters(X, y, ard=True)
        return scales, tuple(math.sqrt(2.0) * r for r in _EVIDENCE_LADDER)
    centre = math.sqrt(2.0) * evidence_length_scale(X, y)
    return None, tuple(centre * r for r in _EVIDENCE_LADDER)


def cholesky_with_jitter(system: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of the posterior precision ``system`` (LAPACK potrf,
    upper triangle zeroed); where a column lies numerically inside the others' span, of
    ``system`` plus 1e-10 of its mean diagonal. Raises ``LinAlgError`` when even that is
    not positive definite."""
    factor, info = lapack.dpotrf(system, lower=1, clean=1)
    if info > 0:  # a column (numerically) inside the others' span
        jitter = 1e-10 * max(float(np.trace(system)) / len(system), _TINY)
        factor, info = lapack.dpotrf(system + jitter * np.eye(len(system)), lower=1,
                                     clean=1)
    if info != 0:
        raise linalg.LinAlgError(f"the posterior precision is not positive definite "
                                 f"(potrf {info})")
    return factor


def full_posterior(gram: np.ndarray, cross: np.ndarray, precisions: np.ndarray,
                   noise: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Gaussian posterior of the weights with full covariance, Ting et al. eq. 5.2:
    ``Σ_b = (diag⟨α⟩ + G/s)⁻¹ = s·P⁻¹`` with ``P = G + s·diag⟨α⟩``, and its mean
    ``μ = Σ_b c/s = P⁻¹c``. Returns μ, the diagonal of Σ_b and the inverse Cholesky factor
    ``L⁻¹`` of P (``Σ_b = s·L⁻ᵀL⁻¹``). O(M³)."""
    system = gram + noise * np.diag(precisions)
    if not np.all(np.isfinite(system)):  # (raw LAPACK would not say)
        raise linalg.LinAlgError("the posterior precision has non-finite entries")
    # LAPACK directly: this runs hundreds of times per batch fit, at M in the hundreds
    # for the first sweeps. potrf (M³/3) and trtri (M³/3, where a triangular solve
    # against the identity costs M³).
    factor = cholesky_with_jitter(system)
    inverse, info = lapack.dtrtri(factor, lower=1)
    if info != 0:
        raise linalg.LinAlgError(f"the posterior precision is singular (trtri {info})")
    mean = inverse.T @ (inverse @ cross)
    return mean, noise * np.einsum("ij,ij->j", inverse, inverse), inverse


def precision_fixed_point(mean: np.ndarray, variances: np.ndarray,
                          precisions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ARD precision update of Ting et al. eq. 4.7 with the full-covariance ``Q(b)``
    of eq. 5.2, ``⟨α_m⟩ = (a₀ + ½)/(b₀ + ⟨b_m²⟩/2)`` with ``⟨b_m²⟩ = μ_m² + Σ_mm``, taken
    in the form that converges fastest to the same fixed point.

    With the flat prior of 4.4 (a₀ = b₀ = 10⁻⁸) the update is ``⟨α_m⟩ ← 1/(μ_m² + Σ_mm)``
    and its fixed point satisfies ``⟨α_m⟩μ_m² = 1 − ⟨α_m⟩Σ_mm = γ_m``. Iterated as written,
    a weight the data do not need loses precision only linearly and the fit takes
    thousands of O(M³) sweeps; iterated as ``⟨α_m⟩ ← γ_m/μ_m²`` (MacKay's form, the
    RVM's re-estimation) it reaches the same fixed point in a few hundred. ``γ_m`` is the
    well-determinedness of weight m (1 when the data fix it, 0 when the prior does).
    Returns the new precisions (``inf`` where μ_m = 0) and γ."""
    determined = np.clip(1.0 - precisions * variances, 0.0, 1.0)
    square = mean * mean
    new = np.full(len(mean), np.inf)
    np.divide(np.maximum(determined, _TINY), square, out=new, where=square > 0.0)
    return new, determined


def noise_fixed_point(rss: float, count: float, determined: float) -> float:
    """The noise update of the M-step of Ting et al. 3.1 under the full-covariance
    ``Q(b)``: ``s ← (RSS + tr(GΣ_b))/p = (RSS + s·Σγ_m)/p``, taken at its fixed point
    ``s = RSS/(p − Σγ_m)`` (as :func:`precision_fixed_point`; γ as there, the sum over
    every weight, the bias's γ₀ = 1 included: its prior is flat). The whole noise
    s = ψ_y + Σψ_zm: a kernel model needs only the total."""
    return rss / max(count - determined, 1.0)

def fit_window(design: np.ndarray, targets: np.ndarray, scale: float, precision_cap: float,
               tol: float, budget: int, limit: int
               ) -> tuple[np.ndarray, np.ndarray, float, int, float] | None:
    """The batch sweeps of VBLS-RVM over the start ``design`` (W × K) and ``targets``.

    A sweep (:func:`full_posterior`, :func:`precision_fixed_point`,
    :func:`noise_fixed_point`): the posterior of the weights for the current ⟨α⟩ and noise s,
    then ⟨α⟩ and s moved to the fixed points of their updates, then every kernel whose
    precision ratio ``s⟨α_m⟩/G_mm`` exceeds ``precision_cap`` is pruned. The fit stops when
    no log⟨α_m⟩ moved by more than ``tol`` and nothing was pruned, or after ``budget``
    sweeps. If more than ``limit`` kernels remain, the ones with the largest ratios go and
    the sweeps go on. The design is centred (the bias decouples); ``scale`` is the targets'
    second moment (the unit of "nothing to explain").

    Returns the indices of the kept kernels, every kernel's precision, the noise s, the
    sweeps run and the last change; ``None`` when there is nothing to explain or no budget.
    """
    count = float(len(targets))
    centred_y = targets - targets.mean()
    variance = float(centred_y @ centred_y) / count
    # (a variance below the smallest normal float: targets whose squares underflow, of
    # order 1e-155, cannot be fitted in these units; 1/variance would overflow)
    if not (variance > 1e-12 * max(scale, _TINY) and variance >= _TINY) or budget == 0:
        return None
    design = design - design.mean(axis=0)  # the centred parametrisation: the bias decouples
    gram = design.T @ design
    cross = design.T @ centred_y
    yy = float(centred_y @ centred_y)
    active = np.arange(design.shape[1])
    # Ting et al. 4.4 starts every ⟨α⟩ at 1 for standardised data; 1/variance keeps that
    # start invariant to the scale of the targets. The noise starts at a tenth of the
    # variance: the kernels are expected to explain most of it.
    precisions = np.full(design.shape[1], 1.0 / variance)
    noise = 0.1 * variance
    floor = 1e-12 * variance
    done, change = 0, math.inf
    while done < budget and len(active):
        sub_gram = gram[np.ix_(active, active)]
        sub_cross = cross[active]
        mean, variances, _ = full_posterior(sub_gram, sub_cross, precisions[active], noise)
        rss = max(yy - 2.0 * float(mean @ sub_cross) + float(mean @ sub_gram @ mean), 0.0)
        new, determined = precision_fixed_point(mean, variances, precisions[active])
        # The bias (flat prior, centred out) is fully determined: γ₀ = 1.
        noise = max(noise_fixed_point(rss, count, 1.0 + float(determined.sum())), floor)
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = np.abs(np.log(new) - np.log(precisions[active]))
        finite = np.isfinite(new)
        change = float(np.max(steps[finite])) if finite.any() else 0.0
        precisions[active] = new
        done += 1
        ratios = np.full(len(active), np.inf)
        diag = np.diagonal(sub_gram)
        np.divide(noise * new, diag, out=ratios, where=finite & (diag > 0.0))
        keep = ratios < precision_cap
        if keep.all() and change < tol and len(active) > limit:
            # Converged over budget: the kernels the prior shrinks most go first.
            keep[np.argsort(ratios, kind="stable")[limit:]] = False
        converged = keep.all() and change < tol
        active = active[keep]
        if converged:
            break
    return active, precisions, noise, done, change
