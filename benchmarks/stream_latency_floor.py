"""How much of the latency target of ``stream_friedman.py`` the arithmetic alone uses.

The issue's latency target for ``SparseRBFRegressor(max_basis=100)`` on Friedman #1 (d = 10,
window W = 1000, behind ``preprocessing.StandardScaler()``) is a median ``predict_one`` +
``learn_one`` of at most 4 × river ``LinearRegression``'s median in the same setting. This
script splits that budget: it builds the model on the first 3000 samples of the stream and
then times, in isolation and on that model's own state,

* what both pipelines pay alike: river's ``StandardScaler`` (``learn_one`` and two
  ``transform_one``), and our dict → vector conversion (``FeatureMap.transform``, once in
  ``predict_one`` and once in ``learn_one``);
* the compiled loops a sample runs when it computes no candidate column and makes no move
  (the typical sample of a model at its budget with a column every few samples): the row of
  every tracked column at the new input and the model's row for the prediction, the window
  step (``slide_window``: the oldest pattern out of S and G, the new one in), and one GCV
  evaluation — a candidate evaluation (``candidate_move``, two candidates, FGCV's
  quantities and the decision) or a basis-function evaluation (``error_and_gamma`` +
  ``basis_optimum``, Orr A.11, and the rank-one λ change, FGCV appendix V), of which the
  default ``evaluations_per_sample=1`` runs at most one per sample.

It prints the sum of the compiled loops (with the dearer of the two evaluations) — a floor
no arrangement of the Python around them can go under — beside the budget, and what that
leaves for all the interpreted code of the two calls. Everything runs on one BLAS thread;
each figure is the median of many repeated calls (mutating loops alternate between two
states so that every call does the same work).
Repeated calls run with warm caches; inside the stream, where every sample also walks the
stored window and the other matrices, the same loops take longer (under cProfile in the
stream: window step 13 µs, candidate evaluation 16 µs), so the floor printed here is, if
anything, low.

Then it runs the stream on (samples 3000–5000, a fresh model) and times, sample by sample,
``predict_one``, ``learn_one`` and within it the compiled sample (``orr.sample.stream_sample``),
by kind of sample: quiet (no candidate column, no change of the basis set, nothing handed
back), with a candidate column, with a trade, addition or deletion, with a refresh of S,
and the rest (a move the compiled call handed back to the model's own operations).

Measured (2026-11-21, this machine), first part, before the fused sample: LinearRegression
15.3 µs, target 61.2 µs; scaler 9.2 + conversions 5.0 + compiled loops 33.6 = 47.7 µs
(3.1 ×, two evaluations), leaving 13.5 µs for all other Python of both calls — where the
model then spent about 75 µs (a sample without a candidate column took 124 µs in all). That
led to the compiled sample (one compiled call per sample, ``orr.sample.stream_sample``)
and to candidate columns on one sample in three. Since then (one evaluation per sample,
10 candidates, additions and deletions compiled too, inputs stored feature by feature):
floor 36.8 µs (2.37 ×); in the stream, samples 3000–5000, a quiet sample (57 %) 47.4 µs
(3.04 ×), one with a column (33 %) 86.9 µs, one with a move made in the compiled call (9 %)
66.2 µs, the rest (0.5 %: moves and refreshes finished by the general path) 163.8 µs.

Run: ``.venv/bin/python benchmarks/stream_latency_floor.py`` (about 30 s).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from river import datasets, linear_model, preprocessing  # noqa: E402

from onlinesparse import SparseRBFRegressor, core, warm_up  # noqa: E402
from onlinesparse.orr import sample as fused  # noqa: E402

REPEATS = 3000


def median_us(call: Callable[[], object], repeats: int = REPEATS) -> float:
    call()
    times = np.empty(repeats)
    for k in range(repeats):
        start = time.perf_counter()
        call()
        times[k] = time.perf_counter() - start
    return float(np.median(times) * 1e6)


def linear_regression_median(data: list) -> float:
    """river LinearRegression behind the scaler, progressive validation: median µs."""
    pipe = preprocessing.StandardScaler() | linear_model.LinearRegression()
    times = np.empty(len(data))
    for k, (x, y) in enumerate(data):
        start = time.perf_counter()
        pipe.predict_one(x)
        pipe.learn_one(x, y)
        times[k] = time.perf_counter() - start
    return float(np.median(times) * 1e6)


def main() -> None:
    warm_up()
    data = list(datasets.synth.Friedman(seed=42).take(5000))
    lin = linear_regression_median(data)

    scaler = preprocessing.StandardScaler()
    model = SparseRBFRegressor(max_basis=100)
    for x, y in data[:3000]:
        scaler.learn_one(x)
        model.learn_one(scaler.transform_one(x), y)
    ridge, window = model.model, model.model.window
    state, basis = ridge.state, window.basis
    x_next, _ = data[3000]

    shared = {
        "StandardScaler learn_one + 2 × transform_one":
            median_us(lambda: (scaler.learn_one(x_next), scaler.transform_one(x_next),
                               scaler.transform_one(x_next))),
    }
    x_scaled = scaler.transform_one(x_next)
    vector = model._features.transform(x_scaled)
    shared["dict → vector (FeatureMap.transform) × 2"] = 2 * median_us(
        lambda: model._features.transform(x_scaled))

    n, m = window.n_columns, ridge.size
    gram, cross_y, traffic = window.gram_buffer, window.cross_y_buffer, window.traffic.copy()
    variance, weights, lambdas = state.variance, state.weights, state.lambdas
    rows_all = np.empty((1, n))
    rows_model = np.empty((1, m))
    point = vector.reshape(1, -1)
    h_new = window.row(vector)
    h_old, y_old = window.oldest()
    y_new = float(y_old) + 0.1
    work, out4, out8 = np.empty(m), np.empty(5), np.empty(8)
    flip = [False]

    def slide() -> None:
        # Alternate the roles of the two patterns, so that S and G come back each other call.
        a, b = (h_old, h_new) if flip[0] else (h_new, h_old)
        ya, yb = (y_old, y_new) if flip[0] else (y_new, y_old)
        core.slide_window(gram, cross_y, traffic, n, variance, weights, m, a, ya, b, yb, 1e-10,
                          work, out4)
        flip[0] = not flip[0]

    # The model's (yᵀP²y, γ): computed once per sample and shared by both evaluations; the
    # basis evaluation below times its computation.
    summary = ridge.summary()
    columns = np.array([window.n_model, window.n_model + 1])
    merit = window.merit.copy()
    lam_min = model._lambda_min
    j = 7
    lam_j = float(lambdas[j])

    def basis_evaluation() -> None:
        error, gamma = core.error_and_gamma(gram, cross_y, weights, lambdas, variance,
                                              window.yy)
        core.basis_optimum(variance, gram, cross_y, weights, lambdas, window.yy,
                             window.count, j, lam_min, out8)
        # Move λⱼ and back on alternate calls: the same rank-one work every time.
        core.lambda_rank_one(variance, weights, lambdas, j,
                               lam_j * 1.01 if lambdas[j] == lam_j else lam_j)

    compiled = {
        "row of every tracked column (learn)": median_us(
            lambda: core.evaluate_rows(basis._kind, basis._centres, basis._inv_r2,
                                         basis._feature, point, 0, n, rows_all)),
        "row of the model's columns (predict)": median_us(
            lambda: core.evaluate_rows(basis._kind, basis._centres, basis._inv_r2,
                                         basis._feature, point, 0, m, rows_model)),
        "window step (slide_window)": median_us(slide),
        "candidate evaluation (candidate_move, 2 candidates)": median_us(
            lambda: core.candidate_move(variance, gram, cross_y, weights, lambdas, merit,
                                          window.yy, window.count, *summary, columns,
                                          lam_min, 1e-4, True, out4)),
        "basis evaluation (error_and_gamma + basis_optimum + λ rank one)":
            median_us(basis_evaluation),
    }
    budget = 4.0 * lin
    # At most one of the two evaluations runs on a sample (evaluations_per_sample=1).
    evaluations = [name for name in compiled if "evaluation" in name]
    floor = (sum(compiled.values()) - min(compiled[name] for name in evaluations)
             + sum(shared.values()))
    print(f"M = {m}, tracked columns n = {n}, window W = {int(window.count)}, d = "
          f"{window.n_features}")
    print(f"river LinearRegression (behind the scaler), median µs per sample: {lin:.1f}; "
          f"the target, 4 × that: {budget:.1f} µs\n")
    print(f"{'part of a sample (median of ' + str(REPEATS) + ' calls)':66s} {'µs':>8s}")
    for name, value in shared.items():
        print(f"  {name:64s} {value:8.1f}")
    for name, value in compiled.items():
        print(f"  {name:64s} {value:8.1f}")
    print(f"  {'sum (one evaluation): scaler + conversions + compiled loops':64s} "
          f"{floor:8.1f}   "
          f"= {floor / lin:.2f} × LinearRegression")
    print(f"\nleft of the 4× budget for every other line of Python in predict_one + "
          f"learn_one: {budget - floor:.1f} µs")

    def column_round_trip() -> None:
        window.add_column(window.basis.spec(window.n_columns - 1))
        window.drop_column(window.n_columns - 1)

    print(f"(a sample that computes a candidate column adds O(W·n) on top: "
          f"{median_us(column_round_trip, 300):.1f} µs for one add_column + drop_column here)")
    in_the_stream(data, lin)


def in_the_stream(data: list, lin: float) -> None:
    """Samples 3000–5000 of a fresh model, timed call by call and sorted by kind."""
    scaler = preprocessing.StandardScaler()
    model = SparseRBFRegressor(max_basis=100)
    for x, y in data[:3000]:
        scaler.learn_one(x)
        model.learn_one(scaler.transform_one(x), y)
    spent = [0.0, -1]  # time in the compiled call this sample, its outcome
    resolve = model._compiled  # (the model's entry points: orr.rbf._Compiled)

    def with_timing():
        compiled = resolve()
        call = compiled.sample

        def timed(*args):
            start = time.perf_counter()
            code = call(*args)
            spent[0] += time.perf_counter() - start
            spent[1] = code
            return code

        return compiled._replace(sample=timed)

    model._compiled = with_timing
    rows = []
    try:
        for x, y in data[3000:]:
            spent[:] = [0.0, -1]
            ridge = model.model
            added_before = model._pruner.n_added + model._pruner.n_deleted
            refreshes_before = ridge.n_refreshes
            candidates_before = ridge.window.n_candidates
            evicted_before = model._buffer.n_evicted
            start = time.perf_counter()
            scaled = scaler.transform_one(x)
            after_scaler = time.perf_counter()
            model.predict_one(scaled)
            after_predict = time.perf_counter()
            scaler.learn_one(x)
            scaled = scaler.transform_one(x)
            after_learn_scaler = time.perf_counter()
            model.learn_one(scaled, y)
            end = time.perf_counter()
            moved = model._pruner.n_added + model._pruner.n_deleted != added_before
            column = (ridge.window.n_candidates > candidates_before
                      or model._buffer.n_evicted != evicted_before)
            kind = ("refresh" if ridge.n_refreshes != refreshes_before
                    else "column" if column else "move" if moved
                    else "quiet" if spent[1] == fused.QUIET else "handed back")
            rows.append((kind, after_scaler - start + after_learn_scaler - after_predict,
                         after_predict - after_scaler, end - after_learn_scaler, spent[0]))
    finally:
        del model._compiled
    print(f"\nin the stream, samples 3000–5000 (median µs; 'all' includes the scaler; "
          f"LinearRegression {lin:.1f})")
    print(f"  {'kind of sample':28s} {'count':>6s} {'scaler':>7s} {'predict':>8s} "
          f"{'learn':>7s} {'of which compiled':>18s} {'all':>7s} {'× lin':>6s}")
    for kind in ("quiet", "column", "move", "refresh", "handed back"):
        chosen = np.array([row[1:] for row in rows if row[0] == kind]) * 1e6
        if not len(chosen):
            continue
        total = np.median(chosen[:, :3].sum(axis=1))
        print(f"  {kind:28s} {len(chosen):6d} {np.median(chosen[:, 0]):7.1f} "
              f"{np.median(chosen[:, 1]):8.1f} {np.median(chosen[:, 2]):7.1f} "
              f"{np.median(chosen[:, 3]):18.1f} {total:7.1f} {total / lin:6.2f}")

if __name__ == "__main__":
    main()
