"""Candidate design matrices of radial basis functions for the batch algorithms."""

from __future__ import annotations

import numpy as np

from onlinesparse.orr.kernels import KERNELS, Basis, BasisSpec

__all__ = ["gaussian_candidates", "radial_candidates"]


def as_points(points: np.ndarray, name: str) -> np.ndarray:
    """Inputs or centres as a finite 2-d array (a vector means scalar inputs)."""
    points = np.asarray(points, dtype=float)
    if points.ndim == 1:
        points = points[:, None]  # scalar inputs
    if points.ndim != 2:
        raise ValueError(f"{name} must be a vector (scalar inputs) or a 2-d array, got "
                         f"{points.ndim} dimensions")
    if not np.all(np.isfinite(points)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return points


def radial_candidates(inputs: np.ndarray, centres: np.ndarray, radius: float,
                      kind: str = "gaussian") -> np.ndarray:
    """Candidate design matrix ``F[i, j] = φ(‖xᵢ − cⱼ‖² / r²)`` (Orr A.3, eq. 4.3).

    Evaluated by ``onlinesparse.orr.kernels.Basis`` so that the batch algorithms and the streaming
    models use the same basis functions.

    Parameters
    ----------
    inputs
        Inputs ``x₁ … x_p``: shape ``(p,)`` for scalar inputs or ``(p, d)``.
    centres
        Centres ``c₁ … c_M``: shape ``(M,)`` or ``(M, d)``.
    radius
        Common radius ``r > 0``.
    kind
        ``"gaussian"`` (default), ``"multiquadric"``, ``"inverse_multiquadric"`` or
        ``"cauchy"`` (Orr A.3).

    Returns
    -------
    numpy.ndarray
        ``F``, shape ``(p, M)``.
    """
    inputs = as_points(inputs, "inputs")
    centres = as_points(centres, "centres")
    if inputs.shape[1] != centres.shape[1]:
        raise ValueError(f"inputs have {inputs.shape[1]} coordinates but centres have "
                         f"{centres.shape[1]}")
    if kind not in KERNELS:
        raise ValueError(f"unknown kernel {kind!r}; choose one of {sorted(KERNELS)}")
    basis = Basis(n_features=inputs.shape[1], capacity=len(centres))
    for centre in centres:
        basis.append(BasisSpec.radial(centre, radius, kind))
    return basis.evaluate_many(inputs)


def gaussian_candidates(inputs: np.ndarray, centres: np.ndarray, radius: float) -> np.ndarray:
    """Gaussian candidates ``exp(−‖xᵢ − cⱼ‖²/r²)`` (Orr section 3.1, A.3).

    Hagiwara's ``exp(−‖x − x_k‖²/τ)`` is ``radius = √τ``.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinesparse.batch import gaussian_candidates
    >>> gaussian_candidates(np.array([0.0, 1.0]), centres=np.array([0.0]), radius=1.0).round(4)
    array([[1.    ],
           [0.3679]])
    """
    return radial_candidates(inputs, centres, radius, kind="gaussian")
