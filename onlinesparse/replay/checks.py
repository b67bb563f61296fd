"""Checks of a replay's inputs that catch silent misuse before (and after) it runs.

By default every column but the targets and the time is a feature, which is convenient and
easy to get wrong: a sibling target (another muscle's EMG), a trial number, a row counter,
a condition code or, beside an array of spike counts, the behaviour recorded with them (a
velocity, a simulator's ground truth: fractional numbers among counts) fed to the model
looks like skill or like noise. :func:`feature_warnings`
reads the first rows and says which columns look like that; :func:`corrupt_column_hint`
names the column when one column made every row corrupt.

Counts are not codes. Spike counts are small non-negative integers too, but they change
from one bin to the next, while a condition or direction code holds each of its few values
for a whole trial: a column is called a code only when the runs of its less common values
last :data:`MIN_CODE_RUN` rows or more (median) and it does not sit in a block of
:data:`COUNT_BLOCK` or more neighbouring integer columns of one name stem (``n01`` …
``n80``: channels of one array). On the console all these warnings fold into one line
(:func:`fold_warnings`); the report and ``metrics.json`` list each in full.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["feature_warnings", "recording_warnings", "corrupt_column_hint", "fold_warnings",
           "FIRST_ROWS", "MIN_CODE_RUN", "COUNT_BLOCK"]

#: Rows read to judge the features (the first chunk of at most this many rows).
FIRST_ROWS = 2_000
#: A code holds its less common values this many rows at a time (median run) or longer.
MIN_CODE_RUN = 5
#: Neighbouring non-negative integer columns of one name stem that make a channel array.
COUNT_BLOCK = 8
#: Names that usually identify a row, a trial or a moment rather than measure something.
_ID_NAMES = re.compile(
    r"^(id|index|idx|row|rownum|trial|trial_?(id|no|num|number)|session|subject|sample|"
    r"epoch|time|timestamp|t|date|datetime|frame|count|counter|seq|sequence)$",
    re.IGNORECASE,
)
_TIME_NAMES = re.compile(r"^(time|timestamp|t|date|datetime|time_?s|seconds)$", re.IGNORECASE)


def _stem(name: str) -> str:
    """The part of a column name before its first separator or digit: ``emg`` of
    ``emg_biceps``, ``n`` of ``n012``."""
    match = re.match(r"[A-Za-z]+", name)
    return match.group(0).lower() if match else ""


def _whole(values: np.ndarray) -> bool:
    """Whether every one of ``values`` is a whole number."""
    return bool(np.all(values == np.round(values)))


def _siblings(features: Sequence[str], target: str) -> list[str]:
    """The features named like ``target`` (same stem, a separator after it)."""
    stem = _stem(target)
    if len(stem) < 2 or len(stem) == len(target):
        return []  # no separator in the target's name: nothing to compare
    return [f for f in features if _stem(f) == stem and f != target]


def _sibling_warnings(features: Sequence[str], targets: Sequence[str]) -> list[str]:
    """Features named like a target (same stem, separator after it): likely another target."""
    out = []
    for target in targets:
        siblings = _siblings(features, target)
        if siblings:
            shown = ", ".join(siblings[:6]) + (" …" if len(siblings) > 6 else "")
            out.append(
                f"feature{'s' * (len(siblings) > 1)} {shown} named like target {target!r}: "
                "if they are other targets recorded at the same time (another muscle's EMG), "
                "the model sees the answer's siblings; choose inputs with --features"
            )
    return out


def _held_like_a_code(values: np.ndarray) -> bool:
    """Whether the values other than the most common one come in long runs (median run
    ≥ :data:`MIN_CODE_RUN` rows), as a code held for a trial does and counts do not."""
    starts = np.concatenate([[0], np.flatnonzero(np.diff(values) != 0) + 1])
    lengths = np.diff(np.concatenate([starts, [len(values)]]))
    run_values = values[starts]
    uniq, counts = np.unique(values, return_counts=True)
    others = lengths[run_values != uniq[np.argmax(counts)]]
    return bool(len(others)) and float(np.median(others)) >= MIN_CODE_RUN


def _count_blocks(features: Sequence[str], rows: np.ndarray) -> set[int]:
    """Indices of features in a run of ≥ :data:`COUNT_BLOCK` neighbouring columns of one name
    stem that hold non-negative integers only: the channels of one array (spike counts)."""
    def counts(j: int) -> bool:
        col = rows[:, j]
        col = col[np.isfinite(col)]
        return bool(len(col)) and bool(np.all(col >= 0)) and _whole(col)

    out: set[int] = set()
    j = 0
    while j < len(features):
        k = j
        while (k < len(features) and _stem(features[k]) == _stem(features[j])
               and _stem(features[j]) and counts(k)):
            k += 1
        if k - j >= COUNT_BLOCK:
            out.update(range(j, k))
        j = max(k, j + 1)
    return out


def _column_warning(name: str, values: np.ndarray, in_array: bool = False) -> str | None:
    """Why one feature column looks like an identifier, a counter or a code, if it does;
    ``in_array``: the column is one channel of an array of counts (never a code)."""
    finite = values[np.isfinite(values)]
    if len(values) and not len(finite):
        return (f"feature {name!r} has no number in the first {len(values)} rows (text such as "
                "a date?): give it as --time if it is the time, or leave it out with --features")
    if len(finite) < 3:
        return None
    if _TIME_NAMES.match(name):
        return (f"feature {name!r} is named like the time: give it as --time (the report's "
                "time axis) unless the model should truly see it")
    if _ID_NAMES.match(name):
        return (f"feature {name!r} is named like an identifier or a time stamp; a model that "
                "is given it can learn the recording's order instead of its physics")
    if not _whole(finite):
        return None
    steps = np.diff(finite)
    distinct = len(np.unique(finite))
    if distinct > 2 and np.all(steps >= 0):
        return (f"feature {name!r} is a non-decreasing integer column (a row, trial or sample "
                "counter?); leave it out with --features unless it truly measures something")
    if (2 < distinct <= 16 and len(finite) >= 10 * distinct and not in_array
            and _held_like_a_code(finite)):
        return (f"feature {name!r} takes {distinct} integer values only, each held for many "
                "rows (a condition or direction code?); a code is not a quantity: one-hot "
                "encode it or leave it out")
    return None


def feature_warnings(features: Sequence[str], targets: Sequence[str],
                     first_rows: np.ndarray | None = None) -> list[str]:
    """Warnings about features that look like another target, an identifier or a code.

    Parameters
    ----------
    features
        The feature columns the replay uses.
    targets
        The target columns.
    first_rows
        The first rows' feature values (one column per feature; NaN where unparseable), or
        ``None`` to judge by the names only.

    Examples
    --------
    >>> import numpy as np
    >>> rows = np.column_stack([np.arange(100.0), np.random.default_rng(0).normal(size=100),
    ...                         np.zeros(100)])
    >>> for w in feature_warnings(["block", "emg_triceps", "trial_no"], ["emg_biceps"], rows):
    ...     print(w.split(":")[0].split(";")[0])
    feature emg_triceps named like target 'emg_biceps'
    feature 'block' is a non-decreasing integer column (a row, trial or sample counter?)
    feature 'trial_no' is named like an identifier or a time stamp

    """
    out = _sibling_warnings(features, targets)
    if first_rows is not None:
        rows = np.asarray(first_rows, dtype=float)
        arrays = _count_blocks(features, rows)
        named = {f for target in targets for f in _siblings(features, target)}
        for j, name in enumerate(features):
            message = (_column_warning(name, rows[:, j], j in arrays)
                       or (_beside_counts(name, rows[:, j], len(arrays))
                           if arrays and j not in arrays and name not in named else None))
            if message:
                out.append(message)
    return out


def _beside_counts(name: str, values: np.ndarray, channels: int) -> str | None:
    """Why a column of fractional numbers beside an array of ``channels`` count channels
    looks like behaviour rather than an input, if it does: a recording of spike counts
    usually carries its behaviour too (another muscle's EMG, the hand's velocity, a
    simulator's ground truth), and decoding from it reads the answer's neighbours."""
    finite = values[np.isfinite(values)]
    if len(finite) < 3 or _whole(finite):
        return None
    return (f"feature {name!r} holds fractional numbers beside {channels} count channels "
            "(behaviour recorded with them: another target, a velocity, a ground truth?); "
            "the model decodes from it too unless you choose the inputs with --features")


_KINDS = (
    ("named like target", "named like a target"),
    ("has no number", "not numbers"),
    ("named like the time", "the time"),
    ("named like an identifier", "identifiers or time stamps"),
    ("non-decreasing integer", "counters"),
    ("integer values only", "codes"),
    ("fractional numbers beside", "fractional numbers beside count channels"),
)


def _subject(warning: str) -> str:
    """The column(s) a warning of :func:`feature_warnings` is about."""
    head = warning.split(" named like target")[0]
    quoted = re.match(r"features? '([^']+)'", head)
    return quoted.group(1) if quoted else head.split(" ", 1)[-1]


def fold_warnings(warnings: Sequence[str]) -> str | None:
    """All of ``warnings`` (from :func:`feature_warnings`) in one console line: the columns
    grouped by what is wrong with them; a single warning is given whole.

    >>> fold_warnings(["feature 'a' is named like an identifier or a time stamp; …",
    ...                "feature 'b' takes 8 integer values only, each held …"])
    '2 features look wrong as inputs: identifiers or time stamps: a; codes: b (choose \
the inputs with --features; each reason in the report and metrics.json)'

    """
    if len(warnings) <= 1:
        return warnings[0] if warnings else None
    groups: dict[str, list[str]] = {}
    for warning in warnings:
        label = next((lab for key, lab in _KINDS if key in warning), "other")
        groups.setdefault(label, []).append(_subject(warning))
    parts = [f"{label}: " + ", ".join(names[:8]) + (f" … (+{len(names) - 8})"
                                                    if len(names) > 8 else "")
             for label, names in groups.items()]
    return (f"{len(warnings)} features look wrong as inputs: {'; '.join(parts)} (choose the "
            "inputs with --features; each reason in the report and metrics.json)")


def corrupt_column_hint(reasons: Sequence[str], targets: Sequence[str] = ()) -> str | None:
    """When every reason of ``reasons`` (why rows were corrupt) names the same column: a
    sentence naming it and saying what to do (for one of the ``targets``: that a target
    must hold numbers); else ``None``.

    >>> corrupt_column_hint(["unparseable value 'x' in column 'Time'"] * 3).split(" (")[0]
    "column 'Time' made every row corrupt"

    """
    cols = Counter(m.group(1) for r in reasons if (m := re.search(r"column '([^']+)'", r)))
    if len(cols) != 1 or sum(cols.values()) != len(reasons):
        return None
    (col, _), = cols.items()
    if col in targets:
        return (f"column {col!r} made every row corrupt ({reasons[0]}): a target must hold "
                "numbers (units or other text in its cells: convert them before the replay)")
    return (f"column {col!r} made every row corrupt ({reasons[0]}): leave it out with "
            "--features, or give it as --time if it is the time")


def recording_warnings(recording: Any, columns: Any) -> list[str]:
    """:func:`feature_warnings` on the first :data:`FIRST_ROWS` rows of ``recording``.

    ``recording`` is a :class:`~onlinesparse.replay.reader.Recording` and ``columns`` its
    selected :class:`~onlinesparse.replay.reader.Columns`. Reading them must not stop a
    replay, so a failure to read gives the warnings that the names alone give.
    """
    rows = None
    try:
        chunk = next(recording.iter_chunks(columns, columns.targets[0], FIRST_ROWS, 0), None)
        rows = chunk.X if chunk is not None else None
    except Exception:  # noqa: BLE001 - the replay reports unreadable data itself
        pass
    return feature_warnings(list(columns.features), list(columns.targets), rows)
