"""The stream layer on the families that do not build it into a compiled sample: the VBLS
regressor (``coverage``, ``memory="adaptive"``, ``concepts``) and the river wrapper
:class:`~onlinesparse.stream.StreamRegressor` around any regressor with a distribution."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from river import base, checks

from onlinesparse._distributions import gaussian
from onlinesparse.stream import StreamRegressor
from onlinesparse.vbls import VBLSRegressor
from tests.reference import assert_continues_exactly


def _linear(n: int, seed: int, flip_at: int | None = None, back_at: int | None = None,
            noise: float = 0.3) -> list[tuple[dict, float]]:
    """y = 2a − b + 1 + noise; the coefficients' signs flip from ``flip_at`` and flip back
    from ``back_at``."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        a, b = rng.uniform(-2, 2, 2)
        sign = -1.0 if flip_at is not None and flip_at <= t < (back_at or n) else 1.0
        out.append(({"a": float(a), "b": float(b)},
                    float(sign * (2 * a - b) + 1 + noise * rng.normal())))
    return out


def _run(model, data) -> tuple[np.ndarray, np.ndarray]:
    """Errors and interval hits (mean ± 1.96σ) of predictions made before each target."""
    errors, hits = [], []
    for x, y in data:
        dist = model.predict_one(x, with_dist=True)
        errors.append(y - dist.mu)
        hits.append(abs(y - dist.mu) <= 1.959964 * dist.sigma)
        model.learn_one(x, y)
    return np.array(errors), np.array(hits)


@pytest.mark.parametrize("model", [VBLSRegressor(memory="adaptive", concepts=2),
                                   VBLSRegressor(coverage=0.9),
                                   StreamRegressor(VBLSRegressor(memory="forgetting"), concepts=1)],
                         ids=["vbls-adaptive", "vbls-calibrated", "wrapper"])
def test_river_check_estimator(model):
    checks.check_estimator(copy.deepcopy(model))


def test_vbls_adaptive_memory_cuts_at_a_change_and_not_on_a_stationary_stream():
    model = VBLSRegressor(memory="adaptive", window_size=1000)
    data = _linear(4000, 1, flip_at=3000)
    for t, (x, y) in enumerate(data):
        model.learn_one(x, y)
        if t == 2999:
            assert model.n_memory_cuts == 0
        if model.n_memory_cuts:
            break
    assert 3000 <= t < 3150
    assert model.n_stored < 200


def test_vbls_with_the_layer_calibrates_intervals_its_own_model_gets_wrong():
    """Heteroscedastic noise (its scale grows with |a|) on a linear target: the model's own
    eq. 4.12 interval has one noise level for every input; the layer's calibration brings
    the coverage of its 95 % interval after the first 200 samples within 93–97 %."""
    rng = np.random.default_rng(2)
    data = []
    for _ in range(4000):
        a, b = rng.uniform(-2, 2, 2)
        data.append(({"a": float(a), "b": float(b)},
                     float(2 * a - b + (0.1 + abs(a)) * rng.standard_t(3))))
    _, hits = _run(VBLSRegressor(coverage=0.95), data)
    assert 0.93 <= hits[200:].mean() <= 0.97


def test_a_vbls_pickle_with_the_layer_continues_exactly():
    data = _linear(900, 3, flip_at=500)
    model = VBLSRegressor(memory="adaptive", concepts=2)
    for x, y in data[:600]:
        model.learn_one(x, y)
    assert model.n_memory_cuts >= 1
    assert_continues_exactly(model, data[600:])


def test_a_vbls_concept_predicts_when_its_stretch_returns():
    """A, B, A: the linear model of A is kept at the first change and predicts A's return;
    over the 100 samples after the first 10 of it the RMSE is under half of the model's
    without concepts."""
    data = _linear(1300, 4, flip_at=500, back_at=1000)
    back = slice(1010, 1110)
    kept, _ = _run(VBLSRegressor(memory="adaptive", concepts=2), data)
    plain, _ = _run(VBLSRegressor(memory="adaptive"), data)
    rmse = [float(np.sqrt(np.mean(e[back] ** 2))) for e in (kept, plain)]
    assert rmse[0] < 0.5 * rmse[1], rmse


