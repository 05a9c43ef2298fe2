"""Golden files: the ``--json`` output of ``generate``, ``report``, ``certify``, ``fetch`` and ``bounds``.

Each case of :data:`CASES` is one command line; its exit status, its output
(parsed as JSON where it is JSON) and its stderr were recorded once in
``tests/golden/<case>.json``.  The test runs the cases again, in order, in one
empty directory (later cases report and certify the banks that earlier ones
wrote) and compares everything exactly: names, max-cos, rho, certificates,
bounds, counts, messages and exit statuses; a float is equal when its JSON
text is.  The same seed and settings give the same result on the same device,
so a difference is a change of behaviour.

Only what a run measures, or what names the machine, the time or the release,
is blanked first, by :func:`normalise` (each rule says why).  Every case runs
on the CPU with one thread (``--device cpu --threads 1`` where the command has
them), so that no setting recorded in a bank depends on the cores of the
machine that runs the test.

Re-recording is deliberate, never automatic: after a change of behaviour
that is meant, run::

    python tests/test_golden.py --regenerate            # every case
    python tests/test_golden.py --regenerate CASE ...   # some cases

and review ``git diff tests/golden`` before committing it.  A missing golden
file fails the test (it is not written by the test).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from spherecodes.cli import main
from spherecodes.examples import example_path

GOLDEN = Path(__file__).parent / "golden"

#: Options that pin the computation to one thread on the CPU, for the commands that take them.
CPU = ("--device", "cpu", "--threads", "1")

#: (case name, command line), run in this order in one directory; ``--json`` is added to every command.
CASES = [
    # Closed forms: optimal, returned at once.
    ("generate-simplex", ["generate", "--d", "5", "--k", "6", "--out", "closed.h5", *CPU]),
    ("generate-cross-polytope", ["generate", "--d", "4", "--k", "8", "--out", "closed.h5", *CPU]),
    ("generate-polygon", ["generate", "--d", "2", "--k", "7", "--out", "closed.h5", *CPU]),
    # The simplex of 5 points spans 4 of 8 dimensions: turned by the seeded rotation by default.
    ("generate-simplex-rotated", ["generate", "--d", "8", "--k", "5", "--out", "closed.h5", *CPU]),
    ("generate-600-cell-random-rotation", ["generate", "--d", "4", "--k", "120", "--method", "600-cell",
                                           "--rotation", "random", "--seed", "3", "--out", "closed.h5", *CPU]),
    # Structured codes.
    ("generate-main-job", ["generate", "--d", "64", "--k", "1000", "--out", "main.h5", *CPU]),
    ("generate-kerdock", ["generate", "--d", "16", "--k", "256", "--method", "structured", "--out",
                          "structured.h5", *CPU]),
    # The first 100 of the 128 words of extended BCH [16,7,6]: certified through the orbit.
    ("generate-orbit-prefix", ["generate", "--d", "16", "--k", "100", "--method", "structured", "--out",
                               "structured.h5", *CPU]),
    # The 276 equiangular lines of R^23 (both signs) padded into R^24: turned into all 24 dimensions.
    ("generate-padded-structured", ["generate", "--d", "24", "--k", "300", "--method", "structured", "--out",
                                    "structured.h5", *CPU]),
    ("generate-structured-no-certify", ["generate", "--d", "20", "--k", "256", "--method", "structured",
                                        "--no-certify", "--out", "uncertified.h5", *CPU]),
    # Optimisers, seeded, small.
    ("generate-tammes", ["generate", "--d", "3", "--k", "12", "--method", "tammes", "--seed", "1",
                         "--restarts", "2", "--steps", "200", "--out", "optimised.h5", *CPU]),
    ("generate-tammes-no-certify", ["generate", "--d", "3", "--k", "9", "--method", "tammes", "--restarts", "2",
                                    "--steps", "100", "--no-certify", "--out", "uncertified.h5", *CPU]),
    ("generate-softmax", ["generate", "--d", "3", "--k", "8", "--method", "softmax", "--restarts", "2",
                          "--steps", "50", "--out", "optimised.h5", *CPU]),
    ("generate-maxsep", ["generate", "--d", "4", "--k", "10", "--method", "maxsep", "--steps", "100",
                         "--out", "optimised.h5", *CPU]),
    ("generate-privileged", ["generate", "--d", "4", "--method", "privileged", "--classes", "classes.txt",
                             "--embeddings", str(example_path("cifar100/embeddings.txt")), "--steps", "100",
                             "--out", "privileged.h5", *CPU]),
    ("generate-lines-closed-form", ["generate", "--d", "3", "--k", "6", "--method", "lines", "--out",
                                    "lines.h5", *CPU]),
    ("generate-lines-optimised", ["generate", "--d", "4", "--k", "7", "--method", "lines", "--steps", "100",
                                  "--restarts", "2", "--out", "lines.h5", *CPU]),
    # A time limit spent before the first step: the optimiser gets the 1 ms that spherecodes.run_estimate grants
    # at least, and tammes needs longer than that to set up (2.6-7 ms measured on the 2-core machine), so it
    # stores its first seeded start, 0 steps taken, stop_reason time_limit.
    ("generate-time-limit-hit", ["generate", "--d", "3", "--k", "30", "--method", "tammes", "--time-limit", "0.001",
                                 "--no-certify", "--out", "limited.h5", *CPU]),
    # Refusals: one line on stderr, exit status 1 (bad input) or 2 (bad usage).
    ("refuse-time-limit", ["generate", "--d", "3", "--k", "30", "--method", "tammes", "--time-limit", "1e-6",
                           "--out", "refused.h5", *CPU]),
    ("refuse-closed-form-size", ["generate", "--d", "3", "--k", "10", "--method", "etf", "--out", "refused.h5",
                                 *CPU]),
    ("refuse-existing-code", ["generate", "--d", "5", "--k", "6", "--out", "closed.h5", *CPU]),
    ("refuse-fetch-method", ["fetch", "--d", "3", "--k", "10", "--method", "bogus"]),
    ("refuse-report-missing-bank", ["report", "missing.h5"]),
    # Catalog: a bundled bank, a closed form built on the spot, a structured code that beats the catalog.
    ("fetch-bundled-by-name", ["fetch", "tammes-d3-k46", "--out", "fetched.h5"]),
    ("fetch-bundled-by-size", ["fetch", "--d", "5", "--k", "42"]),
    ("fetch-closed-form", ["fetch", "--d", "6", "--k", "12"]),
    ("fetch-structured-main-job", ["fetch", "--d", "64", "--k", "1000"]),
    ("fetch-rotated", ["fetch", "--d", "3", "--k", "10", "--rotation", "random", "--seed", "2"]),
    # Reports and certificates of the banks written above.
    ("report-main-job", ["report", "main.h5", "--threads", "1"]),
    ("report-simplex-rotated", ["report", "closed.h5", "--code", "etf-d8-k5-s0", "--threads", "1"]),
    ("report-tammes", ["report", "optimised.h5", "--code", "tammes-d3-k12-s1", "--threads", "1"]),
    ("report-uncertified", ["report", "uncertified.h5", "--code", "structured-d20-k256", "--threads", "1"]),
    ("report-fetched", ["report", "fetched.h5", "--threads", "1"]),
    ("certify-kerdock", ["certify", "structured.h5", "--code", "structured-d16-k256", *CPU]),
    ("certify-tammes-write", ["certify", "uncertified.h5", "--code", "tammes-d3-k9-s0", "--write", *CPU]),
    ("report-tammes-certified-later", ["report", "uncertified.h5", "--code", "tammes-d3-k9-s0", "--threads", "1"]),
    ("certify-softmax", ["certify", "optimised.h5", "--code", "softmax-d3-k8-s0", *CPU]),
    ("certify-lines", ["certify", "lines.h5", "--code", "lines-d4-k7-s0", "--lines", *CPU]),
    # Bounds.
    ("bounds-d3-k12", ["bounds", "--d", "3", "--k", "12", "--threads", "1"]),
    ("bounds-d64-k1000", ["bounds", "--d", "64", "--k", "1000", "--threads", "1"]),
    ("bounds-d512-k100000", ["bounds", "--d", "512", "--k", "100000", "--threads", "1"]),
    ("bounds-d2-k7", ["bounds", "--d", "2", "--k", "7", "--threads", "1"]),
]

#: Keys whose values a run measures, not computes: blanked wherever they occur (``budget_seconds``, auto's
#: budget, is kept: it comes from the measured table shipped with spherecodes, not from this run).
VOLATILE_KEYS = {
    "wall_time_s": "the measured wall time of a run or of its certificate",
    "seconds": "the measured time of auto's candidates and of an optimiser's stages",
    "checksum_seconds": "the measured time of report's checksum of the stored rows",
    "statistics_seconds": "the measured time of report's recomputed statistics",
    "certificate_seconds": "the measured time of report's check of the stored certificate",
    "created_utc": "when the code was written",
    "package_version": "the release, which changes without a change of behaviour",
}

#: Patterns in text (messages, and strings inside the JSON) that a run measures or that name the machine.
VOLATILE_PATTERNS = [
    # An estimate timed on a sample here, as spherecodes.memory.format_duration writes it after "~" ("~3.5e-05 s");
    # a duration the user gave ("--time-limit 0.001 s") is kept.
    (re.compile(r"~\d+(\.\d+)?(e[-+]?\d+)? (s|min|h)\b"), "~<duration>"),
]


def normalise(value, placeholders: dict[str, str]):
    """``value`` with what legitimately varies between runs and machines replaced by named placeholders.

    ``placeholders`` maps text that names this run's machine (the temporary
    directory, the cache) to what it is shown as; then :data:`VOLATILE_KEYS`
    are blanked and :data:`VOLATILE_PATTERNS` replaced in every string.
    Everything else is kept as it is.
    """
    if isinstance(value, dict):
        return {key: "<volatile>" if key in VOLATILE_KEYS and value[key] is not None
                else normalise(item, placeholders) for key, item in value.items()}
    if isinstance(value, list):
        return [normalise(item, placeholders) for item in value]
    if isinstance(value, str):
        for text, shown in placeholders.items():
            value = value.replace(text, shown)
        for pattern, shown in VOLATILE_PATTERNS:
            value = pattern.sub(shown, value)
    return value


@contextmanager
def _workplace():
    """An empty working directory and cache, no configured catalog: what a case may see of the machine."""
    saved = {name: os.environ.get(name) for name in ("SPHERECODES_CACHE", "SPHERECODES_BANK_URL")}
    cwd = os.getcwd()
    root = Path(tempfile.mkdtemp(prefix="spherecodes-golden-")).resolve()
    try:
        (root / "work").mkdir()
        (root / "cache").mkdir()
        os.environ["SPHERECODES_CACHE"] = str(root / "cache")
        os.environ.pop("SPHERECODES_BANK_URL", None)
        os.chdir(root / "work")
        # Ten CIFAR-100 class names, for the privileged case (the shipped embeddings hold their words).
        names = example_path("cifar100/classes.txt").read_text().splitlines()[:10]
        Path("classes.txt").write_text("\n".join(names) + "\n")
        # Where this checkout, its installed data and this run's directories lie.
        yield {str(root / "cache"): "<cache>", str(root / "work"): "<work>",
               str(example_path("cifar100/embeddings.txt").parent): "<spherecodes/data/cifar100>",
               str(resources.files("spherecodes.banks")): "<spherecodes.banks>"}
    finally:
        os.chdir(cwd)
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
        shutil.rmtree(root, ignore_errors=True)


def _record(args: list[str], placeholders: dict[str, str]) -> dict:
    result = CliRunner().invoke(main, [*args, "--json"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is never an outcome to record
    try:
        output = json.loads(result.stdout)
    except ValueError:
        output = result.stdout
    record = {"command": ["spherecodes", *args, "--json"], "exit_code": result.exit_code, "stdout": output,
              "stderr": result.stderr}
    return normalise(record, placeholders)


def run_cases(names=None) -> dict[str, dict]:
    """Every case's normalised record, by case name; all cases run (later ones read earlier banks)."""
    with _workplace() as placeholders:
        records = {name: _record(args, placeholders) for name, args in CASES}
    return records if names is None else {name: records[name] for name in names}


