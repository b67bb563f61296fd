"""Batch model-building algorithms of the source papers.

Each takes an explicit candidate design matrix ``F`` (p patterns × M candidate functions) and
targets ``y`` and returns a :class:`SelectionResult`. The p × p projection matrix is never
formed: the algorithms work with ``P·F`` and ``P·y`` (Orr A.12–A.15).

* :func:`forward_selection` — Orr section 7, eq. 7.2 (A.12), GCV stopping (section 7.4).
* :func:`orthogonal_least_squares` — Orr section 7.1 (A.13).
* :func:`regularised_forward_selection` — Orr section 7.2 (A.14) with one pass of the global λ
  re-estimation (eq. 6.5) after each selection.
* :func:`regularised_orthogonal_least_squares` — Orr section 7.3 (A.15).
* :func:`tcr` — Hagiwara's thresholding of the cost reduction (Hagiwara).
* :func:`fast_gcv` — Sundararajan, Shevade and Keerthi's fast GCV: adds, deletes
  and re-estimates local ridge parameters by the largest GCV reduction. It takes kernels
  (centres, radius, type) rather than ``F``; :func:`fast_gcv_design` evaluates them.
"""

from onlinesparse.batch._common import ridge_weights
from onlinesparse.batch.candidates import gaussian_candidates, radial_candidates
from onlinesparse.batch.fast_gcv import fast_gcv, fast_gcv_design
from onlinesparse.batch.forward import forward_selection, regularised_forward_selection
from onlinesparse.batch.ols import orthogonal_least_squares, regularised_orthogonal_least_squares
from onlinesparse.batch.result import SelectionResult
from onlinesparse.batch.tcr import tcr

__all__ = [
    "SelectionResult",
    "fast_gcv",
    "fast_gcv_design",
    "forward_selection",
    "gaussian_candidates",
    "orthogonal_least_squares",
    "radial_candidates",
    "regularised_forward_selection",
    "regularised_orthogonal_least_squares",
    "ridge_weights",
    "tcr",
]
