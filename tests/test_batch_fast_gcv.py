"""Fast GCV (seed 000) as a batch algorithm, against a brute-force implementation.

The brute force shares no numerics with the library: every GCV value comes from an explicit
p × p projection matrix ``P = I − H(HᵀH + Λ)⁻¹Hᵀ`` (FGCV eqs. 6–7), and the optimal λ of a
column is found by evaluating that explicit GCV at every point where its minimum over
``[λ_min, ∞]`` can be: the stationary point of the one-parameter rational function, the lower
end and infinity (FGCV appendix I's case analysis, done by comparison instead of by sign);
for FGCV 3.2 point 7 as written (the optimum over ``[0, ∞]``, λ_min only in place of 0) the
stationary point counts anywhere above 0.
"""

from __future__ import annotations

import doctest
import importlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.batch import SelectionResult, fast_gcv, fast_gcv_design
from onlinesparse.orr import criteria
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge

# --------------------------------------------------------------------------------------------
# brute force
# --------------------------------------------------------------------------------------------


def explicit_projection(F: np.ndarray, columns: list[int], lambdas: list[float]) -> np.ndarray:
    """FGCV eq. 6 with λ = ασ²: ``P = I − H(HᵀH + Λ)⁻¹Hᵀ``, explicitly."""
    p = F.shape[0]
    if not columns:
        return np.eye(p)
    H = F[:, columns]
    A = H.T @ H + np.diag(lambdas)
    return np.eye(p) - H @ np.linalg.solve(A, H.T)


def explicit_gcv(P: np.ndarray, y: np.ndarray) -> float:
    """FGCV eq. 7: ``N·yᵀP²y / tr(P)²``."""
    Py = P @ y
    return len(y) * float(Py @ Py) / float(np.trace(P)) ** 2


def explicit_noise(P: np.ndarray, y: np.ndarray) -> float:
    """FGCV eq. 8: ``yᵀP²y / tr(P)``."""
    Py = P @ y
    return float(Py @ Py) / float(np.trace(P))


def best_lambda(F, y, model: dict[int, float], column: int, lambda_min: float,
                zeros_only: bool = False) -> tuple[float, float]:
    """Minimum over λ ∈ [λ_min, ∞] of GCV with every other λ fixed: (λ, GCV), λ = inf for ∞.
    ``zeros_only`` (FGCV 3.2 point 7 as written): the minimum over [0, ∞], with λ_min in
    place of λ = 0 — the stationary point counts wherever it is above 0.

    With ``P_j`` the projection without the column, ``u = P_jφ``, ``x = 1/(λ + φᵀP_jφ)``:
    ``yᵀP²y = ‖P_jy‖² − 2x(uᵀy)(uᵀP_jy) + x²‖u‖²(uᵀy)²`` and ``tr P = tr P_j − x‖u‖²``, so
    GCV has one stationary point in x; the minimum is there or at an end.
    """
    others = [c for c in model if c != column]
    P_j = explicit_projection(F, others, [model[c] for c in others])
    phi = F[:, column]
    u = P_j @ phi
    psi = float(phi @ u)
    uy, uPy, uu = float(u @ y), float(u @ (P_j @ y)), float(u @ u)
    Py = P_j @ y
    a0, b0, c0, t0, e0 = float(Py @ Py), uy * uPy, uu * uy * uy, float(np.trace(P_j)), uu
    points = [lambda_min]
    denominator = c0 * t0 - b0 * e0
    if denominator != 0.0:
        x_star = (b0 * t0 - e0 * a0) / denominator
        if x_star > 0.0 and 1.0 / x_star - psi > (0.0 if zeros_only else lambda_min):
            points.append(1.0 / x_star - psi)
    best = (math.inf, explicit_gcv(P_j, y))
    for lam in points:
        P = explicit_projection(F, [*others, column], [*(model[c] for c in others), lam])
        value = explicit_gcv(P, y)
        if value < best[1]:
            best = (lam, value)
    return best


