"""onlinesparse: sparse nonlinear models learned one sample at a time.

The estimators (``SparseRBFRegressor``, ``SparseRBFMultiTargetRegressor``,
``VBLSRegressor``, ``VBLSMultiTargetRegressor``, ``VBLSKernelRegressor``,
``VBLSClassifier``, ``Lin1Regressor``, ``Lin1MultiTargetRegressor``) are river estimators;
``onlinesparse.stream`` is the stream layer every family shares, ``onlinesparse.batch`` the
batch tools of the same papers. The layers are described once, in ``docs/architecture.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onlinesparse._lazy import lazy_names
from onlinesparse._validation import _version

__version__ = _version()

# Where each public name lives. They are imported on first use (PEP 562), so that
# ``import onlinesparse`` and the ``onlinesparse`` command start at once: importing the
# estimators loads numba, scipy and river (about 1.4 s), and the command catches a Ctrl-C
# only once it runs.
_PUBLIC = {
    "batch": "onlinesparse.batch",
    "SparseRBFRegressor": "onlinesparse.orr.rbf",
    "SparseRBFMultiTargetRegressor": "onlinesparse.orr.multi_target",
    "Lin1Regressor": "onlinesparse.lin1",
    "Lin1MultiTargetRegressor": "onlinesparse.lin1",
    "VBLSRegressor": "onlinesparse.vbls",
    "VBLSMultiTargetRegressor": "onlinesparse.vbls",
    "VBLSKernelRegressor": "onlinesparse.vbls",
    "VBLSClassifier": "onlinesparse.vbls",
    "warm_up": "onlinesparse.warm",
}

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

if TYPE_CHECKING:  # (what static tools see; the names are imported on first use)
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


__getattr__, __dir__ = lazy_names(__name__, _PUBLIC, globals())
