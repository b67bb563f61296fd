"""The replay report: one self-contained HTML page, its plots embedded as PNG.

The page uses no script, stylesheet, font or image from elsewhere: the plots (drawn by
:mod:`onlinesparse.replay.plots`) are ``data:`` URIs inside it, so ``report.html`` can be
sent on its own. It records what produced it: the command line, the onlinesparse version,
the date, the run time, every model parameter (defaults included) and the features.

For each target the page shows

* the prediction and its predictive interval against the truth over the whole replay, and
  three zoomed windows of it (start, middle and end of the scored part), the way Ting et
  al. (2005) show an EMG trace in their figure 12; the y-range is that of the scored part,
  and when the warm-up transient goes beyond it the full range is one click away;
* the model's diagnostics over time: the error in a moving window always, and the basis-set
  size (with its budget), GCV, noise estimate and effective number of parameters when the
  model reports them;
* the relevance of each input, coloured by the model's own relevant / irrelevant decision
  when it makes one (and, when known, which inputs are truly relevant);
* the wall-clock and CPU time per ``predict_one`` + ``learn_one``: histogram with median,
  99th percentile, worst case and the deadline, and the slowest sample over time with the
  intervals where the model did heavy work.

A plot whose data the model does not provide is left out and the page says why.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onlinesparse.replay import plots
from onlinesparse.replay.metrics import interval_z, trivial_note
from onlinesparse.replay.models import sees_last_target
from onlinesparse.replay.plots import TargetReport, relevance_recovery

__all__ = [
    "TargetReport",
    "TargetSection",
    "render_target",
    "render_shared",
    "write_report",
    "write_comparison_report",
    "relevance_recovery",
    "plot_model_comparison",
]


# ---------------------------------------------------------------------------------------
# HTML

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1150px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}
img{max-width:100%;border:1px solid #eee}.note{color:#7a4b00;background:#fff6e0;
padding:.4em .7em;border-left:3px solid #e0a000;margin:.5em 0}
.meta td{text-align:left}code{background:#f4f4f4;padding:0 .2em}
"""


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.{digits}g}"
    return html.escape(str(value))


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )


def _img(data: bytes, alt: str) -> str:
    """A PNG embedded in the page as a ``data:`` URI."""
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return f"<p><img src='{src}' alt='{html.escape(alt)}'></p>"


@dataclass
class TargetSection:
    """A target's part of the page, drawn (possibly in a worker process) before assembly."""

    name: str
    html: str
    notes: list[str]  # omissions, without the target's name
    metrics: Mapping[str, Any]
    has_dist: bool
    anchor: str


def render_target(
    t: TargetReport,
    plots_dir: str | Path | None = None,
    index: int = 0,
    interval: float = 0.95,
    warmup: int = 0,
    time_label: str = "time (s)",
) -> TargetSection:
    """Draw the plots of one target and return its HTML section, the plots embedded.

    ``plots_dir`` is not used (the plots live inside the page); it is accepted so that
    callers written for the earlier layout keep working.
    """
    del plots_dir
    z = interval_z(interval)
    stem = f"{index:02d}-{_safe_id(t.name)}"
    notes: list[str] = []
    parts = [f"<h2 id='{html.escape(stem)}'>{html.escape(t.name)}</h2>"]
    if t.metrics.get("message"):
        parts.append(f"<p class='note'>{html.escape(str(t.metrics['message']))}</p>")

    main, full = plots.plot_prediction(t, z, warmup, time_label)
    if main is not None:
        parts.append(_img(main, f"{t.name}: prediction against truth"))
        if full is not None:
            parts.append("<details><summary>the whole replay at its full y-range (the "
                         "warm-up transient included)</summary>"
                         + _img(full, f"{t.name}: full range") + "</details>")
        if not t.has_dist:
            notes.append("the model gives no predictive distribution "
                         "(predict_one(x, with_dist=True)), so no interval is drawn and "
                         "coverage is not measured.")
    else:
        notes.append("no predictions to plot.")

    figure, shown = plots.plot_diagnostics(t, time_label)
    if figure is not None:
        parts.append(_img(figure, f"{t.name}: error and model state over time"))
    missing = [k for k in plots.diagnostic_keys(t) if k not in shown
               and k != "effective_parameters"]
    if missing:
        notes.append(f"the model does not report {', '.join(missing)} "
                     "(no diagnostics() or no such keys), so those curves are omitted.")

    parts.extend(_model_parts(t, time_label, notes))
    parts.extend(_corrupt_part(t))
    return TargetSection(t.name, "\n".join(parts), notes, dict(t.metrics), t.has_dist, stem)


