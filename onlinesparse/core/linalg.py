"""In-place loops over small dense matrices: symmetric products, rank-one updates, swaps.

Loops, not mathematics: written row by row over C-ordered arrays so that the inner loop
runs over contiguous memory and vectorises, without the temporaries NumPy would allocate.
"""

from __future__ import annotations

import numpy as np

from onlinesparse._jit import jit


@jit
def symmetric_matvec(matrix: np.ndarray, x: np.ndarray, m: int, out: np.ndarray) -> None:
    """``out[:m] = A[:m, :m] x`` for a symmetric A, as a sum of rows ``Σᵢ xᵢ A[i]``: the
    inner loop is then an axpy over contiguous memory, which vectorises, where a row-times-
    vector dot product is a serial reduction (IEEE order forbids reassociating it)."""
    for j in range(m):
        out[j] = 0.0
    for i in range(m):
        xi = x[i]
        row = matrix[i]
        for j in range(m):
            out[j] += xi * row[j]


@jit
def symmetric_quadratic(matrix: np.ndarray, x: np.ndarray, m: int) -> float:
    """``xᵀA x`` for a symmetric A[:m, :m] from its lower triangle: ``2·xᵀp + Σᵢ Aᵢᵢxᵢ²``
    with ``p = L x`` (L the strict lower triangle) summed as axpys over contiguous rows,
    which vectorise (half the work of :func:`symmetric_matvec` and a dot product)."""
    partial = np.zeros(m)
    diagonal = 0.0
    for i in range(m):
        xi = x[i]
        row = matrix[i]
        for j in range(i):
            partial[j] += xi * row[j]
        diagonal += row[i] * xi * xi
    total = 0.0
    for j in range(m):
        total += x[j] * partial[j]
    return 2.0 * total + diagonal


@jit
def symmetric_matvec_pair(matrix: np.ndarray, x: np.ndarray, z: np.ndarray, m: int,
                          out_x: np.ndarray, out_z: np.ndarray) -> None:
    """``out_x = A x`` and ``out_z = A z`` for a symmetric A in one sweep over its rows
    (:func:`symmetric_matvec` twice, at half the memory traffic)."""
    for j in range(m):
        out_x[j] = 0.0
        out_z[j] = 0.0
    for i in range(m):
        xi = x[i]
        zi = z[i]
        row = matrix[i]
        for j in range(m):
            out_x[j] += xi * row[j]
            out_z[j] += zi * row[j]


@jit
def rank_one_update(matrix: np.ndarray, u: np.ndarray, v: np.ndarray, coef: float) -> None:
    """``matrix += coef·uvᵀ`` in place."""
    for i in range(u.shape[0]):
        ui = coef * u[i]
        row = matrix[i]
        for j in range(v.shape[0]):
            row[j] += ui * v[j]


@jit
def mirror_lower(matrix: np.ndarray) -> None:
    """Copy the strict lower triangle onto the upper one in place (LAPACK's symmetric
    routines fill one triangle: ``RidgeState.refresh``)."""
    for i in range(matrix.shape[0]):
        for j in range(i):
            matrix[j, i] = matrix[i, j]


@jit
def swap_symmetric(matrix: np.ndarray, i: int, j: int, n: int) -> None:
    """Exchange rows i, j and columns i, j of the leading n × n block in place."""
    for k in range(n):
        tmp = matrix[i, k]
        matrix[i, k] = matrix[j, k]
        matrix[j, k] = tmp
    for k in range(n):
        tmp = matrix[k, i]
        matrix[k, i] = matrix[k, j]
        matrix[k, j] = tmp


@jit
def swap_rows(matrix: np.ndarray, i: int, j: int) -> None:
    """Exchange rows i and j of a 2-D array in place."""
    for k in range(matrix.shape[1]):
        tmp = matrix[i, k]
        matrix[i, k] = matrix[j, k]
        matrix[j, k] = tmp


