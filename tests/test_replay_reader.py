"""Reading recordings in chunks: the three formats agree, corrupt rows are found and placed."""

import numpy as np
import pandas as pd
import pytest

from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.reader import open_recording


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(1)
    n = 257
    return pd.DataFrame(
        {
            "t": np.arange(n) * 0.01,
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "y": rng.normal(size=n),
        }
    )


def _write(frame, path):
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        frame.to_parquet(path, index=False, row_group_size=50)
    elif path.name.endswith("table.npz"):
        np.savez(path, data=frame.to_numpy(), columns=np.array(frame.columns, dtype=str))
    else:
        np.savez(path, **{c: frame[c].to_numpy() for c in frame.columns})
    return path


NAMES = ["r.csv", "r.parquet", "r.npz", "r-table.npz"]


def _read_all(path, chunksize, start_row=0, target="y", features=("a", "b"), time="t"):
    rec = open_recording(path)
    cols = rec.select([target], list(features), time)
    chunks = list(rec.iter_chunks(cols, target, chunksize=chunksize, start_row=start_row))
    return rec, chunks


@pytest.mark.parametrize("name", NAMES)
def test_every_format_reads_the_same_rows_in_bounded_chunks(frame, tmp_path, name):
    path = _write(frame, tmp_path / name)
    rec, chunks = _read_all(path, chunksize=40)
    assert rec.n_rows == len(frame)
    assert len(chunks) >= len(frame) // 40  # really read in pieces
    assert all(len(c) <= 40 for c in chunks)
    rows = np.concatenate([c.rows for c in chunks])
    np.testing.assert_array_equal(rows, np.arange(len(frame)))
    np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), frame[["a", "b"]])
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), frame["y"])
    np.testing.assert_array_equal(np.concatenate([c.time for c in chunks]), frame["t"])
    assert not any(c.problems for c in chunks)


@pytest.mark.parametrize("name", NAMES)
def test_start_row_skips_exactly_the_rows_before_it(frame, tmp_path, name):
    path = _write(frame, tmp_path / name)
    _, chunks = _read_all(path, chunksize=30, start_row=123)
    rows = np.concatenate([c.rows for c in chunks])
    np.testing.assert_array_equal(rows, np.arange(123, len(frame)))
    np.testing.assert_array_equal(np.concatenate([c.y for c in chunks]), frame["y"][123:])


CORRUPT_CSV = """t,a,b,y
0,1,2,3
1,1,abc,3
2,1,2,3,9
3,1,2
4,1,2,nan
5,1,2,3

7,1,,3
8,1,2,inf
9,1,2,3
10,1,2,3,4,5
"""
EXPECTED = {
    1: "unparseable value 'abc' in column 'b'",
    2: "wrong column count",
    3: "NaN in target 'y'",  # too few fields: the target is missing
    4: "NaN in target 'y'",
    6: "NaN in target 'y'",  # a blank line
    7: "missing value in column 'b'",
    8: "infinite value in column 'y'",
    10: "wrong column count",
}


@pytest.mark.parametrize("chunksize", [1, 2, 3, 5, 100])
def test_corrupt_csv_rows_are_reported_at_their_row_at_any_chunk_size(tmp_path, chunksize):
    path = tmp_path / "bad.csv"
    path.write_text(CORRUPT_CSV)
    rec, chunks = _read_all(path, chunksize=chunksize)
    rows = np.concatenate([c.rows for c in chunks]).tolist()
    assert rows == list(range(11))
    problems = {int(c.rows[i]): why for c in chunks for i, why in c.problems.items()}
    assert sorted(problems) == sorted(EXPECTED)
    for row, reason in EXPECTED.items():
        assert problems[row].startswith(reason), (row, problems[row])
    good = {int(c.rows[i]): c.time[i] for c in chunks for i in range(len(c))
            if i not in c.problems}
    assert good == {0: 0.0, 5: 5.0, 9: 9.0}  # the time column is the row number here
    assert rec.describe_row(2) == "row 2 (line 4 of bad.csv)"