class _Overconfident(base.Regressor):
    """A running mean that claims a tenth of its errors' deviation."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def learn_one(self, x, y):
        self.n += 1
        delta = y - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (y - self.mean)

    def predict_one(self, x, with_dist=False):
        sigma = 0.1 * math.sqrt(self.m2 / self.n) if self.n > 1 else 1.0
        return gaussian(self.mean, sigma**2) if with_dist else self.mean


def test_the_wrapper_calibrates_any_model_and_counts_alarms():
    data = _linear(3000, 5)
    _, hits = _run(_Overconfident(), data)
    assert hits[200:].mean() < 0.5
    wrapped = StreamRegressor(_Overconfident())
    _, hits = _run(wrapped, data)
    assert 0.93 <= hits[200:].mean() <= 0.97
    assert wrapped.diagnostics()["calibration"] > 3.0


def test_the_wrapper_gives_adaptive_memory_to_a_model_that_can_forget():
    wrapped = StreamRegressor(VBLSRegressor(memory="window", window_size=1000))
    assert wrapped._memory is not None
    for t, (x, y) in enumerate(_linear(3300, 6, flip_at=3000)):
        wrapped.learn_one(x, y)
        if t == 2999:
            assert wrapped.n_memory_cuts == 0
    assert wrapped.n_memory_cuts >= 1
    assert wrapped.regressor.n_stored < 1000


def test_the_wrapper_gives_the_kernel_model_adaptive_memory_and_calibrated_intervals():
    """VBLSKernelRegressor does not build the layer in; wrapped, its window is cut after a
    change (it implements the Forgetful protocol) and its intervals are calibrated."""
    from onlinesparse import VBLSKernelRegressor

    wrapped = StreamRegressor(VBLSKernelRegressor(max_basis=10, window_size=400))
    assert wrapped._memory is not None
    data = _linear(1600, 7, flip_at=1200)
    errors, hits = _run(wrapped, data[:1200])
    assert wrapped.n_memory_cuts == 0 and 0.9 <= hits[200:].mean() <= 0.99
    cut_after = None
    for k, (x, y) in enumerate(data[1200:]):
        wrapped.learn_one(x, y)
        if wrapped.n_memory_cuts:
            cut_after = k
            break
    assert cut_after is not None and cut_after < 150 and wrapped.regressor.n_stored < 200
    assert np.all(np.isfinite(errors))


@pytest.mark.parametrize("params", [{"coverage": 0.9}, {"memory": "adaptive"}])
def test_a_vbls_batch_fit_with_the_layer_predicts_with_its_fit(params):
    """learn_many sweeps to the batch fixed point without the layer judging each row: the
    fit then predicts on its own (not averaged with a running mean it never weighed: that
    answered the first target whatever x), with a spread; as the same memory without the
    layer does, but for the layer's shrink toward the targets' mean where x extrapolates."""
    import pandas as pd

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = 10 + 3 * X.a - 2 * X.b + 0.1 * rng.normal(size=200)
    memory = "window" if params.get("memory", "adaptive") == "adaptive" else "forgetting"
    plain, layered = VBLSRegressor(memory=memory), VBLSRegressor(**params)
    plain.learn_many(X, y)
    layered.learn_many(X, y)
    x = {"a": -3.0, "b": 2.0}
    assert layered.predict_one(x) == pytest.approx(plain.predict_one(x), rel=0.01)
    assert layered.predict_one(x, with_dist=True).sigma > 0.0
    layered.learn_one(x, 10 - 9 - 4)
    assert abs(layered.predict_one(x) - (10 - 9 - 4)) < 1.0


def _friedman_ar1(n: int, seed: int) -> list[tuple[dict, float]]:
    """Friedman #1 with AR(1) noise of φ = 0.95 (unit variance): stationary, its errors
    autocorrelated over some twenty samples."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 5))
    noise = np.zeros(n)
    for t in range(1, n):
        noise[t] = 0.95 * noise[t - 1] + math.sqrt(1 - 0.95**2) * rng.normal()
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
         + 5 * X[:, 4] + noise)
    return [({f"x{i}": float(v) for i, v in enumerate(row)}, float(t))
            for row, t in zip(X, y, strict=True)]


