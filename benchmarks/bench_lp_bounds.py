"""Compute the LP bounds shipped with spherecodes (``spherecodes/data/lp_bounds.json``), timing the search.

Run ``python benchmarks/bench_lp_bounds.py --out spherecodes/data/lp_bounds.json``
(``--jobs N`` runs N sizes at once).  For every size of the grid where
:func:`spherecodes.bounds.max_cos_lower_bound` asks for the LP bound (d >= 3,
K > 2d, no sharp configuration: see :data:`D_GRID`, :data:`K_GRID` and
:data:`EXTRA`) it runs the search itself,
:func:`spherecodes.bounds.search_lp_bound`, never the table or a cache, then
checks its polynomial with :func:`spherecodes.bounds.verify_lp_bound` (the
check ``lp_max_cos_lower_bound`` repeats whenever it reads the table) and
writes the value and the polynomial.  It prints the time the search takes
per size (median, slowest), the number of LPs solved, and the time that
reading and verifying a stored entry takes instead.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from pathlib import Path

#: Dimensions and sizes of the table: the sizes of the bundled catalog, the documentation and the papers'
#: benchmarks (CIFAR-100, ImageNet-1k, face recognition at 10^4 to 10^6 classes), in the dimensions of
#: common feature layers.
D_GRID = (3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 25, 32, 48, 50, 64, 96, 100, 128, 200, 256, 384, 512, 768, 1024,
          2048, 4096)
K_GRID = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000,
          1_000_000)
#: Sizes the documentation and the bundled catalog name that the grid misses.
EXTRA = ((3, 120), (6, 86), (6, 98), (7, 28), (8, 3000), (12, 40), (64, 999), (1221, 15984))


def grid() -> list[tuple[int, int]]:
    """The sizes of the table: those where :func:`spherecodes.bounds.max_cos_lower_bound` runs the LP.

    The grid, :data:`EXTRA`, and every size with a published best-known code
    (:func:`spherecodes.records.published_records`), whose report compares the code with that value and the bound.
    """
    from spherecodes.bounds import sharp_optimum
    from spherecodes.records import published_records

    sizes = sorted({(d, k) for d in D_GRID for k in K_GRID} | set(EXTRA) | set(published_records()))
    return [(d, k) for d, k in sizes if d >= 3 and k > 2 * d and sharp_optimum(d, k) is None]


def stored_row(size: tuple[int, int], table: dict) -> tuple | None:
    """An entry of ``table`` (:func:`spherecodes.lp_store.read_table`) taken over as it stands, if its polynomial
    still proves its value (:func:`spherecodes.bounds.verify_lp_bound`, the check every reader makes)."""
    from spherecodes.bounds import verify_lp_bound

    record = table.get(size)
    if record is None or not verify_lp_bound(*size, record.value, record.coefficients):
        return None
    return (*size, record.value, list(record.coefficients), 0, 0.0)


def compute(size: tuple[int, int]) -> tuple[int, int, float, list, int, float]:
    """One entry: the search's value and polynomial, its LP solves and seconds (in a worker process)."""
    from spherecodes.bounds import search_lp_bound, verify_lp_bound

    d, k = size
    began = time.perf_counter()
    found = search_lp_bound(d, k)
    seconds = time.perf_counter() - began
    if found.coefficients is None or not verify_lp_bound(d, k, found.value, found.coefficients):
        raise SystemExit(f"the search's polynomial for (d, K) = ({d}, {k}) does not verify")
    return d, k, found.value, list(found.coefficients), found.solves, seconds


