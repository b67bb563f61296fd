"""The results of a replay through a model shared by its targets (:mod:`.shared`): each
target's, as a replay of it alone reports them, and the shared model's own, reported once.

Each target's metrics (``metrics.json``'s ``targets``) are those of a one-target replay, with
``shared_model: true``, ``partial_rows`` (rows scored for the target but learned by no
target, because another lacked its value) and the target's own diagnostics (the shared ones
with its own ``noise_std``); its timing keys are ``None``, because the time per row belongs
to the shared model: ``metrics.json``'s ``shared_model`` section holds it once, with the
shared diagnostics, the input relevance's source and the checkpoint.
"""

from __future__ import annotations

import contextlib
from typing import Any

from onlinesparse.replay import models as registry
from onlinesparse.replay.config import ReplayConfig, SharedResult, TargetResult
from onlinesparse.replay.metrics import LatencyHistogram
from onlinesparse.replay.reader import Columns, Recording
from onlinesparse.replay.summary import _model_findings
from onlinesparse.replay.summary import diagnostics as _diagnostics
from onlinesparse.replay.summary import summarise as _summarise

__all__ = ["summarise_shared", "render_shared_run", "target_diagnostics", "align",
           "SHARED_TIMING_KEYS"]

#: Per-target metrics that belong to the shared model: ``None`` in each target's entry.
SHARED_TIMING_KEYS = ("latency_us", "cpu_us", "gc_pauses_us", "deadline_misses",
                      "warm_up_s", "elapsed_s", "rows_per_second")


def summarise_shared(
    cfg: ReplayConfig,
    state: Any,
    status: str,
    message: str | None,
    recording: Recording,
    checkpoint_path: str | None,
    has_dist: bool,
    warm_up_s: float,
) -> tuple[list[TargetResult], SharedResult]:
    """Each target's result and the shared model's, from the shared replay's ``state``."""
    from onlinesparse.replay.target import diverged_message, why_nothing_scored

    relevance, source, findings = _model_findings(state.model)
    own: dict[str, dict[str, float]] = {}
    with contextlib.suppress(Exception):
        own = target_diagnostics(state.model)
    results = []
    for target, view in state.views.items():
        align(view, state)
        status_t, message_t = status, message
        if status in ("completed", "nothing_scored") and view.acc.n == 0:
            status_t = "nothing_scored"
            message_t = why_nothing_scored(cfg, view, recording.path.name)
        elif status in ("completed", "stopped") and view.acc.diverged:
            status_t, message_t = "diverged", diverged_message(view.acc)
        result = _summarise(cfg, view, status_t, message_t, recording, checkpoint_path,
                            has_dist)
        result.metrics.update(
            {key: None for key in SHARED_TIMING_KEYS},
            shared_model=True,
            partial_rows=view.n_partial,
            **{k: findings[k] for k in ("basis_budget", "has_basis", "relevant_inputs",
                                        "relevance_cutoff")},
            diagnostics={**findings["diagnostics"], **own.get(target, {})},
            relevance_source="the model shared by the targets: see its section",
        )
        result.latency, result.cpu_latency, result.gc_pauses = (
            LatencyHistogram(), None, None)
        results.append(result)
    shared = SharedResult(
        targets=list(state.targets), status=status, message=message,
        metrics=_shared_metrics(cfg, state, status, message, findings, own, source,
                                checkpoint_path, warm_up_s),
        latency=state.latency, cpu_latency=state.cpu_latency, trace=state.trace,
        relevance={str(k): v for k, v in relevance.items()} if relevance else None,
        relevance_source=source, has_dist=has_dist,
    )
    return results, shared


def align(view: Any, state: Any) -> None:
    """What a target's state shares with the model's: rows read and learned, time."""
    view.position, view.n_samples = state.position, state.n_samples
    view.n_imputed, view.finished, view.elapsed = state.n_imputed, state.finished, 0.0


def _shared_metrics(cfg: ReplayConfig, state: Any, status: str, message: str | None,
                    findings: dict[str, Any], own: dict[str, dict[str, float]], source: str,
                    checkpoint_path: str | None, warm_up_s: float) -> dict[str, Any]:
    """``metrics.json``'s ``shared_model`` section."""
    return {
        "targets": list(state.targets),
        "status": status,
        "message": message,
        "rows_read": state.position,
        "samples": state.n_samples,  # rows learned: every target present
        "warmup": min(cfg.warmup, state.n_samples),
        "partial_rows": state.n_partial,
        "corrupt_rows": state.n_corrupt,  # rows corrupt for every target
        "imputed_rows": state.n_imputed,
        "n_timed": state.latency.n,
        "latency_us": state.latency.as_dict(),
        "cpu_us": state.cpu_latency.as_dict(),
        "gc_pauses_us": state.gc_pauses.as_dict(),
        "budget_us": cfg.budget_us,
        "deadline_misses": state.deadline_misses if cfg.budget_us else None,
        "warm_up_s": warm_up_s,
        "elapsed_s": state.elapsed,
        "rows_per_second": state.n_samples / state.elapsed if state.elapsed > 0 else None,
        **findings,
        "target_diagnostics": own,
        "relevance_source": source,
        "checkpoint": checkpoint_path,
        "model_class": type(registry.last_step(state.model)).__name__,
    }


def render_shared_run(cfg: ReplayConfig, columns: Columns, results: list[TargetResult],
                      shared: SharedResult) -> None:
    """Draw the report's sections of a shared replay: each target's and the shared
    model's (a drawing that fails is recorded in its ``report_error``)."""
    from onlinesparse.replay.outputs import _target_report
    from onlinesparse.replay.report import render_shared, render_target

    label = "time (s)" if columns.time else "row"
    for index, result in enumerate(results):
        try:
            result.section = render_target(_target_report(cfg, result), index=index,
                                           interval=cfg.interval, warmup=cfg.warmup,
                                           time_label=label)
        except Exception as exc:  # the replay's results matter more than its plots
            result.report_error = (f"drawing the report of {result.target!r} failed: "
                                   f"{type(exc).__name__}: {exc}")
    relevant = sorted({f for t in shared.targets for f in (cfg.relevant or {}).get(t, [])})
    try:
        shared.section = render_shared(shared, relevant or None, label)
    except Exception as exc:
        shared.report_error = (f"drawing the report of the shared model failed: "
                               f"{type(exc).__name__}: {exc}")


def target_diagnostics(model: Any) -> dict[str, dict[str, float]]:
    """``{target: {name: value}}`` from the last step's ``target_diagnostics()``, else from
    its ``diagnostics()`` keys ``name[target]`` (lin-1's form); ``{}`` when it has neither
    or they fail."""
    est = registry.last_step(model)
    method = getattr(est, "target_diagnostics", None)
    try:
        if callable(method):
            return {str(t): {k: float(v) for k, v in dict(d).items()
                             if isinstance(v, int | float)} for t, d in dict(method()).items()}
        out: dict[str, dict[str, float]] = {}
        for key, value in _diagnostics(model).items():
            name, bracket, target = key.partition("[")
            if bracket and target.endswith("]"):
                out.setdefault(target[:-1], {})[name] = value
        return out
    except Exception:  # a diagnostic must not stop the replay
        return {}
