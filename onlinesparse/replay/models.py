"""The models the command line can replay a recording through.

Each entry of :data:`MODELS` maps a command-line name to a callable given by its dotted path,
imported only when the model is used, so that the registry can name models that are not
installed (yet). Adding a model is one entry::

    ModelSpec("rbf", "onlinesparse:SparseRBFRegressor", "…",
              (ModelParam("max-basis", "max_basis", int, low=1, high=100_000),))

``ModelParam`` is how a command-line option (``--max-basis``) reaches a constructor keyword
(``max_basis``), with its type and range checked before anything is built, so that a value out
of range is a usage error naming the option rather than a traceback from deep inside a model.

The optional protocol the replay uses when a model offers it (looked up with ``getattr``; for
a pipeline, on its last step):

* ``predict_one(x, with_dist=True)`` returning a :class:`river.proba.Gaussian` (``.mu``,
  ``.sigma``): gives the predictive interval and its coverage;
* ``diagnostics() -> dict[str, float]`` with optional keys ``n_basis``, ``gcv``,
  ``noise_std``, ``effective_parameters``: recorded over time;
* ``input_relevance() -> dict[feature, float]``: non-negative scores, larger = more relevant.

"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from onlinesparse.replay.errors import UsageError

__all__ = [
    "ModelParam",
    "ModelSpec",
    "MODELS",
    "ModelUnavailable",
    "get_spec",
    "resolve",
    "is_available",
    "available_models",
    "build_model",
    "last_step",
    "supports_with_dist",
    "input_relevance",
    "parse_param_assignment",
    "river_linear",
    "describe_parameters",
    "ParameterDoc",
    "relevance_decisions",
    "basis_budget",
    "has_basis_functions",
    "warm_up_model",
    "multi_target_form",
    "shares_model",
]


class ModelUnavailable(UsageError):
    """The model's class cannot be imported in this installation."""


@dataclass(frozen=True)
class ModelParam:
    """One command-line parameter of a model.

    Parameters
    ----------
    flag
        Option name without the leading dashes, e.g. ``"max-basis"``.
    kwarg
        The constructor keyword it sets, e.g. ``"max_basis"``.
    type
        ``int``, ``float``, ``bool`` or ``str``.
    low, high
        Optional bounds of the allowed range.
    low_inclusive, high_inclusive
        Whether the bounds themselves are allowed.
    choices
        Allowed values, for ``str`` parameters.
    help
        One line for ``--help``.

    Examples
    --------
    >>> p = ModelParam("max-basis", "max_basis", int, low=1, high=1000)
    >>> p.parse("100")
    100
    >>> p.parse("0")
    Traceback (most recent call last):
    ...
    onlinesparse.replay.errors.UsageError: --max-basis must be an integer in [1, 1000] (got 0)

    """

    flag: str
    kwarg: str
    type: type
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    choices: tuple[str, ...] | None = None
    help: str = ""

    def describe_range(self) -> str:
        kind = {int: "an integer", float: "a number", bool: "true or false", str: "one of"}[
            self.type
        ]
        if self.choices:
            return f"{kind} {', '.join(self.choices)}"
        if self.low is None and self.high is None:
            return kind
        if self.low is not None and self.high is not None:
            lo = "[" if self.low_inclusive else "("
            hi = "]" if self.high_inclusive else ")"
            return f"{kind} in {lo}{self.low:g}, {self.high:g}{hi}"
        if self.low is not None:
            return f"{kind} {'≥' if self.low_inclusive else '>'} {self.low:g}"
        return f"{kind} {'≤' if self.high_inclusive else '<'} {self.high:g}"

    def parse(self, raw: Any) -> Any:
        """Convert ``raw`` (usually the option's string) and check it is in range."""

        def invalid(shown: Any) -> UsageError:
            return UsageError(f"--{self.flag} must be {self.describe_range()} (got {shown})")

        if self.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise invalid(repr(raw))
        if self.type is str:
            value = str(raw)
            if self.choices and value not in self.choices:
                raise invalid(repr(raw))
            return value
        try:
            value = float(raw) if self.type is float else _parse_int(raw)
        except (TypeError, ValueError):
            raise invalid(repr(raw)) from None
        too_low = self.low is not None and (
            value < self.low or (value == self.low and not self.low_inclusive)
        )
        too_high = self.high is not None and (
            value > self.high or (value == self.high and not self.high_inclusive)
        )
        if not math.isfinite(value) or too_low or too_high:
            raise invalid(value)
        return value


