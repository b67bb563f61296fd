"""µs per operation of :class:`~onlinesparse.orr.ridge.IncrementalRidge` against a
from-scratch solve.

Orr's table 3 (appendix A.7) compares the cost of retraining a linear network from scratch with
the cost of the matching incremental operation. This benchmark measures the same thing in
wall-clock time for the streaming core: M = 10, 50, 100, 200 Gaussian basis functions over
d = 4 inputs, a window of W = 1000 patterns and λ = 0.1 for every basis function.

Rows
----
Operations (each leaves ``S = A⁻¹`` and ``w`` exact for the new model):

* add pattern — the window is full, so every call also removes the oldest pattern;
* remove oldest pattern — each timed removal is followed by an untimed addition that refills
  the window;
* add basis function — a tracked candidate joins the model (M → M + 1), then is removed again
  untimed;
* remove basis function — a random model function leaves (M → M − 1), kept as a candidate,
  then is added back untimed;
* set one λⱼ — a random j goes from 0.1 to 1 and back, both directions timed.

Criteria (read-only): the ``gcv`` property — the model caches it until the next change, so it
is timed both as the first read after a change (an untimed λ toggle) and as a repeated read;
``criteria.basis_quantities`` + ``criteria.optimal_lambda`` for one random j;
``criteria.candidate_quantities`` for one candidate.

Last, one ``IncrementalRidge.refresh()`` (see below).

From scratch ("the obvious way", the cost Orr's table 3 charges a retrain): evaluate the
Gaussian design matrix H over the window with numpy, form ``G = HᵀH`` and ``c = Hᵀy``,
``scipy.linalg.cho_factor(G + Λ)``, then ``w`` and the variance matrix ``A⁻¹`` by
``cho_solve`` (A⁻¹ is part of the state an incremental operation delivers, and γ needs its
diagonal), then the criterion. Vectors ``Pv = v − H A⁻¹ Hᵀv`` replace the p × p matrix P.
For the A.11 row the model without j is solved, for the candidate row the candidate's column is
evaluated too. Every from-scratch run is timed on the same model configuration as an
incremental one, and the ``check`` column is the largest relative difference between the two
results (a sanity check, not part of the timing).

Timing: ``time.perf_counter`` around each single call, median over the repetitions, the
garbage collector off inside a row, one BLAS thread (override with ``OPENBLAS_NUM_THREADS``).
The model uses its default health settings (rounding-error account, drift probe every 64
operations, a full refresh every W patterns; see docs/numerics.md); the ``refr`` column
counts the timed calls that ran a refresh, which the median does not show; the last row
times one refresh (``IncrementalRidge.refresh``: the window statistics recomputed from the
stored rows, then ``S`` and ``w`` by Cholesky) so that the amortised cost can be worked out.

The kernels' radius (default 0.5, about the spacing of 200 centres in the cube) sets how
collinear the columns are, hence how much each update amplifies rounding and how often the
health checks ask for a refresh; ``--radius 1`` gives a worse-conditioned model.

Run: ``.venv/bin/python benchmarks/core_ops.py`` (about a minute) or ``--quick``.
"""

from __future__ import annotations

import os

# One BLAS thread unless the caller says otherwise: a streaming update is a single-threaded
# O(M²) job, and on a shared machine a threaded BLAS can make the from-scratch column slower by
# an order of magnitude through contention. Must be set before numpy is imported.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from scipy import linalg  # noqa: E402

from onlinesparse.orr import criteria  # noqa: E402
from onlinesparse.orr.kernels import BasisSpec  # noqa: E402
from onlinesparse.orr.ridge import IncrementalRidge  # noqa: E402

D = 4
WINDOW = 1000
LAMBDA = 0.1
OTHER_LAMBDA = 1.0
RADIUS = 0.5  # about the spacing of 200 centres in [−1, 1]⁴; --radius to change
SIZES = (10, 50, 100, 200)
WARM_UP = 4  # untimed step + undo pairs before each row (an even number: λ toggles back)


