"""A throwaway stand-in for ``onlinesparse.SparseRBFMultiTargetRegressor`` (tests only).

It has exactly the multi-output API the replay relies on, built from one
:class:`~onlinesparse.SparseRBFRegressor` per target, so that the replay's shared-model path
can be tested before the real class exists. Tests point the registry's ``rbf`` entry at it
through :data:`MULTI_TARGET_PATH`: switching them to the real class is that one line.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import pandas as pd
from river import base

from onlinesparse import SparseRBFRegressor

#: The multi-output form the replay tests run: the stand-in until the real class lands.
MULTI_TARGET_PATH = "onlinesparse:SparseRBFMultiTargetRegressor"


class StandInMultiTargetRegressor(base.MultiTargetRegressor):
    """One :class:`SparseRBFRegressor` per target behind the multi-output API.

    Takes the constructor keywords of ``SparseRBFRegressor``. The first ``learn_one`` fixes
    the targets (in the key order of its ``y``); later calls must give every one of them,
    finite, or raise ``ValueError`` naming the target with the model unchanged.
    """

    def __init__(self, **params):
        self._params = dict(params)
        for key, value in params.items():
            setattr(self, key, value)
        SparseRBFRegressor(**params)  # the same checks of the parameters
        self._models: dict[Hashable, SparseRBFRegressor] = {}
        self.targets: list[Hashable] | None = None

    def _get_params(self) -> dict:
        return dict(self._params)

    def clone(self, new_params: dict | None = None, include_attributes: bool = False):
        return type(self)(**{**self._params, **(new_params or {})})

    def _check(self, y: dict) -> None:
        names = self.targets if self.targets is not None else list(y)
        for name in names:
            if name not in y:
                raise ValueError(f"target {name!r} is missing from y")
            value = y[name]
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"target {name!r} is not a finite number: {value!r}")

    def learn_one(self, x: dict, y: dict) -> None:
        self._check(y)
        if self.targets is None:
            self.targets = list(y)
            self._models = {t: SparseRBFRegressor(**self._params) for t in self.targets}
        for t in self.targets:
            self._models[t].learn_one(x, float(y[t]))

    def predict_one(self, x: dict, with_dist: bool = False) -> dict:
        if self.targets is None:
            return {}
        return {t: m.predict_one(x, with_dist=with_dist) for t, m in self._models.items()}

    def learn_many(self, X: pd.DataFrame, Y: pd.DataFrame) -> None:
        for (_, row), (_, ys) in zip(X.iterrows(), Y.iterrows(), strict=True):
            self.learn_one(row.to_dict(), ys.to_dict())

    def predict_many(self, X: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame([self.predict_one(row.to_dict()) for _, row in X.iterrows()],
                            index=X.index, columns=self.targets)

    def diagnostics(self) -> dict[str, float]:
        if not self._models:
            return {"n_basis": 0.0}
        each = [m.diagnostics() for m in self._models.values()]
        return {key: float(sum(d.get(key, math.nan) for d in each))
                for key in ("n_basis", "gcv", "effective_parameters")}

    def target_diagnostics(self) -> dict[Hashable, dict[str, float]]:
        return {t: {"noise_std": m.diagnostics()["noise_std"]} for t, m in self._models.items()}

    def input_relevance(self) -> dict[Hashable, float]:
        out: dict[Hashable, float] = {}
        for m in self._models.values():
            for k, v in m.input_relevance().items():
                out[k] = out.get(k, 0.0) + v
        return out
