"""onlinesparse: sparse nonlinear models learned one sample at a time.

The estimators (``SparseRBFRegressor``, ``VBLSRegressor``, ``VBLSKernelRegressor``,
``VBLSClassifier``, ``Lin1Regressor``) are river estimators; ``onlinesparse.stream`` is the
stream layer every family shares, ``onlinesparse.batch`` the batch tools of the same
papers. The layers are described once, in ``docs/architecture.md``.
"""

from onlinesparse import batch
from onlinesparse._version import __version__
from onlinesparse.lin1 import Lin1MultiTargetRegressor, Lin1Regressor
from onlinesparse.orr.rbf import SparseRBFRegressor
from onlinesparse.vbls import VBLSClassifier, VBLSKernelRegressor, VBLSRegressor
from onlinesparse.warm import warm_up

__all__ = [
    "__version__",
    "batch",
    "SparseRBFRegressor",
    "Lin1Regressor",
    "Lin1MultiTargetRegressor",
    "VBLSRegressor",
    "VBLSKernelRegressor",
    "VBLSClassifier",
    "warm_up",
]
