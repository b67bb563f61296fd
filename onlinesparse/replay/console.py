"""The ``onlinesparse`` console script: :func:`onlinesparse.replay.cli.main`, imported inside
a Ctrl-C handler. Importing the command line takes some tenths of a second (pandas,
cloudpickle, the replay's modules); a Ctrl-C in them printed a traceback where the command
says one line."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``onlinesparse`` command (:func:`onlinesparse.replay.cli.main`)."""
    try:
        from onlinesparse.replay.cli import main as command
    except KeyboardInterrupt:
        print("onlinesparse: interrupted before it started", file=sys.stderr)
        return 130
    return command(argv)
