"""The per-sample work runs with one BLAS thread and leaves the user's setting as it was."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (loads SciPy's BLAS, as the models do)
from threadpoolctl import threadpool_info, threadpool_limits

from onlinesparse import SparseRBFRegressor, _blas


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def unpinned(monkeypatch):
    for name in _blas._VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_blas, "_libraries", None)  # look the libraries up afresh


def test_one_thread_inside_and_the_setting_restored_after(unpinned):
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control")
    seen = []

    @_blas.single_blas_thread
    def work():
        seen.extend(_blas_threads())
        raise RuntimeError("even when the work fails")

    with threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        with pytest.raises(RuntimeError):
            work()
        assert set(seen) == {1}
        assert _blas_threads() == before


def test_a_user_choice_in_the_environment_is_left_alone(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    monkeypatch.setattr(_blas, "_libraries", None)
    assert _blas._blas_libraries() == []


def test_the_estimator_learns_with_one_thread(unpinned, monkeypatch):
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl can control")
    from onlinesparse.orr.ridge import IncrementalRidge

    model = SparseRBFRegressor(max_basis=5, window_size=20)
    seen = []
    original = IncrementalRidge.maintain  # (every learn_one runs it first)

    def spy(self, *args, **kwargs):
        seen.extend(_blas_threads())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(IncrementalRidge, "maintain", spy)
    rng = np.random.default_rng(0)
    with threadpool_limits(2, user_api="blas"):
        for _ in range(5):
            model.learn_one({"a": float(rng.uniform())}, float(rng.uniform()))
        assert set(_blas_threads()) == {2}
    assert seen and set(seen) == {1}
