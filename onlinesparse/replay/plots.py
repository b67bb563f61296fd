"""The plots of the replay report, drawn with matplotlib into PNG bytes.

Each function returns PNG bytes (or ``None`` when the model gave nothing to draw), so the
page can embed them and travel as one file. Figures are made with
:class:`matplotlib.figure.Figure` and the Agg canvas, without pyplot, so drawing a report never
changes the caller's plotting state.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from onlinesparse.replay.metrics import LatencyHistogram, Trace


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
        The target's metrics (as in ``metrics.json``). Optional keys the page uses:
        ``basis_budget`` (line on the basis-count panel), ``budget_us`` and
        ``deadline_misses`` (the deadline), ``relevant_inputs`` and ``relevance_cutoff``
        (the model's own relevance decisions).
    trace
        Diagnostics recorded over time, or ``None``.
    latency
        Histogram of wall-clock µs per sample, or ``None``.
    relevance
        ``{feature: score}`` (larger = more relevant), or ``None``.
    relevance_source
        Where the scores come from, or why there are none.
    relevant
        The truly relevant features when known (a simulation), else ``None``.
    has_dist
        Whether the model gave a predictive distribution.
    cpu_latency
        Histogram of CPU µs per sample (the thread's own time), or ``None``.

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
    cpu_latency: LatencyHistogram | None = None



TRUTH_COLOR = "#222222"
MEAN_COLOR = "#1f6fb4"
BAND_COLOR = "#9cc3e6"
WARM_COLOR = "#eeeeee"
HIT_COLOR = "#d6661f"
CPU_COLOR = "#3a9a4a"
OFF_COLOR = "#c8c8c8"
BUDGET_COLOR = "#c0392b"
#: Bins of a long replay's overview: about one per pixel of its axes (1000 px at 100 dpi), so
#: that each bin's envelope (its smallest and largest value) is what the pixel would show.
OVERVIEW_BINS = 1000
WINDOW_SAMPLES = 500
ROW, TIME, TRUTH, MEAN, STD = range(5)
#: Diagnostics counters whose increase marks heavy work of a model, and what it was.
HEAVY_COUNTERS = {
    "n_refreshes": "refresh of the variance matrix",
    "n_added": "basis function added",
    "n_deleted": "basis function deleted",
    "n_admitted": "kernel admitted",
    "n_pruned": "kernel pruned",
}
#: The latency plot's rows of heavy-work markers, a factor apart on its log scale.
ROW_STEP = 1.25


def grid(width: float, height: float, rows: int = 1, *, sharex: bool = False,
         left: float = 0.9, right: float = 0.25, top: float = 0.45, bottom: float = 0.6,
         gap: float = 0.8):
    """A figure with ``rows`` stacked axes and margins in inches.

    Fixed margins rather than matplotlib's constrained layout, which took about 60 % of the
    time of drawing a report.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    axes = fig.subplots(rows, 1, sharex=sharex, squeeze=False)[:, 0]
    axes_height = (height - top - bottom - gap * (rows - 1)) / rows
    fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height,
                        bottom=bottom / height, hspace=gap / axes_height if rows > 1 else 0.0)
    return fig, axes


def png(fig: Any) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def block_reduce(column: np.ndarray, n_bins: int, of=None) -> tuple[np.ndarray, ...]:
    """Mean, min and max in ``n_bins`` consecutive bins, read a block at a time.

    ``column`` is 1-D, or 2-D when ``of`` maps a block of its rows to the values to reduce
    (e.g. squared errors from truth and prediction columns): a memory-mapped spool is never
    loaded whole.
    """
    n = len(column)
    edges = np.linspace(0, n, n_bins + 1).astype(np.int64)
    means, lows, highs = np.empty(n_bins), np.empty(n_bins), np.empty(n_bins)
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


def windows(n: int, first: int) -> list[tuple[str, int, int]]:
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


