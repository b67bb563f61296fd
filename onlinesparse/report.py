"""The replay report: a self-contained HTML page with PNG plots made by matplotlib.

The page uses no script, stylesheet or font from elsewhere; its plots are PNG files in a
``plots/`` folder beside it, so the output directory can be copied or archived as a whole.
Plots are drawn on :class:`matplotlib.figure.Figure` objects with the Agg canvas, without
pyplot, so that making a report never changes the plotting state of the caller.

For each target the page shows

* the prediction and its predictive interval against the truth over the whole replay, and
  three zoomed windows of it (start, middle and end of the scored part), the way seed 001's
  figure 12 shows an EMG trace;
* the model's diagnostics over time: the error in a moving window always, and the basis-set
  size, GCV, noise estimate and effective number of parameters when the model reports them;
* the relevance of each input (and, when known, which inputs are truly relevant);
* the histogram of the time per ``predict_one`` + ``learn_one``.

A plot whose data the model does not provide is left out and the page says why.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onlinesparse.replay.metrics import LatencyHistogram, Trace, interval_z

__all__ = [
    "TargetReport",
    "TargetSection",
    "render_target",
    "write_report",
    "write_comparison_report",
    "relevance_recovery",
    "plot_model_comparison",
]

TRUTH_COLOR = "#222222"
MEAN_COLOR = "#1f6fb4"
BAND_COLOR = "#9cc3e6"
WARM_COLOR = "#eeeeee"
HIT_COLOR = "#d6661f"
MAX_OVERVIEW_POINTS = 10_000
WINDOW_SAMPLES = 500
ROW, TIME, TRUTH, MEAN, STD = range(5)


@dataclass
class TargetReport:
    """What the report shows for one target.

    Parameters
    ----------
    name
        The target column.
    predictions
        Array (possibly memory-mapped) of shape ``(n, 5)``: row, time, truth, mean, std.
    metrics
        The target's metrics (as in ``metrics.json``).
    trace
        Diagnostics recorded over time, or ``None``.
    latency
        Latency histogram, or ``None``.
    relevance
        ``{feature: score}`` (larger = more relevant), or ``None``.
    relevance_source
        Where the scores come from, or why there are none.
    relevant
        The truly relevant features when known (a simulation), else ``None``.
    has_dist
        Whether the model gave a predictive distribution.

    """

    name: str
    predictions: np.ndarray
    metrics: Mapping[str, Any]
    trace: Trace | None = None
    latency: LatencyHistogram | None = None
    relevance: Mapping[str, float] | None = None
    relevance_source: str = ""
    relevant: Sequence[str] | None = None
    has_dist: bool = False


def _grid(
    width: float,
    height: float,
    rows: int = 1,
    *,
    sharex: bool = False,
    left: float = 0.8,
    right: float = 0.25,
    top: float = 0.45,
    bottom: float = 0.6,
    gap: float = 0.8,
):
    """A figure with ``rows`` stacked axes and margins in inches.

    Fixed margins rather than matplotlib's constrained layout, which took about 60 % of the
    time of drawing a report.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    axes = fig.subplots(rows, 1, sharex=sharex, squeeze=False)[:, 0]
    axes_height = (height - top - bottom - gap * (rows - 1)) / rows
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        top=1 - top / height,
        bottom=bottom / height,
        hspace=gap / axes_height if rows > 1 else 0.0,
    )
    return fig, axes


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "target"


