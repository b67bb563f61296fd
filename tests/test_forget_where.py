"""Forgetting the stored patterns a mask selects (``IncrementalRidge.forget_where``): the
model afterwards is the from-scratch solve on the kept patterns, in their order, and goes on
exactly through later slides of the ring."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.orr.kernels import BasisSpec
from onlinesparse.orr.ridge import IllConditionedError, IncrementalRidge
from tests.reference import from_scratch, rel_err
from tests.test_core_ops import _check_against_reference, _pattern, _random_spec


def _model(rng: np.random.Generator, d: int, window: int, n_patterns: int, n_basis: int,
           candidates: int) -> IncrementalRidge:
    model = IncrementalRidge(n_features=d, size=window, refresh_every=10**9)
    for _ in range(n_patterns):
        model.add_pattern(*_pattern(rng, d))
    for _ in range(n_basis):
        try:
            model.add_basis(_random_spec(rng, d), float(rng.choice([1e-6, 1e-2, 1.0])))
        except IllConditionedError:
            pass
    for _ in range(candidates):  # (tracked columns outside the model move with the rows)
        model.add_candidate(_random_spec(rng, d))
    return model


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 3), window=st.integers(8, 80),
       fill=st.integers(-60, 50), n_basis=st.integers(1, 8), candidates=st.integers(0, 3),
       share=st.floats(0.0, 0.9), after=st.integers(0, 90))
def test_forgetting_a_mask_is_the_solve_on_the_kept_patterns(seed, d, window, fill, n_basis,
                                                              candidates, share, after):
    rng = np.random.default_rng(seed)
    # (more patterns than the window: the ring has wrapped, its oldest slot is not slot 0;
    # fewer: a ring still growing toward the window's size, grown again by the later ones)
    model = _model(rng, d, window, max(window + fill, 4), n_basis, candidates)
    inputs, targets = model.window.stored_inputs(), model.window.stored_targets()
    keep = rng.random(model.n_stored) >= share
    keep[-1] = True
    model.forget_where(keep)
    np.testing.assert_array_equal(model.window.stored_inputs(), inputs[keep])
    np.testing.assert_array_equal(model.window.stored_targets(), targets[keep])
    well_conditioned = from_scratch(model)["cond"] <= 1e4 if model.size else True
    _check_against_reference(model, strict=well_conditioned)
    for _ in range(after):  # the ring fills up from the front and slides on, exactly
        model.add_pattern(*_pattern(rng, d))
    if after:
        assert model.n_stored == min(int(keep.sum()) + after, window)
        _check_against_reference(model, strict=well_conditioned and
                                 from_scratch(model)["cond"] <= 1e4)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), count=st.integers(0, 30))
def test_forgetting_the_oldest_is_forgetting_a_mask_of_the_oldest(seed, count):
    rng = np.random.default_rng(seed)
    model = _model(rng, 2, 30, 45, 5, 1)
    twin = pickle.loads(pickle.dumps(model))
    model.forget_oldest(count)
    twin.forget_where(np.arange(twin.n_stored) >= count)
    np.testing.assert_array_equal(model.window.stored_inputs(), twin.window.stored_inputs())
    assert rel_err(model.variance, twin.variance) <= 1e-12
    np.testing.assert_allclose(model.weights, twin.weights, rtol=1e-10, atol=1e-12)


def test_forgetting_every_pattern_of_a_basis_functions_support_stays_finite():
    """An ill-conditioned case: the patterns under one narrow kernel are all forgotten, so
    its Gram column all but vanishes and its λ (the floor a streaming model keeps every λ
    above, FGCV 3.2 point 7: here 1e-6) alone poses it."""
    rng = np.random.default_rng(3)
    model = IncrementalRidge(n_features=1, size=60)
    for _ in range(60):
        model.add_pattern(*_pattern(rng, 1))
    model.add_basis(BasisSpec.constant(), 1e-6)
    model.add_basis(BasisSpec.radial(np.array([0.9]), 0.02, "gaussian"), 1e-6)
    inputs = model.window.stored_inputs()[:, 0]
    model.forget_where(np.abs(inputs - 0.9) > 0.3)
    assert np.all(np.isfinite(model.weights)) and np.all(np.isfinite(model.variance))
    assert model.check_health() <= model.drift_tolerance
    assert abs(model.weights[1]) < 1e-6  # (no pattern left to give the kernel a weight)


@pytest.mark.parametrize("keep", [np.ones(5, dtype=bool), np.ones(40),
                                  np.ones((40, 1), dtype=bool)])
def test_a_mask_of_the_wrong_shape_or_type_is_refused_and_changes_nothing(keep):
    model = _model(np.random.default_rng(0), 2, 40, 40, 3, 0)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="one per stored pattern"):
        model.forget_where(np.asarray(keep))
    assert pickle.dumps(model) == before
