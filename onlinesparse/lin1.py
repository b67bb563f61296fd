"""lin-1: the DELVE linear baseline (Rasmussen 1996) as river regressors.

The model is ``f(x) = w₀ + Σᵢ wᵢxᵢ`` fitted by maximum likelihood (least squares). Its
equations (Rasmussen, *The linear model lin-1*, DELVE):

* ``A = XᵀX`` over the inputs augmented with a constant 1 (``m + 1`` square);
* SVD ``A = U diag(s) Vᵀ``; the reciprocal of ``sᵢ`` is set to 0 whenever
  ``sᵢ < 10⁻⁶ · max(s)``, giving the regularised inverse ``A⁺`` (eq. 5);
* ``w = A⁺ Xᵀy`` (eq. 6);
* ``σ̂² = SSE / (n − k)`` with ``k`` the number of singular values kept (eq. 7);
* the predictive distribution at ``x*`` is Gaussian with mean ``wᵀx*`` and variance
  ``σ̂²(1 + x*ᵀA⁺x*)`` (eq. 9);
* several outputs share the one decomposition of ``A`` (Rasmussen, lin-1, last paragraph).

Streaming
---------
Nothing is stored per sample. The sufficient statistics ``XᵀX``, ``Xᵀy``, ``yᵀy`` and ``n`` are
kept in a numerically stable parametrisation: the count, the running means of inputs and
targets and their centred co-moment matrix (Welford's update). The augmented ``XᵀX`` and
``Xᵀy`` are rebuilt from them exactly when needed, and the training error
``yᵀy − 2wᵀXᵀy + wᵀXᵀXw`` is evaluated in centred coordinates — the same quadratic form, but
without the cancellation that accumulating raw sums of squares suffers when the data have a
large offset. The SVD is done lazily, the first time a prediction (or a diagnostic) follows new
data.

Inputs
------
Feature dicts go through :class:`~onlinesparse.features.FeatureMap`, the library-wide input
boundary: non-numeric, NaN or infinite values, and values outside the numeric domain
``|value| ≤ 1e50`` (``features.MAX_MAGNITUDE``), raise ``ValueError`` naming the feature; the
first sample learned fixes the inputs; by default a missing feature takes its running mean and
a feature first seen later is ignored, and ``strict=True`` rejects both instead.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from river import base, proba

from onlinesparse._blas import single_blas_thread
from onlinesparse._distributions import gaussian
from onlinesparse._validation import Versioned, check_real
from onlinesparse.features import FeatureMap, as_target, as_targets

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Lin1Regressor", "Lin1MultiTargetRegressor"]


class _Lin1Base(Versioned, base.Estimator):
    """State and numerics shared by the single- and multi-target lin-1 estimators.

    Layout of the running statistics: the vector ``z = (x₁ … x_d, y₁ … y_t)`` of the current
    sample has running mean ``_mean`` and centred co-moment matrix
    ``_comoment = Σ (z − z̄)(z − z̄)ᵀ``, both of size ``d + t``; ``x`` is in the order of the
    :class:`~onlinesparse.features.FeatureMap`.
    """

    def __init__(self, rcond: float = 1e-6, strict: bool = False) -> None:
        check_real("rcond", rcond, 0.0, 1.0, high_open=True)
        self.rcond = rcond
        self.strict = strict
        self._feature_map = FeatureMap(strict=strict)
        self._targets: list[Hashable] = []
        self._count = 0
        self._mean = np.zeros(0)
        self._comoment = np.zeros((0, 0))
        self._fit: dict[str, Any] | None = None

    @property
    def n_samples(self) -> int:
        """Number of samples learnt so far."""
        return self._count

    @property
    def features(self) -> list[Hashable]:
        """Input names in the order of the rows of ``XᵀX`` (after the constant)."""
        return list(self._feature_map.names)

    # -- validation (no state is touched here) ----------------------------------------------
    def _parse_inputs(self, x: Any, learning: bool) -> np.ndarray:
        """Values of ``x`` in the model's feature order (FeatureMap policy; changes nothing).

        Raises ``ValueError`` naming the offending feature.
        """
        # Only the first sample learned fixes the inputs (even an empty set of them).
        return self._feature_map.transform(x, learning=learning)

    # -- learning ---------------------------------------------------------------------------
    def _learn(self, x: Mapping, row: np.ndarray, targets: np.ndarray) -> None:
        """Welford update of the running means and co-moments with ``z = (row, targets)``,
        then record the sample in the feature map (only now: bad input changes nothing)."""
        if self._count == 0:
            size = len(row) + len(targets)
            self._mean = np.zeros(size)
            self._comoment = np.zeros((size, size))
        z = np.concatenate([row, targets])
        count = self._count + 1
        delta = z - self._mean
        self._mean = self._mean + delta / count
        # Σ(z − z̄)(z − z̄)ᵀ grows by (n/(n+1))·δδᵀ; written this way it stays exactly symmetric.
        self._comoment = self._comoment + (self._count / count) * np.outer(delta, delta)
        self._count = count
        self._fit = None
        self._feature_map.commit(row, x)

    # -- the lin-1 fit (Rasmussen, lin-1, eqs. 5–7) ------------------------------------------
    def _raw_statistics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Augmented ``XᵀX`` ((d+1)²), ``XᵀY`` ((d+1) × t) and ``diag(YᵀY)`` (t,)."""
        d = self._feature_map.n_features
        n = float(self._count)
        mean_x, mean_y = self._mean[:d], self._mean[d:]
        cxx = self._comoment[:d, :d]
        cxy = self._comoment[:d, d:]
        cyy = np.diag(self._comoment[d:, d:])
        gram = np.empty((d + 1, d + 1))
        gram[0, 0] = n
        gram[0, 1:] = gram[1:, 0] = n * mean_x
        gram[1:, 1:] = cxx + n * np.outer(mean_x, mean_x)
        cross = np.empty((d + 1, len(mean_y)))
        cross[0] = n * mean_y
        cross[1:] = cxy + n * np.outer(mean_x, mean_y)
        yy = cyy + n * mean_y * mean_y
        return gram, cross, yy

    def _ensure_fit(self) -> dict[str, Any]:
        """Decompose ``A`` once per batch of new data (lazy: only a prediction needs it)."""
        if self._fit is not None:
            return self._fit
        d = self._feature_map.n_features
        n = float(self._count)
        gram, cross, _ = self._raw_statistics()
        # lin-1 eq. 5: SVD of A, reciprocal of sᵢ set to 0 when sᵢ < rcond·max(s).
        u, s, vt = np.linalg.svd(gram)
        top = s[0] if len(s) else 0.0
        keep = s >= self.rcond * top if top > 0.0 else np.zeros(len(s), dtype=bool)
        inv_s = np.zeros_like(s)
        inv_s[keep] = 1.0 / s[keep]
        pinv = (vt.T * inv_s) @ u.T
        pinv = 0.5 * (pinv + pinv.T)
        weights = pinv @ cross  # eq. 6, one column per target
        n_kept = int(np.count_nonzero(keep))
        # Training error yᵀy − 2wᵀXᵀy + wᵀXᵀXw, evaluated in centred coordinates: with
        # w = (b, v), SSE = Cyy − 2vᵀCxy + vᵀCxx v + n(ȳ − b − vᵀx̄)².
        mean_x, mean_y = self._mean[:d], self._mean[d:]
        cxx = self._comoment[:d, :d]
        cxy = self._comoment[:d, d:]
        cyy = np.diag(self._comoment[d:, d:])
        bias, slopes = weights[0], weights[1:]
        offset = mean_y - bias - mean_x @ slopes
        sse = (cyy - 2.0 * np.einsum("it,it->t", slopes, cxy)
               + np.einsum("it,it->t", slopes, cxx @ slopes) + n * offset * offset)
        sse = np.maximum(sse, 0.0)
        # eq. 7; undefined when n ≤ k (no degrees of freedom left): +inf, so that the
        # predictive distribution is honest about knowing nothing of the noise.
        dof = n - n_kept
        noise_var = sse / dof if dof > 0 else np.full(len(sse), math.inf)
        self._fit = {
            "pinv": pinv,
            "weights": weights,
            "n_kept": n_kept,
            "sse": sse,
            "noise_var": noise_var,
        }
        return self._fit

    def _predict_arrays(self, x: Any) -> tuple[np.ndarray, np.ndarray]:
        """Predictive means and variances (one per target) at ``x`` (lin-1 eq. 9)."""
        n_targets = max(len(self._targets), 1)
        row = self._parse_inputs(x, learning=False)
        if self._count == 0:
            # River convention: predict 0 before any data; nothing is known about the noise.
            return np.zeros(n_targets), np.full(n_targets, math.inf)
        fresh = self._fit is None
        fit = self._ensure_fit()
        augmented = np.concatenate([[1.0], row])
        means = augmented @ fit["weights"]
        leverage = max(float(augmented @ fit["pinv"] @ augmented), 0.0)
        with np.errstate(invalid="ignore", over="ignore"):
            variances = fit["noise_var"] * (1.0 + leverage)
        # σ̂² = ∞ (n ≤ k) is the honest answer; anything else not finite is an input too far
        # outside the data (the floats overflow), refused by name.
        unknown = np.isinf(fit["noise_var"])
        if not (np.isfinite(means).all() and (np.isfinite(variances) | unknown).all()):
            if fresh:
                self._fit = None  # (a refused call leaves even the lazy fit as it was)
            raise self._feature_map.overflow(row)
        return means, variances

    def _predict_rows(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Predictive means and variances, ``(n, t)`` each, of every row of a DataFrame ``X``.

        Each row goes through :meth:`_predict_arrays`, the path of :meth:`predict_one`, so the
        results and every refusal (a bad value, an input whose prediction overflows) are
        exactly those of ``predict_one``; a refusal names the row's index label and changes
        nothing. The SVD is shared: it is done at most once for all rows.
        """
        import pandas as pd

        if not isinstance(X, pd.DataFrame):
            raise ValueError(f"X must be a pandas DataFrame, got {type(X).__name__}")
        n_targets = max(len(self._targets), 1)
        means = np.empty((len(X), n_targets))
        variances = np.empty((len(X), n_targets))
        for i, (label, x) in enumerate(zip(X.index, X.to_dict(orient="records"), strict=True)):
            try:
                means[i], variances[i] = self._predict_arrays(x)
            except ValueError as exc:
                raise ValueError(f"row {label!r} of X: {exc}") from None
        return means, variances

    # -- reporting --------------------------------------------------------------------------
    def _relevance_matrix(self) -> np.ndarray:
        """|slope| × running (population) standard deviation of the input, per target."""
        fit = self._ensure_fit()
        d = self._feature_map.n_features
        std = np.sqrt(np.maximum(np.diag(self._comoment[:d, :d]), 0.0) / self._count)
        return np.abs(fit["weights"][1:]) * std[:, None]

    def _base_diagnostics(self) -> dict[str, float]:
        if self._count == 0:
            return {"n_basis": 0.0, "n_samples": 0.0, "noise_std": math.inf}
        fit = self._ensure_fit()
        return {
            "n_basis": float(fit["n_kept"]),
            "n_samples": float(self._count),
            # One number for all targets: the root of the mean noise variance.
            "noise_std": math.sqrt(float(np.mean(fit["noise_var"]))),
        }


class Lin1Regressor(_Lin1Base, base.Regressor):
    """The DELVE linear model lin-1 (Rasmussen 1996) learnt from a stream.

    Maximum-likelihood linear regression with a bias, whose normal equations are solved through
    an SVD of ``A = XᵀX`` with the reciprocals of tiny singular values set to zero (Rasmussen,
    lin-1, eqs. 5–6). Only ``XᵀX``, ``Xᵀy``, ``yᵀy`` and ``n`` are kept (as running means
    and centred co-moments), so each ``learn_one`` costs O(d²) and memory does not grow with
    the stream. The decomposition is redone lazily when a prediction follows new data, O(d³).

    Parameters
    ----------
    rcond
        Relative cut-off of lin-1 eq. 5: the reciprocal of a singular value ``sᵢ`` of ``A``
        is set to 0 when ``sᵢ < rcond · max(s)``. The paper's value, 10⁻⁶, is a conservative
        estimate of machine precision for normalised inputs; ``A``'s conditioning depends on
        the scale of the inputs, so put a ``preprocessing.StandardScaler`` in front of the
        model as DELVE normalises its data.
    strict
        The input policy of :class:`~onlinesparse.features.FeatureMap`, shared by every
        model of the library. The first sample learned fixes the inputs. ``False``
        (default): a missing feature takes its running mean over the samples learned so far
        (0 behind a ``StandardScaler``) and a feature first seen later is ignored. ``True``:
        a missing or new feature raises ``ValueError`` naming it.

    Notes
    -----
    * **Noise and predictive distribution.** ``σ̂² = SSE/(n − k)`` (lin-1 eq. 7) with ``k``
      the number of singular values kept; the training error comes from the statistics,
      ``yᵀy − 2wᵀXᵀy + wᵀXᵀXw``. ``predict_one(x, with_dist=True)`` returns a
      ``river.proba.Gaussian`` with mean ``wᵀx*`` and variance ``σ̂²(1 + x*ᵀA⁺x*)`` (eq. 9),
      with ``x*`` the augmented input.
    * **Too few samples.** When ``n ≤ k`` the noise estimate is undefined; then ``σ̂² = +inf``,
      so the predictive standard deviation is ``inf`` (the mean is still ``wᵀx*``) and
      ``diagnostics()["noise_std"]`` is ``inf``. Before any data the prediction is 0 (river's
      convention) with infinite variance.
    * **Bad input** — a non-dict ``x``, a non-numeric, NaN or infinite feature or target, one
      outside the numeric domain ``|value| ≤ 1e50``, and (with ``strict``) a missing or new
      feature — raises ``ValueError`` naming the feature or the target and leaves the model
      exactly as it was (``docs/input_policy.md``). A first sample without features fixes an empty
      input space: the model is then the constant ``ȳ`` (with its predictive spread).
    * ``input_relevance()`` is ``|wᵢ|`` times the running (population) standard deviation of
      input ``i``: the typical change in prediction that input causes.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinesparse.lin1 import Lin1Regressor

    >>> model = preprocessing.StandardScaler() | Lin1Regressor()
    >>> evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    MAE: 0.886991

    A noisy plane ``y = 1 + 2a − b``; the predictive distribution and the diagnostics:

    >>> model = Lin1Regressor()
    >>> for i in range(100):
    ...     x = {"a": i % 10, "b": i % 7}
    ...     model.learn_one(x, 1 + 2 * x["a"] - x["b"] + ((i * 37) % 11 - 5) / 10)
    >>> model.predict_one({"a": 3, "b": 2}, with_dist=True)
    𝒩(μ=4.993, σ=0.326)
    >>> {name: round(w, 3) for name, w in model.weights.items()}, round(model.intercept, 3)
    ({'a': 1.998, 'b': -0.995}, 0.989)
    >>> model.diagnostics()["n_basis"]
    3.0
    """

    def __init__(self, rcond: float = 1e-6, strict: bool = False) -> None:
        super().__init__(rcond=rcond, strict=strict)
        self._targets = ["y"]

    @single_blas_thread
    def learn_one(self, x: dict, y: float) -> None:
        """Update ``XᵀX``, ``Xᵀy``, ``yᵀy`` and ``n`` with one sample, O(d²).

        Raises
        ------
        ValueError
            On bad input (see the class notes); the model is then left unchanged.
        """
        row = self._parse_inputs(x, learning=True)
        target = as_target(y, "target y")
        self._learn(x, row, np.array([target]))

    def predict_one(self, x: dict, with_dist: bool = False) -> float | proba.Gaussian:
        """Predictive mean ``wᵀx*``, or the Gaussian predictive distribution (lin-1 eq. 9).

        Parameters
        ----------
        x
            A dict of features.
        with_dist
            Return a ``river.proba.Gaussian`` with variance ``σ̂²(1 + x*ᵀA⁺x*)`` instead of
            the mean.
        """
        means, variances = self._predict_arrays(x)
        mean = float(means[0])
        if not with_dist:
            return mean
        return gaussian(mean, float(variances[0]))

    def predict_many(self, X: pd.DataFrame) -> pd.Series:
        """Predictive means ``wᵀx*`` of every row of ``X``: exactly :meth:`predict_one`'s.

        Parameters
        ----------
        X
            A DataFrame whose columns are features; the index is kept.

        Raises
        ------
        ValueError
            When ``X`` is not a DataFrame or a row has a bad value (the message names the row
            and the feature); the model is unchanged either way.

        Examples
        --------
        >>> import pandas as pd
        >>> model = Lin1Regressor()
        >>> for i in range(20):
        ...     model.learn_one({"a": float(i), "b": float(i % 3)}, 1.0 + 2.0 * i - (i % 3))
        >>> model.predict_many(pd.DataFrame({"a": [0.0, 10.0], "b": [1.0, 2.0]})).round(6)
        0     0.0
        1    19.0
        dtype: float64

        """
        import pandas as pd

        means, _ = self._predict_rows(X)
        return pd.Series(means[:, 0], index=X.index, dtype=float)

    @property
    def weights(self) -> dict[Hashable, float]:
        """Fitted slope of each input (``w₁ … w_d`` of lin-1 eq. 1)."""
        if self._count == 0:
            return {}
        slopes = self._ensure_fit()["weights"][1:, 0]
        return self._feature_map.to_dict(slopes)

    @property
    def intercept(self) -> float:
        """Fitted bias ``w₀``."""
        if self._count == 0:
            return 0.0
        return float(self._ensure_fit()["weights"][0, 0])

    def diagnostics(self) -> dict[str, float]:
        """``n_basis`` (k, parameters not zeroed), ``noise_std`` (σ̂, inf when n ≤ k) and
        ``n_samples``."""
        return self._base_diagnostics()

    def input_relevance(self) -> dict[Hashable, float]:
        """``|wᵢ| · std(xᵢ)`` for each input, with the running population standard deviation."""
        if self._count == 0:
            return {}
        relevance = self._relevance_matrix()[:, 0]
        return self._feature_map.to_dict(relevance)


class Lin1MultiTargetRegressor(_Lin1Base, base.MultiTargetRegressor):
    """lin-1 with several outputs sharing one decomposition of ``A = XᵀX`` (Rasmussen, lin-1).

    The weights of every output come from the same regularised inverse ``A⁺``; each output has
    its own noise estimate ``σ̂ⱼ² = SSEⱼ/(n − k)`` and its own Gaussian predictive distribution
    (the joint density is taken as Gaussian with diagonal covariance, as in lin-1). The
    first sample fixes the set of targets; a sample with a missing or new target is rejected.
    Everything else — parameters, streaming statistics, bad-input handling, ``n ≤ k`` — is as
    in :class:`Lin1Regressor`.

    Parameters
    ----------
    rcond
        Relative cut-off for singular values of ``A`` (lin-1 eq. 5).
    strict
        Input policy for features (see :class:`Lin1Regressor`).

    Examples
    --------
    >>> from onlinesparse.lin1 import Lin1MultiTargetRegressor
    >>> model = Lin1MultiTargetRegressor()
    >>> for t in range(20):
    ...     x = {"a": t / 10, "b": (t % 3) / 2}
    ...     model.learn_one(x, {"sum": x["a"] + x["b"], "diff": x["a"] - x["b"] + 1})
    >>> {k: round(v, 6) for k, v in model.predict_one({"a": 1.0, "b": 0.5}).items()}
    {'diff': 1.5, 'sum': 1.5}
    """

    def __init__(self, rcond: float = 1e-6, strict: bool = False) -> None:
        super().__init__(rcond=rcond, strict=strict)

    def _parse_targets(self, y: Any) -> tuple[np.ndarray, list[Hashable]]:
        return as_targets(y, self._targets if self._count else None)

    @single_blas_thread
    def learn_one(self, x: dict, y: dict) -> None:  # type: ignore[override]
        """Update the shared statistics with one sample (O((d + t)²)).

        Raises
        ------
        ValueError
            On bad input; the model is then left unchanged.
        """
        row = self._parse_inputs(x, learning=True)
        targets, names = self._parse_targets(y)
        if self._count == 0:
            self._targets = list(names)
        self._learn(x, row, targets)

    def predict_one(self, x: dict, with_dist: bool = False
                    ) -> dict[Hashable, float] | dict[Hashable, proba.Gaussian]:
        """Predictive mean of each target, or each target's Gaussian predictive distribution."""
        if self._count == 0:
            # No target is known before the first sample: nothing to predict (but x is still
            # validated).
            self._predict_arrays(x)
            return {}
        means, variances = self._predict_arrays(x)
        if not with_dist:
            return dict(zip(self._targets, means.tolist(), strict=True))
        return {
            name: gaussian(float(m), float(v))
            for name, m, v in zip(self._targets, means, variances, strict=True)
        }

    def predict_many(self, X: pd.DataFrame) -> pd.DataFrame:
        """Predictive mean of each target for every row of ``X``: one column per target.

        Before the first sample no target is known, so the frame has no columns (the rows of
        ``X`` are still validated). Bad input raises ``ValueError`` as in
        :meth:`Lin1Regressor.predict_many`.
        """
        import pandas as pd

        means, _ = self._predict_rows(X)
        if self._count == 0:
            return pd.DataFrame(index=X.index)
        return pd.DataFrame(means, index=X.index, columns=list(self._targets))

    def diagnostics(self) -> dict[str, float]:
        """``n_basis`` (k), ``noise_std`` (root mean σ̂² over targets), ``n_samples`` and one
        ``noise_std[<target>]`` per target."""
        out = self._base_diagnostics()
        if self._count:
            noise_var = self._ensure_fit()["noise_var"]
            for name, var in zip(self._targets, noise_var, strict=True):
                out[f"noise_std[{name}]"] = math.sqrt(float(var))
        return out

    def input_relevance(self) -> dict[Hashable, float]:
        """``max over targets of |wᵢⱼ| · std(xᵢ)`` for each input."""
        if self._count == 0:
            return {}
        relevance = self._relevance_matrix().max(axis=1) if self._targets else []
        return self._feature_map.to_dict(np.asarray(relevance))
