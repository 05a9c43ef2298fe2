"""Catalogs: publishing, the bundled catalog, and verified downloads over real HTTP."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import shutil
import subprocess
import sys
import threading
import zipfile
import zlib
from functools import partial
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import spherecodes
from spherecodes.bank import read_code, write_code
from spherecodes.code import make_code
from spherecodes.bounds import max_cos_lower_bound
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.cli import main
from spherecodes.errors import SpherecodesError
from spherecodes.catalog import catalog_cache_dir, fetch_bank, open_catalog, publish
from spherecodes.registry import REGISTRY_FILE, CatalogEntry, bundled_catalog, file_sha256, parse_registry
from spherecodes.certificate import verify_witness
from spherecodes.stats import separation_statistics

from conftest import random_code


def _certified(w, method, seed=0):
    code = make_code(w, method=method, seed=seed)
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    return code


def _spread_code(k, d, seed):
    """A quickly repelled code: a few hundred steps of gradient descent on a soft max-cos."""
    w = random_code(k, d, seed)
    for _ in range(300):
        g = w @ w.T
        np.fill_diagonal(g, -1.0)
        weights = np.exp(20.0 * (g - g.max()))
        w = w - 0.05 * weights @ w / weights.sum()
        w /= np.linalg.norm(w, axis=1, keepdims=True)
    return w


@pytest.fixture(scope="module")
def banks_dir(tmp_path_factory):
    """A folder with three certified banks: two methods at (3, 9), one at (4, 10)."""
    folder = tmp_path_factory.mktemp("banks")
    write_code(folder / "tammes-d3-k9.h5", _certified(_spread_code(9, 3, 0), "tammes"))
    write_code(folder / "maxsep-d3-k9.h5", _certified(random_code(9, 3, 1), "maxsep", seed=1))
    write_code(folder / "tammes-d4-k11.h5", _certified(_spread_code(11, 4, 2), "tammes"))
    return folder


@pytest.fixture()
def published(banks_dir, tmp_path):
    folder = tmp_path / "catalog"
    shutil.copytree(banks_dir, folder)
    cat = publish(folder)
    return folder, cat


# --------------------------------------------------------------------------- HTTP server


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; ``server.behaviour[name]`` can make a file tampered, truncated or missing."""

    def log_message(self, *args):  # keep the test output clean
        pass

    def do_GET(self):
        name = self.path.lstrip("/").split("/")[-1]
        self.server.requests.append(name)
        action = self.server.behaviour.get(name)
        if action == "missing":
            self.send_error(404, "Not Found")
            return
        if action == "forbidden":
            self.send_error(403, "Forbidden")
            return
        if action in ("tamper", "truncate"):
            data = bytearray((Path(self.directory) / name).read_bytes())
            if action == "tamper":
                data[len(data) // 2] ^= 0xFF
                body, length = bytes(data), len(data)
            else:
                body, length = bytes(data[: len(data) // 2]), len(data)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(length))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture()
def server(published):
    folder, cat = published
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(folder)))
    httpd.behaviour = {}
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}/", cat
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPHERECODES_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPHERECODES_BANK_URL", raising=False)
    return tmp_path / "cache"


def _cached_files(url):
    folder = catalog_cache_dir(url)
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# --------------------------------------------------------------------------- publishing


def test_publish_computes_every_number_from_the_stored_prototypes(published):
    folder, cat = published
    assert sorted(e.name for e in cat.entries) == ["maxsep-d3-k9", "tammes-d3-k9", "tammes-d4-k11"]
    document = json.loads((folder / REGISTRY_FILE).read_text())
    assert document["format"] == "spherecodes-catalog" and len(document["entries"]) == 3
    for entry in cat.entries:
        path = folder / entry.file
        assert entry.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert entry.size == path.stat().st_size
        code = read_code(path, entry.code)
        assert entry.max_cos == separation_statistics(code.prototypes).max_cos
        fresh = one_vs_rest_distances(code.prototypes, device="cpu")
        assert entry.rho_lower <= fresh.rho_upper + 1e-12 and fresh.rho_lower <= entry.rho_upper + 1e-12
        assert entry.rho_upper - entry.rho_lower < 1e-9 and entry.rho_certified
        bound = max_cos_lower_bound(code.d, code.k)
        assert entry.lp_bound == bound.value and entry.lp_gap == pytest.approx(code.stats.max_cos - bound.value)
        assert entry.prototypes_sha256 == code.sha256


