"""A target's result from its replay state: the metrics of ``metrics.json`` and the report's
inputs, whether the target completed, stopped or lost its worker."""

from __future__ import annotations

import contextlib
from typing import Any

from onlinesparse.replay import models as registry
from onlinesparse.replay.config import ReplayConfig, TargetResult
from onlinesparse.replay.reader import Recording

__all__ = ["summarise", "diagnostics"]


def diagnostics(model: Any) -> dict[str, float]:
    """The numbers of the model's ``diagnostics()`` (of a pipeline's last step); ``{}``
    when it has none."""
    method = getattr(registry.last_step(model), "diagnostics", None)
    if not callable(method):
        return {}
    return {k: float(v) for k, v in dict(method()).items() if isinstance(v, int | float)}


def summarise(
    cfg: ReplayConfig,
    state: Any,
    status: str,
    message: str | None,
    recording: Recording,
    checkpoint_path: str | None,
    has_dist: bool,
) -> TargetResult:
    """The result of a target: its metrics as in ``metrics.json``, and what the report needs.

    ``state`` is the target's replay state (``target._TargetState``): its counts, its
    accumulators and, when it has them, its streaming :mod:`recording checks
    <onlinesparse.replay.stream_checks>`.
    """
    relevance, relevance_source, findings = _model_findings(state.model)
    cpu = getattr(state, "cpu_latency", None)  # None in a checkpoint written before it
    pauses = getattr(state, "gc_pauses", None)  # likewise
    metrics = {
        "status": status,
        "message": message,
        "rows_read": state.position,
        "samples": state.n_samples,
        "warmup": min(cfg.warmup, state.n_samples),
        **state.acc.as_dict(),
        "interval": cfg.interval,
        **_row_counts(cfg, state, recording),
        "latency_us": state.latency.as_dict(),
        "cpu_us": cpu.as_dict() if cpu is not None else None,
        # Collections run between rows, outside the timed calls: Python's pauses, not the
        # model's.
        "gc_pauses_us": pauses.as_dict() if pauses is not None else None,
        "budget_us": cfg.budget_us,
        "deadline_misses": getattr(state, "deadline_misses", None) if cfg.budget_us else None,
        "warm_up_s": None,
        "elapsed_s": state.elapsed,
        # The model is warmed up before the clock starts: the rate of the replay itself,
        # not of compiling the model.
        "rows_per_second": state.n_samples / state.elapsed if state.elapsed > 0 else None,
        **findings,
        "relevance_source": relevance_source,
        "checkpoint": checkpoint_path,
    }
    return TargetResult(
        target=state.target,
        status=status,
        message=message,
        metrics=metrics,
        latency=state.latency,
        trace=state.trace,
        relevance={str(k): v for k, v in relevance.items()} if relevance else None,
        relevance_source=relevance_source,
        spool_path=state.spool_path,
        n_predictions=state.n_predictions,
        checkpoint_path=checkpoint_path,
        has_dist=has_dist,
        cpu_latency=cpu,
        gc_pauses=pauses,
        finished=getattr(state, "finished", False),
    )


def _row_counts(cfg: ReplayConfig, state: Any, recording: Recording) -> dict[str, Any]:
    """The rows that were not replayed as they came: corrupt, non-finite predictions,
    missing values imputed or targets missing, and the recording checks' findings."""
    checks = getattr(state, "checks", None)
    return {
        "corrupt_rows": state.n_corrupt,
        "corrupt_examples": [
            {"row": r, "where": recording.describe_row(r), "reason": why}
            for r, why in state.corrupt_examples
        ],
        "nonfinite_predictions": state.n_nonfinite,
        # (getattr: a checkpoint saved before the missing-value policy lacks these)
        "missing": cfg.missing,
        "imputed_rows": getattr(state, "n_imputed", 0),
        "unlearned_rows": getattr(state, "n_unlearned", 0),
        "recording_checks": checks.as_dict() if checks is not None else None,
    }


def _model_findings(model: Any) -> tuple[dict[Any, float] | None, str, dict[str, Any]]:
    """The model's input relevance, where it comes from, and the metrics that describe the
    model itself (its basis budget and whether it has basis functions at all, its own
    relevance decisions, its last diagnostics); a diagnostic that fails is left out."""
    relevance, source, findings = None, "no model", {
        "basis_budget": None, "has_basis": False, "relevant_inputs": None,
        "relevance_cutoff": None, "diagnostics": {},
    }
    if model is None:
        return relevance, source, findings
    try:
        relevance, source = registry.input_relevance(model)
    except Exception as exc:  # a diagnostic must not lose the replay's results
        relevance, source = None, f"input_relevance() failed: {exc}"
    with contextlib.suppress(Exception):
        findings["diagnostics"] = diagnostics(model)
    with contextlib.suppress(Exception):  # as above
        findings["relevant_inputs"], findings["relevance_cutoff"] = (
            registry.relevance_decisions(model))
        findings["basis_budget"] = registry.basis_budget(model)
        findings["has_basis"] = registry.has_basis_functions(model)
    return relevance, source, findings
