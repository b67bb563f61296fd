"""benchmarks/sample_cost.py's instruments: spying on a model's compiled calls changes none
of its predictions, gives every sample a share of each call, and tells the samples that
made a new candidate column; the kernels it times run at the model's state."""

from __future__ import annotations

import numpy as np
from river import datasets

from onlinesparse import SparseRBFRegressor
from tests.reference import import_benchmarks

(sample_cost, harness) = import_benchmarks("sample_cost", "harness")


def test_spying_changes_nothing_and_splits_every_sample():
    data = list(datasets.synth.Friedman(seed=1).take(300))
    spy: dict = {}
    times, parts, watched = sample_cost.timed_run(
        "watched", lambda: sample_cost.spied(SparseRBFRegressor(max_basis=15), spy), data,
        spy, skip=0)
    plain = harness.progressive(data, [harness.Model("plain", lambda: SparseRBFRegressor(
        max_basis=15))], baselines=False)["plain"]
    assert len(times) == len(parts) == len(data)
    for x, _ in data[:50]:
        assert watched.predict_one(x) == plain.model.predict_one(x)
    learn, predict, column = (np.array([p[i] for p in parts]) for i in range(3))
    assert np.all(learn > 0) and np.mean(predict > 0) > 0.9  # (no model: no compiled call)
    assert 0 < column.sum() < len(data)  # (one sample in candidate_every makes a column)
    costs = sample_cost.kernels(watched)
    assert len(costs) == 4 and all(cost > 0.0 for _, cost in costs)


def test_the_evaluation_cost_compares_copies_that_differ_only_in_the_evaluations():
    data = list(datasets.synth.Friedman(seed=2).take(400))
    (with_one, evaluating), (with_none, idle) = sample_cost.evaluation_cost(data, branch=300)
    assert with_one > 0.0 and with_none > 0.0
    assert evaluating is not idle and evaluating.evaluations_per_sample == 1
    assert idle.evaluations_per_sample == 0
    # The copies learned the same 100 samples; only the one that evaluates selected.
    assert evaluating._n_learned == idle._n_learned == 400
    moved = evaluating._pruner
    held = idle._pruner
    assert (moved.n_added + moved.n_deleted + moved.n_reestimated
            > held.n_added + held.n_deleted + held.n_reestimated)