def _model_parts(t: TargetReport, time_label: str, notes: list[str]) -> list[str]:
    """A target's own model's input relevance and latency plot (a shared model's are in
    its own section: a note says so)."""
    if t.metrics.get("shared_model"):
        notes.append("one model is shared by these targets: its time per row, its basis "
                     "functions and its input relevance are in the section of the shared "
                     "model.")
        return []
    parts = list(_relevance_part(t, notes))
    figure = plots.plot_latency(t, time_label)
    if figure is not None:
        parts.append(_img(figure, f"{t.name}: latency"))
    else:
        notes.append("no scored samples, so no latency plot.")
    return parts


def _corrupt_part(t: TargetReport) -> list[str]:
    """The corrupt rows a target's replay skipped (the first 20, and how many more)."""
    examples = t.metrics.get("corrupt_examples") or []
    if not examples:
        return []
    shown_examples = examples[:20]
    items = "".join(f"<li>{html.escape(e['where'])}: {html.escape(e['reason'])}</li>"
                    for e in shown_examples)
    more = int(t.metrics.get("corrupt_rows", 0)) - len(shown_examples)
    tail = f"<li>… and {more} more</li>" if more > 0 else ""
    return [f"<p>Corrupt rows skipped ({t.metrics.get('corrupt_rows')}):</p>"
            f"<ul>{items}{tail}</ul>"]


def render_shared(shared: Any, relevant: Sequence[str] | None = None,
                  time_label: str = "time (s)") -> TargetSection:
    """The report's section of a model shared by several targets
    (:class:`~onlinesparse.replay.config.SharedResult`): how it learned, what it found
    relevant and its time per row, each drawn once for all the targets."""
    m = shared.metrics
    name = f"shared model ({', '.join(shared.targets)})"
    t = TargetReport(name, np.empty((0, 5)), m, shared.trace, shared.latency,
                     shared.relevance, shared.relevance_source, relevant, shared.has_dist,
                     shared.cpu_latency)
    notes: list[str] = []
    parts = [f"<h2 id='shared-model'>{html.escape(name)}</h2>",
             f"<p>One {html.escape(str(m.get('model_class') or 'model'))} learned every "
             f"target: {_fmt(m.get('samples'))} rows learned, {_fmt(m.get('partial_rows'))} "
             "rows predicted and scored for the targets they carry but learned by none "
             "(a target was missing or corrupt), "
             f"{_fmt(m.get('corrupt_rows'))} rows corrupt for every target.</p>"]
    if m.get("message"):
        parts.append(f"<p class='note'>{html.escape(str(m['message']))}</p>")
    figure, _ = plots.plot_model_state(name, shared.trace, m.get("basis_budget"),
                                       bool(m.get("has_basis", True)), time_label)
    if figure is not None:
        parts.append(_img(figure, f"{name}: model state over time"))
    parts.extend(_relevance_part(t, notes))
    figure = plots.plot_latency(t, time_label)
    if figure is not None:
        parts.append(_img(figure, f"{name}: latency per row"))
    else:
        notes.append("no rows timed, so no latency plot.")
    return TargetSection(name, "\n".join(parts), notes, dict(m), shared.has_dist,
                         "shared-model")


def _safe_id(name: str) -> str:
    """``name`` reduced to characters safe in an HTML id."""
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "target"


def _relevance_part(t: TargetReport, notes: list[str]) -> list[str]:
    """The relevance plot and the sentence that reads it, or a note saying why there is none."""
    figure = plots.plot_relevance(t)
    if figure is None:
        notes.append(f"no input relevance plot ({t.relevance_source or 'none'}).")
        return []
    marked = t.metrics.get("relevant_inputs")
    if marked is not None:
        verdict = plots.decision_summary(marked, t.relevant, len(t.relevance or {}))
    else:
        verdict = "the model makes no relevant / irrelevant decision; bars are its scores"
        if t.relevant:
            rec = relevance_recovery(t.relevance or {}, t.relevant)
            verdict += (f"; {rec['hits']} of the {rec['k']} truly relevant inputs are among "
                        f"its top {rec['k']} (AUC {rec['auc']:.2f})")
    return [
        f"<h3>Input relevance</h3><p>{html.escape(verdict[0].upper() + verdict[1:])}.</p>",
        _img(figure, f"{t.name}: input relevance"),
        f"<p><small>Scores: {html.escape(t.relevance_source)}.</small></p>",
    ]


