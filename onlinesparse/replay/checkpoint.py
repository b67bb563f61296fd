"""Checkpoints of a replay: the model and everything needed to continue exactly where it was.

A checkpoint file is one line of magic, one line of JSON header, then the payload::

    onlinesparse-replay-checkpoint 2\\n
    {"fingerprint": …, "recording": …, "payload_bytes": …, "sha256": …, "hmac": …}\\n
    <pickle of the replay state>

The payload is a pickle, because the models are river estimators whose state is whatever
their attributes are (and the Orr core changes); a pickle is the only format that does not
need per-model support. Unpickling runs code named in the file, so **nothing is unpickled
before the file is proven to be ours**:

1. the header is parsed as JSON (data only) and its HMAC-SHA256, keyed with a secret kept
   in the user's configuration directory (``$XDG_CONFIG_HOME/onlinesparse/key``, created
   with mode 0600 on first use), is checked over the header and the payload: a file
   crafted or copied from someone else does not carry a valid tag;
2. the payload's SHA-256 and length are checked (a byte flip, a truncated file);
3. the configuration fingerprint and the recording's fingerprint (its size and the SHA-256
   of its first and last MiB) must equal this run's: resuming on another recording, a
   shorter one or a shuffled one is refused with the differences named.

Only then is the payload unpickled. Files are written to a temporary file in the same
directory and renamed over the old one, so a crash while saving leaves the previous
checkpoint intact; temporary files a killed save left behind are removed by the next save
or load of the same checkpoint. See ``docs/replay_failures.md`` ("Checkpoints and trust").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Any

from onlinesparse.replay.errors import UsageError

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_VERSION",
    "save_checkpoint",
    "load_checkpoint",
    "recording_fingerprint",
    "key_path",
    "remove_stale_temporaries",
    "check_key",
]

CHECKPOINT_FORMAT = "onlinesparse-replay-checkpoint"
CHECKPOINT_VERSION = 2
_MAGIC = f"{CHECKPOINT_FORMAT} {CHECKPOINT_VERSION}\n".encode()
_MAX_HEADER = 1 << 20  # a header is a few KiB; refuse to read an unbounded "line"
_EDGE = 1 << 20  # bytes of the recording hashed at each end


def key_path() -> Path:
    """Where the per-user checkpoint key lives: ``$XDG_CONFIG_HOME/onlinesparse/key``
    (``~/.config/onlinesparse/key`` when the variable is unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "onlinesparse" / "key"


def check_key() -> None:
    """Make sure the user's key exists and is usable (before a replay that will save)."""
    _key(create=True)


def _key(create: bool) -> bytes | None:
    """The user's key; created (32 random bytes, mode 0600) when ``create`` and missing."""
    path = key_path()
    if not path.exists():
        if not create:
            return None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it meanwhile: use theirs
            return path.read_bytes()
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    if os.name == "posix" and stat.S_IMODE(path.stat().st_mode) & 0o077:
        raise UsageError(
            f"the checkpoint key {path} is readable by other users, so a checkpoint signed "
            f"with it proves nothing; make it private with: chmod 600 {path}"
        )
    key = path.read_bytes()
    if len(key) < 16:
        raise UsageError(f"the checkpoint key {path} is too short; delete it to make a new one")
    return key


def recording_fingerprint(path: str | Path) -> dict[str, Any]:
    """The recording's size and the SHA-256 of its first and last MiB.

    Cheap at any size (2 MiB read), and it changes when the file is cut, extended,
    shuffled or replaced; a change in the middle of a file larger than 2 MiB that keeps its
    size is not seen.
    """
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = hashlib.sha256(fh.read(_EDGE)).hexdigest()
        fh.seek(max(size - _EDGE, 0))
        tail = hashlib.sha256(fh.read(_EDGE)).hexdigest()
    return {"size": size, "head_sha256": head, "tail_sha256": tail}


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary files an interrupted save of ``path`` left behind."""
    path = Path(path)
    removed = []
    if path.parent.is_dir():
        for tmp in path.parent.glob(f".{path.name}.*.tmp"):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _tag(key: bytes, header: bytes, payload: bytes) -> str:
    mac = hmac.new(key, _MAGIC, hashlib.sha256)
    mac.update(len(header).to_bytes(8, "big"))
    mac.update(header)
    mac.update(payload)
    return mac.hexdigest()


def save_checkpoint(
    path: str | Path,
    fingerprint: dict[str, Any],
    state: Any,
    recording: dict[str, Any] | None = None,
) -> Path:
    """Write ``state`` atomically to ``path`` (temporary file, fsync, rename), signed.

    Parameters
    ----------
    path
        The checkpoint file.
    fingerprint
        The configuration a resume must agree with (JSON-serialisable).
    state
        The replay's state; pickled.
    recording
        :func:`recording_fingerprint` of the recording, checked on resume.

    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    fields = {
        "fingerprint": fingerprint,
        "recording": recording,
        "payload_bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    body = json.dumps(fields, sort_keys=True, default=repr).encode()
    key = _key(create=True)
    header = json.dumps({**json.loads(body), "hmac": _tag(key, body, payload)},
                        sort_keys=True).encode()
    _write_file(path, _MAGIC + header + b"\n" + payload)
    return path


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_verified(path: Path) -> tuple[dict[str, Any], bytes]:
    """The header and payload of ``path``, after every check that needs no unpickling."""
    with open(path, "rb") as fh:
        magic = fh.read(len(_MAGIC))
        if magic != _MAGIC:
            if magic.startswith(CHECKPOINT_FORMAT.encode()):
                raise UsageError(f"{path} is a checkpoint of another version; this onlinesparse "
                                 f"reads version {CHECKPOINT_VERSION} (start again without "
                                 "--resume)")
            raise UsageError(f"{path} is not an onlinesparse replay checkpoint (or one written "
                             "by a version before 2, whose files are not signed); nothing in "
                             "it was loaded")
        line = fh.readline(_MAX_HEADER)
        payload = fh.read()
    try:
        header = json.loads(line)
        body = {k: header[k] for k in ("fingerprint", "recording", "payload_bytes", "sha256")}
        tag = str(header["hmac"])
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"checkpoint {path} is damaged: its header is not readable") from None
    key = _key(create=False)
    if key is None:
        raise UsageError(
            f"checkpoint {path} cannot be verified: there is no checkpoint key at {key_path()} "
            "(it was made by another user or on another machine); start again without --resume"
        )
    expected = _tag(key, json.dumps(body, sort_keys=True).encode(), payload)
    if not hmac.compare_digest(expected, tag):
        digest_ok = (len(payload) == body["payload_bytes"]
                     and hashlib.sha256(payload).hexdigest() == body["sha256"])
        why = ("its content does not match its checksum (damaged or modified)" if not digest_ok
               else f"it was not signed with this user's key ({key_path()})")
        raise UsageError(f"checkpoint {path} is refused: {why}; nothing in it was loaded. "
                         "Start again without --resume")
    return body, payload


def _differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    return [
        f"{key}: checkpoint has {saved.get(key)!r}, this run has {current.get(key)!r}"
        for key in sorted(set(saved) | set(current))
        if saved.get(key) != current.get(key)
    ]


def load_checkpoint(
    path: str | Path,
    fingerprint: dict[str, Any] | None = None,
    recording: dict[str, Any] | None = None,
) -> Any:
    """Read the state saved at ``path`` after checking its signature, checksum and
    fingerprints; nothing is unpickled before every check has passed.

    Parameters
    ----------
    path
        The checkpoint file.
    fingerprint
        When given, the saved configuration fingerprint must equal it (JSON round trip);
        the error names each difference.
    recording
        When given, the saved :func:`recording_fingerprint` must equal it.

    Raises
    ------
    UsageError
        When the file is missing, is not a checkpoint, is not signed with this user's key,
        is damaged, or was made by a replay with another configuration or recording.

    """
    path = Path(path)
    remove_stale_temporaries(path)
    if not path.exists():
        others = (sorted(p.name for p in path.parent.glob(f"*{path.suffix}") if p != path)
                  if path.suffix and path.parent.is_dir() else [])
        beside = (f" (beside it: {', '.join(others[:3])}; several targets keep one checkpoint "
                  "for a shared model, or one per target with --separate)" if others else "")
        raise UsageError(f"no checkpoint at {path}: nothing to resume (drop --resume to "
                         f"start){beside}")
    if path.is_dir():
        raise UsageError(f"checkpoint {path} is a directory")
    body, payload = _read_verified(path)
    if fingerprint is not None:
        current = json.loads(json.dumps(fingerprint, default=repr))  # as it was saved
        diffs = _differences(body["fingerprint"] or {}, current)
        if diffs:
            raise UsageError(
                f"checkpoint {path} was made by a replay configured differently; resume with "
                "the same options, or start again without --resume. Differences: "
                + "; ".join(diffs)
            )
    if recording is not None and body["recording"] != recording:
        raise UsageError(
            f"checkpoint {path} was made on another recording (or this one has changed since: "
            "size or content differ); resume on the same file, or start again without "
            "--resume. Differences: " + "; ".join(_differences(body["recording"] or {},
                                                               recording))
        )
    try:
        return pickle.loads(payload)
    except Exception as exc:  # signed by us, but e.g. written by another onlinesparse
        raise UsageError(f"{path} could not be loaded ({type(exc).__name__}: {exc}); start "
                         "again without --resume") from None
