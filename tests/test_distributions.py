"""The river Gaussian every estimator returns with ``with_dist=True``."""

from __future__ import annotations

import pytest
from river import proba

from onlinesparse._distributions import gaussian


@pytest.mark.parametrize(("mean", "variance"), [(0.0, 1.0), (43.2, 1e-6), (-1e6, 2.5e5)])
def test_the_gaussian_has_the_moments_asked_for_with_and_without_rivers_private_constructor(
        monkeypatch, mean, variance):
    exact = gaussian(mean, variance)
    assert (exact.mu, exact.sigma ** 2) == pytest.approx((mean, variance), rel=1e-12)
    monkeypatch.delattr(proba.Gaussian, "_from_state")
    public = gaussian(mean, variance)
    assert isinstance(public, proba.Gaussian)
    assert public.mu == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert public.sigma ** 2 == pytest.approx(variance, rel=1e-6)
