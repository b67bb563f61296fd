"""warm_up() leaves nothing for a fresh model's first ticks to load, compile or type.

These count work, never time: numba's events (``warm.numba_work``: a function whose machine
code numba looks up or compiles) and calls of numba's Python-level typing
(``Dispatcher.typeof_pyval``, some 4 ms for a model's bundle of record arrays)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from onlinesparse import _jit

# In a fresh process (nothing loaded before warm_up): the first ticks of fresh models of
# each family, as a stream or a control loop drives them (predict, then learn; a
# distribution on every other prediction), counting numba's work during them.
_FIRST_TICKS = """
import json, sys
import numpy as np
from numba.core.dispatcher import Dispatcher
from onlinesparse import (SparseRBFRegressor, VBLSClassifier, VBLSKernelRegressor,
                          VBLSRegressor, warm_up)
from onlinesparse.warm import numba_work

warm_up()
typed = []
plain = Dispatcher.typeof_pyval
Dispatcher.typeof_pyval = lambda self, v: typed.append(self.__qualname__) or plain(self, v)
events = []
rng = np.random.default_rng(7)
models = [(SparseRBFRegressor(), 3), (SparseRBFRegressor(last_target=False), 21),
          (SparseRBFRegressor(memory="window"), 3), (VBLSRegressor(), 21),
          (VBLSKernelRegressor(), 3), (VBLSClassifier(), 3)]
with numba_work(lambda kind, name: events.append((kind, name))):
    for model, d in models:
        for k in range(TICKS):
            x = {f"x{i}": float(v) for i, v in enumerate(rng.uniform(-1.0, 1.0, d))}
            y = float(np.sin(3.0 * x["x0"]) + 0.1 * rng.standard_normal())
            if isinstance(model, VBLSClassifier):
                model.predict_proba_one(x)
                model.learn_one(x, y > 0.0)
            else:
                model.predict_one(x, with_dist=k % 2 == 0)
                model.learn_one(x, y)
print(json.dumps({"events": events, "typed": typed}))
"""


def test_a_fresh_model_s_first_ticks_after_warm_up_load_compile_and_type_nothing():
    """The first 60 ticks of fresh models of every family, after warm_up() in a fresh
    process: numba neither loads nor compiles a function, and never works out a type in
    Python (a fresh RBF model's compiled calls are found from the types warm_up met)."""
    code = _FIRST_TICKS.replace("TICKS", "60")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    work = json.loads(out.stdout.splitlines()[-1])
    assert work == {"events": [], "typed": []}


def test_numba_work_reports_what_a_cold_process_loads():
    """The listener the test above relies on does hear numba: a process that has not
    warmed up loads a fresh model's functions on its first sample."""
    code = ("import json\nfrom onlinesparse import SparseRBFRegressor\n"
            "from onlinesparse.warm import numba_work\nevents = []\n"
            "with numba_work(lambda kind, name: events.append((kind, name))):\n"
            "    m = SparseRBFRegressor()\n    m.learn_one({'a': 1.0}, 2.0)\n"
            "    m.learn_one({'a': 2.0}, 1.0)\n    m.predict_one({'a': 1.5})\n"
            "print(json.dumps(events))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    events = json.loads(out.stdout.splitlines()[-1])
    names = [name for kind, name in events if kind == "dispatch"]
    assert "stream_sample" in names and "prediction" in names
    assert len(names) == len(set(names))  # (one report per function, not per lock taken)


def test_an_entry_point_is_typed_once_per_signature(monkeypatch):
    """entry_point works out numba's types for a signature once; later calls with values
    of the same types find it by key, and values of other types (layout, writability,
    dtype, an int beyond int64) have other keys."""
    from numba import njit

    @njit
    def total(a, k):
        return a.sum() + k

    typed = []
    plain = type(total).typeof_pyval
    monkeypatch.setattr(type(total), "typeof_pyval",
                        lambda self, v: typed.append(v) or plain(self, v))
    first = _jit.entry_point(total, np.zeros(3), 1)
    assert len(typed) == 2
    assert _jit.entry_point(total, np.ones(5), 7) is first
    assert len(typed) == 2  # (found by key: no typing)
    c = np.zeros((3, 3))
    frozen = np.zeros(3)
    frozen.flags.writeable = False
    keys = {_jit._type_key(v) for v in (np.zeros(3), c, c.T, c[:, 0], frozen,
                                        np.zeros(3, dtype=np.float32))}
    assert len(keys) == 6
    assert _jit._type_key(2**63) != _jit._type_key(1) and _jit._type_key(object()) is None
    assert _jit._type_key((np.zeros(2), object())) is None


def test_the_cli_prints_compile_progress_every_few_seconds():
    """Besides every 40 functions, a count line whenever some seconds have passed since
    the last line: a slow stretch of the compilation is not silent."""
    import io

    from onlinesparse.warm import cold_progress

    out = io.StringIO()
    progress = cold_progress(out, every=40, seconds=0.0)
    for k in range(3):
        progress(f"compiling {k + 1}: f{k}")
    progress("still compiling (12 s)")
    lines = out.getvalue().splitlines()
    assert "compiling the numerical core, once for this installation" in lines.pop(0)
    assert lines[:3] == [f"onlinesparse: {k + 1} functions compiled (0 s)" for k in range(3)]
    assert lines[3] == "onlinesparse: still compiling (12 s)"


def test_after_warm_up_the_cache_is_not_cold():
    from onlinesparse import warm_up
    from onlinesparse.warm import cache_is_cold

    warm_up()
    assert not cache_is_cold()


def test_warm_up_says_so_by_default_when_it_has_to_compile_and_nothing_otherwise(
        monkeypatch, capsys):
    from onlinesparse import warm

    monkeypatch.setattr(warm, "cache_is_cold", lambda: True)
    warm.warm_up()
    said = capsys.readouterr().err
    assert "compiling the numerical core, once for this installation" in said
    assert "compiled core ready" in said
    monkeypatch.setattr(warm, "cache_is_cold", lambda: False)
    warm.warm_up()
    assert capsys.readouterr().err == ""


def test_a_matrix_that_is_both_c_and_f_contiguous_keys_as_numba_types_it():
    # numba's layout: C when C-contiguous, else F, else A. An empty or 1 × 1 S (a model's
    # first bundle) is both, and keyed apart from a grown S it sent every model unpickled
    # with M ≥ 2 through numba's typeof (4 ms) on its first prediction.
    key = _jit._type_key
    assert key(np.zeros((0, 0))) == key(np.zeros((1, 1))) == key(np.zeros((3, 3)))
    assert key(np.zeros((3, 3), order="F")) != key(np.zeros((3, 3)))


def test_a_model_unpickled_grown_finds_its_compiled_calls_without_numba_typeof(monkeypatch):
    import pickle

    from numba.core.dispatcher import Dispatcher

    from onlinesparse import SparseRBFRegressor

    rng = np.random.default_rng(0)
    model = SparseRBFRegressor(max_basis=8)
    for _ in range(200):  # (its first bundle's entry points are found with S empty)
        x = {f"x{i}": float(v) for i, v in enumerate(rng.uniform(-1, 1, 3))}
        model.predict_one(x)
        model.learn_one(x, float(np.sin(3 * x["x0"])))
    assert model.n_basis >= 2
    loaded = pickle.loads(pickle.dumps(model))
    typed = []
    original = Dispatcher.typeof_pyval
    monkeypatch.setattr(Dispatcher, "typeof_pyval",
                        lambda self, value: typed.append(value) or original(self, value))
    assert loaded.predict_one(x) == model.predict_one(x)
    loaded.learn_one(x, 0.5)
    assert typed == []
