"""Whether an alarm is worth a cut (``stream.refit``): the blocked errors from the hat
matrix against refits without each block by scikit-learn's ``Ridge``, and the decision on
a change of function, a shift of level and a change of scale; the adaptive memory acting
on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.linear_model import Ridge

from onlinesparse import (
    SparseRBFMultiTargetRegressor,
    SparseRBFRegressor,
    VBLSKernelRegressor,
    VBLSMultiTargetRegressor,
    VBLSRegressor,
)
from onlinesparse.stream import memory as memory_module
from onlinesparse.stream.memory import MIN_MEMORY, REVIEWS, AdaptiveMemory, Horizon
from onlinesparse.stream.refit import (
    CUT,
    FREE,
    LOOK_AGAIN,
    REFUSE,
    SHRINKAGE,
    RidgeView,
    blocked_errors,
    gcv_shrinkage,
    shorter_memory_wins,
    verdict,
)


def _refit_errors(design, targets, penalty, blocks):
    """Each block's squared errors from a ridge fit without it, from scratch."""
    gram = design.T @ design
    floor = FREE * np.diag(gram)  # (each column's own)
    out = []
    for block in blocks:
        train = np.setdiff1d(np.arange(design.shape[0]), block)
        x, y = design[train], targets[train]
        a = x.T @ x + np.diag(np.maximum(penalty, floor))
        weights = np.linalg.solve(a, x.T @ y)
        out.append((targets[block] - design[block] @ weights) ** 2)
    return np.concatenate(out)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(12, 60), m=st.integers(1, 8),
       folds=st.integers(1, 6), ill=st.booleans(), targets=st.integers(1, 3))
def test_blocked_errors_are_the_refits_without_each_block(seed, n, m, folds, ill, targets):
    rng = np.random.default_rng(seed)
    design = rng.standard_normal((n, m))
    if ill and m > 1:  # (two columns alike to 1e-6: the penalty keeps the fit posed)
        design[:, 1] = design[:, 0] + 1e-6 * rng.standard_normal(n)
    y = rng.standard_normal((n, targets))
    penalty = rng.uniform(1e-3, 3.0, m)
    penalty[rng.random(m) < 0.3] = 0.0  # (free columns: the floor)
    tail = min(n - m - 2, 3 * folds) if n - m - 2 > folds else folds
    blocks = np.array_split(np.arange(n - tail, n), folds)
    got = blocked_errors(design, y, penalty, blocks)
    want = _refit_errors(design, y, penalty, blocks)
    assert got == pytest.approx(want, rel=1e-6, abs=1e-9)


def test_blocked_errors_agree_with_scikit_learns_ridge():
    rng = np.random.default_rng(3)
    design, y = rng.standard_normal((40, 4)), rng.standard_normal((40, 1))
    block = np.arange(30, 40)
    fit = Ridge(alpha=0.7, fit_intercept=False).fit(design[:30], y[:30])
    want = (y[block] - fit.predict(design[block]).reshape(-1, 1)) ** 2
    got = blocked_errors(design, y, np.full(4, 0.7), [block])
    assert got == pytest.approx(want, rel=1e-8)


def _stream(n, change, kind, rng):
    """Rows of 12 radial functions of a 1-d input, targets sin(3x) + noise of deviation 0.1;
    from ``change`` on: another function (``function``), the same plus 1.5 (``level``) or
    noise of deviation 0.22 (``scale``)."""
    x = rng.uniform(-2, 2, n)
    centres = np.linspace(-2, 2, 12)
    rows = np.exp(-((x[:, None] - centres) ** 2) / 0.3)
    y = np.sin(3 * x) + 0.1 * rng.standard_normal(n)
    if kind == "function":
        y[change:] = np.cos(2 * x[change:]) + 0.1 * rng.standard_normal(n - change)
    elif kind == "level":
        y[change:] += 1.5
    elif kind == "scale":
        y[change:] += 0.2 * rng.standard_normal(n - change)
    return RidgeView(rows, y[:, None], np.full(12, 1e-3), np.ones(1))


@pytest.mark.parametrize("kind, wins", [("function", True), ("level", False),
                                        ("scale", False), ("none", False)])
