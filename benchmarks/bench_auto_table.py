"""Measure what each candidate of ``auto`` reaches over a grid of (d, K): the data behind its decision.

Run ``python benchmarks/bench_auto_table.py --grid target`` (the 62 sizes of
the best-of targets: d ∈ {8, …, 512}, K ∈ {50, …, 2000}, K > 2d) or
``--grid wide`` (d from 3 to 2048, K from 10 to 10⁵, as far as ``--max-seconds``
of estimated optimiser time per size allows), ``--jobs N --threads T`` to run
N sizes at once with T torch threads each (a 16-core machine: 8 × 2, which
is the 2-core machine of this project eight times over).

For each size it records, from the library functions that ``auto`` calls:

* the best structured code (:func:`spherecodes.structured.best_structured_code`)
  and its exact max-cos;
* the other closed forms that apply, and their max-cos;
* ``tammes`` from random starts with seed 0 and the default settings (what
  ``--method tammes`` returns), its max-cos and wall time, and the time
  :func:`spherecodes.solvers.tammes_estimate` predicted for it;
* ``tammes`` warm-started from the structured code (lifted off its subspace
  when embedded, :func:`spherecodes.best_of.lift`), its max-cos and wall time.

Rows are appended to ``--out`` (CSV) as each size finishes, so a run cut short
keeps what it measured; sizes already in the file are skipped.  ``--stale``
re-measures the rows whose structured code is no longer the best one for
their size (after a new family is added): they are removed from the file and
measured again.
``spherecodes/data/optimiser_table.csv`` is this file, as measured for the
release; :mod:`spherecodes.best_of` predicts from it.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import os
import time
from pathlib import Path

COLUMNS = ("d", "k", "structured", "structured_max_cos", "closed_forms", "closed_form_max_cos",
           "tammes_max_cos", "tammes_seconds", "tammes_estimate_seconds", "warm_max_cos", "warm_seconds",
           "threads", "load")

TARGET_D = (8, 12, 16, 24, 32, 48, 63, 64, 96, 100, 127, 128, 200, 256, 384, 512)
TARGET_K = (50, 100, 200, 500, 1000, 2000)
WIDE_D = (3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 63, 64, 96, 100, 127, 128, 200, 256, 384, 512, 768,
          1024, 2048)
WIDE_K = (10, 20, 30, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)


def grid(which: str) -> list[tuple[int, int]]:
    """The sizes of a grid, where ``auto`` has a choice to make (K > 2d and no optimal closed form)."""
    from spherecodes.constructions import optimal_closed_form

    ds, ks = (TARGET_D, TARGET_K) if which == "target" else (WIDE_D, WIDE_K)
    return [(d, k) for d in ds for k in ks if k > 2 * d and optimal_closed_form(d, k) is None]


def measure(d: int, k: int, threads: int) -> dict:
    """One row of the table (runs in a worker process)."""
    import torch

    torch.set_num_threads(threads)
    from spherecodes.best_of import lift
    from spherecodes.constructions import applicable_closed_forms, construct
    from spherecodes.solvers import tammes, tammes_estimate
    from spherecodes.stats import max_cos
    from spherecodes.structured import best_structured_code

    row = {"d": d, "k": k, "threads": threads}
    code = best_structured_code(d, k)
    row["structured"] = "" if code is None else code.name
    row["structured_max_cos"] = "" if code is None else str(code.max_cos_for(k))
    forms = applicable_closed_forms(d, k)
    row["closed_forms"] = " ".join(forms)
    row["closed_form_max_cos"] = (
        "" if not forms else repr(min(max_cos(construct(m, d, k)) for m in forms)))
    row["tammes_estimate_seconds"] = f"{tammes_estimate(d, k, device='cpu').seconds:.3f}"
    start = time.perf_counter()
    result = tammes(d, k, seed=0, device="cpu")
    row["tammes_seconds"] = f"{time.perf_counter() - start:.3f}"
    row["tammes_max_cos"] = repr(float(result.max_cos))
    row["warm_max_cos"] = row["warm_seconds"] = ""
    if code is not None:
        init = code.points(k)
        if code.native_d < d:
            init = lift(init, code.native_d, 0)
        start = time.perf_counter()
        warm = tammes(d, k, seed=0, device="cpu", init=init)
        row["warm_seconds"] = f"{time.perf_counter() - start:.3f}"
        row["warm_max_cos"] = repr(float(warm.max_cos))
    row["load"] = f"{os.getloadavg()[0]:.1f}"
    return row


def drop_stale(rows: list[dict], path: Path) -> tuple[list[tuple[int, int]], list[dict]]:
    """Remove from the table at ``path`` the rows measured with another structured code than today's best.

    Returns the sizes removed and the rows kept.
    """
    from spherecodes.structured import best_structured_code

    def current(row):
        code = best_structured_code(int(row["d"]), int(row["k"]))
        return "" if code is None else code.name

    kept = [r for r in rows if r["structured"] == current(r)]
    stale = [(int(r["d"]), int(r["k"])) for r in rows if r["structured"] != current(r)]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(kept)
    print(f"{len(stale)} stale rows removed: {stale}")
    return stale, kept


def _call(args):
    func, size, threads = args
    return func(*size, threads)


def run_sizes(func, sizes, jobs: int, threads: int):
    """``func(d, k, threads)`` for every size, ``jobs`` processes at once; yields the results as they finish."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(jobs, maxtasksperchild=1) as pool:
        yield from pool.imap_unordered(_call, [(func, size, threads) for size in sizes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", choices=("target", "wide"), default="target")
    parser.add_argument("--only", help="sizes DxK,DxK (overrides --grid)")
    parser.add_argument("--jobs", type=int, default=1, help="sizes measured at once (processes)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of each process")
    parser.add_argument("--max-seconds", type=float, default=600.0,
                        help="skip sizes whose estimated tammes time exceeds this")
    parser.add_argument("--out", type=Path, default=Path("optimiser_table.csv"))
    parser.add_argument("--stale", action="store_true",
                        help="re-measure the rows of --out whose structured code has changed")
    args = parser.parse_args()
    if args.only:
        sizes = [tuple(int(v) for v in part.split("x")) for part in args.only.split(",")]
    else:
        sizes = grid(args.grid)
    done = set()
    if args.out.exists():
        with args.out.open() as f:
            rows = list(csv.DictReader(f))
        if args.stale:
            sizes, rows = drop_stale(rows, args.out)
        done = {(int(r["d"]), int(r["k"])) for r in rows}
    from spherecodes.solvers import tammes_estimate

    todo = []
    for d, k in sizes:
        if (d, k) in done:
            continue
        seconds = tammes_estimate(d, k, device="cpu").seconds
        if seconds <= args.max_seconds:
            todo.append((seconds, d, k))
        else:
            print(f"skip ({d}, {k}): estimated {seconds:.0f} s")
    # Shortest first: a run cut short by a time limit keeps as many sizes as it could measure.
    todo.sort()
    print(f"{len(todo)} sizes, estimated {sum(t for t, *_ in todo):.0f} s of tammes (random starts) in all, "
          f"{args.jobs} at once with {args.threads} threads each", flush=True)
    new = not args.out.exists()
    with args.out.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        for row in run_sizes(measure, [(d, k) for _, d, k in todo], args.jobs, args.threads):
            writer.writerow(row)
            f.flush()
            print(f"({row['d']}, {row['k']}): structured {row['structured_max_cos'] or '-'}, "
                  f"tammes {float(row['tammes_max_cos']):.6f} in {row['tammes_seconds']} s "
                  f"(estimated {row['tammes_estimate_seconds']}), warm {row['warm_max_cos'] or '-'}",
                  flush=True)


if __name__ == "__main__":
    main()
