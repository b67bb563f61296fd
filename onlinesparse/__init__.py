"""onlinesparse: sparse nonlinear models learned one sample at a time.

The package is layered the way the mathematics is:

``kernels`` (basis functions) → ``window`` (sufficient statistics of the window)
→ ``ridge`` (Orr's incremental ridge state) → ``criteria`` (GCV, LOO, UEV, FPE, BIC and the
GCV-optimal regularisation of one basis function) → buffer manager and pruner → estimators →
replay, report and command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onlinesparse")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

from onlinesparse import batch
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
