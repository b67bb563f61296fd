"""Expected failures end with ``onlinesparse: error: …``, a non-zero status and the outputs
that exist written; a run that scores nothing is a failure."""

import errno
import json

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay import checkpoint, outputs
from onlinesparse.replay.cli import main


@pytest.fixture
def rec(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 2))
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x @ [1.0, 2.0]})
    path = tmp_path / "rec.csv"
    frame.to_csv(path, index=False)
    return path


def _replay(rec, *extra):
    return main(["replay", str(rec), "--target", "y", "--model", "linear", "--workers", "1",
                 *extra])


@pytest.mark.parametrize(
    "content, extra, why",
    [
        ("a,b,y\n", [], "rec.csv has no rows to replay"),
        (None, ["--warmup", "500"], "all 300 samples were in the warm-up (--warmup 500)"),
        ("a,b,y\n" + "x,1,2\n" * 20, [], "all 20 rows of rec.csv are corrupt"),
    ],
    ids=["header-only", "warmup-longer-than-file", "every-row-corrupt"],
)
def test_a_run_that_scores_nothing_fails(rec, tmp_path, capsys, content, extra, why):
    if content is not None:
        rec.write_text(content)
    rc = _replay(rec, "--out", str(tmp_path / "out"), *extra)
    err = capsys.readouterr().err
    assert rc == 1
    assert f"onlinesparse: error: y: nothing was scored: {why}" in err
    summary = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert summary["status"] == "nothing_scored"


def test_out_under_a_regular_file_is_refused_before_replaying(rec, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    rc = _replay(rec, "--out", str(blocker / "out"))
    err = capsys.readouterr().err
    assert rc == 2
    assert "onlinesparse: error: cannot write to --out" in err and "Traceback" not in err


def test_an_unwritable_checkpoint_is_refused_before_replaying(rec, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for bad in (blocker / "ck.pkl", tmp_path):  # under a regular file; a directory
        rc = _replay(rec, "--checkpoint", str(bad), "--out", str(tmp_path / "out"))
        err = capsys.readouterr().err
        assert rc == 2
        assert "onlinesparse: error: cannot write the checkpoint" in err
        assert not (tmp_path / "out" / "metrics.json").exists()  # nothing ran


def _raise(code):
    def fail(*args, **kwargs):
        raise OSError(code, f"{errno.errorcode[code]} (simulated)")

    return fail


def test_a_read_only_out_directory_is_refused_before_replaying(rec, tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setattr(outputs, "_probe_write", _raise(errno.EROFS))
    rc = _replay(rec, "--out", str(tmp_path / "out"))
    err = capsys.readouterr().err
    assert rc == 2
    assert "onlinesparse: error: cannot write to --out" in err and "EROFS" in err


def test_disk_full_while_saving_a_checkpoint_ends_with_an_error_and_the_outputs(
    rec, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(checkpoint, "_write_file", _raise(errno.ENOSPC))
    rc = _replay(rec, "--out", str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck"),
                 "--every", "100", "--predictions-format", "csv", "--no-report")
    err = capsys.readouterr().err
    assert rc == 1
    assert "onlinesparse: error: y: saving the checkpoint" in err and "ENOSPC" in err
    predictions = pd.read_csv(tmp_path / "out" / "predictions.csv")
    assert len(predictions) == 100  # up to the failed save
    summary = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert summary["status"] == "write_error"


def test_disk_full_while_writing_predictions_keeps_the_metrics(rec, tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setattr(outputs, "_write_predictions", _raise(errno.ENOSPC))
    rc = _replay(rec, "--out", str(tmp_path / "out"))
    err = capsys.readouterr().err
    assert rc == 1
    assert "onlinesparse: error: writing predictions.parquet failed" in err
    assert "ENOSPC" in err and "Traceback" not in err
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["targets"]["y"]


def test_disk_full_while_spooling_predictions_ends_with_an_error(rec, tmp_path, capsys,
                                                                 monkeypatch):
    monkeypatch.setattr(outputs._Spool, "flush", _raise(errno.ENOSPC))
    rc = _replay(rec, "--out", str(tmp_path / "out"), "--no-report")
    err = capsys.readouterr().err
    assert rc == 1
    assert "onlinesparse: error: y:" in err and "ENOSPC" in err and "Traceback" not in err
    summary = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert summary["status"] == "write_error"


def test_dollar_signs_in_column_names_are_text_and_every_output_is_written(tmp_path, capsys):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 2))
    frame = pd.DataFrame({r"$\foo$": x[:, 0], "b $x^2$": x[:, 1],
                          r"emg $\frac{$": x @ [1.0, 2.0]})
    rec = tmp_path / "rec.csv"
    frame.to_csv(rec, index=False)
    out = tmp_path / "out"
    rc = main(["replay", str(rec), "--target", r"emg $\frac{$", "--model", "linear",
               "--workers", "1", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert (out / "metrics.json").exists() and (out / "predictions.parquet").exists()
    page = (out / "report.html").read_text()
    assert r"emg $\frac{$" in page
    assert page.count("data:image/png;base64,") >= 3  # the plots, embedded


def test_a_report_that_fails_is_reported_and_loses_nothing_else(rec, tmp_path, capsys,
                                                                monkeypatch):
    import onlinesparse.replay.report as report

    def broken(*args, **kwargs):
        raise ValueError("mathtext says no")

    monkeypatch.setattr(report, "render_target", broken)
    monkeypatch.setattr(report, "write_report", broken)
    out = tmp_path / "out"
    rc = _replay(rec, "--out", str(out))
    err = capsys.readouterr().err
    assert rc == 1
    assert "onlinesparse: error: drawing the report of 'y' failed: ValueError" in err
    assert "onlinesparse: error: writing the report failed: ValueError" in err
    assert len(pd.read_parquet(out / "predictions.parquet")) == 300
    assert json.loads((out / "metrics.json").read_text())["targets"]["y"]["samples"] == 300


def test_a_file_that_fails_to_read_mid_way_keeps_what_was_replayed(rec, tmp_path, capsys,
                                                                   monkeypatch):
    from onlinesparse.replay.reader import Recording

    original = Recording.iter_chunks

    def breaks_after_one_chunk(self, *args, **kwargs):
        chunks = original(self, *args, **kwargs)
        yield next(chunks)
        raise OSError(errno.EIO, "Input/output error (simulated)")

    monkeypatch.setattr(Recording, "iter_chunks", breaks_after_one_chunk)
    rc = _replay(rec, "--out", str(tmp_path / "out"), "--chunksize", "100", "--no-report")
    err = capsys.readouterr().err
    assert rc == 1
    assert "onlinesparse: error: y: reading rec.csv failed after row 100 (line 102" in err
    assert len(pd.read_parquet(tmp_path / "out" / "predictions.parquet")) == 100


def test_a_checkpoint_key_others_can_read_is_refused(rec, tmp_path, capsys):
    from onlinesparse.replay.checkpoint import key_path

    assert _replay(rec, "--checkpoint", str(tmp_path / "ck")) == 0
    key_path().chmod(0o644)
    try:
        rc = _replay(rec, "--checkpoint", str(tmp_path / "ck"), "--resume")
    finally:
        key_path().chmod(0o600)
    assert rc == 2
    assert "is readable by other users" in capsys.readouterr().err
