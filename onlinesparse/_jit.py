"""The one compilation rule of the package: numba, cached on disk, no fastmath.

``cache=True`` keeps the machine code next to each module, so later processes load it
instead of compiling (``onlinesparse.warm_up`` loads it before a control loop starts).
``fastmath`` stays off so that results are reproducible to the last bit and NaN / inf
behave as IEEE says. Every module with compiled code takes its decorator from here, and
:func:`drop_stale_cache` guards all of them as one unit.
"""

from __future__ import annotations

import hashlib
import pathlib
import re

import numba
import numpy as np

jit = numba.njit(cache=True, nogil=True)
# The same rule with NumPy's error model (a division by zero gives inf or NaN instead of
# raising): the VBLS sweeps divide by precisions that may underflow.
jit_numpy_errors = numba.njit(cache=True, nogil=True, error_model="numpy")

EPS = float(np.finfo(np.float64).eps)

PACKAGE = pathlib.Path(__file__).parent
STAMP = PACKAGE / "__pycache__" / "compiled-sources.sha256"


_DECORATED = re.compile(r"^@_?jit\b", re.MULTILINE)


def compiled_sources(package: pathlib.Path = PACKAGE) -> list[pathlib.Path]:
    """Every module of the package with a function compiled by this rule (decorated
    ``@jit``, or ``@_jit`` where VBLS names the NumPy-error variant so), every module of
    ``core/`` (compiled code freezes the constants it reads there, such as
    ``core.state``'s codes), and this module itself. A module that only calls compiled
    code does not decide the cache."""
    return sorted(path for path in package.rglob("*.py")
                  if path.name == "_jit.py" or path.parent.name == "core"
                  or _DECORATED.search(path.read_text()))


def sources_digest(package: pathlib.Path = PACKAGE) -> str:
    digest = hashlib.sha256()
    for path in compiled_sources(package):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def drop_stale_cache(package: pathlib.Path = PACKAGE) -> bool:
    """Delete every cached machine code of the package when the source of any module with
    compiled code has changed; returns whether it did.

    numba keys a function's cache on its own module's source file only, so a function that
    calls into another module (VBLS's sweeps call the core's) keeps its stale machine code
    when the callee changes, after an upgrade or while developing. A digest of all the
    compiled sources, kept in each directory numba caches them in (:func:`cache_folders`:
    beside the sources, under ``NUMBA_CACHE_DIR``, or the user's cache for a read-only
    installation), decides for all of them there. A folder that cannot be written keeps
    what it holds.
    """
    digest = sources_digest(package)
    dropped = False
    for folder in cache_folders(package):
        stamp = folder / STAMP.name
        try:
            if stamp.exists() and stamp.read_text() == digest:
                continue
            for cached in folder.glob("*.nb[ic]"):
                dropped = True
                cached.unlink(missing_ok=True)  # (another process may clear it too)
            folder.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest)
        except OSError:  # (left unstamped: the next import tries again)
            continue
    return dropped


def cache_folders(package: pathlib.Path = PACKAGE) -> list[pathlib.Path]:
    """The folder numba caches each source folder's compiled functions in, as its own
    locators choose it (``__pycache__`` beside a writable source, else under
    ``NUMBA_CACHE_DIR`` when it is set, or the user-wide cache)."""
    first: dict[pathlib.Path, pathlib.Path] = {}
    for source in compiled_sources(package):
        first.setdefault(source.parent, source)
    return sorted({_cache_folder(source) for source in first.values()})


def _cache_folder(source: pathlib.Path) -> pathlib.Path:
    """Where numba would cache a function compiled from ``source`` (a probe function with
    that file name, located by numba's own locators), ``__pycache__`` beside it if numba
    does not say."""
    namespace: dict = {}
    exec(compile("def probe():\n    pass\n", str(source), "exec"), namespace)
    try:
        from numba.core.caching import CompileResultCacheImpl

        return pathlib.Path(
            CompileResultCacheImpl(namespace["probe"])._locator.get_cache_path())
    except (AttributeError, ImportError, OSError, RuntimeError):  # (another numba's layout)
        return source.parent / "__pycache__"


drop_stale_cache()  # (on the first import of compiled code, before any of it loads)


def entry_point(dispatcher, *args):
    """The machine code ``dispatcher`` runs for arguments of these types, to be called
    with such arguments without numba's per-call type dispatch: for a bundle of 35 arrays
    that dispatch costs about 10 µs a call (the type of a tuple is worked out in Python),
    the entry point under 2 µs. The caller keeps it while its arguments keep their types
    (arrays of the same dtype, dimensions and layout) and calls through the dispatcher
    otherwise. Compiles (or loads from the cache) on first use. A plain Python function
    (a test's stand-in) is returned as it is.

    Found once per process for each signature: numba's ``typeof`` of a bundle of record
    arrays takes about 4 ms (it rebuilds each structured dtype's numba type), which every
    new model paid on its first ``learn_one``; a key made of what that type depends on
    (:func:`_type_key`, some 30 µs) finds the entry point found before."""
    if not hasattr(dispatcher, "overloads"):
        return dispatcher
    key = (dispatcher, _type_key(args))
    found = _ENTRY_POINTS.get(key) if key[1] is not None else None
    if found is not None:
        return found
    signature = tuple(dispatcher.typeof_pyval(a) for a in args)
    if signature not in dispatcher.overloads:
        dispatcher.compile(signature)
    found = dispatcher.overloads[signature].entry_point
    if key[1] is not None:
        _ENTRY_POINTS[key] = found
    return found


_ENTRY_POINTS: dict = {}
_INT64 = (-(2**63), 2**63)


def _type_key(value):
    """What numba's type of ``value`` depends on, as a hashable key (``None`` for a value
    this does not know: such a call takes numba's own ``typeof``). An array's type is its
    class, dtype (with a structured dtype's alignment), dimensions, layout, writability
    and alignment; a tuple's its class and its members'; a Python int's whether it fits
    in int64. The key holds the dtypes themselves, compared by value. The layout is
    numba's (``C`` when C-contiguous, else ``F`` when Fortran-contiguous, else ``A``), not
    the two flags: an empty or 1 × 1 matrix is both, so a model's first bundle would key
    its S apart from a grown model's, and a model unpickled with M ≥ 2 paid numba's 4 ms
    ``typeof`` on its first prediction."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return (type(value), value.dtype, value.dtype.isalignedstruct, value.ndim, layout,
                flags.writeable, flags.aligned)
    if isinstance(value, tuple):
        members = tuple(_type_key(v) for v in value)
        return None if None in members else (type(value), members)
    if type(value) is int:
        return (int, _INT64[0] <= value < _INT64[1])
    if type(value) in (float, bool, complex):
        return type(value)
    return None
