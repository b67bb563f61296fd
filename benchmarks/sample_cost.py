"""Where a sample's time goes: ours against river LinearRegression behind the same scaler.

Issue 35 asks ``stream_friedman.py``'s median per sample within 3.5× river's
``LinearRegression`` behind the same ``StandardScaler``. This splits both sides of that
ratio on the same stream (Friedman #1, seed 42, 5000 samples; medians over samples 1001–5000,
wall clock, ``predict_one`` + ``learn_one`` per sample as the harness times them):

* river's side: the scaler and the pipeline with a model that learns nothing (predicts 0),
  then with ``LinearRegression`` (SGD 0.01);
* ours, ``SparseRBFRegressor(max_basis=100)``: the whole sample; the two compiled calls
  (``learn_one``'s one call, ``orr.sample.stream_sample``, and ``predict_one``'s,
  ``orr.sample.prediction``), timed by wrapping their entry points (about 0.2 µs each of
  the wrapping is in them); the rest (the total less the two: the Python around them, the
  scaler and pipeline, and on one sample in ``candidate_every`` = 3 a new candidate
  column's statistics, compiled but called apart); and the samples that compute a new
  column apart;
* the core's kernels alone at the model's state at the end (M basis functions, n tracked
  columns, W stored patterns), each called 2000 times from Python (the call's own cost, a
  few hundred ns, included): the window's slide (one rank-two pass over S, M × M, and G,
  n × n), the input's row over the n columns, the GCV summary, a new column's statistics
  (O(W·n));
* the pruner's one evaluation per sample (``evaluations_per_sample=1``, O(M²)): the
  difference of ``learn_one``'s median between two exact copies of one model at sample 4000,
  one with the evaluation and one without (:func:`evaluation_cost`).

A note gives the floor: the scaler and pipeline and the two compiled calls alone, with no
Python of ours around them, against 3.5× ``LinearRegression``'s median.

Run: ``.venv/bin/python benchmarks/sample_cost.py`` (about half a minute). Writes
``benchmarks/results/sample_cost.json``; the table is shown in docs/rbf_on_streams.md
(``make performance``).
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import harness  # noqa: E402
import numpy as np  # noqa: E402
from river import base, datasets, linear_model, optim, preprocessing  # noqa: E402

from onlinesparse import SparseRBFRegressor, core, warm_up  # noqa: E402

SAMPLES, SKIP, CALLS = 5000, 1000, 2000
BRANCH = 4000  # where evaluation_cost's two copies part (samples 4001–SAMPLES timed)
RATIO = 3.5  # issue 35's bar on the median


class _Nothing(base.Regressor):
    """A model that learns nothing and predicts 0: the scaler and pipeline alone."""

    def learn_one(self, x: dict, y: float) -> None:
        pass

    def predict_one(self, x: dict) -> float:
        return 0.0


def timed_run(label: str, factory: Callable[[], Any], data: list, spy: dict | None = None,
              skip: int = SKIP) -> tuple[np.ndarray, list, Any]:
    """``harness.progressive``'s run of ``factory``'s model behind the scaler: each
    sample's predict + learn in µs after the first ``skip``, for a model built with
    :func:`spied` the compiled calls' ns and whether the sample made a new column (read
    after each sample, untimed), and the model."""
    parts: list = []

    def record(samples: int, pipeline: Any) -> None:
        made = spy["columns"]()
        parts.append((spy["learn"], spy["predict"], made != spy["made"]))
        spy.update(learn=0, predict=0, made=made)

    run = harness.progressive(data, [harness.Model(label, factory)], baselines=False,
                              checkpoint=None if spy is None else (1, record))[label]
    return run.seconds[skip:] * 1e6, parts[skip:], run.model


def spied(model: SparseRBFRegressor, spy: dict) -> SparseRBFRegressor:
    """``model``, its compiled entry points wrapped so that each sample's share is added
    to ``spy``, which also gets the count of columns the window has made (a new column's
    id is the next one)."""
    def timed(key: str, call: Callable) -> Callable:
        def wrapper(*args: Any) -> Any:
            started = time.perf_counter_ns()
            result = call(*args)
            spy[key] += time.perf_counter_ns() - started
            return result
        return wrapper

    compiled = model._compiled

    def wrapped() -> Any:
        c = compiled()
        return c._replace(sample=timed("learn", c.sample), observe=timed("learn", c.observe),
                          carry_on=timed("learn", c.carry_on),
                          predict=timed("predict", c.predict))

    model._compiled = wrapped
    spy.update(learn=0, predict=0, made=0,
               columns=lambda: 0 if model.model is None else model.model.window._next_id)
    return model


def kernels(model: SparseRBFRegressor) -> list[tuple[str, float]]:
    """The core's kernels alone at ``model``'s state, µs per call (module docstring)."""
    bundle = model._compiled().bundle
    t, s, ws = bundle.tracked, bundle.state, model.model.window
    m, n = s.weights.shape[0], int(bundle.window[0]["n_columns"])
    gram, cross, traffic = t.gram.copy(), t.cross_y.copy(), t.traffic.copy()
    variance, weights = s.variance.copy(), s.weights.copy()
    h, y = bundle.row[:n].copy(), np.array([1.0])
    x = ws.stored_inputs()[-1].reshape(1, -1)
    row = np.empty((1, n))
    calls = {
        "the window's slide (S and G, rank two)": (core.slide_window, (
            gram, cross, traffic, n, variance, weights, m, h, y, h.copy(), y, 1e-10,
            np.empty(m), np.empty(5))),
        "the input's row over the n columns": (core.evaluate_rows, (
            t.kinds, t.centres, t.inv_r2, t.features, x, 0, n, row)),
        "the GCV summary (error and γ)": (core.error_and_gamma, (
            gram, cross, weights, s.lambdas, variance, ws.targets.moments[0],
            ws.targets.scales, np.empty(1))),
        "a new column's statistics (O(W·n))": (core.new_column, (
            *ws.basis.arrays(), ws._XT, ws.targets.values, ws._HT.copy(), gram, cross,
            n - 1, n, ws._head, ws.n_stored, ws.factor)),
    }
    out = []
    for label, (call, args) in calls.items():
        call(*args)
        started = time.perf_counter_ns()
        for _ in range(CALLS):
            call(*args)
        out.append((label, (time.perf_counter_ns() - started) / CALLS / 1e3))
    return out


def evaluation_cost(data: list, branch: int = BRANCH
                    ) -> list[tuple[float, SparseRBFRegressor]]:
    """The µs of ``learn_one`` (median over the samples after ``branch``) of two exact
    copies of the same model at sample ``branch``, one running ``evaluations_per_sample=1``
    (the default) and one ``0``, with the copies at the end: the difference of the medians
    is the cost of the pruner's one O(M²) evaluation per sample. (The inputs are scaled
    once, outside the timing; predictions are made untimed, as the harness makes them.)"""
    scaler = preprocessing.StandardScaler()
    rows = []
    for x, y in data:
        scaler.learn_one(x)
        rows.append((scaler.transform_one(x), y))
    model = SparseRBFRegressor(max_basis=100)
    for x, y in rows[:branch]:
        model.predict_one(x)
        model.learn_one(x, y)
    out = []
    for evaluations in (1, 0):
        copied = copy.deepcopy(model)
        copied.evaluations_per_sample = evaluations
        times = []
        for x, y in rows[branch:]:
            copied.predict_one(x)
            started = time.perf_counter_ns()
            copied.learn_one(x, y)
            times.append(time.perf_counter_ns() - started)
        out.append((float(np.median(times)) / 1e3, copied))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    args = parser.parse_args()
    warm_up()
    data = list(datasets.synth.Friedman(seed=harness.SEED).take(SAMPLES))
    report = harness.Report("sample_cost", __doc__.splitlines()[0],
                            {"samples": SAMPLES, "skip": SKIP, "seed": harness.SEED},
                            path=args.results)
    nothing, _, _ = timed_run("nothing", _Nothing, data)
    linear, _, _ = timed_run("linear", lambda: linear_model.LinearRegression(
        optimizer=optim.SGD(0.01)), data)
    spy: dict = {}
    ours, parts, ours_model = timed_run(
        "ours", lambda: spied(SparseRBFRegressor(max_basis=100), spy), data, spy)
    learn, predict = (np.array([p[i] for p in parts]) / 1e3 for i in (0, 1))
    column = np.array([p[2] for p in parts])
    python = ours - learn - predict
    rows = [("river StandardScaler, a model that learns nothing", nothing),
            ("river LinearRegression (SGD 0.01) behind it", linear),
            ("ours SparseRBF(max_basis=100) behind it", ours),
            ("  ours: learn_one's compiled call", learn),
            ("  ours: predict_one's compiled call", predict),
            ("  ours: the rest (Python, the scaler and pipeline, a new column's "
             "statistics)", python),
            ("  ours: samples without a new column", ours[~column]),
            ("  ours: samples with a new column", ours[column])]
    lin = float(np.median(linear))
    table = [[label, f"{np.median(v):.1f}", f"{np.percentile(v, 99):.1f}",
              f"{np.median(v) / lin:.2f}"] for label, v in rows]
    table += [[f"kernel alone: {label}", f"{cost:.1f}", "", f"{cost / lin:.2f}"]
              for label, cost in kernels(ours_model)]
    (with_one, _), (with_none, _) = evaluation_cost(data)
    table.append(["the pruner's one evaluation per sample (learn_one with 1 less with 0, "
                  f"copies of one model at sample {BRANCH})", f"{with_one - with_none:.1f}",
                  "", f"{(with_one - with_none) / lin:.2f}"])
    m, n = ours_model.model.size, ours_model.model.window.n_columns
    report.table(f"Friedman #1, {SAMPLES} samples, µs per sample (median and 99th "
                 f"percentile over samples {SKIP + 1}–{SAMPLES}); at the end M = {m}, "
                 f"n = {n}, W = {ours_model.model.window.n_stored}",
                 ["", "µs median", "µs p99", "/ LinearRegression's median"], table)
    report.note(f"{RATIO}× LinearRegression's median is {RATIO * lin:.1f} µs, of which the "
                f"scaler and pipeline take {np.median(nothing):.1f}: ours would have "
                f"{RATIO * lin - np.median(nothing):.1f} µs; its two compiled calls take "
                f"{np.median(learn) + np.median(predict):.1f} (medians), the rest "
                f"{np.median(python):.1f}")
    floor = float(np.median(nothing) + np.median(learn) + np.median(predict))
    report.note(f"with no Python of ours at all (the scaler and pipeline, then the two compiled "
                f"calls), a sample would take {floor:.1f} µs = {floor / lin:.2f}× "
                f"LinearRegression's median, before a new column's statistics (on one "
                f"sample in candidate_every = 3)")
    report.write()


if __name__ == "__main__":
    main()
