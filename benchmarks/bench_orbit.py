"""Benchmark reading and re-checking a structured code that is one orbit of sign changes.

Run ``python benchmarks/bench_orbit.py`` (``--quick``: K = 2^12 and 2^14
only; ``--full``: also K = 2^20, about 8 GiB of disk and memory for the
bank's making).  For the best structured code in R^128 with K = 2^r (a
shortened BCH code, kept in its coordinates), one bank is made and
certified, then in the same process, as medians:

* ``read_code`` as shipped: the stored generators of the sign changes
  checked against the rows, class 0's witness against all K prototypes;
* the same bank without its generators (as written before they were
  stored): the orbit searched for by elimination over GF(2) from the rows;
* where K <= 2^14, the witness of every class checked against all K
  prototypes (the certificate expanded, the orbit not used): the scan of
  all pairs that the orbit replaces.

Prints a Markdown table with the ratios against the first column.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import h5py

from spherecodes.bank import read_code, write_code
from spherecodes.certificate import one_vs_rest_distances, verify_witness
from spherecodes.run import generate

ALL_PAIRS_UP_TO = 2**14


def median_seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def row(d: int, r: int, repeats: int, folder: str) -> str:
    code = generate(d, 2**r, "structured")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    path = os.path.join(folder, f"orbit-{r}.h5")
    write_code(path, code, overwrite=True)
    stored = median_seconds(lambda: read_code(path), repeats)
    bare = os.path.join(folder, f"bare-{r}.h5")
    write_code(bare, code, overwrite=True)
    with h5py.File(bare, "r+") as fh:
        del fh["codes"][code.name]["orbit"]
    searched = median_seconds(lambda: read_code(bare), repeats)
    cells = [f"{d}", f"2^{r}", f"{stored:.3g}", f"{searched:.3g} ({searched / stored:.2g}x)"]
    if 2**r <= ALL_PAIRS_UP_TO:
        full = code.certificate.expanded(code.prototypes)
        scan = median_seconds(lambda: verify_witness(code.prototypes, full, orbit=None), repeats)
        cells.append(f"{scan:.3g} ({scan / stored:.2g}x)")
    else:
        cells.append("-")
    cells.append(f"{code.certificate.rho_lower:.12g}")
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 2^12 and 2^14 only, one run each")
    parser.add_argument("--full", action="store_true", help="also K = 2^20")
    args = parser.parse_args()
    sizes = [12, 14] if args.quick else [12, 14, 16, 18] + ([20] if args.full else [])
    repeats = 1 if args.quick else 3
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    print("| d | K | read_code, generators stored (s) | orbit searched from the rows (s) | every class "
          "against all K (s) | rho |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for r in sizes:
            print(row(128, r, repeats, folder), flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
