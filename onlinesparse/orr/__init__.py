"""Orr's family: radial basis functions on an incrementally updated ridge regression.

``kernels`` (what a column is) → ``window`` (the window's statistics and stored ring) →
``ridge_state`` / ``ridge`` (S, w, λ and Orr's incremental operations) → ``criteria``
(GCV, LOO, UEV, FPE, BIC) → ``buffer`` (proposed centres) and ``pruner`` (GCV-driven
selection) → ``rbf`` (the river estimator). The compiled numerics these objects call live
in :mod:`onlinesparse.core`; the stream machinery (calibration, memory, evidence) in
:mod:`onlinesparse.stream`.
"""
