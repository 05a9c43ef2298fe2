"""Hostile networks: catalogs and downloads, registries, and Dask schedulers.

Downloads are capped at their listed size and deadline, registries parsed with bounds, and a
scheduler address is checked (and trusted only where it may be) before anything is sent or read.

The cases of the table run through :func:`hostile_support.run_case`; the
tests after it check what must still work, and what the table cannot.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hostile_support import (
    CATALOG_BANK, CATALOG_ENTRY, Table, catalog_bank_bytes, catalog_of_good_bank, good_bank_bytes, make_bank,
    one_error_line, publish, run_case,
)
from hostile_support import web  # noqa: F401 (the fixture)
from spherecodes.cli import main

CASES = Table()
case = CASES.case


# ---- downloads: hard caps at the declared size, size and hash both checked, nothing partial cached


def _cache_is_clean(f, web, stdout, stderr):
    banks = [p for p in (f / "cache").rglob("*") if p.is_file() and p.name != "registry.json"]
    assert banks == [], banks


def _names_listed_size(f, web, stdout, stderr):
    _cache_is_clean(f, web, stdout, stderr)
    listed = json.loads((f / "catalog" / "registry.json").read_text())["entries"][0]["size"]
    assert str(listed) in stderr, (listed, stderr)


def _sent_at_most(limit, bank=True):
    def check(f, web, stdout, stderr):
        if bank:
            _names_listed_size(f, web, stdout, stderr)
        assert web.sent <= limit, f"the server sent {web.sent} bytes before the client hung up"

    return check


@case("download-streams-100-MiB-chunked", says=("more than",), check=_sent_at_most(8 * 2**20))
def _(f, web):
    body = good_bank_bytes()
    return ["fetch", CATALOG_ENTRY, "--url",
            catalog_of_good_bank(f, web, lambda h: h.stream(body, bytes(1 << 16), 100 * 2**20))]


@case("download-content-length-100-MiB", says=("more than|larger",), check=_sent_at_most(8 * 2**20))
def _(f, web):
    body = good_bank_bytes()
    return ["fetch", CATALOG_ENTRY, "--url",
            catalog_of_good_bank(f, web, lambda h: h.stream(body, bytes(1 << 16), 100 * 2**20, length=100 * 2**20))]


@case("download-size-wrong-sha-right", says=("size",), check=_names_listed_size)
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url",
            catalog_of_good_bank(f, web, edit_entry=lambda e: e.update(size=e["size"] + 100))]


@case("directory-catalog-size-wrong-sha-right", says=("size",), check=_names_listed_size)
def _(f, web):
    catalog_of_good_bank(f, web, edit_entry=lambda e: e.update(size=e["size"] - 1))
    return ["fetch", CATALOG_ENTRY, "--url", f / "catalog"]


@case("registry-streams-200-MiB", says=("registry", "MiB"), check=_sent_at_most(48 * 2**20, bank=False))
def _(f, web):
    prefix = f"/r{len(web.routes)}/"
    web.routes[prefix + "registry.json"] = lambda h: h.stream(b'{"entries": [', b" " * (1 << 16), 200 * 2**20)
    return ["catalog", "list", "--url", web.url.rstrip("/") + prefix]


@case("registry-claims-200-MiB", says=("registry", "MiB"), check=_sent_at_most(48 * 2**20, bank=False))
def _(f, web):
    prefix = f"/r{len(web.routes)}/"
    web.routes[prefix + "registry.json"] = lambda h: h.stream(b'{"entries": [', b" " * (1 << 16), 200 * 2**20,
                                                                length=200 * 2**20)
    return ["catalog", "list", "--url", web.url.rstrip("/") + prefix]


@case("registry-entry-size-absurd", says=("size",))
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url", catalog_of_good_bank(f, web, edit_entry=lambda e: e.update(size=10**30))]


@case("download-read-timeout", says=("no answer|timed out",), check=_cache_is_clean)
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url", catalog_of_good_bank(f, web, bank_route=lambda h: h.hang())]


@case("registry-read-timeout", says=("no answer|timed out", "registry"))
def _(f, web):
    prefix = f"/r{len(web.routes)}/"
    web.routes[prefix + "registry.json"] = lambda h: h.hang()
    return ["catalog", "list", "--url", web.url.rstrip("/") + prefix]


@case("registry-one-byte-at-a-time-past-the-deadline", says=("registry.json", "deadline of 1.5 s",
                                                           "SPHERECODES_DOWNLOAD_DEADLINE"),
      env={"SPHERECODES_DOWNLOAD_DEADLINE": "1.5"}, check=_sent_at_most(100, bank=False))
def _(f, web):
    web.routes["/trickle/registry.json"] = lambda h: h.trickle(b'{"entries": []}' + b" " * 200, every_s=0.05)
    return ["catalog", "list", "--url", web.url + "trickle/"]


@case("registry-headers-one-byte-at-a-time-past-the-deadline", says=("registry.json", "deadline of 1.5 s",
                                                                  "SPHERECODES_DOWNLOAD_DEADLINE"),
      env={"SPHERECODES_DOWNLOAD_DEADLINE": "1.5"}, check=_sent_at_most(100, bank=False))
def _(f, web):
    """The deadline did not cover the response headers: a server dripping them ran for as long as it liked."""
    web.routes["/slow-headers/registry.json"] = lambda h: h.trickle_headers(every_s=0.05)
    return ["catalog", "list", "--url", web.url + "slow-headers/"]


@case("bank-headers-one-byte-at-a-time", says=("maxsep-d3-k10.h5", "response headers did not arrive within 2 s"),
      check=_sent_at_most(1200, bank=False))  # the registry (some 800 bytes) and 2 s of header bytes
def _(f, web):
    """Without a deadline of its own, the headers must arrive within twice the wait for a read (cut to 1 s here)."""
    return ["fetch", CATALOG_ENTRY, "--url",
            catalog_of_good_bank(f, web, bank_route=lambda h: h.trickle_headers(every_s=0.05))]


@case("registry-content-length-negative", says=("registry.json", "'-5'", "not a number of bytes"))
def _(f, web):
    """A reader trusting the length would wait for the read timeout (60 s) for bytes that never come."""
    def negative(h):
        h.send_response(200)
        h.send_header("Content-Length", "-5")
        h.end_headers()
        h.write_counted(b'{"entries": []}')
        h.close_connection = True

    web.routes["/negative/registry.json"] = negative
    return ["catalog", "list", "--url", web.url + "negative/"]


@case("registry-unreachable", says=("cannot reach",))
def _(f, web):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ["catalog", "list", "--url", f"http://127.0.0.1:{port}/"]


@case("cache-path-is-a-file", says=("cache", "SPHERECODES_CACHE"), env={"SPHERECODES_CACHE": "{f}/cachefile"})
def _(f, web):
    (f / "cachefile").write_text("I am a file")
    return ["fetch", CATALOG_ENTRY, "--url", catalog_of_good_bank(f, web)]



@case("cache-on-read-only-file-system", says=("cache", "read-only|not writable"),
      env={"SPHERECODES_CACHE": "{f}/readonly"})
def _(f, web):
    url = catalog_of_good_bank(f, web)
    (f / "readonly").mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(f / "readonly")],
                             capture_output=True)
    if mounted.returncode != 0:
        os.chmod(f / "readonly", 0o555)
        if os.access(f / "readonly", os.W_OK):
            pytest.skip("neither a read-only mount nor a read-only directory can be made here")
    return ["fetch", CATALOG_ENTRY, "--url", url]


# ---- registries: what Python's JSON parser would turn into a traceback


def registry_with(f, edit=None, text=None) -> Path:
    """A catalog folder whose registry lists the good bank, its JSON text then edited (``text(json_text)``)."""
    registry = publish(f / "catalog", {CATALOG_BANK: catalog_bank_bytes(f)})
    if edit is not None:
        edit(registry["entries"][0])
    document = json.dumps(registry)
    (f / "catalog" / "registry.json").write_text(text(document) if text else document)
    return f / "catalog"


@case("registry-integer-of-5000-digits", says=("registry", "5000 digits"))
def _(f, web):
    catalog = registry_with(f, edit=lambda e: e.update(size=-7), text=lambda t: t.replace("-7", "9" * 5000))
    return ["catalog", "list", "--url", catalog]


@case("registry-nested-200000-deep", says=("registry", "nests"))
def _(f, web):
    catalog = registry_with(f, edit=lambda e: e.update(seed=-7),
                             text=lambda t: t.replace("-7", "[" * 200_000 + "]" * 200_000))
    return ["catalog", "list", "--url", catalog]


@case("registry-1-and-400-zeros", says=("registry", "max_cos|finite"))
def _(f, web):
    catalog = registry_with(f, edit=lambda e: e.update(max_cos=-7), text=lambda t: t.replace("-7", "1" + "0" * 400))
    return ["catalog", "list", "--url", catalog]


@case("registry-1e400", says=("registry", "1e400", "float64"))
def _(f, web):
    catalog = registry_with(f, edit=lambda e: e.update(max_cos=-7), text=lambda t: t.replace("-7", "1e400"))
    return ["fetch", CATALOG_ENTRY, "--url", catalog]


@case("registry-nan", says=("registry", "NaN"))
def _(f, web):
    catalog = registry_with(f, edit=lambda e: e["rho"].update(lower=-7), text=lambda t: t.replace("-7", "NaN"))
    return ["catalog", "list", "--url", catalog]


@case("registry-number-as-a-string", says=("registry", "damaged entry", "number"))
def _(f, web):
    return ["catalog", "list", "--url", registry_with(f, edit=lambda e: e.update(max_cos="nan"))]


@case("registry-of-34000-entries-one-repeated", says=("registry", "more than once", "tammes-d5-k1234"), slow=True)
def _(f, web):
    """A long registry is checked in one pass (a pairwise check of its names took minutes)."""
    catalog = registry_with(f)
    registry = json.loads((catalog / "registry.json").read_text())
    keep = ("d", "k", "method", "seed", "code", "sha256", "size", "max_cos", "rho", "max_cos_lower_bound",
            "prototypes_sha256")  # what an entry must have: 34,000 of them within the 16 MiB a registry may take
    template = {key: registry["entries"][0][key] for key in keep}
    template.update(max_cos=0.4, rho={"lower": 0.6, "upper": 0.6, "certified": True},
                    max_cos_lower_bound={"value": 0.1, "method": "LP", "gap": 0.3})
    registry["entries"] = [{**template, "name": f"tammes-d{3 + i // 5000}-k{10 + i % 5000}", "file": f"b{i}.h5"}
                           for i in range(34_000)] + [{**template, "name": "tammes-d5-k1234", "file": "b.h5"}]
    (catalog / "registry.json").write_text(json.dumps(registry, separators=(",", ":")))  # within the 16 MiB
    return ["catalog", "list", "--url", catalog]


# ---- a Dask scheduler: its address checked where it enters, an unreachable one given up in bounded time


def _scheduler_case(name, address, says, command="certify"):
    @case(name, exit=2, says=("--scheduler",) + says)
    def _(f, web):
        if command == "certify":
            return ["certify", make_bank(f), "--scheduler", address, "-q"]
        return ["catalog", "build", "--grid", "d=3 k=7", "--out", f / "built", "--scheduler", address]


_scheduler_case("certify-scheduler-garbage", "garbage", ("SCHEME://HOST:PORT", "'garbage'"))
_scheduler_case("certify-scheduler-port-99999", "tcp://127.0.0.1:99999", ("1..65535",))
_scheduler_case("certify-scheduler-http", "http://127.0.0.1:8786", ("tcp, tls",))
_scheduler_case("certify-scheduler-empty", "", ("''",))
_scheduler_case("catalog-build-scheduler-no-port", "tcp://", ("SCHEME://HOST:PORT",), command="catalog")


@case("certify-scheduler-unreachable", says=("cannot connect", "127.0.0.1", "1 s"))
def _(f, web):
    with socket.socket() as s:  # a port nobody listens on (the connect timeout is cut to 1 s here)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ["certify", make_bank(f), "--scheduler", f"tcp://127.0.0.1:{port}", "-q"]


@case("certify-scheduler-answers-garbage", says=("cannot connect", "not speak Dask's protocol"))
def _(f, web):
    """Something other than Dask listens: its first bytes, read as Dask's frame length, asked for exabytes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer():
        with server:
            connection, _ = server.accept()
            with connection:
                connection.sendall(b"\xff" * 64)
                time.sleep(3)

    threading.Thread(target=answer, daemon=True).start()
    return ["certify", make_bank(f), "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}", "-q"]


