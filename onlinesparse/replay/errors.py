"""Errors the replay raises, each carrying the exit code the command line returns for it."""

from __future__ import annotations

__all__ = ["ReplayError", "UsageError", "ReplayFailure"]


class ReplayError(Exception):
    """Base class: a problem a person can act on, with the message to show them.

    Attributes
    ----------
    exit_code
        The process exit code ``onlinesparse`` returns when this error ends a command.

    """

    exit_code = 1


class UsageError(ReplayError):
    """The command cannot start: missing file, unknown column, bad parameter (exit code 2)."""

    exit_code = 2


class ReplayFailure(ReplayError):
    """The replay started but had to stop: a corrupt row under ``--strict``, a model that
    raised (exit code 1). Everything processed before the failure has been written."""

    exit_code = 1
