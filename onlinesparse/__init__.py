"""onlinesparse: sparse nonlinear models learned one sample at a time.

The estimators (``SparseRBFRegressor``, ``SparseRBFMultiTargetRegressor``,
``VBLSRegressor``, ``VBLSMultiTargetRegressor``, ``VBLSKernelRegressor``,
``VBLSClassifier``, ``Lin1Regressor``, ``Lin1MultiTargetRegressor``) are river estimators;
``onlinesparse.stream`` is the stream layer every family shares, ``onlinesparse.batch`` the
batch tools of the same papers. The layers are described once, in ``docs/architecture.md``.
"""

from onlinesparse._validation import _version

__version__ = _version()

from onlinesparse import batch
from onlinesparse.lin1 import Lin1MultiTargetRegressor, Lin1Regressor
from onlinesparse.orr.multi_target import SparseRBFMultiTargetRegressor
from onlinesparse.orr.rbf import SparseRBFRegressor
from onlinesparse.vbls import (
    VBLSClassifier,
    VBLSKernelRegressor,
    VBLSMultiTargetRegressor,
    VBLSRegressor,
)
from onlinesparse.warm import warm_up

__all__ = [
    "__version__",
    "batch",
    "SparseRBFRegressor",
    "SparseRBFMultiTargetRegressor",
    "Lin1Regressor",
    "Lin1MultiTargetRegressor",
    "VBLSRegressor",
    "VBLSMultiTargetRegressor",
    "VBLSKernelRegressor",
    "VBLSClassifier",
    "warm_up",
]