def dumps(record) -> str:
    """The text of a golden file: indented JSON, each list of numbers or strings on one line."""

    def compact(value, indent):
        pad = " " * indent
        if isinstance(value, dict) and value:
            items = [f'{pad} {json.dumps(key)}: {compact(item, indent + 1)}' for key, item in value.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
            return "[\n" + ",\n".join(f"{pad} {compact(item, indent + 1)}" for item in value) + f"\n{pad}]"
        return json.dumps(value, ensure_ascii=False)

    return compact(record, 0) + "\n"


def differences(expected, actual, path="") -> list[str]:
    """Where two records differ, as JSON paths; floats compare by their JSON text (NaN equals NaN)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = [f"{path}/{key}: only in the golden file" for key in expected if key not in actual]
        found += [f"{path}/{key}: not in the golden file" for key in actual if key not in expected]
        for key in expected:
            if key in actual:
                found += differences(expected[key], actual[key], f"{path}/{key}")
        return found
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [line for i, (e, a) in enumerate(zip(expected, actual)) for line in differences(e, a, f"{path}[{i}]")]
    if type(expected) is not type(actual) or json.dumps(expected) != json.dumps(actual):
        return [f"{path}: golden {json.dumps(expected)[:200]}, now {json.dumps(actual)[:200]}"]
    return []


@pytest.fixture(scope="module")
def records():
    return run_cases()


@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_the_output_is_the_recorded_one(records, name):
    path = GOLDEN / f"{name}.json"
    assert path.exists(), f"no golden file {path}: record it with 'python tests/test_golden.py --regenerate {name}'"
    found = differences(json.loads(path.read_text()), json.loads(dumps(records[name])))
    assert not found, f"{name} differs from {path.name} ({len(found)} places):\n" + "\n".join(found[:20])


def test_the_cases_cover_every_command_and_a_refusal_of_each_kind():
    commands = {args[0] for _, args in CASES}
    assert commands == {"generate", "report", "certify", "fetch", "bounds"}
    statuses = {json.loads((GOLDEN / f"{name}.json").read_text())["exit_code"] for name, _ in CASES
                if (GOLDEN / f"{name}.json").exists()}
    assert statuses == {0, 1, 2}
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(name for name, _ in CASES), \
        "a golden file without its case, or a case without its file"


def test_normalise_blanks_only_what_is_measured():
    placeholders = {"/tmp/x/work": "<work>"}
    record = {"wall_time_s": 0.25, "seconds": None, "max_cos": 0.125, "name": "tammes-d3-k12-s1",
              "stderr": "Error: --time-limit 1e-06 s cannot hold this run: estimated at ~3.5e-05 s; "
                        "see /tmp/x/work/b.h5",
              "rho": {"lower": 1.2, "wall_time_s": 1e-3, "certified": True}}
    assert normalise(record, placeholders) == {
        "wall_time_s": "<volatile>", "seconds": None, "max_cos": 0.125, "name": "tammes-d3-k12-s1",
        "stderr": "Error: --time-limit 1e-06 s cannot hold this run: estimated at ~<duration>; see <work>/b.h5",
        "rho": {"lower": 1.2, "wall_time_s": "<volatile>", "certified": True}}
    assert math.isnan(json.loads(dumps({"x": math.nan}))["x"])


if __name__ == "__main__":
    if sys.argv[1:2] != ["--regenerate"]:
        sys.exit(f"usage: python {sys.argv[0]} --regenerate [CASE ...]   (re-records tests/golden; review the diff)")
    wanted = sys.argv[2:] or None
    unknown = set(wanted or ()) - {name for name, _ in CASES}
    if unknown:
        sys.exit(f"no case {', '.join(sorted(unknown))}; the cases are: {', '.join(name for name, _ in CASES)}")
    GOLDEN.mkdir(exist_ok=True)
    for name, record in run_cases(wanted).items():
        (GOLDEN / f"{name}.json").write_text(dumps(record))
        print(f"recorded {name}: exit {record['exit_code']}")
