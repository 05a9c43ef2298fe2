"""Benchmark building the isotropic-subspaces codes in blocks against a pivoted Cholesky one column at a time.

Run ``python benchmarks/bench_isotropic.py`` (``--q 9,11`` picks the
orders, ``--repeats 3`` the runs per method; the column-by-column baseline
grows like v·m² matrix-vector products, so keep it to q ≤ 13).  Both methods
factor the same Gram matrix (that of the collinearity graph of Q⁻(5, q) on
its eigenspace of −(q² + 1); Cohn & Kumar 2007, Table 1) in the same
process: the baseline asks for one Gram column per pivot and updates every
point's coordinates by a matrix-vector product
(Harbrecht, Peters & Schneider 2012); ``gram_points_by_blocks`` chooses a
basis on a sample and solves for 1024 rows at a time (BLAS-3).  The table
gives the medians, their ratio, the largest error of 64 rows' products
against the exact Gram matrix, and the load average.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np

from spherecodes.structured import srg
from spherecodes.structured.description import gram_points_by_blocks


def by_columns(gram_block, n: int, rank: int) -> np.ndarray:
    """The baseline: pivoted Cholesky asking for one Gram column per pivot (n·rank² work, matrix-vector)."""
    everyone = np.arange(n)
    factor = np.zeros((n, rank), order="F")
    residual = np.ones(n)
    for j in range(rank):
        pivot = int(np.argmax(residual))
        column = gram_block(everyone, np.array([pivot]))[:, 0] - factor[:, :j] @ factor[pivot, :j]
        factor[:, j] = column / math.sqrt(residual[pivot])
        residual -= factor[:, j] ** 2
    return factor / np.linalg.norm(factor, axis=1, keepdims=True)


def gram_of(q: int):
    """The exact Gram blocks of the isotropic-subspaces code of q, and (v, m)."""
    v, m = (q + 1) * (q**3 + 1), q * (q * q - q + 1)
    adjacency = srg.quadrangle_adjacency(q)

    def block(rows, cols):
        out = np.where(adjacency(rows, cols), -1.0 / q, 1.0 / q**2)
        out[rows[:, None] == cols[None, :]] = 1.0
        return out

    return block, v, m


def error(points: np.ndarray, block) -> float:
    rows = np.arange(0, len(points), max(1, len(points) // 64))[:64]
    return float(np.abs(points[rows] @ points.T - block(rows, np.arange(len(points)))).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--q", default="9,11", help="comma-separated prime powers (default 9,11)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| q | points | R^d | by columns (median) | in blocks (median) | ratio | error columns | error blocks |")
    print("|---|---|---|---|---|---|---|---|")
    for q in (int(x) for x in args.q.split(",")):
        block, v, m = gram_of(q)
        timings = {"columns": [], "blocks": []}
        errors = {}
        for _ in range(args.repeats):
            for name, build in (("columns", lambda: by_columns(block, v, m)),
                                ("blocks", lambda: gram_points_by_blocks(block, v, m))):
                began = time.perf_counter()
                points = build()
                timings[name].append(time.perf_counter() - began)
                errors[name] = error(points, block)
                del points
        columns, blocks = (statistics.median(timings[k]) for k in ("columns", "blocks"))
        print(f"| {q} | {v:,} | {m} | {columns:.2f} s | {blocks:.2f} s | {columns / blocks:.1f}× | "
              f"{errors['columns']:.1e} | {errors['blocks']:.1e} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