def test_a_change_of_function_is_worth_a_cut_and_a_shift_of_level_is_not(kind, wins):
    outcomes = [shorter_memory_wins(_stream(600, 560, kind, np.random.default_rng(s)),
                                    keep=40, after=40) for s in range(20)]
    assert sum(outcomes) >= 18 if wins else sum(outcomes) <= 2


@settings(max_examples=200, deadline=None)
@given(gains=st.lists(st.floats(-1e3, 1e3), min_size=0, max_size=12),
       scale=st.floats(1e-6, 1e6))
# (found by a CI run: gains of 1e-158, whose squares underflow in scipy's statistic)
@example(gains=[0.0, 6.709164315346951e-159], scale=1.0)
def test_a_cut_needs_a_gain_beyond_one_standard_error_as_scipys_t_statistic(gains, scale):
    """The verdict is the one-sample t statistic of the blocks' gains (scipy's): a cut
    above 1, a second look between 0 and 1, a refusal at or below 0 — the same in any unit
    of the errors; a single block, or gains that do not vary, have no scatter: a second
    look if the gain is positive."""
    gains = np.asarray(gains, dtype=float)
    said = verdict(gains)
    if not gains.shape[0] or not np.mean(gains) > 0.0:
        assert said == REFUSE
    elif gains.shape[0] < 2:
        assert said == LOOK_AGAIN
    elif np.ptp(gains) == 0.0:
        assert said == CUT
    elif np.std(gains) > 1e-9 * np.max(np.abs(gains)):
        # (t is the same in any unit: scipy's, taken in units of the largest gain, where
        # no square underflows)
        t = stats.ttest_1samp(gains / np.max(np.abs(gains)), 0.0).statistic
        if abs(t - 1.0) > 1e-9 and t > 1e-9:  # (at a tie, rounding decides)
            assert said == (CUT if t > 1.0 else LOOK_AGAIN) == verdict(scale * gains)


class _Ridge:
    """A memory of patterns that offers its ridge view."""

    def __init__(self, view: RidgeView) -> None:
        self.view, self.n_parameters = view, 12

    @property
    def n_stored(self) -> int:
        return self.view.rows.shape[0]

    def forget_oldest(self, k: int) -> None:
        self.view = RidgeView(self.view.rows[k:], self.view.targets[k:], self.view.penalty,
                              self.view.scales)

    def ridge_view(self) -> RidgeView:
        return self.view


def test_the_memory_cuts_on_a_change_of_function_and_counts_a_refused_alarm():
    changed = _Ridge(_stream(600, 560, "function", np.random.default_rng(0)))
    memory = AdaptiveMemory(window_size=1000)
    assert memory.after_alarm(changed, since=40, learned=600)
    assert changed.n_stored == 40 and memory.vetoed == 0 and memory.stale == 0
    shifted = _Ridge(_stream(600, 560, "level", np.random.default_rng(0)))
    memory = AdaptiveMemory(window_size=1000)
    assert not memory.after_alarm(shifted, since=40, learned=600)
    assert shifted.n_stored == 600 and memory.vetoed == 1
    assert memory.last_alarm < 0  # (a refused alarm is no change between changes)


def test_a_change_the_refit_cannot_yet_judge_is_looked_at_when_its_samples_double(
        monkeypatch):
    """``LOOK_AGAIN``: no cut and no refusal; the memory looks again once the samples since
    the change have doubled, dating the same change, and cuts there on ``CUT``."""
    said = iter([LOOK_AGAIN] * REVIEWS + [CUT])
    monkeypatch.setattr(memory_module, "refit_verdict", lambda view, keep, after: next(said))
    stored = _Ridge(_stream(600, 560, "function", np.random.default_rng(0)))
    memory = AdaptiveMemory(window_size=1000)
    since, learned = 20, 580
    for _ in range(REVIEWS):
        plan = memory.plan(stored, since, learned)
        assert plan.pending and not plan.keep and not plan.refused
        assert memory.review_at == learned + since
        assert memory.review_due(learned + since - 1) == 0
        learned, since = learned + since, 2 * since
        assert memory.review_due(learned) == since and memory.review_change == 560
        assert memory.review_due(learned + 1) == 0  # (a look is taken once)
    plan = memory.plan(stored, since, learned)
    assert plan.keep == since and not plan.pending and memory.vetoed == 0
    assert memory.cut(stored, plan, learned) and stored.n_stored == since