def _fake_scheduler(behaviour: str) -> int:
    """A loopback port where something accepts connections and ``behaviour``s: stays silent, swallows every
    byte, or sends bytes that are no Dask frame and closes.  At most 20 connections, each held at most 10 s."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(10)

    def serve(connection):
        with connection:
            connection.settimeout(10)
            try:
                if behaviour == "swallows":
                    while connection.recv(65536):
                        pass
                elif behaviour == "breaks its stream":
                    connection.sendall(b"\x01" + bytes(7) + b"\x08" + bytes(7) + b"\xc1" * 3)
                else:
                    time.sleep(10)
            except OSError:
                pass

    def accept():
        with server:
            for _ in range(20):
                try:
                    connection, _ = server.accept()
                except OSError:
                    return
                threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return server.getsockname()[1]


def _fake_scheduler_case(name, behaviour, says, command):
    @case(name, says=says)
    def _(f, web):
        address = f"tcp://127.0.0.1:{_fake_scheduler(behaviour)}"
        if command == "certify":
            return ["certify", make_bank(f), "--scheduler", address, "-q"]
        return ["catalog", "build", "--grid", "d=3 k=7", "--out", f / "built", "--scheduler", address, "-q"]


# A scheduler that accepts and stays silent held certify and catalog build past two minutes; the handshake has
# its deadline (cut to 1 s here) as the connection has.
for _command in ("certify", "catalog"):
    _fake_scheduler_case(f"{_command}-scheduler-accepts-and-stays-silent", "stays silent",
                         ("cannot connect", "no Dask handshake within 1 s"), _command)
    _fake_scheduler_case(f"{_command}-scheduler-swallows-every-byte", "swallows",
                         ("cannot connect", "no Dask handshake within 1 s"), _command)
    _fake_scheduler_case(f"{_command}-scheduler-breaks-its-stream", "breaks its stream",
                         ("cannot connect", "not speak Dask's protocol"), _command)
    _scheduler_case(f"{_command}-scheduler-on-another-machine-untrusted", "tcp://192.0.2.7:8786",
                    ("refusing --scheduler tcp://192.0.2.7:8786", "unpickles", "--trust-scheduler"),
                    command=_command)
    _scheduler_case(f"{_command}-scheduler-tls-without-a-certificate-authority", "tls://192.0.2.7:8786",
                    ("refusing", "DASK_DISTRIBUTED__COMM__TLS__CA_FILE", "--trust-scheduler"), command=_command)


@case("trust-scheduler-without-a-scheduler", exit=2, says=("--trust-scheduler applies to --scheduler",))
def _(f, web):
    return ["certify", make_bank(f), "--trust-scheduler", "-q"]


@pytest.fixture(scope="module")
def scheduler_without_workers():
    """A real Dask scheduler on loopback that no worker ever joins."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp",
                           host="127.0.0.1")
    yield cluster.scheduler_address
    cluster.close()