# -- the data stream --------------------------------------------------------------------------
class Stream:
    """Inputs uniform in [−1, 1]⁴, a smooth target plus noise."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self) -> tuple[np.ndarray, float]:
        x = self.rng.uniform(-1.0, 1.0, D)
        y = np.sin(2.0 * x[0]) + x[1] * x[2] - 0.5 * x[3] ** 2 + 0.1 * self.rng.standard_normal()
        return x, float(y)


# -- from scratch -----------------------------------------------------------------------------
def gaussian_design(X: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """``H[i, j] = exp(−‖xᵢ − cⱼ‖²/rⱼ²)`` with ``‖x − c‖² = ‖x‖² − 2xᵀc + ‖c‖²`` (one matrix
    product, the fast way; a (p, M, d) broadcast would cost several times more)."""
    sq = (np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ centres.T
          + np.einsum("ij,ij->i", centres, centres)[None, :])
    return np.exp(-np.maximum(sq, 0.0) / (radii * radii))


def solve(H: np.ndarray, y: np.ndarray, lambdas: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cholesky of ``HᵀH + Λ``; returns ``w``, ``A⁻¹`` and ``HᵀH``."""
    G = H.T @ H
    factor = linalg.cho_factor(G + np.diag(lambdas), lower=True)
    w = linalg.cho_solve(factor, H.T @ y)
    S = linalg.cho_solve(factor, np.eye(len(lambdas)))
    return w, S, G


def snapshot(model: IncrementalRidge) -> dict[str, np.ndarray]:
    """What a from-scratch solve starts from: the stored window and the model's basis."""
    window, m = model.window, model.size
    return {
        "X": window.stored_inputs(),
        "y": window.stored_targets(),
        "centres": window.basis.centres[:m].copy(),
        "radii": window.basis.radii[:m].copy(),
        "lambdas": model.lambdas.copy(),
        "cand_centre": window.basis.centres[m:m + 1].copy(),
        "cand_radius": window.basis.radii[m:m + 1].copy(),
    }


def scratch_fit(s: dict) -> np.ndarray:
    H = gaussian_design(s["X"], s["centres"], s["radii"])
    w, _, _ = solve(H, s["y"], s["lambdas"])
    return w


def scratch_gcv(s: dict) -> float:
    H = gaussian_design(s["X"], s["centres"], s["radii"])
    y = s["y"]
    w, S, _ = solve(H, y, s["lambdas"])
    p = len(y)
    residual = y - H @ w
    gamma = len(w) - float(s["lambdas"] @ np.diagonal(S))
    return criteria.gcv(float(residual @ residual), gamma, p)


def scratch_basis(s: dict, j: int) -> tuple[dict[str, float], criteria.LocalOptimum]:
    """Orr A.11's five numbers and ψ for basis function j from Pⱼy and Pⱼhⱼ."""
    H = gaussian_design(s["X"], s["centres"], s["radii"])
    y, lam = s["y"], s["lambdas"]
    keep = np.arange(H.shape[1]) != j
    Hj, h = H[:, keep], H[:, j]
    _, S, _ = solve(Hj, y, lam[keep])

    def project(v: np.ndarray) -> np.ndarray:  # Pⱼv without the p × p matrix
        return v - Hj @ (S @ (Hj.T @ v))

    Py, Ph = project(y), project(h)
    yPh = float(y @ Ph)
    beta = float(Ph @ Ph)  # P symmetric: hᵀP²h = ‖Ph‖²
    q = {
        "a": float(Py @ Py),
        "b": float(Py @ Ph) * yPh,
        "c": beta * yPh * yPh,
        "alpha": len(y) - (Hj.shape[1] - float(lam[keep] @ np.diagonal(S))),
        "beta": beta,
        "psi": float(h @ Ph),
    }
    return q, criteria.optimal_lambda(**q, n_patterns=len(y))


def scratch_candidate(s: dict) -> dict[str, float]:
    """FGCV's r, γ, ξ, u of the candidate from Py and Pφ."""
    H = gaussian_design(s["X"], s["centres"], s["radii"])
    phi = gaussian_design(s["X"], s["cand_centre"], s["cand_radius"])[:, 0]
    y = s["y"]
    w, S, _ = solve(H, y, s["lambdas"])
    Py = y - H @ w
    Pphi = phi - H @ (S @ (H.T @ phi))
    return {"r": float(y @ Pphi), "gamma": float(phi @ Pphi), "xi": float(Py @ Pphi),
            "u": float(Pphi @ Pphi)}


