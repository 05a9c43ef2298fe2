"""Whole-process timings of the command line: closed forms, certificates, time limits, threads and memory.

Every row runs ``spherecodes`` as a fresh process (so import and start-up
costs are included), takes the median wall time over ``--repeats`` runs,
and records the process's peak resident memory (GNU ``time``) next to the
memory estimate the command printed on stderr.  The thread count the code
chose (``spherecodes.devices.usable_cores``) and the machine's load average
are printed with the table: on a shared machine the load says how far the
figures are from an idle one.

Rows (targets on a 2-core CPU in brackets):

* ``generate --d 11 --k 12`` [<= 1.5 s];
* ``generate`` of the ETFs (2048, 1000), (1023, 1024) and the cross-polytope
  (512, 1000), certified [<= 5 s each];
* ``certify`` of the same codes saved as ``.npy`` in a random rotation, so that
  no closed form is recognised [<= 30 s each, interval width <= 1e-9];
* ``--steps 5000 --time-limit 3`` at (64, 1000) against the default run
  [max-cos within 0.003];
* (64, 10^5) with ``--time-limit 120`` [max-cos <= 0.45; random codes: 0.68],
  and the certificate of that code [<= 60 s];
* the README main job (``generate --d 64 --k 1000``) with another CPU-bound
  process running, against the idle machine [ratio <= 1.5].

Run ``python benchmarks/bench_speed.py`` (all rows, about 15 minutes on 2
cores) or ``--quick`` (the closed forms and the three certificates).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from spherecodes.constructions import construct
from spherecodes.devices import usable_cores
from spherecodes.memory import parse_size

CLI = [sys.executable, "-m", "spherecodes"]


def run_cli(args: list[str], *, timeout: float | None = None) -> dict:
    """Run one ``spherecodes`` process; wall seconds, peak RSS bytes, exit code, stdout, stderr.

    The peak comes from GNU time (``%M``) run between this process and the
    command: a child forked straight from this (large) process would report
    this process's resident size as its own peak.
    """
    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        started = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *CLI, *args],
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        peak = float(peak_file.read_text().split()[-1]) * 1024.0
    stderr = proc.stderr
    if timeout is not None and wall > timeout:
        stderr += f"\n(ran {wall:.0f} s, past the {timeout:.0f} s budget)"
    return {"wall": wall, "peak": peak, "rc": proc.returncode, "stdout": proc.stdout, "stderr": stderr}


def estimate_bytes(stderr: str) -> float | None:
    """The largest memory estimate a command printed (``estimate: ... ~1.2 GiB of ...``)."""
    found = [parse_size(m.replace(" ", "")) for m in re.findall(r"~([\d.]+ [KMGTP]?i?B) of", stderr)]
    return max(found) if found else None


def timed(label: str, args: list[str], repeats: int, target: str) -> dict:
    runs = [run_cli(args) for _ in range(repeats)]
    for r in runs:
        if r["rc"] != 0:
            raise SystemExit(f"{label}: exit {r['rc']}\n{r['stderr'][-2000:]}")
    row = {"what": label, "seconds": statistics.median(r["wall"] for r in runs), "runs": len(runs),
           "peak_bytes": max(r["peak"] for r in runs), "estimate_bytes": estimate_bytes(runs[0]["stderr"]),
           "target": target, "stdout": runs[-1]["stdout"]}
    print(f"  {label}: {row['seconds']:.2f} s, peak {row['peak_bytes'] / 2**20:.0f} MiB", flush=True)
    return row


def certified_width(report: str) -> float:
    """The interval width on the ``rho`` line of a text report (``rho  [a, b]  (certified, width w <= tol t)``)."""
    found = re.search(r"^\s*rho\s.*width ([^ ]+) ", report, flags=re.M)
    if found is None:
        raise SystemExit(f"no certified rho in the report:\n{report}")
    return float(found.group(1))


def max_cos(report: str) -> float:
    """The max-cos of a text report (``max-cos  0.1455...  (min angle ...)``)."""
    found = re.search(r"^\s*max-cos\s+([^ ]+)", report, flags=re.M)
    if found is None:
        raise SystemExit(f"no max-cos in the report:\n{report}")
    return float(found.group(1))


def closed_form_rows(work: Path, repeats: int) -> list[dict]:
    rows = [timed("generate --d 11 --k 12", ["generate", "--d", "11", "--k", "12", "--out", str(work / "a.h5"),
                                             "--overwrite"], repeats, "<= 1.5 s")]
    for d, k in ((2048, 1000), (1023, 1024), (512, 1000)):
        rows.append(timed(f"generate --d {d} --k {k}", ["generate", "--d", str(d), "--k", str(k), "--out",
                                                         str(work / "b.h5"), "--overwrite"], repeats, "<= 5 s"))
    return rows


def certify_rows(work: Path, repeats: int) -> list[dict]:
    rows = []
    for method, d, k in (("etf", 2048, 1000), ("etf", 1023, 1024), ("cross-polytope", 512, 1000)):
        path = work / f"{method}-{d}-{k}.npy"
        np.save(path, construct(method, d, k, rotation="random", seed=7))
        row = timed(f"certify {method} ({d}, {k}) rotated .npy", ["certify", str(path)], repeats,
                    "<= 30 s, width <= 1e-9")
        row["width"] = certified_width(row["stdout"])
        rows.append(row)
    return rows


def time_limit_rows(work: Path) -> list[dict]:
    bank = str(work / "c.h5")
    default = timed("generate --d 64 --k 1000 (default)", ["generate", "--d", "64", "--k", "1000", "--out", bank,
                                                           "--overwrite", "--no-certify"], 1, "reference")
    limited = timed("generate --d 64 --k 1000 --steps 5000 --time-limit 3",
                    ["generate", "--d", "64", "--k", "1000", "--steps", "5000", "--time-limit", "3", "--out", bank,
                     "--overwrite", "--no-certify"], 1, "max-cos within 0.003 of the default run")
    for row in (default, limited):
        row["max_cos"] = max_cos(row["stdout"])
    limited["gap"] = limited["max_cos"] - default["max_cos"]
    return [default, limited]


def large_k_rows(work: Path) -> list[dict]:
    bank = str(work / "large.h5")
    # --method tammes: the default (auto) returns a structured code at this size;
    # these rows measure the optimiser and the certificate of its (unstructured) code.
    run = timed("generate --d 64 --k 100000 --method tammes --time-limit 120",
                ["generate", "--d", "64", "--k", "100000", "--method", "tammes",
                 "--time-limit", "120", "--out", bank, "--overwrite", "--no-certify"], 1,
                "max-cos <= 0.45 (random: 0.68)")
    run["max_cos"] = max_cos(run["stdout"])
    cert = timed("certify (64, 100000) tammes code", ["certify", bank], 1, "<= 60 s")
    cert["width"] = certified_width(cert["stdout"])
    return [run, cert]


def contention_rows(work: Path) -> list[dict]:
    """The README main job alone and next to another CPU-bound (single-threaded) process."""
    args = ["generate", "--d", "64", "--k", "1000", "--out", str(work / "m.h5"), "--overwrite"]
    idle = timed("README main job, alone", args, 1, "reference")
    burner = subprocess.Popen([sys.executable, "-c", _BURN])
    try:
        time.sleep(1.0)
        busy = timed("README main job, next to a CPU-bound process", args, 1, "<= 1.5 x alone")
    finally:
        burner.kill()
        burner.wait()
    busy["ratio"] = busy["seconds"] / idle["seconds"]
    return [idle, busy]


# Another CPU-bound process: one pure-Python loop (one core; no BLAS threads), until it is killed.
_BURN = "while True: pass"


def show(rows: list[dict]) -> None:
    print(f"| what | seconds (median of runs) | peak RSS | estimate | result | target |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        result = []
        for key in ("width", "max_cos", "gap", "ratio"):
            if key in r:
                result.append(f"{key} {r[key]:.3g}")
        est = "—" if r["estimate_bytes"] is None else f"{r['estimate_bytes'] / 2**20:.0f} MiB"
        print(f"| {r['what']} | {r['seconds']:.2f} ({r['runs']}) | {r['peak_bytes'] / 2**20:.0f} MiB | {est} | "
              f"{', '.join(result) or '—'} | {r['target']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="closed forms and certificates only")
    parser.add_argument("--no-large", action="store_true", help="leave out the (64, 10^5) rows (~25 min on 2 cores)")
    parser.add_argument("--large-only", action="store_true", help="only the (64, 10^5) rows")
    parser.add_argument("--repeats", type=int, default=3, help="runs per fast row (median)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    args = parser.parse_args()
    print(f"threads chosen: {usable_cores()} (usable cores); load average before: {os.getloadavg()}")
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        parts = [lambda: closed_form_rows(work, args.repeats), lambda: certify_rows(work, args.repeats)]
        if not args.quick:
            parts += [lambda: time_limit_rows(work), lambda: contention_rows(work)]
        if args.large_only:
            parts = []
        if (not args.quick and not args.no_large) or args.large_only:
            parts.append(lambda: large_k_rows(work))
        for part in parts:
            rows += part()
    show(rows)
    print(f"load average after: {os.getloadavg()}")
    if args.json is not None:
        for r in rows:
            r.pop("stdout", None)
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
