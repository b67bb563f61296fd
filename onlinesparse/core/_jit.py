"""The one compilation rule of the core: numba, cached on disk, no fastmath.

``cache=True`` keeps the machine code next to each module, so later processes load it
instead of compiling (``onlinesparse.warm_up`` loads it before a control loop starts).
``fastmath`` stays off so that results are reproducible to the last bit and NaN / inf
behave as IEEE says.
"""

from __future__ import annotations

import numba
import numpy as np

jit = numba.njit(cache=True, nogil=True)

EPS = float(np.finfo(np.float64).eps)