def test_a_model_cuts_at_the_second_look_through_its_stream_layer(monkeypatch):
    """Through ``stream.layer.after_learning``: an alarm the refit cannot yet judge cuts
    nothing; the look owed, once its samples have doubled, asks the refit again about the
    same change (its patterns since then) and cuts on its word."""
    looks, calls = [], []
    review_due = AdaptiveMemory.review_due

    def spy(memory, learned):
        since = review_due(memory, learned)
        if since:
            looks.append(since)
        return since

    def said(view, keep, after):
        calls.append(after)
        return CUT if looks else LOOK_AGAIN

    monkeypatch.setattr(AdaptiveMemory, "review_due", spy)
    monkeypatch.setattr(memory_module, "refit_verdict", said)
    model = SparseRBFRegressor(max_basis=15, window_size=300)
    rng = np.random.default_rng(3)
    for i in range(900):
        x = rng.uniform(-2, 2)
        y = (np.sin(3 * x) if i < 500 else 2.0 - np.cos(2 * x)) + 0.05 * rng.standard_normal()
        model.learn_one({"x": x}, y)
        cuts = getattr(model, "n_memory_cuts", 0)
        assert bool(cuts) == bool(looks)  # (no cut before the look, one at it)
        if cuts:
            break
    assert len(looks) == 1 and calls[-1] == looks[0] and model.n_memory_cuts == 1
    assert looks[0] <= model.model.n_patterns <= max(looks[0], 15 + 10, MIN_MEMORY)


def test_a_change_still_unjudged_after_the_last_look_is_refused(monkeypatch):
    monkeypatch.setattr(memory_module, "refit_verdict", lambda view, keep, after: LOOK_AGAIN)
    stored = _Ridge(_stream(600, 560, "function", np.random.default_rng(0)))
    memory = AdaptiveMemory(window_size=1000)
    since, learned = 10, 600
    for _ in range(REVIEWS):
        assert memory.plan(stored, since, learned).pending
        learned, since = memory.review_at, 2 * since
        assert memory.review_due(learned) == since
    plan = memory.plan(stored, since, learned)
    assert plan.refused and memory.vetoed == 1 and memory.review_at < 0
    assert stored.n_stored == 600
    assert memory.plan(stored, 10, learned + 50).pending  # (a new alarm looks afresh)


def test_an_alarm_dating_another_change_gets_looks_of_its_own(monkeypatch):
    """A look owed for one change is replaced by an alarm dating another, which the refit
    may again find undecided and look at later; a look the memory grew too young to take
    ends it, and the next change gets its looks."""
    monkeypatch.setattr(memory_module, "refit_verdict", lambda view, keep, after: LOOK_AGAIN)
    stored = _Ridge(_stream(600, 560, "function", np.random.default_rng(0)))
    memory = AdaptiveMemory(window_size=1000)
    assert memory.plan(stored, 20, 580).pending
    assert memory.plan(stored, 10, 590).pending and memory.review_change == 580
    assert memory.review_due(600) == 20 and memory.vetoed == 0
    stored.n_parameters = 400  # (the look finds a floor the memory no longer holds twice)
    plan = memory.plan(stored, 20, 600)
    assert plan.refused and not plan.keep and memory.vetoed == 0 and memory.review_at < 0
    stored.n_parameters = 12
    assert memory.plan(stored, 20, 900).pending  # (the next change: looks of its own)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(15, 50), m=st.integers(2, 12))
def test_the_gcv_shrinkage_is_the_grids_least_gcv_from_the_hat_matrix(seed, n, m):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, m))
    y = rows[:, :1] + rng.standard_normal((n, 1))
    view = RidgeView(rows, y, rng.uniform(1e-6, 1e-2, m), np.ones(1))
    design = np.column_stack([rows, np.ones(n)])
    gcvs = []
    for shrinkage in SHRINKAGE:
        gram = design.T @ design
        a = gram + np.diag(np.maximum(np.r_[shrinkage * view.penalty, 0.0],
                                      FREE * np.diag(gram)))
        hat = design @ np.linalg.solve(a, design.T)
        residual = y - hat @ y
        gcvs.append(n * float(np.sum(residual ** 2)) / (n - np.trace(hat)) ** 2)
    assert gcv_shrinkage(design, y, view) == SHRINKAGE[int(np.argmin(gcvs))]


