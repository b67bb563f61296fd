"""Hostile recordings: one bad byte, quote or extreme cell costs one row, never the replay."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onlinesparse.replay.cli import main
from onlinesparse.replay.runner import ReplayConfig, run_replay

N_ROWS = 3000
BAD_ROW = 2001  # line 2003 of the file


def _lines(n=N_ROWS, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = x @ [1.0, -0.5, 2.0] + 0.1 * rng.normal(size=n)
    frame = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x5": x[:, 2], "y": y})
    return frame.to_csv(index=False, float_format="%.10g").encode().split(b"\n")


def _write(path, lines):
    path.write_bytes(b"\n".join(lines))
    return path


def _replay(path, out, *extra):
    return main(["replay", str(path), "--target", "y", "--model", "linear", "--lr", "0.02",
                 "--workers", "1", "--out", str(out), "--predictions-format", "csv",
                 "--no-report", *extra])


def _predictions(out):
    return pd.read_csv(out / "predictions.csv").set_index("row")


def _corrupt_cell(line, column, text):
    cells = line.split(b",")
    cells[column] = text
    return b",".join(cells)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The replay of the file with the bad row's target left empty (a plain skipped row)."""
    d = tmp_path_factory.mktemp("reference")
    lines = _lines()
    lines[BAD_ROW + 1] = _corrupt_cell(lines[BAD_ROW + 1], 3, b"")
    # --missing drop: a row without its target is skipped (imputed, it would be predicted).
    assert _replay(_write(d / "ref.csv", lines), d / "out", "--missing", "drop") == 0
    return _predictions(d / "out")


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda line: line[:3] + b"\xff" + line[3:], id="invalid-utf8-byte"),
        pytest.param(lambda line: line.replace(b",", b',"', 1), id="unterminated-quote"),
        pytest.param(lambda line: _corrupt_cell(line, 2, b"1e160"), id="feature-1e160"),
        pytest.param(lambda line: _corrupt_cell(line, 2, b"-1e300"), id="feature-1e300"),
        pytest.param(lambda line: _corrupt_cell(line, 3, b"1e300"), id="target-1e300"),
        pytest.param(lambda line: _corrupt_cell(line, 0, b"1.5e150"), id="feature-1e150"),
    ],
)
def test_one_bad_row_is_skipped_with_its_row_number_and_the_rest_scores_as_without_it(
    tmp_path, reference, damage, capsys
):
    lines = _lines()
    lines[BAD_ROW + 1] = damage(lines[BAD_ROW + 1])
    path = _write(tmp_path / "rec.csv", lines)
    assert _replay(path, tmp_path / "out") == 0
    assert f"line {BAD_ROW + 2} of rec.csv" in capsys.readouterr().err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())["targets"]["y"]
    assert metrics["corrupt_rows"] == 1
    assert metrics["corrupt_examples"][0]["row"] == BAD_ROW
    assert metrics["samples"] == N_ROWS - 1
    got = _predictions(tmp_path / "out")
    assert BAD_ROW not in got.index
    pd.testing.assert_frame_equal(got, reference)
    assert np.isfinite(metrics["rmse"]) and metrics["rmse"] < 1.0

    # --strict stops at that row, names it, keeps what came before.
    assert _replay(path, tmp_path / "strict", "--strict") == 1
    err = capsys.readouterr().err
    assert f"onlinesparse: error: y: corrupt row {BAD_ROW} (line {BAD_ROW + 2}" in err
    assert len(_predictions(tmp_path / "strict")) == BAD_ROW


def test_a_quote_left_open_on_the_last_line_without_a_newline_is_one_corrupt_row(tmp_path):
    lines = _lines(n=50)
    while not lines[-1]:
        lines.pop()
    lines[-1] = lines[-1].replace(b",", b',"', 1)
    cfg = ReplayConfig(_write(tmp_path / "r.csv", lines), ["y"], model="linear", workers=1,
                       progress=False)
    metrics = run_replay(cfg).results[0].metrics
    assert (metrics["corrupt_rows"], metrics["samples"]) == (1, 49)
    assert metrics["corrupt_examples"][0]["row"] == 49
    assert "unterminated quote" in metrics["corrupt_examples"][0]["reason"]


# ---------------------------------------------------------------------------------------
# Random corruptions of random rows

