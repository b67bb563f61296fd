"""Criteria: Orr's worked examples, A.11 quantities, candidate quantities, optimal λ."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onlinesparse import core
from onlinesparse.orr import criteria
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge, RidgeState
from tests.reference import from_scratch, gcv_with_lambda, projection_without, rel_err

ORR_EXAMPLE = [(1.0, 1.1), (2.0, 1.8), (3.0, 3.1)]


def _orr_line() -> IncrementalRidge:
    model = IncrementalRidge(n_features=1, size=10)
    for x, y in ORR_EXAMPLE:
        model.add_pattern([x], y)
    model.add_basis(BasisSpec.constant(), 0.0)
    model.add_basis(BasisSpec.linear(0), 0.0)
    return model


def test_orr_section_4_5_straight_line():
    model = _orr_line()
    np.testing.assert_allclose(model.weights, [0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(model.variance, [[7 / 3, -1], [-1, 0.5]], atol=1e-12)
    assert model.training_error == pytest.approx(0.06, abs=1e-12)
    # P = (1/6)[[1, −2, 1], [−2, 4, −2], [1, −2, 1]]: its diagonal through LOO.
    diag_p = np.array([1, 4, 1]) / 6
    residuals = np.array([1.1, 1.8, 3.1]) - np.array([1.0, 2.0, 3.0])
    assert model.loo() == pytest.approx(np.mean((residuals / diag_p) ** 2), rel=1e-12)
    assert model.effective_parameters == pytest.approx(2.0, abs=1e-12)  # A.8: γ = m


def test_orr_section_4_5_incremental_quadratic():
    """Adding h₃ = x² by Orr A.4 on the state gives the interpolating quadratic, SSE 0."""
    H = np.array([[1, 1], [1, 2], [1, 3]], dtype=float)
    y = np.array([1.1, 1.8, 3.1])
    state = RidgeState()
    state.variance, state.weights, state.lambdas = (
        np.linalg.inv(H.T @ H), np.array([[0.0], [1.0]]), np.zeros(2))
    h3 = np.array([1.0, 4.0, 9.0])
    state.add_basis(H.T @ h3, float(h3 @ h3), np.array([h3 @ y]), 0.0)
    H3 = np.column_stack([H, h3])
    weights = state.weights[:, 0]  # (the state's W has a column per target)
    np.testing.assert_allclose(weights, np.linalg.solve(H3, y), rtol=1e-10)
    np.testing.assert_allclose(state.variance, np.linalg.inv(H3.T @ H3), rtol=1e-9)
    assert np.sum((H3 @ weights - y) ** 2) == pytest.approx(0.0, abs=1e-20)


def test_effective_parameters_formulas_of_appendix_a8():
    rng = np.random.default_rng(1)
    model = IncrementalRidge(n_features=1, size=40)
    for x in rng.uniform(-1, 1, 40):
        model.add_pattern([x], float(np.sin(3 * x)))
    for c in np.linspace(-1, 1, 6):
        model.add_basis(BasisSpec.radial([c], 0.5), 0.0)
    assert model.effective_parameters == pytest.approx(6.0, abs=1e-8)
    lam = 0.3
    for j in range(6):
        model.set_lambda(j, lam)
    mu = np.linalg.eigvalsh(model.window.gram_model)
    assert model.effective_parameters == pytest.approx(float(np.sum(mu / (lam + mu))), rel=1e-10)


def _random_model(seed: int, n_patterns: int, n_basis: int, lambdas: list[float],
                  n_candidates: int = 0) -> IncrementalRidge:
    rng = np.random.default_rng(seed)
    model = IncrementalRidge(n_features=1, size=max(n_patterns, 2))
    for x in rng.uniform(-1, 1, n_patterns):
        model.add_pattern([x], float(np.sin(5 * x) + 0.2 * rng.standard_normal()))
    centres = rng.uniform(-1, 1, n_basis + n_candidates)
    for j in range(n_basis):
        try:
            model.add_basis(BasisSpec.radial([centres[j]], 0.4), lambdas[j % len(lambdas)])
        except IllConditionedError:
            pass  # with λ = 0, in the span of the others over few patterns: refused, skip it
    for c in centres[n_basis:]:
        model.add_candidate(BasisSpec.radial([c], 0.3))
    return model


@settings(max_examples=60)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(8, 60), n_basis=st.integers(1, 12),
       lambdas=st.lists(st.sampled_from([1e-3, 0.01, 0.1, 1.0, 10.0, 1e4]), min_size=1,
                        max_size=5))
def test_basis_quantities_equal_brute_force(seed, n_patterns, n_basis, lambdas):
    model = _random_model(seed, n_patterns, n_basis, lambdas)
    ref = from_scratch(model)
    assume(ref["cond"] <= 1e6)
    y, H = ref["y"], ref["H"]
    for j in range(model.size):
        Pj = projection_without(model, j)
        h = H[:, j]
        yPh, yP2h = y @ Pj @ h, y @ Pj @ Pj @ h
        expected = {
            "a": y @ Pj @ Pj @ y, "b": yP2h * yPh, "c": (h @ Pj @ Pj @ h) * yPh**2,
            "alpha": np.trace(Pj), "beta": h @ Pj @ Pj @ h, "psi": h @ Pj @ h,
        }
        ours = criteria.basis_quantities(model, j)
        scale = {"a": y @ y, "b": (y @ y) * (h @ h), "c": (h @ h) ** 2 * (y @ y),
                 "alpha": len(y), "beta": h @ h, "psi": h @ h}
        for key, value in expected.items():
            assert abs(ours[key] - value) <= 1e-9 * scale[key], (key, ours[key], value)


@settings(max_examples=60)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(5, 60), n_basis=st.integers(0, 10),
       n_candidates=st.integers(1, 6))
def test_candidate_quantities_equal_brute_force(seed, n_patterns, n_basis, n_candidates):
    model = _random_model(seed, n_patterns, n_basis, [0.05, 1.0], n_candidates)
    ref = from_scratch(model)
    y, P = ref["y"], ref["P"]
    Phi = model.window.stored_rows(model_only=False)[:, model.size:]
    ours = criteria.candidate_quantities(model)
    expected = {"r": y @ P @ Phi, "gamma": np.einsum("ij,ij->j", Phi, P @ Phi),
                "xi": y @ P @ P @ Phi, "u": np.einsum("ij,ij->j", Phi, P @ P @ Phi)}
    norms = np.einsum("ij,ij->j", Phi, Phi)
    for key, value in expected.items():
        scale = norms * (np.sqrt(y @ y) if key in ("r", "xi") else 1.0) / np.sqrt(
            np.maximum(norms, 1e-300)) ** (1 if key in ("r", "xi") else 0)
        assert np.all(np.abs(ours[key] - value) <= 1e-9 * np.maximum(scale, 1e-12)), key


@settings(max_examples=60)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(8, 60), n_basis=st.integers(1, 10),
       n_candidates=st.integers(1, 5), lambdas=st.lists(
           st.sampled_from([1e-3, 0.05, 1.0, 100.0]), min_size=1, max_size=4),
       data=st.data())
def test_pricing_a_trade_equals_making_it(seed, n_patterns, n_basis, n_candidates, lambdas,
                                          data):
    """``without=j`` prices trading basis function j for each candidate without touching the
    model: the quantities and optima equal those computed after removing j for real."""
    model = _random_model(seed, n_patterns, n_basis, lambdas, n_candidates)
    assume(model.size > 0 and from_scratch(model)["cond"] <= 1e6)
    j = data.draw(st.integers(0, model.size - 1))
    lambda_min = data.draw(st.sampled_from([0.0, 1e-3]))
    positions = np.arange(model.window.n_candidates)
    priced_q = criteria.candidate_quantities(model, positions, without=j)
    priced_lam, priced_gcv = criteria.candidate_optima(model, positions, lambda_min, without=j)
    before = pickle.dumps(model)
    _ = criteria.candidate_optima(model, positions, lambda_min, without=j)
    assert pickle.dumps(model) == before  # pricing changes nothing
    # j steps back into the pool at its head; the candidates follow it in their order.
    model.remove_basis(j, keep_as_candidate=True)
    made_q = criteria.candidate_quantities(model, positions + 1)
    made_lam, made_gcv = criteria.candidate_optima(model, positions + 1, lambda_min)
    scale = np.sqrt(np.abs(made_q["u"]) * max(model.window.yy, 1e-300)) + np.abs(made_q["u"])
    for key in ("r", "gamma", "xi", "u"):
        assert np.all(np.abs(priced_q[key] - made_q[key]) <= 1e-8 * np.maximum(scale, 1e-12)
                      + 1e-9 * np.abs(made_q[key])), key
    finite = np.isfinite(made_gcv)
    assert np.array_equal(finite, np.isfinite(priced_gcv))
    assert np.allclose(priced_gcv[finite], made_gcv[finite], rtol=1e-7)
    both = np.isfinite(made_lam) & np.isfinite(priced_lam)
    assert np.allclose(priced_lam[both], made_lam[both], rtol=1e-5, atol=1e-9)


@settings(max_examples=40)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(10, 40), n_basis=st.integers(2, 8),
       lambdas=st.lists(st.sampled_from([0.0, 1e-3, 0.1, 1.0, 100.0]), min_size=1,
                        max_size=4))
def test_optimal_lambda_minimises_gcv_over_a_dense_grid(seed, n_patterns, n_basis, lambdas):
    model = _random_model(seed, n_patterns, n_basis, lambdas)
    cond = from_scratch(model)["cond"]
    if cond > 1e6:
        # Ill-conditioned draws: no exactness promise, but never NaN.
        for j in range(model.size):
            q = criteria.basis_quantities(model, j)
            opt = criteria.optimal_lambda(q["a"], q["b"], q["c"], q["alpha"], q["beta"],
                                          q["psi"], model.n_patterns)
            assert not math.isnan(opt.lam) and not math.isnan(opt.gcv)
        return
    grid = np.concatenate([[0.0], np.logspace(-8, 8, 200), [math.inf]])
    for j in range(model.size):
        q = criteria.basis_quantities(model, j)
        opt = criteria.optimal_lambda(q["a"], q["b"], q["c"], q["alpha"], q["beta"], q["psi"],
                                      model.n_patterns)
        # A column nearly in the span of the others (ψ = hⱼᵀPⱼhⱼ ≪ hⱼᵀhⱼ) makes the brute
        # force at small λⱼ ill-conditioned whatever the current λⱼ: its pivot λ + ψ
        # carries cond ≈ hⱼᵀhⱼ/(λ + ψ). (Hypothesis found ψ = 6.7e-9 against hⱼᵀhⱼ = 4.8,
        # where the brute force itself was 2e-7 off at the interior optimum λ = 1.4e-9.)
        g_jj = float(model.window.gram[j, j])
        if g_jj > 1e6 * (q["psi"] + opt.lam):
            assert not math.isnan(opt.lam) and not math.isnan(opt.gcv)
            continue
        values = np.array([gcv_with_lambda(model, j, lam) for lam in grid])
        best = float(np.min(values))
        # Both sides carry rounding of order cond(A)·ε (the brute force too). The closed
        # form also loses digits to its pivot: its five quantities are taken without j, so
        # its GCV carries about ε·(hⱼᵀhⱼ/(λ + ψ))². (Hypothesis found hⱼᵀhⱼ/ψ = 1.7e5
        # where it was 1.2e-7 off at λ = 0 and the brute force agreed with an 80-bit solve
        # to 1e-11; docs/numerics.md lists it among the known limits.)
        pivot = g_jj / (q["psi"] + opt.lam)
        rtol = max(1e-8, 1e-12 * cond, 2.2e-16 * pivot * pivot)
        assert opt.gcv <= best * (1 + rtol) + 1e-15, (opt, best, grid[np.argmin(values)])
        # ...and the reported GCV is the model's GCV at that λ.
        assert opt.gcv == pytest.approx(gcv_with_lambda(model, j, opt.lam), rel=10 * rtol)
        assert opt.gcv_removed == pytest.approx(values[-1], rel=1e-7)


def test_optimal_lambda_case_analysis():
    """Each branch of Orr A.11 / FGCV appendix I on hand-made coefficients."""
    p = 10.0
    # Interior minimum: k = bα − aβ > 0, Δ̂ = m/k above ψ.
    a, b, c, alpha, beta, psi = 1.0, 1.0, 2.0, 8.0, 1.0, 0.5
    k, m = b * alpha - a * beta, c * alpha - b * beta
    opt = criteria.optimal_lambda(a, b, c, alpha, beta, psi, p)
    assert opt.case == "interior" and opt.lam == pytest.approx(m / k - psi)
    # Stationary point below ψ with k > 0: the optimum is the lower end (λ = 0).
    opt = criteria.optimal_lambda(1.0, 1.0, 1.1, 8.0, 1.0, 2.0, p)
    assert opt.case == "zero" and opt.lam == 0.0
    # ... clamped to λ_min when one is given, under either reading of FGCV 3.2 point 7.
    opt = criteria.optimal_lambda(1.0, 1.0, 1.1, 8.0, 1.0, 2.0, p, lambda_min=0.25)
    assert opt.lam == 0.25
    opt = criteria.optimal_lambda(1.0, 1.0, 1.1, 8.0, 1.0, 2.0, p, lambda_min=0.25,
                                  zeros_only=True)
    assert opt.lam == 0.25
    # An interior minimum below λ_min: the floor raises it, point 7 as written keeps it.
    interior = m / k - psi
    opt = criteria.optimal_lambda(a, b, c, alpha, beta, psi, p, lambda_min=2.0)
    assert opt.case == "zero" and opt.lam == 2.0
    opt = criteria.optimal_lambda(a, b, c, alpha, beta, psi, p, lambda_min=2.0,
                                  zeros_only=True)
    assert opt.case == "interior" and opt.lam == pytest.approx(interior) and interior < 2.0
    # k < 0 with no stationary point in the domain: GCV falls for ever → ∞.
    opt = criteria.optimal_lambda(1.0, 0.01, 0.0, 8.0, 1.0, 0.5, p)
    assert opt.case == "infinite" and math.isinf(opt.lam)
    # aβ = αb (k = 0) and m ≥ 0: Orr's first case, ∞.
    opt = criteria.optimal_lambda(1.0, 0.125, 0.2, 8.0, 1.0, 0.5, p)
    assert math.isinf(opt.lam)
    # k < 0 with a stationary maximum inside: both ends are compared. (These coefficients
    # break b² ≤ ac, which real data obey, so Orr's analysis never meets this case; FGCV
    # appendix I keeps it as a safeguard against rounding, and so do we.)
    a, b, c, alpha, beta, psi = 1.0, 0.1, 0.005, 8.0, 1.0, 0.2
    opt = criteria.optimal_lambda(a, b, c, alpha, beta, psi, p)
    assert opt.case == "boundary"
    ends = {0.0: core.gcv_of_delta(psi, a, b, c, alpha, beta, p),
            math.inf: p * a / alpha**2}
    assert opt.gcv == pytest.approx(min(ends.values()))


def test_candidate_optimum_predicts_the_gcv_after_adding_it():
    model = _random_model(7, 40, 4, [0.1], n_candidates=5)
    quantities = criteria.candidate_quantities(model)
    for i in range(5):
        r, psi, xi, u = (quantities[k][i] for k in ("r", "gamma", "xi", "u"))
        e, alpha = model.training_error, model.n_patterns - model.effective_parameters
        opt = criteria.optimal_lambda(e, xi * r, u * r * r, alpha, u, psi, model.n_patterns)
        if math.isinf(opt.lam):
            continue
        trial = pickle.loads(pickle.dumps(model))
        trial.add_basis(int(trial.window.ids[trial.size + i]), opt.lam)
        assert trial.gcv == pytest.approx(opt.gcv, rel=1e-8)
        assert opt.gcv_removed == pytest.approx(model.gcv, rel=1e-10)


def test_global_reestimation_reaches_a_gcv_minimum():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 50)
    y = np.sin(12 * x) + 0.1 * rng.standard_normal(50)
    H = np.exp(-((x[:, None] - x[None, :]) ** 2) / 0.05**2)
    lam, trace = criteria.global_lambda_reestimate(H.T @ H, H.T @ y, float(y @ y), 50, 0.01)
    def gcv_at(value: float) -> float:
        P = np.eye(50) - H @ np.linalg.solve(H.T @ H + value * np.eye(50), H.T)
        return 50 * float(y @ P @ P @ y) / np.trace(P) ** 2
    neighbourhood = [gcv_at(lam * f) for f in (0.5, 0.8, 1.25, 2.0)]
    assert gcv_at(lam) <= min(neighbourhood) * (1 + 1e-9)
    assert trace[-1] == pytest.approx(gcv_at(lam), rel=1e-6)


# -- bad input leaves the state unchanged ----------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m: m.add_pattern([float("nan")], 1.0),
    lambda m: m.add_pattern([float("inf")], 1.0),
    lambda m: m.add_pattern([0.5], float("nan")),
    lambda m: m.add_pattern([0.5], "abc"),
    lambda m: m.add_pattern([0.5, 0.1], 1.0),
    lambda m: m.add_pattern(np.zeros((1, 1)), 1.0),
    lambda m: m.remove_basis(5),
    lambda m: m.remove_basis(-1),
    lambda m: m.set_lambda(0, -1.0),
    lambda m: m.set_lambda(0, float("nan")),
    lambda m: m.add_basis(BasisSpec.radial([0.0], 1.0), -2.0),
    lambda m: m.add_basis(int(m.window.ids[0]), 1.0),
])
def test_bad_input_raises_and_changes_nothing(call):
    model = _orr_line()
    before = pickle.dumps(model)
    with pytest.raises(ValueError):
        call(model)
    assert pickle.dumps(model) == before


def test_removing_from_an_empty_window_raises_and_changes_nothing():
    model = IncrementalRidge(n_features=1, size=5)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="empty"):
        model.remove_oldest()
    assert pickle.dumps(model) == before


def test_criteria_at_the_pole_are_infinite_not_nan():
    assert criteria.gcv(1.0, 5.0, 5.0) == math.inf
    assert criteria.uev(1.0, 6.0, 5.0) == math.inf
    assert criteria.bic(1.0, 0.0, 1.0) == math.inf
    assert rel_err([criteria.fpe(2.0, 1.0, 4.0)], [5 / 3 * 0.5]) < 1e-15


def test_the_criteria_survive_denominators_whose_squares_underflow():
    """GCV divides by (p − γ)², by (αΔ − β)² and by α²; each factor can be about 1e-170
    (inputs in units of 1e-100) and its square underflow to 0, where a compiled division
    raises ZeroDivisionError. Divided twice, the values are what IEEE gives."""
    tiny = 1e-170
    assert core.criteria.gcv_of_delta(1.0, 0.0, 0.0, 1e-300, tiny, 0.0, 3.0) == (
        3.0 * 1e-300 / tiny / tiny)
    lam, value, removed, _ = core.criteria.optimal_lambda(1e-300, 0.0, 1e-300, tiny, 0.0,
                                                          0.0, 3.0, 0.0)
    assert removed == 3.0 * 1e-300 / tiny / tiny
    assert not math.isnan(value) and not math.isnan(lam)
    assert core.criteria.gcv(1e-300, 0.0, tiny) == tiny * 1e-300 / tiny / tiny
