"""Hostile banks: stored numbers that lie, damaged fields, orbits, outputs, writes that cannot complete.

A bank may come from anywhere: every stored number is checked against the stored prototypes before
it is shown or used, and a write that cannot complete leaves the old bank as it was.

The cases of the table run through :func:`hostile_support.run_case`; the
tests after it check what must still work, and what the table cannot.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Callable

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from hostile_support import (
    CATALOG_BANK, CATALOG_ENTRY, GOOD_CODE, SUBPROCESS_TIMEOUT, Table, catalog_bank_bytes, good_bank_bytes,
    make_bank, make_fifo, one_error_line, publish, replace_dataset, run_case, serve_catalog, set_attr,
    shift_certificate,
)
from hostile_support import web  # noqa: F401 (the fixture)
from spherecodes.cli import main

CASES = Table()
case = CASES.case
damaged = CASES.damaged


# ---- stored figures and claims: never believed over the rows


def _true_cosines(group) -> np.ndarray:
    """The cosines of every pair of the stored rows, computed here (the diagonal left out)."""
    w = group["prototypes"][()]
    g = w @ w.T
    return g[~np.eye(len(w), dtype=bool)]


def _nearest_pointing_farther(group):
    """Each class's nearest neighbour re-pointed at a farther row whose cosine is at most 0.26, every stored cosine
    true for the pair it names and the rattlers recomputed: a max-cos of 0.2559 where the rows give 0.4044."""
    w = group["prototypes"][()]
    g = w @ w.T
    np.fill_diagonal(g, -9.0)
    index = np.array([int(np.argmax(np.where(row <= 0.26, row, -9.0))) for row in g])
    cosines = np.einsum("ij,ij->i", w, w[index])
    stats = group["stats"]
    stats["nearest_index"][...] = index
    stats["nearest_cos"][...] = cosines
    stats.attrs["max_cos"] = cosines.max()
    replace_dataset(stats, "rattlers", np.flatnonzero(cosines < cosines.max() - stats.attrs["rattler_tol"]))


def _no_forged_max_cos(f, web, stdout, stderr):
    """Neither the forged max-cos nor a proof of optimality below the LP bound (0.3646) is shown; the truth is."""
    assert "0.2559" not in stdout and "yes (proven)" not in stdout, stdout
    truth = _true_cosines(h5py.File(f / "bank.h5", "r")["codes"][GOOD_CODE]).max()
    if stdout.lstrip().startswith("{"):
        report = json.loads(stdout)
        assert report["max_cos"] == pytest.approx(truth, abs=1e-12) and report["known_optimal"]["value"] is False
    else:
        assert f"{truth:.10g}" in stdout, stdout


for _command in (["report"], ["report", "--json"], ["certify", "-q"]):
    case(f"forged-nearest-neighbours-{'-'.join(c.strip('-') for c in _command)}",
         says=("stores what its prototypes do not bear out", r"max-cos 0\.2559324614 \(the rows give 0\.4043943252\)"),
         stdout=True, check=_no_forged_max_cos)(
        lambda f, web, command=_command: [command[0], make_bank(f, edit=_nearest_pointing_farther), *command[1:]])


@case("forged-nearest-neighbours-ls", says=("auto-d3-k10-s0", r"max-cos 0\.2559324614"), stdout=True,
      check=_no_forged_max_cos)
def _(f, web):
    return ["ls", make_bank(f, edit=_nearest_pointing_farther)]


def _forged_min_cos_is_not_the_lines_figure(f, web, stdout, stderr):
    truth = np.abs(_true_cosines(h5py.File(f / "bank.h5", "r")["codes"][GOOD_CODE])).max()
    assert f"max |cos|        {truth:.10g}" in stdout and "0.4043943252" not in stdout, stdout


@case("forged-min-cos-certify-lines", says=("min-cos -0.3 ", "the rows give -0.96"), stdout=True,
      check=_forged_min_cos_is_not_the_lines_figure)
def _(f, web):
    """certify --lines reported max |cos| 0.404 (the max-cos) where the rows give 0.968: min-cos was forged."""
    return ["certify", make_bank(f, edit=set_attr("stats", "min_cos", -0.3)), "--lines"]


def _settings(**entries):
    def edit(group):
        settings = json.loads(group.attrs["settings"])
        for key, value in entries.items():
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
        group.attrs["settings"] = json.dumps(settings)

    return edit


def _shown_without(*words):
    def check(f, web, stdout, stderr):
        assert not [w for w in words if w in stdout], stdout

    return check


def _forged_auto(**changes):
    def edit(group):
        settings = json.loads(group.attrs["settings"])
        settings["auto"].update(changes)
        group.attrs["settings"] = json.dumps(settings)

    return edit


@case("forged-exact-max-cos-and-label", says=("exact max-cos '1/4'", "the rows give 0.4043943252"), stdout=True,
      check=_shown_without("Leech", "exactly", "1/4"))
def _(f, web):
    return ["report", make_bank(f, edit=_settings(auto=None, label="Leech lattice", exact_max_cos="1/4"))]


@case("forged-exact-max-cos-of-auto", says=("auto's choice 'E8 roots'",), stdout=True,
      check=_shown_without("E8", "exactly", "sqrt"))
def _(f, web):
    return ["report", make_bank(f, edit=_forged_auto(winner="E8 roots", exact_max_cos="(1+sqrt(5))/8"))]


@case("forged-winner-of-auto", says=("auto's choice 'Leech lattice'",), stdout=True,
      check=_shown_without("Leech", "auto chose"))
def _(f, web):
    return ["report", make_bank(f, edit=_forged_auto(winner="Leech lattice"))]


@case("forged-exact-max-cos-one-third", says=("exact max-cos '1/3'",), stdout=True, check=_shown_without("exactly"))
def _(f, web):
    return ["report", make_bank(f, edit=_settings(exact_max_cos="1/3"))]


@case("forged-certificate-duplicates", says=("1 groups of identical prototypes in the certificate", "the rows have 0"),
      stdout=True, check=_shown_without("duplicates", "certified, width"))
def _(f, web):
    return ["report", make_bank(f, edit=set_attr("certificate", "duplicates", "[[0, 1]]"))]


damaged("bank-stats-rattler-tol-negative", set_attr("stats", "rattler_tol", -1.0),
        ("stats/rattler_tol", "is -1", "at least 0"))
damaged("bank-certificate-rattler-tol-negative", set_attr("certificate", "rattler_tol", -1.0),
        ("certificate/rattler_tol", "is -1", "at least 0"))

for _key, _value in (("stages", "seven"), ("stages", [{"stage": "anneal", "starts": 3, "seconds": float("nan")}]),
                     ("rotation", [1, 2]), ("rotation", {"seed": "x", "why": 3}), ("norm_deviation", float("inf")),
                     ("stop_detail", {"a": 1}), ("auto", {"winner": ["x"], "candidates": 5}), ("label", 7)):
    for _json in ((), ("--json",)):
        case(f"bank-settings-{_key}-{re.sub('[^a-z0-9]+', '-', json.dumps(_value).lower()).strip('-')[:20]}"
             + ("-json" if _json else ""), says=(f"settings entry '{_key}'", "not in the form"), stdout=True)(
            lambda f, web, key=_key, value=_value, extra=_json:
            ["report", make_bank(f, edit=_settings(normalized=True, **{key: value})), *extra])


def test_a_setting_holding_nan_is_shown_as_json_can_hold_it(tmp_path):
    """A run may record NaN or infinity (an energy): report --json crashed on it (JSON has no NaN)."""
    bank = make_bank(tmp_path, edit=_settings(energy=float("nan"), peak=float("-inf")))
    result = CliRunner().invoke(main, ["report", str(bank), "--json"])
    assert result.exit_code == 0, result.output
    settings = json.loads(result.stdout)["settings"]
    assert (settings["energy"], settings["peak"]) == ("NaN", "-Infinity")


def _wide_generic_bank(folder: Path, k: int) -> Path:
    """The good bank with its prototypes replaced by K unit rows in R^2 of no structure (the other fields left as
    they are: what is estimated are the shapes, before anything is read)."""
    def edit(group):
        angles = np.random.default_rng(0).uniform(0, 2 * np.pi, k)
        w = np.stack([np.cos(angles), np.sin(angles)], axis=1)
        replace_dataset(group, "prototypes", w)
        group.attrs["k"], group.attrs["d"] = k, 2

    return make_bank(folder, edit=edit)


def test_report_of_a_huge_bank_says_what_reading_and_checking_take_first(tmp_path):
    """Every statistic is recomputed from the rows: for 200,000 rows of no structure, all their pairs. The
    estimate comes first (the read then finds the rest of this bank damaged, which does not matter here)."""
    bank = _wide_generic_bank(tmp_path, 200_000)
    proc = subprocess.Popen([sys.executable, "-m", "spherecodes", "report", str(bank)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert first.startswith("estimate: reading code 'auto-d3-k10-s0' (K = 200000, d = 2)"), first
    assert "the statistics recomputed from all pairs on cpu" in first, first


def test_report_of_a_bank_that_would_take_more_than_a_day_is_refused_before_reading(tmp_path, monkeypatch):
    import spherecodes.cli._common as common

    monkeypatch.setattr(common, "ABSURD_SECONDS", 1e-6)  # as for a million classes of no structure
    result = CliRunner().invoke(main, ["report", str(make_bank(tmp_path))])
    assert result.exit_code == 1, result.output
    assert re.search(r"reading code 'auto-d3-k10-s0' .*: estimated at ~.*; not started \(over",
                     one_error_line(result.stderr)), result.stderr
    assert result.stdout == ""


# ---- false certificates: stored numbers must follow from the stored prototypes and witnesses


def _no_false_rho(f, web, stdout, stderr):
    """The report is still shown, with rho uncertified, never with the stored numbers."""
    assert "1.095" not in stdout  # the shifted rho of the bank; the truth is 0.5956
    if stdout.lstrip().startswith("{"):
        assert json.loads(stdout)["rho"] is None
    else:
        assert "rho          not certified" in stdout


@case("shifted-certificate-report", says=("certificate", "does not check"), stdout=True, check=_no_false_rho)
def _(f, web):
    return ["report", make_bank(f, edit=shift_certificate)]


@case("shifted-certificate-report-json", says=("certificate", "does not check"), stdout=True, check=_no_false_rho)
def _(f, web):
    return ["report", make_bank(f, edit=shift_certificate), "--json"]


@case("shifted-certificate-certify", says=("stored certificate", "does not check"), stdout=True)
def _(f, web):
    return ["certify", make_bank(f, edit=shift_certificate), "--quiet"]


@case("one-class-certificate-raised", says=("certificate", "does not check", "class 3"), stdout=True,
      check=_no_false_rho)
def _(f, web):
    def edit(group):
        lo = group["certificate"]["lo"][()]
        lo[3] += 1e-6
        group["certificate"]["lo"][...] = lo

    return ["report", make_bank(f, edit=edit)]


@case("shifted-certificate-assign", says=("certificate", "does not check"))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((10, 3)))
    return ["assign", make_bank(f, edit=shift_certificate), "--class-means", f / "means.npy"]


@case("shifted-certificate-fetch", says=("certificate", "does not check"))
def _(f, web):
    registry = publish(f / "catalog", {CATALOG_BANK: catalog_bank_bytes(f)})
    bank = f / "catalog" / CATALOG_BANK
    with h5py.File(bank, "r+") as fh:
        shift_certificate(fh["codes"][GOOD_CODE])
    data = bank.read_bytes()
    registry["entries"][0].update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (f / "catalog" / "registry.json").write_text(json.dumps(registry))
    return ["fetch", CATALOG_ENTRY, "--url", serve_catalog(web, f / "catalog", registry)]


# ---- damaged banks: one line naming the dataset or attribute at fault


damaged("bank-stats-group-deleted", lambda g: g.__delitem__("stats"), ("stats",))
damaged("bank-stats-group-deleted-ls", lambda g: g.__delitem__("stats"), ("stats",), command="ls")
damaged("bank-certificate-lo-deleted", lambda g: g["certificate"].__delitem__("lo"), ("certificate/lo",))
damaged("bank-certificate-lo-wrong-shape", lambda g: replace_dataset(g["certificate"], "lo", np.zeros(3)),
         ("certificate/lo",))
damaged("bank-stats-max-cos-deleted", set_attr("stats", "max_cos", None), ("max_cos",))
damaged("bank-stats-max-cos-a-string", set_attr("stats", "max_cos", "large"), ("max_cos",))
damaged("bank-stats-max-cos-false", set_attr("stats", "max_cos", -0.9), ("max_cos",))
damaged("bank-settings-not-json", set_attr("", "settings", "{not json"), ("settings",))
damaged("bank-settings-a-list", set_attr("", "settings", "[1, 2]"), ("settings",))
damaged("bank-seed-a-string", set_attr("", "seed", "seven"), ("seed",))
damaged("bank-seed-past-2-63", set_attr("", "seed", np.uint64(2**64 - 1)), ("seed",))
damaged("bank-k-a-string", set_attr("", "k", "ten"), ("k|shape",))
damaged("bank-support-indices-out-of-range",
         lambda g: replace_dataset(g["certificate"], "support_indices", np.full(g["certificate/support_indices"].shape, 99)),
         ("support_indices",))
damaged("bank-support-indices-float",
         lambda g: replace_dataset(g["certificate"], "support_indices", g["certificate/support_indices"][()] + 0.5),
         ("support_indices",))
damaged("bank-certificate-tol-deleted", set_attr("certificate", "tol", None), ("tol",))
damaged("bank-certificate-duplicates-not-json", set_attr("certificate", "duplicates", "[[0,"), ("duplicates",))
damaged("bank-nearest-index-out-of-range",
         lambda g: replace_dataset(g["stats"], "nearest_index", np.full(10, 1000)), ("nearest_index",))
damaged("bank-nearest-cos-wrong-length", lambda g: replace_dataset(g["stats"], "nearest_cos", np.zeros(4)),
         ("nearest_cos",))
damaged("bank-labels-integers", lambda g: g.create_dataset("labels", data=np.arange(10)), ("labels",))


damaged("bank-support-weights-nan",
         lambda g: replace_dataset(g["certificate"], "support_weights", np.full(g["certificate/support_weights"].shape, np.nan)),
         ("support_weights", "NaN"))
damaged("bank-rattlers-invented", lambda g: replace_dataset(g["stats"], "rattlers", np.array([0, 1])), ("rattlers",))
damaged("bank-prototypes-float32",
         lambda g: replace_dataset(g, "prototypes", g["prototypes"][()].astype(np.float32)), ("prototypes", "float64"))



@case("bank-prototypes-external-link", says=("prototypes", "link"))
def _(f, web):
    def edit(group):
        with h5py.File(f / "other.h5", "w") as other:
            other["data"] = group["prototypes"][()]
        replace_dataset(group, "prototypes", h5py.ExternalLink(str(f / "other.h5"), "/data"))

    return ["report", make_bank(f, edit=edit)]


@case("bank-prototypes-external-storage", says=("prototypes", "outside"))
def _(f, web):
    def edit(group):
        data = group["prototypes"][()]
        (f / "raw.bin").write_bytes(data.tobytes())
        del group["prototypes"]
        group.create_dataset("prototypes", shape=data.shape, dtype="<f8", external=[(str(f / "raw.bin"), 0, data.nbytes)])

    return ["report", make_bank(f, edit=edit)]


@case("bank-truncated", says=("bank.h5", "damaged|truncated"))
def _(f, web):
    data = good_bank_bytes()
    (f / "bank.h5").write_bytes(data[: len(data) // 2])
    return ["report", f / "bank.h5"]


# ---- writing banks: nothing half-written, the old bank kept


@case("fetch-out-over-an-existing-code", says=("already exists", "--overwrite"))
def _(f, web):
    first = CliRunner().invoke(main, ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", str(f / "b.h5"), "-q"])
    assert first.exit_code == 0, first.output
    return ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", f / "b.h5"]


@case("out-is-immutable", says=("bank.h5", "cannot|not writable|permission|immutable|read-only"))
def _(f, web):
    bank = make_bank(f)
    if subprocess.run(["chattr", "+i", str(bank)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    return ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", bank, "--overwrite"]


# ---- banks: JSON attributes and datasets that would cost more than they hold


damaged("bank-settings-integer-of-5000-digits", set_attr("", "settings", '{"steps": ' + "9" * 5000 + "}"),
         ("settings", "5000 digits"))
damaged("bank-settings-nested-50000-deep", set_attr("", "settings", "[" * 50_000 + "]" * 50_000),
         ("settings", "nests"))
damaged("bank-duplicates-nested-50000-deep", set_attr("certificate", "duplicates", "[" * 50_000 + "]" * 50_000),
         ("duplicates", "nests"))
damaged("bank-schema-version-negative", lambda g: g.file.attrs.__setitem__("schema_version", np.int64(-5)),
         ("schema_version -5",))


def _hard_links(group):
    """The code's group under 100 more names: stored once, each name a copy when a writer rewrites the bank."""
    for i in range(100):
        group.parent[f"copy{i}"] = group