_DAMAGES = {
    "byte": lambda line, k, d: line[:k % (len(line) + 1)] + d + line[k % (len(line) + 1):],
    "quote": lambda line, k, d: _corrupt_cell(line, k % 4, b'"' + line.split(b",")[k % 4]),
    "extreme": lambda line, k, d: _corrupt_cell(line, k % 4, b"-1e%d" % (101 + k % 200)),
    "text": lambda line, k, d: _corrupt_cell(line, k % 4, b"1.2.3"),
    "inf": lambda line, k, d: _corrupt_cell(line, k % 4, b"inf"),
    "empty": lambda line, k, d: _corrupt_cell(line, k % 4, b""),
    "extra": lambda line, k, d: line + b",7",
}


@st.composite
def corruptions(draw, n_rows):
    rows = draw(st.lists(st.integers(0, n_rows - 1), min_size=1, max_size=12, unique=True))
    return {
        row: (
            draw(st.sampled_from(sorted(_DAMAGES))),
            draw(st.integers(0, 1000)),
            draw(st.sampled_from([b"\xff", b"\xfe", b"\x80", b"\xc3(", b"\xe2\x82"])),
        )
        for row in rows
    }


def _assert_corruptions_cost_exactly_their_rows(d, damage, chunksize, n_rows=160):
    """Replay the file with ``damage`` done and the file without those rows: the same."""
    lines = _lines(n=n_rows, seed=3)
    bad_lines = list(lines)
    for row, (kind, k, byte) in damage.items():
        bad_lines[row + 1] = _DAMAGES[kind](bad_lines[row + 1], k, byte)
    clean_lines = [line for i, line in enumerate(lines) if i - 1 not in damage]

    def replay(name, content):
        cfg = ReplayConfig(_write(d / f"{name}.csv", content), ["y"], model="linear",
                           model_params={"lr": 0.02}, workers=1, progress=False,
                           chunksize=chunksize, out=d / name, predictions_format="csv",
                           report=False, missing="drop")  # an emptied cell costs its row too
        outcome = run_replay(cfg)
        assert outcome.exit_code == 0
        return outcome.results[0].metrics, pd.read_csv(d / name / "predictions.csv")

    metrics, got = replay("bad", bad_lines)
    _, want = replay("clean", clean_lines)
    assert metrics["corrupt_rows"] == len(damage)
    assert sorted(e["row"] for e in metrics["corrupt_examples"]) == sorted(damage)
    kept = [r for r in range(n_rows) if r not in damage]
    assert got["row"].tolist() == kept
    columns = ["truth", "mean", "std"]
    pd.testing.assert_frame_equal(got[columns], want[columns])
    return metrics


@settings(max_examples=25)
@given(data=st.data())
def test_random_corruptions_cost_exactly_their_rows(tmp_path_factory, data):
    damage = data.draw(corruptions(160))
    chunksize = data.draw(st.integers(1, 70))
    _assert_corruptions_cost_exactly_their_rows(tmp_path_factory.mktemp("random"), damage,
                                                chunksize)


@pytest.mark.parametrize("chunksize", [1, 7, 70])
@pytest.mark.parametrize("row", [0, 80, 159], ids=["first-row", "middle-row", "last-row"])
def test_an_extra_field_costs_exactly_its_row_wherever_it_is(tmp_path, row, chunksize):
    # Regression: hypothesis found {0: ('extra', 0, b'\xff')}, an extra field on the first
    # data line, turning all 159 other rows corrupt.
    metrics = _assert_corruptions_cost_exactly_their_rows(
        tmp_path, {row: ("extra", 0, b"\xff")}, chunksize)
    assert "wrong column count" in metrics["corrupt_examples"][0]["reason"]
    assert "expected 4 fields, saw 5" in metrics["corrupt_examples"][0]["reason"]


@pytest.mark.parametrize("k", [0, 3])
def test_an_open_quote_on_the_first_data_line_costs_exactly_its_row(tmp_path, k):
    # The header is parsed with the first data line: an open quote there used to make the
    # whole recording unreadable ("EOF inside string").
    metrics = _assert_corruptions_cost_exactly_their_rows(tmp_path, {0: ("quote", k, b"")}, 9)
    assert "unterminated quote" in metrics["corrupt_examples"][0]["reason"]