def test_publish_best_keeps_the_tammes_and_the_better_rho_code_and_prunes_the_destination(published, tmp_path):
    folder, cat = published
    by_name = {e.name: e for e in cat.entries}
    assert by_name["tammes-d3-k9"].max_cos < by_name["maxsep-d3-k9"].max_cos
    dest = tmp_path / "dest"
    dest.mkdir()
    stale = dest / "old-d2-k3.h5"
    shutil.copy(folder / "tammes-d4-k11.h5", stale)
    (dest / REGISTRY_FILE).write_text(json.dumps({
        "format": "spherecodes-catalog", "schema_version": 1,
        "entries": [{**by_name["tammes-d4-k11"].to_dict(), "name": "old", "file": "old-d2-k3.h5"}],
    }))
    keep_mine = dest / "notes.h5"  # never listed by a registry: left alone
    keep_mine.write_bytes(b"x")
    best = publish(folder, best=True, into=dest)
    names = sorted(e.name for e in best.entries)
    # maxsep's random code has a smaller rho than the Tammes code, so it is not kept.
    assert by_name["maxsep-d3-k9"].rho_lower < by_name["tammes-d3-k9"].rho_upper
    assert names == ["tammes-d3-k9", "tammes-d4-k11"]
    assert sorted(p.name for p in dest.glob("*.h5")) == ["notes.h5", "tammes-d3-k9.h5", "tammes-d4-k11.h5"]
    assert not stale.exists() and keep_mine.exists()
    assert [e.name for e in open_catalog(str(dest)).entries] == [e.name for e in best.entries]


def test_publish_max_size_leaves_out_second_codes_largest_first(published, tmp_path):
    folder, cat = published
    sizes = {e.name: e.size for e in cat.entries}
    firsts = sizes["tammes-d3-k9"] + sizes["tammes-d4-k11"]
    fitted = publish(folder, max_size=firsts)
    assert sorted(e.name for e in fitted.entries) == ["tammes-d3-k9", "tammes-d4-k11"]
    assert [e.name for e in fitted.left_out] == ["maxsep-d3-k9"]
    assert len(open_catalog(str(folder)).entries) == 2
    assert len(publish(folder, max_size=firsts + sizes["maxsep-d3-k9"]).entries) == 3
    with pytest.raises(SpherecodesError, match="first codes alone take"):
        publish(folder, max_size=firsts - 1)
    result = CliRunner().invoke(main, ["catalog", "publish", str(folder), "--max-size", f"{firsts}B"])
    assert result.exit_code == 0 and "left out to fit" in result.output and "maxsep-d3-k9" in result.output


def test_a_compressed_budget_counts_the_deflated_files(published, tmp_path):
    folder, cat = published
    packed = {e.name: len(zlib.compress((folder / e.file).read_bytes())) for e in cat.entries}
    assert all(packed[e.name] < e.size for e in cat.entries)  # small banks are mostly HDF5 structure
    firsts = packed["tammes-d3-k9"] + packed["tammes-d4-k11"]
    fitted = publish(folder, max_size=firsts, compressed=True)
    assert [e.name for e in fitted.left_out] == ["maxsep-d3-k9"]
    assert len(publish(folder, max_size=firsts + packed["maxsep-d3-k9"], compressed=True).entries) == 3
    with pytest.raises(SpherecodesError, match="first codes alone take"):
        publish(folder, max_size=firsts - 1, compressed=True)
    with pytest.raises(SpherecodesError, match="max_size"):
        publish(folder, compressed=True)
    result = CliRunner().invoke(main, ["catalog", "publish", str(folder), "--max-size", f"{firsts}B", "--compressed"])
    assert result.exit_code == 0 and "compressed: maxsep-d3-k9" in result.output


