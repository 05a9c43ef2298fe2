"""Benchmark the statistics and certificate of Kerdock codes through their Z4 translations against the scans.

Run ``python benchmarks/bench_z4orbit.py`` (``--quick``: K = 3,000 in R^64
only, one run; ``--full``: also K = 10^5 in R^1024, where only the
structure's path runs).  For the first K points of the Kerdock codes of
length 64 and 256 (what ``auto`` takes at these sizes), in the same process,
as medians:

* ``z4_orbit``: the structure proved from the rows;
* ``separation_statistics`` through the :class:`spherecodes.z4orbit.Z4Orbit`
  (two products and two trees of block maxima), and with ``orbit=None`` (the
  tiles of all K(K − 1)/2 pairs), where K <= 25,000;
* ``one_vs_rest_distances`` through the structure (witnesses of the whole
  orbit's class 0, moved), and with ``orbit=None`` (the nearest-shell pass of
  every class against all K), where K <= 3,000;
* ``verify_witness`` of the structure's certificate, the structure proved
  again from its stored generators (what ``report`` re-checks).

Prints a Markdown table with the ratios against the structure's path, and the
ρ intervals of both certificates.
"""

from __future__ import annotations

import argparse
import os

from bench_orbit_prefix import median_seconds
from spherecodes.certificate import one_vs_rest_distances, verify_witness
from spherecodes.stats import separation_statistics
from spherecodes.structured import kerdock_code
from spherecodes.z4orbit import z4_orbit

STATISTICS_SCANS_UP_TO = 25_000
CERTIFICATE_SCANS_UP_TO = 3_000


def row(n: int, k: int, repeats: int) -> str:
    w = kerdock_code(n).construction.points(k)
    prove, orbit = median_seconds(lambda: z4_orbit(w), repeats)
    fast_stats, _ = median_seconds(lambda: separation_statistics(w, orbit=orbit), repeats)
    fast_cert, cert = median_seconds(lambda: one_vs_rest_distances(w, device="cpu", orbit=orbit), repeats)
    check, _ = median_seconds(lambda: verify_witness(w, cert, orbit=None), repeats)
    cells = [f"{n}", f"{k:,}", f"{prove:.3g}", f"{fast_stats:.3g}"]
    if k <= STATISTICS_SCANS_UP_TO:
        slow_stats, _ = median_seconds(lambda: separation_statistics(w, orbit=None), 1)
        cells.append(f"{slow_stats:.3g} ({slow_stats / fast_stats:.3g}x)")
    else:
        cells.append("-")
    cells.append(f"{fast_cert:.3g}")
    scanned = "-"
    if k <= CERTIFICATE_SCANS_UP_TO:
        slow_cert, generic = median_seconds(lambda: one_vs_rest_distances(w, device="cpu", orbit=None), 1)
        cells.append(f"{slow_cert:.3g} ({slow_cert / fast_cert:.3g}x)")
        scanned = f"[{generic.rho_lower:.15g}, {generic.rho_upper:.15g}]"
    else:
        cells.append("-")
    cells += [f"{check:.3g}", f"[{cert.rho_lower:.15g}, {cert.rho_upper:.15g}]", f"{cert.classes_certified:,}",
              scanned]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 3,000 in R^64 only, one run")
    parser.add_argument("--full", action="store_true", help="also K = 10^5 in R^1024 (the structure's path only)")
    args = parser.parse_args()
    sizes = [(64, 3_000)] if args.quick else [(64, 3_000), (256, 10_000), (256, 21_841)]
    sizes += [(1024, 100_000)] if args.full else []
    repeats = 1 if args.quick else 3
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    print("| n | K | structure proved (s) | statistics, structure (s) | statistics, all pairs (s) | certificate, "
          "structure (s) | certificate, every class (s) | re-check (s) | rho, structure | classes certified | "
          "rho, every class |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, k in sizes:
        print(row(n, k, repeats), flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
