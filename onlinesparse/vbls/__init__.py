"""Variational Bayesian least squares (Ting, D'Souza, Vijayakumar, Schaal) as river estimators.

:mod:`onlinesparse.vbls.engine` holds the mathematics, on sufficient statistics only;
:class:`VBLSRegressor` and :class:`VBLSClassifier` are the river estimators built on it, and
:class:`VBLSKernelRegressor` is the kernel (VBLS-RVM, section 5.2) regressor whose basis set
grows and shrinks with the stream.
"""

from onlinesparse.vbls.classifier import VBLSClassifier
from onlinesparse.vbls.kernel_regressor import VBLSKernelRegressor
from onlinesparse.vbls.regressor import VBLSRegressor

__all__ = ["VBLSRegressor", "VBLSClassifier", "VBLSKernelRegressor"]
