"""Benchmark the Softmax-Code optimiser against the Tammes code it starts from.

Run ``python benchmarks/bench_softmax.py`` (``--quick`` for the small cases
only, ``--threads N`` for torch's CPU threads).  Prints two Markdown tables:

* from the Tammes start: the certified ρ of the baseline (``solvers.tammes``,
  run first in the same process) and of ``softmax_code`` started from that
  very code, with their max-cos, wall times and the time ratio;
* from random starts (``closed_form=False``): the certified ρ reached and
  its distance to the closed-form optimum of Jiang et al. 2024, Thm 3.3, median time
  over the seeds.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import torch

from spherecodes.certificate import one_vs_rest_distances
from spherecodes.solvers import softmax_code, tammes

FROM_TAMMES = [(16, 100), (32, 200), (10, 1000), (64, 1000)]
CLOSED_FORMS = [
    (2, 5, 1 - math.cos(2 * math.pi / 5), "pentagon"),
    (3, 4, 4 / 3, "simplex"),
    (5, 6, 6 / 5, "simplex"),
    (3, 5, 1.0, "octahedron subset"),
    (3, 6, 1.0, "octahedron"),
    (4, 7, 1.0, "cross-polytope subset"),
]


def rho(w) -> float:
    return one_vs_rest_distances(w, device="cpu").rho_lower


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip K = 1000 and use one seed per closed form")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="ascent steps (default: the solver's)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}\n")

    print("| d | K | tammes ρ | tammes max-cos | tammes s | softmax ρ | softmax max-cos | softmax s "
          "| ρ gain | time ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d, k in FROM_TAMMES:
        if args.quick and k >= 1000:
            continue
        base, base_s = timed(tammes, d, k, seed=0, device="cpu")
        res, res_s = timed(softmax_code, d, k, start=base.prototypes, steps=args.steps, device="cpu")
        before, after = rho(base.prototypes), rho(res.prototypes)
        print(f"| {d} | {k} | {before:.6f} | {base.max_cos:.5f} | {base_s:.1f} | {after:.6f} | {res.max_cos:.5f} "
              f"| {res_s:.1f} | {after - before:.2e} | {res_s / base_s:.1f} |", flush=True)

    print("\n| d | K | optimum | ρ (worst seed) | worst distance to the optimum | median s |")
    print("|---|---|---|---|---|---|")
    seeds = (0,) if args.quick else (0, 1, 2)
    for d, k, optimum, name in CLOSED_FORMS:
        values, times = [], []
        for seed in seeds:
            res, seconds = timed(softmax_code, d, k, seed=seed, start="random", closed_form=False, device="cpu")
            values.append(rho(res.prototypes))
            times.append(seconds)
        worst = min(values)
        print(f"| {d} | {k} | {name} {optimum:.10f} | {worst:.14f} | {abs(worst - optimum):.1e} "
              f"| {statistics.median(times):.1f} |", flush=True)


if __name__ == "__main__":
    main()
