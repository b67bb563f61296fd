"""From-scratch reference computations with explicit H and P, for the property tests.

Everything here is deliberately the slow, obvious formula (p × p matrices included) so that it
shares no code with the incremental core it checks.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import numpy as np

from onlinesparse.orr.kernels import Basis


def design(model, X: np.ndarray | None = None) -> np.ndarray:
    """H over the stored window, recomputed from the stored inputs and the column specs."""
    window = model.window
    basis = Basis(window.n_features)
    for i in range(model.size):
        basis.append(window.basis.spec(i))
    X = window.stored_inputs() if X is None else X
    return basis.evaluate_many(X) if model.size else np.zeros((len(X), 0))


def from_scratch(model, weights: np.ndarray | None = None) -> dict[str, object]:
    """Every quantity of the incremental model, recomputed from H, y, Λ (and pattern weights)."""
    window = model.window
    H = design(model)
    y = window.stored_targets()
    sw = window.stored_weights() if weights is None else weights
    Hw = H * np.sqrt(sw)[:, None]
    yw = y * np.sqrt(sw)
    p = float(np.sum(sw))
    lam = np.asarray(model.lambdas, dtype=float)
    A = Hw.T @ Hw + np.diag(lam)
    S = np.linalg.inv(A) if len(lam) else np.zeros((0, 0))
    w = S @ Hw.T @ yw
    P = np.eye(len(y)) - Hw @ S @ Hw.T
    Py = P @ yw
    error = float(Py @ Py)
    gamma = len(y) - float(np.trace(P)) if weights is None and window.factor == 1.0 else (
        float(np.trace(S @ (Hw.T @ Hw)))
    )
    dof = p - gamma
    diag = np.diag(P)
    out = {
        "H": H, "y": y, "A": A, "S": S, "w": w, "P": P, "error": error, "gamma": gamma,
        "p": p, "cond": float(np.linalg.cond(A)) if len(lam) else 1.0,
        "gcv": p * error / dof**2 if dof > 0 else math.inf,
        "uev": error / dof if dof > 0 else math.inf,
        "fpe": (p + gamma) / dof * error / p if dof > 0 else math.inf,
        "bic": (p + (math.log(p) - 1) * gamma) / dof * error / p if dof > 0 and p > 1 else math.inf,
        "loo": (float(np.mean((Py / diag) ** 2)) if len(y) and np.all(diag > 1e-10)
                else math.inf),
    }
    return out


def projection_without(model, j: int) -> np.ndarray:
    """Pⱼ: the projection matrix of the model with basis function j removed."""
    ref = from_scratch(model)
    H, lam = ref["H"], np.asarray(model.lambdas)
    keep = np.arange(model.size) != j
    Hj = H[:, keep]
    Aj = Hj.T @ Hj + np.diag(lam[keep])
    return np.eye(len(H)) - Hj @ np.linalg.solve(Aj, Hj.T) if keep.any() else np.eye(len(H))


def gcv_with_lambda(model, j: int, lam_j: float) -> float:
    """GCV of the model with λⱼ replaced (∞ removes the basis function)."""
    ref = from_scratch(model)
    H, y, lam = ref["H"], ref["y"], np.asarray(model.lambdas, dtype=float).copy()
    p = len(y)
    if math.isinf(lam_j):
        keep = np.arange(model.size) != j
        H, lam = H[:, keep], lam[keep]
    else:
        lam[j] = lam_j
    P = np.eye(p) - H @ np.linalg.solve(H.T @ H + np.diag(lam), H.T) if len(lam) else np.eye(p)
    Py = P @ y
    tr = np.trace(P)
    return p * float(Py @ Py) / tr**2


def shrunk_prediction(model, vector: np.ndarray) -> float:
    """``SparseRBFRegressor``'s model prediction at ``vector`` (before the errors' level,
    the weighing against the mean and the target reference): h(x)ᵀw returned toward the
    mean ȳ of the targets in its window by ``c = s²/(s² + κ²σ²hᵀSh)``, s² their variance
    and κ the calibration factor (stream.prior.shrink_to_prior), written out."""
    ridge = model.model
    h = ridge.model_row(vector)
    f = float(h @ ridge.weights)
    y = ridge.window.stored_targets()
    centre = float(np.mean(y))
    prior = max(float(np.var(y)), 1e-12 * float(np.mean(y * y)))  # (as target_variance)
    if not prior > 0.0:  # (every target the same and 0: no prior to return to)
        return f
    numbers = model.diagnostics()
    v = (numbers["calibration"] * numbers["noise_std"]) ** 2 * float(h @ ridge.variance @ h)
    return centre + prior / (prior + v) * (f - centre)


def averaged_prediction(model, prediction: float, vector: np.ndarray | None = None) -> float:
    """A ``SparseRBFRegressor`` model prediction plus the errors' level (stream.level),
    averaged with the running mean's and the last target's by their shares
    (stream.baseline), moved toward the blend f + α(ℓ − f) of the model's f and the last
    target ℓ by the blend's weight (α = Σde/Σd² in [0, 1], the weight the posterior of its
    log-odds), then with the awake concepts' predictions at ``vector`` (stream.concepts:
    their posterior against the model, ∝ 1 for the model and e^log-odds for each, times
    the model's share; the live prediction keeps the rest), as predict_one gives it: all
    measured from the first target, which is added back."""
    stream = model._stream.bundle
    shares = [float(w) for w in stream.baseline["weight"]]
    f = prediction + float(stream.level[0]["offset"])
    prediction = ((1.0 - sum(shares)) * f
                  + sum(w * float(m) for w, m in zip(shares, stream.baseline["mean"],
                                                     strict=True)))
    last = stream.baseline[1]
    if last["enabled"] and last["errors"] > 0:
        alpha = (min(float(last["cross"] / last["spread"]), 1.0) if last["cross"] > 0
                 and last["spread"] > 0 and last["blended"] > 3 else 0.0)
        weight = 1.0 / (1.0 + math.exp(-float(last["blend_odds"])))
        prediction += weight * (f + alpha * (float(last["mean"]) - f) - prediction)
    memory = getattr(model, "_concepts", None)
    awake = [c for c in memory.concepts if c.awake] if memory is not None else []
    if awake:
        assert vector is not None, "a model with awake concepts needs the input"
        share = 1.0 - sum(shares)  # (the concepts take their part of the model's share)
        posterior = np.array([1.0] + [math.exp(c.log_odds) for c in awake])
        weights = share * posterior / posterior.sum()
        weights[0] = 1.0 - weights[1:].sum()
        predictions = [prediction] + [c.predict(vector) for c in awake]
        prediction = float(weights @ predictions)
    return prediction + model.target_reference


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-300)
    return float(np.max(np.abs(a - b))) / scale if b.size else 0.0


def tipping_faul(H: np.ndarray, Phi: np.ndarray, y: np.ndarray, alpha: np.ndarray,
                 s: float) -> tuple[np.ndarray, np.ndarray]:
    """Tipping and Faul's S and Q of every column of ``Phi`` against the model ``H`` from
    their definitions: ``C⁻¹ = (I − H(HᵀH + sA)⁻¹Hᵀ)/s`` by Woodbury on the raw design, the
    bias (column 0) with a flat prior, ``S = φᵀC⁻¹φ``, ``Q = φᵀC⁻¹y``."""
    a = np.array(alpha, dtype=float)
    a[0] = 0.0
    inner = np.linalg.inv(H.T @ H + s * np.diag(a))

    def c_inv(v: np.ndarray) -> np.ndarray:
        return (v - H @ (inner @ (H.T @ v))) / s

    return np.einsum("ij,ij->j", Phi, c_inv(Phi)), Phi.T @ c_inv(y)


def prequential_errors(model: object, stream: Iterable[tuple[dict, float]]) -> np.ndarray:
    """``y − predict_one(x)`` before each ``learn_one(x, y)`` over ``stream`` (progressive
    validation, by hand)."""
    errors = []
    for x, y in stream:
        errors.append(y - model.predict_one(x))
        model.learn_one(x, y)
    return np.array(errors)


def assert_continues_exactly(model, stream) -> None:
    """A pickle of ``model`` predicts (mean and deviation) and learns ``stream`` exactly as
    the model does."""
    import pickle

    clone = pickle.loads(pickle.dumps(model))
    for x, y in stream:
        a, b = model.predict_one(x, with_dist=True), clone.predict_one(x, with_dist=True)
        assert (a.mu, a.sigma) == (b.mu, b.sigma)
        model.learn_one(x, y)
        clone.learn_one(x, y)


def import_benchmarks(*names: str) -> list[ModuleType]:
    """The scripts of ``benchmarks/`` by name, imported with this process's environment as
    it was: they pin BLAS to one thread through the environment when imported, as a
    real-time user would, which would otherwise change the environment of every later test
    (and of the processes they spawn) after this process's BLAS has started with its own
    count."""
    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if benchmarks not in sys.path:
        sys.path.insert(0, benchmarks)
    environment = dict(os.environ)
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        os.environ.clear()
        os.environ.update(environment)
