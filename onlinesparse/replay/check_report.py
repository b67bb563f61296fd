"""What the checks of a replay found, said once: one console line per kind, and the report's
full list.

The streaming checks (:mod:`~onlinesparse.replay.stream_checks`) run inside each target's
replay; :func:`merge_checks` puts the targets' findings together (the first target's cover
the features, the rows and the times; each target's its own column), :func:`check_lines`
folds them into one line per kind for the console, and :func:`checks_html` lists
everything, the feature warnings included, for the report.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["merge_checks", "check_lines", "checks_html"]

_SHOWN = 3  # findings named on one console line before "… (+N more)"


def merge_checks(results: Sequence[Any]) -> dict[str, Any] | None:
    """The findings of every target's checks as one dictionary (``None`` when no target
    made any: a replay resumed from a checkpoint saved before the checks existed)."""
    found = [r.metrics.get("recording_checks") for r in results]
    found = [f for f in found if f]
    if not found:
        return None
    merged = dict(found[0])
    merged["stuck"] = [s for f in found for s in f["stuck"]]
    merged["constant"] = list(dict.fromkeys(c for f in found for c in f["constant"]))
    missing: dict[str, int] = {}
    for f in found:
        missing.update(f["missing_values"])
    merged["missing_values"] = missing
    merged["unlearned_rows"] = {r.target: r.metrics.get("unlearned_rows", 0) for r in results
                                if r.metrics.get("unlearned_rows")}
    merged["imputed_rows"] = max((r.metrics.get("imputed_rows", 0) for r in results), default=0)
    return merged


def _rows(ranges: Sequence[Sequence[int]], count: int) -> str:
    """``rows 5, 10–12 … (+3 more)`` for a list of ``[first, last]`` ranges."""
    shown = [f"{a:,}" if a == b else f"{a:,}–{b:,}" for a, b in ranges[:_SHOWN]]
    listed = sum(b - a + 1 for a, b in ranges[:_SHOWN])
    more = f" … (+{count - listed:,} more)" if count > listed else ""
    return f"row{'s' * (count > 1)} {', '.join(shown)}{more}"


def _stuck_line(checks: Mapping[str, Any]) -> str | None:
    stuck = checks["stuck"]
    if not stuck:
        return None
    parts = [f"{s['column']} = {s['value']:g} over rows {s['rows'][0]:,}–{s['rows'][1]:,}"
             for s in stuck[:_SHOWN]]
    more = f" … (+{len(stuck) - _SHOWN} more)" if len(stuck) > _SHOWN else ""
    n = len(stuck)
    return (f"{n} stuck channel{'s' * (n > 1)} (one value for ≥ {checks['stuck_min_rows']:,} "
            f"rows after varying): {'; '.join(parts)}{more}")


def check_lines(checks: Mapping[str, Any] | None) -> list[str]:
    """One line per kind of finding of :func:`merge_checks` (none when all is well)."""
    if not checks:
        return []
    lines = [_stuck_line(checks)]
    constant = checks["constant"]
    if constant:
        lines.append("constant over the whole recording: " + ", ".join(constant[:8])
                     + (f" … (+{len(constant) - 8})" if len(constant) > 8 else ""))
    dup = checks["duplicated_rows"]
    if dup["count"]:
        lines.append(f"{dup['count']:,} duplicated row{'s' * (dup['count'] > 1)} (every value "
                     f"equal to the row before): {_rows(dup['ranges'], dup['count'])}")
    for key, what in (("repeated_times", "the same time as the row before"),
                      ("times_going_back", "a time before the row before's")):
        found = checks[key]
        if found["count"]:
            lines.append(f"time column {checks['time_column']!r}: {found['count']:,} "
                         f"row{'s' * (found['count'] > 1)} with {what}: "
                         f"{_rows(found['ranges'], found['count'])}")
    lines.append(_missing_line(checks))
    return [line for line in lines if line]


def _missing_line(checks: Mapping[str, Any]) -> str | None:
    missing, unlearned = checks["missing_values"], checks.get("unlearned_rows") or {}
    if not missing:
        return None
    cells = sum(missing.values())
    top = sorted(missing.items(), key=lambda kv: -kv[1])
    named = ", ".join(f"{k} {v:,}" for k, v in top[:_SHOWN])
    more = f" … (+{len(top) - _SHOWN} columns)" if len(top) > _SHOWN else ""
    tail = ""
    if checks.get("imputed_rows"):
        tail += f"; {checks['imputed_rows']:,} rows predicted with a feature imputed"
    if unlearned:
        tail += "; rows without their target, predicted but not learned: " + ", ".join(
            f"{k} {v:,}" for k, v in unlearned.items())
    return f"{cells:,} missing value{'s' * (cells > 1)}: {named}{more}{tail}"


def checks_html(summary: Mapping[str, Any]) -> str:
    """The report's list of every feature warning and recording finding of ``summary``
    (the top level of ``metrics.json``), folded away when long; ``""`` when there are
    none."""
    warnings = list(summary.get("warnings") or [])
    lines = check_lines(summary.get("recording_checks"))
    stuck = (summary.get("recording_checks") or {}).get("stuck") or []
    parts = []
    if lines:
        items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        if len(stuck) > _SHOWN:
            items += "<li>every stuck stretch: " + html.escape("; ".join(
                f"{s['column']} = {s['value']:g}, rows {s['rows'][0]}–{s['rows'][1]}"
                for s in stuck)) + "</li>"
        parts.append("<p class='note'>Recording checks (rows numbered from 0):</p>"
                     f"<ul>{items}</ul>")
    if warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        head = f"{len(warnings)} warning{'s' * (len(warnings) > 1)} about the features"
        if len(warnings) > 3:
            parts.append(f"<details class='note'><summary>{head}</summary><ul>{items}</ul>"
                         "</details>")
        else:
            parts.append(f"<p class='note'>{head}:</p><ul>{items}</ul>")
    return "".join(parts)
