"""Benchmark the certificate of codes whose witnesses have large supports: the Gram pass against the QP path.

Run ``python benchmarks/bench_large_support.py`` (``--quick``: one run per
case and the smaller sizes only; ``--full``: also the QP path at
(1000, 1000), which takes about 20 minutes on 2 cores).  Prints a Markdown
table of median wall times of :func:`spherecodes.certificate.one_vs_rest_distances`
with the Gram pass (as shipped) and without it (the QP solver settles every
class the nearest shells leave), in the same process, their ratio, ρ from
each and whether the two intervals overlap.

The inputs are the Gram-near-identity codes that ``certify`` meets in files
from other tools: the rows of a random orthogonal matrix perturbed by
``noise`` (1e-3 or 1e-4) and renormalised, K = d.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from spherecodes.certificate import _gram as cert_gram
from spherecodes.certificate import one_vs_rest_distances


def near_orthonormal(k: int, noise: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((k, k)))
    w = q + noise * rng.standard_normal((k, k))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def timed(w: np.ndarray, *, gram: bool, repeats: int):
    saved = cert_gram.GRAM_MAX_K
    cert_gram.GRAM_MAX_K = saved if gram else 0
    try:
        times, cert = [], None
        for _ in range(repeats):
            started = time.perf_counter()
            cert = one_vs_rest_distances(w, device="cpu")
            times.append(time.perf_counter() - started)
        return statistics.median(times), cert
    finally:
        cert_gram.GRAM_MAX_K = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per case, K <= 400")
    parser.add_argument("--full", action="store_true", help="also the QP path at K = 1000 (~20 min)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    sizes = [200, 400] if args.quick else [200, 400, 1000]
    print(f"threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f} at start, "
          f"{repeats} run(s) per cell\n")
    print("| K = d | noise | Gram pass (s) | QP path (s) | ratio | rho | intervals overlap |")
    print("|---|---|---|---|---|---|---|")
    for k in sizes:
        for noise in (1e-3, 1e-4):
            w = near_orthonormal(k, noise)
            fast, cert = timed(w, gram=True, repeats=repeats)
            rho = f"[{cert.rho_lower:.12f}, {cert.rho_upper:.12f}]"
            if k < 1000 or args.full:
                slow, old = timed(w, gram=False, repeats=1 if k >= 1000 else repeats)
                overlap = bool((cert.lo <= old.hi + 1e-12).all() and (old.lo <= cert.hi + 1e-12).all())
                print(f"| {k} | {noise:g} | {fast:.2f} | {slow:.1f} | {slow / fast:.0f} x | {rho} | {overlap} |")
            else:
                print(f"| {k} | {noise:g} | {fast:.2f} | (--full) | | {rho} | |")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
