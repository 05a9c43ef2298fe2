"""Hostile input files and flags: pickles, arrays, word vectors, special files, numbers at the edge.

Nothing from an input file is ever executed, its declared sizes are checked before anything is
allocated, and every flag is range-checked where it enters.

The cases of the table run through :func:`hostile_support.run_case`; the
tests after it check what must still work, and what the table cannot.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from hostile_support import (
    CLASSES, HUGE_SEED, MARKER, Payload, Table, class_file, limit_memory, make_bank, make_fifo, npy_header,
    one_error_line, pickle_payload, run_case,
)
from hostile_support import web  # noqa: F401 (the fixture)
from spherecodes.cli import main

CASES = Table()
case = CASES.case


# ---- code execution: nothing is ever unpickled unless the user names the gensim format


@case("pickle-as-glove-txt-assign", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "glove.6B.300d.txt").write_bytes(pickle_payload(f))
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "glove.6B.300d.txt"]


@case("pickle-as-glove-txt-privileged", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "glove.6B.300d.txt").write_bytes(pickle_payload(f))
    return ["generate", "--d", "3", "--method", "privileged", "--classes", class_file(f),
            "--embeddings", f / "glove.6B.300d.txt", "--out", f / "new.h5"]


@case("pickle-as-glove-txt-report", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "glove.6B.300d.txt").write_bytes(pickle_payload(f))
    return ["report", make_bank(f), "--classes", class_file(f), "--embeddings", f / "glove.6B.300d.txt"]


@case("pickle-gzipped-as-glove", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    (f / "vectors.txt.gz").write_bytes(gzip.compress(pickle_payload(f)))
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt.gz"]


@case("pickle-protocol-0-as-glove", says=("embedding",))
def _(f, web):
    (f / "vectors.txt").write_bytes(pickle.dumps(Payload(f), protocol=0))
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt"]


@case("torch-pickle-payload", says=(r"evil\.pt", "tensor"))
def _(f, web):
    torch.save({"prototypes": Payload(f)}, f / "evil.pt")
    return ["certify", f / "evil.pt"]


@case("npy-object-array-payload", says=(r"evil\.npy", "object"))
def _(f, web):
    np.save(f / "evil.npy", np.array([Payload(f), 1], dtype=object), allow_pickle=True)
    return ["certify", f / "evil.npy"]


@case("npz-named-npy", says=(r"evil\.npy", r"\.npy"))
def _(f, web):
    np.savez(f / "evil.npz", a=np.array([Payload(f)], dtype=object), b=np.eye(3))
    (f / "evil.npz").rename(f / "evil.npy")
    return ["certify", f / "evil.npy"]


@case("class-means-object-array-payload", says=("--class-means|means", "object"))
def _(f, web):
    np.save(f / "means.npy", np.array([Payload(f), 1], dtype=object), allow_pickle=True)
    return ["assign", make_bank(f), "--class-means", f / "means.npy"]


@case("npy-header-with-code", says=(r"x\.npy",))
def _(f, web):
    header = b"{'descr': __import__('os').system('touch " + str(f / MARKER).encode() + b"'), 'shape': (3, 3)}"
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    (f / "x.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(72))
    return ["certify", f / "x.npy"]


@case("word2vec-header-claims-a-billion-words", says=(r"vectors\.txt", "1000000000"))
def _(f, web):
    (f / "vectors.txt").write_text("1000000000 300\n" + "cat " + " ".join(["0.1"] * 300) + "\n")
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt"]

# ---- numbers at the boundary: seeds, times, tolerances, sizes, URLs and methods


@case("generate-seed-past-2-63", exit=2, says=("--seed", "9223372036854775807"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--method", "tammes", "--steps", "20", "--restarts", "1",
            "--seed", HUGE_SEED, "--out", f / "new.h5"]


@case("assign-seed-past-2-63", exit=2, says=("--seed",))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((10, 3)))
    return ["assign", make_bank(f), "--class-means", f / "means.npy", "--seed", HUGE_SEED]


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
    return ["certify", make_bank(f), "--tol", "nan"]


@case("semantic-weight-nan", exit=2, says=("--semantic-weight",))
def _(f, web):
    return ["generate", "--d", "3", "--method", "privileged", "--classes", class_file(f), "--embeddings",
            f / "none.txt", "--semantic-weight", "nan", "--out", f / "new.h5"]


@case("max-memory-overflows", exit=2, says=("--max-memory",), subprocess=True)
def _(f, web):
    return ["certify", make_bank(f), "--max-memory", "1e999GiB"]


@case("report-max-memory-too-small", exit=1, says=("reading code", "--max-memory"))
def _(f, web):
    return ["report", make_bank(f), "--max-memory", "1kB"]


@case("report-max-memory-garbage", exit=2, says=("--max-memory",))
def _(f, web):
    return ["report", make_bank(f), "--max-memory", "4 parsecs"]


@case("certify-workers-and-scheduler", exit=2, says=("not both",))
def _(f, web):
    return ["certify", make_bank(f), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"]


@case("certify-workers-too-many", exit=2, says=("--workers",))
def _(f, web):
    return ["certify", make_bank(f), "--workers", "100000"]


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
    (f / "x.npy").write_bytes(npy_header((3, 1_200_000_000)).ljust(928, b"\0"))
    return ["certify", f / "x.npy"]


@case("class-means-header-claims-26-GiB", says=(r"means\.npy", "1200000000"), subprocess=True)
def _(f, web):
    (f / "means.npy").write_bytes(npy_header((3, 1_200_000_000)).ljust(928, b"\0"))
    return ["assign", make_bank(f), "--class-means", f / "means.npy"]


@case("npy-complex", says=(r"x\.npy", "complex"))
def _(f, web):
    np.save(f / "x.npy", np.eye(3) + 0j)
    return ["certify", f / "x.npy"]


@case("class-means-complex", says=("means.npy", "complex"))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((10, 3)) + 1j)
    return ["assign", make_bank(f), "--class-means", f / "means.npy"]


@case("class-means-empty", says=("means.npy", r"\(0,\)|empty"))
def _(f, web):
    np.save(f / "means.npy", np.zeros(0))
    return ["assign", make_bank(f), "--class-means", f / "means.npy"]


@case("class-means-wrong-rows", says=(r"\(4, 3\)", "10"))
def _(f, web):
    np.save(f / "means.npy", np.random.default_rng(0).standard_normal((4, 3)))
    return ["assign", make_bank(f), "--class-means", f / "means.npy"]


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
    (f / "x.npy").write_bytes(npy_header((100, 3)) + bytes(80))
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
    return ["certify", make_fifo(f, "x.npy")]


@case("fifo-as-classes", says=("classes.txt", "not a regular file"), subprocess=True)
def _(f, web):
    return ["generate", "--d", "3", "--classes", make_fifo(f, "classes.txt"), "--out", f / "new.h5"]


@case("dev-zero-as-classes", says=("/dev/zero", "not a regular file"), subprocess=True)
def _(f, web):
    return ["generate", "--d", "3", "--classes", "/dev/zero", "--out", f / "new.h5"]


@case("dev-zero-as-embeddings", says=("/dev/zero", "not a regular file"), subprocess=True)
def _(f, web):
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", "/dev/zero"]


@case("dev-zero-as-class-means", says=("/dev/zero", "not a regular file"), subprocess=True)
def _(f, web):
    return ["assign", make_bank(f), "--class-means", "/dev/zero"]


@case("fifo-as-bank", says=("bank.h5", "not a regular file"), subprocess=True)
def _(f, web):
    return ["report", make_fifo(f, "bank.h5")]


@case("real-gensim-save-with-auto-format", says=("pickle", "--embeddings-format gensim"))
def _(f, web):
    from gensim.models import KeyedVectors

    vectors = KeyedVectors(3)
    vectors.add_vectors(CLASSES, np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32))
    vectors.save(str(f / "vectors.kv"))
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.kv"]

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
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt", "--missing-words",
            "random", "--dry-run"]


@case("glove-zero-vectors-are-not-missing-words", says=("class0", "zero"))
def _(f, web):
    (f / "vectors.txt").write_text("".join(f"class{i} 0 0 0\n" for i in range(10)))
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt", "--dry-run"]


# ---- word vectors and arrays: what a line or a header declares


@case("glove-bz2-one-line-of-4-MiB", says=(r"vectors\.txt\.bz2", "line 1", "longer than 1.0 MiB"))
def _(f, web):
    import bz2

    (f / "vectors.txt.bz2").write_bytes(bz2.compress(b"class0 " + b"0 " * (2 * 2**20) + b"\n"))  # 300 bytes
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt.bz2", "--dry-run"]


@case("glove-gz-third-line-of-2-MiB", says=(r"vectors\.txt\.gz", "line 3", "longer than 1.0 MiB"))
def _(f, web):
    body = b"class0 0.1 0.2\nclass1 0.3 0.4\nclass2 " + b"1" * (2 * 2**20) + b"\n"
    (f / "vectors.txt.gz").write_bytes(gzip.compress(body))
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt.gz", "--dry-run"]


@case("word2vec-binary-gz-word-of-8-MiB", says=(r"vectors\.bin\.gz", "2.0 MiB in a row hold no ' '", "ends at a space"))
def _(f, web):
    """gensim grows its buffer by 100 KB looking for the space after a word: a gigabyte-long word took hours."""
    body = b"2 3\n" + b"x" * (8 * 2**20) + b" " + bytes(12) + b"class1 " + bytes(12)
    (f / "vectors.bin.gz").write_bytes(gzip.compress(body))  # 8 KB
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.bin.gz", "--dry-run"]


@case("word2vec-header-dimension-zero", says=(r"vectors\.txt", "dimension 0"))
def _(f, web):
    (f / "vectors.txt").write_text("5 0\nclass0\nclass1\n")
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt", "--dry-run"]


@case("npy-negative-length", says=(r"x\.npy", r"\(-1, 3\)", "negative"))
def _(f, web):
    (f / "x.npy").write_bytes(npy_header((-1, 3)) + bytes(72))  # numpy reads a count of -1 as "all there is"
    return ["certify", f / "x.npy"]


@case("npy-length-of-41-digits", says=(r"x\.npy", "truncated|header"))
def _(f, web):
    (f / "x.npy").write_bytes(npy_header((10**40, 3)))
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
    return ["export", make_bank(f), "--out", f / "x.npy", "--rotation", "random", "--seed", HUGE_SEED]


@case("generate-out-name-of-300-bytes", says=("too long", "255 bytes"))
def _(f, web):
    return ["generate", "--d", "3", "--k", "7", "--out", f / ("x" * 297 + ".h5")]


# ---- more inputs and flags at the edge


@case("glove-with-a-byte-order-mark", says=(r"vectors\.txt", "byte-order mark", "'class0'"))
def _(f, web):
    """The mark would be read as part of 'class0', which then 'has no word vector'."""
    lines = "".join(f"class{i} {i} 1 2\n" for i in range(10))
    (f / "vectors.txt").write_bytes(b"\xef\xbb\xbf" + lines.encode())
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt", "--dry-run"]


@case("glove-line-of-nan", says=("class9", "not finite"))
def _(f, web):
    lines = "".join(f"class{i} {i} 1 2\n" for i in range(9)) + "class9 nan 1 2\n"
    (f / "vectors.txt").write_text(lines)
    return ["assign", make_bank(f), "--classes", class_file(f), "--embeddings", f / "vectors.txt", "--dry-run"]


@case("time-limit-1e-300", says=(r"--time-limit 1e-300 s", "cannot hold", r"above ~\d"))
def _(f, web):
    """Shown as the number given (it was '0.0 s'), with a limit that would hold."""
    return ["generate", "--d", "3", "--k", "7", "--method", "tammes", "--time-limit", "1e-300", "--out", f / "new.h5"]


@case("max-memory-half-a-byte", exit=2, says=("--max-memory", "at least 1 byte"))
def _(f, web):
    return ["certify", make_bank(f), "--max-memory", "0.5B"]


@case("certify-workers-zero", exit=2, says=("--workers", "1<=x<=256"))
def _(f, web):
    return ["certify", make_bank(f), "--workers", "0"]


@case("npy-structured-dtype", says=(r"x\.npy", "real numbers"))
def _(f, web):
    np.save(f / "x.npy", np.zeros((3, 3), dtype=[("a", "<f8"), ("b", "<f8")]))
    return ["certify", f / "x.npy"]


@case("npy-fortran-order-declaring-24-GB", says=(r"x\.npy", "24000000000 bytes", "truncated|header"))
def _(f, web):
    (f / "x.npy").write_bytes(npy_header((3, 10**9), fortran=True))
    return ["certify", f / "x.npy"]


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
    args = ["assign", str(make_bank(tmp_path)), "--classes", str(class_file(tmp_path)), "--embeddings",
            str(tmp_path / "vectors.kv"), "--embeddings-format", "gensim", "--dry-run"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("command", ["assign", "report", "generate"])
def test_help_says_that_only_the_gensim_format_unpickles(command):
    result = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "pickle" in text and "auto never" in text, text

def test_a_seed_past_2_63_is_refused_where_a_code_is_made():
    import spherecodes

    with pytest.raises(spherecodes.SpherecodesError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
        spherecodes.make_code(_simplex(3, np.float64), method="etf", seed=2**70)


def _sparse_npy(path: Path, shape) -> Path:
    """A .npy file whose header declares ``shape`` of float64, as long as that says but holding no block on disk."""
    header = npy_header(shape)
    with open(path, "wb") as fh:
        fh.write(header)
        fh.truncate(len(header) + 8 * int(np.prod(shape)))
    return path


@pytest.mark.parametrize("command", ["certify", "class-means", "init"])
def test_a_sparse_npy_declaring_40_GB_is_refused_before_allocating(tmp_path, command):
    """The header and the file length agree (40 GB), but the file holds no data: the memory check refuses it."""
    x = _sparse_npy(tmp_path / "x.npy", (5, 1_000_000_000))
    args = {"certify": ["certify", x],
            "class-means": ["assign", make_bank(tmp_path), "--class-means", x],
            "init": ["generate", "--d", "5", "--k", "1000000000", "--method", "tammes", "--init", x,
                     "--out", tmp_path / "new.h5"]}[command]
    result = CliRunner().invoke(main, [str(a) for a in args])  # unchecked, 40 GB would not fit: MemoryError
    assert result.exit_code == 1, result.output
    # generate refuses a code of (10^9, 5) itself (40 GB of prototypes) before it reads the start file
    expected = "the code itself.*needs about" if command == "init" else "x.npy.*needs about|needs about.*x.npy"
    assert re.search(expected, one_error_line(result.stderr)), result.stderr


def test_a_sparse_npy_within_memory_but_past_max_memory_is_refused(tmp_path):
    x = _sparse_npy(tmp_path / "x.npy", (1000, 10_000))  # 80 MB
    result = CliRunner().invoke(main, ["certify", str(x), "--max-memory", "50MB"])
    assert result.exit_code == 1
    assert re.search(r"x\.npy.*--max-memory", one_error_line(result.stderr)), result.stderr


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
    line = one_error_line(result.stderr)
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


@pytest.mark.slow
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
    # Stopped by its clock, not by running out of a count it could never reach (how soon is a benchmark's question:
    # a wall-clock bound fails on a loaded machine).
    assert report["settings"]["stop_reason"] == "time_limit", report["settings"]


# --------------------------------------------------------------------------- the table, run


@pytest.mark.parametrize("name", CASES.names())
def test_hostile_input_gets_one_line_and_changes_nothing(name, tmp_path, web, monkeypatch):
    run_case(CASES[name], name, tmp_path, web, monkeypatch)


# --------------------------------------------------------------------------- a damaged installation


def _set_cell(path: Path, column: str, text: str) -> None:
    """Write ``text`` into ``column`` of the table's row for (16, 100), the size the command plans."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(path.read_text())))
    row = next(r for r in rows if r[:2] == ["16", "100"])
    row[rows[0].index(column)] = text
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())