def test_a_nan_in_another_target_does_not_make_the_row_corrupt(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text("x,y1,y2\n1,2,\n2,,3\n")
    rec = open_recording(path)
    cols = rec.select(["y1", "y2"], ["x"])
    for target, bad_row in (("y1", 1), ("y2", 0)):
        (chunk,) = rec.iter_chunks(cols, target)
        assert list(chunk.problems) == [bad_row]


def test_nan_target_in_parquet_and_npz_is_corrupt(frame, tmp_path):
    broken = frame.copy()
    broken.loc[17, "y"] = np.nan
    for name in ("r.parquet", "r.npz"):
        _, chunks = _read_all(_write(broken, tmp_path / name), chunksize=10)
        problems = {int(c.rows[i]): why for c in chunks for i, why in c.problems.items()}
        assert problems == {17: "NaN in target 'y'"}


def test_column_selection_defaults_patterns_and_errors(frame, tmp_path):
    rec = open_recording(_write(frame, tmp_path / "r.csv"))
    assert rec.select(["y"], None, "t").features == ["a", "b"]
    assert rec.select(["y"], ["[ab]"]).features == ["a", "b"]
    assert rec.select(["y"], None).features == ["t", "a", "b"]
    with pytest.raises(UsageError, match=r"unknown target column 'yy'.*did you mean 'y'"):
        rec.select(["yy"])
    with pytest.raises(UsageError, match="unknown feature column 'c'"):
        rec.select(["y"], ["a", "c"])
    with pytest.raises(UsageError, match="unknown time column"):
        rec.select(["y"], None, "time")
    with pytest.raises(UsageError, match="matches no column"):
        rec.select(["y"], ["n*"])
    with pytest.raises(UsageError, match="cannot also be a feature"):
        rec.select(["y"], ["a", "y"])


def test_unreadable_inputs_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="recording not found"):
        open_recording(tmp_path / "missing.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(UsageError, match="cannot tell the format"):
        open_recording(tmp_path / "x.json")
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(UsageError, match="cannot read .* as Parquet"):
        open_recording(tmp_path / "x.parquet")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(UsageError, match="empty"):
        open_recording(tmp_path / "empty.csv")
    (tmp_path / "blank-first.csv").write_text("\nx,y\n1,2\n")
    with pytest.raises(UsageError, match="first line is blank"):
        open_recording(tmp_path / "blank-first.csv")


def test_npz_with_python_objects_is_refused_with_a_reason(frame, tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(path, data=frame.to_numpy(), columns=np.array(list(frame.columns), dtype=object))
    with pytest.raises(UsageError, match="'columns' holds Python objects"):
        open_recording(path)



@pytest.mark.parametrize(
    "first, end, reason",
    [
        pytest.param(b"1,2,3,4", b"\n", "expected 2 fields, saw 4", id="two-extra-fields"),
        pytest.param(b"1,2,", b"\n", "expected 2 fields, saw 3", id="trailing-separator"),
        pytest.param(b"1,2,3", b"\r\n", "expected 2 fields, saw 3", id="extra-field-crlf"),
        pytest.param(b'"1,5",2', b"\n", "unparseable value '1,5' in column 'x'",
                     id="quoted-separator"),
        pytest.param(b"1", b"\n", "NaN in target 'y'", id="too-few-fields"),
    ],
)
def test_the_first_data_line_is_held_to_the_header_field_count(tmp_path, first, end, reason):
    # pandas takes surplus fields on the first data line for an index and shifts every
    # column; the reader checks that line itself, as pandas checks all later ones.
    path = tmp_path / "first.csv"
    path.write_bytes(end.join([b"x,y", first, b"3,4", b"5,6", b"7,8,9", b""]))
    rec = open_recording(path)
    assert rec.columns == ["x", "y"]
    chunks = list(rec.iter_chunks(rec.select(["y"]), "y", chunksize=2))
    rows = np.concatenate([c.rows for c in chunks]).tolist()
    problems = {int(c.rows[i]): why for c in chunks for i, why in c.problems.items()}
    assert rows == [0, 1, 2, 3]
    assert problems[3].startswith("wrong column count")  # a later line, as pandas finds it
    assert problems[0] == (f"wrong column count ({reason})" if "saw" in reason else reason)
    X = np.concatenate([c.X[:, 0] for c in chunks])
    y = np.concatenate([c.y for c in chunks])
    np.testing.assert_array_equal(X[1:3], [3.0, 5.0])  # no column shifted
    np.testing.assert_array_equal(y[1:3], [4.0, 6.0])