def write_report(
    out_dir: str | Path,
    targets: Sequence[TargetReport | TargetSection],
    summary: Mapping[str, Any] | None = None,
    title: str = "onlinesparse replay",
    warmup: int = 0,
    time_label: str = "time (s)",
    shared: TargetSection | None = None,
) -> Path:
    """Write ``out_dir/report.html``, drawing the plots of targets not yet rendered.

    Parameters
    ----------
    out_dir
        Directory to write into (created if needed).
    targets
        One :class:`TargetReport` (drawn here) or :class:`TargetSection` (drawn already,
        see :func:`render_target`) per target.
    summary
        The run's settings and status (the top level of ``metrics.json``); its ``command``,
        ``elapsed_s``, ``model``, ``model_params`` and ``features`` are recorded on the page.
    title
        Page title.
    warmup
        Warm-up length, shaded in the plots.
    time_label
        Label of the time axis.
    shared
        The section of a model the targets share (:func:`render_shared`): shown before
        theirs, and its time per row is the latency table's one row.

    Returns
    -------
    Path
        The HTML file.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> t = np.arange(200) * 0.01
    >>> pred = np.column_stack([np.arange(200), t, np.sin(t), np.sin(t) + 0.1, np.full(200, .2)])
    >>> page = write_report(tempfile.mkdtemp(), [TargetReport("y", pred, {"warmup": 20})])
    >>> page.name
    'report.html'

    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = dict(summary or {})
    interval = float(summary.get("interval", 0.95))
    sections = [
        t if isinstance(t, TargetSection)
        else render_target(t, None, k, interval, warmup, time_label)
        for k, t in enumerate(targets)
    ]
    # The same omission usually concerns every target: say it once, naming them.
    notes: dict[str, list[str]] = {}
    for sec in [*sections, *([shared] if shared is not None else [])]:
        for note in sec.notes:
            notes.setdefault(note, []).append(sec.name)
    model = summary.get("model")
    last = isinstance(model, str) and sees_last_target(model, summary.get("model_params") or {})
    body = [_settings_table(summary),
            _metrics_table(sections, interval, shared=shared, last_target=last)]
    if notes:
        body.append("<h2>Notes</h2><ul>" + "".join(
            f"<li>{html.escape(', '.join(names))}: {html.escape(note)}</li>"
            for note, names in notes.items()) + "</ul>")
    if shared is not None:
        body.append(shared.html)
    body.extend(sec.html for sec in sections)
    page = out / "report.html"
    page.write_text(_page(title, "\n".join(body)), encoding="utf-8")
    return page


def _provenance() -> tuple[str, str]:
    """The onlinesparse version and the current date and time in UTC."""
    from datetime import UTC, datetime

    from onlinesparse import __version__

    return __version__, datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _all_params(model: str | None, given: Mapping[str, Any]) -> str:
    """Every constructor parameter of ``model``: the given ones first, then the defaults."""
    shown = [f"{k}={v!r}" for k, v in given.items()]
    try:
        from onlinesparse.replay.models import describe_parameters

        defaults = [f"{p.name}={p.default}" for p in describe_parameters(model or "")
                    if p.name not in given]
    except Exception:  # an unknown or unavailable model: show what was given
        defaults = []
    text = html.escape(", ".join(shown) or "none given")
    if defaults:
        text += f"<br><small>defaults: {html.escape(', '.join(defaults))}</small>"
    return text


def _settings_table(summary: Mapping[str, Any]) -> str:
    version, date = _provenance()
    features = list(summary.get("features") or [])
    listed = html.escape(", ".join(map(str, features)))
    if len(features) > 12:
        listed = (f"<details><summary>{len(features)} columns</summary>{listed}</details>")
    rows = [
        ("command", f"<code>{html.escape(str(summary['command']))}</code>"
         if summary.get("command") else "—"),
        ("onlinesparse", html.escape(version)),
        ("written", date),
        ("run time", f"{summary['elapsed_s']:.1f} s" if summary.get("elapsed_s") else "—"),
        ("recording", _fmt(summary.get("recording"))),
        ("status", _fmt(summary.get("status"))),
        ("model", _fmt(summary.get("model"))),
        ("model parameters", _all_params(summary.get("model"), summary.get("model_params") or {})),
        ("standardised inputs", "yes (running, past-only)" if summary.get("standardize")
         else "no"),
        ("warm-up (not scored)", f"{_fmt(summary.get('warmup'))} samples"),
        ("time column", _fmt(summary.get("time") or "row number")),
        (f"features ({len(features)})", listed or "—"),
        ("latency budget", f"{summary['budget_us']:g} µs per sample" if summary.get("budget_us")
         else "none (--budget-us)"),
        ("predictions", _fmt(summary.get("predictions"))),
    ]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    from onlinesparse.replay.check_report import checks_html

    notes = "".join(f"<p><small>{html.escape(n)}</small></p>"
                    for n in summary.get("recording_notes") or [])
    return f"<table class='meta'>{cells}</table>{notes}{checks_html(summary)}"


def _us(value: Any) -> str:
    if not isinstance(value, int | float) or not math.isfinite(value):
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _metrics_table(sections: Sequence[TargetSection], level: float, prefix: str = "",
                   shared: TargetSection | None = None, last_target: bool = False) -> str:
    """Accuracy per target beside the trivial predictors' nMSE (``trivial_note``; the
    model weighs the last target in when ``last_target``), then latency per target
    (wall-clock and CPU, after warm-up), or per row of the ``shared`` model the targets
    share; each name links to its section, whose anchor starts with ``prefix``."""
    head = ("<tr><th>target</th><th>MAE</th><th>RMSE</th><th>nMSE</th>"
            "<th>nMSE of the running mean</th><th>nMSE of the last target</th><th>R²</th>"
            f"<th>coverage of {level:.0%} interval</th><th>scored</th><th>skipped rows</th>"
            "<th>status</th></tr>")
    timing = ("<tr><th rowspan='2'>target</th><th colspan='3'>wall-clock µs per sample</th>"
              "<th colspan='3'>CPU µs per sample</th><th rowspan='2'>deadline misses</th>"
              "<th rowspan='2'>rows/s</th><th rowspan='2'>warm-up before timing</th>"
              "<th rowspan='2'>garbage collections between samples (longest)</th></tr>"
              "<tr>" + "<th>median</th><th>p99</th><th>max</th>" * 2 + "</tr>")
    rows, times = [], []
    for sec in [*sections, *([shared] if shared is not None else [])]:
        m = sec.metrics
        name = (f"<td><a href='#{html.escape(prefix + sec.anchor)}'>{html.escape(sec.name)}"
                "</a></td>")
        if sec is shared or not m.get("shared_model"):
            times.append(_timing_row(name, m))
        if sec is shared:
            continue
        cov = _fmt(m.get("coverage"), 3) if sec.has_dist else "n/a"
        rows.append(
            f"<tr>{name}<td>{_fmt(m.get('mae'))}</td><td>{_fmt(m.get('rmse'))}</td>"
            f"<td>{_fmt(m.get('nmse'))}</td><td>{_fmt(m.get('nmse_running_mean'), 3)}</td>"
            f"<td>{_fmt(m.get('nmse_last_target'), 3)}</td><td>{_fmt(m.get('r2'))}</td>"
            f"<td>{cov}</td>"
            f"<td>{_fmt(m.get('n_scored'))}</td><td>{_fmt(m.get('corrupt_rows'))}</td>"
            f"<td>{_fmt(m.get('status'))}</td></tr>"
        )
    return (f"<h2>Accuracy</h2><table>{head}{''.join(rows)}</table>"
            f"<p>{html.escape(_sentence(trivial_note(last_target)))}</p>"
            "<h2>Latency</h2><p>Time of <code>predict_one</code> + <code>learn_one</code> per "
            "scored sample, measured after the model's warm-up (its compiled code loaded and "
            "its first-call costs paid on a throwaway copy). CPU time is this thread's own: "
            "when the wall-clock time is far above it, the machine was busy with other work. "
            "Python's garbage collector runs between samples, outside these times: its "
            "pauses are counted apart.</p>"
            + ("<p>One model is shared by the targets: a row's time is one <code>predict_one"
               "</code> and one <code>learn_one</code> of every target, measured once.</p>"
               if shared is not None else "")
            + f"<table>{timing}{''.join(times)}</table>")


def _timing_row(name: str, m: Mapping[str, Any]) -> str:
    """One row of the latency table: a target's, or a shared model's."""
    lat, cpu = m.get("latency_us") or {}, m.get("cpu_us") or {}
    cells = "".join(f"<td>{_us(d.get(k))}</td>" for d in (lat, cpu)
                    for k in ("median", "p99", "max"))
    rate = m.get("rows_per_second")
    warm = m.get("warm_up_s")
    gc = m.get("gc_pauses_us") or {}
    pauses = f"{gc['n']} ({_us(gc.get('max'))} µs)" if gc.get("n") else "—"
    return (f"<tr>{name}{cells}<td>{_fmt(m.get('deadline_misses'))}</td>"
            f"<td>{f'{rate:,.0f}' if rate else '—'}</td>"
            f"<td>{f'{warm:.2f} s' if warm is not None else '—'}</td>"
            f"<td>{pauses}</td></tr>")


def write_comparison_report(
    out_dir: str | Path,
    title: str,
    intro: str,
    table: Sequence[Sequence[str]],
    models: Mapping[str, Sequence[TargetSection | None]],
    figures: Sequence[tuple[bytes, str]] = (),
    summary: Mapping[str, Any] | None = None,
    interval: float = 0.95,
) -> Path:
    """Write ``out_dir/report.html``: a table comparing runs, then every run's own results.

    The page stands alone, as each run's page does: every run's accuracy and latency tables
    and every target's section (its plots embedded) are on it, under the run's name, so it
    can be sent as one file.

    Parameters
    ----------
    out_dir
        Directory to write into.
    title
        Page title.
    intro
        A paragraph of plain text.
    table
        Rows of cells, the first row being the header.
    models
        ``{run name: its targets' sections}`` (see :func:`render_target`); ``None`` for a
        target whose section could not be drawn.
    figures
        ``(PNG bytes, caption)`` pairs to show, embedded in the page.
    summary
        Optional ``command`` and ``elapsed_s`` recorded on the page with the version and date.
    interval
        Level of the predictive interval whose coverage the runs measured.

    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    version, date = _provenance()
    summary = dict(summary or {})
    meta = [("command", f"<code>{html.escape(str(summary.get('command', '—')))}</code>"),
            ("onlinesparse", html.escape(version)), ("written", date)]
    if summary.get("elapsed_s"):
        meta.append(("run time", f"{summary['elapsed_s']:.1f} s"))
    head, *rows = table
    cells = "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"
    cells += "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                     for row in rows)
    body = ["<table class='meta'>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>"
                                             for k, v in meta) + "</table>",
            f"<p>{html.escape(intro)}</p>", f"<table>{cells}</table>"]
    body.extend(_img(data, caption) + f"<p><small>{html.escape(caption)}</small></p>"
                for data, caption in figures)
    body.extend(_run_part(name, sections, interval) for name, sections in models.items())
    page = out / "report.html"
    page.write_text(_page(title, "\n".join(body)), encoding="utf-8")
    return page


