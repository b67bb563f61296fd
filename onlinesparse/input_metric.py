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
from onlinesparse.ridge import IncrementalRidge

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
        none (the relevance is still tracked, so that ``relevance`` can be read).
    """

    def __init__(self, n_features: int, policy: str = "gradient") -> None:
        self.policy = policy
        # (written in place by the compiled sample: core.relevance.track_relevance)
        self.relevance = np.zeros(n_features)
        self._made = -METRIC_EVERY
        self._metric: np.ndarray | None = None

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


def prediction_moves(model: IncrementalRidge) -> np.ndarray:
    """Per input, the mean absolute change of the model's prediction over the stored
    window when that input moves by ±½ its standard deviation there (finite differences;
    what ``SparseRBFRegressor.input_relevance`` reports). O(d·W·M)."""
    X = model.window.stored_inputs()
    scale = X.std(axis=0)
    basis, weights, size = model.window.basis, model.weights, model.size
    moves = np.empty(X.shape[1])
    for i in range(X.shape[1]):
        step = np.zeros(X.shape[1])
        step[i] = 0.5 * scale[i] if scale[i] > 0 else 0.5
        up = basis.evaluate_many(X + step, 0, size) @ weights
        down = basis.evaluate_many(X - step, 0, size) @ weights
        moves[i] = np.mean(np.abs(up - down))
    return moves
