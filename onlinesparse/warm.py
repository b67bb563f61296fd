"""Loading the compiled core before a real-time loop's first tick."""

from __future__ import annotations

import numpy as np

from onlinesparse.orr.kernels import FrozenBasis
from onlinesparse.orr.rbf import SparseRBFRegressor
from onlinesparse.stream import ConceptMemory

__all__ = ["warm_up"]


def warm_up(seed: int = 0) -> None:
    """Load (or compile) every compiled loop a :class:`SparseRBFRegressor` uses, now.

    The numerical core runs through numba: the first call of each compiled function in a
    process loads its machine code from the on-disk cache, or compiles it when the cache
    is missing or stale — some hundreds of milliseconds in all, paid by whichever sample
    first needs each function. A real-time loop calls this once before its first tick, so
    that no tick pays it. A small throwaway model is driven through every path (growing,
    full window, budget, trades, refreshes); the types, hence the machine code, are those
    of any model. Takes well under a second once the cache exists.
    """
    rng = np.random.default_rng(seed)
    model = SparseRBFRegressor(max_basis=6, window_size=40, n_candidates=6)
    for k in range(400):
        x = rng.uniform(-1.0, 1.0, 2)
        y = float(np.sin(3.0 * x[0]) + x[1] ** 2 + 0.05 * rng.standard_normal())
        model.learn_one({"a": float(x[0]), "b": float(x[1])}, y)
        model.predict_one({"a": float(x[0]), "b": float(x[1])}, with_dist=k % 2 == 0)
    model.refine(20)
    # Rarely reached in a short run: the measurement of the rounding in S, and a refresh.
    model.model.check_health()
    model.model.condition_bound()
    model.model.refresh()
    # Reached only after a change of the stream: the concepts kept (stream.concepts).
    frozen = FrozenBasis.of(model.model.window.basis, model.model.state.weights)
    memory = ConceptMemory(lasted=0)
    memory.after_alarm(lambda: (frozen, 1.0), learned=1)
    memory.judge(x, y, 0.0, 1.0, 10.0, True, 2)
    memory.blend(x, 0.0, 1.0)
