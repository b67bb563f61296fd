"""Checkpoints of a replay: the model and everything needed to continue exactly where it was.

A checkpoint is a pickle of ``{"format", "version", "fingerprint", "state"}``. The
fingerprint is the part of the replay's configuration that must not change across a resume
(columns, model, parameters, standardisation, warm-up); resuming with a different one is a
usage error that names the differences. Files are written to a temporary file in the same
directory and renamed over the old one, so a crash while saving leaves the previous
checkpoint intact.

Only load checkpoints you wrote: unpickling runs code named in the file.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from onlinesparse.replay.errors import UsageError

__all__ = ["CHECKPOINT_FORMAT", "CHECKPOINT_VERSION", "save_checkpoint", "load_checkpoint"]

CHECKPOINT_FORMAT = "onlinesparse-replay-checkpoint"
CHECKPOINT_VERSION = 1


def save_checkpoint(path: str | Path, fingerprint: dict[str, Any], state: Any) -> Path:
    """Write ``state`` atomically to ``path`` (temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "fingerprint": fingerprint,
        "state": state,
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(path: str | Path, fingerprint: dict[str, Any] | None = None) -> Any:
    """Read the state saved at ``path``, checking its format, version and fingerprint.

    Parameters
    ----------
    path
        The checkpoint file.
    fingerprint
        When given, the saved fingerprint must equal it; the error names each difference.

    Raises
    ------
    UsageError
        When the file is missing, is not a checkpoint, has another version, or was made
        by a replay with another configuration.

    """
    path = Path(path)
    if not path.exists():
        raise UsageError(f"no checkpoint at {path}: nothing to resume (drop --resume to start)")
    try:
        with open(path, "rb") as fh:
            payload = pickle.load(fh)
    except Exception as exc:  # unpickling can raise nearly anything on a foreign file
        raise UsageError(f"{path} is not a readable replay checkpoint ({exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise UsageError(f"{path} is not an onlinesparse replay checkpoint")
    if payload.get("version") != CHECKPOINT_VERSION:
        raise UsageError(
            f"{path} is a version {payload.get('version')} checkpoint; this onlinesparse "
            f"reads version {CHECKPOINT_VERSION}"
        )
    if fingerprint is not None:
        saved = payload.get("fingerprint", {})
        diffs = [
            f"{key}: checkpoint has {saved.get(key)!r}, this run has {fingerprint.get(key)!r}"
            for key in sorted(set(saved) | set(fingerprint))
            if saved.get(key) != fingerprint.get(key)
        ]
        if diffs:
            raise UsageError(
                f"checkpoint {path} was made by a replay configured differently; resume with "
                "the same options, or start again without --resume. Differences: "
                + "; ".join(diffs)
            )
    return payload["state"]