def _friedman_rows(n: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.uniform(0, 1, 5)
        y = 10 * np.sin(np.pi * x[0] * x[1]) + 20 * (x[2] - 0.5) ** 2 + 10 * x[3] + 5 * x[4]
        yield {f"x{i}": float(v) for i, v in enumerate(x)}, float(y + rng.normal())


@pytest.mark.parametrize("make", [
    lambda: SparseRBFRegressor(max_basis=15, window_size=200),
    lambda: SparseRBFMultiTargetRegressor(max_basis=15, window_size=200),
    lambda: VBLSRegressor(memory="adaptive", window_size=200),
    lambda: VBLSRegressor(memory="adaptive", window_size=200, factorisation="student_t"),
    lambda: VBLSMultiTargetRegressor(memory="adaptive", window_size=200),
    lambda: VBLSMultiTargetRegressor(memory="adaptive", window_size=200,
                                     factorisation="student_t"),
    lambda: VBLSKernelRegressor(max_basis=15, window_size=200),
], ids=["rbf", "rbf-multi", "vbls", "vbls-student", "vbls-multi", "vbls-multi-student",
        "vbls-kernel"])
def test_every_family_offers_a_ridge_view_the_refit_reads(make):
    """Each model's view has a penalty per design column and a target row per stored
    pattern, and the refit reads it (the Student-t factorisation's units leave out the
    bias column: a view of the stored rows as they are failed there, one target or
    several)."""
    model = make()
    multi = isinstance(model, (SparseRBFMultiTargetRegressor, VBLSMultiTargetRegressor))
    for x, y in _friedman_rows(300, 0):
        model.learn_one(x, {"a": y, "b": 2.0 * y} if multi else y)
    owner = model.model if isinstance(model, (SparseRBFRegressor,
                                              SparseRBFMultiTargetRegressor)) else model
    view = owner.ridge_view()
    n, m = view.rows.shape
    assert view.targets.shape == (n, 2 if multi else 1)
    assert view.penalty.shape[0] == m and view.scales.shape == (view.targets.shape[1],)
    assert n > 60 and isinstance(shorter_memory_wins(view, keep=40, after=20), bool)


@pytest.mark.parametrize("kind", ["level", "none", "function"])
def test_the_decision_does_not_change_with_an_inputs_units(kind):
    """One input in units 10⁴ times larger (its penalty scaled to match): the same
    decision on every seed (a floor taken from the largest Gram diagonal shrank the level
    column there, and steps of the target were cut)."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        n, change = 600, 560
        x = rng.uniform(-2, 2, (n, 3))
        y = np.sin(2 * x[:, 0]) + x[:, 1] - 0.5 * x[:, 2] + 0.1 * rng.standard_normal(n)
        if kind == "level":
            y[change:] += 1.5
        elif kind == "function":
            y[change:] = -y[change:]
        rows = np.column_stack([x, np.sin(2 * x[:, 0])])
        penalty = np.array([0.0, 1e-3, 0.0, 1e-2])
        big = rows.copy()
        big[:, 2] *= 1e4
        decisions = [shorter_memory_wins(RidgeView(r, y[:, None], p, np.ones(1)), 40, 40)
                     for r, p in ((rows, penalty), (big, penalty * [1, 1, 1e8, 1]))]
        assert decisions[0] == decisions[1], seed


def test_a_cut_keeps_the_patterns_the_plan_counted_after_the_change():
    """With an earlier alarm's dense samples inside the change's interval, the cut marks as
    stale only the patterns from before the change: the count is the plan's, made before
    the cut moves the horizon."""

    class _Stored:
        n_parameters = 10

        def __init__(self, n: int) -> None:
            self.n_stored = n

        def forget_oldest(self, k: int) -> None:
            self.n_stored -= k

    horizon = Horizon(window_size=1000, max_stride=4, stride=4, full_since=0,
                      dense_from=900, dense_until=1000)
    memory = AdaptiveMemory(window_size=1000, horizon=horizon)
    after = horizon.patterns_in(200, 1000)
    model = _Stored(1000)
    plan = memory.plan(model, since=200, learned=1000)
    assert plan.after == after and plan.keep == max(after, 30)
    assert memory.cut(model, plan, learned=1000)
    assert model.n_stored == plan.keep and memory.stale == 0
