"""Checkpoints are signed and fingerprinted: nothing is unpickled before they are verified."""

import os
import pickle
import stat

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay.checkpoint import CHECKPOINT_FORMAT, key_path
from onlinesparse.replay.cli import main
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.runner import ReplayConfig, run_replay


class _Payload:
    """Unpickling this creates the marker file: the proof that code from a file ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _recording(path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = x @ [1.0, -2.0] + 0.1 * rng.normal(size=n)
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": y}).to_csv(path, index=False)
    return path


def _cfg(rec, ck, **kw):
    return ReplayConfig(rec, ["y"], model="linear", model_params={"lr": 0.05}, workers=1,
                        progress=False, checkpoint=ck, **kw)


@pytest.fixture
def saved(tmp_path):
    """A recording and a checkpoint of its first 150 rows."""
    rec = _recording(tmp_path / "rec.csv")
    ck = tmp_path / "run.ckpt"
    outcome = run_replay(_cfg(rec, ck, max_rows=150))
    assert outcome.results[0].status == "stopped" and ck.exists()
    return rec, ck


def test_a_crafted_pickle_is_refused_before_anything_in_it_runs(tmp_path, capsys):
    rec = _recording(tmp_path / "rec.csv")
    marker = tmp_path / "pwned"
    ck = tmp_path / "ck.pkl"
    ck.write_bytes(pickle.dumps({"format": CHECKPOINT_FORMAT, "version": 1,
                                 "state": _Payload(marker)}))
    rc = main(["replay", str(rec), "--target", "y", "--model", "linear", "--workers", "1",
               "--checkpoint", str(ck), "--resume"])
    assert rc == 2
    assert "onlinesparse: error:" in capsys.readouterr().err
    assert not marker.exists()


def test_a_forged_header_with_a_pickle_is_refused_before_unpickling(saved, tmp_path):
    rec, ck = saved
    marker = tmp_path / "pwned"
    magic, header, _ = ck.read_bytes().split(b"\n", 2)
    ck.write_bytes(magic + b"\n" + header + b"\n" + pickle.dumps(_Payload(marker)))
    with pytest.raises(UsageError, match="refused"):
        run_replay(_cfg(rec, ck, resume=True))
    assert not marker.exists()


def test_a_checkpoint_signed_with_another_key_is_refused(saved, tmp_path, monkeypatch):
    rec, ck = saved
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))
    with pytest.raises(UsageError, match="no checkpoint key"):
        run_replay(_cfg(rec, ck, resume=True))
    key_path().parent.mkdir(parents=True)
    key_path().write_bytes(os.urandom(32))
    key_path().chmod(0o600)
    with pytest.raises(UsageError, match="not signed with this user's key"):
        run_replay(_cfg(rec, ck, resume=True))


def test_the_key_is_private_to_the_user(saved):
    assert stat.S_IMODE(key_path().stat().st_mode) == 0o600


@pytest.mark.parametrize("where", [0.0, 0.02, 0.1, 0.3, 0.6, 0.9, 0.999])
def test_every_single_byte_flip_is_refused(saved, where):
    rec, ck = saved
    data = bytearray(ck.read_bytes())
    i = min(int(where * len(data)), len(data) - 1)
    data[i] ^= 0x01
    ck.write_bytes(bytes(data))
    with pytest.raises(UsageError, match="checkpoint|damaged|refused"):
        run_replay(_cfg(rec, ck, resume=True))


@pytest.mark.parametrize("change", ["shorter", "shuffled", "other"])
def test_a_resume_on_another_recording_is_refused(saved, change, capsys):
    rec, ck = saved
    frame = pd.read_csv(rec)
    if change == "shorter":
        frame = frame.iloc[:300]
    elif change == "shuffled":
        frame = frame.sample(frac=1.0, random_state=1)
    else:
        frame = pd.read_csv(_recording(rec.with_name("other.csv"), seed=5))
    frame.to_csv(rec, index=False)
    rc = main(["replay", str(rec), "--target", "y", "--model", "linear", "--lr", "0.05",
               "--warmup", "0",  # as the checkpoint was made (ReplayConfig's default)
               "--workers", "1", "--checkpoint", str(ck), "--resume"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "onlinesparse: error:" in err and "another recording" in err


def test_a_resume_on_the_same_recording_still_works(saved, tmp_path):
    rec, ck = saved
    resumed = run_replay(_cfg(rec, ck, resume=True))
    whole = run_replay(_cfg(rec, tmp_path / "whole.ckpt"))
    assert resumed.exit_code == 0
    assert resumed.results[0].metrics["rmse"] == whole.results[0].metrics["rmse"]


def test_temporary_files_of_a_killed_save_are_removed(saved):
    rec, ck = saved
    stale = ck.with_name(f".{ck.name}.k1ll3d.tmp")
    stale.write_bytes(b"half a checkpoint")
    other = ck.with_name(".unrelated.tmp")
    other.write_bytes(b"not ours")
    assert run_replay(_cfg(rec, ck, resume=True)).exit_code == 0
    assert not stale.exists()
    assert other.exists()