def brute_force_fast_gcv(F: np.ndarray, y: np.ndarray, *, noise_every: int = 5,
                         max_iterations: int = 2000, tol: float = 1e-3) -> dict[str, object]:
    """Section 3.1 with every quantity explicit, under the same rules as the library
    (move of largest GCV reduction, α_min = 1/N where α's optimum is 0, σ² by eq. 8 every
    ``noise_every`` moves and when α has settled, with the α's held as σ² changes, stop
    when α and σ² have settled)."""
    p, n_candidates = F.shape
    variance = 0.1 * float(np.var(y))
    model: dict[int, float] = {}
    moves: list[tuple[str, int, float]] = []
    gcv_trace = [explicit_gcv(np.eye(p), y)]
    since_noise = 0
    converged = False

    def projection() -> np.ndarray:
        return explicit_projection(F, list(model), list(model.values()))

    def new_noise(stop_below: float = -1.0) -> tuple[float, float]:
        """Eq. 8, then every λ = ασ² follows σ² at fixed α (3.2 point 6), unless the
        change is small enough to stop."""
        new = explicit_noise(projection(), y)
        change = abs(new - variance) / variance
        if change <= stop_below:
            return variance, change
        for column in model:
            model[column] *= new / variance
        return new, change

    while len(moves) < max_iterations:
        lambda_min = variance / p
        current = explicit_gcv(projection(), y)
        best = None
        for column in range(n_candidates):
            lam, value = best_lambda(F, y, model, column, lambda_min, zeros_only=True)
            if column in model:
                kind = "delete" if math.isinf(lam) else "reestimate"
            elif math.isinf(lam):
                continue
            else:
                kind = "add"
            if best is None or current - value > best[3]:
                best = (kind, column, lam, current - value)
        settled = (best is None or best[3] <= 1e-12 * current
                   or (best[0] == "reestimate" and abs(best[2] - model[best[1]]) <= tol * best[2]))
        if settled:
            variance, change = new_noise(stop_below=tol)
            since_noise = 0
            if change <= tol:
                converged = True
                break
            gcv_trace.append(explicit_gcv(projection(), y))
            continue
        kind, column, lam, _ = best
        if kind == "delete":
            del model[column]
        else:
            model[column] = lam
        moves.append((kind, column, lam))
        since_noise += 1
        if since_noise >= noise_every:
            (variance, _), since_noise = new_noise(), 0
        gcv_trace.append(explicit_gcv(projection(), y))
    columns = list(model)
    H = F[:, columns]
    weights = np.linalg.solve(H.T @ H + np.diag(list(model.values())), H.T @ y)
    return {"moves": moves, "gcv": np.array(gcv_trace), "model": dict(zip(columns, weights,
                                                                           strict=True)),
            "lambdas": dict(model), "converged": converged, "noise_variance": variance}


def random_problem(seed: int, n_patterns: int = 24, n_features: int = 2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, (n_patterns, n_features))
    y = np.sin(2.5 * x[:, 0]) + x[:, -1] ** 2 + 0.2 * rng.standard_normal(n_patterns)
    radius = float(rng.uniform(0.4, 0.9))
    return x, y, radius


def assert_same_run(result: SelectionResult, reference: dict[str, object], F: np.ndarray,
                    rtol: float = 1e-8) -> None:
    moves = result.details["moves"]
    assert [(kind, column) for kind, column, _ in moves] == [
        (kind, column) for kind, column, _ in reference["moves"]]
    ours = np.array([lam for _, _, lam in moves])
    theirs = np.array([lam for _, _, lam in reference["moves"]])
    np.testing.assert_allclose(ours, theirs, rtol=rtol)
    np.testing.assert_allclose(result.details["gcv_trace"], reference["gcv"], rtol=rtol)
    assert result.details["converged"] == reference["converged"]
    assert sorted(result.selected.tolist()) == sorted(reference["model"])
    np.testing.assert_allclose(result.weights, [reference["model"][c] for c in result.selected],
                               rtol=rtol)
    np.testing.assert_allclose(result.lambdas,
                               [reference["lambdas"][c] for c in result.selected], rtol=rtol)