def rel_diff(a, b) -> float:
    a, b = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# -- timing -----------------------------------------------------------------------------------
class Row:
    """One line of the table: an incremental step, optionally undone, and its from-scratch twin.

    ``prepare()`` (untimed) runs before each step; ``step()`` is timed and returns the
    incremental result; ``undo()`` (untimed) restores the model size; ``scratch(snap)``
    recomputes the result from a snapshot taken right after the step; ``compare(incremental,
    scratch)`` gives the check.
    """

    def __init__(self, label: str, step: Callable[[], object],
                 scratch: Callable[[dict], object],
                 compare: Callable[[object, object], float],
                 undo: Callable[[], None] | None = None,
                 prepare: Callable[[], object] | None = None) -> None:
        self.label, self.step, self.scratch, self.compare, self.undo, self.prepare = (
            label, step, scratch, compare, undo, prepare)

    def run(self, model: IncrementalRidge, reps: int, scratch_reps: int
            ) -> tuple[float, float, float, int]:
        inc, ref, check, refreshes = [], [], 0.0, 0
        for _ in range(WARM_UP):
            if self.prepare is not None:
                self.prepare()
            self.step()
            if self.undo is not None:
                self.undo()
        gc.collect()
        gc.disable()
        try:
            for r in range(reps):
                if self.prepare is not None:
                    self.prepare()
                before = model.n_refreshes
                t0 = time.perf_counter()
                result = self.step()
                inc.append(time.perf_counter() - t0)
                refreshes += model.n_refreshes - before
                if r < scratch_reps:
                    snap = snapshot(model)
                    t0 = time.perf_counter()
                    expected = self.scratch(snap)
                    ref.append(time.perf_counter() - t0)
                    check = max(check, self.compare(result, expected))
                if self.undo is not None:
                    self.undo()
        finally:
            gc.enable()
        return 1e6 * statistics.median(inc), 1e6 * statistics.median(ref), check, refreshes


def build_model(m: int, stream: Stream, rng: np.random.Generator, radius: float
                ) -> tuple[IncrementalRidge, int]:
    """A full window of W patterns, M Gaussian basis functions at λ = 0.1 centred on stored
    inputs, and one tracked candidate."""
    model = IncrementalRidge(n_features=D, size=WINDOW)
    for _ in range(WINDOW):
        model.add_pattern(*stream())
    inputs = model.window.stored_inputs()
    picks = rng.choice(WINDOW, size=m + 1, replace=False)
    for i in picks[:m]:
        model.add_basis(BasisSpec.radial(inputs[i], radius), LAMBDA)
    candidate = model.add_candidate(BasisSpec.radial(inputs[picks[m]], radius))
    return model, candidate


