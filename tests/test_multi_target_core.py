"""The core with K targets sharing one basis: every multi-column operation and criterion
against a from-scratch multi-column ridge solve and brute-force GCV, and K = 1 against the
single-output model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from onlinesparse.orr import criteria
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.pruner import GCVPruner
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge

LAMBDAS = st.lists(st.sampled_from([1e-3, 0.05, 1.0, 100.0]), min_size=1, max_size=4)


def _targets(rng: np.random.Generator, x: float, units: np.ndarray) -> np.ndarray:
    """K targets of one input, of different shapes, each in its own unit."""
    clean = np.array([np.sin(5 * x), x * x, np.cos(3 * x), x][: len(units)])
    return units * (clean + 0.2 * rng.standard_normal(len(units)))


def _model(seed: int, n_patterns: int, n_basis: int, lambdas: list[float], units: np.ndarray,
           n_candidates: int = 0, size: int | None = None) -> IncrementalRidge:
    """A window of K targets whose units differ by ``units``, ``n_basis`` radial basis
    functions at λ from ``lambdas`` and ``n_candidates`` candidates."""
    rng = np.random.default_rng(seed)
    model = IncrementalRidge(n_features=1, size=size or max(n_patterns, 2),
                             n_targets=len(units))
    for x in rng.uniform(-1, 1, n_patterns):
        model.add_pattern([x], _targets(rng, float(x), units))
    centres = rng.uniform(-1, 1, n_basis + n_candidates)
    for j in range(n_basis):
        try:
            model.add_basis(BasisSpec.radial([centres[j]], 0.4), lambdas[j % len(lambdas)])
        except IllConditionedError:
            pass
    for c in centres[n_basis:]:
        model.add_candidate(BasisSpec.radial([c], 0.3))
    model.set_target_scales(1.0 / units**2)  # (each target in units of its own scale)
    return model


def _scratch(model: IncrementalRidge) -> dict:
    """The multi-column ridge solve from the stored window: H, Y, A⁻¹, W, P, each target's
    error and the weighed GCV."""
    H = model.window.stored_rows()
    Y = model.window.stored_targets().reshape(len(H), -1)
    A = H.T @ H + np.diag(model.lambdas)
    S = np.linalg.inv(A)
    W = S @ H.T @ Y
    P = np.eye(len(H)) - H @ S @ H.T
    errors = np.einsum("ik,ik->k", P @ Y, P @ Y)
    omega = model.target_scales
    p = len(H)
    gamma = model.size - float(np.sum(model.lambdas * np.diag(S)))
    return {"H": H, "Y": Y, "S": S, "W": W, "P": P, "errors": errors, "omega": omega,
            "gcv": p * float(errors @ omega) / (p - gamma) ** 2,
            "cond": np.linalg.cond(A) if model.size else 1.0}


def _weighed_gcv(H: np.ndarray, Y: np.ndarray, lambdas: np.ndarray, omega: np.ndarray
                 ) -> float:
    """Brute force: GCV of the model on H with λ's, the targets' errors weighed by ω."""
    A = H.T @ H + np.diag(lambdas)
    P = np.eye(len(H)) - H @ np.linalg.solve(A, H.T)
    errors = np.einsum("ik,ik->k", P @ Y, P @ Y)
    return len(H) * float(errors @ omega) / np.trace(P) ** 2


UNITS = st.lists(st.sampled_from([1e-3, 1.0, 50.0, 1e4]), min_size=2, max_size=4)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(8, 50), n_basis=st.integers(1, 8),
       lambdas=LAMBDAS, units=UNITS)
def test_weights_errors_and_gcv_equal_the_multi_column_solve(seed, n_patterns, n_basis,
                                                             lambdas, units):
    """W = (HᵀH + Λ)⁻¹HᵀY column by column, each target's yₖᵀP²yₖ and GCV with the errors
    weighed by ω, after patterns and basis functions arrived one at a time."""
    units = np.array(units)
    model = _model(seed, n_patterns, n_basis, lambdas, units)
    ref = _scratch(model)
    assume(model.size > 0 and ref["cond"] <= 1e8)
    scale = np.abs(ref["W"]).max(axis=0) + 1e-300
    assert np.all(np.abs(model.weights - ref["W"]) <= 1e-7 * scale)
    yy = np.einsum("ik,ik->k", ref["Y"], ref["Y"])
    assert np.all(np.abs(model.target_errors - ref["errors"]) <= 1e-8 * yy)
    assert model.gcv == pytest.approx(ref["gcv"], rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(8, 50), n_basis=st.integers(1, 8),
       lambdas=LAMBDAS, units=UNITS)
def test_the_a11_quantities_give_the_weighed_gcv_of_every_lambda(seed, n_patterns, n_basis,
                                                                 lambdas, units):
    """Orr A.11 with K targets: p(aΔ² − 2bΔ + c)/(αΔ − β)² at Δ = λⱼ + ψ equals the
    brute-force weighed GCV with λⱼ changed, for several λⱼ and for λⱼ = ∞ (a/α²·p)."""
    units = np.array(units)
    model = _model(seed, n_patterns, n_basis, lambdas, units)
    ref = _scratch(model)
    assume(model.size > 0 and ref["cond"] <= 1e6)
    for j in range(model.size):
        q = criteria.basis_quantities(model, j)
        for lam in (1e-3, 0.3, 10.0):
            lambdas_j = model.lambdas.copy()
            lambdas_j[j] = lam
            expected = _weighed_gcv(ref["H"], ref["Y"], lambdas_j, ref["omega"])
            delta = lam + q["psi"]
            ours = (len(ref["H"]) * (q["a"] * delta**2 - 2 * q["b"] * delta + q["c"])
                    / (q["alpha"] * delta - q["beta"]) ** 2)
            assert ours == pytest.approx(expected, rel=1e-6), (j, lam)
        without = np.delete(np.arange(model.size), j)
        expected = _weighed_gcv(ref["H"][:, without], ref["Y"], model.lambdas[without],
                                ref["omega"])
        assert len(ref["H"]) * q["a"] / q["alpha"] ** 2 == pytest.approx(expected, rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n_patterns=st.integers(8, 50), n_basis=st.integers(0, 6),
       n_candidates=st.integers(1, 4), units=UNITS)
def test_candidate_optima_are_the_weighed_gcv_of_adding_it(seed, n_patterns, n_basis,
                                                           n_candidates, units):
    """FGCV's candidate optimum with K targets (b = Σωξr, c = uΣωr²): the returned GCV is
    the brute-force weighed GCV of the model with the candidate added at the returned λ,
    and no λ on a grid does better."""
    units = np.array(units)
    model = _model(seed, n_patterns, n_basis, [0.05, 1.0], units, n_candidates)
    ref = _scratch(model)
    assume(ref["cond"] <= 1e6)
    positions = np.arange(model.window.n_candidates)
    lams, values = criteria.candidate_optima(model, positions)
    Phi = model.window.stored_rows(model_only=False)[:, model.size:]
    for q in positions:
        H = np.column_stack([ref["H"], Phi[:, q]])
        grid = [_weighed_gcv(H, ref["Y"], np.r_[model.lambdas, lam], ref["omega"])
                for lam in np.logspace(-6, 6, 25)]
        if not np.isfinite(lams[q]):
            assert min(grid) >= ref["gcv"] * (1 - 1e-6)
            continue
        at = _weighed_gcv(H, ref["Y"], np.r_[model.lambdas, lams[q]], ref["omega"])
        assert values[q] == pytest.approx(at, rel=1e-6)
        assert values[q] <= min(grid) * (1 + 1e-6)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n_basis=st.integers(1, 6), lambdas=LAMBDAS,
       units=UNITS, steps=st.integers(5, 40))
def test_a_sliding_window_and_the_pruner_keep_the_solve_exact(seed, n_basis, lambdas, units,
                                                              steps):
    """Patterns sliding through a full window (Orr A.8 + A.11 on every column of W) and the
    pruner's moves (re-estimations, additions, trades, deletions) leave W equal to the
    multi-column solve; ill-conditioned λ's (10⁻³ with close centres) included."""
    units = np.array(units)
    model = _model(seed, 20, n_basis, lambdas, units, n_candidates=4, size=20)
    rng = np.random.default_rng(seed + 1)
    pruner = GCVPruner(max_basis=6)
    for _ in range(steps):
        x = float(rng.uniform(-1, 1))
        model.add_pattern([x], _targets(rng, x, units))
        pruner.step(model, 2, 1e-6)
    ref = _scratch(model)
    assume(model.size > 0 and ref["cond"] <= 1e8)
    scale = np.abs(ref["W"]).max(axis=0) + 1e-300
    assert np.all(np.abs(model.weights - ref["W"]) <= 1e-6 * scale)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n_basis=st.integers(1, 6), lambdas=LAMBDAS,
       factor=st.sampled_from([1e-3, 1e3]))
