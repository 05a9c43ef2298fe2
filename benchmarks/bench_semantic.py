"""Benchmark semantic prototypes: the ``privileged`` trade-off, the triplet strategies and ``assign``.

Run ``python benchmarks/bench_semantic.py`` (about 20 minutes on two shared
CPU cores; ``--quick`` shrinks every case, ``--part`` runs one part).  Prints
Markdown tables and, with ``--plot PATH``, draws the trade-off curve.

The class embeddings are planted clusters: ``K / size`` random centres in
R^50 and each class a centre plus Gaussian noise of 0.35 per coordinate
(cosine ≈ 0.9 inside a cluster, ≈ 0 ± 0.14 between clusters).  No word
vectors are downloaded.

Parts:

* ``tradeoff`` — K = 100 classes in d = 16 (20 clusters of 5, like the
  CIFAR-100 superclasses) and K = 48 in d = 5 (4 clusters of 12): max-cos
  and semantic agreement of ``tammes``, of ``tammes`` followed by
  ``assign``, and of ``privileged`` over a range of ``--max-cos-tolerance``;
* ``strategies`` — K = 500 in d = 32 (clusters of 10): the ``sampled`` and
  ``neighbours`` triplet sets of ``privileged`` beyond 200 classes;
* ``assign`` — K = 1000 in d = 64 (clusters of 10): ``assign`` on a ``tammes``
  code, with the wall time of the assignment alone.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spherecodes.semantic import assign_by_embeddings, privileged, semantic_agreement
from spherecodes.solvers import tammes

#: max-cos tolerances of ``privileged`` on the trade-off curve.
TOLERANCES = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1)

#: tammes polishes small codes by linear programming until max-cos stops improving;
#: this caps the time it may take here, so that the benchmark finishes.
TAMMES_TIME_LIMIT = 300.0


def planted_clusters(k: int, cluster_size: int, m: int = 50, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k // cluster_size, m))
    e = centres[np.arange(k) // cluster_size] + 0.35 * rng.standard_normal((k, m))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def row(name, prototypes, embeddings, seconds, extra=""):
    a = semantic_agreement(prototypes, embeddings)
    g = prototypes @ prototypes.T
    np.fill_diagonal(g, -np.inf)
    return (name, float(g.max()), a["triplet_agreement"], a["spearman"], seconds, extra)


def print_table(title, rows):
    print(f"\n### {title}\n")
    print("| code | max-cos | triplet agreement | Spearman | wall s | notes |")
    print("|---|---:|---:|---:|---:|---|")
    for name, max_cos, agreement, spearman, seconds, extra in rows:
        print(f"| {name} | {max_cos:.4f} | {agreement:.4f} | {spearman:.3f} | {seconds:.1f} | {extra} |")


def timed(f, *args, **kwargs):
    start = time.perf_counter()
    out = f(*args, **kwargs)
    return out, time.perf_counter() - start


def tammes_with_assign(d, k, embeddings):
    res, seconds = timed(tammes, d, k, seed=0, device="cpu", time_limit=TAMMES_TIME_LIMIT)
    rows = [row("tammes", res.prototypes, embeddings, seconds, f"stop: {res.stop_reason}")]
    assignment, seconds = timed(assign_by_embeddings, res.prototypes, embeddings)
    rows.append(row("tammes + assign", res.prototypes[np.argsort(assignment.order)], embeddings, seconds,
                    f"assign only; {assignment.swaps} swaps"))
    return rows, res.prototypes


def part_tradeoff(quick: bool, plot: str | None, k: int, d: int, size: int):
    k, d = (40, 8) if quick else (k, d)
    embeddings = planted_clusters(k, size)
    rows, start = tammes_with_assign(d, k, embeddings)
    for tolerance in TOLERANCES:
        # The Tammes code is given as the start, so each row times privileged's own work (assign + descent).
        res, seconds = timed(privileged, d, k, embeddings, max_cos_tolerance=tolerance, seed=0, device="cpu",
                             start=start)
        rows.append(row(f"privileged, tolerance {tolerance:g}", res.prototypes, embeddings, seconds,
                        f"best at step {res.settings['best_step']}"))
    print_table(f"Trade-off: K = {k}, d = {d}, {k // size} planted clusters of {size}", rows)
    if plot:
        draw_tradeoff(rows, plot, k, d)


def draw_tradeoff(rows, path, k, d):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curve = [r for r in rows if r[0].startswith("privileged")]
    fig, ax = plt.subplots(figsize=(6, 4.2), dpi=120)
    ax.plot([r[1] for r in curve], [r[2] for r in curve], "o-", color="C0", label="privileged")
    for name, max_cos, agreement, *_ in curve:
        ax.annotate(name.split("tolerance ")[1], (max_cos, agreement), textcoords="offset points", xytext=(6, -4),
                    fontsize=8, color="C0")
    for (name, max_cos, agreement, *_), marker, colour in zip(rows[:2], ("s", "D"), ("C3", "C2")):
        ax.plot([max_cos], [agreement], marker, color=colour, label=name)
    ax.axhline(0.5, color="0.6", lw=0.8, ls="--", label="chance")
    ax.set_xlabel("max-cos (lower is better separated)")
    ax.set_ylabel("triplet agreement with the embeddings")
    ax.set_title(f"Separation vs semantics, K = {k}, d = {d} (labels: --max-cos-tolerance)", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    fig.savefig(path)
    print(f"\nplot written to {path}")


def part_strategies(quick: bool):
    k, d = (240, 16) if quick else (500, 32)
    embeddings = planted_clusters(k, 10)
    rows = []
    for strategy in ("sampled", "neighbours"):
        res, seconds = timed(privileged, d, k, embeddings, seed=0, device="cpu", triplets=strategy)
        rows.append(row(f"privileged, {strategy}", res.prototypes, embeddings, seconds,
                        f"{res.settings['triplets_per_step']:,} triplets per step"))
    print_table(f"Triplet sets beyond 200 classes: K = {k}, d = {d}", rows)


def part_assign(quick: bool):
    k, d = (300, 32) if quick else (1000, 64)
    embeddings = planted_clusters(k, 10)
    rows, _ = tammes_with_assign(d, k, embeddings)
    print_table(f"assign on a tammes code: K = {k}, d = {d}, {k // 10} planted clusters of 10", rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller cases")
    parser.add_argument("--part", choices=("tradeoff", "strategies", "assign"), action="append",
                        help="run only this part (repeatable)")
    parser.add_argument("--plot", default=None, help="write the trade-off plot (PNG) here")
    args = parser.parse_args()
    parts = args.part or ["tradeoff", "strategies", "assign"]
    if "tradeoff" in parts:
        part_tradeoff(args.quick, args.plot, 100, 16, 5)
        part_tradeoff(args.quick, None, 48, 5, 12)
    if "strategies" in parts:
        part_strategies(args.quick)
    if "assign" in parts:
        part_assign(args.quick)


if __name__ == "__main__":
    main()