def robust_range(scored: Sequence[np.ndarray], everything: Sequence[np.ndarray]
                 ) -> tuple[tuple[float, float], tuple[float, float], bool]:
    """A y-range for the scored part, the full range, and whether the first clips the second.

    The range spans the 0.5th to 99.5th percentiles of the scored values with a margin, so
    the few wild predictions a model makes before it has seen anything (the warm-up
    transient) do not squash every curve into a line.
    """
    values = np.concatenate([np.asarray(v, dtype=float).ravel() for v in scored])
    values = values[np.isfinite(values)]
    full = np.concatenate([np.asarray(v, dtype=float).ravel() for v in everything])
    full = full[np.isfinite(full)]
    if not len(values):
        values = full
    if not len(values):
        return (0.0, 1.0), (0.0, 1.0), False
    lo, hi = np.percentile(values, [0.5, 99.5])
    pad = 0.1 * (hi - lo) if hi > lo else max(abs(lo) * 0.1, 1.0)
    robust = (float(lo - pad), float(hi + pad))
    whole = (float(full.min()), float(full.max()))
    return robust, whole, bool(whole[0] < robust[0] or whole[1] > robust[1])


def _overview(ax: Any, t: TargetReport, first: int, marks: Sequence[tuple[str, int, int]],
              time_label: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Truth and prediction over the whole replay; returns (scored, all) y-values drawn.

    Up to twice :data:`OVERVIEW_BINS` rows are drawn as lines; a longer replay as the
    envelope (smallest and largest value) of truth and prediction in each of
    :data:`OVERVIEW_BINS` bins: a line through 150 000 points is a solid block at this width,
    while the envelopes show where the prediction leaves the truth's range.
    """
    pred = t.predictions
    n = len(pred)
    times = pred[:, TIME]
    if n > 2 * OVERVIEW_BINS:
        tm, _, _ = block_reduce(times, OVERVIEW_BINS)
        _, ylo, yhi = block_reduce(pred[:, TRUTH], OVERVIEW_BINS)
        _, mlo, mhi = block_reduce(pred[:, MEAN], OVERVIEW_BINS)
        per_bin = f"{n / OVERVIEW_BINS:,.0f} rows"
        ax.fill_between(tm, ylo, yhi, color="#9a9a9a", lw=0,
                        label=f"truth: range in each bin of {per_bin}")
        ax.fill_between(tm, mlo, mhi, color=MEAN_COLOR, alpha=0.55, lw=0,
                        label="prediction: range in each bin")
        cut = int(first * OVERVIEW_BINS / n)
        drawn = [ylo, yhi, mlo, mhi]
        scored = [v[cut:] for v in drawn]
    else:
        ax.plot(times, pred[:, TRUTH], color=TRUTH_COLOR, lw=0.6, label="truth")
        ax.plot(times, pred[:, MEAN], color=MEAN_COLOR, lw=0.8, label="prediction")
        drawn = [pred[:, TRUTH], pred[:, MEAN]]
        scored = [pred[first:, TRUTH], pred[first:, MEAN]]
    if first > 0:
        ax.axvspan(times[0], times[first - 1], color=WARM_COLOR, zorder=0,
                   label="warm-up (not scored)")
    for label, lo, hi in marks:
        ax.axvspan(times[lo], times[hi - 1], color="#f2c14e", alpha=0.35, zorder=0)
        ax.text(times[lo], 1.0, label, transform=ax.get_xaxis_transform(), va="top",
                ha="left", fontsize=9, fontweight="bold")
    ax.set_xlabel(time_label)
    ax.set_ylabel(t.name, parse_math=False)
    ax.margins(x=0.005)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=8, ncols=5, frameon=False)
    return scored, drawn


def plot_prediction(t: TargetReport, z: float, warmup: int, time_label: str
                    ) -> tuple[bytes | None, bytes | None]:
    """The prediction against the truth: the whole replay and three zoomed windows.

    Returns the PNG and, when the warm-up transient goes beyond the y-range chosen for the
    scored part, a second PNG of the whole replay at its full range (else ``None``).
    """
    main, full = prediction_figures(t, z, warmup, time_label)
    return (png(main) if main is not None else None), (png(full) if full is not None else None)


def prediction_figures(t: TargetReport, z: float, warmup: int, time_label: str
                       ) -> tuple[Any, Any]:
    """The figures of :func:`plot_prediction`, not yet drawn to PNG."""
    pred = t.predictions
    n = len(pred)
    if n == 0:
        return None, None
    first = min(int(t.metrics.get("warmup", warmup) or 0), n)
    marks = windows(n, first)
    fig, axes = grid(11, 2.3 * (1 + len(marks)) + 0.6, 1 + len(marks), top=0.95)
    fig.suptitle(f"{t.name}: prediction against truth over the whole replay; windows A–C "
                 "are zoomed below", x=0.9 / 11, y=1 - 0.1 / fig.get_figheight(), ha="left",
                 va="top", fontsize=10, parse_math=False)  # names are text, never mathtext
    scored, drawn = _overview(axes[0], t, first, marks, time_label)
    robust, whole, clipped = robust_range(scored, drawn)
    if clipped:
        axes[0].set_ylim(*robust)
        axes[0].set_title(f"y-range of the scored part; the full range {whole[0]:.4g} … "
                          f"{whole[1]:.4g} is shown below the figure", fontsize=8, loc="right",
                          color="#7a4b00", pad=16)
    for k, (ax, (label, lo, hi)) in enumerate(zip(axes[1:], marks, strict=True)):
        block = np.asarray(pred[lo:hi])
        tt = block[:, TIME]
        if t.has_dist and np.isfinite(block[:, STD]).any():
            ax.fill_between(tt, block[:, MEAN] - z * block[:, STD],
                            block[:, MEAN] + z * block[:, STD], color=BAND_COLOR, lw=0,
                            label=f"{t.metrics.get('interval', 0.95):.0%} predictive interval")
        ax.plot(tt, block[:, TRUTH], color=TRUTH_COLOR, lw=1.0, label="truth")
        ax.plot(tt, block[:, MEAN], color=MEAN_COLOR, lw=1.2, label="prediction")
        band = [block[:, MEAN] - z * block[:, STD], block[:, MEAN] + z * block[:, STD]]
        shown = [block[:, TRUTH], block[:, MEAN], *(band if t.has_dist else [])]
        window_range, _, _ = robust_range(shown, shown)
        ax.set_ylim(*window_range)
        rows = block[:, ROW]
        ax.set_title(f"window {label}: rows {int(rows[0])}–{int(rows[-1])}", fontsize=9,
                     loc="left")
        ax.set_xlabel(time_label)
        ax.set_ylabel(t.name, parse_math=False)
        ax.margins(x=0)
        if k == 0:
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, ncols=3,
                      frameon=False)
    if not clipped:
        return fig, None
    full, (ax,) = grid(11, 3.0, top=0.6)
    _overview(ax, t, first, marks, time_label)
    return fig, full


def diagnostic_keys(t: TargetReport) -> tuple[str, ...]:
    """The diagnostics a report draws for this target's model: its basis functions only
    when it has some (``has_basis`` in its metrics; assumed when not said)."""
    keys = ("n_basis", "effective_parameters", "gcv", "noise_std")
    if t.metrics.get("shared_model"):  # the shared ones are drawn once, in the model's section
        return ("noise_std",)
    return keys if t.metrics.get("has_basis", True) else keys[1:]


def plot_model_state(name: str, trace: Trace, budget: float | None, has_basis: bool,
                     time_label: str) -> tuple[bytes | None, list[str]]:
    """The diagnostics of a model shared by several targets over time: its basis-set size
    (with its budget), effective number of parameters and GCV; ``(None, [])`` when it
    reports none of them."""
    times, values = trace.as_arrays()
    keys = ("n_basis", "effective_parameters", "gcv") if has_basis else ("effective_parameters",
                                                                          "gcv")
    labels = {"n_basis": "basis functions", "effective_parameters": "effective parameters γ",
              "gcv": "GCV"}
    shown = [k for k in keys if k in values and np.isfinite(values[k]).any()]
    if not shown or len(times) < 2:
        return None, []
    fig, axes = grid(11, 2.0 * len(shown) + 0.6, len(shown), sharex=True, gap=0.35, left=1.05)
    axes[0].set_title(f"{name}: model state over time", fontsize=10, parse_math=False)
    for ax, key in zip(axes, shown, strict=True):
        v = values[key]
        ax.plot(times, v, color=MEAN_COLOR, lw=1.0,
                drawstyle="steps-post" if key == "n_basis" else "default")
        ax.set_ylabel(labels[key])
        if key == "n_basis" and budget:
            ax.axhline(float(budget), color=BUDGET_COLOR, lw=1.0, ls="--",
                       label=f"budget max_basis = {budget:g}")
            ax.set_ylim(0, max(float(budget), float(np.nanmax(v))) * 1.1)
            ax.legend(loc="lower right", fontsize=8)
        if key == "gcv" and np.nanmin(v) > 0:
            ax.set_yscale("log")
    axes[-1].set_xlabel(time_label)
    return png(fig), shown


def plot_diagnostics(t: TargetReport, time_label: str) -> tuple[bytes | None, list[str]]:
    """Moving-window RMSE plus whatever diagnostics the model reported; returns their names."""
    pred = t.predictions
    n = len(pred)
    if n == 0:
        return None, []
    first = min(int(t.metrics.get("warmup", 0) or 0), n - 1)
    scored = pred[first:]
    n_bins = max(1, min(200, len(scored) // 20))
    sq_mean, _, _ = block_reduce(scored, n_bins, of=lambda b: (b[:, TRUTH] - b[:, MEAN]) ** 2)
    tm, _, _ = block_reduce(scored[:, TIME], n_bins)
    panels: list[tuple[str, np.ndarray, np.ndarray, str]] = []
    times, values = (t.trace.as_arrays() if t.trace is not None else (np.empty(0), {}))
    # A model linear in its inputs reports n_basis as a count of inputs: no basis panel.
    keys = diagnostic_keys(t)
    for key, label in (("n_basis", "basis functions"),
                       ("effective_parameters", "effective parameters γ"), ("gcv", "GCV")):
        if key in keys and key in values and np.isfinite(values[key]).any():
            panels.append((key, times, values[key], label))
    shown = [key for key, *_ in panels]
    fig, axes = grid(11, 2.0 * (1 + len(panels)) + 0.3, 1 + len(panels), sharex=True,
                     gap=0.35, left=1.05)  # room for log-scale tick labels of the GCV
    ax = axes[0]
    ax.plot(tm, np.sqrt(sq_mean), color=TRUTH_COLOR, lw=1.0,
            label=f"RMSE in windows of {max(1, len(scored) // n_bins)} scored samples")
    if "noise_std" in values and np.isfinite(values["noise_std"]).any():
        ax.plot(times, values["noise_std"], color=HIT_COLOR, lw=1.0,
                label="model's noise estimate σ")
        shown.append("noise_std")
        noise = values["noise_std"][times >= (tm[0] if len(tm) else -np.inf)]
        robust, _, clipped = robust_range([np.sqrt(sq_mean), noise],
                                          [np.sqrt(sq_mean), values["noise_std"]])
        if clipped:
            ax.set_ylim(max(robust[0], 0.0), robust[1])
    ax.set_ylabel("error (target's units)")
    ax.set_title(f"{t.name}: error and model state over time", fontsize=10, parse_math=False)
    ax.legend(loc="upper right", fontsize=8)
    budget = t.metrics.get("basis_budget")
    for ax, (key, x, v, label) in zip(axes[1:], panels, strict=True):
        ax.plot(x, v, color=MEAN_COLOR, lw=1.0,
                drawstyle="steps-post" if key == "n_basis" else "default")
        ax.set_ylabel(label)
        if key == "n_basis" and budget:
            ax.axhline(float(budget), color=BUDGET_COLOR, lw=1.0, ls="--",
                       label=f"budget max_basis = {budget:g}")
            ax.set_ylim(0, float(budget) * 1.1)
            ax.legend(loc="lower right", fontsize=8)
        if key == "gcv" and np.nanmin(v) > 0:
            ax.set_yscale("log")
        # As for the predictions: the scored part sets the range, not the start-up transient.
        later = v[(x >= scored[0, TIME]) & np.isfinite(v)] if len(scored) else v[np.isfinite(v)]
        if key != "n_basis" and len(later) > 1 and np.nanmax(v) > 1.5 * later.max():
            top = later.max()
            low = later.min()
            ax.set_ylim(low / 1.5 if key == "gcv" and low > 0 else low - 0.1 * (top - low),
                        top * 1.5 if key == "gcv" else top + 0.1 * (top - low))
            ax.text(0.99, 0.95, "range of the scored part (the start goes beyond)",
                    transform=ax.transAxes, ha="right", va="top", fontsize=7, color="#7a4b00")
    axes[-1].set_xlabel(time_label)
    return png(fig), shown


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


def decision_summary(marked: Sequence[str], relevant: Sequence[str] | None, n: int) -> str:
    """One sentence on the model's relevant / irrelevant decisions, against the truth if known.

    >>> decision_summary(["a", "b", "x"], ["a", "b", "c"], 10)
    'the model marks 3 of 10 inputs relevant: 2 of the 3 truly relevant, 1 false positive'

    """
    text = f"the model marks {len(marked)} of {n} inputs relevant"
    if relevant is None:
        return text
    truth = set(relevant)
    found = len(truth & set(marked))
    wrong = len(set(marked) - truth)
    return (text + f": {found} of the {len(truth)} truly relevant, {wrong} false "
            f"positive{'s' * (wrong != 1)}")


def plot_relevance(t: TargetReport) -> bytes | None:
    """Bars of the relevance scores, coloured by the model's own decision when it makes one."""
    if not t.relevance:
        return None
    names = list(t.relevance)
    marked = t.metrics.get("relevant_inputs")
    if len(names) > 80:  # too many to label: the 40 most relevant, best first
        names = sorted(names, key=lambda f: -t.relevance[f])[:40]
    scores = np.array([t.relevance[f] for f in names], dtype=float)
    truth = set(t.relevant or ())
    if marked is not None:
        chosen = set(marked)
        colors = [MEAN_COLOR if f in chosen else OFF_COLOR for f in names]
    else:
        colors = [MEAN_COLOR] * len(names)
    fig, (ax,) = grid(max(7.0, min(16.0, 0.2 * len(names) + 1.4)), 3.9, bottom=0.95, top=0.8)
    ax.bar(range(len(names)), scores, color=colors,
           edgecolor=[HIT_COLOR if f in truth else "none" for f in names], linewidth=1.5)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7, parse_math=False)
    for tick, f in zip(ax.get_xticklabels(), names, strict=True):
        if f in truth:
            tick.set_color(HIT_COLOR)
            tick.set_fontweight("bold")
    ax.set_ylabel("relevance score")
    cutoff = t.metrics.get("relevance_cutoff")
    handles = []
    from matplotlib.patches import Patch

    if marked is not None:
        handles += [Patch(color=MEAN_COLOR, label="model: relevant"),
                    Patch(color=OFF_COLOR, label="model: irrelevant")]
        if cutoff is not None:
            handles.append(ax.axhline(float(cutoff), color=BUDGET_COLOR, lw=1.0, ls="--",
                                      label=f"model's threshold {float(cutoff):.3g}"))
    if truth:
        handles.append(Patch(facecolor="white", edgecolor=HIT_COLOR, lw=1.5,
                             label="truly relevant (orange outline and label)"))
    if handles:
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=8,
                  ncols=len(handles), frameon=False)
    ax.margins(x=0.01)
    return png(fig)


