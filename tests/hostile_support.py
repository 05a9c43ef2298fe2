"""What the hostile-input tests share: bad files, a hostile web server, the table of cases and how one runs.

Each ``test_hostile_*.py`` file holds the cases of one theme (inputs, banks,
downloads and schedulers, signals and locks, names and printing) in a
:class:`Table`.  Every case builds one bad input and runs one command on it;
it must end the same way: a single ``Error:`` line on stderr that names what
is wrong, a non-zero exit status (2 for bad usage), no traceback, no Python
warning, no code from the input executed, and the folder exactly as it was —
no new file, no partial or hidden temporary file, every existing bank byte
for byte unchanged (:func:`run_case`).

Most cases run in this process through click's runner; those that need a
real process (a fifo that would block, /dev/zero, a header that asks for
26 GiB) run ``python -m spherecodes`` with a memory limit and a timeout.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import pickle
import re
import resource
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable

import h5py
import pytest
from click.testing import CliRunner

from spherecodes.cli import main

MARKER = "EXECUTED"
GOOD_BANK = "auto-d3-k10.h5"  # a certified bank shipped with spherecodes (K = 10, d = 3)
GOOD_CODE = "auto-d3-k10-s0"
CATALOG_BANK, CATALOG_ENTRY = "maxsep-d3-k10.h5", "maxsep-d3-k10"  # not in the bundled catalog
CLASSES = [f"class{i}" for i in range(10)]
HUGE_SEED = "99999999999999999999999"
SUBPROCESS_MEMORY = 4 * 2**30  # address-space limit of the subprocess cases: a 26 GiB allocation fails fast
SUBPROCESS_TIMEOUT = 60


# --------------------------------------------------------------------------- hostile file contents


class Payload:
    """Unpickling this creates the marker file: proof that code from the input ran."""

    def __init__(self, folder: Path):
        self.marker = str(folder / MARKER)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').close()",)


def pickle_payload(folder: Path) -> bytes:
    data = pickle.dumps(Payload(folder), protocol=4)
    assert data[:1] == b"\x80"
    return data


def npy_header(shape, descr="<f8", fortran=False) -> bytes:
    """A version-1.0 .npy header for ``shape``, without any data after it."""
    header = repr({"descr": descr, "fortran_order": fortran, "shape": tuple(shape)}).encode("latin1")
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def good_bank_bytes() -> bytes:
    return resources.files("spherecodes.banks").joinpath(GOOD_BANK).read_bytes()


def make_bank(folder: Path, name: str = "bank.h5", edit: Callable | None = None) -> Path:
    """A copy of the good bank, edited in place by ``edit(group_of_the_code)``."""
    path = folder / name
    path.write_bytes(good_bank_bytes())
    if edit is not None:
        with h5py.File(path, "r+") as fh:
            edit(fh["codes"][GOOD_CODE])
    return path


def class_file(folder: Path) -> Path:
    path = folder / "classes.txt"
    path.write_text("\n".join(CLASSES) + "\n")
    return path


def shift_certificate(group, by=0.5):
    cert = group["certificate"]
    cert["lo"][...] = cert["lo"][()] + by
    cert["hi"][...] = cert["hi"][()] + by
    cert.attrs["rho_lower"] = cert.attrs["rho_lower"] + by
    cert.attrs["rho_upper"] = cert.attrs["rho_upper"] + by


def replace_dataset(group, name, data):
    del group[name]
    group[name] = data


def set_attr(where: str, key: str, value):
    def edit(group):
        target = group if not where else group[where]
        if value is None:
            del target.attrs[key]
        else:
            target.attrs[key] = value

    return edit


def make_fifo(folder: Path, name: str) -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


# --------------------------------------------------------------------------- a hostile HTTP server


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers each path with the route registered for it; counts the bytes it manages to send."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        route = self.server.routes.get(self.path.split("?")[0])
        if route is None:
            self.send_error(404, "Not Found")
            return
        try:
            route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: what the size caps are for

    def send_bytes(self, body: bytes, length: int | None = None):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.write_counted(body)
        self.close_connection = True

    def stream(self, head: bytes, filler: bytes, total: int, length: int | None = None):
        """``head`` then ``filler`` repeated up to ``total`` bytes; chunked unless ``length`` is given."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        sent, block = 0, head
        while sent < total:
            block = block[: total - sent]
            if length is None:
                self.wfile.write(f"{len(block):x}\r\n".encode() + block + b"\r\n")
                self.server.sent += len(block)
            else:
                self.write_counted(block)
            sent += len(block)
            block = filler
        if length is None:
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def write_counted(self, data: bytes):
        for start in range(0, len(data), 1 << 16):
            self.wfile.write(data[start : start + (1 << 16)])
            self.server.sent += min(1 << 16, len(data) - start)

    def trickle(self, body: bytes, every_s: float):
        """``body`` one byte at a time, each well within the client's per-read timeout."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(len(body)):
            self.wfile.write(body[i : i + 1])
            self.wfile.flush()
            self.server.sent += 1
            time.sleep(every_s)
        self.close_connection = True

    def trickle_headers(self, every_s: float, count: int = 400):
        """A status line, then a header one byte at a time (each well within the per-read timeout), never ending."""
        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Padding: ")
        for _ in range(count):
            self.wfile.write(b"a")
            self.wfile.flush()
            self.server.sent += 1
            time.sleep(every_s)
        self.close_connection = True

    def hang(self):
        time.sleep(self.server.hang_s)
        self.close_connection = True


@pytest.fixture(scope="module")
def web():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.routes, httpd.sent, httpd.hang_s, httpd.requests = {}, 0, 5.0, []
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def publish(folder: Path, banks: dict[str, bytes]) -> dict:
    """A catalog folder holding ``banks`` and the registry that 'spherecodes catalog publish' writes."""
    folder.mkdir()
    for name, data in banks.items():
        (folder / name).write_bytes(data)
    result = CliRunner().invoke(main, ["catalog", "publish", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads((folder / "registry.json").read_text())


def serve_catalog(web, folder: Path, registry: dict, bank_route=None) -> str:
    """Serve ``registry`` (and each bank it lists, or ``bank_route`` for them) under a fresh prefix."""
    prefix = f"/c{len(web.routes)}/"
    web.routes[prefix + "registry.json"] = lambda h, body=json.dumps(registry).encode(): h.send_bytes(body)
    for entry in registry["entries"]:
        body = (folder / entry["file"]).read_bytes()
        web.routes[prefix + entry["file"]] = bank_route or (lambda h, body=body: h.send_bytes(body))
    return web.url.rstrip("/") + prefix


# --------------------------------------------------------------------------- the table


@dataclass
class Case:
    """One hostile input: ``setup(folder, web)`` makes the files and returns the command's arguments."""

    setup: Callable
    exit: int = 1
    says: tuple = ()  # patterns the error line must contain (case-insensitive)
    subprocess: bool = False  # run as a real process (fifos, /dev/zero, huge allocations)
    stdout: bool = False  # the command may still print its (marked) report on stdout
    check: Callable | None = None  # further checks: check(folder, web, stdout, stderr)
    env: dict = field(default_factory=dict)
    slow: bool = False  # seconds of work: left out of the fast subset (pytest -m "not slow")