def _parse_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError(raw)
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    try:
        return int(text)
    except ValueError:
        # "1e3" is a reasonable way to type a thousand; "2.5" is not an integer.
        as_float = float(text)
        if not as_float.is_integer():
            raise
        return int(as_float)


@dataclass(frozen=True)
class ModelSpec:
    """A model the command line knows by ``name``.

    Parameters
    ----------
    name
        The command-line name (``--model NAME``).
    path
        Dotted path of the class or factory, ``"package.module:attribute"``.
    description
        One line for ``onlinesparse models`` and ``--help``.
    params
        The command-line parameters it accepts.
    multi_target
        Dotted path of the model's multi-output form, a ``river.base.MultiTargetRegressor``
        that takes the same constructor keywords, or ``None`` when it has none. Several
        targets of one replay then share one model of that form (one basis for all, one
        ``learn_one`` per row) unless ``--separate`` asks for one model each; a model
        without one is replayed once per target.

    """

    name: str
    path: str
    description: str
    params: tuple[ModelParam, ...] = field(default=())
    multi_target: str | None = None

    def param(self, flag: str) -> ModelParam | None:
        for p in self.params:
            if p.flag == flag:
                return p
        return None


# A model is one entry here. Each option reaches its constructor keyword through `kwarg`,
# which the registry checks against the constructor's signature, so a mismatch is a usage
# error naming the keyword rather than a crash.
MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "rbf",
            "onlinesparse:SparseRBFRegressor",
            "sparse RBF network pruned and grown by GCV (Orr local ridge, FGCV)",
            (
                # (its range is the estimator's own check: one rule for both)
                ModelParam("max-basis", "max_basis", int, help="budget of basis functions"),
            ),
            multi_target="onlinesparse:SparseRBFMultiTargetRegressor",
        ),
        ModelSpec(
            "vbls",
            "onlinesparse:VBLSRegressor",
            "variational Bayesian least squares with ARD precisions (linear in the inputs)",
            multi_target="onlinesparse:VBLSMultiTargetRegressor",
        ),
        ModelSpec(
            "vbls-kernel",
            "onlinesparse:VBLSKernelRegressor",
            "VBLS over kernel basis functions (VBLS-RVM)",
            (
                # (its range is the estimator's own check: one rule for both)
                ModelParam("max-basis", "max_basis", int, help="budget of basis functions"),
            ),
        ),
        ModelSpec(
            "lin1",
            "onlinesparse.lin1:Lin1Regressor",
            "DELVE lin-1: least squares through an SVD, Gaussian predictive distribution",
            (
                ModelParam(
                    "rcond", "rcond", float,
                    help="singular values below rcond × the largest are treated as zero",
                ),
            ),
            multi_target="onlinesparse.lin1:Lin1MultiTargetRegressor",
        ),
        ModelSpec(
            "linear",
            "onlinesparse.replay.models:river_linear",
            "river's LinearRegression trained by SGD (baseline, always available)",
            (
                ModelParam("l2", "l2", float, low=0.0, help="ridge penalty"),
                ModelParam(
                    "lr", "lr", float, low=0.0, high=10.0, low_inclusive=False,
                    help="SGD learning rate",
                ),
                ModelParam(
                    "intercept-lr", "intercept_lr", float, low=0.0, high=10.0,
                    low_inclusive=False, help="learning rate of the intercept",
                ),
            ),
        ),
    )
}


def river_linear(l2: float = 0.0, lr: float = 0.005, intercept_lr: float = 0.01):
    """river's :class:`~river.linear_model.LinearRegression` with an SGD learning rate.

    Parameters
    ----------
    l2
        Ridge penalty on the weights: larger values shrink them, trading bias for stability
        with correlated inputs.
    lr
        Learning rate of plain SGD on the weights: larger follows faster but may diverge.
    intercept_lr
        Learning rate of the intercept.

    The default rate is half river's 0.01, at which SGD diverged on the demo's 48
    correlated standardised inputs (early z-scores are large while the scaler has seen
    little); 0.005 converged there.

    Examples
    --------
    >>> model = river_linear(lr=0.05)
    >>> model.learn_one({"a": 1.0}, 2.0)
    >>> round(model.predict_one({"a": 1.0}), 3)
    0.24

    """
    from river import linear_model, optim

    return linear_model.LinearRegression(
        optimizer=optim.SGD(lr), l2=l2, intercept_lr=intercept_lr
    )