def test_publish_refuses_uncertified_codes_and_duplicates(tmp_path):
    code = make_code(random_code(6, 3, 0), method="tammes")
    write_code(tmp_path / "a.h5", code)
    with pytest.raises(SpherecodesError, match="not certified.*certify"):
        publish(tmp_path)
    (tmp_path / "a.h5").unlink()
    write_code(tmp_path / "a.h5", _certified(random_code(6, 3, 0), "tammes"))
    write_code(tmp_path / "b.h5", _certified(random_code(6, 3, 1), "tammes", seed=1))
    with pytest.raises(SpherecodesError, match="both tammes-d3-k6"):
        publish(tmp_path)
    assert not (tmp_path / REGISTRY_FILE).exists()


def test_verify_witness_catches_a_certificate_that_does_not_check(banks_dir):
    code = read_code(banks_dir / "tammes-d3-k9.h5")
    lo, hi = verify_witness(code.prototypes, code.certificate)
    assert np.all(lo <= hi) and np.allclose(hi, code.certificate.hi, atol=1e-12)
    cert = code.certificate
    code.certificate = type(cert)(**{**cert.__dict__, "hi": cert.hi + 1e-6})
    with pytest.raises(SpherecodesError, match="does not check"):
        verify_witness(code.prototypes, code.certificate)
    code.certificate = type(cert)(**{**cert.__dict__, "support_weights": cert.support_weights * 0.5})
    with pytest.raises(SpherecodesError, match="sum to 1"):
        verify_witness(code.prototypes, code.certificate)


def test_registry_entries_are_validated():
    good = {"format": "spherecodes-catalog", "schema_version": 1, "entries": []}
    assert parse_registry(json.dumps(good), "x").entries == ()
    with pytest.raises(SpherecodesError, match="newer"):
        parse_registry(json.dumps({**good, "schema_version": 99}), "x")
    entry = CatalogEntry("a", 3, 9, "tammes", 0, "a.h5", "a", "0" * 64, 1, 0.1, 0.5, 0.5, True, 0.0, "m", 0.1, "0" * 64)
    evil = {**entry.to_dict(), "file": "../../etc/passwd"}
    with pytest.raises(SpherecodesError, match="plain"):
        parse_registry(json.dumps({**good, "entries": [evil]}), "x")
    with pytest.raises(SpherecodesError, match="more than once"):
        parse_registry(json.dumps({**good, "entries": [entry.to_dict()] * 2}), "x")


# --------------------------------------------------------------------------- the bundled catalog


def _bundled_root() -> Path:
    return Path(str(resources.files("spherecodes.banks")))


def test_bundled_registry_lists_exactly_the_shipped_banks_with_matching_hashes():
    root = _bundled_root()
    assert (root / REGISTRY_FILE).is_file(), "the bundled catalog must ship its registry"
    cat = bundled_catalog()
    listed = {e.file for e in cat.entries}
    shipped = {p.name for p in root.glob("*.h5")}
    assert listed == shipped, f"unlisted: {shipped - listed}, missing: {listed - shipped}"
    for entry in cat.entries:
        assert file_sha256(root / entry.file) == entry.sha256, entry.name
        assert (root / entry.file).stat().st_size == entry.size, entry.name
    # The cap is on the wheel: zip the banks as a wheel stores them (deflated) and count the archive.
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for path in sorted(root.iterdir()):
            if path.is_file():
                wheel.write(path, f"spherecodes/banks/{path.name}")
    assert archive.getbuffer().nbytes < 25_000_000, "the bundled catalog must add under 25 MB to the wheel"


