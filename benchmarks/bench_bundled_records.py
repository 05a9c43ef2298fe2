"""Time ``spherecodes generate --d D --k N`` at the sizes of the published tables, whole process.

    python benchmarks/bench_bundled_records.py                 # R^3, N = 5 ... 130, and Cohn's rows
    python benchmarks/bench_bundled_records.py --sizes 3:80,3:110 --runs 3

Each size is one fresh process writing a bank to a temporary folder (the
default command: method ``auto``, catalog first, certified).  Prints, per
size, the median wall time, what ``auto`` chose, and the gap of the code's
max-cos (from the written bank's prototypes, in float64) to the published
value; then the median and largest time over all sizes, how many sizes
reach their published value (1e-9 in R^3, 1e-6 above) and how many took
more than ``--target`` seconds, with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from spherecodes.bank import read_code
from spherecodes.records import published_record

COHN_ROWS = [(5, 41), (5, 42), (5, 43), (5, 44), (6, 86), (6, 98)]


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """'3:80,3:110' -> [(3, 80), (3, 110)]."""
    return [tuple(int(x) for x in part.split(":")) for part in text.split(",") if part.strip()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="d:N list (default: R^3 N = 5..130 and Cohn's rows)")
    parser.add_argument("--runs", type=int, default=1, help="processes per size (the median is reported)")
    parser.add_argument("--target", type=float, default=2.0, help="seconds a size should take at most")
    args = parser.parse_args(argv)
    sizes = parse_sizes(args.sizes) if args.sizes else [(3, k) for k in range(5, 131)] + COHN_ROWS
    spherecodes = Path(sys.executable).with_name("spherecodes")
    load_before = os.getloadavg()
    times, reached, slow = [], 0, []
    with tempfile.TemporaryDirectory() as folder:
        for d, k in sizes:
            out = Path(folder) / f"d{d}-k{k}.h5"
            runs, chose = [], "?"
            for _ in range(args.runs):
                started = time.perf_counter()
                done = subprocess.run([str(spherecodes), "generate", "--d", str(d), "--k", str(k), "--out", str(out),
                                       "--overwrite"], capture_output=True, text=True)
                runs.append(time.perf_counter() - started)
                if done.returncode != 0:
                    print(f"({d}, {k}) failed: {done.stderr.strip()[-300:]}")
                    return 1
                found = re.search(r"^  auto chose +(.+)$", done.stdout, re.MULTILINE)
                chose = found.group(1) if found else done.stdout.splitlines()[0][:60]
            prototypes = read_code(out).prototypes
            gram = prototypes @ prototypes.T
            np.fill_diagonal(gram, -2.0)
            gap = float(gram.max()) - published_record(d, k).max_cos
            ok = gap <= (1e-9 if d == 3 else 1e-6)
            reached += ok
            seconds = statistics.median(runs)
            times.append(seconds)
            if seconds > args.target:
                slow.append((d, k, seconds))
            print(f"({d}, {k:3d})  {seconds:5.2f} s  gap {gap:+.2e} {'reached' if ok else 'short  '}  {chose}", flush=True)
    print(f"{len(sizes)} sizes: median {statistics.median(times):.2f} s, largest {max(times):.2f} s; "
          f"{reached} reach the published value; {len(slow)} over {args.target:g} s "
          f"{[(d, k) for d, k, _ in slow]}")
    print(f"load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