def _block_reduce(column: np.ndarray, n_bins: int, of=None) -> tuple[np.ndarray, ...]:
    """Mean, min and max in ``n_bins`` consecutive bins, read a block at a time.

    ``column`` is 1-D, or 2-D when ``of`` maps a block of its rows to the values to reduce
    (e.g. squared errors from truth and prediction columns): a memory-mapped spool is never
    loaded whole.
    """
    n = len(column)
    edges = np.linspace(0, n, n_bins + 1).astype(np.int64)
    means = np.empty(n_bins)
    lows = np.empty(n_bins)
    highs = np.empty(n_bins)
    step = max(1, n_bins * (1 << 20) // max(n, 1))  # about a million rows per block
    for b0 in range(0, n_bins, step):
        b1 = min(b0 + step, n_bins)
        block = np.asarray(column[edges[b0] : edges[b1]], dtype=np.float64)
        if of is not None:
            block = of(block)
        starts = edges[b0:b1] - edges[b0]
        with np.errstate(invalid="ignore"):
            counts = np.diff(edges[b0 : b1 + 1])
            means[b0:b1] = np.add.reduceat(np.nan_to_num(block), starts) / counts
            lows[b0:b1] = np.minimum.reduceat(block, starts)
            highs[b0:b1] = np.maximum.reduceat(block, starts)
    return means, lows, highs


def _windows(n: int, first: int) -> list[tuple[str, int, int]]:
    """Three zoom windows over the scored part: its start, middle and end."""
    span = n - first
    if span <= 0:
        first, span = 0, n
    width = min(WINDOW_SAMPLES, span)
    if span <= width * 3:
        return [("A", first, first + width)] if span <= width else [
            ("A", first, first + width), ("B", n - width, n)
        ]
    mid = first + (span - width) // 2
    return [("A", first, first + width), ("B", mid, mid + width), ("C", n - width, n)]


def _plot_prediction(t: TargetReport, path: Path, z: float, warmup: int, time_label: str) -> bool:
    pred = t.predictions
    n = len(pred)
    if n == 0:
        return False
    first = min(int(t.metrics.get("warmup", warmup) or 0), n)
    windows = _windows(n, first)
    fig, axes = _grid(11, 2.3 * (1 + len(windows)) + 0.5, 1 + len(windows), top=0.85)
    fig.suptitle(f"{t.name}: prediction against truth over the whole replay; windows A–C "
                 "are zoomed below", x=0.8 / 11, y=1 - 0.12 / fig.get_figheight(), ha="left",
                 va="top", fontsize=10, parse_math=False)  # names are text, never mathtext
    ax = axes[0]
    times = pred[:, TIME]
    if n > MAX_OVERVIEW_POINTS:
        n_bins = MAX_OVERVIEW_POINTS // 2
        tm, _, _ = _block_reduce(times, n_bins)
        ym, ylo, yhi = _block_reduce(pred[:, TRUTH], n_bins)
        mm, _, _ = _block_reduce(pred[:, MEAN], n_bins)
        ax.fill_between(tm, ylo, yhi, color="#bbbbbb", lw=0, label="truth (range per bin)")
        ax.plot(tm, ym, color=TRUTH_COLOR, lw=0.6, label="truth (bin mean)")
        ax.plot(tm, mm, color=MEAN_COLOR, lw=0.8, label="prediction (bin mean)")
    else:
        ax.plot(times, pred[:, TRUTH], color=TRUTH_COLOR, lw=0.6, label="truth")
        ax.plot(times, pred[:, MEAN], color=MEAN_COLOR, lw=0.8, label="prediction")
    if first > 0:
        ax.axvspan(times[0], times[first - 1], color=WARM_COLOR, zorder=0, label="warm-up")
    for label, lo, hi in windows:
        ax.axvspan(times[lo], times[hi - 1], color="#f2c14e", alpha=0.35, zorder=0)
        ax.text(times[lo], 1.0, label, transform=ax.get_xaxis_transform(), va="top",
                ha="left", fontsize=9, fontweight="bold")
    ax.set_xlabel(time_label)
    ax.margins(x=0.005)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=8, ncols=4, frameon=False)

    for ax, (label, lo, hi) in zip(axes[1:], windows, strict=True):
        block = np.asarray(pred[lo:hi])
        tt = block[:, TIME]
        if t.has_dist and np.isfinite(block[:, STD]).any():
            ax.fill_between(tt, block[:, MEAN] - z * block[:, STD],
                            block[:, MEAN] + z * block[:, STD], color=BAND_COLOR, lw=0,
                            label=f"{t.metrics.get('interval', 0.95):.0%} predictive interval")
        ax.plot(tt, block[:, TRUTH], color=TRUTH_COLOR, lw=1.0, label="truth")
        ax.plot(tt, block[:, MEAN], color=MEAN_COLOR, lw=1.2, label="prediction")
        rows = block[:, ROW]
        ax.set_title(f"window {label}: rows {int(rows[0])}–{int(rows[-1])}", fontsize=9,
                     loc="left")
        ax.set_xlabel(time_label)
        ax.margins(x=0)
    axes[1].legend(loc="upper right", fontsize=8, ncols=3)
    fig.savefig(path)
    return True


