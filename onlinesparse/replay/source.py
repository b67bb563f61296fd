"""What every recording format's reader gives :class:`~onlinesparse.replay.reader.Recording`:
a :class:`Source` of chunks of rows.

The CSV and Parquet sources live in :mod:`~onlinesparse.replay.reader`, the NPZ one in
:mod:`~onlinesparse.replay.npz_source` and the NWB one in
:mod:`~onlinesparse.replay.nwb_source`; they all derive from :class:`Source`, which lives
here so that the reader can open the other formats without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["Source", "DEFAULT_BIN_MS"]

#: Width of an NWB recording's time bins when ``--bin-ms`` is not given: 20 ms, a usual bin
#: for decoding movement from spike counts (a few spikes per bin at tens of Hz).
DEFAULT_BIN_MS = 20.0


class Source:
    """One recording's rows in one format: its ``columns``, its ``n_rows`` when known, and
    :meth:`frames`."""

    columns: list[str]
    n_rows: int | None

    def frames(
        self, used: list[str], chunksize: int, start_row: int
    ) -> Iterator[tuple[np.ndarray, dict[str, Any], list[tuple[int, str]]]]:
        """Chunks of at most ``chunksize`` rows from ``start_row`` on, each as (row numbers,
        ``{column: values}`` for the ``used`` columns, dropped rows with their reason)."""
        raise NotImplementedError