@pytest.mark.parametrize("command", ["certify", "catalog"])
def test_a_scheduler_without_workers_is_one_line_not_a_wait(tmp_path, scheduler_without_workers, monkeypatch,
                                                           command):
    """catalog build waited silently for ever, certify ended in a TimeoutError traceback."""
    import spherecodes.cluster

    monkeypatch.setattr(spherecodes.cluster, "WORKERS_TIMEOUT_S", 1)
    args = (["certify", str(make_bank(tmp_path)), "-q"] if command == "certify"
            else ["catalog", "build", "--grid", "d=3 k=7", "--out", str(tmp_path / "built"), "-q"])
    result = CliRunner().invoke(main, args + ["--scheduler", scheduler_without_workers])
    assert result.exit_code == 1, result.output
    line = one_error_line(result.stderr)
    assert f"the Dask scheduler at {scheduler_without_workers} has no worker to run the tasks (none within 1 s)" \
        in line and "dask worker" in line, line


@case("registry-file-is-a-file-url", says=("file:///etc/passwd", "plain \\*\\.h5 name"))
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url", registry_with(f, edit=lambda e: e.update(file="file:///etc/passwd"))]


def test_a_download_slower_than_the_minimum_rate_is_cut_off_long_before_the_deadline(tmp_path, web, monkeypatch):
    """A bank dripped at 20 bytes/s never trips the wait for a read and took the whole 30-minute deadline; after
    the grace period (cut to 1 s here) it must keep 4 KiB/s, and is cut off."""
    import spherecodes.catalog.download as download

    monkeypatch.setattr(download, "RATE_GRACE_S", 1.0)
    monkeypatch.setenv("SPHERECODES_CACHE", str(tmp_path / "cache"))
    body = catalog_bank_bytes(tmp_path)
    url = catalog_of_good_bank(tmp_path, web, bank_route=lambda h: h.trickle(body, every_s=0.05))
    web.sent = 0
    result = CliRunner().invoke(main, ["fetch", CATALOG_ENTRY, "--url", url])
    assert result.exit_code == 1, result.output
    line = one_error_line(result.stderr)
    assert re.search(r"maxsep-d3-k10\.h5 failed: \d+ of \d+ bytes in \d+ s, slower than the 4096 bytes/s a download "
                     r"must keep after its first 1 s; nothing was cached", line), line
    assert web.sent < len(body) / 4  # cut off early, not at the end of the transfer
    assert [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()] == ["registry.json"]