@pytest.mark.slow
@pytest.mark.parametrize("entry", bundled_catalog().entries, ids=lambda e: e.name)
def test_every_bundled_bank_passes_the_certificate(entry):
    code = read_code(_bundled_root() / entry.file, entry.code)
    assert (code.d, code.k, code.method, code.sha256) == (entry.d, entry.k, entry.method, entry.prototypes_sha256)
    # BLAS picks its summation order by CPU, so another machine's max-cos may differ from the one
    # published: each is within d·2⁻⁵³ of the exact inner product of unit vectors (Higham's bound for
    # a length-d dot product), so the two agree within twice that.
    assert separation_statistics(code.prototypes).max_cos == pytest.approx(entry.max_cos, rel=0, abs=2 * code.d * 2.0**-53)
    lo, hi = verify_witness(code.prototypes, code.certificate)  # the stored witness, re-evaluated against all K prototypes
    assert lo.min() == pytest.approx(entry.rho_lower, abs=1e-12) and hi.min() == pytest.approx(entry.rho_upper, abs=1e-12)
    assert entry.rho_certified and code.certificate.certified
    if code.k * code.d <= 5_000:  # small banks: solve the QPs again from scratch
        fresh = one_vs_rest_distances(code.prototypes, device="cpu")
        assert fresh.rho_lower == pytest.approx(entry.rho_lower, abs=1e-9)
    assert entry.lp_gap == pytest.approx(entry.max_cos - max_cos_lower_bound(code.d, code.k).value)


def test_the_bundled_checks_would_catch_a_damaged_catalog(published):
    """The checks above, run on a catalog with an altered bank, fail: they are not vacuous."""
    folder, cat = published
    bundled = {e.name for e in bundled_catalog().entries}  # fetch searches the bundled catalog first
    entry = next(e for e in cat.entries if e.name not in bundled)
    data = bytearray((folder / entry.file).read_bytes())
    data[-100] ^= 0x01
    (folder / entry.file).write_bytes(bytes(data))
    assert file_sha256(folder / entry.file) != entry.sha256
    with pytest.raises(SpherecodesError, match=f"SHA-256 expected {entry.sha256}, got {file_sha256(folder / entry.file)}"):
        fetch_bank(entry.name, url=str(folder))


def test_pyproject_packages_every_subpackage_and_the_banks():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]
    root = Path(spherecodes.__file__).parent
    subpackages = {"spherecodes"} | {
        "spherecodes." + ".".join(p.parent.relative_to(root).parts) for p in root.rglob("__init__.py") if p.parent != root
    }
    assert subpackages | {"spherecodes.banks"} == set(config["packages"])
    assert config["package-dir"]["spherecodes.banks"] == "banks"
    assert {"*.json", "*.h5"} <= set(config["package-data"]["spherecodes.banks"])



def test_the_registry_and_the_catalog_names_load_without_the_catalog_machinery():
    # generate reads the bundled catalog through spherecodes.registry; neither that nor a name the catalog
    # package re-exports from it loads the fetching and building modules (which call generate themselves).
    script = ("import sys\nfrom spherecodes.registry import bundled_catalog\nbundled_catalog()\n"
              "import spherecodes.catalog\nspherecodes.catalog.REGISTRY_FILE, spherecodes.catalog.CatalogEntry\n"
              "print(sorted(m for m in sys.modules if m.startswith('spherecodes.catalog') or m.endswith('generation')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['spherecodes.catalog']"]


def test_the_catalog_names_are_the_functions_even_where_a_module_is_named_alike():
    import spherecodes.catalog
    import spherecodes.catalog.build  # loads the module that writes registries as well
    from spherecodes.catalog import publishing

    assert spherecodes.catalog.publish is publishing.publish and callable(spherecodes.catalog.publish)
    assert spherecodes.catalog.bundled_catalog is bundled_catalog
    assert set(spherecodes.catalog.__all__) <= set(dir(spherecodes.catalog))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        spherecodes.catalog.nothing

# --------------------------------------------------------------------------- HTTP catalogs


def test_download_verifies_caches_and_then_hits_the_cache(server):
    httpd, url, cat = server
    entry = next(e for e in cat.entries if e.name == "tammes-d4-k11")
    first = fetch_bank(d=4, k=11, url=url)
    assert first.downloaded and first.source == url and first.entry.name == entry.name
    assert first.path == catalog_cache_dir(url) / entry.file
    assert file_sha256(first.path) == entry.sha256
    assert first.code.certificate is not None and first.code.sha256 == entry.prototypes_sha256
    assert httpd.requests.count(entry.file) == 1
    second = fetch_bank("tammes-d4-k11", url=url)
    assert not second.downloaded and httpd.requests.count(entry.file) == 1
    np.testing.assert_array_equal(second.code.prototypes, first.code.prototypes)


