"""The intercept: the constant basis function held at λ = 0, never deleted or traded
(``GCVPruner(free_intercept=True)``, ``core.selection.intercept_move``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from river.datasets import synth

from onlinesparse import SparseRBFRegressor
from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.pruner import GCVPruner
from onlinesparse.orr.ridge import IncrementalRidge
from tests.reference import from_scratch, rel_err

D = 2


def _pool(rng: np.random.Generator, window: int, n_radial: int
          ) -> tuple[IncrementalRidge, int, set[int]]:
    """A windowed ridge with the constant, D linear functions and ``n_radial`` Gaussian
    candidates; returns it, the constant's id and the protected ids."""
    model = IncrementalRidge(n_features=D, memory="window", size=window,
                             refresh_every=10**9)
    protected = {model.add_candidate(BasisSpec.constant())}
    constant = next(iter(protected))
    protected |= {model.add_candidate(BasisSpec.linear(i)) for i in range(D)}
    for _ in range(n_radial):
        model.add_candidate(BasisSpec.radial(rng.uniform(-1, 1, D),
                                             float(rng.uniform(0.3, 1.0)), "gaussian"))
    return model, constant, protected


def _target(rng: np.random.Generator, x: np.ndarray) -> float:
    return float(np.sin(3 * x[0]) + 0.5 * x[1] + 0.1 * rng.standard_normal())


def _lambda_of(model: IncrementalRidge, column_id: int) -> float | None:
    """λ of the basis function ``column_id``, None when it is not in the model."""
    ids = list(model.window.ids[: model.size])
    return float(model.lambdas[ids.index(column_id)]) if column_id in ids else None


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), start_lambda=st.sampled_from([0.5, 10.0, 1e3, 1e8]),
       n=st.integers(20, 70), window=st.integers(8, 40))
def test_the_pruner_holds_the_intercept_at_zero_and_the_state_stays_exact(
        seed, start_lambda, n, window):
    """Started with the constant at some λ (a batch fit, a pickle from before), the
    pruner's first visit sets it to 0 — by the rank-one change or, for a λ that large, the
    exact remove-and-add path — and from then on it is in the model at λ = 0 after every
    step; the state is a from-scratch ridge solve throughout."""
    rng = np.random.default_rng(seed)
    model, constant, protected = _pool(rng, window, 6)
    pruner = GCVPruner(max_basis=6, free_intercept=True)
    for _ in range(4):
        x = rng.uniform(-1, 1, D)
        model.add_pattern(x, _target(rng, x))
    model.add_basis(constant, start_lambda)
    visited = False
    for _ in range(n):
        x = rng.uniform(-1, 1, D)
        model.add_pattern(x, _target(rng, x))
        pruner.step(model, 4, 1e-6, protected)
        lam = _lambda_of(model, constant)
        assert lam is not None, "the intercept left the model"
        visited = visited or lam != start_lambda
        if visited:
            assert lam == 0.0
        ref = from_scratch(model)
        if ref["cond"] <= 1e8:
            assert rel_err(model.weights, ref["w"]) <= 1e-7
    assert visited


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shift=st.floats(-50.0, 50.0), n=st.integers(30, 80))
@example(seed=157435, shift=1.0, n=50)  # (a λ of 1.9e-6 apart by 4e-12: the same choice)
def test_with_a_free_intercept_the_pruner_makes_the_same_choices_at_any_origin(seed, shift, n):
    """With the constant unpenalised, P·1 = 0: the residuals, GCV and every candidate's
    optimum are those of y for y + c, so the pruner makes the same moves, and the
    predictions differ by c. (With ``free_intercept=False`` the same draws pick other
    basis functions or λ's: the test fails.)"""
    rng = np.random.default_rng(seed)
    stream = [rng.uniform(-1, 1, D) for _ in range(n)]
    targets = [_target(rng, x) for x in stream]
    models = []
    for offset in (0.0, shift):
        model, constant, protected = _pool(np.random.default_rng(seed), 200, 8)
        pruner = GCVPruner(max_basis=8, free_intercept=True)
        for k, (x, y) in enumerate(zip(stream, targets, strict=True)):
            model.add_pattern(x, y + offset)
            if k == 0:
                model.add_basis(constant, 0.0)
            pruner.step(model, 4, 1e-6, protected)
        models.append(model)
    a, b = models
    assert list(a.window.ids[: a.size]) == list(b.window.ids[: b.size])
    # (a λ near the floor of 1e-6 sits where GCV is nearly flat, and the rounding of y + c
    # moves its optimum by some 1e-12: the same choice)
    assert a.lambdas == pytest.approx(b.lambdas, rel=1e-6, abs=1e-10)
    for x in stream[:10]:
        assert b.predict(x) - shift == pytest.approx(a.predict(x), rel=1e-6, abs=1e-8)


def test_the_estimator_keeps_its_intercept_unpenalised_from_the_first_pattern():
    """Along a stream (memory cuts included), the constant basis function is in the model
    at λ = 0 after every sample."""
    model = SparseRBFRegressor(max_basis=20, window_size=200)
    for k, (x, y) in enumerate(synth.FriedmanDrift(drift_type="gra", position=(150, 300),
                                                   seed=3).take(450)):
        model.learn_one(x, y)
        constants = [b for b in model.basis_functions() if b["kind"] == "constant"]
        assert len(constants) == 1, k
        assert constants[0]["lambda"] == 0.0, k
    assert model.diagnostics()["n_basis"] > 5
