"""The one stale-cache guard: a change to any module with compiled code clears the cached
machine code of every module, VBLS's included (numba keys a cache on its own file only,
and VBLS's sweeps call the core's functions from another file)."""

from __future__ import annotations

import pathlib

from onlinesparse import _jit


def _package(root: pathlib.Path) -> pathlib.Path:
    """A package laid out as onlinesparse is, with cached machine code beside two modules."""
    package = root / "pkg"
    for name, text in (("_jit.py", "jit = None\n"),
                       ("core/selection.py", "from onlinesparse._jit import jit\n@jit\n"
                                             "def a():\n    return 1\n"),
                       ("vbls/_compiled.py", "from onlinesparse._jit import jit_numpy_errors"
                                             " as _jit\n@_jit\ndef b():\n    return 2\n"),
                       ("orr/rbf.py", "from onlinesparse._jit import entry_point\n"),
                       ("replay/report.py", "X = 3\n")):
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def _cache(package: pathlib.Path) -> list[pathlib.Path]:
    files = [package / "core/__pycache__/selection.least_useful-1.py311.nbi",
             package / "vbls/__pycache__/_compiled.sweep-1.py311.nbc"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"machine code")
    return files


def test_a_changed_core_function_clears_the_cache_of_vbls_too(tmp_path):
    package = _package(tmp_path)
    assert {p.name for p in _jit.compiled_sources(package)} == {"_jit.py", "selection.py",
                                                                 "_compiled.py"}
    (package / "core/state.py").write_text("REFRESH = 1\n")  # (constants compiled code reads)
    assert (package / "core/state.py") in _jit.compiled_sources(package)
    _jit.drop_stale_cache(package)
    cached = _cache(package)
    assert not _jit.drop_stale_cache(package)  # (nothing changed: the cache stays)
    assert all(path.exists() for path in cached)
    for name in ("replay/report.py", "orr/rbf.py"):  # (no compiled function: no effect)
        (package / name).write_text("X = 4\n")
        assert not _jit.drop_stale_cache(package)
    (package / "core/selection.py").write_text("from onlinesparse._jit import jit\n@jit\n"
                                               "def a():\n    return 2\n")
    assert _jit.drop_stale_cache(package)
    assert not any(path.exists() for path in cached)


def test_every_module_with_compiled_code_takes_the_one_rule():
    """Nothing in the package compiles with numba but through ``onlinesparse._jit``."""
    package = _jit.PACKAGE
    for path in package.rglob("*.py"):
        text = path.read_text()
        if path.name != "_jit.py":
            assert "numba.njit" not in text and "@numba.jit" not in text, path
    names = {str(p.relative_to(package)) for p in _jit.compiled_sources()}
    assert {"vbls/_compiled.py", "core/pruning.py", "stream/level.py",
            "orr/sample.py"} <= names


def test_a_cache_under_numba_cache_dir_is_cleared_too(tmp_path, monkeypatch):
    """Where NUMBA_CACHE_DIR is set (a read-only installation, a container), numba keeps
    the machine code there and not beside the sources: a stale one there is dropped."""
    import numba

    package = _package(tmp_path)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba-cache"))
    folders = _jit.cache_folders(package)
    assert len(folders) == 3  # (the package root, core/, vbls/)
    assert all(tmp_path / "numba-cache" in folder.parents for folder in folders)
    _jit.drop_stale_cache(package)
    cached = []
    for folder in folders:
        cached.append(folder / "f-1.py311.nbi")
        cached[-1].write_bytes(b"machine code")
    assert not _jit.drop_stale_cache(package)
    assert all(path.exists() for path in cached)
    (package / "core/selection.py").write_text("from onlinesparse._jit import jit\n@jit\n"
                                               "def a():\n    return 3\n")
    assert _jit.drop_stale_cache(package)
    assert not any(path.exists() for path in cached)
    assert not any((package / "core").glob("__pycache__/*.nbi"))