def test_offline_reads_only_the_cache(server):
    httpd, url, cat = server
    # (3, 9) has a bundled code, which fetch would serve first: the served catalog's others are asked for.
    with pytest.raises(SpherecodesError, match="not in the cache.*without --offline"):
        fetch_bank(d=4, k=11, url=url, offline=True)
    fetch_bank(d=4, k=11, url=url)
    httpd.shutdown()  # the server is gone: only the cache can answer now
    code = spherecodes.fetch(d=4, k=11, url=url, offline=True)
    assert code.method == "tammes"
    with pytest.raises(SpherecodesError, match="not in the cache"):
        fetch_bank("maxsep-d3-k9", url=url, offline=True)


def test_a_missing_name_says_which_catalogs_were_searched(server, monkeypatch):
    _httpd, url, _cat = server
    searched = r"no bank named 'tammes-d4-k999' in the bundled catalog or in http"
    with pytest.raises(SpherecodesError, match=searched) as err:
        fetch_bank("tammes-d4-k999", url=url)
    assert "no other catalog is configured" not in str(err.value)
    monkeypatch.delenv("SPHERECODES_BANK_URL", raising=False)
    with pytest.raises(SpherecodesError, match=r"in the bundled catalog \(no other catalog is configured"):
        fetch_bank("tammes-d4-k999")