class Table(dict):
    """The cases of one theme, by name; ``@table.case(name, ...)`` registers a setup function."""

    def case(self, name, **kwargs):
        assert name not in self, f"case {name!r} registered twice"

        def register(setup):
            self[name] = Case(setup, **kwargs)
            return setup

        return register

    def damaged(self, name, edit, says, command="report"):
        """A case running ``command`` on the good bank edited by ``edit(group_of_the_code)``."""
        @self.case(name, says=says)
        def _(f, web):
            return [command, make_bank(f, edit=edit)]

    def names(self):
        """The case names as pytest parameters, those that run a real process (or are slow) marked slow."""
        return [pytest.param(n, marks=pytest.mark.slow if self[n].subprocess or self[n].slow else ()) for n in self]


def catalog_bank_bytes(f: Path) -> bytes:
    """The good bank relabelled as made by maxsep: a code the bundled catalog does not have."""
    path = make_bank(f, "maxsep.h5", edit=set_attr("", "method", "maxsep"))
    data = path.read_bytes()
    path.unlink()
    return data


def catalog_of_good_bank(f, web, bank_route=None, edit_entry=None) -> str:
    registry = publish(f / "catalog", {CATALOG_BANK: catalog_bank_bytes(f)})
    if edit_entry is not None:
        edit_entry(registry["entries"][0])
        (f / "catalog" / "registry.json").write_text(json.dumps(registry))
    return serve_catalog(web, f / "catalog", registry, bank_route)


