"""Ting et al. section 6.1: 100 inputs, 10 relevant (rotated), r redundant, the rest irrelevant.

Data as in 6.1.1: the 10 relevant inputs are N(0, 1) and rotated by a random 10-d rotation;
the weights b_m ~ N(0, 100) act on the unrotated inputs; r redundant inputs are random
convex combinations of the 10 rotated ones (the same combinations for training and test);
the remaining 90 − r inputs are irrelevant N(0, 1). Training outputs get noise of variance
c·var(ȳ), c = 1/r² − 1, with r² ∈ {0.8, 0.9}; the 20 test patterns are noise free. N = 1000,
10 trials. Test nMSE = MSE / variance of the test outputs.

Printed beside each other: VBLS (our VBLSRegressor, ARD prior, ``learn_many``: the batch fixed
point), the same model learned online (one sweep per ``learn_one`` over the 1000 samples),
ridge regression with λ = 1e-10 (6.1.2), scikit-learn's LassoCV (5-fold) and PLS with the
number of components chosen by 5-fold CV (the paper used leave-one-out), and the fraction of
the irrelevant inputs that VBLS marks irrelevant.

Run: ``.venv/bin/python benchmarks/vbls_synthetic.py`` (a few minutes).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
from scipy.stats import special_ortho_group
from sklearn.cross_decomposition import PLSRegression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LassoCV
from sklearn.model_selection import GridSearchCV

from onlinesparse.vbls import VBLSRegressor

N_INPUTS, N_RELEVANT, N_TRAIN, N_TEST, N_TRIALS = 100, 10, 1000, 20, 10
NAMES = [f"x{i:03d}" for i in range(N_INPUTS)]


def make_data(n_redundant: int, r2: float, rng: np.random.Generator):
    rotation = special_ortho_group.rvs(N_RELEVANT, random_state=rng)
    weights = rng.normal(0.0, 10.0, N_RELEVANT)
    mixing = rng.random((N_RELEVANT, n_redundant))
    mixing /= mixing.sum(axis=0, keepdims=True)  # convex combinations
    n_irrelevant = N_INPUTS - N_RELEVANT - n_redundant

    def inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
        latent = rng.normal(size=(n, N_RELEVANT))
        relevant = latent @ rotation.T
        X = np.hstack([relevant, relevant @ mixing, rng.normal(size=(n, n_irrelevant))])
        return X, latent @ weights

    X, clean = inputs(N_TRAIN)
    noise_var = (1.0 / r2 - 1.0) * clean.var()
    y = clean + rng.normal(0.0, np.sqrt(noise_var), N_TRAIN)
    X_test, y_test = inputs(N_TEST)
    return X, y, X_test, y_test


def nmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((pred - y) ** 2) / np.var(y))


def run_vbls(X, y, X_test, online: bool) -> tuple[np.ndarray, np.ndarray]:
    model = VBLSRegressor()
    frame = pd.DataFrame(X, columns=NAMES)
    if online:
        for row, target in zip(frame.to_dict(orient="records"), y, strict=True):
            model.learn_one(row, float(target))
    else:
        model.learn_many(frame, pd.Series(y))
    pred = np.array([model.predict_one(dict(zip(NAMES, row, strict=True))) for row in X_test])
    relevant = np.array([model.relevance()[name] for name in NAMES])
    return pred, relevant


def main() -> None:
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    rng = np.random.default_rng(6_1)
    methods = ["VBLS", "VBLS online", "ridge 1e-10", "LassoCV", "PLS (CV)"]
    rows = []
    start = time.perf_counter()
    for n_redundant in (0, 30, 60, 90):
        for r2 in (0.8, 0.9):
            errors = {m: [] for m in methods}
            flagged, flagged_online, relevant_found = [], [], []
            for _ in range(N_TRIALS):
                X, y, X_test, y_test = make_data(n_redundant, r2, rng)
                pred, relevant = run_vbls(X, y, X_test, online=False)
                errors["VBLS"].append(nmse(pred, y_test))
                pred_online, relevant_online = run_vbls(X, y, X_test, online=True)
                errors["VBLS online"].append(nmse(pred_online, y_test))
                irrelevant = slice(N_RELEVANT + n_redundant, N_INPUTS)
                if n_redundant < N_INPUTS - N_RELEVANT:
                    flagged.append(float(np.mean(~relevant[irrelevant])))
                    flagged_online.append(float(np.mean(~relevant_online[irrelevant])))
                relevant_found.append(float(np.mean(relevant[:N_RELEVANT])))
                H = np.hstack([X, np.ones((N_TRAIN, 1))])
                w = np.linalg.solve(H.T @ H + 1e-10 * np.eye(N_INPUTS + 1), H.T @ y)
                errors["ridge 1e-10"].append(nmse(np.hstack([X_test, np.ones((N_TEST, 1))]) @ w,
                                                  y_test))
                lasso = LassoCV(cv=5, random_state=0).fit(X, y)
                errors["LassoCV"].append(nmse(lasso.predict(X_test), y_test))
                pls = GridSearchCV(PLSRegression(scale=False),
                                   {"n_components": list(range(1, 21))}, cv=5,
                                   scoring="neg_mean_squared_error").fit(X, y)
                errors["PLS (CV)"].append(nmse(pls.predict(X_test).ravel(), y_test))
            rows.append((n_redundant, r2, {m: float(np.mean(v)) for m, v in errors.items()},
                         float(np.mean(flagged)) if flagged else float("nan"),
                         float(np.mean(flagged_online)) if flagged_online else float("nan"),
                         float(np.mean(relevant_found))))
            print(f"r = {n_redundant:2d}, r² = {r2}: " + "  ".join(
                f"{m} {np.mean(v):.4f}" for m, v in errors.items()), flush=True)
    print()
    print(f"Test nMSE, mean of {N_TRIALS} trials ({time.perf_counter() - start:.0f} s); "
          "'flagged' = fraction of the irrelevant inputs VBLS marks irrelevant")
    header = f"{'r':>3s} {'i':>3s} {'r²':>4s} " + " ".join(f"{m:>12s}" for m in methods)
    print(header + f" {'flagged':>8s} {'online':>7s} {'first10':>8s}")
    for n_redundant, r2, err, fl, fl_on, found in rows:
        print(f"{n_redundant:3d} {90 - n_redundant:3d} {r2:4.1f} "
              + " ".join(f"{err[m]:12.4f}" for m in methods)
              + f" {fl:8.3f} {fl_on:7.3f} {found:8.2f}")
    mean = {m: np.mean([err[m] for _, _, err, _, _, _ in rows]) for m in methods}
    print("mean" + " " * 9 + " ".join(f"{mean[m]:12.4f}" for m in methods))
    print("('first10' = fraction of the 10 rotated relevant inputs VBLS keeps; with redundant "
          "copies it may legitimately keep a copy instead)")


if __name__ == "__main__":
    main()
