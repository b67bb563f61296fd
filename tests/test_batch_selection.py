"""Batch selection algorithms against brute force on small random problems.

The brute-force references solve an explicit least-squares / ridge problem for every candidate
at every step (no projection-matrix updates, no orthogonalisation) and choose by the resulting
SSE or cost, so they check the update formulas of Orr A.12–A.15 and Hagiwara section 2 end to
end: same selection order, same weights, same criterion traces.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onlinesparse.batch import (
    SelectionResult,
    forward_selection,
    gaussian_candidates,
    orthogonal_least_squares,
    regularised_forward_selection,
    regularised_orthogonal_least_squares,
    ridge_weights,
    tcr,
)
from onlinesparse.batch._common import best_point, stopping_point
from onlinesparse.orr.criteria import gcv, global_lambda_reestimate

# --------------------------------------------------------------------------------------------
# problems
# --------------------------------------------------------------------------------------------


def random_problem(seed: int, n_patterns: int, n_candidates: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian random candidates and a target made of a few of them plus noise, so that a
    GCV-stopped run ends somewhere inside the path."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n_patterns, n_candidates))
    true = np.zeros(n_candidates)
    active = rng.choice(n_candidates, size=min(3, n_candidates), replace=False)
    true[active] = rng.uniform(1.0, 3.0, len(active)) * rng.choice([-1.0, 1.0], len(active))
    y = F @ true + 0.5 * rng.standard_normal(n_patterns)
    return F, y


problems = st.builds(
    random_problem,
    seed=st.integers(0, 2**32 - 1),
    n_patterns=st.integers(10, 30),
    n_candidates=st.integers(3, 9),
)

# --------------------------------------------------------------------------------------------
# brute-force references
# --------------------------------------------------------------------------------------------


def ridge_fit(F: np.ndarray, y: np.ndarray, chosen: list[int], lam: float,
              metric: np.ndarray | None = None) -> dict[str, float | np.ndarray]:
    """Explicit solve of ``(HᵀH + λM)w = Hᵀy`` (M = I, or UᵀU for regularised OLS)."""
    H = F[:, chosen]
    metric = np.eye(len(chosen)) if metric is None else metric
    A = H.T @ H + lam * metric
    w = np.linalg.solve(A, H.T @ y)
    residual = y - H @ w
    sse = float(residual @ residual)
    gamma = float(np.trace(np.linalg.solve(A, H.T @ H)))
    return {"w": w, "sse": sse, "cost": sse + lam * float(w @ metric @ w), "gamma": gamma}


def orr_metric(F: np.ndarray, chosen: list[int]) -> np.ndarray:
    """``UᵀU`` of Orr eq. 7.3/7.8 from an explicit QR factorisation: ``H = H̃U``, U unit upper
    triangular, so ``U = diag(R)⁻¹R``."""
    _, R = np.linalg.qr(F[:, chosen])
    U = R / np.diag(R)[:, None]
    return U.T @ U


def brute_force(F: np.ndarray, y: np.ndarray, *, lam: float = 0.0, criterion: str = "sse",
                reestimate: bool = False, orthogonal_ridge: bool = False,
                max_steps: int | None = None, stop: bool = True, wait: int = 1,
                min_decrease: float = 0.0) -> dict[str, object]:
    p, M = F.shape
    max_steps = min(M, p - 1) if max_steps is None else max_steps
    yy = float(y @ y)
    chosen: list[int] = []
    current = lam
    sse, gcvs, costs, lams = [yy], [gcv(yy, 0.0, p)], [yy], [lam]
    fits: list[dict] = [{"w": np.zeros(0)}]
    n_selected = None
    best_size = 0  # size of the model of the smallest GCV so far (Orr's rbf_fs_2 "age" rule)
    for _ in range(max_steps):
        best, best_value = None, math.inf
        for candidate in range(M):
            if candidate in chosen:
                continue
            trial = [*chosen, candidate]
            metric = orr_metric(F, trial) if orthogonal_ridge else None
            fit = ridge_fit(F, y, trial, current, metric)
            value = fit["sse"] if criterion == "sse" else fit["cost"]
            if value < best_value:
                best, best_value = candidate, value
        chosen.append(best)
        if reestimate:
            if orthogonal_ridge:
                # The modified ridge of Orr 7.8 is standard ridge on H̃ (orthogonal columns).
                Q, R = np.linalg.qr(F[:, chosen])
                Ht = Q * np.diag(R)
                current = global_lambda_reestimate(Ht.T @ Ht, Ht.T @ y, yy, p, current,
                                                   iterations=1)[0]
            else:
                H = F[:, chosen]
                current = global_lambda_reestimate(H.T @ H, H.T @ y, yy, p, current,
                                                   iterations=1)[0]
        metric = orr_metric(F, chosen) if orthogonal_ridge else None
        fit = ridge_fit(F, y, chosen, current, metric)
        fits.append(fit)
        sse.append(fit["sse"])
        costs.append(fit["cost"])
        gcvs.append(gcv(fit["sse"], fit["gamma"], p))
        lams.append(current)
        if gcvs[-1] < gcvs[best_size] * (1.0 - min_decrease):
            best_size = len(chosen)
        elif stop and len(chosen) - best_size >= wait:
            n_selected = best_size
            break
    if n_selected is None:
        n_selected = best_size if stop else len(chosen)
    return {"path": chosen, "n_selected": n_selected, "weights": fits[n_selected]["w"],
            "sse": np.array(sse), "gcv": np.array(gcvs), "cost": np.array(costs),
            "lambda": np.array(lams)}


def assert_matches(result: SelectionResult, reference: dict[str, object],
                   rtol: float = 1e-7) -> None:
    np.testing.assert_array_equal(result.path, reference["path"])
    assert result.n_selected == reference["n_selected"]
    np.testing.assert_allclose(result.weights, reference["weights"], rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(result.sse, reference["sse"], rtol=rtol, atol=1e-9)
    np.testing.assert_allclose(result.gcv, reference["gcv"], rtol=rtol, atol=1e-9)


# --------------------------------------------------------------------------------------------
# the four Orr algorithms against brute force
# --------------------------------------------------------------------------------------------


@given(problems)
def test_forward_selection_matches_brute_force(problem):
    F, y = problem
    assert_matches(forward_selection(F, y), brute_force(F, y))


@given(problems)
def test_forward_selection_full_path_matches_brute_force(problem):
    F, y = problem
    result = forward_selection(F, y, stop=None)
    reference = brute_force(F, y, stop=False)
    assert_matches(result, reference)
    assert result.n_selected == len(result.path)


@given(problems)
def test_orthogonal_least_squares_matches_brute_force(problem):
    F, y = problem
    assert_matches(orthogonal_least_squares(F, y), brute_force(F, y))


@given(problems, st.sampled_from(["sse", "cost"]), st.sampled_from([1e-3, 0.3, 5.0]))
def test_regularised_forward_selection_fixed_lambda(problem, criterion, lam):
    F, y = problem
    result = regularised_forward_selection(F, y, lam=lam, criterion=criterion,
                                           reestimate=False, stop=None)
    reference = brute_force(F, y, lam=lam, criterion=criterion, stop=False)
    assert_matches(result, reference)
    np.testing.assert_allclose(result.cost, reference["cost"], rtol=1e-7)


@given(problems, st.sampled_from(["sse", "cost"]))
def test_regularised_forward_selection_reestimated_lambda(problem, criterion):
    F, y = problem
    result = regularised_forward_selection(F, y, lam=0.1, criterion=criterion)
    reference = brute_force(F, y, lam=0.1, criterion=criterion, reestimate=True)
    assert_matches(result, reference)
    np.testing.assert_allclose(result.details["lambda"], reference["lambda"], rtol=1e-7)
    np.testing.assert_allclose(result.lambdas, reference["lambda"][result.n_selected])


@given(problems, st.sampled_from(["sse", "cost"]), st.sampled_from([1e-3, 0.3, 5.0]))
def test_regularised_ols_fixed_lambda(problem, criterion, lam):
    F, y = problem
    result = regularised_orthogonal_least_squares(F, y, lam=lam, criterion=criterion,
                                                  reestimate=False, stop=None)
    reference = brute_force(F, y, lam=lam, criterion=criterion, orthogonal_ridge=True,
                            stop=False)
    assert_matches(result, reference)
    np.testing.assert_allclose(result.cost, reference["cost"], rtol=1e-7)


@given(problems, st.sampled_from(["sse", "cost"]))
def test_regularised_ols_reestimated_lambda(problem, criterion):
    F, y = problem
    result = regularised_orthogonal_least_squares(F, y, lam=0.1, criterion=criterion)
    reference = brute_force(F, y, lam=0.1, criterion=criterion, orthogonal_ridge=True,
                            reestimate=True)
    assert_matches(result, reference)
    np.testing.assert_allclose(result.details["lambda"], reference["lambda"], rtol=1e-7)


# --------------------------------------------------------------------------------------------
# patient stopping (Orr's Matlab rbf_fs_2: wait, thresh) against brute force
# --------------------------------------------------------------------------------------------

PATIENT = st.sampled_from([(2, 0.0), (2, 1e-4), (3, 0.02), (1, 0.05)])


@given(problems, PATIENT)
def test_patient_forward_selection_and_ols_match_brute_force(problem, patience):
    F, y = problem
    wait, min_decrease = patience
    reference = brute_force(F, y, wait=wait, min_decrease=min_decrease)
    assert_matches(forward_selection(F, y, wait=wait, min_decrease=min_decrease), reference)
    assert_matches(orthogonal_least_squares(F, y, wait=wait, min_decrease=min_decrease),
                   reference)


@given(problems, PATIENT)
def test_patient_regularised_selection_matches_brute_force(problem, patience):
    F, y = problem
    wait, min_decrease = patience
    result = regularised_forward_selection(F, y, lam=0.1, wait=wait, min_decrease=min_decrease)
    reference = brute_force(F, y, lam=0.1, reestimate=True, wait=wait,
                            min_decrease=min_decrease)
    assert_matches(result, reference)
    np.testing.assert_allclose(result.lambdas, reference["lambda"][result.n_selected])
    result = regularised_orthogonal_least_squares(F, y, lam=1e-9, wait=wait,
                                                  min_decrease=min_decrease)
    reference = brute_force(F, y, lam=1e-9, reestimate=True, orthogonal_ridge=True,
                            wait=wait, min_decrease=min_decrease)
    assert_matches(result, reference)
    np.testing.assert_allclose(result.lambdas, reference["lambda"][result.n_selected])


def test_stopping_point_waits_and_needs_a_real_decrease():
    trace = [10.0, 8.0, 9.0, 7.0, 6.9999, 7.5, 7.6]
    assert stopping_point(trace) == 1  # first non-decrease
    assert stopping_point(trace, wait=2) == 4  # 9.0 ages 8.0 once, 7.0 is a new minimum
    # 6.9999 lowers 7.0 by less than 10⁻⁴ of it: it only ages the minimum at 3 functions.
    assert stopping_point(trace, wait=2, min_decrease=1e-4) == 3
    assert stopping_point(trace, wait=4) is None
    assert best_point(trace) == 4
    assert best_point(trace, min_decrease=1e-4) == 3


def test_patient_run_keeps_the_minimum_and_stops_wait_steps_later():
    F, y = random_problem(11, 30, 9)
    full = orthogonal_least_squares(F, y, stop=None)
    for wait in (1, 2, 3):
        result = orthogonal_least_squares(F, y, wait=wait)
        m = result.n_selected
        assert result.gcv[m] == pytest.approx(min(result.gcv))
        np.testing.assert_array_equal(result.path, full.path[: len(result.path)])
        if len(result.path) < len(full.path):  # stopped by the rule, not by running out
            assert len(result.path) == m + wait
            assert np.all(result.gcv[m + 1:] >= result.gcv[m])


# --------------------------------------------------------------------------------------------
# relations between the algorithms and with the paper's closed forms
# --------------------------------------------------------------------------------------------


@given(problems)
def test_ols_and_forward_selection_share_the_sse_path(problem):
    """Orr 7.1: OLS is forward selection computed differently — same path and SSE trace."""
    F, y = problem
    fs = forward_selection(F, y, stop=None)
    ols = orthogonal_least_squares(F, y, stop=None)
    np.testing.assert_array_equal(fs.path, ols.path)
    np.testing.assert_allclose(fs.sse, ols.sse, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fs.weights, ols.weights, rtol=1e-8, atol=1e-10)


@given(problems)
def test_ols_sse_equals_orr_a13_sum(problem):
    """Orr A.13: ``Ŝ_m = yᵀy − Σⱼ (yᵀh̃ⱼ)²/(h̃ⱼᵀh̃ⱼ)`` with ``h̃`` from an explicit QR."""
    F, y = problem
    result = orthogonal_least_squares(F, y, stop=None)
    Q, _ = np.linalg.qr(F[:, result.path])
    expected = float(y @ y) - np.concatenate([[0.0], np.cumsum((Q.T @ y) ** 2)])
    np.testing.assert_allclose(result.sse, expected, rtol=1e-9, atol=1e-12)


@given(problems, st.sampled_from([1e-2, 1.0]))
def test_regularised_ols_gcv_equals_orr_a15(problem, lam):
    """Orr A.15: GCV = p/(p − γ)² (yᵀy − Σ z²(2λ + d)/(λ + d)²), γ = Σ d/(λ + d)."""
    F, y = problem
    p = len(y)
    result = regularised_orthogonal_least_squares(F, y, lam=lam, reestimate=False, stop=None)
    Q, R = np.linalg.qr(F[:, result.path])
    d = np.diag(R) ** 2
    z2 = (Q.T @ y) ** 2 * d  # (yᵀh̃)² with h̃ = Q·diag(R)
    terms = z2 / (lam + d) * (2 * lam + d) / (lam + d)
    gamma = np.concatenate([[0.0], np.cumsum(d / (lam + d))])
    sse = float(y @ y) - np.concatenate([[0.0], np.cumsum(terms)])
    np.testing.assert_allclose(result.gcv, p * sse / (p - gamma) ** 2, rtol=1e-9)


def test_stop_criteria_other_than_gcv():
    F, y = random_problem(3, 25, 8)
    for stop in ("uev", "fpe", "bic"):
        result = forward_selection(F, y, stop=stop)
        trace = result.details[stop]
        m = result.n_selected
        # The run stopped at the first non-decrease of that criterion.
        assert np.all(np.diff(trace[: m + 1]) < 0)
        if len(result.path) > m:
            assert trace[m + 1] >= trace[m]


def test_empty_model_when_nothing_helps():
    """A target orthogonal to every candidate: the first addition cannot lower GCV."""
    rng = np.random.default_rng(0)
    F = rng.standard_normal((20, 4))
    y = rng.standard_normal(20)
    y -= F @ np.linalg.lstsq(F, y, rcond=None)[0]  # y ⟂ span(F)
    result = forward_selection(F, y)
    assert result.n_selected == 0
    assert result.weights.shape == (0,)
    assert len(result.path) == 1


def test_dependent_candidate_is_never_chosen():
    """An exact copy of a chosen column is in the span: never eligible (no 0/0)."""
    F, y = random_problem(5, 20, 5)
    F = np.column_stack([F, F[:, 0]])
    result = forward_selection(F, y, stop=None)
    assert not {0, 5} <= set(result.path.tolist())
    assert np.all(np.isfinite(result.weights))


# --------------------------------------------------------------------------------------------
# TCR against brute force
# --------------------------------------------------------------------------------------------


def brute_force_loo(F: np.ndarray, y: np.ndarray, chosen: list[int], lam: float) -> float:
    """Σᵢ (yᵢ − f₋ᵢ(xᵢ))² by p explicit refits without pattern i (Hagiwara eq. 30)."""
    total = 0.0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        H = F[keep][:, chosen]
        w = np.linalg.solve(H.T @ H + lam * np.eye(len(chosen)), H.T @ y[keep])
        total += (y[i] - F[i, chosen] @ w) ** 2
    return total


@given(problems, st.sampled_from([1e-6, 1e-2]))
def test_tcr_matches_brute_force(problem, lam):
    F, y = problem
    n, M = F.shape
    result = tcr(F, y, lam=lam, max_basis=M)
    reference = brute_force(F, y, lam=lam, criterion="cost", stop=False)
    np.testing.assert_array_equal(result.path, reference["path"])
    steps = len(result.path)
    # cost reductions c²_k = C_{k−1} − C_k (Hagiwara eq. 9)
    np.testing.assert_allclose(result.details["cost_reduction"],
                               -np.diff(reference["cost"])[:steps], rtol=1e-6, atol=1e-10)
    loo = [float(y @ y)] + [brute_force_loo(F, y, reference["path"][:k], lam)
                            for k in range(1, steps + 1)]
    np.testing.assert_allclose(result.details["loo"], loo, rtol=1e-6)
    # the selection rule of section 3.3, restated
    k_lcv = int(np.argmin(loo[1:])) + 1
    sigma = math.sqrt(loo[k_lcv] / n)
    keep = [k for k in range(1, k_lcv + 1)
            if math.sqrt(result.details["cost_reduction"][k - 1])
            >= sigma * math.sqrt(2 * math.log(M - k + 1))]
    k_tcr = max(keep, default=0)
    assert result.details["k_lcv"] == k_lcv
    assert result.n_selected == k_tcr
    if k_tcr:
        np.testing.assert_allclose(result.weights,
                                   ridge_fit(F, y, reference["path"][:k_tcr], lam)["w"],
                                   rtol=1e-6, atol=1e-9)


def test_tcr_threshold_keeps_the_last_significant_step():
    """Section 3.3: a step below the threshold followed by one above is kept (prefix rule)."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-1, 1, (120, 1))
    y = np.sin(4 * x[:, 0]) + 0.2 * rng.standard_normal(120)
    result = tcr(gaussian_candidates(x, x, 0.3), y, max_basis=40)
    magnitude = np.sqrt(result.details["cost_reduction"])
    threshold = result.details["threshold"]
    k_lcv, k_tcr = result.details["k_lcv"], result.n_selected
    assert 0 < k_tcr <= k_lcv
    assert magnitude[k_tcr - 1] >= threshold[k_tcr - 1]
    assert np.all(magnitude[k_tcr:k_lcv] < threshold[k_tcr:k_lcv])


