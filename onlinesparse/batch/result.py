"""The outcome of a batch selection run, shared by every algorithm of the package."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["SelectionResult"]


def _frozen(array: np.ndarray | None, dtype: type) -> np.ndarray | None:
    if array is None:
        return None
    out = np.array(array, dtype=dtype)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class SelectionResult:
    """Chosen basis functions, their weights and the criterion trace of one selection run.

    The run adds candidates one at a time; ``path`` lists every candidate added, in order,
    including any added after the stopping point (the step whose criterion went up, or the
    whole path when the run was not stopped). The returned model is the prefix
    ``selected = path[:n_selected]``.

    Attributes
    ----------
    method
        Name of the algorithm (``"forward_selection"``, ``"tcr"``, …).
    selected
        Indices (columns of the candidate matrix) of the chosen basis functions, in the order
        they were chosen.
    lambdas
        Regularisation parameter of each chosen function in the returned model (0 for the
        unregularised methods; the shared global λ repeated for the ridge methods; for
        regularised OLS it regularises the orthogonalised weights, Orr eq. 7.8).
    weights
        Weights of the chosen functions, aligned with ``selected``.
    path
        Every candidate added by the run, in order; ``selected == path[:n_selected]``.
    sse
        Sum-squared training error of the model made of the first ``i`` functions of ``path``,
        for ``i = 0 … len(path)`` (index 0 is the empty model, ``yᵀy``).
    gcv
        GCV (Orr eq. 5.2) of the same models.
    cost
        Value of the minimised cost function (``SSE + λ‖w‖²``, or Orr eq. 7.8 for regularised
        OLS) of the same models; ``None`` for the unregularised methods, whose cost is the SSE.
    centres
        Centres of the chosen functions (rows aligned with ``selected``) when the candidates
        were kernels and their centres were given; otherwise ``None``.
    details
        Method-specific traces (read-only), e.g. ``"lambda"`` (λ after each step),
        ``"condition"`` (condition number of ``A`` after each step), ``"loo"`` (TCR's
        leave-one-out error), ``"cost_reduction"`` and ``"threshold"`` (TCR).
    """

    method: str
    selected: np.ndarray
    lambdas: np.ndarray
    weights: np.ndarray
    path: np.ndarray
    sse: np.ndarray
    gcv: np.ndarray
    cost: np.ndarray | None = None
    centres: np.ndarray | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Frozen means frozen: copies, made read-only, so a caller cannot edit a result.
        for name, dtype in (("selected", np.int64), ("path", np.int64), ("lambdas", float),
                            ("weights", float), ("sse", float), ("gcv", float),
                            ("cost", float), ("centres", float)):
            object.__setattr__(self, name, _frozen(getattr(self, name), dtype))
        details = {
            key: _frozen(value, float) if isinstance(value, np.ndarray) else value
            for key, value in dict(self.details).items()
        }
        object.__setattr__(self, "details", MappingProxyType(details))
        n = len(self.selected)
        if len(self.weights) != n or len(self.lambdas) != n:
            raise ValueError("selected, weights and lambdas must have the same length")
        if not np.array_equal(self.path[:n], self.selected):
            raise ValueError("selected must be a prefix of path")
        if len(self.sse) != len(self.path) + 1 or len(self.gcv) != len(self.path) + 1:
            raise ValueError("the sse and gcv traces need one entry per prefix of path")

    @property
    def n_selected(self) -> int:
        """Number of basis functions in the returned model."""
        return len(self.selected)

    def predict(self, candidates: np.ndarray) -> np.ndarray:
        """Model output at new inputs.

        Parameters
        ----------
        candidates
            Values of *all* candidate functions at the new inputs, shape ``(n, M)`` — the same
            columns as the candidate matrix the selection ran on.
        """
        candidates = np.asarray(candidates, dtype=float)
        if candidates.ndim != 2:
            raise ValueError("candidates must be a 2-d array (inputs × candidate functions)")
        if self.n_selected and candidates.shape[1] <= int(self.selected.max()):
            raise ValueError(
                f"candidates has {candidates.shape[1]} columns but the model uses column "
                f"{int(self.selected.max())}"
            )
        return candidates[:, self.selected] @ self.weights