def _us(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def plot_latency(t: TargetReport, time_label: str) -> bytes | None:
    """Histogram of wall-clock (and CPU) time per sample, and the latency over time."""
    fig = latency_figure(t, time_label)
    return png(fig) if fig is not None else None


def latency_figure(t: TargetReport, time_label: str) -> Any:
    """The figure of :func:`plot_latency`, not yet drawn to PNG (``None``: nothing timed)."""
    h, cpu = t.latency, t.cpu_latency
    if h is None or h.n == 0:
        return None
    budget = t.metrics.get("budget_us")
    times, values = (t.trace.as_arrays() if t.trace is not None else (np.empty(0), {}))
    over_time = "latency_max_us" in values and len(times) > 1
    fig, axes = grid(11, 3.4 + 3.6 * over_time, 1 + over_time, gap=0.9, top=0.7,
                     bottom=1.2 if over_time else 0.6)
    ax = axes[0]
    shown = [h] + ([cpu] if cpu is not None and cpu.n else [])
    nz = np.concatenate([np.flatnonzero(x.counts) for x in shown])
    lo, hi = max(nz.min() - 2, 0), min(nz.max() + 3, len(h.counts))
    for hist, color, what in zip(shown, (MEAN_COLOR, CPU_COLOR), ("wall-clock", "CPU"),
                                 strict=False):
        ax.stairs(hist.counts[lo:hi], hist.edges[lo : hi + 1], color=color, lw=1.2,
                  label=f"{what}: median {_us(hist.quantile(0.5))}, p99 "
                        f"{_us(hist.quantile(0.99))}, max {_us(hist.max)} µs")
    ax.axvline(h.quantile(0.99), color=MEAN_COLOR, lw=1.0, ls=":")
    ax.axvline(h.max, color=MEAN_COLOR, lw=1.0, ls="-.", label="wall-clock worst case")
    right = max(h.edges[hi], h.max * 1.3)
    if budget:
        misses = t.metrics.get("deadline_misses")
        ax.axvline(float(budget), color=BUDGET_COLOR, lw=1.5, ls="--",
                   label=f"budget {_us(float(budget))} µs ({misses} misses)")
        right = max(right, float(budget) * 1.5)
    ax.set_xscale("log")
    ax.set_xlim(h.edges[lo], right)  # explicit: the budget may lie far beyond the samples
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.5)  # a bin of one sample stays visible on the log scale
    ax.set_xlabel("µs per predict_one + learn_one (log scale)")
    ax.set_ylabel("samples (log scale)")
    ax.set_title(f"{t.name}: time per sample over {h.n} scored samples, after warm_up()",
                 parse_math=False,
                 fontsize=10, loc="left")
    ax.legend(fontsize=8, loc="upper right")
    if over_time:
        _latency_over_time(axes[1], times, values, budget, time_label)
    return fig


