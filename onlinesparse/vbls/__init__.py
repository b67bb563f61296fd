"""Variational Bayesian least squares (Ting, D'Souza, Vijayakumar, Schaal) as river estimators.

:mod:`onlinesparse.vbls.engine` holds the mathematics, on sufficient statistics only;
:class:`VBLSRegressor` and :class:`VBLSClassifier` are the river estimators built on it, and
:class:`VBLSKernelRegressor` is the kernel (VBLS-RVM, section 5.2) regressor whose basis set
grows and shrinks with the stream; :class:`VBLSMultiTargetRegressor` shares one window's
statistics among several targets, a posterior each.
"""

from onlinesparse.vbls.classifier import VBLSClassifier
from onlinesparse.vbls.kernel_regressor import VBLSKernelRegressor
from onlinesparse.vbls.multi_target import VBLSMultiTargetRegressor
from onlinesparse.vbls.regressor import VBLSRegressor

__all__ = ["VBLSRegressor", "VBLSMultiTargetRegressor", "VBLSClassifier",
           "VBLSKernelRegressor"]
