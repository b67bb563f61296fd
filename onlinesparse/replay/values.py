"""How single-precision values become the float64 values a replay feeds its model.

A CSV file written from float32 data holds each value's shortest decimal (``2.2312882``), and
reading it gives the float64 nearest to that decimal. Widening the same float32 exactly, as
Parquet, NPZ and NWB readers would, gives ``2.2312881946563721`` instead: a difference in the
ninth digit that a sparse model's discrete choices (which basis function to prune) amplify
into a different nMSE. :func:`widen_like_text` gives every format the CSV's value, so one
recording replays bit for bit the same whatever file it is stored in.
"""

from __future__ import annotations

import numpy as np

__all__ = ["widen_like_text"]

# Powers of ten up to 10**22 are exact in float64: a product or quotient with one of them is
# then correctly rounded, i.e. the float64 that a decimal parser gives for that decimal.
_EXACT_POWER = 22
#: Significant digits that always suffice for a value of each type to read back the same.
_MAX_DIGITS = {np.dtype(np.float16): 5, np.dtype(np.float32): 9}


def widen_like_text(values: np.ndarray) -> np.ndarray:
    """Float64 copies of float16/float32 ``values``, each the float64 nearest to the
    shortest decimal that reads back as the same single-precision value.

    That is the value a CSV written from these numbers (``str``, ``repr``, pandas'
    ``to_csv``) gives when it is read. NaN, ±∞ and 0 are widened as they are. Vectorised:
    for each number of digits p = 1, 2, … the nearest p-digit decimal is formed with exact
    powers of ten and kept where it reads back as the original; the few values this cannot
    settle exactly (a product within 10⁻⁶ of a rounding tie, magnitudes beyond 10±22) go
    through NumPy's own shortest representation, one string each.

    Examples
    --------
    >>> x = np.array([0.1, 2.2312882, np.nan, 3e38], dtype=np.float32)
    >>> widen_like_text(x).tolist()[:2], float(x[0])
    ([0.1, 2.2312882], 0.10000000149011612)

    """
    single = np.asarray(values)
    with np.errstate(invalid="ignore"):  # (signalling NaN payloads)
        out = single.astype(np.float64)
    idx = np.flatnonzero(np.isfinite(out) & (out != 0))
    if not len(idx):
        return out
    v, want = out[idx], single[idx]
    e = np.floor(np.log10(np.abs(v))).astype(np.int64)
    # log10 may land one off near a power of ten: set e so that 10**e ≤ |v| < 10**(e+1).
    e -= 10.0 ** e.astype(np.float64) > np.abs(v)
    e += 10.0 ** (e + 1).astype(np.float64) <= np.abs(v)
    result = np.full(len(idx), np.nan)
    todo = np.ones(len(idx), dtype=bool)
    fallback = np.zeros(len(idx), dtype=bool)
    for p in range(1, _MAX_DIGITS.get(single.dtype, 9) + 1):
        k = p - 1 - e
        scale = 10.0 ** np.minimum(np.abs(k), _EXACT_POWER).astype(np.float64)
        up = k >= 0
        with np.errstate(over="ignore", invalid="ignore"):
            prod = np.where(up, v * scale, v / scale)
            m = np.rint(prod)
            candidate = np.where(up, m / scale, m * scale)
        # A tie (or beyond the exact powers) is left to NumPy: which of the two p-digit
        # neighbours the shortest representation takes, if either, is its rule to apply.
        unsure = todo & ((np.abs(k) > _EXACT_POWER) | (np.abs(np.abs(prod - m) - 0.5) <= 1e-6))
        settled = todo & ~unsure & (candidate.astype(single.dtype) == want)
        result[settled] = candidate[settled]
        todo &= ~settled
        fallback |= unsure
        todo &= ~unsure
        if not todo.any():
            break
    rest = np.flatnonzero(todo | fallback)
    if len(rest):
        result[rest] = want[rest].astype(str).astype(np.float64)
    out[idx] = result
    return out