# --------------------------------------------------------------------------------------------
# agreement with the brute force
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_same_moves_and_weights_as_brute_force(seed):
    """Every move (add / delete / re-estimate, which column, its λ), the GCV after every move
    and the final weights equal the explicit-P brute force to relative 1e-8."""
    x, y, radius = random_problem(seed)
    constant = seed % 2 == 0
    result = fast_gcv(x, y, radius=radius, constant=constant, max_iterations=80)
    reference = brute_force_fast_gcv(fast_gcv_design(x, x, radius, constant=constant), y,
                                     max_iterations=80)
    assert len(result.details["moves"]) >= 5
    assert_same_run(result, reference, fast_gcv_design(x, x, radius, constant=constant))


def test_brute_force_run_includes_every_kind_of_move():
    """The agreement above is only meaningful if deletions and re-estimations happen: on
    these problems the reference run contains all three kinds of move, and stops by the
    step 11 rule rather than the iteration cap."""
    kinds: set[str] = set()
    for seed in range(6):
        x, y, radius = random_problem(seed)
        result = fast_gcv(x, y, radius=radius, max_iterations=200)
        kinds.update(kind for kind, _, _ in result.details["moves"])
        assert result.details["converged"], seed
    assert kinds == {"add", "delete", "reestimate"}


def test_a_lambda_changed_by_one_part_in_a_million_is_detected():
    """The comparison can fail: perturbing the reference's λ's beyond 1e-8 breaks it."""
    x, y, radius = random_problem(0)
    result = fast_gcv(x, y, radius=radius, constant=True, max_iterations=80)
    reference = brute_force_fast_gcv(fast_gcv_design(x, x, radius, constant=True), y,
                                     max_iterations=80)
    reference["moves"] = [(k, c, lam * (1 + 1e-6)) for k, c, lam in reference["moves"]]
    with pytest.raises(AssertionError):
        assert_same_run(result, reference, fast_gcv_design(x, x, radius, constant=True))


def test_first_basis_is_the_minimum_gcv_candidate():
    """Appendix II: the first function chosen is the one of least GCV at its optimal α."""
    x, y, radius = random_problem(11)
    F = fast_gcv_design(x, x, radius)
    lambda_min = 0.1 * np.var(y) / len(y)
    values = [best_lambda(F, y, {}, j, lambda_min, zeros_only=True)[1]
              for j in range(F.shape[1])]
    result = fast_gcv(x, y, radius=radius, max_iterations=1)
    kind, column, _ = result.details["moves"][0]
    assert kind == "add" and column == int(np.argmin(values))


# --------------------------------------------------------------------------------------------
# step 5 for every column at once (criteria.basis_optima, criteria.candidate_scores)
# --------------------------------------------------------------------------------------------


