"""Variational Bayesian least squares (Ting, D'Souza, Vijayakumar, Schaal) as river estimators.

:mod:`onlinesparse.vbls.engine` holds the mathematics, on sufficient statistics only;
:class:`VBLSRegressor` and :class:`VBLSClassifier` are the river estimators built on it.
"""

from onlinesparse.vbls.classifier import VBLSClassifier
from onlinesparse.vbls.regressor import VBLSRegressor

__all__ = ["VBLSRegressor", "VBLSClassifier"]