# ---- secrets in a catalog URL: sent to the server, never printed or written


SECRET = "PASSW0RD-9f3c"


def _no_secret(f, web, stdout, stderr):
    assert SECRET not in stdout + stderr
    assert not [p for p in f.rglob("*") if SECRET in str(p)], "the secret is in a file name"
    assert not [p for p in f.rglob("*.json") if SECRET in p.read_text()], "the secret is in a file"


def _with_secrets(url: str) -> str:
    """``url`` with a user and password before its host and a token in its query."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://alice:{SECRET}@{rest}?token={SECRET}"


@case("fetch-url-with-a-password-and-a-token-failing", says=("HTTP 404", r"\*\*\*@127\.0\.0\.1", r"token=\*\*\*"),
      check=_no_secret)
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url", _with_secrets(catalog_of_good_bank(f, web, bank_route=lambda h: h.send_error(404)))]


@case("bank-url-variable-with-a-password-unreachable", says=("cannot reach", r"\*\*\*@127\.0\.0\.1"), check=_no_secret,
      env={"SPHERECODES_BANK_URL": f"http://alice:{SECRET}@127.0.0.1:1/banks/?token={SECRET}"})  # port 1: refused
def _(f, web):
    return ["catalog", "list"]


def test_a_token_in_the_query_reaches_every_request_and_is_never_shown(tmp_path, web, monkeypatch):
    """--url http://host/cat/?token=T: the bank's URL was built as .../?token=Tmaxsep-d3-k10.h5 (a 404); the token
    goes with the registry and the bank, and neither the output nor the cache shows it."""
    monkeypatch.setenv("SPHERECODES_CACHE", str(tmp_path / "cache"))
    url = catalog_of_good_bank(tmp_path, web)
    prefix = url.split("127.0.0.1", 1)[1].split("/", 1)[1]
    web.requests.clear()
    result = CliRunner().invoke(main, ["fetch", CATALOG_ENTRY, "--url", _with_secrets(url), "--json"])
    assert result.exit_code == 0, result.output
    assert web.requests == [f"/{prefix}registry.json?token={SECRET}", f"/{prefix}{CATALOG_BANK}?token={SECRET}"]
    _no_secret(tmp_path, web, result.stdout, result.stderr)
    listed = CliRunner().invoke(main, ["catalog", "list", "--url", _with_secrets(url), "--offline", "--json"])
    assert listed.exit_code == 0, listed.output
    assert SECRET not in listed.stdout and "***@127.0.0.1" in listed.stdout


# --------------------------------------------------------------------------- the table, run


@pytest.mark.parametrize("name", CASES.names())
def test_hostile_input_gets_one_line_and_changes_nothing(name, tmp_path, web, monkeypatch):
    run_case(CASES[name], name, tmp_path, web, monkeypatch)
