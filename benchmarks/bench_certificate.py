"""Benchmark the one-vs-rest certificate and the LP bound on max-cos.

Run ``python benchmarks/bench_certificate.py`` (add ``--quick`` to skip the
K = 10,000 case, ``--device cuda`` for a GPU).  Prints a Markdown table of
median wall and CPU times over ``--repeats`` runs.

``--restart`` compares instead, on Tammes-optimised codes up to (256, 2000)
and in the same process, the interior-point restart of the QP as it is
against its previous setting (all 2d + 2 candidates, Newton systems always
through the Woodbury identity): median wall and CPU times of the whole
certificate, alternating the two, their ratios and whether the intervals
agree.

Inputs are of two kinds:

* ``random``: independent uniform unit vectors;
* ``repelled``: random points pushed apart by 200 steps of a soft-max
  repulsion;
* ``solvers.tammes``: the Tammes optimiser of :mod:`spherecodes.solvers`
  (when that module exists), i.e. what banks hold.  Its codes are "jammed":
  each prototype has about d neighbours at nearly the same cosine, which
  makes the one-vs-rest QPs nearly degenerate and the hardest inputs.

The spread codes are cached under ``~/.cache/spherecodes-bench`` because
making them costs minutes at K = 10,000.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from spherecodes.bounds import lp_max_cos_lower_bound
from spherecodes.certificate import _qp as cert_qp
from spherecodes.certificate import one_vs_rest_distances

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spherecodes-bench"

CERTIFICATE_CASES = [(64, 1000), (128, 10_000)]
RESTART_CASES = [(64, 1000), (256, 2000)]
LP_CASES = [(3, 12), (4, 120), (8, 240), (64, 1000), (100, 100), (128, 10_000), (512, 1_000_000)]


def random_code(k: int, d: int, seed: int = 0) -> np.ndarray:
    w = np.random.default_rng(seed).standard_normal((k, d))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def repelled_code(k: int, d: int, seed: int = 0, steps: int = 200) -> np.ndarray:
    """Random points pushed apart: each step moves every point away from a
    soft-max-weighted average of its nearest neighbours (sharpening from
    β = 10 to 50) and re-normalises.  float32 on the CPU, O(K²d) per step."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(k, d, generator=g)
    w = w / w.norm(dim=1, keepdim=True)
    for step in range(steps):
        beta = 10.0 + 40.0 * step / steps
        cos = w @ w.T
        cos.fill_diagonal_(-2.0)
        weights = torch.exp(beta * (cos - cos.max(dim=1, keepdim=True).values))
        push = (weights @ w) / weights.sum(dim=1, keepdim=True)
        w = w - 0.3 * push
        w = w / w.norm(dim=1, keepdim=True)
    w = w.double().numpy()
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def cached(name: str, make) -> np.ndarray:
    path = CACHE / f"{name}.npy"
    if path.exists():
        return np.load(path)
    w = make()
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, w)
    return w


def spread_codes(k: int, d: int, seed: int = 0) -> list[tuple[np.ndarray, str]]:
    """The repelled code, and the Tammes optimiser's code when spherecodes.solvers exists."""
    codes = [(cached(f"repelled-d{d}-k{k}-s{seed}", lambda: repelled_code(k, d, seed)), "repelled")]
    try:
        codes.append((tammes_code(k, d, seed), "solvers.tammes"))
    except ImportError:
        pass
    return codes


def tammes_code(k: int, d: int, seed: int = 0) -> np.ndarray:
    """The Tammes optimiser's code (default settings, CPU), cached."""
    from spherecodes.solvers import tammes

    make = lambda: np.asarray(tammes(d, k, seed=seed, device="cpu").prototypes, dtype=np.float64)
    return cached(f"tammes-d{d}-k{k}-s{seed}", make)


def bench_certificate(w: np.ndarray, device: str, repeats: int) -> dict:
    walls, cpus = [], []
    for _ in range(repeats):
        cpu = time.process_time()
        cert = one_vs_rest_distances(w, device=device)
        cpus.append(time.process_time() - cpu)
        walls.append(cert.wall_time)
    supports = (cert.support_indices >= 0).sum(axis=1)
    return {
        "wall": statistics.median(walls),
        "wall_min": min(walls),
        "cpu": statistics.median(cpus),
        "rho": (cert.rho_lower, cert.rho_upper),
        "width": cert.width,
        "certified": cert.certified,
        "rounds": cert.rounds,
        "support": (float(supports.mean()), int(supports.max())),
    }


