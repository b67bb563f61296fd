"""Choosing a model's settings: a grid of settings replayed with progressive validation.

:func:`evaluate_grid` (``onlinesparse grid``) replays every setting of a grid on a recording
through :func:`~onlinesparse.replay.parallel.replay_many` (local processes or a Dask client)
and ranks the settings by a metric averaged over the targets.

A grid always holds two reference rows besides its own settings: each model's **default**
setting (a grid of radii that never contains the default cannot show that the default beats
all of them) and a **linear baseline**, lin-1 (the DELVE linear model, exact least squares),
which says whether a nonlinear model earns its cost. The key ``model`` compares models:
``model=rbf,vbls,lin1``; another key then applies to the models that take it.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from onlinesparse.replay import models as registry
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.jobs import JobResult, ReplayJob
from onlinesparse.replay.parallel import replay_many

if TYPE_CHECKING:  # only for annotations
    from distributed import Client

__all__ = ["GRID_METRICS", "parse_grid", "grid_settings", "grid_candidates", "GridRow",
           "GridResult", "evaluate_grid", "format_grid", "BASELINE_MODEL"]

#: Metrics a grid can be ranked by, and whether larger is better.
GRID_METRICS: dict[str, bool] = {"nmse": False, "rmse": False, "mae": False, "r2": True}
_METRIC_LABELS = {"nmse": "nMSE", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}


def _grid_values(key: str, raw: str, model: str) -> list[Any]:
    """The values of one ``KEY=V1,V2,…``: checked by the model's parameter when it has
    one, else Python literals (tuples such as ``(0.5,1.0),(1.0,2.0)`` allowed), else
    strings."""
    spec = registry.get_spec(model)
    param = spec.param(key.replace("_", "-")) or next(
        (p for p in spec.params if p.kwarg == key), None
    )
    try:
        values = ast.literal_eval(f"[{raw}]")
        if not isinstance(values, list):
            raise ValueError(raw)
    except (ValueError, SyntaxError):
        values = [v.strip() for v in raw.split(",")]
    if param is not None:
        values = [param.parse(v) for v in values]
    if not values or any(v == "" for v in values):
        raise UsageError(f"--grid {key}=… needs values separated by commas, got {raw!r}")
    for value in values:  # (the estimator's own range check, before any job runs)
        registry.check_value(model, param.kwarg if param is not None else key, value)
    return values


#: The model of the linear baseline row every grid includes.
BASELINE_MODEL = "lin1"


def parse_grid(assignments: Sequence[str], model: str) -> dict[str, list[Any]]:
    """Parse ``--grid KEY=V1,V2,…`` options into ``{constructor keyword: values}``.

    ``KEY`` is a constructor keyword of the model (``max_basis``) or its command-line flag
    (``max-basis``), whose type and range then check each value.

    Examples
    --------
    >>> parse_grid(["max-basis=10,20", "window_size=200,500"], "rbf")
    {'max_basis': [10, 20], 'window_size': [200, 500]}
    >>> parse_grid(["radii=(0.5,),(1.0, 2.0)", "kernel=gaussian,cauchy"], "rbf")
    {'radii': [(0.5,), (1.0, 2.0)], 'kernel': ['gaussian', 'cauchy']}
    >>> parse_grid(["model=rbf,lin1", "max-basis=10,20"], "rbf")
    {'model': ['rbf', 'lin1'], 'max_basis': [10, 20]}
    >>> parse_grid(["max-basis=10,0"], "rbf")
    Traceback (most recent call last):
    ...
    onlinesparse.replay.errors.UsageError: --max-basis: max_basis must be an integer ≥ 1, got 0

    """
    grid: dict[str, list[Any]] = {}
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        spec = registry.get_spec(model)
        param = spec.param(key)
        kwarg = param.kwarg if param is not None else key.replace("-", "_")
        if not sep or not kwarg.isidentifier():
            raise UsageError(f"--grid expects KEY=V1,V2,... with a keyword name, got {text!r}")
        if kwarg in grid:
            raise UsageError(f"--grid {kwarg} is given twice")
        if kwarg == "model":
            names = [v.strip() for v in raw.split(",") if v.strip()]
            for name in names:
                registry.get_spec(name)  # an unknown name is a usage error naming the choices
            if not names:
                raise UsageError("--grid model=… needs model names separated by commas")
            grid["model"] = names
            continue
        grid[kwarg] = _grid_values(kwarg, raw.strip(), model)
    if not grid:
        raise UsageError("give at least one --grid KEY=V1,V2,...")
    return grid


def grid_settings(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, the last key varying fastest.

    >>> grid_settings({"a": [1, 2], "b": ["x", "y"]})
    [{'a': 1, 'b': 'x'}, {'a': 1, 'b': 'y'}, {'a': 2, 'b': 'x'}, {'a': 2, 'b': 'y'}]

    """
    keys = list(grid)
    return [dict(zip(keys, values, strict=True))
            for values in itertools.product(*(grid[k] for k in keys))]


