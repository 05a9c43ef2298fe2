"""Names from files, printed: class names, code names and registry names that try to forge output.

A name is shown as what it holds (escaped), on one line, and never split into two classes.

The cases of the table run through :func:`hostile_support.run_case`; the
tests after it check what must still work, and what the table cannot.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from hostile_support import CATALOG_BANK, CLASSES, GOOD_CODE, Table, catalog_bank_bytes, make_bank, publish, run_case
from hostile_support import web  # noqa: F401 (the fixture)
from spherecodes.cli import main

CASES = Table()
case = CASES.case


@case("classes-holding-nul", says=(r"classes\.txt", "line 2", "NUL"))
def _(f, web):
    (f / "classes.txt").write_bytes(b"cat\ndo\x00g\nbird\n")
    # tammes for (64, 3) runs its optimiser: refused before it, not when the labels are stored
    return ["generate", "--d", "64", "--method", "tammes", "--classes", f / "classes.txt", "--out", f / "new.h5"]


@case("classes-holding-nul-assign", says=(r"classes\.txt", "line 3", "NUL"))
def _(f, web):
    (f / "classes.txt").write_bytes(b"\n".join(c.encode() for c in CLASSES[:2]) + b"\nx\x00y\n")
    return ["assign", make_bank(f), "--classes", f / "classes.txt", "--embeddings", f / "none.txt"]


# ---- one class per line, whatever characters a name holds


def _breaking_case(name, character, code):
    @case(name, says=(r"classes\.txt", "line 1", code, "one per line"))
    def _(f, web):
        # Python's splitlines() broke "cat<break>dog" into two classes: K = 3 from a file of two lines.
        (f / "classes.txt").write_text(f"cat{character}dog\nbird\n", encoding="utf-8")
        return ["generate", "--d", "3", "--classes", f / "classes.txt", "--out", f / "new.h5"]


_breaking_case("class-name-holding-a-line-separator", "\u2028", r"U\+2028")
_breaking_case("class-name-holding-a-form-feed", "\x0c", r"U\+000C")
_breaking_case("class-name-holding-a-next-line", "\x85", r"U\+0085")


@case("class-names-in-two-unicode-spellings", says=(r"classes\.txt", "repeats class names", "NFC",
                                                     r"lines 1, 3"))
def _(f, web):
    """'café' composed (U+00E9) and decomposed (e + U+0301) print alike: one class, not two."""
    (f / "classes.txt").write_text("caf\u00e9\ndog\ncafe\u0301\n", encoding="utf-8")
    return ["generate", "--d", "3", "--classes", f / "classes.txt", "--out", f / "new.h5"]


def test_labels_in_two_unicode_spellings_are_one_label():
    import spherecodes

    with pytest.raises(spherecodes.SpherecodesError, match="distinct.*NFC"):
        spherecodes.make_code(np.eye(3), method="external", labels=["caf\u00e9", "cafe\u0301", "dog"])


def test_a_name_file_with_windows_line_ends_reads_one_class_per_line(tmp_path):
    from spherecodes.semantic import read_class_names

    (tmp_path / "classes.txt").write_bytes(b"cat\r\ndog\r\nmaple tree\r\n")
    assert read_class_names(tmp_path / "classes.txt") == ["cat", "dog", "maple tree"]


# --------------------------------------------------------------------------- names from files, printed


def _renamed(folder: Path, name: str, method: str | None = None) -> Path:
    """The good bank with its code stored under ``name`` (and ``method``), as anyone with h5py can write."""
    def edit(group):
        if method is not None:
            group.attrs["method"] = method
        group.file["codes"].move(GOOD_CODE, name)

    return make_bank(folder, edit=edit)


def test_a_code_name_with_a_newline_and_an_escape_sequence_cannot_forge_a_row_of_ls(tmp_path):
    forged = "a\nforged-d3-k10  tammes  d=3 K=10 max-cos 0.1 \x1b[2J"
    result = CliRunner().invoke(main, ["ls", str(_renamed(tmp_path, forged, method="tammes\r\x1b[31m"))])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1, result.stdout
    assert "\x1b" not in result.stdout and "\r" not in result.stdout
    assert "\\n" in result.stdout and "\\x1b[2J" in result.stdout  # shown, escaped


def test_names_that_differ_by_a_look_alike_space_print_differently(tmp_path):
    bank = _renamed(tmp_path, "cat dog")
    with h5py.File(bank, "r+") as fh:
        fh["codes"].copy(fh["codes/cat dog"], "cat\u00a0dog")
    result = CliRunner().invoke(main, ["ls", str(bank)])
    assert result.exit_code == 0, result.output
    names = [line.split("  ")[0] for line in result.stdout.splitlines()]
    assert len(names) == 2 and names[0] != names[1], names
    report = CliRunner().invoke(main, ["report", str(bank), "--code", "cat\u00a0dog"])
    assert report.exit_code == 0, report.output
    assert report.stdout.splitlines()[0].startswith("code cat\\xa0dog:"), report.stdout


def test_a_report_shows_a_forged_name_on_one_line(tmp_path):
    result = CliRunner().invoke(main, ["report", str(_renamed(tmp_path, "x\nmax-cos      0.0 (forged)"))])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("code x\\nmax-cos"), result.stdout
    assert not any(line.startswith("max-cos") for line in result.stdout.splitlines())


@pytest.mark.parametrize("where", ["method", "code name"])
def test_a_plot_title_is_never_read_as_mathematics(tmp_path, where):
    bank = _renamed(tmp_path, "$\\frac{$", method="tammes") if where == "code name" else \
        _renamed(tmp_path, "frac", method="$\\frac{$")
    result = CliRunner().invoke(main, ["report", str(bank), "--plot", str(tmp_path / "plot.png")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_error_line_stays_one_line_whatever_a_name_holds(tmp_path):
    result = CliRunner().invoke(main, ["rm", str(_renamed(tmp_path, "a")), "--code", "b\nError: forged\x1b[2J"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "\x1b" not in lines[0], lines


def test_a_registry_name_with_a_newline_cannot_forge_a_catalog_row(tmp_path):
    registry = publish(tmp_path / "catalog", {CATALOG_BANK: catalog_bank_bytes(tmp_path)})
    registry["entries"][0]["name"] = "x\nforged-d3-k10  3  10  tammes  0.1  [1.0, 1.0]  0  1 KB  bundled"
    (tmp_path / "catalog" / "registry.json").write_text(json.dumps(registry))
    result = CliRunner().invoke(main, ["catalog", "list", "--url", str(tmp_path / "catalog")],
                                env={"SPHERECODES_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    assert not [line for line in result.stdout.splitlines() if line.startswith("forged")], result.stdout
    assert "x\\nforged-d3-k10" in result.stdout


def test_a_registry_method_holding_mathematics_is_drawn_as_written_by_bounds_plot(tmp_path):
    """A method of '$\\frac{$' in a catalog's registry: matplotlib read the legend's label as mathematics and
    raised a ValueError traceback; it is drawn as written."""
    registry = publish(tmp_path / "catalog", {CATALOG_BANK: catalog_bank_bytes(tmp_path)})
    registry["entries"][0]["method"] = "$\\frac{$"
    (tmp_path / "catalog" / "registry.json").write_text(json.dumps(registry))
    result = CliRunner().invoke(main, ["bounds", "--k", "10", "--d", "2..8", "--plot", str(tmp_path / "rho.png"),
                                       "--url", str(tmp_path / "catalog")],
                                env={"SPHERECODES_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    assert "2 catalog banks overlaid" in result.output  # the bundled auto-d3-k10 and this one
    assert (tmp_path / "rho.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- the table, run


@pytest.mark.parametrize("name", CASES.names())
def test_hostile_input_gets_one_line_and_changes_nothing(name, tmp_path, web, monkeypatch):
    run_case(CASES[name], name, tmp_path, web, monkeypatch)