def test_a_tampered_download_is_refused_and_not_cached(server):
    httpd, url, cat = server
    entry = next(e for e in cat.entries if e.name == "tammes-d4-k11")  # not in the bundled catalog, which is first
    httpd.behaviour[entry.file] = "tamper"
    data = bytearray((Path(httpd.RequestHandlerClass.keywords["directory"]) / entry.file).read_bytes())
    data[len(data) // 2] ^= 0xFF
    got = hashlib.sha256(bytes(data)).hexdigest()
    with pytest.raises(SpherecodesError) as err:
        fetch_bank(d=4, k=11, url=url)
    assert f"SHA-256 expected {entry.sha256}, got {got}" in str(err.value)
    assert "nothing was cached" in str(err.value)
    assert _cached_files(url) == [REGISTRY_FILE]


def test_a_404_says_so_and_caches_nothing(server):
    httpd, url, cat = server
    httpd.behaviour["tammes-d4-k11.h5"] = "missing"
    with pytest.raises(SpherecodesError, match=r"HTTP 404 Not Found; nothing was cached"):
        fetch_bank(d=4, k=11, url=url)
    assert _cached_files(url) == [REGISTRY_FILE]
    httpd.behaviour[REGISTRY_FILE] = "forbidden"
    with pytest.raises(SpherecodesError, match=r"registry.json failed: HTTP 403"):
        spherecodes.catalog_entries(url)


def test_a_truncated_transfer_is_refused_and_not_cached(server):
    httpd, url, cat = server
    entry = next(e for e in cat.entries if e.name == "tammes-d4-k11")
    httpd.behaviour[entry.file] = "truncate"
    with pytest.raises(SpherecodesError) as err:
        fetch_bank(d=4, k=11, url=url)
    message = str(err.value)
    assert "nothing was cached" in message
    assert f"cut short after {entry.size // 2} of {entry.size} bytes" in message or (
        f"got {entry.size // 2} bytes where the catalog lists {entry.size}" in message
    )
    assert _cached_files(url) == [REGISTRY_FILE]


def test_a_damaged_cached_file_is_replaced(server):
    httpd, url, cat = server
    first = fetch_bank(d=4, k=11, url=url)
    first.path.write_bytes(b"not a bank")
    again = fetch_bank(d=4, k=11, url=url)
    assert again.downloaded and file_sha256(again.path) == first.entry.sha256


def test_unreachable_server(published, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SpherecodesError, match="cannot reach"):
        spherecodes.catalog_entries(f"http://127.0.0.1:{port}/")


# --------------------------------------------------------------------------- the CLI


def test_cli_fetch_from_an_http_catalog(server, tmp_path, monkeypatch):
    httpd, url, cat = server
    monkeypatch.setenv("SPHERECODES_BANK_URL", url)
    runner = CliRunner()
    out = tmp_path / "mine.h5"
    result = runner.invoke(main, ["fetch", "--d", "4", "--k", "11", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "downloaded from" in result.output and "SHA-256 verified" in result.output
    assert "rho" in result.output and "max-cos" in result.output
    assert read_code(out).k == 11
    result = runner.invoke(main, ["fetch", "tammes-d4-k11", "--offline", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["fetched"]["downloaded"] is False and data["fetched"]["entry"]["name"] == "tammes-d4-k11"
    assert data["rho"]["certified"] is True
    listing = runner.invoke(main, ["catalog", "list", "--json"])
    assert listing.exit_code == 0, listing.output
    assert sorted(e["name"] for e in json.loads(listing.output) if e["source"] == url) == sorted(
        e.name for e in cat.entries
    )
    text = runner.invoke(main, ["catalog", "list"]).output
    assert "tammes-d3-k9" in text and "rho interval" in text


def test_cli_fetch_errors_are_one_line(server, tmp_path):
    httpd, url, cat = server
    runner = CliRunner()
    result = runner.invoke(main, ["fetch", "--d", "64", "--k", "999", "--method", "softmax", "--url", url])
    assert result.exit_code == 1
    assert "spherecodes generate --d 64 --k 999 --method softmax" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    httpd.behaviour["tammes-d4-k11.h5"] = "tamper"
    result = runner.invoke(main, ["fetch", "--d", "4", "--k", "11", "--url", url, "--out", str(tmp_path / "x.h5")])
    assert result.exit_code == 1 and "SHA-256 expected" in result.output
    assert not (tmp_path / "x.h5").exists()
    result = runner.invoke(main, ["fetch", "--d", "4"])
    assert result.exit_code == 2


def test_cli_fetch_closed_form_needs_no_catalog(tmp_path):
    result = CliRunner().invoke(main, ["fetch", "--d", "50", "--k", "100", "--url", "", "--out", str(tmp_path / "c.h5")])
    assert result.exit_code == 0, result.output
    assert "closed form" in result.output
    assert read_code(tmp_path / "c.h5").method == "cross-polytope"
    # It is the optimal Softmax Code too, and an optimiser is never needed for it.
    assert spherecodes.fetch(d=50, k=100, method="softmax", url="").method == "cross-polytope"
    assert spherecodes.fetch(d=2, k=7, url="").method == "polygon"
    with pytest.raises(SpherecodesError, match="method maxsep.*spherecodes generate --d 50 --k 100 --method maxsep"):
        spherecodes.fetch(d=50, k=100, method="maxsep", url="")
    # A closed form that does not construct K points in R^d: generate could not make it either.
    with pytest.raises(SpherecodesError, match=r"the closed form etf does not construct 10 points in R\^3 \(closed "
                                               r"forms that do: none\); 'spherecodes generate --d 3 --k 10' makes"):
        spherecodes.fetch(d=3, k=10, method="etf", url="")


def test_cli_publish(banks_dir, tmp_path):
    dest = tmp_path / "out"
    result = CliRunner().invoke(main, ["catalog", "publish", str(banks_dir), "--best", "--into", str(dest)])
    assert result.exit_code == 0, result.output
    assert "2 codes in 2 files" in result.output
    assert not (banks_dir / REGISTRY_FILE).exists()
    assert {e.name for e in open_catalog(str(dest)).entries} == {"tammes-d3-k9", "tammes-d4-k11"}
    result = CliRunner().invoke(main, ["catalog", "publish", str(tmp_path / "none")])
    assert result.exit_code == 1 and "not a directory" in result.output