# --------------------------------------------------------------------------------------------
# helpers and validation
# --------------------------------------------------------------------------------------------


def test_gaussian_candidates_formula():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 3))
    c = rng.standard_normal((4, 3))
    expected = np.exp(-((x[:, None, :] - c[None]) ** 2).sum(-1) / 1.5**2)
    np.testing.assert_allclose(gaussian_candidates(x, c, 1.5), expected, rtol=1e-12)


@given(problems, st.sampled_from([0.0, 1e-4, 2.0]))
def test_ridge_weights_solve_the_normal_equations(problem, lam):
    F, y = problem
    chosen = [0, 2]
    w = ridge_weights(F, y, chosen, lam)
    H = F[:, chosen]
    np.testing.assert_allclose((H.T @ H + lam * np.eye(2)) @ w, H.T @ y, rtol=1e-8, atol=1e-8)


def test_result_is_read_only_and_predicts():
    F, y = random_problem(1, 20, 6)
    result = forward_selection(F, y, centres=np.arange(6.0))
    with pytest.raises(ValueError):
        result.weights[0] = 1.0
    with pytest.raises(AttributeError):
        result.method = "x"  # type: ignore[misc]
    np.testing.assert_allclose(result.predict(F), F[:, result.selected] @ result.weights)
    np.testing.assert_array_equal(result.centres[:, 0], result.selected.astype(float))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda F, y: forward_selection(F[:, 0], y), "2-d"),
        (lambda F, y: forward_selection(F, y[:-1]), "targets"),
        (lambda F, y: forward_selection(np.where(F > 1, np.nan, F), y), "NaN"),
        (lambda F, y: forward_selection(F, y, stop="aic"), "stop"),
        (lambda F, y: forward_selection(F, y, max_basis=0), "max_basis"),
        (lambda F, y: forward_selection(F, y, wait=0), "wait"),
        (lambda F, y: orthogonal_least_squares(F, y, min_decrease=1.0), "min_decrease"),
        (lambda F, y: regularised_forward_selection(F, y, lam=0.0), "regularisation"),
        (lambda F, y: regularised_forward_selection(F, y, criterion="gcv"), "criterion"),
        (lambda F, y: regularised_orthogonal_least_squares(F, y, lam=-1.0), "regularisation"),
        (lambda F, y: tcr(F, y, lam=math.inf), "regularisation"),
        (lambda F, y: forward_selection(F, y, centres=np.zeros(3)), "centres"),
    ],
)
def test_bad_input_is_rejected(call, message):
    F, y = random_problem(0, 15, 5)
    with pytest.raises(ValueError, match=message):
        call(F, y)