def _spike_counts(n: int, seed: int, channels: int = 30) -> list[tuple[dict, float]]:
    """Poisson counts of channels cosine-tuned to a slowly wandering 2-d velocity, the target
    its softly rectified first component: count-valued, time-ordered, stationary."""
    rng = np.random.default_rng(seed)
    v = np.zeros((n, 2))
    for t in range(1, n):
        v[t] = 0.98 * v[t - 1] + 0.2 * rng.normal(size=2)
    preferred = rng.uniform(0, 2 * np.pi, channels)
    rate = 0.8 * np.exp(0.8 * (v[:, [0]] * np.cos(preferred) + v[:, [1]] * np.sin(preferred)))
    counts = rng.poisson(rate)
    y = np.log1p(np.exp(2 * v[:, 0])) + 0.1 * rng.normal(size=n)
    return [({f"n{i}": float(c) for i, c in enumerate(row)}, float(t))
            for row, t in zip(counts, y, strict=True)]


def _cuts(model, data) -> list[int]:
    cuts, seen = [], 0
    for t, (x, y) in enumerate(data):
        model.learn_one(x, y)
        if model.n_memory_cuts != seen:
            seen = model.n_memory_cuts
            cuts.append(t)
    return cuts


@pytest.mark.parametrize(("stream", "bound"), [(_friedman_ar1, 1), (_spike_counts, 3)],
                         ids=["ar1", "spikes"])
@pytest.mark.parametrize("family", ["rbf", "vbls"])
def test_the_memory_does_not_cry_wolf_on_stationary_streams_of_correlated_errors(stream, bound,
                                                                                 family):
    """Issue 'Memory that does not cry wolf': on stationary streams whose errors are
    autocorrelated or count-valued the default adaptive memory of either family cuts at
    most ``bound`` times in 10 000 samples, where the detector before whitening cut every
    40–180 samples. AR(1) noise: the issue's bound, one. This spike-count stream: three
    (measured 3 for the RBF model, 2 for VBLS, both models together at sample ~7600 where
    the latent velocity makes a rare excursion and both under-predict it for a dozen
    samples): the errors of a model where it extrapolates are biased for a stretch, which
    the statistics of its errors alone cannot tell from a change."""
    from river import preprocessing

    from onlinesparse import SparseRBFRegressor

    model = SparseRBFRegressor() if family == "rbf" else VBLSRegressor()
    scaler = preprocessing.StandardScaler()
    cuts = []
    for t, (x, y) in enumerate(stream(10_000, 3)):
        scaler.learn_one(x)
        model.learn_one(scaler.transform_one(x), y)
        if model.n_memory_cuts > len(cuts):
            cuts.append(t)
    assert len(cuts) <= bound


@pytest.mark.parametrize("family", ["rbf", "vbls"])
def test_a_real_change_is_still_cut_within_150_samples(family):
    """The same defaults on Friedman #1 whose inputs swap roles at sample 3000 (FriedmanDrift
    gra's change): the first cut within 150 samples of the change, none before it."""
    from river import datasets

    from onlinesparse import SparseRBFRegressor

    data = list(datasets.synth.FriedmanDrift(drift_type="gra", position=(3000, 10_000),
                                             seed=7).take(3300))
    model = SparseRBFRegressor() if family == "rbf" else VBLSRegressor()
    cuts = _cuts(model, data)
    assert cuts and 3000 <= cuts[0] < 3150