def _label(setting: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in setting.items())


@dataclass
class GridRow:
    """One setting of a grid: its results per target and its score.

    ``role`` is ``"grid"`` for a setting of the grid, ``"default"`` for a model's defaults
    (added when the grid lacks them) and ``"baseline"`` for the linear baseline.
    """

    setting: dict[str, Any]
    results: list[JobResult]
    score: float | None
    means: dict[str, float | None]
    model: str = ""
    role: str = "grid"

    @property
    def ok(self) -> bool:
        """Whether every target's replay of this setting ran to its end."""
        return all(r.ok for r in self.results)


@dataclass
class GridResult:
    """A grid's settings ranked by ``metric`` averaged over the targets, best first.

    Settings with a failed replay have no score and come last.
    """

    recording: Path
    targets: list[str]
    model: str
    params: dict[str, Any]
    metric: str
    rows: list[GridRow]

    @property
    def best(self) -> GridRow | None:
        """The best setting, or ``None`` when no setting completed."""
        return self.rows[0] if self.rows and self.rows[0].score is not None else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: every setting, its mean metrics and per-target metrics, and the best."""
        return {
            "recording": str(self.recording),
            "targets": self.targets,
            "model": self.model,
            "params": self.params,
            "metric": self.metric,
            "best": {"model": self.best.model, **self.best.setting} if self.best else None,
            "settings": [
                {
                    "model": row.model,
                    "role": row.role,
                    "setting": row.setting,
                    "score": row.score,
                    "means": row.means,
                    "targets": {
                        r.job.target: {"status": r.status, "error": r.error,
                                       "metrics": r.metrics}
                        for r in row.results
                    },
                }
                for row in self.rows
            ],
        }


def _mean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None or not math.isfinite(v) for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


def evaluate_grid(
    recording: str | Path,
    targets: Sequence[str],
    grid: Mapping[str, Sequence[Any]],
    model: str = "rbf",
    params: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    metric: str = "nmse",
    client: Client | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    stream: TextIO | None = None,
) -> GridResult:
    """Replay every setting of ``grid`` with progressive validation and rank the settings.

    Each setting replays every target over the whole recording: every sample is predicted
    before it is learned, so the score is an honest out-of-sample error of the model as it
    would have run live, with no folds to hold out (what the papers' 5-fold
    cross-validation of the kernel width estimates on a batch).

    Parameters
    ----------
    recording
        The recording.
    targets
        The target columns; a setting's score is ``metric`` averaged over them.
    grid
        ``{constructor keyword: values}`` (see :func:`parse_grid`).
    model
        The model's registry name.
    params
        Constructor keywords shared by every setting (the grid's values override them).
    options
        Other fields of :class:`~onlinesparse.replay.config.ReplayConfig` (``features``,
        ``time``, ``warmup``, …).
    metric
        One of :data:`GRID_METRICS`.
    client, workers, progress, stream
        As for :func:`replay_many`.

    Raises
    ------
    UsageError
        For an unknown metric, or a setting the model rejects (checked before anything
        runs).

    """
    if metric not in GRID_METRICS:
        raise UsageError(f"unknown metric {metric!r}; choose one of: {', '.join(GRID_METRICS)}")
    if not targets:
        raise UsageError("a grid needs at least one target")
    params = dict(params or {})
    options = dict(options or {})
    standardize = options.get("standardize", True)
    candidates = grid_candidates(grid, model, params)
    for name, setting, _ in candidates:  # a setting a model rejects is a usage error, first
        registry.build_model(name, setting, standardize)
    jobs = [
        ReplayJob(recording, target, name, setting, options=options,
                  name=f"{name}: {_label(setting) or 'defaults'} / {target}",
                  targets=list(targets))
        for name, setting, _ in candidates
        for target in targets
    ]
    results = replay_many(jobs, client, workers=workers, progress=progress, stream=stream)
    larger_is_better = GRID_METRICS[metric]
    rows = []
    for k, (name, setting, role) in enumerate(candidates):
        mine = results[k * len(targets) : (k + 1) * len(targets)]
        # A diverged replay ran to its end: its scores are shown, but it is not ranked.
        scored = all(r.ok or r.status == "diverged" for r in mine)
        means = {
            m: _mean([r.metrics.get(m) for r in mine]) if scored else None
            for m in ("nmse", "rmse", "mae", "r2", "coverage")
        }
        means["latency_us_median"] = (
            _mean([r.metrics["latency_us"]["median"] for r in mine]) if scored else None
        )
        shown = {k: v for k, v in setting.items() if k not in params}
        score = means[metric] if all(r.ok for r in mine) else None
        rows.append(GridRow(shown, mine, score, means, name, role))
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i].score is None,
            0.0 if rows[i].score is None
            else (-rows[i].score if larger_is_better else rows[i].score),
            i,
        ),
    )
    return GridResult(Path(recording), list(targets), model, params, metric,
                      [rows[i] for i in order])


def _accepted(name: str) -> set[str] | None:
    """The constructor keywords of model ``name`` (``None``: any, or unknown)."""
    import inspect

    try:
        parameters = inspect.signature(registry.resolve(name)).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return None
    return set(parameters)


def grid_candidates(grid: Mapping[str, Sequence[Any]], model: str,
                    params: Mapping[str, Any] | None = None
                    ) -> list[tuple[str, dict[str, Any], str]]:
    """``(model, constructor keywords, role)`` of every row a grid replays.

    The grid's settings for each model of its ``model`` key (default: ``model``), each
    keeping the keys that model takes; then each model's defaults when no setting of the grid
    is them; then the linear baseline unless the grid has it already. ``params`` (shared
    keywords) go to every model that takes them.

    Examples
    --------
    >>> for row in grid_candidates({"model": ["rbf", "vbls"], "max_basis": [20, 100]}, "rbf"):
    ...     print(row)
    ('rbf', {'max_basis': 20}, 'grid')
    ('rbf', {'max_basis': 100}, 'grid')
    ('vbls', {}, 'grid')
    ('lin1', {}, 'baseline')

    """
    params = dict(params or {})
    rest = {k: v for k, v in grid.items() if k != "model"}
    names = list(grid.get("model", [model]))
    accepts = {name: _accepted(name) for name in names}
    for key in [*rest, *params]:
        if len(names) > 1 and all(a is not None and key not in a for a in accepts.values()):
            raise UsageError(f"no model of the grid ({', '.join(names)}) takes a parameter "
                             f"{key!r}")
    out: list[tuple[str, dict[str, Any], str]] = []
    for name in names:
        # One model: keep every key, so that build_model names one it does not take.
        accepted = accepts[name] if len(names) > 1 else None
        keep = {k: v for k, v in rest.items() if accepted is None or k in accepted}
        shared = {k: v for k, v in params.items() if accepted is None or k in accepted}
        rows = [{**shared, **s} for s in (grid_settings(keep) if keep else [{}])]
        for setting in rows:
            if (name, setting) not in [(n, s) for n, s, _ in out]:
                out.append((name, setting, "grid"))
        if not any(_is_default(name, s, shared) for s in rows):
            out.append((name, dict(shared), "default"))
    if BASELINE_MODEL in registry.MODELS and not any(
            n == BASELINE_MODEL and _is_default(n, s, {}) for n, s, _ in out):
        out.append((BASELINE_MODEL, {}, "baseline"))
    return out


def _is_default(name: str, setting: Mapping[str, Any], shared: Mapping[str, Any]) -> bool:
    """Whether ``setting`` is model ``name``'s default apart from the shared keywords."""
    import inspect

    try:
        parameters = inspect.signature(registry.resolve(name)).parameters
    except (TypeError, ValueError):
        return not (set(setting) - set(shared))
    return all(k in shared or (k in parameters and parameters[k].default == v)
               for k, v in setting.items())


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "—" if value is None or not math.isfinite(value) else format(value, spec)


def _row_status(row: GridRow) -> str:
    """``ok``, ``diverged`` or ``failed``, with how many of the row's targets when not all.

    A replay *diverged* when its nMSE is above
    :data:`~onlinesparse.replay.metrics.DIVERGED_NMSE` (10⁶) or not finite: it ran to its
    end, but its model learned nothing usable.
    """
    failed = sum(not r.ok and r.status != "diverged" for r in row.results)
    diverged = sum(r.status == "diverged" for r in row.results)
    n = len(row.results)
    if failed:
        return "failed" if failed == n else f"{failed}/{n} failed"
    if diverged:
        return "diverged" if diverged == n else f"{diverged}/{n} diverged"
    return "ok"


def format_grid(result: GridResult) -> str:
    """The ranked table ``onlinesparse grid`` prints; a key a row's model does not take, or
    leaves at its default, shows as ``·``."""
    keys = list(dict.fromkeys(k for row in result.rows for k in row.setting))
    header = ["rank", "model", "row", *keys, "nMSE", "RMSE", "MAE", "R²", "coverage",
              "µs med", "status"]
    table = [header]
    for rank, row in enumerate(result.rows, 1):
        m = row.means
        status = _row_status(row)
        table.append([
            str(rank) if row.score is not None else "-", row.model, row.role,
            *(repr(row.setting[k]) if k in row.setting else "·" for k in keys),
            _fmt(m["nmse"]), _fmt(m["rmse"]), _fmt(m["mae"]), _fmt(m["r2"]),
            _fmt(m["coverage"], ".3f"), _fmt(m["latency_us_median"], ".1f"), status,
        ])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
