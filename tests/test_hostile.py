"""Hostile and damaged input through the command line.

Each case of the table below builds one bad input (a pickle named like a text
file, a bank whose stored numbers lie, a download larger than its catalog
says, a seed past 2**63, ...) and runs one command on it.  Every case must
end the same way: a single ``Error:`` line on stderr that names what is wrong,
a non-zero exit status (2 for bad usage), no traceback, no Python warning,
no code from the input executed, and the folder exactly as it was — no new
file, no partial or hidden temporary file, every existing bank byte for byte
unchanged.

Most cases run in this process through click's runner; those that need a
real process (a fifo that would block, /dev/zero, a header that asks for
26 GiB) run ``python -m spherecodes`` with a memory limit and a timeout.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import os
import pickle
import re
import resource
import socket
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
import numpy as np
import pytest
import torch
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


class _Payload:
    """Unpickling this creates the marker file: proof that code from the input ran."""

    def __init__(self, folder: Path):
        self.marker = str(folder / MARKER)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').close()",)


def _pickle_payload(folder: Path) -> bytes:
    data = pickle.dumps(_Payload(folder), protocol=4)
    assert data[:1] == b"\x80"
    return data


def _npy_header(shape, descr="<f8", fortran=False) -> bytes:
    """A version-1.0 .npy header for ``shape``, without any data after it."""
    header = repr({"descr": descr, "fortran_order": fortran, "shape": tuple(shape)}).encode("latin1")
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def _good_bank_bytes() -> bytes:
    return resources.files("spherecodes.banks").joinpath(GOOD_BANK).read_bytes()


def _bank(folder: Path, name: str = "bank.h5", edit: Callable | None = None) -> Path:
    """A copy of the good bank, edited in place by ``edit(group_of_the_code)``."""
    path = folder / name
    path.write_bytes(_good_bank_bytes())
    if edit is not None:
        with h5py.File(path, "r+") as fh:
            edit(fh["codes"][GOOD_CODE])
    return path


def _classes(folder: Path) -> Path:
    path = folder / "classes.txt"
    path.write_text("\n".join(CLASSES) + "\n")
    return path


def _shift_certificate(group, by=0.5):
    cert = group["certificate"]
    cert["lo"][...] = cert["lo"][()] + by
    cert["hi"][...] = cert["hi"][()] + by
    cert.attrs["rho_lower"] = cert.attrs["rho_lower"] + by
    cert.attrs["rho_upper"] = cert.attrs["rho_upper"] + by


def _replace(group, name, data):
    del group[name]
    group[name] = data


def _set_attr(where: str, key: str, value):
    def edit(group):
        target = group if not where else group[where]
        if value is None:
            del target.attrs[key]
        else:
            target.attrs[key] = value

    return edit


def _fifo(folder: Path, name: str) -> Path:
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

    def hang(self):
        time.sleep(self.server.hang_s)
        self.close_connection = True


@pytest.fixture(scope="module")
def web():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.routes, httpd.sent, httpd.hang_s = {}, 0, 5.0
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _publish(folder: Path, banks: dict[str, bytes]) -> dict:
    """A catalog folder holding ``banks`` and the registry that 'spherecodes catalog publish' writes."""
    folder.mkdir()
    for name, data in banks.items():
        (folder / name).write_bytes(data)
    result = CliRunner().invoke(main, ["catalog", "publish", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads((folder / "registry.json").read_text())


def _serve_catalog(web, folder: Path, registry: dict, bank_route=None) -> str:
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


CASES: dict[str, Case] = {}


def case(name, **kwargs):
    def register(setup):
        CASES[name] = Case(setup, **kwargs)
        return setup

    return register


# ---- code execution: nothing is ever unpickled unless the user names the gensim format


@case("pickle-as-glove-txt-assign", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "glove.6B.300d.txt").write_bytes(_pickle_payload(f))
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "glove.6B.300d.txt"]


@case("pickle-as-glove-txt-privileged", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "glove.6B.300d.txt").write_bytes(_pickle_payload(f))
    return ["generate", "--d", "3", "--method", "privileged", "--classes", _classes(f),
            "--embeddings", f / "glove.6B.300d.txt", "--out", f / "new.h5"]


@case("pickle-as-glove-txt-report", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "glove.6B.300d.txt").write_bytes(_pickle_payload(f))
    return ["report", _bank(f), "--classes", _classes(f), "--embeddings", f / "glove.6B.300d.txt"]


@case("pickle-gzipped-as-glove", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "vectors.txt.gz").write_bytes(gzip.compress(_pickle_payload(f)))
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt.gz"]


@case("pickle-protocol-0-as-glove", says=("embedding",))
def _(f, web):
    (f / "vectors.txt").write_bytes(pickle.dumps(_Payload(f), protocol=0))
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt"]


@case("torch-pickle-payload", says=(r"evil\.pt", "tensor"))
def _(f, web):
    torch.save({"prototypes": _Payload(f)}, f / "evil.pt")
    return ["certify", f / "evil.pt"]


@case("npy-object-array-payload", says=(r"evil\.npy", "object"))
def _(f, web):
    np.save(f / "evil.npy", np.array([_Payload(f), 1], dtype=object), allow_pickle=True)
    return ["certify", f / "evil.npy"]


@case("npz-named-npy", says=(r"evil\.npy", r"\.npy"))
def _(f, web):
    np.savez(f / "evil.npz", a=np.array([_Payload(f)], dtype=object), b=np.eye(3))
    (f / "evil.npz").rename(f / "evil.npy")
    return ["certify", f / "evil.npy"]


@case("class-means-object-array-payload", says=("--class-means|means", "object"))
def _(f, web):
    np.save(f / "means.npy", np.array([_Payload(f), 1], dtype=object), allow_pickle=True)
    return ["assign", _bank(f), "--class-means", f / "means.npy"]


@case("npy-header-with-code", says=(r"x\.npy",))
def _(f, web):
    header = b"{'descr': __import__('os').system('touch " + str(f / MARKER).encode() + b"'), 'shape': (3, 3)}"
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    (f / "x.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(72))
    return ["certify", f / "x.npy"]


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
    return ["report", _bank(f, edit=_shift_certificate)]


@case("shifted-certificate-report-json", says=("certificate", "does not check"), stdout=True, check=_no_false_rho)
def _(f, web):
    return ["report", _bank(f, edit=_shift_certificate), "--json"]


@case("shifted-certificate-certify", says=("stored certificate", "does not check"), stdout=True)
def _(f, web):
    return ["certify", _bank(f, edit=_shift_certificate), "--quiet"]


@case("one-class-certificate-raised", says=("certificate", "does not check", "class 3"), stdout=True,
      check=_no_false_rho)
def _(f, web):
    def edit(group):
        lo = group["certificate"]["lo"][()]
        lo[3] += 1e-6
        group["certificate"]["lo"][...] = lo

    return ["report", _bank(f, edit=edit)]


@case("shifted-certificate-assign", says=("certificate", "does not check"))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((10, 3)))
    return ["assign", _bank(f, edit=_shift_certificate), "--class-means", f / "means.npy"]


@case("shifted-certificate-fetch", says=("certificate", "does not check"))
def _(f, web):
    registry = _publish(f / "catalog", {CATALOG_BANK: _catalog_bank_bytes(f)})
    bank = f / "catalog" / CATALOG_BANK
    with h5py.File(bank, "r+") as fh:
        _shift_certificate(fh["codes"][GOOD_CODE])
    data = bank.read_bytes()
    registry["entries"][0].update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (f / "catalog" / "registry.json").write_text(json.dumps(registry))
    return ["fetch", CATALOG_ENTRY, "--url", _serve_catalog(web, f / "catalog", registry)]


# ---- damaged banks: one line naming the dataset or attribute at fault


def _damaged(name, edit, says, command="report"):
    @case(name, says=says)
    def _(f, web):
        return [command, _bank(f, edit=edit)]


_damaged("bank-stats-group-deleted", lambda g: g.__delitem__("stats"), ("stats",))
_damaged("bank-stats-group-deleted-ls", lambda g: g.__delitem__("stats"), ("stats",), command="ls")
_damaged("bank-certificate-lo-deleted", lambda g: g["certificate"].__delitem__("lo"), ("certificate/lo",))
_damaged("bank-certificate-lo-wrong-shape", lambda g: _replace(g["certificate"], "lo", np.zeros(3)),
         ("certificate/lo",))
_damaged("bank-stats-max-cos-deleted", _set_attr("stats", "max_cos", None), ("max_cos",))
_damaged("bank-stats-max-cos-a-string", _set_attr("stats", "max_cos", "large"), ("max_cos",))
_damaged("bank-stats-max-cos-false", _set_attr("stats", "max_cos", -0.9), ("max_cos",))
_damaged("bank-settings-not-json", _set_attr("", "settings", "{not json"), ("settings",))
_damaged("bank-settings-a-list", _set_attr("", "settings", "[1, 2]"), ("settings",))
_damaged("bank-seed-a-string", _set_attr("", "seed", "seven"), ("seed",))
_damaged("bank-seed-past-2-63", _set_attr("", "seed", np.uint64(2**64 - 1)), ("seed",))
_damaged("bank-k-a-string", _set_attr("", "k", "ten"), ("k|shape",))
_damaged("bank-support-indices-out-of-range",
         lambda g: _replace(g["certificate"], "support_indices", np.full(g["certificate/support_indices"].shape, 99)),
         ("support_indices",))
_damaged("bank-support-indices-float",
         lambda g: _replace(g["certificate"], "support_indices", g["certificate/support_indices"][()] + 0.5),
         ("support_indices",))
_damaged("bank-certificate-tol-deleted", _set_attr("certificate", "tol", None), ("tol",))
_damaged("bank-certificate-duplicates-not-json", _set_attr("certificate", "duplicates", "[[0,"), ("duplicates",))
_damaged("bank-nearest-index-out-of-range",
         lambda g: _replace(g["stats"], "nearest_index", np.full(10, 1000)), ("nearest_index",))
_damaged("bank-nearest-cos-wrong-length", lambda g: _replace(g["stats"], "nearest_cos", np.zeros(4)),
         ("nearest_cos",))
_damaged("bank-labels-integers", lambda g: g.create_dataset("labels", data=np.arange(10)), ("labels",))


_damaged("bank-support-weights-nan",
         lambda g: _replace(g["certificate"], "support_weights", np.full(g["certificate/support_weights"].shape, np.nan)),
         ("support_weights", "NaN"))
_damaged("bank-rattlers-invented", lambda g: _replace(g["stats"], "rattlers", np.array([0, 1])), ("rattlers",))
_damaged("bank-prototypes-float32",
         lambda g: _replace(g, "prototypes", g["prototypes"][()].astype(np.float32)), ("prototypes", "float64"))


@case("word2vec-header-claims-a-billion-words", says=(r"vectors\.txt", "1000000000"))
def _(f, web):
    (f / "vectors.txt").write_text("1000000000 300\n" + "cat " + " ".join(["0.1"] * 300) + "\n")
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt"]


@case("bank-prototypes-external-link", says=("prototypes", "link"))
def _(f, web):
    def edit(group):
        with h5py.File(f / "other.h5", "w") as other:
            other["data"] = group["prototypes"][()]
        _replace(group, "prototypes", h5py.ExternalLink(str(f / "other.h5"), "/data"))

    return ["report", _bank(f, edit=edit)]


@case("bank-prototypes-external-storage", says=("prototypes", "outside"))
def _(f, web):
    def edit(group):
        data = group["prototypes"][()]
        (f / "raw.bin").write_bytes(data.tobytes())
        del group["prototypes"]
        group.create_dataset("prototypes", shape=data.shape, dtype="<f8", external=[(str(f / "raw.bin"), 0, data.nbytes)])

    return ["report", _bank(f, edit=edit)]


@case("bank-truncated", says=("bank.h5", "damaged|truncated"))
def _(f, web):
    data = _good_bank_bytes()
    (f / "bank.h5").write_bytes(data[: len(data) // 2])
    return ["report", f / "bank.h5"]


# ---- numbers at the boundary: seeds, times, tolerances, sizes, URLs and methods


@case("generate-seed-past-2-63", exit=2, says=("--seed", "9223372036854775807"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--method", "tammes", "--steps", "20", "--restarts", "1",
            "--seed", HUGE_SEED, "--out", f / "new.h5"]


@case("assign-seed-past-2-63", exit=2, says=("--seed",))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((10, 3)))
    return ["assign", _bank(f), "--class-means", f / "means.npy", "--seed", HUGE_SEED]


@case("catalog-build-seed-past-2-63", exit=2, says=("--seed",))
def _(f, web):
    return ["catalog", "build", "--grid", "d=3 k=7", "--out", f / "built", "--seed", HUGE_SEED]


@case("time-limit-nan", exit=2, says=("--time-limit", "nan"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--method", "tammes", "--time-limit", "nan", "--out", f / "new.h5"]


@case("time-limit-infinite", exit=2, says=("--time-limit", "inf"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--method", "tammes", "--time-limit", "inf", "--out", f / "new.h5"]


@case("certify-tol-nan", exit=2, says=("--tol",))
def _(f, web):
    return ["certify", _bank(f), "--tol", "nan"]


@case("semantic-weight-nan", exit=2, says=("--semantic-weight",))
def _(f, web):
    return ["generate", "--d", "3", "--method", "privileged", "--classes", _classes(f), "--embeddings",
            f / "none.txt", "--semantic-weight", "nan", "--out", f / "new.h5"]


@case("max-memory-overflows", exit=2, says=("--max-memory",), subprocess=True)
def _(f, web):
    return ["certify", _bank(f), "--max-memory", "1e999GiB"]


@case("report-max-memory-too-small", exit=1, says=("reading code", "--max-memory"))
def _(f, web):
    return ["report", _bank(f), "--max-memory", "1kB"]


@case("report-max-memory-garbage", exit=2, says=("--max-memory",))
def _(f, web):
    return ["report", _bank(f), "--max-memory", "4 parsecs"]


@case("certify-workers-and-scheduler", exit=2, says=("not both",))
def _(f, web):
    return ["certify", _bank(f), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"]


@case("certify-workers-too-many", exit=2, says=("--workers",))
def _(f, web):
    return ["certify", _bank(f), "--workers", "100000"]


@case("bounds-plot-range-unbounded", exit=2, says=("--d",), subprocess=True)
def _(f, web):
    return ["bounds", "--d", "1..99999999999999999999", "--k", "10", "--plot", f / "p.png"]


@case("fetch-method-bogus", exit=2, says=("--method", "bogus", "tammes"))
def _(f, web):
    return ["fetch", "--d", "64", "--k", "999", "--method", "bogus", "--url", ""]


@case("fetch-url-unclosed-bracket", exit=2, says=("--url",))
def _(f, web):
    return ["fetch", "--d", "64", "--k", "999", "--url", "http://[::1"]


@case("catalog-list-url-unclosed-bracket", exit=2, says=("--url",))
def _(f, web):
    return ["catalog", "list", "--url", "http://[::1"]


@case("fetch-url-ftp", exit=2, says=("--url", "http"))
def _(f, web):
    return ["fetch", "--d", "64", "--k", "999", "--url", "ftp://example.org/banks/"]


# ---- input arrays: dtype and declared size checked before anything is allocated


@case("npy-strings", says=(r"x\.npy", "str|<U", "float|number"))
def _(f, web):
    np.save(f / "x.npy", np.array([["a", "b"], ["c", "d"]]))
    return ["certify", f / "x.npy"]


@case("npy-header-claims-26-GiB", says=(r"x\.npy", "1200000000"), subprocess=True)
def _(f, web):
    (f / "x.npy").write_bytes(_npy_header((3, 1_200_000_000)).ljust(928, b"\0"))
    return ["certify", f / "x.npy"]


@case("class-means-header-claims-26-GiB", says=(r"means\.npy", "1200000000"), subprocess=True)
def _(f, web):
    (f / "means.npy").write_bytes(_npy_header((3, 1_200_000_000)).ljust(928, b"\0"))
    return ["assign", _bank(f), "--class-means", f / "means.npy"]


@case("npy-complex", says=(r"x\.npy", "complex"))
def _(f, web):
    np.save(f / "x.npy", np.eye(3) + 0j)
    return ["certify", f / "x.npy"]


@case("class-means-complex", says=("means.npy", "complex"))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((10, 3)) + 1j)
    return ["assign", _bank(f), "--class-means", f / "means.npy"]


@case("class-means-empty", says=("means.npy", r"\(0,\)|empty"))
def _(f, web):
    np.save(f / "means.npy", np.zeros(0))
    return ["assign", _bank(f), "--class-means", f / "means.npy"]


@case("class-means-wrong-rows", says=(r"\(4, 3\)", "10"))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((4, 3)))
    return ["assign", _bank(f), "--class-means", f / "means.npy"]


@case("npy-empty-matrix", says=(r"x\.npy", r"\(0, 3\)"))
def _(f, web):
    np.save(f / "x.npy", np.zeros((0, 3)))
    return ["certify", f / "x.npy"]


@case("npy-three-dimensional", says=(r"x\.npy", "2-D"))
def _(f, web):
    np.save(f / "x.npy", np.ones((2, 2, 2)))
    return ["certify", f / "x.npy"]


@case("npy-datetime", says=(r"x\.npy", "datetime|<M8"))
def _(f, web):
    np.save(f / "x.npy", np.array([["2020-01-01", "2021-01-01"]] * 2, dtype="datetime64[D]"))
    return ["certify", f / "x.npy"]


@case("npy-data-shorter-than-header", says=(r"x\.npy", "bytes|truncated|short"))
def _(f, web):
    (f / "x.npy").write_bytes(_npy_header((100, 3)) + bytes(80))
    return ["certify", f / "x.npy"]


@case("npy-rows-not-unit-float64", says=("--normalize",))
def _(f, web):
    np.save(f / "x.npy", 2 * np.eye(3))
    return ["certify", f / "x.npy"]


@case("npy-rows-float32-off-by-1e-3", says=("--normalize", "float32"))
def _(f, web):
    w = np.linalg.qr(np.random.default_rng(1).standard_normal((8, 8)))[0] * 1.001
    np.save(f / "x.npy", w.astype(np.float32))
    return ["certify", f / "x.npy"]


@case("torch-garbage", says=(r"x\.pt", "torch"))
def _(f, web):
    (f / "x.pt").write_bytes(b"PK\x03\x04 not really a zip archive")
    return ["certify", f / "x.pt"]


@case("torch-complex-tensor", says=(r"x\.pt", "complex"))
def _(f, web):
    torch.save(torch.eye(3, dtype=torch.complex64), f / "x.pt")
    return ["certify", f / "x.pt"]


@case("csv-words", says=(r"x\.csv",))
def _(f, web):
    (f / "x.csv").write_text("a,b\nc,d\n")
    return ["certify", f / "x.csv"]


@case("txt-ragged-rows", says=(r"x\.txt",))
def _(f, web):
    (f / "x.txt").write_text("1 0 0\n0 1\n")
    return ["certify", f / "x.txt"]


@case("txt-not-utf8", says=(r"x\.txt", "UTF-8"))
def _(f, web):
    (f / "x.txt").write_bytes(b"\xff\xfe1 0\n0 1\n")
    return ["certify", f / "x.txt"]


@case("classes-not-utf8", says=("classes.txt", "UTF-8"))
def _(f, web):
    (f / "classes.txt").write_bytes(b"cat\n\xff\xfedog\n")
    return ["generate", "--d", "3", "--classes", f / "classes.txt", "--out", f / "new.h5"]


# ---- special files: a fifo would block a reader, /dev/zero never ends


@case("fifo-as-matrix", says=(r"x\.npy", "not a regular file"), subprocess=True)
def _(f, web):
    return ["certify", _fifo(f, "x.npy")]


@case("fifo-as-classes", says=("classes.txt", "not a regular file"), subprocess=True)
def _(f, web):
    return ["generate", "--d", "3", "--classes", _fifo(f, "classes.txt"), "--out", f / "new.h5"]


@case("dev-zero-as-classes", says=("/dev/zero", "not a regular file"), subprocess=True)
def _(f, web):
    return ["generate", "--d", "3", "--classes", "/dev/zero", "--out", f / "new.h5"]


@case("dev-zero-as-embeddings", says=("/dev/zero", "not a regular file"), subprocess=True)
def _(f, web):
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", "/dev/zero"]


@case("dev-zero-as-class-means", says=("/dev/zero", "not a regular file"), subprocess=True)
def _(f, web):
    return ["assign", _bank(f), "--class-means", "/dev/zero"]


@case("fifo-as-bank", says=("bank.h5", "not a regular file"), subprocess=True)
def _(f, web):
    return ["report", _fifo(f, "bank.h5")]


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


def _catalog_bank_bytes(f: Path) -> bytes:
    """The good bank relabelled as made by maxsep: a code the bundled catalog does not have."""
    path = _bank(f, "maxsep.h5", edit=_set_attr("", "method", "maxsep"))
    data = path.read_bytes()
    path.unlink()
    return data


def _catalog_of_good_bank(f, web, bank_route=None, edit_entry=None) -> str:
    registry = _publish(f / "catalog", {CATALOG_BANK: _catalog_bank_bytes(f)})
    if edit_entry is not None:
        edit_entry(registry["entries"][0])
        (f / "catalog" / "registry.json").write_text(json.dumps(registry))
    return _serve_catalog(web, f / "catalog", registry, bank_route)


@case("download-streams-100-MiB-chunked", says=("more than",), check=_sent_at_most(8 * 2**20))
def _(f, web):
    body = _good_bank_bytes()
    return ["fetch", CATALOG_ENTRY, "--url",
            _catalog_of_good_bank(f, web, lambda h: h.stream(body, bytes(1 << 16), 100 * 2**20))]


@case("download-content-length-100-MiB", says=("more than|larger",), check=_sent_at_most(8 * 2**20))
def _(f, web):
    body = _good_bank_bytes()
    return ["fetch", CATALOG_ENTRY, "--url",
            _catalog_of_good_bank(f, web, lambda h: h.stream(body, bytes(1 << 16), 100 * 2**20, length=100 * 2**20))]


@case("download-size-wrong-sha-right", says=("size",), check=_names_listed_size)
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url",
            _catalog_of_good_bank(f, web, edit_entry=lambda e: e.update(size=e["size"] + 100))]


@case("directory-catalog-size-wrong-sha-right", says=("size",), check=_names_listed_size)
def _(f, web):
    _catalog_of_good_bank(f, web, edit_entry=lambda e: e.update(size=e["size"] - 1))
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
    return ["fetch", CATALOG_ENTRY, "--url", _catalog_of_good_bank(f, web, edit_entry=lambda e: e.update(size=10**30))]


@case("download-read-timeout", says=("no answer|timed out",), check=_cache_is_clean)
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url", _catalog_of_good_bank(f, web, bank_route=lambda h: h.hang())]


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
    return ["fetch", CATALOG_ENTRY, "--url", _catalog_of_good_bank(f, web)]


@case("real-gensim-save-with-auto-format", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    from gensim.models import KeyedVectors

    vectors = KeyedVectors(3)
    vectors.add_vectors(CLASSES, np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32))
    vectors.save(str(f / "vectors.kv"))
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.kv"]


@case("cache-on-read-only-file-system", says=("cache", "read-only|not writable"),
      env={"SPHERECODES_CACHE": "{f}/readonly"})
def _(f, web):
    url = _catalog_of_good_bank(f, web)
    (f / "readonly").mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(f / "readonly")],
                             capture_output=True)
    if mounted.returncode != 0:
        os.chmod(f / "readonly", 0o555)
        if os.access(f / "readonly", os.W_OK):
            pytest.skip("neither a read-only mount nor a read-only directory can be made here")
    return ["fetch", CATALOG_ENTRY, "--url", url]


@case("state-dict-stored-as-d-by-k", says=(r"x\.pt", "looks transposed", r"\(12, 5\)"))
def _(f, web):
    columns = np.random.default_rng(0).standard_normal((5, 12))
    torch.save({"w": torch.from_numpy(columns / np.linalg.norm(columns, axis=0))}, f / "x.pt")
    return ["certify", f / "x.pt"]


# ---- word vectors: what a file says is checked against what it holds


@case("word2vec-header-dimension-disagrees-with-its-lines", says=(r"vectors\.txt", "dimension 5", "holds 3"))
def _(f, web):
    lines = [f"class{i} " + " ".join(f"{x:.3f}" for x in np.random.default_rng(i).standard_normal(3)) for i in range(10)]
    (f / "vectors.txt").write_text("10 5\n" + "\n".join(lines) + "\n")
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt", "--missing-words",
            "random", "--dry-run"]


@case("glove-zero-vectors-are-not-missing-words", says=("class0", "zero"))
def _(f, web):
    (f / "vectors.txt").write_text("".join(f"class{i} 0 0 0\n" for i in range(10)))
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt", "--dry-run"]


# ---- writing banks: nothing half-written, the old bank kept


@case("fetch-out-over-an-existing-code", says=("already exists", "--overwrite"))
def _(f, web):
    first = CliRunner().invoke(main, ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", str(f / "b.h5"), "-q"])
    assert first.exit_code == 0, first.output
    return ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", f / "b.h5"]


@case("out-is-immutable", says=("bank.h5", "cannot|not writable|permission|immutable|read-only"))
def _(f, web):
    bank = _bank(f)
    if subprocess.run(["chattr", "+i", str(bank)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    return ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", bank, "--overwrite"]


# ---- registries: what Python's JSON parser would turn into a traceback


def _registry_with(f, edit=None, text=None) -> Path:
    """A catalog folder whose registry lists the good bank, its JSON text then edited (``text(json_text)``)."""
    registry = _publish(f / "catalog", {CATALOG_BANK: _catalog_bank_bytes(f)})
    if edit is not None:
        edit(registry["entries"][0])
    document = json.dumps(registry)
    (f / "catalog" / "registry.json").write_text(text(document) if text else document)
    return f / "catalog"


@case("registry-integer-of-5000-digits", says=("registry", "5000 digits"))
def _(f, web):
    catalog = _registry_with(f, edit=lambda e: e.update(size=-7), text=lambda t: t.replace("-7", "9" * 5000))
    return ["catalog", "list", "--url", catalog]


@case("registry-nested-200000-deep", says=("registry", "nests"))
def _(f, web):
    catalog = _registry_with(f, edit=lambda e: e.update(seed=-7),
                             text=lambda t: t.replace("-7", "[" * 200_000 + "]" * 200_000))
    return ["catalog", "list", "--url", catalog]


@case("registry-1-and-400-zeros", says=("registry", "max_cos|finite"))
def _(f, web):
    catalog = _registry_with(f, edit=lambda e: e.update(max_cos=-7), text=lambda t: t.replace("-7", "1" + "0" * 400))
    return ["catalog", "list", "--url", catalog]


@case("registry-1e400", says=("registry", "1e400", "float64"))
def _(f, web):
    catalog = _registry_with(f, edit=lambda e: e.update(max_cos=-7), text=lambda t: t.replace("-7", "1e400"))
    return ["fetch", CATALOG_ENTRY, "--url", catalog]


@case("registry-nan", says=("registry", "NaN"))
def _(f, web):
    catalog = _registry_with(f, edit=lambda e: e["rho"].update(lower=-7), text=lambda t: t.replace("-7", "NaN"))
    return ["catalog", "list", "--url", catalog]


@case("registry-number-as-a-string", says=("registry", "damaged entry", "number"))
def _(f, web):
    return ["catalog", "list", "--url", _registry_with(f, edit=lambda e: e.update(max_cos="nan"))]


@case("registry-of-34000-entries-one-repeated", says=("registry", "more than once", "tammes-d5-k1234"))
def _(f, web):
    """A long registry is checked in one pass (a pairwise check of its names took minutes)."""
    catalog = _registry_with(f)
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


# ---- banks: JSON attributes and datasets that would cost more than they hold


_damaged("bank-settings-integer-of-5000-digits", _set_attr("", "settings", '{"steps": ' + "9" * 5000 + "}"),
         ("settings", "5000 digits"))
_damaged("bank-settings-nested-50000-deep", _set_attr("", "settings", "[" * 50_000 + "]" * 50_000),
         ("settings", "nests"))
_damaged("bank-duplicates-nested-50000-deep", _set_attr("certificate", "duplicates", "[" * 50_000 + "]" * 50_000),
         ("duplicates", "nests"))
_damaged("bank-schema-version-negative", lambda g: g.file.attrs.__setitem__("schema_version", np.int64(-5)),
         ("schema_version -5",))


def _hard_links(group):
    """The code's group under 100 more names: stored once, each name a copy when a writer rewrites the bank."""
    for i in range(100):
        group.parent[f"copy{i}"] = group


