"""Export one of river's bundled datasets to a CSV file that ``onlinesparse replay`` reads.

Each row is one sample: its features as columns, in the order river gives them, and the target
as the column ``y``. Run it with::

    python examples/export_river_dataset.py TrumpApproval trump_approval.csv

The dataset is any regression dataset of ``river.datasets`` (``TrumpApproval``,
``WaterFlow``, …). ``examples/trump_approval/README.md`` replays the exported file.
"""

import sys
from pathlib import Path

import pandas as pd
from river import datasets


def export(name: str, path: Path) -> int:
    """Write dataset ``name`` of river to ``path`` as CSV; returns the number of rows."""
    dataset = getattr(datasets, name)()
    rows = [{**x, "y": y} for x, y in dataset]
    pd.DataFrame(rows).to_csv(path, index=False)
    return len(rows)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python examples/export_river_dataset.py DATASET OUT.csv")
    n = export(sys.argv[1], Path(sys.argv[2]))
    print(f"wrote {n} rows of river.datasets.{sys.argv[1]} to {sys.argv[2]}")