def write_table(path: Path, rows: list) -> None:
    """The table: a header that says what it is and how it was verified, then one entry per line."""
    from spherecodes.bounds import LP_MAX_DEGREE
    from spherecodes.lp_store import FORMAT, VERSION

    header = {
        "format": FORMAT,
        "version": VERSION,
        "about": "Delsarte-Goethals-Seidel LP bound on max-cos (spherecodes.bounds.lp_max_cos_lower_bound), per "
                 "(d, K): [d, K, value, coefficients of the LP polynomial at value, before the verification's shift]",
        "verification": "each entry is the result of spherecodes.bounds.search_lp_bound, written by "
                        "benchmarks/bench_lp_bounds.py after spherecodes.bounds.verify_lp_bound accepted it; "
                        "lp_max_cos_lower_bound runs verify_lp_bound again on every entry it reads and ignores one "
                        "that fails; tests/test_lp_store.py recomputes a sample",
        "degree": LP_MAX_DEGREE,
        "grid": {"d": list(D_GRID), "k": list(K_GRID), "extra": [list(s) for s in EXTRA],
                 "kept": "d >= 3, K > 2d, no sharp configuration"},
    }
    lines = "{\n" + "".join(f" {json.dumps(key)}: {json.dumps(value)},\n" for key, value in header.items())
    lines += ' "entries": [\n'
    lines += ",\n".join("  " + json.dumps([d, k, value, coefficients], separators=(",", ":"))
                        for d, k, value, coefficients, *_ in rows)
    lines += "\n ]\n}\n"
    path.write_text(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None, help="Write the table here.")
    parser.add_argument("--jobs", type=int, default=1, help="Sizes computed at once.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N sizes (a quick run).")
    parser.add_argument("--missing", action="store_true",
                        help="Search only the sizes that the shipped table lacks (or whose entry no longer verifies); "
                             "keep its other entries as they are.")
    args = parser.parse_args()
    sizes = grid()[:args.limit]
    print(f"{len(sizes)} sizes; load average {os.getloadavg()[0]:.2f}", flush=True)
    began = time.perf_counter()
    kept = {}
    if args.missing:
        from spherecodes import lp_store

        table = lp_store.read_table()
        kept = {size: row for size in sizes if (row := stored_row(size, table)) is not None}
        print(f"{len(kept)} entries of the table kept, {len(sizes) - len(kept)} to search", flush=True)
    rows = list(kept.values())
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for row in pool.imap(compute, [size for size in sizes if size not in kept]):
            rows.append(row)
            print(f"d={row[0]} K={row[1]}: {row[2]!r} ({row[4]} LPs, {row[5]:.2f} s)", flush=True)
    rows.sort(key=lambda row: row[:2])
    if args.out is not None:
        write_table(args.out, rows)
    searched = [row for row in rows if row[:2] not in kept]
    seconds = [row[5] for row in searched] or [0.0]
    solves = [row[4] for row in searched] or [0]
    from spherecodes import lp_store
    from spherecodes.bounds import verify_lp_bound

    # What reading the table costs instead: parsing it once, and verifying an entry.
    lp_store.read_table.cache_clear()
    start = time.perf_counter()
    table = lp_store.read_table()
    parse = time.perf_counter() - start
    verify = []
    for d, k in sizes[:: max(1, len(sizes) // 20)]:
        record = table.get((d, k))
        if record is None:
            continue
        start = time.perf_counter()
        verify_lp_bound(d, k, record.value, record.coefficients)
        verify.append(time.perf_counter() - start)
    print(f"\n| what | median | slowest |\n|---|---|---|\n"
          f"| the search, per size ({len(searched)} sizes, {args.jobs} at once) | {statistics.median(seconds):.2f} s "
          f"| {max(seconds):.2f} s |\n"
          f"| LPs solved per size | {statistics.median(solves):.0f} | {max(solves)} |\n"
          + (f"| reading the table ({len(table)} entries), once per process | {parse * 1e3:.1f} ms | |\n"
             f"| verifying a stored entry | {statistics.median(verify) * 1e3:.1f} ms | {max(verify) * 1e3:.1f} ms |\n"
             if verify else "")
          + f"\ntotal {time.perf_counter() - began:.0f} s; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
