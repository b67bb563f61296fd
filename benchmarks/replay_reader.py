"""What reading a CSV recording costs per row, and what checking its lines adds.

The replay's CSV reader passes the file through ``_CheckedLines``, which blanks (and
reports) a line whose bytes are not UTF-8 or whose quotes do not pair, so that one bad byte
or quote costs one row instead of the whole file. A block of the file that decodes and holds
no quote passes through whole (one ``bytes.decode`` per MiB); a block with quotes is checked
line by line in Python. This script times, per row of a 10-column CSV:

* ``pandas.read_csv`` in chunks straight from the file (the peer: what the reader did before);
* the same parser fed through ``_CheckedLines``;
* the reader as the replay uses it (``Recording.iter_chunks``: the above plus conversion to
  float and the per-row checks);

on a plain numeric file and on one whose every line holds a quoted field (the slow path),
and prints µs per row and the ratio to the peer. A replay's model costs tens of µs per row
(``stream_friedman.py``), so the reader's share is what to look at.

Run: ``python benchmarks/replay_reader.py [n_rows]`` (default 200 000).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from onlinesparse.replay.reader import _CheckedLines, open_recording


def _write(path: Path, n: int, quoted: bool) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"x{i}" for i in range(10)])
    if quoted:
        frame["note"] = "a, b"  # pandas quotes a field holding the separator
    frame.to_csv(path, index=False)


def _best_of(fn, path: Path, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
    return min(times)


def _pandas_plain(path: Path) -> None:
    for _ in pd.read_csv(path, chunksize=10_000, skip_blank_lines=False):
        pass


def _pandas_checked(path: Path) -> None:
    with open(path, "rb") as raw:
        for _ in pd.read_csv(_CheckedLines(raw), chunksize=10_000, skip_blank_lines=False):
            pass


def _reader(path: Path) -> None:
    rec = open_recording(path)
    cols = rec.select(["x0"], [f"x{i}" for i in range(1, 10)])
    for _ in rec.iter_chunks(cols, "x0", chunksize=10_000):
        pass


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{n} rows x 10 numeric columns; µs per row (best of 3), ratio to pandas")
        print(f"{'file':<10}{'pandas.read_csv':>17}{'+ _CheckedLines':>17}{'iter_chunks':>14}")
        for quoted in (False, True):
            path = Path(tmp) / f"r{int(quoted)}.csv"
            _write(path, n, quoted)
            peer = _best_of(_pandas_plain, path) / n * 1e6
            checked = _best_of(_pandas_checked, path) / n * 1e6
            reader = _best_of(_reader, path) / n * 1e6
            name = "quoted" if quoted else "plain"
            print(f"{name:<10}{peer:>11.3f} (1.00){checked:>11.3f} ({checked / peer:.2f})"
                  f"{reader:>8.3f} ({reader / peer:.2f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)