def _run_part(name: str, sections: Sequence[TargetSection | None], interval: float) -> str:
    """One run of a comparison page: its tables, then each target's section folded away,
    with anchors of its own so that two runs' targets of one name stay apart."""
    prefix = f"{_safe_id(name)}-"
    drawn = [sec for sec in sections if sec is not None]
    parts = [f"<h2 id='{html.escape(prefix[:-1])}'>{html.escape(name)}</h2>",
             _demote(_metrics_table(drawn, interval, prefix,
                                    last_target=sees_last_target(name, {})))]
    if len(drawn) < len(sections):
        parts.append(f"<p class='note'>{len(sections) - len(drawn)} target(s) of "
                     f"{html.escape(name)} could not be drawn (see the run's messages).</p>")
    for sec in drawn:
        # The anchor moves to the fold, which a link must reach while it is still closed.
        own = sec.html.replace(f" id='{html.escape(sec.anchor)}'", "", 1)
        parts.append(f"<details id='{html.escape(prefix + sec.anchor)}'><summary>"
                     f"{html.escape(name)}: {html.escape(sec.name)} (plots)</summary>"
                     f"{_demote(own)}</details>")
    return "\n".join(parts)


def _demote(fragment: str) -> str:
    """Second-level headings of a run's own page as third-level ones under the run's name."""
    return fragment.replace("<h2", "<h3").replace("</h2>", "</h3>")


plot_model_comparison = plots.plot_model_comparison
