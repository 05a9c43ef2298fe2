"""The default ``spherecodes generate --d D --k K`` at the classifier heads people train, as whole processes.

For every (d, K) of the grid: the run's wall time (the process, start-up and writing included), whether the
stored code is certified (ρ's interval within the tolerance), its certified ρ and max-cos, the code ``auto``
chose, the all-zero columns of the stored matrix and its rank as the report gives it (checked against
``numpy.linalg.matrix_rank`` where that takes seconds), then ``spherecodes report`` of the bank (which re-verifies
the certificate) timed the same way, with the way it re-verified.  A run still going after ``--timeout`` seconds
is stopped and counted as such; a run refused before any work shows its one-line reason.

    python benchmarks/bench_ml_heads.py                      # the whole grid (7 x 5), ~20 min on 2 cores
    python benchmarks/bench_ml_heads.py --d 512 --k 10000    # one size
    python benchmarks/bench_ml_heads.py --quick              # K <= 1000 only

Prints a Markdown table; the machine's load average is printed first and last (timings under load are upper
bounds).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GRID_D = (128, 256, 384, 512, 768, 1024, 2048)
GRID_K = (100, 1000, 10_000, 21_841, 100_000)
#: Largest K·d·min(K, d) for which numpy's rank of the whole stored matrix is computed here as a second method.
NUMPY_RANK_WORK = 3e10


def run(command: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess | None]:
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - started, None
    return time.perf_counter() - started, done


def one_size(d: int, k: int, folder: Path, timeout: float) -> dict:
    bank = folder / f"d{d}-k{k}.h5"
    row = {"d": d, "k": k}
    seconds, done = run([sys.executable, "-m", "spherecodes", "generate", "--d", str(d), "--k", str(k),
                         "--out", str(bank), "--json", "--quiet"], timeout)
    row["generate_s"] = seconds
    if done is None:
        row["outcome"] = f"stopped after {timeout:.0f} s"
        return row
    if done.returncode != 0:
        row["outcome"] = "refused: " + done.stderr.strip().splitlines()[-1][:160]
        return row
    report = json.loads(done.stdout)
    rho = report["rho"]
    row.update(outcome="certified" if rho is not None and rho["certified"] else "NOT certified",
               rho=None if rho is None else rho["lower"], max_cos=report["max_cos"],
               chose=(report.get("auto") or {}).get("winner") or report["method"],
               zero_columns=report["dimensions"]["zero_columns"], rank=report["dimensions"]["rank"],
               rank_exact=report["dimensions"]["exact"])
    if k * d * min(k, d) <= NUMPY_RANK_WORK:
        import h5py

        with h5py.File(bank, "r") as f:
            rows = f[f"codes/{report['name']}/prototypes"][()]
        row["numpy_rank"] = int(np.linalg.matrix_rank(rows))
        row["numpy_zero_columns"] = int((~rows.any(axis=0)).sum())
    seconds, done = run([sys.executable, "-m", "spherecodes", "report", str(bank), "--json"], timeout)
    row["report_s"] = seconds
    if done is not None and done.returncode == 0:
        verified = json.loads(done.stdout).get("verified") or {}
        row["reverified"] = verified.get("certificate")
        row["reverified_how"] = ("carried through the rotation" if verified.get("rotated")
                                 else "by the orbit" if verified.get("certificate_by_orbit") else "every class")
    os.unlink(bank)
    return row


def table(rows: list[dict]) -> str:
    lines = ["| d | K | generate | outcome | certified ρ | max-cos | auto chose | zero columns | rank (numpy) | "
             "report | re-verified |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rank = "" if "rank" not in r else (f"{r['rank']}" if r["rank_exact"] else f">= {r['rank']}")
        if "numpy_rank" in r:
            rank += f" ({r['numpy_rank']})"
        zero = "" if "zero_columns" not in r else str(r["zero_columns"])
        lines.append(
            f"| {r['d']} | {r['k']} | {r['generate_s']:.1f} s | {r['outcome']} | "
            f"{'' if r.get('rho') is None else format(r['rho'], '.10g')} | "
            f"{'' if r.get('max_cos') is None else format(r['max_cos'], '.6g')} | {r.get('chose', '')} | {zero} | "
            f"{rank} | {'' if 'report_s' not in r else format(r['report_s'], '.1f') + ' s'} | "
            f"{'' if 'reverified' not in r else ('yes, ' if r['reverified'] else 'NO, ') + r['reverified_how']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="*", default=list(GRID_D))
    parser.add_argument("--k", type=int, nargs="*", default=list(GRID_K))
    parser.add_argument("--quick", action="store_true", help="K <= 1000 only")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a run is stopped")
    args = parser.parse_args()
    ks = [k for k in args.k if k <= 1000] if args.quick else args.k
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for d in args.d:
            for k in ks:
                rows.append(one_size(d, k, Path(folder), args.timeout))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(table(rows))
    print(f"\nload average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
