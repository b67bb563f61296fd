"""The model registry: names, availability, parameters and their ranges."""

import pytest

from onlinesparse.replay import models
from onlinesparse.replay.errors import UsageError


def test_the_registry_names_the_models_of_the_brief():
    assert {"rbf", "vbls", "vbls-kernel", "lin1", "linear"} <= set(models.MODELS)
    assert models.is_available("linear")


def test_unknown_and_unavailable_models_are_usage_errors(monkeypatch):
    with pytest.raises(UsageError, match="unknown model 'nope'; choose one of: rbf"):
        models.get_spec("nope")
    monkeypatch.setitem(
        models.MODELS, "ghost", models.ModelSpec("ghost", "no_such_package.mod:Ghost", "")
    )
    monkeypatch.setitem(
        models.MODELS, "ghost2", models.ModelSpec("ghost2", "onlinesparse:NoSuchClass", "")
    )
    for name in ("ghost", "ghost2"):
        with pytest.raises(models.ModelUnavailable) as info:
            models.build_model(name)
        assert str(info.value).startswith(f"model {name!r} is not available in this installation")
        assert info.value.exit_code == 2
        assert name not in models.available_models()


@pytest.mark.parametrize(
    ("param", "raw", "message"),
    [
        (models.ModelParam("max-basis", "max_basis", int, low=1, high=10), "0",
         r"--max-basis must be an integer in \[1, 10\] \(got 0\)"),
        (models.ModelParam("max-basis", "max_basis", int, low=1), "2.5",
         r"--max-basis must be an integer ≥ 1 \(got '2.5'\)"),
        (models.ModelParam("lr", "lr", float, low=0, low_inclusive=False), "0",
         r"--lr must be a number > 0 \(got 0.0\)"),
        (models.ModelParam("lr", "lr", float), "nan", r"--lr must be a number \(got nan\)"),
        (models.ModelParam("kind", "kind", str, choices=("a", "b")), "c",
         r"--kind must be one of a, b"),
    ],
)
def test_out_of_range_parameters_name_the_option(param, raw, message):
    with pytest.raises(UsageError, match=message):
        param.parse(raw)


def test_parameters_parse_to_their_types():
    assert models.ModelParam("n", "n", int, low=1).parse("1e3") == 1000
    assert models.ModelParam("f", "f", bool).parse("yes") is True
    assert models.parse_param_assignment("max-iter=5") == ("max_iter", 5)
    with pytest.raises(UsageError, match="KEY=VALUE"):
        models.parse_param_assignment("oops")


def test_build_model_checks_keywords_against_the_constructor():
    model = models.build_model("linear", {"lr": 0.1, "l2": 0.5}, standardize=False)
    assert model.l2 == 0.5 and model.optimizer.learning_rate == 0.1
    with pytest.raises(UsageError, match="does not take a parameter 'max_basis'"):
        models.build_model("linear", {"max_basis": 3})
    piped = models.build_model("linear")
    assert list(piped.steps) == ["StandardScaler", "LinearRegression"]
    assert models.last_step(piped) is list(piped.steps.values())[-1]


def test_optional_protocol_lookups():
    piped = models.build_model("linear")
    assert not models.supports_with_dist(piped)
    piped.learn_one({"a": 1.0, "b": 2.0}, 1.0)
    piped.learn_one({"a": 2.0, "b": 1.0}, 0.0)
    scores, source = models.input_relevance(piped)
    assert set(scores) == {"a", "b"} and all(v >= 0 for v in scores.values())
    assert "standardised" in source

    class WithProtocol:
        def predict_one(self, x, with_dist=False):
            return 0.0

        def input_relevance(self):
            return {"a": 2}

    assert models.supports_with_dist(WithProtocol())
    assert models.input_relevance(WithProtocol())[0] == {"a": 2.0}


def test_the_registry_and_the_estimator_agree_on_a_parameter_s_range():
    """One validation rule (onlinesparse._validation, in the estimator): rcond = 0 is a
    valid lin-1 setting from the command line too, and max_basis = 0 is refused by the
    estimator's own message."""
    from onlinesparse.lin1 import Lin1Regressor

    built = models.build_model("lin1", {"rcond": 0.0}, standardize=False)
    assert built.rcond == Lin1Regressor(rcond=0.0).rcond == 0.0
    with pytest.raises(UsageError, match="max_basis must be an integer ≥ 1"):
        models.build_model("rbf", {"max_basis": 0})
