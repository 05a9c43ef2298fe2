"""Check the default ``auto`` against every candidate alone over the best-of grid: never worse, never much slower.

Run ``python benchmarks/bench_auto.py`` (the 62 sizes of the targets:
d ∈ {8, …, 512}, K ∈ {50, …, 2000}, K > 2d; ``--only 16x100,63x1000`` picks
sizes; ``--jobs N --threads T`` runs N sizes at once with T torch threads
each).  For each size, in a fresh process, it runs ``generate(d, k)``
(``auto``, seed 0), ``generate(d, k, "tammes")`` (what ``--method tammes``
returns), the best structured code alone, and reads the bundled catalog's
code of that size (what ``spherecodes fetch --d D --k K`` returns), and
checks:

* auto's max-cos ≤ min(tammes, structured, bundled) + 1e-9;
* auto's wall time ≤ 1.5 × its winning candidate's own time + 2 s;
* at a bundled size, auto and fetch give the same max-cos.

Prints a Markdown table (the one in ``docs/structured.md``) and the counts,
with the machine's load average.  ``--bundled`` checks every bundled size
instead of the grid.
"""

from __future__ import annotations

import argparse
import os
import time

from bench_auto_table import grid, run_sizes

TOL = 1e-9


def compare(d: int, k: int, threads: int) -> dict:
    """One row: auto against each candidate alone (runs in a worker process)."""
    import torch

    torch.set_num_threads(threads)
    from spherecodes import RunContext, generate
    from spherecodes.catalog import fetch
    from spherecodes.best_of import bundled_entry
    from spherecodes.structured import best_structured_code

    start = time.perf_counter()
    auto = generate(d, k, context=RunContext(device="cpu"))
    auto_seconds = time.perf_counter() - start
    winner = auto.settings.get("auto", {}).get("winner", auto.method)
    winner_seconds = next((c["seconds"] for c in auto.settings.get("auto", {}).get("candidates", [])
                           if c["label"] == winner), auto_seconds)
    start = time.perf_counter()
    alone = generate(d, k, "tammes", context=RunContext(device="cpu"))
    tammes_seconds = time.perf_counter() - start
    code = best_structured_code(d, k)
    structured = float(code.max_cos_for(k)) if code is not None else None
    entry = bundled_entry(d, k)
    fetched = fetch(d=d, k=k, url="").stats.max_cos if entry is not None or code is not None else None
    best = min(v for v in (alone.stats.max_cos, structured, entry and entry.max_cos) if v is not None)
    return {"d": d, "k": k, "winner": winner, "auto": auto.stats.max_cos, "auto_seconds": auto_seconds,
            "winner_seconds": winner_seconds, "tammes": alone.stats.max_cos, "tammes_seconds": tammes_seconds,
            "structured": structured, "bundled": None if entry is None else entry.max_cos, "fetch": fetched,
            "never_worse": auto.stats.max_cos <= best + TOL,
            "fast_enough": auto_seconds <= 1.5 * winner_seconds + 2.0,
            "agrees_with_fetch": entry is None or abs(auto.stats.max_cos - fetched) <= TOL}


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.6f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="sizes DxK,DxK")
    parser.add_argument("--bundled", action="store_true", help="every size of the bundled catalog")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.only:
        sizes = [tuple(int(v) for v in part.split("x")) for part in args.only.split(",")]
    elif args.bundled:
        from spherecodes.catalog import bundled_catalog

        sizes = sorted({(e.d, e.k) for e in bundled_catalog().entries})
    else:
        sizes = grid("target")
    rows = []
    for row in run_sizes(compare, sizes, args.jobs, args.threads):
        rows.append(row)
        print(f"({row['d']}, {row['k']}) done: auto {row['auto']:.6f}, tammes {row['tammes']:.6f}", flush=True)
    rows.sort(key=lambda r: (r["d"], r["k"]))
    print(f"{len(rows)} sizes, {args.jobs} at once with {args.threads} torch threads each; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| (d, K) | auto: winner | auto | time | winner alone | `--method tammes` | time | structured | "
          "bundled | checks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        checks = " ".join(name for name in ("never_worse", "fast_enough", "agrees_with_fetch") if not r[name])
        print(f"| ({r['d']}, {r['k']}) | {r['winner']} | {_fmt(r['auto'])} | {r['auto_seconds']:.1f} s | "
              f"{r['winner_seconds']:.1f} s | {_fmt(r['tammes'])} | {r['tammes_seconds']:.1f} s | "
              f"{_fmt(r['structured'])} | {_fmt(r['bundled'])} | {'FAILED: ' + checks if checks else 'met'} |")
    for name in ("never_worse", "fast_enough", "agrees_with_fetch"):
        print(f"{name}: {sum(r[name] for r in rows)} of {len(rows)}")


if __name__ == "__main__":
    main()
