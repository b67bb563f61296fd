"""The metric ``SparseRBFRegressor`` proposes its kernels in: the inputs' relevance, as the
compiled sample tracks it, and the diagonal metric made of it.

The mathematics is in :mod:`onlinesparse.core.relevance` (Kpotufe and Boularias's gradient
weights); this is the estimator's record of it: the running mean of each input's squared
slope, which ``core.stream_sample`` advances in place, and the metric handed to the buffer
manager with each proposal.
"""

from __future__ import annotations

import numpy as np

from onlinesparse import core
from onlinesparse.kernels import Basis

__all__ = ["InputMetric", "METRIC_EVERY", "prediction_moves"]

# Samples between remakes of the proposals' metric, at most: the relevance is a mean over
# about the model's memory (W patterns), so the metric is remade every W/64 samples, up to
# this; proposals (most samples make one) then share an array that is never written again
# instead of each costing one.
METRIC_EVERY = 16


class InputMetric:
    """The inputs' relevance and the metric of proposed kernels.

    Parameters
    ----------
    n_features
        The number of inputs.
    policy
        ``"gradient"``: proposals carry the gradient weights; ``"isotropic"``: they carry
        none, and the compiled sample gets ``tracked`` empty (no slopes computed).
    """

    def __init__(self, n_features: int, policy: str = "gradient") -> None:
        self.policy = policy
        # (written in place by the compiled sample: core.relevance.track_relevance)
        self.relevance = np.zeros(n_features)
        self._made = -METRIC_EVERY
        self._metric: np.ndarray | None = None

    @property
    def tracked(self) -> np.ndarray:
        """The array the compiled sample advances: the relevance, or none to track."""
        return self.relevance if self.policy == "gradient" else self.relevance[:0]

    def for_proposal(self, n_learned: int, memory: float) -> np.ndarray | None:
        """The metric of a kernel proposed at sample ``n_learned`` by a model whose memory
        holds ``memory`` patterns (:func:`onlinesparse.core.input_metric`), None for the
        isotropic metric (the policy, or no slopes to go by yet). Treat it as read-only:
        the proposals made until the next remake share it."""
        if self.policy == "isotropic":
            return None
        every = min(METRIC_EVERY, int(memory) // 64 + 1)
        if n_learned - self._made >= every or n_learned < self._made:
            metric = np.empty(len(self.relevance))
            self._metric = metric if core.input_metric(self.relevance, metric) else None
            self._made = n_learned
        return self._metric


def prediction_moves(basis: Basis, weights: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Per input, the mean absolute change of ``h(x)ᵀw`` over the first ``len(weights)``
    columns of ``basis`` when that input moves by ±½ its standard deviation over the
    inputs ``X`` (finite differences; what ``SparseRBFRegressor.input_relevance`` and
    ``VBLSKernelRegressor.input_relevance`` report over their windows). O(d·N·M)."""
    scale = X.std(axis=0)
    size = len(weights)
    moves = np.empty(X.shape[1])
    for i in range(X.shape[1]):
        step = np.zeros(X.shape[1])
        step[i] = 0.5 * scale[i] if scale[i] > 0 else 0.5
        up = basis.evaluate_many(X + step, 0, size) @ weights
        down = basis.evaluate_many(X - step, 0, size) @ weights
        moves[i] = np.mean(np.abs(up - down))
    return moves