@case("bank-one-code-under-100-names-generate", says=("stored once under 101 names", "hard links"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "4", "--out", make_bank(f, edit=_hard_links)]


@case("bank-one-code-under-100-names-ls", says=("stored once under 101 names",))
def _(f, web):
    return ["ls", make_bank(f, edit=_hard_links)]


@case("bank-prototypes-hard-linked-into-another-code", says=("prototypes", "stored once under 2 names"))
def _(f, web):
    def edit(group):
        group.parent.copy(group, "other")
        del group.parent["other/prototypes"]
        group.parent["other/prototypes"] = group["prototypes"]

    return ["rm", make_bank(f, edit=edit), "--code", GOOD_CODE]


def _wide_supports(group):
    """Supports of 10 classes declared 10^7 wide (800 MB each, a few KB of gzip)."""
    for name, dtype in (("support_indices", "<i8"), ("support_weights", "<f8")):
        del group["certificate"][name]
        data = group["certificate"].create_dataset(name, shape=(10, 10**7), dtype=dtype, compression="gzip",
                                                   chunks=(10, 2**16), fillvalue=-1 if dtype == "<i8" else 0)
        data[:, :1] = 0


damaged("bank-certificate-supports-declared-10-million-wide", _wide_supports,
         ("certificate/support_indices", "10000000 columns", "at most K = 10"))


def _declared_gigabyte(compressed: bool):
    """Prototypes declaring (131072, 1024) float64 (1 GiB): gzip chunks of one repeated row, or never written."""
    def edit(group):
        del group["prototypes"]
        if compressed:
            data = group.create_dataset("prototypes", shape=(131072, 1024), dtype="<f8", compression="gzip",
                                        chunks=(1024, 1024))
            block = np.zeros((1024, 1024))
            block[:, 0] = 1
            data[:1024] = block  # one chunk stored (a few KB); the rest would decompress as the fill value
        else:
            group.create_dataset("prototypes", shape=(131072, 1024), dtype="<f8")
        group.attrs["k"], group.attrs["d"] = 131072, 1024

    return edit


@case("bank-gzip-prototypes-declaring-1-GiB", says=("prototypes", "compressed", "1.0 GiB"))
def _(f, web):
    return ["report", make_bank(f, edit=_declared_gigabyte(True))]


@case("bank-prototypes-declared-never-written", says=("prototypes", "1.0 GiB", "stores only 0 B"))
def _(f, web):
    return ["report", make_bank(f, edit=_declared_gigabyte(False))]


@case("bank-gzip-prototypes-as-generate-init", says=("prototypes", "compressed"))
def _(f, web):
    start = make_bank(f, edit=_declared_gigabyte(True))
    return ["generate", "--d", "1024", "--k", "131072", "--method", "tammes", "--init", start, "--out", f / "new.h5"]


# ---- codes that are one orbit of sign changes: the stored generators are a claim, checked before use


@functools.lru_cache(maxsize=1)
def _orbit_bank_bytes() -> bytes:
    """A bank of the 2^8 sign vectors of R^8 (K = 256): its generators and class 0's witness stored."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        made = CliRunner().invoke(main, ["generate", "--d", "8", "--k", "256", "--method", "structured", "--out",
                                         f"{folder}/orbit.h5", "-q"])
        assert made.exit_code == 0, made.output
        return Path(folder, "orbit.h5").read_bytes()


def _orbit_bank(folder: Path, edit: Callable) -> Path:
    path = folder / "orbit.h5"
    path.write_bytes(_orbit_bank_bytes())
    with h5py.File(path, "r+") as fh:
        (name,) = fh["codes"]
        edit(fh["codes"][name])
    return path


def _generators(make):
    def edit(group):
        stored = group["orbit/generators"]
        data = make(stored[()])
        del group["orbit/generators"]
        if callable(data):
            data(group["orbit"])
        else:
            group["orbit"]["generators"] = data

    return edit


def _orbit_case(name, make, says):
    @case(name, says=says)
    def _(f, web):
        return ["report", _orbit_bank(f, _generators(make))]


_orbit_case("bank-orbit-generators-declared-a-billion-rows",
            lambda g: lambda orbit: orbit.create_dataset("generators", shape=(10**9, 8), dtype="u1", compression="gzip",
                                                         chunks=(2**20, 8)),
            ("orbit/generators", r"\(1000000000, 8\)", r"expected \(8, 8\)"))  # a few KB of gzip; was 20 s and 7.8 GB
_orbit_case("bank-orbit-generators-of-the-wrong-shape", lambda g: g[:3, :5], ("orbit/generators", r"\(3, 5\)"))
_orbit_case("bank-orbit-generators-contradict-the-rows", lambda g: np.vstack([g[0] ^ g[1], g[1:]]),
            ("orbit/generators", "do not generate the prototypes"))
_orbit_case("bank-orbit-generators-as-floats", lambda g: g + 0.5, ("orbit/generators", "float64", "integers"))


@case("bank-orbit-stored-for-k-10", says=("orbit/generators", "first K words, in order"))
def _(f, web):
    # K = 10: claimed to be the first 10 words of an orbit of 16 (4 generators), which random rows are not.
    return ["report", make_bank(f, edit=lambda g: g.create_group("orbit").create_dataset(
        "generators", data=np.eye(4, 3, dtype=np.uint8)))]


@case("bank-orbit-witness-on-a-code-that-is-no-orbit", says=("certificate", "class 0's witness alone", "not one orbit"))
def _(f, web):
    return ["report", make_bank(f, edit=set_attr("certificate", "witness", "class 0, moved by the orbit"))]


@case("bank-certificate-witness-unknown", says=("certificate/witness", "moved by magic", "the only value"))
def _(f, web):
    return ["report", _orbit_bank(f, set_attr("certificate", "witness", "class 0, moved by magic"))]


# ---- outputs that are not regular files, through links or as parents


def _fifo_intact(f, web, stdout, stderr):
    assert (f / "device").is_fifo(), "the fifo was replaced by a regular file"


@case("plot-through-a-link-to-a-fifo", says=("device", "a fifo", "not a regular file"), stdout=True, check=_fifo_intact)
def _(f, web):
    """Renaming the finished plot over the link's target would replace it: a link to /dev/null, run as root, would
    replace the device (a fifo stands in for it here, so that a regression harms nothing)."""
    (f / "plot.png").symlink_to(make_fifo(f, "device"))
    return ["report", make_bank(f), "--plot", f / "plot.png"]


@case("export-through-a-link-to-a-fifo", says=("device", "a fifo", "not a regular file"), check=_fifo_intact)
def _(f, web):
    (f / "x.npy").symlink_to(make_fifo(f, "device"))
    return ["export", make_bank(f), "--out", f / "x.npy", "--overwrite"]


@case("export-into-a-file-as-directory", says=("plain", "is a regular file, not a directory"))
def _(f, web):
    (f / "plain").write_text("a file")
    return ["export", make_bank(f), "--out", f / "plain" / "x.npy"]


@case("generate-into-a-file-as-directory", says=("plain", "is a regular file, not a directory"))
def _(f, web):
    (f / "plain").write_text("a file")
    return ["generate", "--d", "3", "--k", "4", "--out", f / "plain" / "x.h5"]


@case("export-out-a-link-to-the-bank-it-reads", says=(r"x\.npy is .*bank\.h5 itself", "a link to it", "--out"))
def _(f, web):
    """ln -s bank.h5 x.npy; export bank.h5 --out x.npy --overwrite replaced the bank with its own matrix."""
    bank = make_bank(f)
    (f / "x.npy").symlink_to(bank.name)
    return ["export", bank, "--out", f / "x.npy", "--overwrite"]


@case("export-out-a-hard-link-to-the-bank-it-reads", says=(r"x\.npy is .*bank\.h5 itself", "the same file"))
def _(f, web):
    bank = make_bank(f)
    os.link(bank, f / "x.npy")
    return ["export", bank, "--out", f / "x.npy", "--overwrite"]


@case("report-plot-a-link-to-the-bank-it-reads", says=(r"plot\.png is .*bank\.h5 itself", "--plot"))
def _(f, web):
    bank = make_bank(f)
    (f / "plot.png").symlink_to(bank.name)
    return ["report", bank, "--plot", f / "plot.png"]


@case("catalog-build-out-a-symbolic-link-loop", says=("loop", "symbolic link", "--out"))
def _(f, web):
    (f / "loop").symlink_to("loop")
    return ["catalog", "build", "--grid", "d=3 k=7", "--out", f / "loop"]


@case("catalog-build-out-inside-a-symbolic-link-loop", says=("cannot create the catalog folder", "symbolic links",
                                                              "--out"))
def _(f, web):
    (f / "loop").symlink_to("loop")
    return ["catalog", "build", "--grid", "d=3 k=7", "--out", f / "loop" / "built"]


def test_python_readers_refuse_a_certificate_that_does_not_check(tmp_path):
    import spherecodes
    from spherecodes.nn import PrototypeClassifier

    bank = make_bank(tmp_path, edit=shift_certificate)
    with pytest.raises(spherecodes.SpherecodesError, match="certificate.*does not check"):
        spherecodes.read_code(bank)
    with pytest.raises(spherecodes.SpherecodesError, match="certificate.*does not check"):
        PrototypeClassifier.from_bank(bank)


# --------------------------------------------------------------------------- writes that cannot complete


def _file_size_limit(nbytes):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return limit


_WRITE_PAST_THE_CHECK = """
import sys
from spherecodes.bank import _writing as bank
from spherecodes.cli import main
bank._check_room = lambda path, adding: None  # as if the disk filled up while the bank was written
main(sys.argv[1:], prog_name="spherecodes")
"""


@pytest.mark.parametrize("when", ["refused-before-writing", "failing-while-writing"])
def test_the_file_size_limit_gives_one_line_and_keeps_the_old_bank(tmp_path, when):
    """ulimit -f below what the new bank needs: refused up front, or (a disk filling meanwhile) while HDF5 writes."""
    bank = make_bank(tmp_path)
    before = bank.read_bytes()
    args = ["generate", "--d", "11", "--k", "12", "--out", str(bank), "-q"]
    command = [sys.executable, "-m", "spherecodes"] if when == "refused-before-writing" else \
        [sys.executable, "-c", _WRITE_PAST_THE_CHECK]
    proc = subprocess.run(command + args, cwd=tmp_path, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                          preexec_fn=_file_size_limit(len(before) + 1024))
    assert proc.returncode == 1, proc.stderr  # not a crash (-11) while HDF5 shuts down
    line = one_error_line(proc.stderr)
    assert ("ulimit -f" if when == "refused-before-writing" else "File too large") in line, line
    assert "unchanged" in line
    assert bank.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


def test_a_full_disk_is_refused_before_writing(tmp_path, monkeypatch):
    bank = make_bank(tmp_path)
    before = bank.read_bytes()
    statvfs = os.statvfs

    def nearly_full(path):
        real = statvfs(path)
        return os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, 1, 1) + tuple(real)[5:])

    monkeypatch.setattr(os, "statvfs", nearly_full)
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "4", "--out", str(bank), "-q"])
    assert result.exit_code == 1
    assert re.search(r"free in .*unchanged", one_error_line(result.stderr))
    assert bank.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


@pytest.mark.parametrize("command", ["generate", "rm"])
def test_a_file_name_too_long_for_the_file_system_is_refused_before_the_work(tmp_path, command):
    long_name = str(tmp_path / ("x" * 300))
    args = ["generate", "--d", "3", "--k", "4", "--out", long_name] if command == "generate" else \
        ["rm", long_name, "--code", "a"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "too long" in one_error_line(result.stderr)
    assert list(tmp_path.iterdir()) == []


def test_certify_write_never_replaces_a_certificate_that_checks_with_one_that_does_not(tmp_path):
    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    before = bank_file.read_bytes()
    # No float64 interval is 1e-300 wide: the new certificate cannot be certified.
    result = CliRunner().invoke(main, ["certify", str(bank_file), "--write", "--tol", "1e-300", "-q"])
    assert result.exit_code == 1
    assert re.search(r"not certified to --tol 1e-300 .*the stored one, certified to tol 1e-09, is kept and .* "
                     r"is unchanged", one_error_line(result.stderr))
    assert bank_file.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["b.h5"]
    # A tolerance the widths meet replaces it as before.
    assert CliRunner().invoke(main, ["certify", str(bank_file), "--write", "--tol", "1e-6", "-q"]).exit_code == 0
    from spherecodes import read_code

    assert read_code(bank_file).certificate.tol == 1e-6


def test_damaged_entries_in_a_bank_can_be_removed_and_the_other_codes_kept(tmp_path):
    from spherecodes import list_codes, read_code

    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    with h5py.File(bank_file, "a") as fh:
        fh["codes"]["link"] = h5py.SoftLink("/nowhere")
        fh["codes"].create_dataset("junk", data=[1, 2])
    listed = CliRunner().invoke(main, ["ls", str(bank_file)])
    assert listed.exit_code == 1
    assert f"('spherecodes rm {bank_file} --code junk' removes that code" in one_error_line(listed.stderr)
    # Each damaged entry blocks the rewrite that would copy it: both go in one rewrite.
    one = CliRunner().invoke(main, ["rm", str(bank_file), "--code", "link"])
    assert one.exit_code == 1 and "code 'junk'" in one_error_line(one.stderr)
    both = CliRunner().invoke(main, ["rm", str(bank_file), "--code", "link", "--code", "junk"])
    assert both.exit_code == 0 and "deleted link, junk from" in both.output
    assert [c["name"] for c in list_codes(bank_file)] == ["auto-d3-k10-s0"]
    assert read_code(bank_file).k == 10


@pytest.mark.parametrize("command", [["rm", "--code", "auto-d3-k10-s0"], ["certify", "--write", "-q"]])
def test_a_bank_rewritten_in_place_in_a_read_only_directory_is_refused_with_what_to_do(tmp_path, monkeypatch,
                                                                                        command):
    from spherecodes.bank import _writing as bank_module

    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    before = bank_file.read_bytes()

    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    # Root ignores permission bits: the probe file the check creates fails as on a read-only directory.
    monkeypatch.setattr(bank_module.tempfile, "TemporaryFile", read_only)
    result = CliRunner().invoke(main, [command[0], str(bank_file), *command[1:]])
    assert result.exit_code == 1
    line = one_error_line(result.stderr)
    assert "not writable" in line and "work on a copy in a writable directory" in line and "--out" not in line
    assert bank_file.read_bytes() == before


def test_a_bank_of_several_codes_asks_for_the_option_that_names_one(tmp_path):
    bank_file = tmp_path / "two.h5"
    for seed in ("0", "1"):
        args = ["generate", "--d", "3", "--k", "10", "--method", "tammes", "--steps", "100", "--restarts", "1",
                "--seed", seed, "--out", str(bank_file), "-q"]
        assert CliRunner().invoke(main, args).exit_code == 0
    start = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--method", "tammes", "--init",
                                      str(bank_file), "--out", str(tmp_path / "x.h5"), "-q"])
    assert start.exit_code == 1
    assert "holds 2 codes; choose one with --init-code NAME (available: tammes-d3-k10-s0, tammes-d3-k10-s1)" \
        in one_error_line(start.stderr)
    report = CliRunner().invoke(main, ["report", str(bank_file)])
    assert report.exit_code == 1 and "choose one with --code NAME" in one_error_line(report.stderr)


@pytest.mark.parametrize("args,says", [
    (["generate", "--d", "3", "--k", "10", "--name", "", "--out", "{tmp}/a.h5"], "invalid code name ''"),
    (["generate", "--d", "3", "--k", "10", "--name", "foo", "--out", "{tmp}/a.npy"],
     "--name names a code in a bank; a.npy is a matrix file"),
    (["export", "{tmp}/b.h5", "--out", "{tmp}/e.npy", "--seed", "5"], "--seed sets the random rotation"),
    (["fetch", "--d", "3", "--k", "4", "--rotation", "canonical", "--seed", "3", "--out", "{tmp}/f.npy"],
     "--seed sets the random rotation"),
])
def test_an_option_that_would_be_ignored_is_refused(tmp_path, args, says):
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(tmp_path / "b.h5"),
                                     "-q"]).exit_code == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(main, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code in (1, 2) and says in one_error_line(result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_read_only_bank_is_not_replaced(tmp_path, monkeypatch):
    from spherecodes.bank import _writing as bank_module

    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    before = bank_file.read_bytes()
    real_access = os.access
    # Root may write any file: the check asks os.access, answered here as for a mode-444 file of another user.
    monkeypatch.setattr(bank_module.os, "access",
                        lambda p, mode, **kw: mode != os.W_OK if Path(p) == bank_file else real_access(p, mode, **kw))
    for args in (["generate", "--d", "3", "--k", "11", "--out", str(bank_file), "-q"],
                 ["rm", str(bank_file), "--code", "auto-d3-k10-s0"], ["certify", str(bank_file), "--write", "-q"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1, (args, result.output)
        assert "b.h5 is read-only; make it writable (chmod u+w)" in \
            one_error_line(result.stderr)
    assert bank_file.read_bytes() == before


def test_a_huge_name_is_not_echoed_in_full_and_an_empty_bank_says_so(tmp_path):
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--name", "a" * 70_000,
                                       "--out", str(tmp_path / "x.h5"), "-q"])
    line = one_error_line(result.stderr)
    assert result.exit_code == 1 and "(70,000 characters): use 1-128 letters" in line and len(line) < 300
    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    with h5py.File(bank_file, "a") as fh:
        del fh["codes"]["auto-d3-k10-s0"]
    result = CliRunner().invoke(main, ["report", str(bank_file)])
    assert result.exit_code == 1
    assert "b.h5 holds no codes ('spherecodes generate --out" in one_error_line(result.stderr)


# --------------------------------------------------------------------------- the table, run


@pytest.mark.parametrize("name", CASES.names())
def test_hostile_input_gets_one_line_and_changes_nothing(name, tmp_path, web, monkeypatch):
    run_case(CASES[name], name, tmp_path, web, monkeypatch)