def test_one_targets_unit_changes_nothing_else(seed, n_basis, lambdas, factor):
    """With ω = 1/(target's variance), scaling one target by c scales its weights by c and
    leaves every criterion, the pruner's choices and the other targets' weights as they
    were (to rounding)."""
    units = np.array([1.0, 1.0, 1.0])
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-1, 1, 30)
    Y = np.array([_targets(rng, float(x), units) for x in xs])
    models = []
    for scale in (1.0, factor):
        Ys = Y * np.array([scale, 1.0, 1.0])
        model = IncrementalRidge(n_features=1, size=30, n_targets=3)
        for x, y in zip(xs, Ys, strict=True):
            model.add_pattern([x], y)
        for c in np.linspace(-1, 1, n_basis):
            model.add_candidate(BasisSpec.radial([c], 0.4))
        model.set_target_scales(1.0 / Ys.var(axis=0))
        pruner = GCVPruner(max_basis=6)
        for _ in range(20):
            pruner.step(model, 2, 1e-6)
        models.append(model)
    a, b = models
    assert list(a.window.ids[: a.size]) == list(b.window.ids[: b.size])
    np.testing.assert_allclose(a.lambdas, b.lambdas, rtol=1e-6)
    assert a.gcv == pytest.approx(b.gcv, rel=1e-8)
    # (initial=0: a pruner may end with no basis function, and then no weight to compare)
    np.testing.assert_allclose(b.weights[:, 0], factor * a.weights[:, 0], rtol=1e-6,
                               atol=1e-9 * factor * np.abs(a.weights[:, 0]).max(initial=0.0))
    np.testing.assert_allclose(b.weights[:, 1:], a.weights[:, 1:], rtol=1e-6,
                               atol=1e-9 * np.abs(a.weights[:, 1:]).max(initial=0.0))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), n_basis=st.integers(1, 6), lambdas=LAMBDAS)