def get_spec(name: str) -> ModelSpec:
    """The registry entry for ``name``, or a usage error listing the known names."""
    try:
        return MODELS[name]
    except KeyError:
        raise UsageError(
            f"unknown model {name!r}; choose one of: {', '.join(MODELS)}"
        ) from None


def resolve(name: str, multi_target: bool = False) -> Callable[..., Any]:
    """Import the class (or factory) behind model ``name``; with ``multi_target``, its
    multi-output form (:attr:`ModelSpec.multi_target`).

    Raises
    ------
    ModelUnavailable
        When the module or attribute does not exist in this installation, or the model has
        no multi-output form.

    """
    spec = get_spec(name)
    path = spec.multi_target if multi_target else spec.path
    if path is None:
        raise ModelUnavailable(f"model {name!r} has no multi-output form")
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        what = "the multi-output form of model" if multi_target else "model"
        raise ModelUnavailable(
            f"{what} {name!r} is not available in this installation "
            f"({path.replace(':', '.')} cannot be imported: {exc})"
        ) from None
    return obj


def sees_last_target(name: str, params: Mapping[str, Any]) -> bool:
    """Whether model ``name`` built with ``params`` weighs the last target in as an expert
    (the stream layer's ``last_target``, on by default in ours): its scores then include
    what persistence gives, which a decoder that never sees past targets will not have."""
    try:
        parameter = inspect.signature(resolve(name)).parameters.get("last_target")
    except (UsageError, ModelUnavailable, TypeError, ValueError):  # (no such model here)
        return False
    if parameter is None:
        return False
    return bool(params.get("last_target", parameter.default))


def multi_target_form(name: str) -> Callable[..., Any] | None:
    """The class of model ``name``'s multi-output form, or ``None`` when the registry gives
    it none or it cannot be imported here (the replay then keeps one model per target)."""
    try:
        return resolve(name, multi_target=True)
    except ModelUnavailable:
        return None


def shares_model(name: str, n_targets: int, separate: bool = False) -> bool:
    """Whether a replay of ``n_targets`` targets through model ``name`` fits one model shared
    by them: several targets, not ``separate``, and a multi-output form in the registry.

    >>> shares_model("linear", 3)  # river's linear models have no multi-output form
    False
    >>> shares_model("rbf", 1)
    False

    """
    return n_targets > 1 and not separate and multi_target_form(name) is not None


def is_available(name: str) -> bool:
    """Whether model ``name`` can be imported here."""
    try:
        resolve(name)
    except ModelUnavailable:
        return False
    return True


def available_models() -> list[str]:
    """Names of the registered models that can be imported here, in registry order."""
    return [name for name in MODELS if is_available(name)]


def parse_param_assignment(text: str) -> tuple[str, Any]:
    """Parse ``KEY=VALUE`` from ``--param``: the value as a Python literal, else a string.

    Examples
    --------
    >>> parse_param_assignment("window_size=500")
    ('window_size', 500)
    >>> parse_param_assignment("kernel=gaussian")
    ('kernel', 'gaussian')

    """
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key.isidentifier():
        raise UsageError(f"--param expects KEY=VALUE with a keyword name, got {text!r}")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()
    return key, value