# --------------------------------------------------------------------------- running a case

def _snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (hidden ones included) with the SHA-256 of its bytes."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_fifo():
            found[rel] = "fifo"
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (SUBPROCESS_MEMORY, SUBPROCESS_MEMORY))


def _run(case_: Case, args, folder: Path, web, monkeypatch):
    env = {key: value.format(f=folder) for key, value in case_.env.items()}
    env.setdefault("SPHERECODES_CACHE", str(folder / "cache"))
    env.setdefault("SPHERECODES_BANK_URL", "")
    args = [str(a) for a in args]
    if case_.subprocess:
        proc = subprocess.run(
            [sys.executable, "-m", "spherecodes", *args], cwd=folder, env={**os.environ, **env},
            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, preexec_fn=limit_memory,
        )
        return proc.returncode, proc.stdout, proc.stderr, []
    _short_network_timeout(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, args, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        raise AssertionError("".join(traceback.format_exception(*result.exc_info)))
    shown = [w for w in caught if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    return result.exit_code, result.stdout, result.stderr, shown


def _short_network_timeout(monkeypatch):
    """Make the client give up on a silent server (or a Dask scheduler) after 1 s instead of a minute (30 s)."""
    import importlib

    import spherecodes.cluster

    monkeypatch.setattr(spherecodes.cluster, "CONNECT_TIMEOUT_S", 1)
    monkeypatch.setattr(spherecodes.cluster, "WORKERS_TIMEOUT_S", 1)

    for module in ("spherecodes.catalog.download", "spherecodes.registry"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, "TIMEOUT_S"):
            monkeypatch.setattr(mod, "TIMEOUT_S", 1)
            return
    raise AssertionError("no download timeout to shorten")


def run_case(case_: Case, name: str, tmp_path: Path, web, monkeypatch) -> None:
    """Run one case and check how it ended: one error line, the exit status, the folder unchanged."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    web.sent = 0
    web.hang_s = 3.0
    args = case_.setup(folder, web)
    before = _snapshot(folder)
    try:
        code, stdout, stderr, caught = _run(case_, args, folder, web, monkeypatch)
    finally:
        for path in folder.iterdir():  # undo chattr +i and read-only mounts so that pytest can clean up
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
            if path.is_dir() and os.path.ismount(path):
                subprocess.run(["umount", str(path)], capture_output=True)
            elif path.is_dir():
                os.chmod(path, 0o755)
    assert not (folder / MARKER).exists(), "code from the input was executed"
    assert code == case_.exit, (code, stdout, stderr)
    assert "Traceback" not in stderr + stdout
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    print(f"{name} | exit {code} | {lines[0]}")  # the table of outcomes (pytest -rP shows it)
    for pattern in case_.says:
        assert re.search(pattern, lines[0], re.IGNORECASE), f"{pattern!r} not in {lines[0]!r}"
    assert not re.search(r"\b[a-z_]+=(True|False|None)\b", lines[0]), f"names a Python argument: {lines[0]}"
    if not case_.stdout:
        assert stdout == "", stdout
    assert caught == [], [str(w.message) for w in caught]
    after = _snapshot(folder)
    # A downloaded registry may be cached; nothing else may appear, change or vanish.
    assert {k: v for k, v in after.items() if not re.fullmatch(r"cache/.*registry\.json", k)} == before
    assert not [k for k in after if re.search(r"(^|/)\..*\.tmp$", k)]
    if case_.check is not None:
        case_.check(folder, web, stdout, stderr)



def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr and len(lines) == 1 and lines[0].startswith("Error: "), stderr
    return lines[0]