def _latency_over_time(ax: Any, times: np.ndarray, values: Mapping[str, np.ndarray],
                       budget: float | None, time_label: str) -> None:
    """Slowest sample of each diagnostics interval, wall-clock and CPU, with heavy work."""
    # Each point is the slowest sample since the previous point: drawn over that interval.
    ax.plot(times, values["latency_max_us"], color=MEAN_COLOR, lw=0.9,
            drawstyle="steps-pre", label="slowest sample per interval, wall-clock")
    if "cpu_max_us" in values:
        ax.plot(times, values["cpu_max_us"], color=CPU_COLOR, lw=0.9, drawstyle="steps-pre",
                label="slowest sample per interval, CPU")
    if budget:
        ax.axhline(float(budget), color=BUDGET_COLOR, lw=1.5, ls="--", label="budget")
    ax.set_yscale("log")
    markers = dict(zip(HEAVY_COUNTERS, ("v", "^", "x", "+", "1"), strict=True))
    counted = [key for key in HEAVY_COUNTERS
               if values.get(key) is not None and np.isfinite(values[key]).any()]
    # The counter rose during the interval ending at a point: heavy work happened there.
    rises = {key: np.flatnonzero(np.diff(np.nan_to_num(values[key])) > 0) + 1
             for key in counted}
    rises = {key: rose for key, rose in rises.items() if len(rose)}
    marked = len(rises)
    # Each kind on a row of its own below the curves (on one row they merged into a band).
    bottom = ax.get_ylim()[0] / ROW_STEP ** (marked + 0.5)
    ax.set_ylim(bottom=bottom)
    for row, (key, rose) in enumerate(rises.items(), 1):
        ax.plot(times[rose], np.full(len(rose), bottom * ROW_STEP ** row), markers[key],
                ms=5, color=TRUTH_COLOR, alpha=0.7, ls="none",
                label=f"{HEAVY_COUNTERS[key]} ({len(rose)})")
    ax.set_xlabel(time_label)
    ax.set_ylabel("µs (log scale)")
    # The title promises markers only when some are drawn.
    title = ("latency over time; markers at the bottom: intervals with heavy work" if marked
             else "latency over time (no interval with heavy work)" if counted
             else "latency over time (the model reports no heavy-work counters)")
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.28), ncols=4,
              frameon=False)
    ax.margins(x=0.005)


