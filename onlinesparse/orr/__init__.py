"""Orr's family: radial basis functions on an incrementally updated ridge regression.

``kernels`` (what a column is) → ``window`` (the window's statistics and stored ring) →
``ridge_state`` / ``ridge`` (S, W, λ and Orr's incremental operations) → ``criteria``
(GCV, LOO, UEV, FPE, BIC) → ``buffer`` (proposed centres) and ``pruner`` (GCV-driven
selection) → ``streaming`` (a sample in one compiled call, ``sample``, for one target or
several sharing the basis) → ``rbf`` and ``multi_target`` (the river estimators). The
compiled numerics these objects call live in :mod:`onlinesparse.core`; the stream
machinery (calibration, memory, evidence) in :mod:`onlinesparse.stream`.
"""
