"""``spherecodes cache``: the per-user cache listed and cleared; a bundled winner's certificate kept, not recomputed."""

import json
import os

import pytest
from click.testing import CliRunner

from spherecodes.bank import read_code
from spherecodes.cache import cached_files
from spherecodes.registry import bundled_catalog, read_bundled
from spherecodes.cli import main

CATALOG_FOLDER = "example.org-banks-058a01479c2e"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache holding a downloaded catalog (registry and bank), an LP bound, and a file spherecodes did not write."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SPHERECODES_CACHE", str(root))
    (root / CATALOG_FOLDER).mkdir(parents=True)
    (root / CATALOG_FOLDER / "registry.json").write_text("{}")
    (root / CATALOG_FOLDER / "tammes-d16-k100.h5").write_bytes(b"\0" * 3000)
    (root / CATALOG_FOLDER / ".tammes-d3-k7.h5.host-1.abc.tmp").write_bytes(b"\0" * 10)
    (root / "lp-bounds").mkdir()
    (root / "lp-bounds" / "d9-k100.json").write_text("{}\n")
    (root / "notes.txt").write_text("mine")
    return root


def invoke(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def test_dir_and_list_say_what_each_file_is_and_its_size(cache):
    assert invoke("cache", "dir").output.strip() == str(cache)
    listed = json.loads(invoke("cache", "list", "--json").output)
    kinds = {os.path.basename(f["path"]): f["kind"] for f in listed["files"]}
    assert kinds == {"registry.json": "registry", "tammes-d16-k100.h5": "bank", ".tammes-d3-k7.h5.host-1.abc.tmp":
                     "unfinished write", "d9-k100.json": "LP bound", "notes.txt": "other"}
    on_disk = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    assert listed["total_bytes"] == on_disk == sum(f["size"] for f in listed["files"])
    text = invoke("cache", "list").output
    assert "bank" in text and "lp-bounds/d9-k100.json" in text and "1 bank" in text and "1 LP bound" in text


def test_clear_asks_first_and_needs_yes_without_a_terminal(cache):
    before = sorted(cache.rglob("*"))
    refused = invoke("cache", "clear")
    assert refused.exit_code == 1 and refused.output.count("\n") == 1 and "--yes" in refused.output
    assert sorted(cache.rglob("*")) == before


def test_clear_removes_only_what_spherecodes_wrote(cache):
    result = invoke("cache", "clear", "--yes")
    assert result.exit_code == 0, result.output
    assert "removed 4 files" in result.output and "notes.txt" in result.output
    assert sorted(p.name for p in cache.rglob("*")) == ["notes.txt"]  # emptied folders removed too
    assert [f.kind for f in cached_files(cache)] == ["other"]
    assert "nothing to remove" in invoke("cache", "clear", "--yes").output


def test_an_empty_or_missing_cache_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHERECODES_CACHE", str(tmp_path / "absent"))
    assert "empty" in invoke("cache", "list").output
    assert json.loads(invoke("cache", "list", "--json").output)["files"] == []


def test_a_bundled_winner_keeps_its_checked_certificate(tmp_path, monkeypatch):
    # (3, 100): auto picks the bundled tammes code, whose bank holds a certificate; the run checks it against its
    # witness as the bank is read and stores it, instead of certifying the code again.
    import spherecodes.run as run_module

    def no_certificate(*args, **kwargs):
        raise AssertionError("the bundled code was certified again")

    monkeypatch.setattr(run_module, "certify_within", no_certificate)
    monkeypatch.setattr(run_module, "one_vs_rest_distances", no_certificate)
    out = tmp_path / "b.h5"
    result = invoke("generate", "--d", 3, "--k", 100, "--out", out, "-q")
    assert result.exit_code == 0, result.output
    stored = read_code(out)  # its certificate checked against the witness again as it is read
    entry = next(e for e in bundled_catalog().entries if e.name == stored.settings["auto"]["winner"].split()[-1])
    bundled, _ = read_bundled(entry)
    assert stored.certificate is not None and stored.certificate.rho_certified
    assert stored.certificate.rho_lower == bundled.certificate.rho_lower
    assert stored.sha256 == bundled.sha256