@contextlib.contextmanager
def previous_restart():
    """The restart's previous setting: every candidate, and the Woodbury form whenever m > d."""
    saved = cert_qp.IPM_EXTRA_PER_ROOT_DIM, cert_qp.IPM_NORMAL_PER_DIM
    cert_qp.IPM_EXTRA_PER_ROOT_DIM, cert_qp.IPM_NORMAL_PER_DIM = math.inf, 1.0
    try:
        yield
    finally:
        cert_qp.IPM_EXTRA_PER_ROOT_DIM, cert_qp.IPM_NORMAL_PER_DIM = saved


def bench_restart(w: np.ndarray, repeats: int) -> dict:
    """Median wall and CPU seconds of the certificate with the previous and the current restart, alternating."""
    times = {"previous": ([], []), "current": ([], [])}
    certs = {}
    for _ in range(repeats):
        for name, setting in (("previous", previous_restart), ("current", contextlib.nullcontext)):
            with setting():
                cpu = time.process_time()
                certs[name] = one_vs_rest_distances(w, device="cpu")
                times[name][1].append(time.process_time() - cpu)
                times[name][0].append(certs[name].wall_time)
    old, new = certs["previous"], certs["current"]
    # Both are at rounding level, so each interval may clear the other's by a few units of 1e-16.
    agree = bool(old.certified and new.certified and (new.lo <= old.hi + 1e-12).all()
                 and (old.lo <= new.hi + 1e-12).all())
    return {name: (statistics.median(walls), statistics.median(cpus)) for name, (walls, cpus) in times.items()} | {
        "rho": (new.rho_lower, new.rho_upper), "agree": agree}


def bench_lp(d: int, k: int, repeats: int) -> dict:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        bound = lp_max_cos_lower_bound.__wrapped__(d, k)  # bypass the cache
        times.append(time.perf_counter() - start)
    return {"time": statistics.median(times), "value": bound.value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="skip K = 10,000")
    parser.add_argument("--restart", action="store_true",
                        help="only the QP's restart against its previous setting, on Tammes-optimised codes (CPU)")
    args = parser.parse_args()

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    if args.restart:
        print("| d | K | previous: median wall s | CPU s | current: median wall s | CPU s | ratio wall | ratio CPU "
              "| ρ interval | intervals agree |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for d, k in RESTART_CASES:
            w = tammes_code(k, d)
            r = bench_restart(w, args.repeats)
            (old_wall, old_cpu), (new_wall, new_cpu) = r["previous"], r["current"]
            print(f"| {d} | {k} | {old_wall:.2f} | {old_cpu:.2f} | {new_wall:.2f} | {new_cpu:.2f} "
                  f"| {old_wall / new_wall:.2f} | {old_cpu / new_cpu:.2f} "
                  f"| [{r['rho'][0]:.12f}, {r['rho'][1]:.12f}] | {r['agree']} |", flush=True)
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
        return
    print("| d | K | input | median wall s | min wall s | median CPU s | ρ interval | width | certified "
          "| rounds | support mean/max |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d, k in CERTIFICATE_CASES:
        if args.quick and k > 1000:
            continue
        for w, source in [(random_code(k, d), "random"), *spread_codes(k, d)]:
            r = bench_certificate(w, args.device, args.repeats)
            print(f"| {d} | {k} | {source} | {r['wall']:.2f} | {r['wall_min']:.2f} | {r['cpu']:.2f} "
                  f"| [{r['rho'][0]:.12f}, {r['rho'][1]:.12f}] | {r['width']:.1e} | {r['certified']} "
                  f"| {r['rounds']} | {r['support'][0]:.1f}/{r['support'][1]} |", flush=True)

    print("\n| d | K | LP bound on max-cos | median s (uncached) |")
    print("|---|---|---|---|")
    for d, k in LP_CASES:
        r = bench_lp(d, k, args.repeats)
        print(f"| {d} | {k} | {r['value']:.10f} | {r['time']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