_DAMAGED_TABLES = {
    "empty": lambda path: path.write_bytes(b""),
    "a-column-missing": lambda path: path.write_text(path.read_text().replace("tammes_max_cos", "tammes_maxcos", 1)),
    "letters-as-d": lambda path: path.write_text(path.read_text().replace("\n16,100,", "\nsixteen,100,", 1)),
    "nan-cosine": lambda path: _set_cell(path, "tammes_max_cos", "nan"),
    "not-utf8": lambda path: path.write_bytes(b"d,k\xff\xfe" + path.read_bytes()),
    "ragged-row": lambda path: path.write_text(path.read_text().replace("\n16,100,", "\n16\n100,", 1)),
    "link-to-dev-zero": lambda path: (path.unlink(), path.symlink_to("/dev/zero")),
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", list(_DAMAGED_TABLES))
def test_a_damaged_table_of_measurements_in_a_copy_of_the_package_gives_one_line(tmp_path, damage):
    """``auto`` reads data/optimiser_table.csv to plan its run: a damaged copy (a link to /dev/zero included, read
    unbounded it grew to gigabytes) is one line that says to reinstall, never a traceback."""
    import shutil

    import spherecodes

    package = Path(spherecodes.__file__).parent
    copy = tmp_path / "site" / "spherecodes"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if not (copy / "banks").exists():  # the bundled catalog is installed as spherecodes.banks
        shutil.copytree(package.parent / "banks", copy / "banks", ignore=shutil.ignore_patterns("__pycache__"))
    _DAMAGED_TABLES[damage](copy / "data" / "optimiser_table.csv")
    run = ("import sys, spherecodes; assert spherecodes.__file__.startswith(sys.argv[1]), spherecodes.__file__; "
           "from spherecodes.cli import main; main(sys.argv[2:], prog_name='spherecodes')")
    proc = subprocess.run([sys.executable, "-c", run, str(copy), "generate", "--d", "16", "--k", "100", "--out",
                           str(tmp_path / "b.h5")], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(tmp_path / "site")}, preexec_fn=limit_memory)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    line = one_error_line(proc.stderr)
    assert "optimiser_table.csv" in line and "damaged" in line and "reinstall spherecodes" in line, line
    assert not (tmp_path / "b.h5").exists()