def plot_model_comparison(targets: Sequence[str], per_model: Mapping[str, Mapping[str, Any]],
                          nonlinear: Mapping[str, bool] | None = None) -> bytes:
    """Grouped bars per target, one colour per model: nMSE, relevance AUC and, for models
    that decide which inputs are relevant, the false positives among those they mark (PNG).

    ``per_model`` maps a model name to ``{"nmse": [...], "auc": [...], "false": [...]}`` in
    ``targets`` order (NaN where a model has no value).
    """
    deciding = any(np.isfinite(np.asarray(v.get("false", []), dtype=float)).any()
                   for v in per_model.values())
    keys = ("nmse", "auc", "false") if deciding else ("nmse", "auc")
    fig, axes = grid(11, 2.3 * len(keys) + 1.0, len(keys), sharex=True, bottom=1.0, gap=0.5)
    n_models = max(len(per_model), 1)
    width = 0.8 / n_models
    x = np.arange(len(targets))
    palette = [MEAN_COLOR, HIT_COLOR, CPU_COLOR, "#8a4fb0", "#777777"]
    for i, (name, values) in enumerate(per_model.items()):
        offset = (i - (n_models - 1) / 2) * width
        for ax, key in zip(axes, keys, strict=True):
            v = np.asarray(values.get(key, [math.nan] * len(targets)), dtype=float)
            ax.bar(x + offset, np.nan_to_num(v), width, label=name,
                   color=palette[i % len(palette)])
    axes[0].set_ylabel("nMSE (lower is better)")
    axes[0].legend(fontsize=8)
    axes[0].set_title("accuracy per muscle", fontsize=10)
    axes[1].set_ylabel("relevance AUC")
    axes[1].set_ylim(0, 1.05)
    axes[1].axhline(0.5, color="#999999", lw=0.8, ls=":")
    axes[1].set_title("ranking by relevance score: chance that a truly relevant neuron outranks "
                      "an irrelevant one (0.5 = chance)", fontsize=10)
    if deciding:
        axes[2].set_ylabel("false positives")
        axes[2].set_title("neurons the model itself marks relevant that are not (models that "
                          "make no such decision: no bar)", fontsize=10)
    labels = [f"{t}{' *' if nonlinear and nonlinear.get(t) else ''}" for t in targets]
    axes[-1].set_xticks(x, labels, rotation=20, fontsize=8, parse_math=False)
    return png(fig)
