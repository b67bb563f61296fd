"""The one compilation rule of the core: numba, cached on disk, no fastmath.

``cache=True`` keeps the machine code next to each module, so later processes load it
instead of compiling (``onlinesparse.warm_up`` loads it before a control loop starts).
``fastmath`` stays off so that results are reproducible to the last bit and NaN / inf
behave as IEEE says.
"""

from __future__ import annotations

import hashlib
import pathlib

import numba
import numpy as np

jit = numba.njit(cache=True, nogil=True)

EPS = float(np.finfo(np.float64).eps)


def drop_stale_cache() -> None:
    """Delete the core's cached machine code when any core module's source has changed.

    numba keys a function's cache on its own module's source file only, so a function
    that calls into another module keeps its stale machine code when the callee changes
    (after an upgrade, or while developing). The core is one unit: a digest of all its
    sources, kept beside the cache, decides for all of it. A read-only installation
    keeps whatever cache it shipped with.
    """
    here = pathlib.Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    stamp = here / "__pycache__" / "core-sources.sha256"
    try:
        if stamp.exists() and stamp.read_text() == digest.hexdigest():
            return
        for cached in here.glob("__pycache__/*.nb[ic]"):
            cached.unlink()
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        pass


drop_stale_cache()  # (on the core's first import, before any compiled code loads)
