"""Run ``spherecodes.solvers.tammes`` over the best-known spherical-code tables.

    python benchmarks/bench_records.py --dims 3 --n 5..130
    python benchmarks/bench_records.py --dims 3,4 --n 5..32 --effort high --time-limit 30 --json out.json -v
    python benchmarks/bench_records.py --table records.csv --dims 5,6 --effort high

For every (dimension, N) in ``tests/data/records/records.csv``, or in the table
given with ``--table`` (either layout: see ``_records.load_rows``), the best row
per size within ``--dims`` and ``--n``,
one run of ``tammes(d, N, seed=--seed, device="cpu")`` (plus ``effort=`` when
``--effort`` is not ``default``, and ``time_limit=`` when given).  Prints, per
dimension, how many records are reached (max-cos <= record + tolerance: 1e-9
in R^3, where the tables give about 12 digits, 1e-6 above, or ``--tol``), the worst
gap, the total and median wall time per size and the median and largest CPU
time of the process per size (on a shared machine the wall time follows the
load; the CPU time much less), with torch's thread count and the load average.
A code that BEATS a record (max-cos < record - tolerance) is reported loudly and its
prototypes are saved as ``beat_d{d}_n{N}.npy`` to ``--beats-dir`` (default: a new
temporary folder, so a run never writes into the working tree) so the claim
can be checked independently (re-normalise the rows, take the largest
off-diagonal Gram entry in float64).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from _records import best_records, max_cos
from spherecodes.solvers import tammes

#: Tolerance of a reached record: R^3 tables give about 12 digits, the others fewer.
TOLERANCE = {3: 1e-9}
OTHER_TOLERANCE = 1e-6


def parse_sizes(text: str) -> set[int]:
    """'5..130', '5,7,9', '5..20,24', '5..130:5' -> set of ints (inclusive ranges, optional step)."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if ".." in part:
            span, _, every = part.partition(":")
            lo, hi = span.split("..")
            out.update(range(int(lo), int(hi) + 1, int(every or 1)))
        elif part:
            out.add(int(part))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="3", help="dimensions, e.g. 3 or 3,4 or 4..8")
    parser.add_argument("--n", default="5..130", help="sizes N, e.g. 5..130 or 5,12,24 or 5..130:5 (every 5th)")
    parser.add_argument("--table", type=Path, default=None, help="records CSV (default: tests/data/records)")
    parser.add_argument("--tol", type=float, default=None, help="tolerance of a reached record (default by d)")
    parser.add_argument("--effort", choices=["low", "default", "high"], default="default")
    parser.add_argument("--time-limit", type=float, default=None, help="tammes time_limit per size (s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--json", type=Path, default=None, help="write per-size results here")
    parser.add_argument("--beats-dir", type=Path, default=None,
                        help="where prototypes that beat a record go (default: a new temporary folder)")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per size")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    dims, sizes = parse_sizes(args.dims), parse_sizes(args.n)
    records = best_records(dims) if args.table is None else best_records(dims, path=args.table)
    table = {k: r for k, r in records.items() if k[1] in sizes}
    if not table:
        print(f"no records for dims {sorted(dims)} and N in {args.n}", file=sys.stderr)
        return 2
    options = {}
    if args.effort != "default":
        options["effort"] = args.effort
    if args.time_limit is not None:
        options["time_limit"] = args.time_limit

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}, device cpu; effort {args.effort}, "
          f"time limit {args.time_limit}, seed {args.seed}; {len(table)} sizes\n", flush=True)

    results, beats = [], []
    for (d, n), record in table.items():
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            result = tammes(d, n, seed=args.seed, device="cpu", **options)
        except (TypeError, ValueError) as error:
            if "effort" in options and "effort" in str(error):
                print(f"tammes refused effort={args.effort!r}: {error}\n"
                      "(this version of spherecodes has no 'effort' option; run with --effort default)",
                      file=sys.stderr)
                return 2
            raise
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        value = max_cos(result.prototypes)  # float64, independent of the solver's own figure
        gap = value - record.max_cos
        tol = args.tol if args.tol is not None else TOLERANCE.get(d, OTHER_TOLERANCE)
        row = dict(dimension=d, n=n, max_cos=value, solver_max_cos=float(result.max_cos), record=record.max_cos,
                   record_source=record.source, gap=gap, reached=gap <= tol, beats=gap < -tol, seconds=wall, cpu_seconds=cpu,
                   stop=getattr(result, "stop_reason", None))
        results.append(row)
        if row["beats"]:
            if args.beats_dir is None:
                args.beats_dir = Path(tempfile.mkdtemp(prefix="spherecodes-beats-"))
            path = args.beats_dir / f"beat_d{d}_n{n}.npy"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, np.asarray(result.prototypes, dtype=np.float64))
            beats.append((d, n, value, record, path))
            print(f"!!! RECORD BEATEN: d={d} N={n} max-cos {value:.15f} < record {record.max_cos:.15f} "
                  f"({record.source}) by {-gap:.3e}; prototypes saved to {path} !!!", flush=True)
        if args.verbose:
            mark = "BEATS" if row["beats"] else ("ok" if row["reached"] else "miss")
            print(f"d={d:2d} N={n:4d}  max-cos {value:.12f}  record {record.max_cos:.12f} ({record.source:>26s})  "
                  f"gap {gap:+.2e}  {wall:7.2f} s (CPU {cpu:6.2f} s)  {row['stop']}  {mark}", flush=True)

    print("\n| d | sizes | records reached (within tolerance) | beaten | worst gap | worst at N | total s | median s | median CPU s | max CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in sorted({r["dimension"] for r in results}):
        rows = [r for r in results if r["dimension"] == d]
        worst = max(rows, key=lambda r: r["gap"])
        times = [r["seconds"] for r in rows]
        cpu_times = [r["cpu_seconds"] for r in rows]
        print(f"| {d} | {len(rows)} | {sum(r['reached'] for r in rows)} / {len(rows)} | "
              f"{sum(r['beats'] for r in rows)} | {worst['gap']:+.3e} | {worst['n']} | {sum(times):.1f} | "
              f"{statistics.median(times):.2f} | {statistics.median(cpu_times):.2f} | {max(cpu_times):.2f} |")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    missed = [f"{r['n']}" for r in results if not r["reached"]]
    if missed:
        print(f"\nmissed (N): {', '.join(missed)}")
    if beats:
        print(f"\n!!! {len(beats)} record(s) beaten -- check the saved prototypes: "
              + ", ".join(str(b[4]) for b in beats))
    if args.json:
        args.json.write_text(json.dumps(dict(torch_threads=torch.get_num_threads(), effort=args.effort,
                                             time_limit=args.time_limit, seed=args.seed, results=results), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