@case("bank-one-code-under-100-names-generate", says=("stored once under 101 names", "hard links"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "4", "--out", _bank(f, edit=_hard_links)]


@case("bank-one-code-under-100-names-ls", says=("stored once under 101 names",))
def _(f, web):
    return ["ls", _bank(f, edit=_hard_links)]


@case("bank-prototypes-hard-linked-into-another-code", says=("prototypes", "stored once under 2 names"))
def _(f, web):
    def edit(group):
        group.parent.copy(group, "other")
        del group.parent["other/prototypes"]
        group.parent["other/prototypes"] = group["prototypes"]

    return ["rm", _bank(f, edit=edit), "--code", GOOD_CODE]


def _wide_supports(group):
    """Supports of 10 classes declared 10^7 wide (800 MB each, a few KB of gzip)."""
    for name, dtype in (("support_indices", "<i8"), ("support_weights", "<f8")):
        del group["certificate"][name]
        data = group["certificate"].create_dataset(name, shape=(10, 10**7), dtype=dtype, compression="gzip",
                                                   chunks=(10, 2**16), fillvalue=-1 if dtype == "<i8" else 0)
        data[:, :1] = 0


_damaged("bank-certificate-supports-declared-10-million-wide", _wide_supports,
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
    return ["report", _bank(f, edit=_declared_gigabyte(True))]


@case("bank-prototypes-declared-never-written", says=("prototypes", "1.0 GiB", "stores only 0 B"))
def _(f, web):
    return ["report", _bank(f, edit=_declared_gigabyte(False))]


@case("bank-gzip-prototypes-as-generate-init", says=("prototypes", "compressed"))
def _(f, web):
    start = _bank(f, edit=_declared_gigabyte(True))
    return ["generate", "--d", "1024", "--k", "131072", "--method", "tammes", "--init", start, "--out", f / "new.h5"]


# ---- word vectors and arrays: what a line or a header declares


@case("glove-bz2-one-line-of-4-MiB", says=(r"vectors\.txt\.bz2", "line 1", "longer than 1.0 MiB"))
def _(f, web):
    import bz2

    (f / "vectors.txt.bz2").write_bytes(bz2.compress(b"class0 " + b"0 " * (2 * 2**20) + b"\n"))  # 300 bytes
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt.bz2", "--dry-run"]


@case("glove-gz-third-line-of-2-MiB", says=(r"vectors\.txt\.gz", "line 3", "longer than 1.0 MiB"))
def _(f, web):
    body = b"class0 0.1 0.2\nclass1 0.3 0.4\nclass2 " + b"1" * (2 * 2**20) + b"\n"
    (f / "vectors.txt.gz").write_bytes(gzip.compress(body))
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt.gz", "--dry-run"]


@case("word2vec-binary-gz-word-of-8-MiB", says=(r"vectors\.bin\.gz", "2.0 MiB in a row hold no ' '", "ends at a space"))
def _(f, web):
    """gensim grows its buffer by 100 KB looking for the space after a word: a gigabyte-long word took hours."""
    body = b"2 3\n" + b"x" * (8 * 2**20) + b" " + bytes(12) + b"class1 " + bytes(12)
    (f / "vectors.bin.gz").write_bytes(gzip.compress(body))  # 8 KB
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.bin.gz", "--dry-run"]


@case("word2vec-header-dimension-zero", says=(r"vectors\.txt", "dimension 0"))
def _(f, web):
    (f / "vectors.txt").write_text("5 0\nclass0\nclass1\n")
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt", "--dry-run"]


@case("npy-negative-length", says=(r"x\.npy", r"\(-1, 3\)", "negative"))
def _(f, web):
    (f / "x.npy").write_bytes(_npy_header((-1, 3)) + bytes(72))  # numpy reads a count of -1 as "all there is"
    return ["certify", f / "x.npy"]


@case("npy-length-of-41-digits", says=(r"x\.npy", "truncated|header"))
def _(f, web):
    (f / "x.npy").write_bytes(_npy_header((10**40, 3)))
    return ["certify", f / "x.npy"]


@case("torch-pickle-nested-100000-deep", says=(r"deep\.pt",))
def _(f, web):
    import zipfile

    torch.save(torch.eye(3), f / "plain.pt")
    with zipfile.ZipFile(f / "plain.pt") as z, zipfile.ZipFile(f / "deep.pt", "w") as out:
        for name in z.namelist():
            out.writestr(name, b"\x80\x02" + b"(" * 100_000 + b"l" * 100_000 + b"." if name.endswith("data.pkl")
                         else z.read(name))
    (f / "plain.pt").unlink()
    return ["certify", f / "deep.pt"]


# ---- flags at the extremes: refused where they enter, before any work


@case("generate-k-10-to-the-19", exit=2, says=("--k", "9223372036854775807"))
def _(f, web):
    return ["generate", "--d", "3", "--k", str(10**19), "--out", f / "new.h5"]


@case("generate-k-just-below-2-to-the-63", says=("K=9000000000000000000", "needs about"))
def _(f, web):
    return ["generate", "--d", "3", "--k", str(9 * 10**18), "--method", "tammes", "--out", f / "new.h5"]


@case("bounds-d-10-to-the-21", exit=2, says=("--d", "9223372036854775807"))
def _(f, web):
    return ["bounds", "--d", str(10**21), "--k", "10"]


@case("generate-threads-10-to-the-20", exit=2, says=("--threads", "4096"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--threads", str(10**20), "--out", f / "new.h5"]


@case("catalog-build-workers-10-to-the-21", exit=2, says=("--workers", "4096"))
def _(f, web):
    return ["catalog", "build", "--grid", "d=3 k=7", "--out", f / "built", "--workers", str(10**21)]


@case("export-seed-past-2-63", exit=2, says=("--seed", "9223372036854775807"))
def _(f, web):
    return ["export", _bank(f), "--out", f / "x.npy", "--rotation", "random", "--seed", HUGE_SEED]


@case("generate-out-name-of-300-bytes", says=("too long", "255 bytes"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--out", f / ("x" * 297 + ".h5")]


@case("classes-holding-nul", says=(r"classes\.txt", "line 2", "NUL"))
def _(f, web):
    (f / "classes.txt").write_bytes(b"cat\ndo\x00g\nbird\n")
    # tammes for (64, 3) runs its optimiser: refused before it, not when the labels are stored
    return ["generate", "--d", "64", "--method", "tammes", "--classes", f / "classes.txt", "--out", f / "new.h5"]


@case("classes-holding-nul-assign", says=(r"classes\.txt", "line 3", "NUL"))
def _(f, web):
    (f / "classes.txt").write_bytes(b"\n".join(c.encode() for c in CLASSES[:2]) + b"\nx\x00y\n")
    return ["assign", _bank(f), "--classes", f / "classes.txt", "--embeddings", f / "none.txt"]


# ---- the bank's lock file: a writer takes a lock beside the bank and writes its process id into it


def _lock_file(kind):
    def setup(f, web):
        bank = _bank(f)
        (f / "victim.txt").write_text("precious")
        lock = f / ".bank.h5.lock"
        if kind == "symlink":
            lock.symlink_to(f / "victim.txt")
        elif kind == "hardlink":
            os.link(f / "victim.txt", lock)
        else:
            os.mkfifo(lock)
        return ["rm", bank, "--code", GOOD_CODE]

    return setup


case("lock-file-is-a-symlink-to-another-file", says=("cannot lock", "bank.h5.lock"))(_lock_file("symlink"))
case("lock-file-is-a-hard-link-to-another-file", says=("cannot lock", "hard link"))(_lock_file("hardlink"))
case("lock-file-is-a-fifo", says=("cannot lock", "fifo"))(_lock_file("fifo"))


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
    return ["report", _bank(f, edit=lambda g: g.create_group("orbit").create_dataset(
        "generators", data=np.eye(4, 3, dtype=np.uint8)))]


@case("bank-orbit-witness-on-a-code-that-is-no-orbit", says=("certificate", "class 0's witness alone", "not one orbit"))
def _(f, web):
    return ["report", _bank(f, edit=_set_attr("certificate", "witness", "class 0, moved by the orbit"))]


@case("bank-certificate-witness-unknown", says=("certificate/witness", "moved by magic", "the only value"))
def _(f, web):
    return ["report", _orbit_bank(f, _set_attr("certificate", "witness", "class 0, moved by magic"))]


# ---- a Dask scheduler: its address checked where it enters, an unreachable one given up in bounded time


def _scheduler_case(name, address, says, command="certify"):
    @case(name, exit=2, says=("--scheduler",) + says)
    def _(f, web):
        if command == "certify":
            return ["certify", _bank(f), "--scheduler", address, "-q"]
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
    return ["certify", _bank(f), "--scheduler", f"tcp://127.0.0.1:{port}", "-q"]


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
    return ["certify", _bank(f), "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}", "-q"]


# ---- outputs that are not regular files, through links or as parents


def _fifo_intact(f, web, stdout, stderr):
    assert (f / "device").is_fifo(), "the fifo was replaced by a regular file"


@case("plot-through-a-link-to-a-fifo", says=("device", "a fifo", "not a regular file"), stdout=True, check=_fifo_intact)
def _(f, web):
    """Renaming the finished plot over the link's target would replace it: a link to /dev/null, run as root, would
    replace the device (a fifo stands in for it here, so that a regression harms nothing)."""
    (f / "plot.png").symlink_to(_fifo(f, "device"))
    return ["report", _bank(f), "--plot", f / "plot.png"]


@case("export-through-a-link-to-a-fifo", says=("device", "a fifo", "not a regular file"), check=_fifo_intact)
def _(f, web):
    (f / "x.npy").symlink_to(_fifo(f, "device"))
    return ["export", _bank(f), "--out", f / "x.npy", "--overwrite"]


@case("export-into-a-file-as-directory", says=("plain", "is a regular file, not a directory"))
def _(f, web):
    (f / "plain").write_text("a file")
    return ["export", _bank(f), "--out", f / "plain" / "x.npy"]


@case("generate-into-a-file-as-directory", says=("plain", "is a regular file, not a directory"))
def _(f, web):
    (f / "plain").write_text("a file")
    return ["generate", "--d", "3", "--k", "4", "--out", f / "plain" / "x.h5"]


# ---- more inputs and flags at the edge


@case("glove-with-a-byte-order-mark", says=(r"vectors\.txt", "byte-order mark", "'class0'"))
def _(f, web):
    """The mark would be read as part of 'class0', which then 'has no word vector'."""
    lines = "".join(f"class{i} {i} 1 2\n" for i in range(10))
    (f / "vectors.txt").write_bytes(b"\xef\xbb\xbf" + lines.encode())
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt", "--dry-run"]


@case("glove-line-of-nan", says=("class9", "not finite"))
def _(f, web):
    lines = "".join(f"class{i} {i} 1 2\n" for i in range(9)) + "class9 nan 1 2\n"
    (f / "vectors.txt").write_text(lines)
    return ["assign", _bank(f), "--classes", _classes(f), "--embeddings", f / "vectors.txt", "--dry-run"]


@case("time-limit-1e-300", says=(r"--time-limit 1e-300 s", "cannot hold", r"above ~\d"))
def _(f, web):
    """Shown as the number given (it was '0.0 s'), with a limit that would hold."""
    return ["generate", "--d", "3", "--k", "7", "--method", "tammes", "--time-limit", "1e-300", "--out", f / "new.h5"]


@case("max-memory-half-a-byte", exit=2, says=("--max-memory", "at least 1 byte"))
def _(f, web):
    return ["certify", _bank(f), "--max-memory", "0.5B"]


@case("certify-workers-zero", exit=2, says=("--workers", "1<=x<=256"))
def _(f, web):
    return ["certify", _bank(f), "--workers", "0"]


@case("npy-structured-dtype", says=(r"x\.npy", "real numbers"))
def _(f, web):
    np.save(f / "x.npy", np.zeros((3, 3), dtype=[("a", "<f8"), ("b", "<f8")]))
    return ["certify", f / "x.npy"]


@case("npy-fortran-order-declaring-24-GB", says=(r"x\.npy", "24000000000 bytes", "truncated|header"))
def _(f, web):
    (f / "x.npy").write_bytes(_npy_header((3, 10**9), fortran=True))
    return ["certify", f / "x.npy"]


@case("registry-file-is-a-file-url", says=("file:///etc/passwd", "plain \\*\\.h5 name"))
def _(f, web):
    return ["fetch", CATALOG_ENTRY, "--url", _registry_with(f, edit=lambda e: e.update(file="file:///etc/passwd"))]


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


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (SUBPROCESS_MEMORY, SUBPROCESS_MEMORY))


def _run(case_: Case, args, folder: Path, web, monkeypatch):
    env = {key: value.format(f=folder) for key, value in case_.env.items()}
    env.setdefault("SPHERECODES_CACHE", str(folder / "cache"))
    env["SPHERECODES_BANK_URL"] = ""
    args = [str(a) for a in args]
    if case_.subprocess:
        proc = subprocess.run(
            [sys.executable, "-m", "spherecodes", *args], cwd=folder, env={**os.environ, **env},
            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, preexec_fn=_limit_memory,
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

    for module in ("spherecodes.catalog.download", "spherecodes.registry"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(mod, "TIMEOUT_S"):
            monkeypatch.setattr(mod, "TIMEOUT_S", 1)
            return
    raise AssertionError("no download timeout to shorten")


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow if CASES[n].subprocess else ()) for n in CASES]
)
def test_hostile_input_gets_one_line_and_changes_nothing(name, tmp_path, web, monkeypatch):
    case_ = CASES[name]
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


def test_the_table_is_large_enough():
    assert len(CASES) >= 150


# --------------------------------------------------------------------------- what must still work


def _simplex(k: int, dtype) -> np.ndarray:
    """K unit vectors in R^K summing to zero (a regular simplex), randomly rotated, stored as ``dtype``."""
    centred = np.eye(k) - 1.0 / k
    rows = centred / np.linalg.norm(centred, axis=1, keepdims=True)
    rotation = np.linalg.qr(np.random.default_rng(k).standard_normal((k, k)))[0]
    return (rows @ rotation).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rows_rounded_to_a_short_float_are_normalised_in_float64_and_the_report_says_so(tmp_path, dtype):
    """A simplex of K classes has rho = K/(K-1): its centroid is 0, so the hull of the others is nearest at
    -w_k/(K-1).  Stored in float32 or float16, its norms miss 1 by that format's rounding."""
    k = 12
    w = _simplex(k, dtype)
    deviation = np.abs(np.linalg.norm(w.astype(np.float64), axis=1) - 1).max()
    assert 0 < deviation < 50 * np.finfo(dtype).eps  # not unit in float64, unit up to the format's rounding
    np.save(tmp_path / "protos.npy", w)
    result = CliRunner().invoke(main, ["certify", str(tmp_path / "protos.npy"), "--json", "--quiet"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rounding = float(10 * np.finfo(dtype).eps)
    assert report["rho"]["lower"] == pytest.approx(k / (k - 1), abs=rounding)
    assert report["settings"]["normalized"] is True
    assert np.dtype(dtype).name in json.dumps(report["settings"])
    text = CliRunner().invoke(main, ["certify", str(tmp_path / "protos.npy"), "--quiet"])
    assert text.exit_code == 0, text.output
    assert re.search(rf"normali[sz]ed in float64 from {np.dtype(dtype).name}", text.stdout)


@pytest.mark.slow
def test_the_certificate_of_three_classes_in_two_million_dimensions(tmp_path):
    """Three orthonormal rows: each one's distance to the segment of the other two is sqrt(3/2)."""
    rng = np.random.default_rng(0)
    w = np.linalg.qr(rng.standard_normal((2_000_000, 3)))[0].T.copy()
    np.save(tmp_path / "wide.npy", w)
    result = CliRunner().invoke(main, ["certify", str(tmp_path / "wide.npy"), "--json", "--quiet"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["rho"]["certified"] is True
    assert report["rho"]["lower"] == pytest.approx(1.5**0.5, abs=1e-9)


def test_a_gensim_save_loads_when_the_user_names_the_format(tmp_path):
    from gensim.models import KeyedVectors

    vectors = KeyedVectors(3)
    vectors.add_vectors(CLASSES, np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32))
    vectors.save(str(tmp_path / "vectors.kv"))
    args = ["assign", str(_bank(tmp_path)), "--classes", str(_classes(tmp_path)), "--embeddings",
            str(tmp_path / "vectors.kv"), "--embeddings-format", "gensim", "--dry-run"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", ["assign", "report", "generate"])
def test_help_says_that_only_the_gensim_format_unpickles(command):
    result = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "pickle" in text and "auto never" in text, text


def test_python_readers_refuse_a_certificate_that_does_not_check(tmp_path):
    import spherecodes
    from spherecodes.nn import PrototypeClassifier

    bank = _bank(tmp_path, edit=_shift_certificate)
    with pytest.raises(spherecodes.SpherecodesError, match="certificate.*does not check"):
        spherecodes.read_code(bank)
    with pytest.raises(spherecodes.SpherecodesError, match="certificate.*does not check"):
        PrototypeClassifier.from_bank(bank)


def test_a_seed_past_2_63_is_refused_where_a_code_is_made():
    import spherecodes

    with pytest.raises(spherecodes.SpherecodesError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
        spherecodes.make_code(_simplex(3, np.float64), method="etf", seed=2**70)


# --------------------------------------------------------------------------- signals and dead writers


def _hidden_temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


_WRITER = """
import os, sys, time
from spherecodes.atomic import replace_atomically
with replace_atomically(sys.argv[1]) as tmp:
    tmp.write_bytes(b"half a bank" * 1000)
    print("written", flush=True)
    if sys.argv[2] == "die":
        os.kill(os.getpid(), 9)
    sys.stdin.readline()
"""


def test_a_dead_writers_temporary_file_is_removed_by_the_next_write(tmp_path):
    bank = tmp_path / "bank.h5"
    live = subprocess.Popen([sys.executable, "-c", _WRITER, str(bank), "wait"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "written"
        dead = subprocess.run([sys.executable, "-c", _WRITER, str(bank), "die"], capture_output=True, timeout=60)
        assert dead.returncode == -9
        assert len(_hidden_temporaries(tmp_path)) == 2
        result = CliRunner().invoke(main, ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", str(bank), "-q"])
        assert result.exit_code == 0, result.output
        # The dead writer's file is gone; the live writer's is its own business.
        assert len(_hidden_temporaries(tmp_path)) == 1
    finally:
        live.communicate("\n", timeout=60)
    assert _hidden_temporaries(tmp_path) == []
    assert bank.read_bytes() == b"half a bank" * 1000  # the live writer finished last


@pytest.fixture
def python_sigint_handler():
    """Ctrl-C raises KeyboardInterrupt here, as in an interactive shell.

    A process started in the background by a non-interactive shell inherits
    SIGINT as ignored, and Python then installs no handler of its own; these
    tests simulate a user's Ctrl-C, so they install Python's.
    """
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint_handler")
def test_ctrl_c_during_the_rename_is_delivered_after_it(tmp_path, monkeypatch):
    import signal

    from spherecodes.atomic import replace_atomically

    target = tmp_path / "data.txt"
    target.write_text("old")
    rename = os.replace
    renamed = []

    def interrupted_rename(src, dst):
        os.kill(os.getpid(), signal.SIGINT)
        rename(src, dst)
        renamed.append(dst)

    monkeypatch.setattr(os, "replace", interrupted_rename)
    with pytest.raises(KeyboardInterrupt):
        with replace_atomically(target) as tmp:
            tmp.write_text("new")
    assert renamed and target.read_text() == "new"
    assert _hidden_temporaries(tmp_path) == []


@pytest.mark.usefixtures("python_sigint_handler")
def test_ctrl_c_swallowed_while_writing_still_abandons_the_write(tmp_path):
    """A library may catch the KeyboardInterrupt of a Ctrl-C (h5py's C callbacks do); the write is still abandoned."""
    import signal

    from spherecodes.atomic import replace_atomically

    target = tmp_path / "data.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with replace_atomically(target) as tmp:
            tmp.write_text("new")
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except KeyboardInterrupt:
                pass  # swallowed
    assert target.read_text() == "old"
    assert _hidden_temporaries(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.5, 1.5])
def test_ctrl_c_at_any_moment_of_generate_keeps_a_valid_bank(tmp_path, delay):
    """Ctrl-C during the optimisation, the certificate, the LP bound or the write: never a broken bank."""
    import signal

    bank = tmp_path / "bank.h5"
    bank.write_bytes(_good_bank_bytes())
    before = hashlib.sha256(bank.read_bytes()).hexdigest()
    proc = subprocess.Popen(
        [sys.executable, "-m", "spherecodes", "generate", "--d", "5", "--k", "60", "--method", "tammes",
         "--restarts", "2", "--steps", "400", "--out", str(bank)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()  # the estimate: the program has started (Ctrl-C during imports is Python's)
    assert first.startswith("estimate"), first
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    # -SIGINT: the signal arrived after the work, while the interpreter was
    # shutting down (Python restores the default handler then); the bank must
    # then hold the finished code and the report must have been printed.
    assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, stderr)
    if proc.returncode == -signal.SIGINT:
        assert "max-cos" in stdout, (stdout, stderr)
    assert _hidden_temporaries(tmp_path) == []
    names = {row["name"] for row in __import__("spherecodes").list_codes(bank)}
    if proc.returncode == 130 and "kept" not in stderr:
        assert hashlib.sha256(bank.read_bytes()).hexdigest() == before  # interrupted before anything was kept
    else:
        assert names == {GOOD_CODE, "tammes-d5-k60-s0"}
        import spherecodes

        assert spherecodes.read_code(bank, "tammes-d5-k60-s0").k == 60


# --------------------------------------------------------------------------- concurrent writers and links


_SLOW_WRITER = """
import sys
import spherecodes.bank as bank
from spherecodes.cli import main
rewrite = bank._rewrite

def slow_rewrite(*args, **kwargs):
    print("read", flush=True)  # the bank has been read; another writer may now act
    sys.stdin.readline()  # until the test says the other writer is waiting
    rewrite(*args, **kwargs)

bank._rewrite = slow_rewrite
main(sys.argv[1:], prog_name="spherecodes")
"""


def _codes_in(bank: Path) -> set[str]:
    import spherecodes

    return {row["name"] for row in spherecodes.list_codes(bank)}


@pytest.mark.parametrize("second", ["generate", "rm"])
def test_concurrent_writers_of_one_bank_take_turns_and_lose_nothing(tmp_path, second):
    """A writer that has read the bank and is about to rewrite it, and a second writer meanwhile: both changes stay."""
    bank = _bank(tmp_path)
    assert subprocess.run([sys.executable, "-m", "spherecodes", "generate", "--d", "3", "--k", "4", "--out", str(bank),
                           "-q"], capture_output=True).returncode == 0
    first = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, "generate", "--d", "4", "--k", "5", "--out",
                              str(bank), "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    notice = f"{bank} is being written by another spherecodes process (process {first.pid}); waiting"
    try:
        assert first.stdout.readline().strip() == "read"
        args = (["generate", "--d", "5", "--k", "6", "--out", str(bank), "-q"] if second == "generate"
                else ["rm", str(bank), "--code", "etf-d3-k4"])
        other = subprocess.Popen([sys.executable, "-m", "spherecodes", *args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        if second == "rm":
            # The notice comes after a second of waiting for the lock: only then may the first writer go on,
            # however long the second took to start (a loaded machine).
            waiting = other.stderr.readline()
            assert waiting.startswith(notice), waiting
        else:
            time.sleep(3)  # quiet as asked (-q): nothing to wait for but time
    finally:
        out, err = first.communicate("\n", timeout=60)
    _, rest = other.communicate(timeout=60)
    assert other.returncode == 0, rest
    assert notice not in rest
    assert first.returncode == 0, err
    assert first.returncode == 0, err
    expected = {GOOD_CODE, "etf-d4-k5"} | ({"etf-d3-k4", "etf-d5-k6"} if second == "generate" else set())
    assert _codes_in(bank) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]  # no lock or temporary file left


_HOLDER = """
import sys, time
from spherecodes.atomic import exclusive_lock
with exclusive_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_ctrl_c_while_waiting_for_the_lock_says_so_and_changes_nothing(tmp_path):
    import signal

    bank = _bank(tmp_path)
    before = bank.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(bank)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = subprocess.Popen([sys.executable, "-m", "spherecodes", "rm", str(bank), "--code", GOOD_CODE],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
        notice = waiter.stderr.readline()  # after a second of waiting
        assert notice.startswith(f"{bank} is being written by another spherecodes process (process {holder.pid})")
        waiter.send_signal(signal.SIGINT)
        _, rest = waiter.communicate(timeout=60)
    finally:
        holder.communicate("\n", timeout=60)
    assert waiter.returncode == 130 and rest.strip() == "Interrupted; nothing was written.", rest
    assert bank.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


def test_a_symlinked_out_is_written_through_to_its_target(tmp_path):
    (tmp_path / "store").mkdir()
    target = _bank(tmp_path / "store")
    (tmp_path / "link.h5").symlink_to(target)
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "4", "--out", str(tmp_path / "link.h5"), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.h5").is_symlink()
    assert _codes_in(target) == {GOOD_CODE, "etf-d3-k4"}
    result = CliRunner().invoke(main, ["rm", str(tmp_path / "link.h5"), "--code", GOOD_CODE])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.h5").is_symlink() and _codes_in(target) == {"etf-d3-k4"}


# --------------------------------------------------------------------------- what Ctrl-C says


@pytest.mark.usefixtures("python_sigint_handler")
@pytest.mark.parametrize("moment", ["after-the-rename", "before-the-rename"])
def test_ctrl_c_says_whether_the_code_was_stored(tmp_path, monkeypatch, moment):
    """The message is checked against the bank, not assumed: Ctrl-C right after the rename stored the code."""
    import signal

    bank = _bank(tmp_path)
    before = bank.read_bytes()
    rename, fsync = os.replace, os.fsync

    def interrupted_rename(src, dst):
        rename(src, dst)
        os.kill(os.getpid(), signal.SIGINT)

    def interrupted_fsync(fd):  # the last step before the rename
        fsync(fd)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)

    if moment == "after-the-rename":
        monkeypatch.setattr(os, "replace", interrupted_rename)
    else:
        monkeypatch.setattr(os, "fsync", interrupted_fsync)
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "4", "--out", str(bank), "-q"])
    assert result.exit_code == 130, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # no empty line before it either
    if moment == "after-the-rename":
        assert _codes_in(bank) == {GOOD_CODE, "etf-d3-k4"}
        assert "written in full" in lines[0] and "nothing" not in lines[0], lines
    else:
        assert bank.read_bytes() == before
        assert "unchanged" in lines[0] and "written in full" not in lines[0], lines
    assert _hidden_temporaries(tmp_path) == []


# --------------------------------------------------------------------------- names from files, printed


def _renamed(folder: Path, name: str, method: str | None = None) -> Path:
    """The good bank with its code stored under ``name`` (and ``method``), as anyone with h5py can write."""
    def edit(group):
        if method is not None:
            group.attrs["method"] = method
        group.file["codes"].move(GOOD_CODE, name)

    return _bank(folder, edit=edit)


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
    registry = _publish(tmp_path / "catalog", {CATALOG_BANK: _catalog_bank_bytes(tmp_path)})
    registry["entries"][0]["name"] = "x\nforged-d3-k10  3  10  tammes  0.1  [1.0, 1.0]  0  1 KB  bundled"
    (tmp_path / "catalog" / "registry.json").write_text(json.dumps(registry))
    result = CliRunner().invoke(main, ["catalog", "list", "--url", str(tmp_path / "catalog")],
                                env={"SPHERECODES_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    assert not [line for line in result.stdout.splitlines() if line.startswith("forged")], result.stdout
    assert "x\\nforged-d3-k10" in result.stdout


# --------------------------------------------------------------------------- sizes checked before allocating


def _sparse_npy(path: Path, shape) -> Path:
    """A .npy file whose header declares ``shape`` of float64, as long as that says but holding no block on disk."""
    header = _npy_header(shape)
    with open(path, "wb") as fh:
        fh.write(header)
        fh.truncate(len(header) + 8 * int(np.prod(shape)))
    return path


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr and len(lines) == 1 and lines[0].startswith("Error: "), stderr
    return lines[0]


@pytest.mark.parametrize("command", ["certify", "class-means", "init"])
def test_a_sparse_npy_declaring_40_GB_is_refused_before_allocating(tmp_path, command):
    """The header and the file length agree (40 GB), but the file holds no data: the memory check refuses it."""
    x = _sparse_npy(tmp_path / "x.npy", (5, 1_000_000_000))
    args = {"certify": ["certify", x],
            "class-means": ["assign", _bank(tmp_path), "--class-means", x],
            "init": ["generate", "--d", "5", "--k", "1000000000", "--method", "tammes", "--init", x,
                     "--out", tmp_path / "new.h5"]}[command]
    result = CliRunner().invoke(main, [str(a) for a in args])  # unchecked, 40 GB would not fit: MemoryError
    assert result.exit_code == 1, result.output
    # generate refuses a code of (10^9, 5) itself (40 GB of prototypes) before it reads the start file
    expected = "the code itself.*needs about" if command == "init" else "x.npy.*needs about|needs about.*x.npy"
    assert re.search(expected, _one_error_line(result.stderr)), result.stderr


def test_a_sparse_npy_within_memory_but_past_max_memory_is_refused(tmp_path):
    x = _sparse_npy(tmp_path / "x.npy", (1000, 10_000))  # 80 MB
    result = CliRunner().invoke(main, ["certify", str(x), "--max-memory", "50MB"])
    assert result.exit_code == 1
    assert re.search(r"x\.npy.*--max-memory", _one_error_line(result.stderr)), result.stderr


@pytest.mark.parametrize("kind", ["expanded-huge", "expanded-past-max-memory", "sparse-coo", "sparse-csr", "meta"])
def test_torch_tensors_that_are_not_plain_data_are_refused_in_one_line(tmp_path, kind):
    if kind == "expanded-huge":
        tensor = torch.zeros(1, dtype=torch.float64).expand(100_000, 100_000)  # 80 GB from one number
    elif kind == "expanded-past-max-memory":
        tensor = torch.randn(1, 10_000, dtype=torch.float64).expand(2_000, 10_000)  # 80 KB on disk, 160 MB
    elif kind == "sparse-coo":
        tensor = torch.eye(4).to_sparse()
    elif kind == "sparse-csr":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "in beta state"
            tensor = torch.eye(4).to_sparse_csr()
    else:
        tensor = torch.empty(4, 4, device="meta")
    torch.save(tensor, tmp_path / "x.pt")
    args = ["certify", str(tmp_path / "x.pt")] + (["--max-memory", "100MB"] if "expanded" in kind else [])
    result = CliRunner().invoke(main, args)  # unchecked, the 80 GB copy would not fit: MemoryError
    assert result.exit_code == 1, result.output
    line = _one_error_line(result.stderr)
    expected = {"expanded-huge": "needs about", "expanded-past-max-memory": "--max-memory", "sparse-coo": "sparse",
                "sparse-csr": "sparse", "meta": "meta"}[kind]
    assert expected in line and "x.pt" in line, line


# --------------------------------------------------------------------------- no false claims


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_certify_normalize_rescales_rows_whose_squares_overflow_or_vanish(tmp_path, scale):
    """Three orthogonal rows, one scaled by 1e200 or 1e-200: normalised, max-cos 0 and rho sqrt(3/2)."""
    w = np.eye(3)
    w[1] *= scale
    np.save(tmp_path / "x.npy", w)
    result = CliRunner().invoke(main, ["certify", str(tmp_path / "x.npy"), "--normalize", "--json", "--quiet"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["max_cos"] == 0
    assert report["rho"]["lower"] == pytest.approx(1.5**0.5, abs=1e-9)


# --------------------------------------------------------------------------- clocks and deadlines


def test_a_time_limit_holds_however_many_restarts_are_asked_for(tmp_path):
    """10**30 restarts under a time limit: the work is planned batch by batch, so the limit still ends it."""
    args = ["generate", "--d", "4", "--k", "40", "--method", "tammes", "--restarts", str(10**30), "--time-limit", "0.2",
            "--no-certify", "--out", str(tmp_path / "bank.h5"), "--json", "--quiet"]
    result = subprocess.run([sys.executable, "-m", "spherecodes", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    settings = json.loads(result.stdout)["settings"]
    assert settings["stop_reason"] == "time_limit", settings
    assert 0 < settings["restarts_run"] < 10**30


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--restarts", "--steps"])
def test_a_time_limit_holds_for_a_tiny_code_and_a_count_of_31_digits(tmp_path, flag):
    """K = 7 in R^3: a batch may hold 21,399 starts, whose drawing and float64 measuring alone took 10 s under a
    3 s limit; the batch is now sized to the time left, so the run ends near its limit."""
    args = ["generate", "--d", "3", "--k", "7", "--method", "tammes", flag, str(10**30), "--time-limit", "2",
            "--out", str(tmp_path / "bank.h5"), "--json", "--quiet"]
    result = subprocess.run([sys.executable, "-m", "spherecodes", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["stop_reason"] == "time_limit", report["settings"]
    # The run's own clock (from the command's start, the imports of torch included): 2 s and the loading's slack.
    import spherecodes

    assert spherecodes.read_code(tmp_path / "bank.h5").wall_time < 2 + 3, report["settings"]


# --------------------------------------------------------------------------- writes that cannot complete


def _file_size_limit(nbytes):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return limit


_WRITE_PAST_THE_CHECK = """
import sys
import spherecodes.bank as bank
from spherecodes.cli import main
bank._check_room = lambda path, adding: None  # as if the disk filled up while the bank was written
main(sys.argv[1:], prog_name="spherecodes")
"""


@pytest.mark.parametrize("when", ["refused-before-writing", "failing-while-writing"])
def test_the_file_size_limit_gives_one_line_and_keeps_the_old_bank(tmp_path, when):
    """ulimit -f below what the new bank needs: refused up front, or (a disk filling meanwhile) while HDF5 writes."""
    bank = _bank(tmp_path)
    before = bank.read_bytes()
    args = ["generate", "--d", "11", "--k", "12", "--out", str(bank), "-q"]
    command = [sys.executable, "-m", "spherecodes"] if when == "refused-before-writing" else \
        [sys.executable, "-c", _WRITE_PAST_THE_CHECK]
    proc = subprocess.run(command + args, cwd=tmp_path, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                          preexec_fn=_file_size_limit(len(before) + 1024))
    assert proc.returncode == 1, proc.stderr  # not a crash (-11) while HDF5 shuts down
    line = _one_error_line(proc.stderr)
    assert ("ulimit -f" if when == "refused-before-writing" else "File too large") in line, line
    assert "unchanged" in line
    assert bank.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


def test_a_full_disk_is_refused_before_writing(tmp_path, monkeypatch):
    bank = _bank(tmp_path)
    before = bank.read_bytes()
    statvfs = os.statvfs

    def nearly_full(path):
        real = statvfs(path)
        return os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, 1, 1) + tuple(real)[5:])

    monkeypatch.setattr(os, "statvfs", nearly_full)
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "4", "--out", str(bank), "-q"])
    assert result.exit_code == 1
    assert re.search(r"free in .*unchanged", _one_error_line(result.stderr))
    assert bank.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


@pytest.mark.parametrize("command", ["generate", "rm"])
def test_a_file_name_too_long_for_the_file_system_is_refused_before_the_work(tmp_path, command):
    long_name = str(tmp_path / ("x" * 300))
    args = ["generate", "--d", "3", "--k", "4", "--out", long_name] if command == "generate" else \
        ["rm", long_name, "--code", "a"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "too long" in _one_error_line(result.stderr)
    assert list(tmp_path.iterdir()) == []


def _default_sigint():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as from a terminal: Python then installs its own handler


_STARTED = """
import runpy, sys
sys.stderr.write("python is up\\n")  # Ctrl-C before this point is Python's own start, not spherecodes'
sys.stderr.flush()
sys.argv = ["spherecodes", *sys.argv[1:]]
runpy.run_module("spherecodes", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3])
def test_ctrl_c_while_the_tool_is_loading_gives_no_traceback(tmp_path, delay):
    """Ctrl-C during the imports (about half a second): one line and exit 130, never a traceback."""
    import signal

    proc = subprocess.Popen([sys.executable, "-c", _STARTED, "bounds", "--d", "3", "--k", "10"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    assert proc.stderr.readline() == "python is up\n"
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, stderr)
    if proc.returncode == 130:
        assert stderr.strip().splitlines() == ["Interrupted; nothing was written."], stderr


_INTERRUPT_IN_A_CALLBACK = """
import builtins, weakref
real_import = builtins.__import__
class Probe:
    pass
def callback(ref):
    raise KeyboardInterrupt  # as SIGINT does when it lands in the import machinery's weakref clean-up
def importing(name, globals=None, locals=None, fromlist=(), level=0):
    if fromlist and "commands" in fromlist:
        builtins.__import__ = real_import
        probe = Probe(); ref = weakref.ref(probe, callback); del probe
    return real_import(name, globals, locals, fromlist, level)
builtins.__import__ = importing
import spherecodes.cli
print("the import went on")
"""


def test_ctrl_c_inside_an_import_callback_ends_with_the_one_line():
    """Python prints "Exception ignored" and a traceback for an interrupt in a weakref callback and goes on: seen
    once in 90 real Ctrl-Cs during the imports.  The tool ends as for any Ctrl-C while loading."""
    result = subprocess.run([sys.executable, "-c", _INTERRUPT_IN_A_CALLBACK], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "Interrupted; nothing was written.\n")


@pytest.mark.parametrize("suffix", [".h5", ".npy"])
def test_ctrl_c_with_overwrite_keeps_the_finished_code_it_would_replace(tmp_path, monkeypatch, suffix):
    from spherecodes import list_codes, solvers

    out = tmp_path / f"codes{suffix}"
    args = ["generate", "--d", "3", "--k", "10", "--method", "tammes", "--steps", "200", "--restarts", "2",
            "--device", "cpu", "--out", str(out), "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    before = out.read_bytes()

    def interrupt(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(solvers.Clock, "report", interrupt)
    result = CliRunner().invoke(main, args + ["--overwrite"])
    assert result.exit_code == 130
    assert "is unchanged: a run cut short does not replace it" in result.stderr and "Traceback" not in result.output
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    # A new name in the same bank still keeps the interrupted run's best code.
    if suffix == ".h5":
        result = CliRunner().invoke(main, args + ["--name", "cut-short"])
        assert result.exit_code == 130 and "kept the best code so far as cut-short" in result.stderr
        assert sorted(c["name"] for c in list_codes(out)) == ["cut-short", "tammes-d3-k10-s0"]


def test_certify_write_never_replaces_a_certificate_that_checks_with_one_that_does_not(tmp_path):
    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    before = bank_file.read_bytes()
    # No float64 interval is 1e-300 wide: the new certificate cannot be certified.
    result = CliRunner().invoke(main, ["certify", str(bank_file), "--write", "--tol", "1e-300", "-q"])
    assert result.exit_code == 1
    assert re.search(r"not certified to --tol 1e-300 .*the stored one, certified to tol 1e-09, is kept and .* "
                     r"is unchanged", _one_error_line(result.stderr))
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
    assert f"('spherecodes rm {bank_file} --code junk' removes that code" in _one_error_line(listed.stderr)
    # Each damaged entry blocks the rewrite that would copy it: both go in one rewrite.
    one = CliRunner().invoke(main, ["rm", str(bank_file), "--code", "link"])
    assert one.exit_code == 1 and "code 'junk'" in _one_error_line(one.stderr)
    both = CliRunner().invoke(main, ["rm", str(bank_file), "--code", "link", "--code", "junk"])
    assert both.exit_code == 0 and "deleted link, junk from" in both.output
    assert [c["name"] for c in list_codes(bank_file)] == ["auto-d3-k10-s0"]
    assert read_code(bank_file).k == 10


@pytest.mark.parametrize("command", [["rm", "--code", "auto-d3-k10-s0"], ["certify", "--write", "-q"]])
def test_a_bank_rewritten_in_place_in_a_read_only_directory_is_refused_with_what_to_do(tmp_path, monkeypatch,
                                                                                        command):
    import spherecodes.bank as bank_module

    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    before = bank_file.read_bytes()

    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    # Root ignores permission bits: the probe file the check creates fails as on a read-only directory.
    monkeypatch.setattr(bank_module.tempfile, "TemporaryFile", read_only)
    result = CliRunner().invoke(main, [command[0], str(bank_file), *command[1:]])
    assert result.exit_code == 1
    line = _one_error_line(result.stderr)
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
        in _one_error_line(start.stderr)
    report = CliRunner().invoke(main, ["report", str(bank_file)])
    assert report.exit_code == 1 and "choose one with --code NAME" in _one_error_line(report.stderr)


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
    assert result.exit_code in (1, 2) and says in _one_error_line(result.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_read_only_bank_is_not_replaced(tmp_path, monkeypatch):
    import spherecodes.bank as bank_module

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
            _one_error_line(result.stderr)
    assert bank_file.read_bytes() == before


def test_a_huge_name_is_not_echoed_in_full_and_an_empty_bank_says_so(tmp_path):
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--name", "a" * 70_000,
                                       "--out", str(tmp_path / "x.h5"), "-q"])
    line = _one_error_line(result.stderr)
    assert result.exit_code == 1 and "(70,000 characters): use 1-128 letters" in line and len(line) < 300
    bank_file = tmp_path / "b.h5"
    assert CliRunner().invoke(main, ["generate", "--d", "3", "--k", "10", "--out", str(bank_file), "-q"]).exit_code == 0
    with h5py.File(bank_file, "a") as fh:
        del fh["codes"]["auto-d3-k10-s0"]
    result = CliRunner().invoke(main, ["report", str(bank_file)])
    assert result.exit_code == 1
    assert "b.h5 holds no codes ('spherecodes generate --out" in _one_error_line(result.stderr)
