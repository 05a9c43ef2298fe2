"""Benchmark ``spherecodes.solvers.tammes`` against the seed-002 reference procedure.

Run ``python benchmarks/bench_tammes.py`` (``--quick``: one repeat of each
case; ``--large``: add d = 128, K = 10,000, which costs about 25 minutes of
reference steps on a 2-core CPU; ``--threads N``: torch CPU threads for the
whole process).  Prints a Markdown table.

The reference is the published procedure of Mettes et al. (2019, Eq. 5,
github.com/psmmettes/hpn ``prototypes.py``), transcribed here rather than
imported so that it stays independent of the library: a float32 random start,
then 1000 iterations of autograd through ``L_HP`` (max-pooled Gram matrix),
``SGD(lr=0.1, momentum=0.9)`` re-created after every step (so the momentum
never acts: each update is a plain gradient step), and row re-normalisation.
Both run in this process on the same machine, one after the other.  Run i
uses seed ``--seed + i``; ``--repeats`` runs are made of cases whose first run
took less than ``--cheap`` seconds, one otherwise.  The table gives the median
max-cos with its range over the runs (the reference's result depends strongly
on its start: from some starts it leaves two prototypes almost coincident) and
the median wall time; "time ratio" is tammes over reference.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import numpy as np
import torch

from spherecodes.solvers import tammes

#: (d, K, tammes options, what is known about the optimum).
CASES = [
    (3, 12, {}, "optimum 1/sqrt(5) = 0.4472136 (icosahedron)"),
    (4, 120, {}, "optimum (1+sqrt(5))/4 = 0.8090170 (600-cell)"),
    (64, 1000, {}, "LP bound >= 0.092"),
    (100, 100, {}, "optimum -1/99 = -0.0101010 (simplex)"),
    (100, 100, {"closed_form": False}, "same, from random starts only"),
]
LARGE_CASE = (128, 10_000, {}, "")


def reference_procedure(d: int, k: int, seed: int, steps: int = 1000, lr: float = 0.1) -> np.ndarray:
    """The HPN prototype optimisation as published, in float32."""
    generator = torch.Generator().manual_seed(seed)
    prototypes = torch.nn.Parameter(torch.nn.functional.normalize(torch.randn(k, d, generator=generator), p=2, dim=1))
    optimizer = torch.optim.SGD([prototypes], lr=lr, momentum=0.9)
    for _ in range(steps):
        product = torch.matmul(prototypes, prototypes.t()) + 1
        product = product - 2.0 * torch.diag(torch.diag(product))
        loss = product.max(dim=1)[0].mean()
        loss.backward()
        optimizer.step()
        prototypes = torch.nn.Parameter(torch.nn.functional.normalize(prototypes.detach(), p=2, dim=1))
        optimizer = torch.optim.SGD([prototypes], lr=lr, momentum=0.9)
    return prototypes.detach().double().numpy()


def max_cos(w: np.ndarray) -> float:
    """float64 max-cos of the re-normalised rows, a block of rows at a time."""
    w = w / np.linalg.norm(w, axis=1, keepdims=True)
    best = -math.inf
    for start in range(0, len(w), 2048):
        block = w[start : start + 2048] @ w.T
        block[np.arange(len(block)), start + np.arange(len(block))] = -np.inf
        best = max(best, float(block.max()))
    return best


def runs(solve, seeds: list[int], cheap: float) -> tuple[list[float], list[float]]:
    """max-cos and wall time of ``solve(seed)`` for each seed; after the first
    run, only if that run took less than ``cheap`` seconds."""
    values, times = [], []
    for seed in seeds:
        start = time.perf_counter()
        values.append(solve(seed))
        times.append(time.perf_counter() - start)
        if times[0] >= cheap:
            break
    return values, times


def spread(values: list[float]) -> str:
    """Median, and the range when there is more than one value."""
    if len(values) == 1:
        return f"{values[0]:.7f}"
    return f"{statistics.median(values):.7f} [{min(values):.7f}, {max(values):.7f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per case")
    parser.add_argument("--large", action="store_true", help="add d = 128, K = 10,000 (slow)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cheap", type=float, default=20.0, help="repeat only runs faster than this (s)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = 1 if args.quick else args.repeats
    cases = CASES + ([LARGE_CASE] if args.large else [])

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, device cpu\n")
    print("| d | K | tammes options | runs ref / tammes | reference max-cos | reference s | tammes max-cos "
          "| tammes s | time ratio | stop | known |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d, k, options, known in cases:
        seeds = [args.seed + i for i in range(repeats)]
        ref_values, ref_times = runs(lambda seed: max_cos(reference_procedure(d, k, seed)), seeds, args.cheap)
        stops = []

        def run_tammes(seed):
            result = tammes(d, k, seed=seed, device="cpu", **options)
            stops.append(result.stop_reason)
            return result.max_cos

        values, times = runs(run_tammes, seeds, args.cheap)
        label = ", ".join(f"{key}={val}" for key, val in options.items()) or "defaults"
        ref_time, wall = statistics.median(ref_times), statistics.median(times)
        print(f"| {d} | {k:,} | {label} | {len(ref_values)} / {len(values)} | {spread(ref_values)} | {ref_time:.2f} "
              f"| {spread(values)} | {wall:.2f} | {wall / ref_time:.2f} | {', '.join(sorted(set(stops)))} | {known} |",
              flush=True)


if __name__ == "__main__":
    main()
