"""One rule for constructor parameters in every estimator (onlinesparse._validation)."""

from __future__ import annotations

import math

import pytest

from onlinesparse import SparseRBFRegressor, VBLSClassifier, VBLSKernelRegressor, VBLSRegressor
from onlinesparse.lin1 import Lin1Regressor


@pytest.mark.parametrize("make, params, match", [
    (SparseRBFRegressor, {"window_size": True}, "window_size must be an integer"),
    (VBLSRegressor, {"window_size": True}, "window_size must be an integer"),
    (VBLSClassifier, {"window_size": True}, "window_size must be an integer"),
    (VBLSKernelRegressor, {"window_size": True}, "window_size must be an integer"),
    (SparseRBFRegressor, {"max_basis": 0}, "max_basis must be an integer ≥ 1"),
    (VBLSKernelRegressor, {"max_basis": 0}, "max_basis must be an integer ≥ 1"),
    (VBLSRegressor, {"sweeps_per_sample": 1.5}, "sweeps_per_sample must be an integer"),
    (VBLSClassifier, {"window_size": 0}, "window_size must be an integer ≥ 1"),
    (SparseRBFRegressor, {"radii": (1.0, float("inf"))}, "each of radii"),
    (VBLSKernelRegressor, {"radii": (0.0,)}, "each of radii"),
    (VBLSClassifier, {"radius": -1.0}, "radius must be a finite number"),
    (VBLSRegressor, {"precision_cap": 0.0}, "precision_cap must be a finite number"),
    (Lin1Regressor, {"rcond": 1.0}, "rcond must be a finite number in \\[0.0, 1.0\\)"),
    (Lin1Regressor, {"rcond": True}, "rcond must be a finite number"),
])
def test_every_estimator_refuses_a_bad_parameter_the_same_way(make, params, match):
    with pytest.raises(ValueError, match=match):
        make(**params)


def test_zero_is_accepted_where_it_is_meaningful():
    assert Lin1Regressor(rcond=0.0).rcond == 0.0
    assert SparseRBFRegressor(evaluations_per_sample=0).evaluations_per_sample == 0
    assert VBLSRegressor(sweeps_per_sample=0).sweeps_per_sample == 0


@pytest.mark.parametrize("factory", [SparseRBFRegressor, VBLSRegressor, VBLSClassifier,
                                     VBLSKernelRegressor, Lin1Regressor])
def test_a_pickle_of_another_version_is_refused_by_name(factory):
    """Pickles carry the package's version; another version's (or an unstamped
    pre-release's) is refused with both versions named, not loaded into a layout it was
    not written for."""
    import pickle

    from onlinesparse._validation import VersionError

    model = factory()
    assert pickle.loads(pickle.dumps(model)).__class__ is factory  # (this version's: fine)
    state = model.__getstate__()
    from onlinesparse._validation import _version

    other_layout = f"{_version()}+000000000000"
    for written, said in (("0.0.9", "0.0.9"), (None, "no version stamp"),
                          (other_layout, "named records had other fields")):
        if written is None:
            state.pop("_onlinesparse_version", None)
        else:
            state["_onlinesparse_version"] = written
        fresh = factory.__new__(factory)
        with pytest.raises(VersionError, match=said):
            fresh.__setstate__(dict(state))


def test_every_named_record_is_in_the_pickles_stamp():
    """A pickle is stamped with a digest of the named records' layouts
    (_validation.register_records): every module-level structured dtype of the package is
    declared, so that a record given another field refuses the pickles written before it
    (a field added within one version, the stream layer's blend's, once loaded them and
    failed inside compiled code)."""
    import importlib
    import pkgutil

    import numpy as np

    import onlinesparse
    from onlinesparse._validation import _stamp, record_layouts

    declared = {id(dtype) for dtype in record_layouts().values()}
    found = []
    for info in pkgutil.walk_packages(onlinesparse.__path__, "onlinesparse."):
        if ".replay" in info.name:
            continue  # (the application's own files; no model record)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, np.dtype) and value.names and not name.startswith("_"):
                found.append((info.name, name, id(value) in declared))
    assert found and all(ok for *_, ok in found), [f for f in found if not f[2]]
    version, _, digest = _stamp().partition("+")
    assert version == onlinesparse.__version__ and len(digest) == 12


@pytest.mark.parametrize("name", ["SparseRBFRegressor", "VBLSRegressor", "Lin1Regressor"])
def test_a_feature_first_seen_late_is_ignored_with_one_warning_per_name(name):
    """river's OneHotEncoder emits a category's column once the category is seen: a model
    whose input space the first sample fixed ignores every later one, and now says so, once
    per name; the model is the one that never saw them."""
    import warnings

    import onlinesparse
    from onlinesparse.features import IgnoredFeatureWarning

    cls = getattr(onlinesparse, name)
    late, twin = cls(), cls()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(60):
            x = {"a": math.sin(0.3 * i)}
            extra = {"c_red": 1.0} if i % 2 else {"c_blue": 1.0, "c_red": 0.0}
            late.learn_one({**x, **extra} if i else x, 2.0 * x["a"])
            twin.learn_one(x, 2.0 * x["a"])
    said = [str(w.message) for w in caught if issubclass(w.category, IgnoredFeatureWarning)]
    assert len(said) == 2 and "'c_red'" in said[0] and "'c_blue'" in said[1]
    assert late.predict_one({"a": 0.4, "c_red": 1.0}) == twin.predict_one({"a": 0.4})