def _check_keywords(name: str, factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return
    parameters = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = [n for n, p in parameters.items() if n != "self" and p.kind != p.VAR_POSITIONAL]
    for key in kwargs:
        if key not in parameters:
            raise UsageError(
                f"model {name!r} does not take a parameter {key!r} "
                f"(its parameters: {', '.join(accepted) or 'none'})"
            )


def check_value(name: str, kwarg: str, value: Any) -> None:
    """Refuse ``value`` for constructor keyword ``kwarg`` of model ``name`` the way the
    estimator itself does (its constructor validates: one rule for the command line and
    the library), as a :class:`UsageError`; a model that does not take ``kwarg`` is left
    to :func:`build_model` to report."""
    try:
        factory = resolve(name)
        factory(**{kwarg: value})
    except TypeError:
        return  # (not a keyword of this model, or a factory that needs more)
    except ValueError as exc:
        raise UsageError(f"--{kwarg.replace('_', '-')}: {exc}") from None


def build_model(
    name: str,
    params: Mapping[str, Any] | None = None,
    standardize: bool = True,
    multi_target: bool = False,
):
    """Build model ``name`` with constructor keywords ``params``.

    Parameters
    ----------
    name
        A key of :data:`MODELS`.
    params
        Constructor keywords, already parsed (see :meth:`ModelParam.parse`).
    standardize
        Put a :class:`river.preprocessing.StandardScaler` in front of the model. In a river
        pipeline the scaler's statistics are updated by ``learn_one`` only, so a prediction
        uses statistics of past samples only.
    multi_target
        Build the model's multi-output form (one model for several targets, ``learn_one``
        taking a dict of targets) rather than the model itself.

    Examples
    --------
    >>> model = build_model("linear", {"lr": 0.05})
    >>> list(model.steps)
    ['StandardScaler', 'LinearRegression']

    """
    factory = resolve(name, multi_target)
    kwargs = dict(params or {})
    _check_keywords(name, factory, kwargs)
    try:
        model = factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"model {name!r} rejected its parameters: {exc}") from None
    if standardize:
        from river import preprocessing

        model = preprocessing.StandardScaler() | model
    return model


def last_step(model: Any) -> Any:
    """The estimator itself: the last step of a river pipeline, else the model."""
    steps = getattr(model, "steps", None)
    if isinstance(steps, Mapping) and steps:
        return next(reversed(steps.values()))
    return model


def supports_with_dist(model: Any) -> bool:
    """Whether ``predict_one`` of the model's last step takes ``with_dist``."""
    try:
        parameters = inspect.signature(last_step(model).predict_one).parameters
    except (AttributeError, TypeError, ValueError):
        return False
    return "with_dist" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


def input_relevance(model: Any) -> tuple[dict[Any, float] | None, str]:
    """Relevance of each input and a sentence saying where it comes from.

    The model's own ``input_relevance()`` when it has one. For a river linear model, which
    has none, the absolute weights stand in for it: behind a standard scaler they are the
    effect of one standard deviation of the input, which is a fair relevance score.
    Otherwise ``(None, reason)``.
    """
    est = last_step(model)
    method = getattr(est, "input_relevance", None)
    if callable(method):
        scores = {k: float(v) for k, v in dict(method()).items()}
        return scores, f"{type(est).__name__}.input_relevance()"
    weights = getattr(est, "weights", None)
    if isinstance(weights, Mapping) and weights:
        scaled = est is not model
        what = "standardised input" if scaled else "input (not standardised)"
        return (
            {k: abs(float(v)) for k, v in weights.items()},
            f"|weight| of each {what} of {type(est).__name__} (it has no input_relevance())",
        )
    return None, f"{type(est).__name__} has no input_relevance()"


@dataclass(frozen=True)
class ParameterDoc:
    """One constructor parameter of a model, as ``onlinesparse models NAME`` shows it."""

    name: str
    default: str
    option: str  # the command-line option that sets it, or "" (then --param NAME=VALUE)
    meaning: str


