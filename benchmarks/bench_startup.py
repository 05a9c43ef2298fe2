"""Time the everyday commands as whole processes, against ``python -c "import numpy, h5py"`` in the same run.

Run ``python benchmarks/bench_startup.py`` (``--runs N`` timed runs per
command, default 7; ``--quick``: 3).  Each command runs as a fresh process, as
a user runs it, in a scratch folder with its own cache
(``$SPHERECODES_CACHE``), once untimed first (so that Python's bytecode cache
is written, as an installed package has it) and then ``--runs`` times,
the commands taking turns so that a change of load meets all of them alike.
It prints a Markdown table: the median wall time of each, its ratio to the
baseline (a process that only starts Python, NumPy and h5py, the floor for
one that reads a bank), the target of the issue, and the load average
before and after.  ``--before DIR`` also times the spherecodes package in
DIR (an earlier version, e.g. ``git archive COMMIT | tar -x -C DIR``) in the
same rounds, taking turns with this one, and adds its column.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = "python -c 'import numpy, h5py'"

#: (label, arguments after ``python``, target in seconds or None, whether it is slow: fewer runs).
COMMANDS = (
    (BASELINE, ["-c", "import numpy, h5py"], None, False),
    ("python -c 'import spherecodes'", ["-c", "import spherecodes"], 0.2, False),
    ("spherecodes --help", ["-m", "spherecodes", "--help"], 0.3, False),
    ("spherecodes bounds --d 512 --k 100000", ["-m", "spherecodes", "bounds", "--d", "512", "--k", "100000"], 0.6,
     False),
    ("spherecodes fetch --d 16 --k 100 --out f.h5 (bundled)",
     ["-m", "spherecodes", "fetch", "--d", "16", "--k", "100", "--out", "f{run}.h5"], 0.6, False),
    ("spherecodes report f.h5", ["-m", "spherecodes", "report", "f.h5"], 0.6, False),
    ("spherecodes ls f.h5", ["-m", "spherecodes", "ls", "f.h5"], 0.6, False),
    ("spherecodes export f.h5 --out p.npy", ["-m", "spherecodes", "export", "f.h5", "--out", "p{run}.npy"], None,
     False),
    ("spherecodes generate --d 64 --k 1000 (the main job)",
     ["-m", "spherecodes", "generate", "--d", "64", "--k", "1000", "--out", "g{run}.h5"], 1.0, False),
    ("spherecodes generate --d 16 --k 100 --method tammes",
     ["-m", "spherecodes", "generate", "--d", "16", "--k", "100", "--method", "tammes", "--out", "t{run}.h5"], 5.0,
     True),
)


def timed(args: list[str], folder: Path, env: dict, run: int) -> float:
    """Wall seconds of one process (its output discarded); a failure stops the benchmark."""
    argv = [sys.executable] + [a.replace("{run}", str(run)) for a in args]
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="Timed runs of each command (slow ones: half).")
    parser.add_argument("--quick", action="store_true", help="Three runs each.")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="Also time the spherecodes package in DIR, in the same rounds.")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    versions = {"now": None} if args.before is None else {"before": args.before.resolve(), "now": None}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        folder = Path(scratch)
        envs = {}
        for version, source in versions.items():
            env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
            env["SPHERECODES_CACHE"] = str(folder / f"cache-{version}")
            if source is not None:
                env["PYTHONPATH"] = str(source)
            (folder / version).mkdir()
            timed(["-m", "spherecodes", "fetch", "--d", "16", "--k", "100", "--out", "f.h5"], folder / version, env, 0)
            for _, command, _, _ in COMMANDS:  # untimed: bytecode written, files created
                timed(command, folder / version, env, 0)
            envs[version] = env
        times = {(version, label): [] for version in versions for label, *_ in COMMANDS}
        for run in range(1, runs + 1):
            for label, command, _, slow in COMMANDS:
                if slow and run > max(1, runs // 2):
                    continue
                for version in versions:
                    times[version, label].append(timed(command, folder / version, envs[version], run))
    load_after = os.getloadavg()
    base = statistics.median(times["now", BASELINE])
    print(f"load average before {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}; {os.cpu_count()} CPUs; "
          f"{runs} runs each (the tammes run {max(1, runs // 2)})\n")
    before = "before" in versions
    print("| command |" + (" before |" if before else "") + " now | now × baseline | target |\n|---|"
          + ("---|" if before else "") + "---|---|---|")
    for label, _, target, _ in COMMANDS:
        median = statistics.median(times["now", label])
        earlier = f" {statistics.median(times['before', label]):.2f} s |" if before else ""
        print(f"| `{label}` |{earlier} {median:.2f} s | {median / base:.1f} | "
              f"{'' if target is None else f'≤ {target} s'} |")


if __name__ == "__main__":
    main()