def step5_model(seed: int, n_patterns: int, n_basis: int, n_candidates: int
                ) -> IncrementalRidge:
    """A ridge state with ``n_basis`` Gaussians in the model (assorted λ's) and
    ``n_candidates`` tracked candidates, over noisy 2-d data."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, (n_patterns, 2))
    y = np.sin(2.5 * x[:, 0]) + x[:, 1] ** 2 + 0.2 * rng.standard_normal(n_patterns)
    model = IncrementalRidge(2, memory="window", size=n_patterns)
    for x_i, y_i in zip(x, y, strict=True):
        model.add_pattern(x_i, float(y_i))
    centres = rng.uniform(-1.0, 1.0, (n_basis + n_candidates, 2))
    lambdas = rng.choice([1e-3, 0.05, 1.0, 30.0], size=n_basis)
    for centre, lam in zip(centres[:n_basis], lambdas, strict=True):
        try:
            model.add_basis(BasisSpec.radial(centre, 0.7), float(lam))
        except IllConditionedError:  # pragma: no cover - λ ≥ 1e-3 keeps A well conditioned
            pass
    for centre in centres[n_basis:]:
        model.add_candidate(BasisSpec.radial(centre, 0.7))
    return model


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(10, 40),
       n_basis=st.integers(0, 8), n_candidates=st.integers(0, 6),
       lambda_min=st.sampled_from([0.0, 1e-3, 0.05]), zeros_only=st.booleans())
def test_step5_scores_equal_brute_force(seed, n_patterns, n_basis, n_candidates, lambda_min,
                                        zeros_only):
    """Every column's optimum with the others fixed, from the two compiled calls fast GCV
    makes per iteration, against explicit-P GCV minimised by :func:`best_lambda`: the same
    minimum GCV (λ = ∞ counted as removing / not adding), at a λ whose explicit GCV is the
    reported one (≥ λ_min for the floor; for point 7 as written, below λ_min only where
    the minimum over [0, ∞] is inside (0, λ_min)); the GCV without each basis function is
    the explicit one."""
    model = step5_model(seed, n_patterns, n_basis, n_candidates)
    window = model.window
    F = window.stored_rows(model_only=False)
    y = window.stored_targets()
    in_model = {j: float(lam) for j, lam in enumerate(model.lambdas)}
    scale = explicit_gcv(np.eye(len(y)), y)

    def explicit(columns: dict[int, float]) -> float:
        return explicit_gcv(explicit_projection(F, list(columns), list(columns.values())), y)

    lam, value, removed = criteria.basis_optima(model, lambda_min, zeros_only)
    assert lam.shape == value.shape == removed.shape == (model.size,)
    for j in range(model.size):
        without = {c: v for c, v in in_model.items() if c != j}
        assert removed[j] == pytest.approx(explicit(without), rel=1e-8, abs=1e-12 * scale)
        _, best = best_lambda(F, y, in_model, j, lambda_min, zeros_only)
        ours = removed[j] if math.isinf(lam[j]) else value[j]
        assert ours == pytest.approx(best, rel=1e-8, abs=1e-12 * scale)
        if not math.isinf(lam[j]):
            if zeros_only:  # never 0 when there is a λ_min to put in its place
                assert lam[j] > 0.0 or lambda_min == 0.0
            else:
                assert lam[j] >= lambda_min
            assert value[j] == pytest.approx(explicit({**without, j: float(lam[j])}),
                                             rel=1e-8, abs=1e-12 * scale)

    scores = criteria.candidate_scores(model, lambda_min, zeros_only)
    # The same numbers as the separate calls (one formula, one compiled loop).
    quantities = criteria.candidate_quantities(model)
    for key in ("r", "gamma", "xi", "u"):
        np.testing.assert_array_equal(scores[key], quantities[key])
    optimum, after = criteria.candidate_optima(model, np.arange(n_candidates), lambda_min,
                                               zeros_only=zeros_only)
    np.testing.assert_array_equal(scores["lam"], optimum)
    np.testing.assert_array_equal(scores["gcv"], after)
    current = explicit(in_model)
    for i in range(n_candidates):
        column = model.size + i
        _, best = best_lambda(F, y, in_model, column, lambda_min, zeros_only)
        if math.isinf(scores["lam"][i]):  # not a move: nothing beats leaving it out
            assert best >= current * (1.0 - 1e-8)
        else:
            if zeros_only:
                assert scores["lam"][i] > 0.0 or lambda_min == 0.0
            else:
                assert scores["lam"][i] >= lambda_min
            assert scores["gcv"][i] == pytest.approx(best, rel=1e-8, abs=1e-12 * scale)
            assert scores["gcv"][i] == pytest.approx(
                explicit({**in_model, column: float(scores["lam"][i])}), rel=1e-8,
                abs=1e-12 * scale)


# --------------------------------------------------------------------------------------------
# behaviour
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_gcv_rises_only_when_the_noise_level_moves_the_lambdas(seed):
    """Every move lowers GCV; only a new σ², which rescales every λ at fixed α (3.2 point
    6), can raise it between two moves."""
    x, y, radius = random_problem(100 + seed, n_patterns=40)
    result = fast_gcv(x, y, radius=radius, constant=True)
    trace = result.details["gcv_trace"]
    noise = result.details["noise_variance_trace"]
    assert len(trace) > 10
    rises = np.diff(trace) > 0.0
    assert not np.any(rises & (np.diff(noise) == 0.0))
    assert trace[-1] < 0.5 * trace[0]
    # …and the returned model's GCV is the last entry, recomputed from an explicit P.
    F = fast_gcv_design(x, x, radius, constant=True)
    P = explicit_projection(F, result.selected.tolist(), result.lambdas.tolist())
    assert explicit_gcv(P, y) == pytest.approx(trace[-1], rel=1e-9)
    assert result.gcv[-1] == pytest.approx(trace[-1], rel=1e-9)


def test_weights_are_the_ridge_solution_and_predict_uses_the_design():
    x, y, radius = random_problem(7, n_patterns=30)
    result = fast_gcv(x, y, radius=radius, constant=True)
    F = fast_gcv_design(x, x, radius, constant=True)
    H = F[:, result.selected]
    expected = np.linalg.solve(H.T @ H + np.diag(result.lambdas), H.T @ y)
    np.testing.assert_allclose(result.weights, expected, rtol=1e-9)
    x_new = np.random.default_rng(1).uniform(-1.0, 1.0, (5, 2))
    F_new = fast_gcv_design(x_new, x, radius, constant=True)
    np.testing.assert_allclose(result.predict(F_new), F_new[:, result.selected] @ expected,
                               rtol=1e-9)


def test_with_the_floor_every_lambda_respects_alpha_min_at_the_time_it_was_set():
    """``alpha_min_floor=True``: α ≥ α_min = 1/N, i.e. λ ≥ σ²/N with the σ² in force."""
    x, y, radius = random_problem(3, n_patterns=40)
    result = fast_gcv(x, y, radius=radius, noise_every=1, alpha_min_floor=True)
    noise = result.details["noise_variance_trace"]
    moves = result.details["moves"]
    # noise[i] is the σ² in force after i moves (re-estimated after every move here, and no
    # settled stretch added entries of its own), so move i (0-based) was made with floor
    # noise[i]/N.
    assert len(noise) == len(moves) + 1
    at_floor = 0
    for i, (kind, _, lam) in enumerate(moves):
        if kind != "delete":
            assert lam >= noise[i] / len(y) * (1 - 1e-12)
            at_floor += lam <= noise[i] / len(y) * (1 + 1e-12)
    assert at_floor >= 1  # the clamp was active, so this test exercises it


def test_orr_sin_example_is_sparse_and_fits():
    """Orr's local-ridge example (sin 12x, 50 points, noise 0.1, Gaussians r = 0.05 at the
    inputs): FGCV keeps well under half of the 50 candidates and fits the target function to
    better than the noise level."""
    x_test = np.linspace(0.0, 1.0, 400)
    errors = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x = np.sort(rng.uniform(0.0, 1.0, 50))
        y = np.sin(12 * x) + 0.1 * rng.standard_normal(50)
        result = fast_gcv(x, y, radius=0.05)
        assert result.details["converged"]
        assert 5 <= result.n_selected <= 25, result.n_selected
        prediction = result.predict(fast_gcv_design(x_test, x, 0.05))
        errors.append(np.sqrt(np.mean((prediction - np.sin(12 * x_test)) ** 2)))
        # Its estimate of the noise (eq. 8) is near the truth.
        assert 0.06 < math.sqrt(result.details["noise_variance"]) < 0.14
    assert np.mean(errors) < 0.1, errors


def test_ill_conditioned_wide_kernels_stay_consistent():
    """Wide kernels and little noise make HᵀH + Λ badly conditioned (cond ≈ 1e6): the ridge
    state refreshes itself many times (3.2 point 5; one refresh is the routine one after the
    N patterns), and the result is still the exact ridge solution of its own columns and
    λ's, with a GCV trace that never rises."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 1.0, 40)
    y = 1.0 + np.sin(6 * x) + 0.001 * rng.standard_normal(40)
    result = fast_gcv(x, y, radius=1.0)
    assert result.details["refreshes"] >= 5
    assert result.details["converged"]
    H = fast_gcv_design(x, x, 1.0)[:, result.selected]
    A = H.T @ H + np.diag(result.lambdas)
    assert np.linalg.cond(A) > 1e5
    expected = np.linalg.solve(A, H.T @ y)
    np.testing.assert_allclose(H @ result.weights, H @ expected, rtol=1e-7)
    P = explicit_projection(fast_gcv_design(x, x, 1.0), result.selected.tolist(),
                            result.lambdas.tolist())
    assert explicit_gcv(P, y) == pytest.approx(result.details["gcv_trace"][-1], rel=1e-7)
    assert np.all(np.diff(result.details["gcv_trace"]) <= 0.0)


