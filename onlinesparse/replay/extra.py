"""The ``replay`` extra: what the replay application needs beyond the estimators.

The estimators need numpy, scipy, numba, river, pandas and threadpoolctl only; reading
Parquet, drawing the report and the progress bars need pyarrow, matplotlib and tqdm, which
``pip install 'onlinesparse[replay]'`` brings. The application checks for them before it
starts, so that a missing one is one clear message rather than an ``ImportError`` half-way
through a replay.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from onlinesparse.replay.errors import UsageError

__all__ = ["REPLAY_MODULES", "INSTALL_REPLAY", "MissingExtra", "missing_modules",
           "require_replay_extra"]

#: The modules of the ``replay`` extra.
REPLAY_MODULES = ("matplotlib", "pyarrow", "tqdm")
INSTALL_REPLAY = "pip install 'onlinesparse[replay]'"


class MissingExtra(UsageError):
    """An optional dependency the command needs is not installed (exit code 2)."""


def missing_modules(names: Sequence[str] = REPLAY_MODULES) -> list[str]:
    """The modules among ``names`` that cannot be imported here (found without importing)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a finder that refuses it, or a module set to None
            found = False
        if not found:
            missing.append(name)
    return missing


def require_replay_extra(what: str = "the replay application") -> None:
    """Raise :class:`MissingExtra`, naming the install command, when a module of the
    ``replay`` extra is missing.

    Parameters
    ----------
    what
        What needs the extra, for the message (e.g. ``"onlinesparse replay"``).

    """
    missing = missing_modules()
    if missing:
        raise MissingExtra(
            f"{what} needs the optional 'replay' extra, which is not installed here "
            f"(missing: {', '.join(missing)}); install it with: {INSTALL_REPLAY}"
        )
