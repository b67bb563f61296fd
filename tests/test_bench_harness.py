"""The shared progressive-validation loop of the benchmarks (benchmarks/harness.py).

Every stream benchmark scores its models through this loop, so a scoring rule it gets wrong
is wrong in every table of docs/performance.md: the first prediction (made before any
target) must never be scored, a ``None`` prediction must never count as 0, the baselines
must be what their names say, and the results file must hold the keys the page generator
reads.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
# The harness pins BLAS to one thread through the environment when it is imported, as the
# benchmarks do; keep this process's environment as it was for the tests that follow.
_environment = dict(os.environ)
import harness  # noqa: E402

os.environ.clear()
os.environ.update(_environment)

STREAM = [({"x": 0.1 * i}, t) for i, t in enumerate([2.0, 4.0, 3.0, 7.0, 5.0, 6.0])]


class Constant:
    """Predicts ``first`` before any target (or ``None``), then ``value``."""

    def __init__(self, first, value=5.0):
        self.first, self.value, self.seen = first, value, 0

    def predict_one(self, x, with_dist=False):
        return self.first if self.seen == 0 else self.value

    def learn_one(self, x, y):
        self.seen += 1


class NoneEvery:
    """Answers ``None`` on the samples in ``gaps``, ``value`` elsewhere."""

    def __init__(self, gaps, value=5.0):
        self.gaps, self.value, self.i = set(gaps), value, 0

    def predict_one(self, x):
        return None if self.i in self.gaps else self.value

    def learn_one(self, x, y):
        self.i += 1


def _run(factory, data=STREAM, **kwargs):
    model = harness.Model("m", factory, scale=False)
    return harness.progressive(data, [model], **kwargs)


def test_the_first_prediction_is_not_scored_for_any_model():
    huge = _run(lambda: Constant(1e12))["m"]
    sane = _run(lambda: Constant(5.0))["m"]
    assert huge.rmse() == sane.rmse()
    assert huge.rmse() == pytest.approx(math.sqrt(np.mean((np.array([4, 3, 7, 5, 6]) - 5) ** 2)))
    assert not huge.scored[0] and huge.scored[1:].all()


def test_a_none_prediction_is_missing_not_zero():
    runs = _run(lambda: NoneEvery({0, 2, 4}))
    run = runs["m"]
    # Scored: samples 1, 3, 5 (targets 4, 7, 6) against 5; samples 2 and 4 are missing.
    assert run.rmse() == pytest.approx(math.sqrt((1 + 4 + 1) / 3))
    assert run.missing == 2  # the first sample's None is not counted: nothing is scored there
    assert run.summary()["scored"] == 3
    # Scored as 0 instead, samples 2 and 4 would add errors of 3 and 5.
    as_zero = math.sqrt((1 + 9 + 4 + 25 + 1) / 5)
    assert run.rmse() < as_zero


def test_the_baselines_match_a_hand_computation():
    runs = _run(lambda: Constant(0.0))
    targets = [2.0, 4.0, 3.0, 7.0, 5.0, 6.0]
    means = [None, 2.0, 3.0, 3.0, 4.0, 4.2]  # mean of the targets before each sample
    lasts = [None, 2.0, 4.0, 3.0, 7.0, 5.0]
    for label, expected in ((harness.RUNNING_MEAN, means), (harness.LAST_TARGET, lasts)):
        run = runs[label]
        np.testing.assert_allclose(run.predictions[1:], expected[1:])
        errors = np.array(targets[1:]) - np.array(expected[1:])
        assert run.rmse() == pytest.approx(math.sqrt(np.mean(errors**2)))
        assert run.mae() == pytest.approx(np.mean(np.abs(errors)))
        assert run.nmse() == pytest.approx(np.mean(errors**2) / np.var(targets[1:]))
        assert run.missing == 0


def test_baselines_can_be_left_out_and_score_from_applies_to_every_model():
    runs = _run(lambda: Constant(1e12), baselines=False, score_from=3)
    assert list(runs) == ["m"]
    assert runs["m"].rmse() == pytest.approx(math.sqrt(np.mean((np.array([7, 5, 6]) - 5) ** 2)))
    with_baselines = _run(lambda: Constant(0.0), score_from=3)
    assert all(run.scored.sum() == 3 for run in with_baselines.values())


def test_coverage_counts_errors_inside_the_interval_after_the_warm_up():
    sigma = np.ones(300)
    errors = np.zeros(300)
    errors[:100] = 10.0  # the warm-up: not counted
    errors[100:110] = 2.0  # outside ± 1.96 σ
    errors[110:120] = 1.9  # inside
    errors[120] = np.nan  # not scored: not counted either way
    assert harness.coverage(errors, sigma) == pytest.approx(189 / 199)


def test_a_model_with_a_distribution_reports_its_coverage():
    from river import linear_model

    data = [({"x": float(v)}, float(2 * v)) for v in np.linspace(-1, 1, 150)]
    model = harness.Model("bayes", linear_model.BayesianLinearRegression, with_dist=True)
    run = harness.progressive(data, [model], baselines=False)["bayes"]
    assert 0.0 <= run.summary()["coverage"] <= 1.0
    assert not np.isnan(run.sigma[1:]).any()
    assert run.summary()["us_median"] > 0


def test_the_results_file_has_the_documented_keys(tmp_path):
    runs = _run(lambda: Constant(0.0, 4.0))
    report = harness.Report("unit", "a test", {"samples": 6}, path=tmp_path / "unit.json")
    report.stream("toy", runs, ours="m", peers=[harness.RUNNING_MEAN])
    report.table("extra", ["a", "b"], [[1, 2.5]], doc=False)
    report.note("a note")
    data = json.loads(report.write().read_text(encoding="utf-8"))
    assert tuple(data) == harness.RESULT_KEYS
    assert data["parameters"] == {"samples": 6}
    assert {"cpus", "processor", "load_average"} <= set(data["machine"])
    stream = data["streams"]["toy"]
    assert stream["samples"] == 6
    assert set(stream["models"]) == {"m", harness.RUNNING_MEAN, harness.LAST_TARGET}
    assert set(stream["models"]["m"]) >= {"rmse", "mae", "nmse", "coverage", "us_median",
                                          "us_p99", "missing", "scored"}
    assert stream["models"]["m"]["coverage"] is None  # no distribution: null, not NaN
    assert stream["ratios"][harness.RUNNING_MEAN] == pytest.approx(
        runs["m"].rmse() / runs[harness.RUNNING_MEAN].rmse())
    assert [t["title"] for t in data["tables"]] == ["toy (6 samples)", "extra"]
    assert data["tables"][1] == {"title": "extra", "columns": ["a", "b"],
                                 "rows": [["1", "2.5"]], "notes": [], "doc": False}
    assert data["notes"] == ["a note"]


# -- several targets, models interleaved (harness.interleaved) ---------------------------
class MeanOfEach:
    """A multi-output model: each target's mean so far ({} before the first sample), with a
    distribution whose σ is 1; ``drop`` names a target it never predicts."""

    def __init__(self, drop=None):
        self.sums, self.n, self.drop = {}, 0, drop

    def predict_one(self, x, with_dist=False):
        from river import proba

        out = {k: v / self.n for k, v in self.sums.items() if k != self.drop}
        return {k: proba.Gaussian._from_state(1, m, 1.0, 0) for k, m in out.items()} \
            if with_dist else out

    def learn_one(self, x, y):
        self.n += 1
        for k, v in y.items():
            self.sums[k] = self.sums.get(k, 0.0) + v


TARGETS = {"a": [2.0, 4.0, 3.0, 7.0, 5.0, 6.0], "b": [1.0, -1.0, 0.5, 2.0, 0.0, 1.5]}
XS = [x for x, _ in STREAM]


def test_interleaved_scores_as_progressive_does_for_each_target():
    single = harness.Model("m", lambda: Constant(1e12, 4.0), scale=False)
    multi = harness.Model("multi", MeanOfEach, scale=False, with_dist=True)
    runs = harness.interleaved(XS, TARGETS, [(single, "a"), (single, "b"), (multi, ("a", "b"))])
    for name, values in TARGETS.items():
        alone = harness.progressive(list(zip(XS, values, strict=True)),
                                    [harness.Model("m", lambda: Constant(1e12, 4.0),
                                                   scale=False)])
        assert set(runs[name]) == {"m", "multi", harness.RUNNING_MEAN, harness.LAST_TARGET}
        for label in ("m", harness.RUNNING_MEAN, harness.LAST_TARGET):
            np.testing.assert_array_equal(runs[name][label].errors, alone[label].errors)
        # The multi-output model: each target's running mean, σ = 1, first sample unscored.
        run = runs[name]["multi"]
        np.testing.assert_allclose(run.predictions[1:], runs[name][harness.RUNNING_MEAN]
                                   .predictions[1:])
        assert not run.scored[0] and run.missing == 0
        np.testing.assert_array_equal(run.sigma[1:], 1.0)
    # One time per sample for the whole multi-output model, in every target's run.
    assert runs["a"]["multi"].seconds is runs["b"]["multi"].seconds
    assert (runs["a"]["multi"].seconds > 0).all()


def test_interleaved_counts_a_missing_key_as_missing_and_refuses_unknown_targets():
    multi = harness.Model("multi", lambda: MeanOfEach(drop="b"), scale=False)
    runs = harness.interleaved(XS, TARGETS, [(multi, ("a", "b"))], baselines=False)
    assert runs["b"]["multi"].missing == 5 and runs["a"]["multi"].missing == 0
    with pytest.raises(ValueError, match="'c'"):
        harness.interleaved(XS, TARGETS, [(multi, ("a", "c"))])


# -- the generated pages (benchmarks/performance.py) ------------------------------------
import performance  # noqa: E402


def _results_file(tmp_path, name="toy"):
    runs = _run(lambda: Constant(0.0, 4.0))
    report = harness.Report(name, "what the toy measures", {}, path=tmp_path / f"{name}.json")
    report.stream("toy stream", runs, ours="m")
    report.table("scratch", ["a"], [["1"]], doc=False)
    report.write()
    return performance.load_results(tmp_path)


def test_the_page_shows_each_benchmarks_doc_tables_with_their_provenance(tmp_path):
    results = _results_file(tmp_path)
    page = performance.render_page(results)
    assert "## toy" in page and "what the toy measures" in page
    assert f"commit `{results['toy']['git_commit']}`" in page
    assert "### toy stream (6 samples)\n| model |" in page and "| last target |" in page
    assert "scratch" not in page  # doc=False: in the JSON only
    assert "python benchmarks/toy.py" in page


def test_a_part_is_shown_compactly_inside_its_parents_section(tmp_path, monkeypatch):
    _results_file(tmp_path)
    report = harness.Report("toy_multi", "The toy, several targets.", {},
                            path=tmp_path / "toy_multi.json")
    report.table("summary", ["a", "b"], [["1", "2"]])
    report.table("details", ["c"], [["3"]], doc=False)
    report.note("first note")
    report.note("the summary line.")
    report.write()
    monkeypatch.setattr(performance, "PARTS", {"toy_multi": ("toy", "toy.py --multi")})
    page = performance.render_page(performance.load_results(tmp_path))
    assert "## toy_multi" not in page and "### summary" not in page
    bullet = next(line for line in page.splitlines() if line.startswith("* **The toy"))
    assert "`python benchmarks/toy.py --multi`" in bullet
    assert bullet.endswith(" the summary line.") and "first note" not in page
    # The parent's tables come first, the part's doc table after its line, apart from it.
    assert page.index("### toy stream") < page.index(bullet)
    assert f"{bullet}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n" in page
    assert "details" not in page
    # Without its parent, a part is a section of its own.
    (tmp_path / "toy.json").unlink()
    alone = performance.render_page(performance.load_results(tmp_path))
    assert "## toy_multi" in alone and "### summary" in alone


def test_generated_blocks_are_rewritten_between_their_markers_only():
    text = "keep\n<!-- generated: x -->\nold\nlines\n<!-- /generated: x -->\nkeep too\n"
    new = performance.replace_blocks(text, {"x": "new"})
    assert new == "keep\n<!-- generated: x -->\nnew\n<!-- /generated: x -->\nkeep too\n"
    assert performance.replace_blocks(new, {"x": "new"}) == new
    with pytest.raises(SystemExit):
        performance.replace_blocks("no markers", {"x": "new"})


def test_the_committed_pages_are_what_the_results_files_give():
    """A hand edit of a generated page, or results committed without `make performance`,
    fails here."""
    for path, text in performance.pages(performance.load_results()).items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run make performance"
    assert len(performance.PAGE.read_text(encoding="utf-8").splitlines()) < 400