def test_no_single_function_helps_gives_the_empty_model():
    """Greedy moves are one function at a time: when no single candidate lowers GCV (a
    zero-mean target and kernels so wide that each is nearly constant) the run stops at the
    empty model — converged, not failed."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0.0, 1.0, 40)
    y = np.sin(6 * x) + 0.01 * rng.standard_normal(40)
    y -= y.mean()
    result = fast_gcv(x, y, radius=2.0)
    assert result.n_selected == 0 and result.details["converged"]
    np.testing.assert_array_equal(result.predict(fast_gcv_design(x, x, 2.0)), 0.0)


def test_result_layout():
    x, y, radius = random_problem(2, n_patterns=30)
    result = fast_gcv(x, y, radius=radius, constant=True)
    n = result.n_selected
    assert result.method == "fast_gcv"
    np.testing.assert_array_equal(result.path, result.selected)
    assert len(result.sse) == len(result.gcv) == n + 1
    assert result.sse[0] == pytest.approx(float(y @ y))
    assert result.centres.shape == (n, 2)
    is_constant = result.selected == len(x)
    assert np.all(np.isnan(result.centres[is_constant]))
    np.testing.assert_array_equal(result.centres[~is_constant], x[result.selected[~is_constant]])
    details = result.details
    assert details["iterations"] == len(details["moves"]) == len(details["gcv_trace"]) - 1
    np.testing.assert_allclose(details["alphas"], result.lambdas / details["noise_variance"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"radius": -1.0}, "radius"),
        ({"radius": 0.5, "kernel": "box"}, "kernel"),
        ({"radius": 0.5, "noise_every": 0}, "noise_every"),
        ({"radius": 0.5, "max_iterations": 0}, "max_iterations"),
        ({"radius": 0.5, "tol": 0.0}, "tol"),
        ({"radius": 0.5, "alpha_min": -1.0}, "alpha_min"),
        ({"radius": 0.5, "n_starts": 0}, "n_starts"),
        ({"radius": 0.5, "centres": np.zeros((3, 3))}, "coordinates"),
    ],
)
def test_bad_arguments(kwargs, message):
    x, y, _ = random_problem(0)
    with pytest.raises(ValueError, match=message):
        fast_gcv(x, y, **kwargs)


def friedman2_problem(seed: int, n_patterns: int) -> tuple[np.ndarray, np.ndarray]:
    """Friedman 2 with noise of a third of the signal's std, inputs and targets standardised
    (the benchmark's preprocessing, without scikit-learn)."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(0.0, 100.0, n_patterns),
                         rng.uniform(40.0 * np.pi, 560.0 * np.pi, n_patterns),
                         rng.uniform(0.0, 1.0, n_patterns), rng.uniform(1.0, 11.0, n_patterns)])
    y = np.sqrt(x[:, 0] ** 2 + (x[:, 1] * x[:, 2] - 1.0 / (x[:, 1] * x[:, 3])) ** 2)
    y = y + rng.standard_normal(n_patterns) * y.std() / 3.0
    return (x - x.mean(axis=0)) / x.std(axis=0), y / y.std()


