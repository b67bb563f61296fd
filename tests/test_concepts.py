"""Recurring concepts (onlinesparse.stream.concepts): the models a stream has left, kept frozen
and weighed against the live model by their prequential evidence."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from onlinesparse import SparseRBFRegressor, core
from onlinesparse.features import MAX_MAGNITUDE
from onlinesparse.orr.kernels import Basis, BasisSpec, FrozenBasis
from onlinesparse.stream.concepts import FORGET, SLEEP_LOG_ODDS, Concept, ConceptMemory
from onlinesparse.stream.evidence import LOG_ODDS_LIMIT, PRIOR_LOG_ODDS
from tests.reference import assert_continues_exactly

Z95 = 1.959963984540054


def _concept(rng: np.random.Generator, m: int, d: int, **kwargs) -> Concept:
    """A frozen model of m Gaussian basis functions in d inputs."""
    frozen = FrozenBasis(np.full(m, core.GAUSSIAN, dtype=np.int64), rng.normal(size=(m, d)),
                         rng.uniform(0.2, 3.0, (m, d)), np.zeros(m, dtype=np.int64),
                         rng.normal(size=m))
    return Concept(frozen, float(rng.uniform(0.1, 2.0)), **kwargs)


def _predict(concept: Concept, x: np.ndarray) -> float:
    """h(x)ᵀw from scratch: exp(−Σ_f (x_f − c_f)²/r_f²) per basis function."""
    frozen = concept.predictor
    h = np.exp(-np.sum(frozen.inv_r2 * (x - frozen.centres) ** 2, axis=1))
    return float(h @ frozen.weights[:, 0])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), dof=st.floats(1.0, 500.0),
       scale=st.sampled_from([1e-3, 1.0, 1e3]))
def test_the_evidence_is_the_forgotten_sum_of_student_t_log_likelihood_ratios(
        seed, n, dof, scale):
    """After n samples the log-odds of an awake concept are
    prior + Σₜ FORGETⁿ⁻ᵗ·[log t_ν(missₜ/s) − log t_ν(errorₜ/s)], its errors and the live
    model's scored by one Student-t of scale s (scipy's density), in any unit."""
    rng = np.random.default_rng(seed)
    concept = _concept(rng, 4, 2)
    concept.predictor.weights[:] *= scale
    memory = ConceptMemory(concepts=[concept])
    variance = (scale * rng.uniform(0.5, 2.0)) ** 2
    expected, clipped, log_kappa = 0.0, False, 0.0
    for t in range(n):
        x = rng.normal(size=2)
        target = scale * rng.normal()
        error = scale * rng.normal(0.0, 1.5)
        miss = target - _predict(concept, x)
        ratio = (stats.t.logpdf(miss / math.sqrt(variance), dof)
                 - stats.t.logpdf(error / math.sqrt(variance), dof))
        expected = FORGET * expected + ratio
        # (its own calibration: adaptive conformal inference on its errors, as the model's)
        outside = abs(miss) > Z95 * math.sqrt(concept.variance) * math.exp(log_kappa)
        log_kappa = min(max(log_kappa + 0.1 * (float(outside) - 0.05), -5.0), 5.0)
        clipped |= abs(PRIOR_LOG_ODDS + expected) >= LOG_ODDS_LIMIT
        memory.judge(x, target, error, variance, dof, building=False, learned=t)
        if not concept.awake:
            break
    assume(concept.awake and not clipped)  # (the bound: a sum no longer)
    assert concept.log_odds == pytest.approx(PRIOR_LOG_ODDS + expected, rel=1e-9,
                                             abs=1e-9)
    assert concept.calibration == pytest.approx(log_kappa, rel=1e-12, abs=1e-12)
    assert concept.spread == pytest.approx(concept.variance * math.exp(2 * log_kappa))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 3),
       odds=st.lists(st.floats(-12.0, 40.0), min_size=3, max_size=3),
       mean=st.floats(-5.0, 5.0), variance=st.floats(0.01, 4.0),
       share=st.sampled_from([1.0, 0.5, 1e-3, 1e-13]))
def test_the_blend_is_the_posterior_mixture_of_the_live_model_and_the_awake_concepts(
        seed, k, odds, mean, variance, share):
    """blend from scratch: the concepts' posterior against the model, ∝ (1, e^oddsₖ) over
    the live model and the awake concepts (a sleeping one has none), times the model's
    ``share`` of the live prediction (the rest the experts'), the live prediction keeping
    the remainder; the mixture's mean Σwμ and variance Σw(v + μ²) − (Σwμ)²; weight() is the
    concepts' posterior against the model."""
    rng = np.random.default_rng(seed)
    concepts = [_concept(rng, 3, 2, log_odds=o, awake=o >= SLEEP_LOG_ODDS,
                         calibration=float(rng.uniform(-1.0, 1.0))) for o in odds[:k]]
    memory = ConceptMemory(concepts=concepts)
    x = rng.normal(size=2)
    awake = [c for c in concepts if c.awake]
    posterior = np.array([1.0] + [math.exp(c.log_odds) for c in awake])
    posterior /= posterior.sum()
    w = share * posterior
    w[0] = 1.0 - w[1:].sum()
    mu = np.array([mean] + [_predict(c, x) for c in awake])
    v = np.array([variance] + [c.variance * math.exp(2.0 * c.calibration) for c in awake])
    blended, spread = memory.blend(x, mean, variance, share)
    assert blended == pytest.approx(float(w @ mu), rel=1e-9, abs=1e-9)
    assert spread == pytest.approx(float(w @ (v + mu**2) - (w @ mu) ** 2), rel=1e-7,
                                   abs=1e-9)
    assert abs(blended - mean) <= share * np.max(np.abs(mu - mean)) * (1 + 1e-9) + 1e-12
    assert memory.weight() == pytest.approx(float(posterior[1:].sum()), rel=1e-9,
                                            abs=1e-12)


def test_only_a_stretch_that_lasted_is_kept_and_the_least_recently_useful_gives_way():
    rng = np.random.default_rng(0)
    template = _concept(rng, 3, 2).predictor

    def freeze(scale: float):
        return lambda: (FrozenBasis(template.kinds, template.centres, template.inv_r2,
                                    template.features, template.weights * scale), 1.0)

    memory = ConceptMemory(capacity=2, lasted=300)
    memory.after_alarm(freeze(1.0), learned=299)  # (lasted 299)
    assert not memory.kept
    for learned in (700, 1100, 1500):
        memory.after_alarm(freeze(learned), learned=learned)
    assert [c.last_won for c in memory.concepts] == [1100, 1500]
    # a concept that outweighs the live model stays; the other gives way
    x = rng.normal(size=2)
    memory.judge(x, memory.concepts[0].predict(x), 3.0, 1.0, 100.0, building=False,
                 learned=1600)
    memory.after_alarm(freeze(1.0), learned=2000)
    assert [c.last_won for c in memory.concepts] == [1600, 2000]
    memory.after_alarm(lambda: None, learned=2400)  # (an empty model: nothing kept)
    assert len(memory.concepts) == 2


def test_a_frozen_basis_is_a_copy_of_the_model_at_the_alarm():
    """The frozen model's arrays are copies, not views of arrays the live model will
    overwrite, and it predicts h(x)ᵀw of the columns it was given."""
    basis = Basis(2)
    for centre in ([0.0, 0.0], [1.0, -1.0], [2.0, 0.5]):
        basis.append(BasisSpec.radial(np.array(centre), 1.5, "gaussian"))
    weights = np.array([0.5, -1.0, 2.0])
    frozen = FrozenBasis.of(basis, weights[:2])
    x = np.array([0.3, -0.2])
    expected = float(basis.evaluate(x)[:2] @ weights[:2])
    weights[:] = 0.0
    basis.arrays()[1][:] = 9.0
    assert frozen.predict(x) == pytest.approx(expected, rel=1e-12)
    assert FrozenBasis.of(basis, np.empty(0)) is None


def test_a_sleeping_concept_costs_nothing_until_a_change_builds_up():
    rng = np.random.default_rng(1)
    concept = _concept(rng, 3, 2, log_odds=SLEEP_LOG_ODDS - 1.0, awake=False)
    memory = ConceptMemory(concepts=[concept])
    x = rng.normal(size=2)
    memory.judge(x, 1.0, 5.0, 1.0, 50.0, building=False, learned=1)
    assert (concept.awake, concept.log_odds) == (False, SLEEP_LOG_ODDS - 1.0)
    assert memory.blend(x, 0.25, 1.0) == (0.25, 1.0)
    memory.judge(x, _predict(concept, x), 5.0, 1.0, 50.0, building=True, learned=2)
    assert concept.awake
    assert concept.log_odds > PRIOR_LOG_ODDS  # (woke at the prior, then won)


def test_the_evidence_is_bounded_so_that_either_side_can_take_over_again():
    rng = np.random.default_rng(2)
    concept = _concept(rng, 3, 2)
    memory = ConceptMemory(concepts=[concept])
    for t in range(100):  # (the concept right, the live model 10 deviations off)
        x = rng.normal(size=2)
        memory.judge(x, concept.predict(x), 10.0, 1.0, 100.0, building=False, learned=t)
        assert concept.log_odds <= LOG_ODDS_LIMIT
    assert concept.log_odds == LOG_ODDS_LIMIT
    turned = 0
    while concept.log_odds > 0.0:  # (then the live model right, the concept 10 off)
        x = rng.normal(size=2)
        memory.judge(x, concept.predict(x) + 10.0, 0.0, 1.0, 100.0, building=False,
                     learned=100 + turned)
        turned += 1
    assert turned <= 3


def _recurring(n_each: int, seed: int) -> list[tuple[dict, float]]:
    """Concept A, then B (A's sign flipped), then A again; noise 0.1."""
    rng = np.random.default_rng(seed)
    out = []
    for part, sign in enumerate((1.0, -1.0, 1.0)):
        for _ in range(n_each if part < 2 else 300):
            x = rng.uniform(-1.0, 1.0, 2)
            y = sign * (math.sin(3.0 * x[0]) + x[1] ** 2) + 0.1 * rng.normal()
            out.append(({"a": float(x[0]), "b": float(x[1])}, float(y)))
    return out


def _errors(model: SparseRBFRegressor, stream: list[tuple[dict, float]]) -> np.ndarray:
    errors = []
    for x, y in stream:
        errors.append(y - model.predict_one(x))
        model.learn_one(x, y)
    return np.array(errors)


def test_a_concept_that_returns_is_predicted_by_the_model_kept_for_it():
    """A, B, A: the model of A is kept when B begins and predicts A's return. Over the
    100 samples after the first 10 of it (the errors of the samples that show the change
    are the same with or without) the RMSE is less than half of the model's without
    concepts, which relearns A; on three streams."""
    n_each = 600
    for seed in range(3):
        stream = _recurring(n_each, seed)
        back = slice(2 * n_each + 10, 2 * n_each + 110)
        kept, plain = SparseRBFRegressor(), SparseRBFRegressor(concepts=0)
        with_concepts = _errors(kept, stream)
        without = _errors(plain, stream)
        rmse = [float(np.sqrt(np.mean(e[back] ** 2))) for e in (with_concepts, without)]
        assert rmse[0] < 0.5 * rmse[1], (seed, rmse)
        assert kept.diagnostics()["concepts"] >= 1
        assert plain.diagnostics()["concepts"] == 0


def test_without_a_change_nothing_is_kept_and_nothing_changes():
    """A stationary stream raises no alarm: no concept is kept, and every prediction is
    the same, to the bit, as the model's without concepts."""
    stream = _recurring(600, 7)[:600]
    kept, plain = SparseRBFRegressor(), SparseRBFRegressor(concepts=0)
    for x, y in stream:
        assert kept.predict_one(x) == plain.predict_one(x)
        kept.learn_one(x, y)
        plain.learn_one(x, y)
    assert kept.diagnostics()["concepts"] == 0
    assert kept.diagnostics()["concept_weight"] == 0.0


def test_a_pickle_with_a_concept_in_use_continues_exactly():
    stream = _recurring(600, 3)
    model = SparseRBFRegressor()
    for x, y in stream[:1230]:
        model.learn_one(x, y)
    assert model.diagnostics()["concept_weight"] > 0.5  # (A is back: its model predicts)
    assert_continues_exactly(model, stream[1230:])


def test_both_predictions_are_the_blend_of_the_live_models_prediction():
    """While a concept is awake, predict_one and predict_one(with_dist=True) return the
    blend (ConceptMemory.blend) of what the live model alone predicts."""
    stream = _recurring(600, 4)
    model = SparseRBFRegressor()
    for x, y in stream[:1205]:
        model.learn_one(x, y)
    assert model.diagnostics()["concept_weight"] > 0.5
    live = pickle.loads(pickle.dumps(model))
    live._concepts = None  # (the live model alone)
    reference = model.target_reference
    for x, _ in stream[1205:1215]:
        vector = np.array([x["a"], x["b"]])
        alone = live.predict_one(x, with_dist=True)
        mean, variance = model._concepts.blend(vector, alone.mu - reference,
                                               alone.sigma**2)
        dist = model.predict_one(x, with_dist=True)
        assert dist.mu == pytest.approx(mean + reference, rel=1e-12)
        assert dist.sigma**2 == pytest.approx(variance, rel=1e-9)
        assert model.predict_one(x) == pytest.approx(dist.mu, rel=1e-12)


def test_with_a_concept_awake_extreme_inputs_poison_nothing_and_bad_ones_change_nothing():
    """The concepts' share of a sample obeys the input policy (docs/input_policy.md): at
    the edge of the numeric domain the prediction and its deviation are finite, learning
    such a sample leaves later predictions finite, and a refused sample (NaN, a target
    out of the domain) raises ValueError and leaves the pickle as it was."""
    stream = _recurring(600, 5)
    model = SparseRBFRegressor()
    for x, y in stream[:1205]:
        model.learn_one(x, y)
    assert model.diagnostics()["concept_weight"] > 0.5
    edge = {"a": MAX_MAGNITUDE, "b": -MAX_MAGNITUDE}
    dist = model.predict_one(edge, with_dist=True)
    assert math.isfinite(dist.mu) and math.isfinite(dist.sigma)
    before = pickle.dumps(model)
    for x, y in (({"a": math.nan, "b": 0.0}, 1.0), ({"a": 0.1, "b": 0.2}, math.inf),
                 ({"a": 0.1, "b": 2.0 * MAX_MAGNITUDE}, 1.0)):
        with pytest.raises(ValueError):
            model.learn_one(x, y)
        assert pickle.dumps(model) == before
    model.learn_one(edge, -MAX_MAGNITUDE)
    for x, y in stream[1205:1300]:
        model.learn_one(x, y)
        dist = model.predict_one(x, with_dist=True)
        assert math.isfinite(dist.mu) and math.isfinite(dist.sigma)
