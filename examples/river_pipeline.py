"""SparseRBFRegressor in a river pipeline: progressive validation, diagnostics, intervals.

``StandardScaler | SparseRBFRegressor`` on river's ``TrumpApproval`` data set (1001 daily
polls, six inputs), scored with ``evaluate.progressive_val_score`` (predict, score, then
learn, sample by sample), beside river's ``LinearRegression`` in the same pipeline. Then the
model's diagnostics, how much each input moves the prediction, and a 95 % predictive interval
from ``predict_one(x, with_dist=True)`` — with its coverage over a second, progressive pass.

Run: ``python examples/river_pipeline.py``.
"""

from river import datasets, evaluate, linear_model, metrics, preprocessing

from onlinesparse import SparseRBFRegressor

Z95 = 1.959964  # two-sided 95 % quantile of the standard normal


def main() -> None:
    dataset = datasets.TrumpApproval()

    # 1. Progressive validation, exactly as for any river regressor.
    model = preprocessing.StandardScaler() | SparseRBFRegressor(max_basis=30, window_size=500)
    score = evaluate.progressive_val_score(dataset, model, metrics.RMSE() + metrics.MAE())
    baseline = preprocessing.StandardScaler() | linear_model.LinearRegression()
    base_score = evaluate.progressive_val_score(dataset, baseline,
                                                metrics.RMSE() + metrics.MAE())
    print(f"SparseRBFRegressor : {score}")
    print(f"LinearRegression   : {base_score}")

    # 2. What the model looks like now (cheap, can be read at any time).
    rbf = model["SparseRBFRegressor"]
    print("\ndiagnostics:")
    for key, value in rbf.diagnostics().items():
        print(f"  {key:22s} {value:.4g}")
    print("input relevance (mean |Δ prediction| for ±½ std of the input):")
    for name, value in sorted(rbf.input_relevance().items(), key=lambda kv: -kv[1]):
        print(f"  {name:22s} {value:.4f}")

    # 3. A predictive distribution (river's proba.Gaussian) and its 95 % interval.
    x, y = list(dataset)[-1]
    dist = model.predict_one(x, with_dist=True)
    low, high = dist.mu - Z95 * dist.sigma, dist.mu + Z95 * dist.sigma
    print(f"\nlast poll: truth {y:.2f}, prediction {dist.mu:.2f}, "
          f"95 % interval [{low:.2f}, {high:.2f}] (σ = {dist.sigma:.3f})")

    # 4. Are the intervals honest? Coverage of the 95 % interval, predicted before learning.
    fresh = preprocessing.StandardScaler() | SparseRBFRegressor(max_basis=30, window_size=500)
    inside = total = 0
    for i, (x, y) in enumerate(dataset):
        dist = fresh.predict_one(x, with_dist=True)
        if i >= 100:  # after a short warm-up
            total += 1
            inside += abs(y - dist.mu) <= Z95 * dist.sigma
        fresh.learn_one(x, y)
    print(f"coverage of the 95 % interval over samples 101–{i + 1}: {inside / total:.1%}")


if __name__ == "__main__":
    main()