def _docstring_parameters(doc: str) -> dict[str, str]:
    """``{name: description}`` from the numpydoc ``Parameters`` section of ``doc``."""
    lines = inspect.cleandoc(doc or "").splitlines()
    out: dict[str, str] = {}
    try:
        start = next(i for i, line in enumerate(lines[:-1])
                     if line.strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        return out
    current: list[str] | None = None
    for i, line in enumerate(lines[start + 2:], start + 2):
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line and not line[0].isspace():
            if nxt and set(nxt) == {"-"}:  # the next section starts
                break
            current = []
            for name in line.split(":")[0].split(","):
                out[name.strip()] = current  # type: ignore[assignment]
        elif current is not None and line.strip():
            current.append(line.strip())
    return {k: " ".join(v) for k, v in out.items()}  # type: ignore[arg-type]


def _first_sentence(text: str) -> str:
    """The first sentence of a docstring entry, with reStructuredText markup removed."""
    import re

    text = re.sub(r":[a-z]+:`~?([^`]*)`", lambda m: m.group(1).split(".")[-1], text)
    text = text.replace("``", "")
    # A full stop ends the sentence when a capital letter follows, unless it ends an
    # abbreviation ("eq. 5", "e.g. A").
    for m in re.finditer(r"\.(\s+)(?=[A-Z(])", text):
        before = text[: m.start()].rsplit(" ", 1)[-1].lower()
        if before not in ("eq", "eqs", "e.g", "i.e", "cf", "fig", "sec", "al"):
            return text[: m.start() + 1]
    return text


def describe_parameters(name: str) -> list[ParameterDoc]:
    """Every constructor parameter of model ``name``: default, option and meaning.

    The meaning is the first sentence of the parameter's entry in the class docstring (the
    full entry is in ``help(...)``), so the listing cannot drift from the code.

    Examples
    --------
    >>> [(p.name, p.default, p.option) for p in describe_parameters("linear")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('l2', '0.0', '--l2'), ('lr', '0.005', '--lr'), ('intercept_lr', '0.01', '--intercept-lr')]
    >>> [p.option for p in describe_parameters("rbf")][:2]
    ['--max-basis', '']

    """
    spec = get_spec(name)
    factory = resolve(name)
    flags = {p.kwarg: f"--{p.flag}" for p in spec.params}
    docs = _docstring_parameters(factory.__doc__ or "")
    if not docs and isinstance(factory, type):
        docs = _docstring_parameters(factory.__init__.__doc__ or "")
    out = []
    for pname, p in inspect.signature(factory).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = "(required)" if p.default is p.empty else repr(p.default)
        meaning = _first_sentence(docs.get(pname, "")) or "(not documented)"
        out.append(ParameterDoc(pname, default, flags.get(pname, ""),
                                meaning))
    return out


def relevance_decisions(model: Any) -> tuple[list[str] | None, float | None]:
    """The inputs the model itself declares relevant, and the score above which it does.

    From the last step's ``relevance() -> {input: bool}`` when it has one (the VBLS family's
    ARD decision: Ting et al. (2005) section 4.2); the score cut-off is
    ``1 / (1 + relevance_threshold)`` on the scale of its ``input_relevance()``. ``(None,
    None)`` for a model that makes no such decision.
    """
    est = last_step(model)
    method = getattr(est, "relevance", None)
    if not callable(method):
        return None, None
    decided = dict(method())
    threshold = getattr(est, "relevance_threshold", None)
    cutoff = 1.0 / (1.0 + float(threshold)) if isinstance(threshold, int | float) else None
    return [str(k) for k, v in decided.items() if v], cutoff


def basis_budget(model: Any) -> float | None:
    """The model's budget of basis functions (``max_basis``), or ``None`` when it has none."""
    value = getattr(last_step(model), "max_basis", None)
    return float(value) if isinstance(value, int | float) else None


def has_basis_functions(model: Any) -> bool:
    """Whether the model is built of basis functions it chooses (it then has a budget,
    ``max_basis``): an RBF network or VBLS over kernels, not a model linear in its inputs,
    whose ``n_basis`` diagnostic counts inputs."""
    return basis_budget(model) is not None


# Modules (and packages) whose models run the compiled loops that onlinesparse.warm_up()
# loads: the RBF network's in either form, and every VBLS form.
_COMPILED_MODULES = ("onlinesparse.orr", "onlinesparse.vbls", "onlinesparse.stream.wrapper")
_WARMED: list[bool] = []  # non-empty once onlinesparse.warm_up() ran in this process


def warm_up_model(model: Any, xs: Sequence[Mapping[str, float]], ys: Sequence[Any]) -> float:
    """Pay, before the replay is timed, what a model pays only on its first samples.

    Loads (or compiles) the library's compiled loops with :func:`onlinesparse.warm_up` when
    the model uses them (once per process), then drives a throwaway clone of the model (same
    parameters, fresh state) through ``xs`` and ``ys`` (a few rows of the recording) so that
    any other first-call cost of its code paths is paid too (``ys`` holds a dict of targets
    per row for a multi-output model). ``model`` itself is not touched.
    Returns the seconds it took.
    """
    import time

    started = time.perf_counter()
    est = last_step(model)
    module = type(est).__module__
    compiled = any(module == m or module.startswith(m + ".") for m in _COMPILED_MODULES)
    if compiled and not _WARMED:
        from onlinesparse import warm_up

        warm_up()  # once per process: the loaded machine code stays loaded
        _WARMED.append(True)
    clone = model.clone()
    has_dist = supports_with_dist(clone)
    for x, y in zip(xs, ys, strict=True):
        clone.predict_one(x, with_dist=True) if has_dist else clone.predict_one(x)
        clone.learn_one(x, y)
    return time.perf_counter() - started
