"""The metric ``SparseRBFRegressor`` proposes its kernels in: the inputs' relevance, as the
compiled sample tracks it, and the diagonal metric made of it.

The mathematics is in :mod:`onlinesparse.core.relevance` (Kpotufe and Boularias's gradient
weights); this is the estimator's record of it: the running mean of each input's squared
slope, which ``orr.sample.stream_sample`` advances in place, and the metric handed to the buffer
manager with each proposal.
"""

from __future__ import annotations

import numpy as np

from onlinesparse import core
from onlinesparse.orr.kernels import Basis

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
        ``"gradient"``: proposals carry the gradient weights (the model's slopes and the
        errors' structure along each input); ``"isotropic"``: they carry none, and the
        compiled sample gets ``tracked`` empty (no slopes computed).
    """

    def __init__(self, n_features: int, policy: str = "gradient") -> None:
        self.policy = policy
        # (written in place by the compiled sample: core.relevance.track_relevance)
        self.relevance = np.zeros(n_features)
        self._new_residual(n_features)
        self._made = -METRIC_EVERY
        self._metric: np.ndarray | None = None

    def _new_residual(self, n_features: int) -> None:
        # (written in place by the compiled sample: core.relevance.track_residual) the
        # errors' running projections on each input's Hermite polynomials, and each
        # input's running mean and variance they standardise it by
        self.residual = np.zeros((n_features, 3))
        self.input_mean = np.zeros(n_features)
        self.input_var = np.zeros(n_features)

    @property
    def tracked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arrays the compiled sample advances: the relevance, the residual
        projections, the inputs' means and variances; empty ones (nothing to track)
        for the isotropic policy."""
        if self.policy == "gradient":
            return self.relevance, self.residual, self.input_mean, self.input_var
        return self.relevance[:0], self.residual[:0], self.input_mean[:0], self.input_var[:0]

    def for_proposal(self, n_learned: int, memory: float, error_square: float
                     ) -> np.ndarray | None:
        """The metric of a kernel proposed at sample ``n_learned`` by a model whose memory
        holds ``memory`` patterns and whose squared errors average ``error_square``
        (:func:`onlinesparse.core.input_metric` of the slopes and
        :func:`onlinesparse.core.residual_structure`), None for the isotropic metric (the
        policy, or nothing to go by yet). Treat it as read-only: the proposals made until
        the next remake share it."""
        if self.policy == "isotropic":
            return None
        every = min(METRIC_EVERY, int(memory) // 64 + 1)
        if n_learned - self._made >= every or n_learned < self._made:
            structure = np.empty(len(self.relevance))
            core.residual_structure(self.residual, self.input_var, error_square, memory,
                                    structure)
            metric = np.empty(len(self.relevance))
            self._metric = (metric if core.input_metric(self.relevance, structure, metric)
                            else None)
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
