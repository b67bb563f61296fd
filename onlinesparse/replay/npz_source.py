"""NPZ recordings: one 1-D array per column, or a 2-D ``data`` array with its ``columns``.

The arrays are read with ``numpy.lib.format`` straight from the archive member, a chunk of
rows at a time, so they are never loaded whole (except a Fortran-ordered 2-D ``data``, whose
rows are not contiguous). Arrays of Python objects are refused: loading them would run code
from the file.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.source import Source

__all__: list[str] = []


class _NpzMember:
    """Header of one ``.npy`` member: where its rows start and how they are laid out."""

    def __init__(self, archive: zipfile.ZipFile, name: str):
        self.name = name
        with archive.open(name + ".npy") as fp:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
            else:  # 3.0 headers (unicode field names) are rare; read those whole
                shape, fortran, dtype = None, True, None
            self.data_offset = fp.tell()
        self.shape, self.fortran, self.dtype = shape, fortran, dtype

    def check_plain(self) -> None:
        if self.dtype is not None and self.dtype.hasobject:
            raise UsageError(
                f"NPZ array {self.name!r} holds Python objects, which are not read (loading "
                "them would run code from the file); save it as numbers or strings"
            )

    @property
    def streamable(self) -> bool:
        return self.dtype is not None and (not self.fortran or len(self.shape) < 2)


class _NpzSource(Source):
    def __init__(self, path: Path):
        self.path = path
        try:
            with zipfile.ZipFile(path) as archive:
                names = [n[:-4] for n in archive.namelist() if n.endswith(".npy")]
                members = {n: _NpzMember(archive, n) for n in names}
        except (zipfile.BadZipFile, ValueError, OSError) as exc:
            raise UsageError(f"cannot read {path} as NPZ: {exc}") from None
        if not members:
            raise UsageError(f"{path} holds no arrays")
        self.members = members
        if "data" in members and "columns" in members:
            data = members["data"]
            members["columns"].check_plain()
            with np.load(path, allow_pickle=False) as npz:
                self.columns = [str(c) for c in npz["columns"].tolist()]
            shape = data.shape
            if shape is not None and (len(shape) != 2 or shape[1] != len(self.columns)):
                raise UsageError(
                    f"NPZ {path.name}: 'data' has shape {data.shape} but 'columns' names "
                    f"{len(self.columns)} columns"
                )
            self.table = True
            self.n_rows = data.shape[0] if data.shape is not None else None
        else:
            self.table = False
            self.columns = list(names)
            lengths = {n: m.shape[0] for n, m in members.items() if m.shape is not None}
            bad = [n for n, m in members.items() if m.shape is not None and len(m.shape) != 1]
            if bad:
                raise UsageError(
                    f"NPZ {path.name}: array {bad[0]!r} is not 1-D; store one 1-D array per "
                    "column, or a 2-D 'data' array with its names in 'columns'"
                )
            if len(set(lengths.values())) > 1:
                raise UsageError(f"NPZ {path.name}: the column arrays differ in length {lengths}")
            self.n_rows = next(iter(lengths.values()), None)

    def _read_rows(self, archive, member: _NpzMember, start_row: int):
        """Yield blocks of rows of ``member`` lazily; the caller asks for ``n`` rows each."""
        row_width = int(np.prod(member.shape[1:], dtype=np.int64)) if member.shape else 1
        row_bytes = member.dtype.itemsize * row_width
        fp = archive.open(member.name + ".npy")
        fp.seek(member.data_offset + start_row * row_bytes)
        try:
            n = yield None
            while True:
                raw = fp.read(n * row_bytes)
                block = np.frombuffer(raw, dtype=member.dtype)
                n = yield block.reshape((-1, *member.shape[1:]))
        finally:
            fp.close()

    def frames(self, used, chunksize, start_row):
        total = self.n_rows
        if self.table:
            wanted = [self.columns.index(c) for c in used]
            sources = {"data": self.members["data"]}
        else:
            sources = {c: self.members[c] for c in used}
        for member in sources.values():
            member.check_plain()
        with zipfile.ZipFile(self.path) as archive:
            if all(m.streamable for m in sources.values()) and total is not None:
                readers = {}
                for name, member in sources.items():
                    gen = self._read_rows(archive, member, start_row)
                    next(gen)
                    readers[name] = gen
                try:
                    for lo in range(start_row, total, chunksize):
                        n = min(chunksize, total - lo)
                        blocks = {name: gen.send(n) for name, gen in readers.items()}
                        rows = np.arange(lo, lo + n, dtype=np.int64)
                        if self.table:
                            table = blocks["data"]
                            values = {c: table[:, j] for c, j in zip(used, wanted, strict=True)}
                        else:
                            values = blocks
                        yield rows, values, []
                finally:
                    for gen in readers.values():
                        gen.close()
                return
        # Fallback: an array that cannot be read row by row is loaded whole.
        with np.load(self.path, allow_pickle=False) as npz:
            if self.table:
                data = npz["data"]
                arrays = {c: data[:, self.columns.index(c)] for c in used}
            else:
                arrays = {c: npz[c] for c in used}
        n_rows = len(next(iter(arrays.values())))
        for lo in range(start_row, n_rows, chunksize):
            hi = min(lo + chunksize, n_rows)
            yield np.arange(lo, hi, dtype=np.int64), {c: a[lo:hi] for c, a in arrays.items()}, []