# --------------------------------------------------------------------------- estimates before long work


def _lines_in_the_plane(path: Path, k: int) -> Path:
    angles = np.random.default_rng(0).uniform(0, np.pi, k)
    np.save(path, np.stack([np.cos(angles), np.sin(angles)], axis=1))
    return path


def test_certify_lines_of_200000_rows_says_what_it_will_take_before_it_starts(tmp_path):
    """200,000 lines in R^2: every pair's cosine (2 * 10^10 of them) ran for minutes without a word."""
    x = _lines_in_the_plane(tmp_path / "x.npy", 200_000)
    proc = subprocess.Popen([sys.executable, "-m", "spherecodes", "certify", str(x), "--lines"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert first.startswith("estimate: the float64 cosines of all 19,999,900,000 pairs of 200,000 lines in R^2 on cpu: ~"), first


def test_certify_lines_past_a_day_is_refused_before_it_starts(tmp_path, monkeypatch):
    import spherecodes.cli.commands.certify as certify_command

    monkeypatch.setattr(certify_command, "ABSURD_SECONDS", 1e-6)  # as a size whose pairs take more than a day
    x = _lines_in_the_plane(tmp_path / "x.npy", 2_000)
    result = CliRunner().invoke(main, ["certify", str(x), "--lines"])
    assert result.exit_code == 1, result.output
    assert re.search(r"all 1,999,000 pairs of 2,000 lines in R\^2: estimated at ~.*; not started",
                     one_error_line(result.stderr)), result.stderr


def test_the_table_is_large_enough():
    """The tables of the five themes together hold at least the 150 cases that the single table was held to."""
    import importlib

    themes = ("inputs", "banks", "downloads", "signals", "names")
    assert sum(len(importlib.import_module(f"test_hostile_{theme}").CASES) for theme in themes) >= 150
