"""Older layouts of a pickled :class:`~onlinesparse.orr.rbf.SparseRBFRegressor`, brought to
today's, so that a checkpoint written by an earlier version loads (the estimator's own
pickles only: nothing here unpickles anything)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onlinesparse import core
from onlinesparse.core.state import SAMPLE, upgrade_record
from onlinesparse.memory import AdaptiveMemory
from onlinesparse.orr.input_metric import InputMetric

__all__ = ["upgrade_rbf_state"]

# Scratch arrays and caches of the versions before the scalars had a record.
_FORMER_SCRATCH = ("_in_registers", "_fuse", "_arguments", "_predict_arguments", "_ints",
                   "_floats", "_stable_arguments", "_row_buffer", "_move_buffer")


def upgrade_rbf_state(state: dict, new_record: Callable[[dict], np.ndarray]) -> dict:
    """``state`` (a pickled estimator's ``__dict__``) in today's layout, changed in place
    and returned; ``new_record`` builds the scalars' record from an old state's
    attributes."""
    if "record" not in state:  # a pickle written before the scalars had a record
        state["record"] = new_record(state)
        for name in _FORMER_SCRATCH:
            state.pop(name, None)
        # (before adaptive memory: the fixed window it was trained with)
        state.setdefault("memory", "window")
        state.setdefault("n_memory_cuts", 0)
    state["record"] = upgrade_record(state["record"], SAMPLE)
    state.setdefault("_levels", core.new_levels())  # (a pickle from before the level)
    for name in ("_detector", "_bias_detector"):  # (river ADWINs before the CUSUM)
        state.pop(name, None)
    if "window" in state and "window_size" not in state:  # (the parameter's old name)
        state["window_size"] = state.pop("window")
    if "model" in state:  # a checkpoint written before the fused path
        state["_model"] = state.pop("model")
    if "metric" not in state:  # (a pickle from before the inputs' relevance: as it was)
        state["metric"] = "isotropic"
    if state.get("_model") is not None and "_inputs" not in state:
        state["_inputs"] = InputMetric(state["_model"].window.n_features, state["metric"])
    if state.get("_model") is not None and "_adaptive" not in state:
        # (the memory's state was the estimator's own attributes, absent until set)
        state["_adaptive"] = AdaptiveMemory(
            state["window_size"], last_alarm=state.pop("_last_alarm", -1),
            cap=state.pop("_memory_cap", 0), cap_since=state.pop("_cap_since", 0),
            stale=state.pop("_stale", 0))
    if "concepts" not in state:  # (a pickle from before recurring concepts: as it was)
        state["concepts"] = 0
    return state
