"""Benchmark the statistics and certificate of the first K words of a sign-change orbit against the scans.

Run ``python benchmarks/bench_orbit_prefix.py`` (``--quick``: K = 3,000
only, one run; ``--full``: also K = 10^6, where only the prefix's path
runs).  For the first K messages (K not a power of two) of the extended BCH
code [64,16,22], and at K = 10^6 of the best structured code in R^64 (a
shortened BCH code, kept in its coordinates), in the same process, as
medians:

* ``separation_statistics`` through the :class:`spherecodes.orbit.OrbitPrefix`
  (two products and a tree of block maxima), and with ``orbit=None`` (the
  tiles of all K(K − 1)/2 pairs);
* ``one_vs_rest_distances`` through the prefix (the whole orbit's class 0),
  and with ``orbit=None`` (the nearest-shell pass of every class against
  all K), where K <= 20,000;
* ``verify_witness`` of the prefix's certificate (what ``report`` re-checks).

Prints a Markdown table with the ratios against the prefix's path, and the
ρ intervals of both certificates.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from spherecodes.certificate import one_vs_rest_distances, verify_witness
from spherecodes.orbit import orbit_prefix
from spherecodes.stats import separation_statistics
from spherecodes.structured import bch_code, best_structured_code

SCANS_UP_TO = 20_000


def median_seconds(run, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def row(d: int, k: int, repeats: int) -> str:
    w = bch_code(6, 21).construction.points(k) if k <= 2**16 else best_structured_code(d, k).points(k)
    prove, prefix = median_seconds(lambda: orbit_prefix(w), repeats)
    fast_stats, _ = median_seconds(lambda: separation_statistics(w, orbit=prefix), repeats)
    fast_cert, cert = median_seconds(lambda: one_vs_rest_distances(w, device="cpu", orbit=prefix), repeats)
    check, _ = median_seconds(lambda: verify_witness(w, cert, orbit=prefix), repeats)
    cells = [f"{d}", f"{k:,}", f"{prove:.3g}", f"{fast_stats:.3g}"]
    if k <= SCANS_UP_TO:
        slow_stats, _ = median_seconds(lambda: separation_statistics(w, orbit=None), repeats)
        slow_cert, generic = median_seconds(lambda: one_vs_rest_distances(w, device="cpu", orbit=None), 1)
        cells += [f"{slow_stats:.3g} ({slow_stats / fast_stats:.3g}x)", f"{fast_cert:.3g}",
                  f"{slow_cert:.3g} ({slow_cert / fast_cert:.3g}x)"]
        scanned = f"[{generic.rho_lower:.15g}, {generic.rho_upper:.15g}]"
    else:
        cells += ["-", f"{fast_cert:.3g}", "-"]
        scanned = "-"
    cells += [f"{check:.3g}", f"[{cert.rho_lower:.15g}, {cert.rho_upper:.15g}]", f"{cert.classes_certified:,}",
              scanned]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 3,000 only, one run")
    parser.add_argument("--full", action="store_true", help="also K = 10^6 (the prefix's path only)")
    args = parser.parse_args()
    sizes = [3_000] if args.quick else [3_000, 10_000, 20_000] + ([1_000_000] if args.full else [])
    repeats = 1 if args.quick else 3
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    print("| d | K | prefix proved (s) | statistics, prefix (s) | statistics, all pairs (s) | certificate, prefix "
          "(s) | certificate, every class (s) | re-check (s) | rho, prefix | classes certified | rho, every class |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sizes:
        print(row(64, k, repeats), flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
