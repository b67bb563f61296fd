"""Orr's local ridge example (section 6.5): our numbers beside the paper's.

y = sin(12x) on [0, 1], p = 50 noisy samples (σ = 0.1), 50 Gaussian basis functions centred
on the inputs with radius r = 0.05. First one global λ, re-estimated by GCV from 0.01
(Orr 6.1); then local ridge regression (6.4): every λⱼ set to its GCV optimum in turn, sweeps
until GCV stops falling, a basis function whose optimum is λⱼ = ∞ deleted.

Orr reports, for one training set: GCV 0.016 at the global optimum, 0.009 after local ridge,
and 18 of the 50 basis functions pruned. The paper's training set is not available, so the
script draws 10 (seeds 0–9) and prints the numbers for each, then their mean.

The experiment itself is ``orr_section_6_5`` of ``tests/test_rbf.py`` (the test suite
checks its shape on five seeds); it is imported from there so that test and benchmark
cannot diverge.

Run: ``.venv/bin/python benchmarks/orr_local_ridge.py [n_seeds]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

from tests.test_rbf import orr_section_6_5  # noqa: E402

PAPER = {"gcv_global": 0.016, "gcv_local": 0.009, "pruned": 18}


def main(n_seeds: int) -> None:
    print("Orr section 6.5: sin(12x), 50 points, σ = 0.1, 50 Gaussians r = 0.05")
    header = (f"{'seed':>6s} {'λ global':>9s} {'GCV global':>10s} {'GCV local':>9s} "
              f"{'ratio':>6s} {'pruned':>9s} {'sweeps':>6s}")
    print(header)
    print("-" * len(header))
    rows = []
    for seed in range(n_seeds):
        r = orr_section_6_5(seed)
        rows.append(r)
        print(f"{seed:>6d} {r['lambda']:9.2e} {r['gcv_global']:10.4f} {r['gcv_local']:9.4f} "
              f"{r['gcv_local'] / r['gcv_global']:6.2f} {r['pruned']:>6d}/50 "
              f"{len(r['trace']) - 1:6d}")
    print("-" * len(header))
    mean = {k: float(np.mean([r[k] for r in rows])) for k in ("gcv_global", "gcv_local",
                                                              "pruned")}
    ratio = float(np.mean([r["gcv_local"] / r["gcv_global"] for r in rows]))
    print(f"{'mean':>6s} {'':9s} {mean['gcv_global']:10.4f} {mean['gcv_local']:9.4f} "
          f"{ratio:6.2f} {mean['pruned']:6.1f}/50")
    print(f"{'paper':>6s} {'':9s} {PAPER['gcv_global']:10.4f} {PAPER['gcv_local']:9.4f} "
          f"{PAPER['gcv_local'] / PAPER['gcv_global']:6.2f} {PAPER['pruned']:>6d}/50")
    monotone = all(all(b <= a * (1 + 1e-9) for a, b in zip(r["trace"], r["trace"][1:],
                                                          strict=False)) for r in rows)
    print(f"\nGCV never rises from sweep to sweep: {monotone}")
    pruned = [r["pruned"] for r in rows]
    print(f"pruned: min {min(pruned)}, median {np.median(pruned):.0f}, max {max(pruned)} "
          f"(paper, one data set: {PAPER['pruned']})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
