"""Benchmark the large-K path of ``spherecodes``: neighbour lists, blocked statistics and certificate.

Run ``python benchmarks/bench_large_k.py`` from the repository root.  Prints
Markdown tables:

1. **Agreement** (always): the neighbour-list path against the dense path on
   sizes where both run — with lists of every pair (m = K − 1, the same
   objective, no polish: the difference is rounding) and with tiny lists
   polished to convergence.
2. **Medium** (always; ``--quick`` skips it): dense and neighbour lists side by
   side at (64, 2000), median over ``--repeats`` seeds, with the time ratio
   to the dense run made just before in this process.
3. **Large** (``--large``): K = 100,000 prototypes in R^64 — ``tammes`` with
   its defaults, then the certificate — with wall times, the peak resident
   memory of this process, and max-cos against the LP bound and against
   random unit vectors of the same size (the solver's own first start,
   measured exactly in this process).
4. **GPU targets** (``--gpu``, with ``--device cuda``): K = 100,000 in R^512
   generated and certified (peak GPU memory); K = 1,000,000 in R^512 under a
   480 s time limit, with its rate (steps per second) and the time that rate
   implies for the full schedule.

``--threads`` (default 1) sets torch's CPU threads for the whole process: on
a small shared machine torch's thread pool makes these runs several times
slower (docs/optimisers.md, Threads).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import torch

from spherecodes.bounds import max_cos_lower_bound
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.memory import format_bytes, format_duration
from spherecodes.solvers import tammes
from spherecodes.stats import random_code_max_cos, separation_statistics


def agreement() -> None:
    print("### Neighbour lists against the dense path\n")
    print("| d | K | lists | polish | dense max-cos | lists max-cos | difference | largest coordinate difference |")
    print("|---|---|---|---|---|---|---|---|")
    cases = [
        (8, 40, 39, dict(steps=150, restarts=1, polish=False, dtype="float64")),
        (16, 200, 199, dict(steps=150, restarts=1, polish=False, dtype="float64")),
        (3, 12, 4, dict(steps=1500, restarts=4)),
        (3, 24, 6, dict(steps=1500, restarts=4)),
        (4, 120, 12, dict(steps=2000, restarts=2)),
    ]
    for d, k, m, options in cases:
        common = dict(seed=0, device="cpu", closed_form=False, **options)
        dense = tammes(d, k, neighbours=0, **common)
        lists = tammes(d, k, neighbours=m, refresh=5, **common)
        polish = "to convergence" if options.get("polish", True) else "none"
        shift = abs(lists.prototypes - dense.prototypes).max()
        print(f"| {d} | {k} | m = {m}{' (all)' if m == k - 1 else ''} | {polish} | {dense.max_cos:.10f} | "
              f"{lists.max_cos:.10f} | {abs(lists.max_cos - dense.max_cos):.1e} | {shift:.1e} |")
    print()


def medium(repeats: int) -> None:
    d, k = 64, 2000
    print(f"### Dense and neighbour lists at (d, K) = ({d}, {k}), 1000 steps, median of {repeats}\n")
    print("| path | m | refresh | max-cos (median) | range | s (median) | time / dense |")
    print("|---|---|---|---|---|---|---|")
    rows = [("dense", 0, None), ("lists", 64, 10), ("lists", 64, 50), ("lists", 128, 10), ("lists", 256, 10)]
    dense_time = None
    for path, m, refresh in rows:
        values, times = [], []
        for seed in range(repeats):
            extra = {} if m == 0 else {"refresh": refresh}
            res = tammes(d, k, seed=seed, steps=1000, device="cpu", neighbours=m, **extra)
            values.append(res.max_cos)
            times.append(res.wall_time)
        median_time = statistics.median(times)
        dense_time = dense_time or median_time
        print(f"| {path} | {m or 'all'} | {refresh or '-'} | {statistics.median(values):.6f} | "
              f"[{min(values):.6f}, {max(values):.6f}] | {median_time:.1f} | {median_time / dense_time:.2f} |")
    print()


def large(d: int, k: int, device: str, time_limit: float | None = None, certify: bool = True) -> None:
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    res = tammes(d, k, seed=0, device=device, time_limit=time_limit)
    generate_s = time.perf_counter() - started
    started = time.perf_counter()
    stats = separation_statistics(res.prototypes, device=device)
    stats_s = time.perf_counter() - started
    cert = None
    if certify:
        cert = one_vs_rest_distances(res.prototypes, device=device)
    started = time.perf_counter()
    baseline = random_code_max_cos(d, k, seed=0, device=device)
    baseline_s = time.perf_counter() - started
    bound = max_cos_lower_bound(d, k)
    rate = res.steps / res.wall_time
    full = res.settings["steps"] / rate
    print(f"### K = {k:,} prototypes in R^{d} on {device}\n")
    print("| quantity | value |")
    print("|---|---|")
    print(f"| settings | m = {res.settings['neighbours']}, refresh every {res.settings['refresh']} steps, "
          f"{res.settings['steps']} steps, {res.settings['dtype']}, {torch.get_num_threads()} torch thread(s) |")
    print(f"| optimisation | {res.wall_time:.1f} s ({res.steps} steps, {res.refreshes} refreshes, "
          f"stop: {res.stop_reason}) |")
    print(f"| rate | {rate:.3g} steps/s; the full schedule takes {format_duration(full)} at this rate |")
    print("| re-measure in float64 (inside the solver) | included above |")
    print(f"| statistics (float64, {device}) | {stats_s:.1f} s |")
    if cert is not None:
        print(f"| certificate | {cert.wall_time:.1f} s, width {cert.width:.1e}, certified: {cert.certified}, "
              f"rounds {cert.rounds} |")
        print(f"| rho | [{cert.rho_lower:.10f}, {cert.rho_upper:.10f}] |")
    print(f"| max-cos reached | {stats.max_cos:.6f} |")
    print(f"| LP lower bound ({bound.method}) | {bound.value:.6f} (gap {stats.max_cos - bound.value:.4f}) |")
    print(f"| random unit vectors, same size (exact, {baseline_s:.0f} s) | {baseline:.6f} "
          f"(code is {baseline - stats.max_cos:.4f} lower, {stats.max_cos / baseline:.2f}x) |")
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"| peak resident memory of this process | {format_bytes(peak_rss)} |")
    if device.startswith("cuda"):
        print(f"| peak GPU memory (torch) | {format_bytes(torch.cuda.max_memory_allocated())} |")
    print(f"| generate + certify | {generate_s + stats_s + (cert.wall_time if cert else 0):.1f} s |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="agreement table only")
    parser.add_argument("--large", action="store_true", help="add K = 100,000 in R^64 (tens of minutes on 2 cores)")
    parser.add_argument("--gpu", action="store_true", help="add the GPU targets (needs --device cuda)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; torch {torch.__version__}, "
          f"{args.threads} thread(s); device {args.device}\n")
    agreement()
    if not args.quick:
        medium(args.repeats)
    if args.large:
        large(64, 100_000, args.device)
    if args.gpu:
        large(512, 100_000, args.device)
        large(512, 1_000_000, args.device, time_limit=480, certify=False)


if __name__ == "__main__":
    main()
