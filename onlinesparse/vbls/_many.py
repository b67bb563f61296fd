"""``predict_many`` / ``predict_proba_many`` for the VBLS estimators, with river's meaning.

river's mini-batch methods take a pandas ``DataFrame`` and return a ``Series`` (regression)
or a ``DataFrame`` with one column per class (probabilities) on the frame's index, without
learning anything. Here every row goes through the estimator's own ``predict_one`` /
``predict_proba_one``, so a batch prediction is exactly the predictions one at a time (the
same validation, the same imputation of missing features).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import pandas as pd

from onlinesparse.features import as_rows

__all__ = ["predict_series", "proba_frame"]


def _index(X: object, n: int) -> pd.Index:
    return X.index if isinstance(X, pd.DataFrame) else pd.RangeIndex(n)


def predict_series(predict_one: Callable[[dict], float], X: object) -> pd.Series:
    """``predict_one`` on every row of ``X`` (a ``DataFrame`` or an iterable of feature
    dicts), as a float ``Series`` on ``X``'s index."""
    rows = as_rows(X)
    values = [float(predict_one(dict(row))) for row in rows]
    return pd.Series(values, index=_index(X, len(rows)), dtype=float)


def proba_frame(predict_proba_one: Callable[[dict], Mapping[Hashable, float]],
                X: object) -> pd.DataFrame:
    """``predict_proba_one`` on every row of ``X``, as a ``DataFrame`` with one column per
    class (in the order the classes first appear; 0 where a row's dict lacks a class)."""
    rows = as_rows(X)
    dicts = [dict(predict_proba_one(dict(row))) for row in rows]
    columns: list[Hashable] = []
    for d in dicts:
        columns.extend(c for c in d if c not in columns)
    frame = pd.DataFrame(dicts, index=_index(X, len(rows)), columns=columns)
    return frame.fillna(0.0).astype(float)