def test_wide_kernels_local_minimum_and_restarts():
    """Regression (benchmark Friedman 2 at wide widths): the paper's run stops at a local
    minimum of GCV with a handful of functions — no single move helps, by the brute force —
    and restarting from other first basis vectors of appendix II finds a far lower GCV."""
    x, y = friedman2_problem(6, 60)
    radius = math.sqrt(2.0) * 5.6
    F = fast_gcv_design(x, x, radius, constant=True)
    single = fast_gcv(x, y, radius=radius, constant=True)
    assert single.details["converged"] and single.n_selected <= 6
    model = dict(zip(single.selected.tolist(), single.lambdas.tolist(), strict=True))
    current = explicit_gcv(explicit_projection(F, list(model), list(model.values())), y)
    lambda_min = single.details["lambda_min"]
    for column in range(F.shape[1]):  # a coordinate-wise minimum: nothing lowers GCV
        _, value = best_lambda(F, y, model, column, lambda_min, zeros_only=True)
        assert value >= current * (1.0 - 1e-6), column

    restarted = fast_gcv(x, y, radius=radius, constant=True, n_starts=5)
    starts = restarted.details["starts"]
    assert len(starts) == 5
    # The first start is the paper's run; the kept run is the one of lowest final GCV.
    assert starts[0][0] == single.details["moves"][0][1]
    assert starts[0][1] == pytest.approx(single.details["gcv_trace"][-1], rel=1e-12)
    final = restarted.details["gcv_trace"][-1]
    assert final == min(value for _, value in starts)
    assert restarted.details["moves"][0][:2] == ("add", restarted.details["start"])
    assert final < 0.6 * single.details["gcv_trace"][-1]
    assert restarted.n_selected > single.n_selected
    P = explicit_projection(F, restarted.selected.tolist(), restarted.lambdas.tolist())
    assert explicit_gcv(P, y) == pytest.approx(final, rel=1e-8)
    rises = np.diff(restarted.details["gcv_trace"]) > 0.0
    assert not np.any(rises & (np.diff(restarted.details["noise_variance_trace"]) == 0.0))