def rows_for(model: IncrementalRidge, candidate: int, stream: Stream,
             rng: np.random.Generator) -> list[Row]:
    m = model.size
    w_check = rel_diff

    def add_pattern():
        model.add_pattern(*stream())
        return model.weights.copy()

    def remove_oldest():
        model.remove_oldest()
        return model.weights.copy()

    cand = {"id": candidate}

    def add_basis():
        model.add_basis(cand["id"], LAMBDA)
        return model.weights.copy()

    def undo_add_basis():
        cand["id"] = model.remove_basis(model.size - 1, keep_as_candidate=True)

    def remove_basis():
        cand["id"] = model.remove_basis(int(rng.integers(m)), keep_as_candidate=True)
        return model.weights.copy()

    def undo_remove_basis():
        model.add_basis(cand["id"], LAMBDA)

    toggle = {"j": 0}

    def set_lambda():
        j = toggle["j"]
        if model.lambdas[j] == LAMBDA:
            model.set_lambda(j, OTHER_LAMBDA)
        else:
            model.set_lambda(j, LAMBDA)
            toggle["j"] = int(rng.integers(m))
        return model.weights.copy()

    def gcv():
        return model.gcv

    chosen = {"j": 0}

    def basis_opt():
        j = chosen["j"] = int(rng.integers(m))
        q = criteria.basis_quantities(model, j)
        opt = criteria.optimal_lambda(q["a"], q["b"], q["c"], q["alpha"], q["beta"], q["psi"],
                                      model.n_patterns)
        return q, opt

    def compare_basis(ours, theirs) -> float:
        (q, opt), (q_ref, opt_ref) = ours, theirs
        diff = max(rel_diff(q[k], q_ref[k]) for k in q_ref)
        if math.isfinite(opt.lam) and math.isfinite(opt_ref.lam):
            diff = max(diff, rel_diff(opt.lam, opt_ref.lam))
        elif math.isfinite(opt.lam) != math.isfinite(opt_ref.lam):
            diff = math.inf
        return diff

    def refresh():
        model.refresh()
        return model.weights.copy()

    def candidate_q():
        return criteria.candidate_quantities(model, np.array([0]))

    def compare_candidate(ours, theirs) -> float:
        return max(rel_diff(ours[k][0], theirs[k]) for k in theirs)

    return [
        Row("add pattern (window full: also removes the oldest)", add_pattern, scratch_fit,
            w_check),
        Row("remove oldest pattern", remove_oldest, scratch_fit, w_check,
            undo=lambda: model.add_pattern(*stream())),
        Row("add basis function (tracked candidate, M → M+1)", add_basis, scratch_fit, w_check,
            undo=undo_add_basis),
        Row("remove basis function (M → M−1)", remove_basis, scratch_fit, w_check,
            undo=undo_remove_basis),
        Row(f"set one λⱼ ({LAMBDA:g} ↔ {OTHER_LAMBDA:g})", set_lambda, scratch_fit, w_check),
        # IncrementalRidge caches its criteria until the model changes: time the first read
        # after a change (an untimed λ toggle) and a repeated read separately.
        Row("gcv property (first read after a change)", gcv, scratch_gcv, rel_diff,
            prepare=set_lambda),
        Row("gcv property (repeated read, cached)", gcv, scratch_gcv, rel_diff, prepare=gcv),
        Row("basis_quantities + optimal_lambda (one j)", basis_opt,
            lambda s: scratch_basis(s, chosen["j"]), compare_basis),
        Row("candidate_quantities (one candidate)", candidate_q, scratch_candidate,
            compare_candidate),
        Row("refresh (statistics from stored rows + Cholesky)", refresh, scratch_fit, w_check),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions (seconds)")
    parser.add_argument("--radius", type=float, default=RADIUS,
                        help=f"radius of the Gaussian kernels (default {RADIUS:g})")
    args = parser.parse_args()
    reps, scratch_reps = (40, 6) if args.quick else (400, 40)

    print(f"IncrementalRidge, µs per operation: Gaussian kernels (radius {args.radius:g}), "
          f"d = {D}, window W = {WINDOW}, λ = {LAMBDA:g}, "
          f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}")
    print(f"median of {reps} incremental / {scratch_reps} from-scratch repetitions"
          f"{' (--quick)' if args.quick else ''}; ratio = incremental / from scratch")
    print("from scratch: H over the window → G = HᵀH, c = Hᵀy → cho_factor(G + Λ) → w, A⁻¹ "
          "by cho_solve → criterion")
    print("check: largest relative difference between the incremental and from-scratch results;")
    print(f"refr: timed incremental calls (of {reps}) that ran a refresh, which the median hides;")
    print("      the last row times one refresh (window statistics from the stored rows + "
          "Cholesky)")
    width = 51
    header = (f"{'operation':<{width}} {'incr. µs':>9} {'scratch µs':>10} {'ratio':>7} "
              f"{'check':>6} {'refr':>4}")
    for m in SIZES:
        stream = Stream(seed=m)
        rng = np.random.default_rng(1000 + m)
        model, candidate = build_model(m, stream, rng, args.radius)
        print()
        print(f"M = {m}")
        print(header)
        print("-" * len(header))
        for row in rows_for(model, candidate, stream, rng):
            inc, ref, check, refreshes = row.run(model, reps, scratch_reps)
            print(f"{row.label:<{width}} {inc:9.1f} {ref:10.1f} {inc / ref:7.4f} "
                  f"{check:6.0e} {refreshes:4d}", flush=True)


if __name__ == "__main__":
    main()