def test_one_target_is_the_single_output_model(seed, n_basis, lambdas):
    """K = 1 is the single-output model: the same numbers from the same operations."""
    rng = np.random.default_rng(seed)
    single = IncrementalRidge(n_features=1, size=25)
    multi = IncrementalRidge(n_features=1, size=25, n_targets=1)
    for x in rng.uniform(-1, 1, 40):
        y = float(np.sin(5 * x) + 0.1 * rng.standard_normal())
        single.add_pattern([x], y)
        multi.add_pattern([x], np.array([y]))
    for c in rng.uniform(-1, 1, n_basis):
        for model in (single, multi):
            model.add_basis(BasisSpec.radial([c], 0.4), lambdas[0])
    np.testing.assert_array_equal(single.weights, multi.weights)
    assert single.gcv == multi.gcv
    assert criteria.basis_quantities(single, 0) == criteria.basis_quantities(multi, 0)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10**6), n_basis=st.integers(1, 6),
       lam=st.sampled_from([1e-3, 0.1, 10.0]), units=UNITS)
def test_the_weights_equal_scikit_learns_multi_output_ridge(seed, n_basis, lam, units):
    """W against scikit-learn's ``Ridge`` fitted to every target at once (one λ for every
    basis function, no intercept): an implementation of the multi-output solve that is
    not ours."""
    from sklearn.linear_model import Ridge

    model = _model(seed, 30, n_basis, [lam], np.array(units))
    assume(model.size > 0)
    H = model.window.stored_rows()
    Y = model.window.stored_targets()
    theirs = Ridge(alpha=lam, fit_intercept=False, solver="cholesky").fit(H, Y).coef_.T
    scale = np.abs(theirs).max(axis=0) + 1e-300
    assert np.all(np.abs(model.weights - theirs) <= 1e-7 * scale)