def _plot_diagnostics(t: TargetReport, path: Path, time_label: str) -> list[str]:
    """Moving-window RMSE plus whatever diagnostics the model reported; returns their names."""
    pred = t.predictions
    n = len(pred)
    if n == 0:
        return []
    first = min(int(t.metrics.get("warmup", 0) or 0), n - 1)
    scored = pred[first:]
    n_bins = max(1, min(200, len(scored) // 20))
    sq_mean, _, _ = _block_reduce(
        scored, n_bins, of=lambda b: (b[:, TRUTH] - b[:, MEAN]) ** 2
    )
    tm, _, _ = _block_reduce(scored[:, TIME], n_bins)
    panels: list[tuple[str, np.ndarray, np.ndarray, str]] = []
    times, values = (t.trace.as_arrays() if t.trace is not None else (np.empty(0), {}))
    for key, label in (
        ("n_basis", "basis functions"),
        ("effective_parameters", "effective parameters γ"),
        ("gcv", "GCV"),
    ):
        if key in values and np.isfinite(values[key]).any():
            panels.append((key, times, values[key], label))
    shown = [key for key, *_ in panels]
    fig, axes = _grid(11, 2.0 * (1 + len(panels)) + 0.3, 1 + len(panels), sharex=True,
                      gap=0.35, left=1.05)  # room for log-scale tick labels of the GCV
    ax = axes[0]
    ax.plot(tm, np.sqrt(sq_mean), color=TRUTH_COLOR, lw=1.0,
            label=f"RMSE in windows of {max(1, len(scored) // n_bins)} samples")
    if "noise_std" in values and np.isfinite(values["noise_std"]).any():
        ax.plot(times, values["noise_std"], color=HIT_COLOR, lw=1.0,
                label="model's noise estimate σ")
        shown.append("noise_std")
    ax.set_ylabel("error")
    ax.set_title(f"{t.name}: error and model state over time", fontsize=10, parse_math=False)
    ax.legend(loc="upper right", fontsize=8)
    for ax, (key, x, v, label) in zip(axes[1:], panels, strict=True):
        ax.plot(x, v, color=MEAN_COLOR, lw=1.0, drawstyle="steps-post" if key == "n_basis" else
                "default")
        ax.set_ylabel(label)
        if key == "gcv" and np.nanmin(v) > 0:
            ax.set_yscale("log")
    axes[-1].set_xlabel(time_label)
    fig.savefig(path)
    return shown


def relevance_recovery(scores: Mapping[str, float], relevant: Sequence[str]) -> dict[str, float]:
    """How well relevance ``scores`` single out the truly ``relevant`` features.

    Returns ``hits`` (relevant features among the top ``k`` scores, ``k`` = number relevant),
    ``k`` and ``auc`` (probability that a relevant feature outscores an irrelevant one).

    Examples
    --------
    >>> relevance_recovery({"a": 3.0, "b": 0.1, "c": 2.0, "d": 0.5}, ["a", "c"])
    {'hits': 2, 'k': 2, 'auc': 1.0}

    """
    names = list(scores)
    truth = set(relevant)
    k = len(truth & set(names))
    ranked = sorted(names, key=lambda f: (-scores[f], names.index(f)))
    hits = len(truth & set(ranked[:k]))
    pos = np.array([scores[f] for f in names if f in truth], dtype=float)
    neg = np.array([scores[f] for f in names if f not in truth], dtype=float)
    if len(pos) and len(neg):
        greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
        auc = float(greater / (len(pos) * len(neg)))
    else:
        auc = math.nan
    return {"hits": hits, "k": k, "auc": auc}


def _plot_relevance(t: TargetReport, path: Path) -> bool:
    if not t.relevance:
        return False
    names = list(t.relevance)
    if len(names) > 80:  # too many to label: the 40 most relevant, best first
        names = sorted(names, key=lambda f: -t.relevance[f])[:40]
    scores = np.array([t.relevance[f] for f in names], dtype=float)
    truth = set(t.relevant or ())
    colors = [HIT_COLOR if f in truth else MEAN_COLOR for f in names]
    fig, (ax,) = _grid(max(6.0, min(16.0, 0.2 * len(names) + 1.2)), 3.6, bottom=0.9)
    ax.bar(range(len(names)), scores, color=colors)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7, parse_math=False)
    ax.set_ylabel("relevance")
    title = f"{t.name}: input relevance"
    if t.relevant:
        rec = relevance_recovery(t.relevance, t.relevant)
        title += (f" — orange: truly relevant ({rec['hits']}/{rec['k']} in the top {rec['k']}, "
                  f"AUC {rec['auc']:.2f})")
    ax.set_title(title, fontsize=10, parse_math=False)
    ax.margins(x=0.01)
    fig.savefig(path)
    return True


def _us(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _plot_latency(t: TargetReport, path: Path) -> bool:
    h = t.latency
    if h is None or h.n == 0:
        return False
    nz = np.flatnonzero(h.counts)
    lo, hi = max(nz[0] - 2, 0), min(nz[-1] + 3, len(h.counts))
    edges = h.edges[lo : hi + 1]
    counts = h.counts[lo:hi]
    fig, (ax,) = _grid(7, 3.2)
    ax.stairs(counts, edges, fill=True, color=BAND_COLOR)
    ax.stairs(counts, edges, color=MEAN_COLOR)
    ax.set_xscale("log")
    med, p99 = h.quantile(0.5), h.quantile(0.99)
    ax.axvline(med, color=TRUTH_COLOR, lw=1.2, label=f"median {_us(med)} µs")
    ax.axvline(p99, color=HIT_COLOR, lw=1.2, ls="--", label=f"99th percentile {_us(p99)} µs")
    ax.set_xlabel("µs per predict_one + learn_one")
    ax.set_ylabel("samples")
    ax.set_title(f"{t.name}: latency of {h.n} scored samples", fontsize=10, parse_math=False)
    ax.legend(fontsize=8)
    fig.savefig(path)
    return True


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


def _img(src: str, alt: str) -> str:
    src = html.escape(src)
    return (f"<p><a href='{src}' title='open at full size'>"
            f"<img src='{src}' alt='{html.escape(alt)}'></a></p>")


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
    plots_dir: str | Path,
    index: int = 0,
    interval: float = 0.95,
    warmup: int = 0,
    time_label: str = "time (s)",
) -> TargetSection:
    """Draw the PNGs of one target into ``plots_dir`` and return its HTML section.

    The images are referenced as ``plots/<file>``, relative to the page in the parent of
    ``plots_dir``.
    """
    plots = Path(plots_dir)
    plots.mkdir(parents=True, exist_ok=True)
    z = interval_z(interval)
    stem = f"{index:02d}-{_safe(t.name)}"
    notes: list[str] = []
    parts = [f"<h2 id='{html.escape(stem)}'>{html.escape(t.name)}</h2>"]
    if t.metrics.get("message"):
        parts.append(f"<p class='note'>{html.escape(str(t.metrics['message']))}</p>")

    name = f"{stem}-prediction.png"
    if _plot_prediction(t, plots / name, z, warmup, time_label):
        parts.append(_img(f"plots/{name}", f"{t.name}: prediction against truth"))
        if not t.has_dist:
            notes.append("the model gives no predictive distribution "
                         "(predict_one(x, with_dist=True)), so no interval is drawn and "
                         "coverage is not measured.")
    else:
        notes.append("no predictions to plot.")

    name = f"{stem}-diagnostics.png"
    shown = _plot_diagnostics(t, plots / name, time_label)
    if len(t.predictions):
        parts.append(_img(f"plots/{name}", f"{t.name}: error and model state over time"))
    missing = [k for k in ("n_basis", "gcv", "noise_std") if k not in shown]
    if missing:
        notes.append(f"the model does not report {', '.join(missing)} "
                     "(no diagnostics() or no such keys), so those curves are omitted.")

    name = f"{stem}-relevance.png"
    if _plot_relevance(t, plots / name):
        parts.append(_img(f"plots/{name}", f"{t.name}: input relevance"))
        parts.append(f"<p><small>Relevance: {html.escape(t.relevance_source)}.</small></p>")
    else:
        notes.append(f"no input relevance plot ({t.relevance_source or 'none'}).")

    name = f"{stem}-latency.png"
    if _plot_latency(t, plots / name):
        parts.append(_img(f"plots/{name}", f"{t.name}: latency histogram"))
    else:
        notes.append("no scored samples, so no latency histogram.")

    examples = t.metrics.get("corrupt_examples") or []
    if examples:
        shown_examples = examples[:20]
        items = "".join(f"<li>{html.escape(e['where'])}: {html.escape(e['reason'])}</li>"
                        for e in shown_examples)
        more = int(t.metrics.get("corrupt_rows", 0)) - len(shown_examples)
        tail = f"<li>… and {more} more</li>" if more > 0 else ""
        parts.append(f"<p>Corrupt rows skipped ({t.metrics.get('corrupt_rows')}):</p>"
                     f"<ul>{items}{tail}</ul>")
    return TargetSection(t.name, "\n".join(parts), notes, dict(t.metrics), t.has_dist, stem)


def write_report(
    out_dir: str | Path,
    targets: Sequence[TargetReport | TargetSection],
    summary: Mapping[str, Any] | None = None,
    title: str = "onlinesparse replay",
    warmup: int = 0,
    time_label: str = "time (s)",
) -> Path:
    """Write ``out_dir/report.html``, drawing the plots of targets not yet rendered.

    Parameters
    ----------
    out_dir
        Directory to write into (created if needed); plots go to ``out_dir/plots``.
    targets
        One :class:`TargetReport` (drawn here) or :class:`TargetSection` (drawn already,
        see :func:`render_target`) per target.
    summary
        The run's settings and status (the top level of ``metrics.json``).
    title
        Page title.
    warmup
        Warm-up length, shaded in the plots.
    time_label
        Label of the time axis.

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
        else render_target(t, out / "plots", k, interval, warmup, time_label)
        for k, t in enumerate(targets)
    ]
    # The same omission usually concerns every target: say it once, naming them.
    notes: dict[str, list[str]] = {}
    for sec in sections:
        for note in sec.notes:
            notes.setdefault(note, []).append(sec.name)
    body = [_settings_table(summary), _metrics_table(sections, interval)]
    if notes:
        body.append("<h2>Notes</h2><ul>" + "".join(
            f"<li>{html.escape(', '.join(names))}: {html.escape(note)}</li>"
            for note, names in notes.items()) + "</ul>")
    body.extend(sec.html for sec in sections)
    page = out / "report.html"
    page.write_text(_page(title, "\n".join(body)), encoding="utf-8")
    return page


def _settings_table(summary: Mapping[str, Any]) -> str:
    if not summary:
        return ""
    params = summary.get("model_params") or {}
    rows = [
        ("recording", summary.get("recording")),
        ("status", summary.get("status")),
        ("model", f"{summary.get('model')} "
                  + (" ".join(f"{k}={v}" for k, v in params.items()) if params else "")),
        ("standardised inputs", "yes (running, past-only)" if summary.get("standardize")
         else "no"),
        ("warm-up (not scored)", summary.get("warmup")),
        ("features", f"{len(summary.get('features') or [])} columns"),
        ("predictions", summary.get("predictions")),
    ]
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in rows)
    return f"<table class='meta'>{cells}</table>"


def _metrics_table(sections: Sequence[TargetSection], level: float) -> str:
    head = ("<tr><th>target</th><th>MAE</th><th>RMSE</th><th>nMSE</th><th>R²</th>"
            f"<th>coverage of {level:.0%} interval</th><th>µs median</th><th>µs p99</th>"
            "<th>scored</th><th>skipped rows</th><th>status</th></tr>")
    rows = []
    for sec in sections:
        m = sec.metrics
        lat = m.get("latency_us") or {}
        cov = _fmt(m.get("coverage"), 3) if sec.has_dist else "n/a"
        rows.append(
            f"<tr><td><a href='#{html.escape(sec.anchor)}'>{html.escape(sec.name)}</a></td>"
            f"<td>{_fmt(m.get('mae'))}</td><td>{_fmt(m.get('rmse'))}</td>"
            f"<td>{_fmt(m.get('nmse'))}</td><td>{_fmt(m.get('r2'))}</td><td>{cov}</td>"
            f"<td>{_fmt(lat.get('median'), 3)}</td><td>{_fmt(lat.get('p99'), 3)}</td>"
            f"<td>{_fmt(m.get('n_scored'))}</td><td>{_fmt(m.get('corrupt_rows'))}</td>"
            f"<td>{_fmt(m.get('status'))}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


def write_comparison_report(
    out_dir: str | Path,
    title: str,
    intro: str,
    table: Sequence[Sequence[str]],
    links: Mapping[str, str],
    figures: Sequence[tuple[str, str]] = (),
) -> Path:
    """Write ``out_dir/report.html``: a table comparing runs and links to their reports.

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
    links
        ``{label: relative path}`` of the per-run reports.
    figures
        ``(relative png path, caption)`` pairs to show.

    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    head, *rows = table
    cells = "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"
    cells += "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                     for row in rows)
    body = [f"<p>{html.escape(intro)}</p>", f"<table>{cells}</table>"]
    body.extend(_img(src, caption) + f"<p><small>{html.escape(caption)}</small></p>"
                for src, caption in figures)
    body.append("<h2>Full reports</h2><ul>" + "".join(
        f"<li><a href='{html.escape(href)}'>{html.escape(label)}</a></li>"
        for label, href in links.items()) + "</ul>")
    page = out / "report.html"
    page.write_text(_page(title, "\n".join(body)), encoding="utf-8")
    return page


def plot_model_comparison(
    path: str | Path,
    targets: Sequence[str],
    per_model: Mapping[str, Mapping[str, Sequence[float]]],
    nonlinear: Mapping[str, bool] | None = None,
) -> Path:
    """Grouped bars of nMSE and relevance AUC per target, one colour per model.

    ``per_model`` maps a model name to ``{"nmse": [...], "auc": [...]}`` in ``targets`` order.
    """
    fig, axes = _grid(11, 5.6, 2, sharex=True, bottom=1.0, gap=0.5)
    n_models = max(len(per_model), 1)
    width = 0.8 / n_models
    x = np.arange(len(targets))
    palette = [MEAN_COLOR, HIT_COLOR, "#3a9a4a", "#8a4fb0", "#777777"]
    for i, (name, values) in enumerate(per_model.items()):
        offset = (i - (n_models - 1) / 2) * width
        for ax, key in zip(axes, ("nmse", "auc"), strict=True):
            v = np.asarray(values.get(key, [math.nan] * len(targets)), dtype=float)
            ax.bar(x + offset, np.nan_to_num(v), width, label=name,
                   color=palette[i % len(palette)])
    axes[0].set_ylabel("nMSE (lower is better)")
    axes[0].legend(fontsize=8)
    axes[0].set_title("accuracy per muscle", fontsize=10)
    axes[1].set_ylabel("relevance AUC")
    axes[1].set_ylim(0, 1.05)
    axes[1].axhline(0.5, color="#999999", lw=0.8, ls=":")
    axes[1].set_title("recovery of the truly relevant neurons (0.5 = chance)", fontsize=10)
    labels = [f"{t}{' *' if nonlinear and nonlinear.get(t) else ''}" for t in targets]
    axes[1].set_xticks(x, labels, rotation=20, fontsize=8, parse_math=False)
    fig.savefig(path)
    return Path(path)