def test_one_start_is_the_papers_run():
    x, y, radius = random_problem(3)
    default = fast_gcv(x, y, radius=radius, constant=True)
    one = fast_gcv(x, y, radius=radius, constant=True, n_starts=1)
    assert one.details["moves"] == default.details["moves"]
    assert "starts" not in one.details
    np.testing.assert_array_equal(one.weights, default.weights)


def test_bad_data():
    x, y, _ = random_problem(0)
    with pytest.raises(ValueError, match="targets"):
        fast_gcv(x, y[:-1], radius=0.5)
    y_bad = y.copy()
    y_bad[3] = np.nan
    with pytest.raises(ValueError, match="y contains"):
        fast_gcv(x, y_bad, radius=0.5)
    x_bad = x.copy()
    x_bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="inputs"):
        fast_gcv(x_bad, y, radius=0.5)


def test_docstring_examples():
    module = importlib.import_module("onlinesparse.batch.fast_gcv")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_alpha_min_replaces_only_zero_optima_unless_asked_to_floor():
    """Section 3.2 point 7 as written keeps a positive optimum below α_min (on this problem
    2 of the 6 functions have one); ``alpha_min_floor=True`` holds every λ at or above
    λ_min."""
    x, y, radius = random_problem(0)
    written = fast_gcv(x, y, radius=radius, constant=True)
    floored = fast_gcv(x, y, radius=radius, constant=True, alpha_min_floor=True)
    assert np.sum(written.lambdas < written.details["lambda_min"]) >= 1
    assert np.all(written.lambdas > 0.0)
    assert np.all(floored.lambdas >= floored.details["lambda_min"] * (1.0 - 1e-12))
