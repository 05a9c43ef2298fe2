"""Fuzzing the readers: damaged banks and arbitrary array files raise SpherecodesError or nothing.

The bank reader gets randomly damaged copies of a valid certified bank
(flipped bytes, deleted or retyped datasets and attributes); the array loader
gets random ``.npy`` headers and bodies, random text and random torch files.
Whatever they hold, the only exception allowed out is
:class:`spherecodes.SpherecodesError`, and a code that is returned is one a
reader could trust: finite unit rows whose checksum matches.

Hypothesis runs derandomized, so the suite is the same on every run; the
declared array sizes stay small enough that a reader which forgot to check
them would still not exhaust the machine (the 26 GiB header is a case of
``test_hostile_inputs.py``, run in a memory-limited subprocess).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from importlib import resources
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spherecodes
from spherecodes import SpherecodesError
from spherecodes.loading import load_code

GOOD_BANK = resources.files("spherecodes.banks").joinpath("auto-d3-k10.h5").read_bytes()
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _trustworthy(code) -> None:
    """What a successfully read code must satisfy, whatever the file was."""
    w = code.prototypes
    assert w.dtype == np.float64 and w.ndim == 2 and w.shape[0] >= 2
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1.0, atol=1e-9)
    assert code.sha256 == hashlib.sha256(np.ascontiguousarray(w, dtype="<f8").tobytes()).hexdigest()
    if code.certificate is not None:
        lo, hi = np.asarray(code.certificate.lo), np.asarray(code.certificate.hi)
        assert lo.shape == hi.shape == (w.shape[0],)
        assert np.all(lo <= hi + 1e-12)


def _read_or_refuse(path, **kwargs):
    try:
        code = spherecodes.read_code(path, **kwargs)
    except SpherecodesError as err:
        assert str(err) and "\n" not in str(err)
        return None
    _trustworthy(code)
    return code


# --------------------------------------------------------------------------- the bank reader


def _objects(path: Path) -> list[tuple[str, str | None]]:
    """Every (object path, attribute name or None) of a bank."""
    found = []
    with h5py.File(path, "r") as fh:
        def visit(name, obj):
            found.append((name, None))
            found.extend((name, key) for key in obj.attrs)

        found.extend(("/", key) for key in fh.attrs)
        fh.visititems(visit)
    return sorted(found, key=lambda item: (item[0], item[1] or ""))


_OBJECTS = None


def _bank_objects(tmp: Path) -> list[tuple[str, str | None]]:
    global _OBJECTS
    if _OBJECTS is None:
        probe = tmp / "probe.h5"
        probe.write_bytes(GOOD_BANK)
        _OBJECTS = _objects(probe)
    return _OBJECTS


REPLACEMENTS = st.one_of(
    st.just("a string"),
    st.just(""),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.just(np.uint64(2**64 - 1)),
    st.just(np.zeros(0)),
    st.just(np.full(3, np.nan)),
    st.just(np.arange(10) * 1000),
    st.just(np.eye(10, 3)),
    st.just(np.array([b"x", b"y"])),
    st.just(np.ones((2, 2, 2))),
    st.just(True),
    st.just('{"a": [1, 2'),
)


@FUZZ
@given(data=st.data())
def test_retyped_or_deleted_fields_are_refused_in_one_line(tmp_path, data):
    objects = _bank_objects(tmp_path)
    path = tmp_path / "bank.h5"
    path.write_bytes(GOOD_BANK)
    edits = data.draw(st.lists(st.tuples(st.sampled_from(objects), st.one_of(st.none(), REPLACEMENTS)),
                               min_size=1, max_size=3))
    with h5py.File(path, "r+") as fh:
        for (name, attr), value in edits:
            if name not in fh:
                continue
            obj = fh[name] if name != "/" else fh
            if attr is not None:
                if attr in obj.attrs:
                    del obj.attrs[attr]
                if value is not None:
                    obj.attrs[attr] = value
            elif name != "/":
                del fh[name]
                if value is not None and isinstance(obj, h5py.Dataset):
                    fh[name] = value
    _read_or_refuse(path)
    try:
        spherecodes.list_codes(path)
    except SpherecodesError as err:
        assert "\n" not in str(err)


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(GOOD_BANK) - 1), st.integers(1, 255)), min_size=1, max_size=8))
def test_flipped_bytes_are_refused_or_harmless(tmp_path, flips):
    data = bytearray(GOOD_BANK)
    for position, mask in flips:
        data[position] ^= mask
    path = tmp_path / "bank.h5"
    path.write_bytes(bytes(data))
    code = _read_or_refuse(path)
    if code is not None:  # the flips missed everything that is read, or were caught as harmless padding
        original = spherecodes.read_code(_good_copy(tmp_path))
        np.testing.assert_array_equal(code.prototypes, original.prototypes)


@FUZZ
@given(cut=st.integers(0, len(GOOD_BANK) - 1))
def test_truncated_banks_are_refused(tmp_path, cut):
    path = tmp_path / "bank.h5"
    path.write_bytes(GOOD_BANK[:cut])
    assert _read_or_refuse(path) is None or cut > len(GOOD_BANK) - 16


def _good_copy(tmp: Path) -> Path:
    path = tmp / "good.h5"
    path.write_bytes(GOOD_BANK)
    return path


# --------------------------------------------------------------------------- the array loaders


def _load_or_refuse(path: Path):
    try:
        code = load_code(path)
    except SpherecodesError as err:
        assert str(err) and "\n" not in str(err)
        return None
    _trustworthy(code)
    return code


DTYPES = st.sampled_from(["<f8", ">f8", "<f4", "<f2", "<i8", "|u1", "|b1", "<c16", "<U3", "|S2", "|O", "<M8[D]",
                          "|V8", "<f16", "[('a', '<f8')]", "zz"])
SHAPES = st.lists(st.integers(-2, 64), min_size=0, max_size=3).map(tuple)  # at most 2 MiB declared


def _header(descr: str, fortran, shape) -> bytes:
    if descr.startswith("["):
        text = "{'descr': %s, 'fortran_order': %r, 'shape': %r}" % (descr, fortran, shape)
    else:
        text = "{'descr': %r, 'fortran_order': %r, 'shape': %r}" % (descr, fortran, shape)
    header = text.encode("latin1")
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


@FUZZ
@given(descr=DTYPES, fortran=st.sampled_from([False, True, 1, "no"]), shape=SHAPES,
       body=st.binary(max_size=2048))
def test_npy_with_any_header_and_body(tmp_path, descr, fortran, shape, body):
    path = tmp_path / "x.npy"
    path.write_bytes(_header(descr, fortran, shape) + body)
    _load_or_refuse(path)


@FUZZ
@given(array=st.one_of(
    st.builds(lambda k, d, seed, scale: np.random.default_rng(seed).standard_normal((k, d)) * scale,
              st.integers(0, 6), st.integers(0, 6), st.integers(0, 9), st.sampled_from([1.0, 0.0, 1e300, 1e-300])),
    st.builds(lambda k, d: np.full((k, d), np.nan), st.integers(1, 4), st.integers(1, 4)),
    st.builds(lambda rows: np.array(rows, dtype=np.float32), st.lists(st.lists(
        st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=2, max_size=2), min_size=0, max_size=5)),
))
def test_npy_with_any_numbers(tmp_path, array):
    path = tmp_path / "x.npy"
    np.save(path, array)
    code = _load_or_refuse(path)
    if code is not None:
        assert code.prototypes.shape == array.shape


@FUZZ
@given(data=st.binary(max_size=4096), suffix=st.sampled_from([".npy", ".csv", ".txt", ".pt", ".pth"]))
def test_random_bytes_under_any_suffix(tmp_path, data, suffix):
    path = tmp_path / f"x{suffix}"
    path.write_bytes(data)
    _load_or_refuse(path)


TEXT_TOKENS = st.sampled_from(["1", "0", "-1", "0.5", "nan", "inf", "-inf", "1e400", "x", "", " ", ",", ";",
                               "0x1p-3", "1_0", "\t", "\u00a0", "１", "1,0", "#", "0,0,1", "\x00"])


@FUZZ
@given(rows=st.lists(st.lists(TEXT_TOKENS, min_size=0, max_size=5), min_size=0, max_size=6),
       sep=st.sampled_from([" ", ",", "\t", ", "]), suffix=st.sampled_from([".csv", ".txt"]))
def test_text_matrices(tmp_path, rows, sep, suffix):
    path = tmp_path / f"x{suffix}"
    path.write_text("\n".join(sep.join(row) for row in rows), encoding="utf-8")
    _load_or_refuse(path)


def _torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


TORCH_OBJECTS = st.one_of(
    st.builds(lambda k, d: torch.randn(k, d, generator=torch.Generator().manual_seed(k * 7 + d)),
              st.integers(0, 5), st.integers(0, 5)),
    st.builds(lambda dtype: torch.eye(3, dtype=dtype), st.sampled_from(
        [torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.bool, torch.complex64, torch.uint8])),
    st.just({"a": torch.eye(3), "b": torch.eye(3)}),
    st.just({"w": torch.eye(3)}),
    st.just({}),
    st.just([torch.eye(3)]),
    st.just(3.0),
    st.just(torch.ones(2, 2, 2)),
    st.just(torch.full((3, 3), float("nan"))),
)


@FUZZ
@given(obj=TORCH_OBJECTS, damage=st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=3))
def test_torch_files(tmp_path, obj, damage):
    data = bytearray(_torch_bytes(obj))
    for position, mask in damage:
        data[position % len(data)] ^= mask
    path = tmp_path / "x.pt"
    path.write_bytes(bytes(data))
    _load_or_refuse(path)


def test_torch_zip_with_a_huge_declared_member(tmp_path):
    """A torch archive whose tensor storage claims far more bytes than the file has."""
    data = _torch_bytes(torch.eye(3))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    path = tmp_path / "x.pt"
    with zipfile.ZipFile(path, "w") as out:
        for name, content in members.items():
            out.writestr(name, content[:4] if name.endswith("/data/0") else content)
    assert _load_or_refuse(path) is None


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".txt", ".pt"])
def test_a_directory_named_like_a_matrix(tmp_path, suffix):
    (tmp_path / f"x{suffix}").mkdir()
    assert _load_or_refuse(tmp_path / f"x{suffix}") is None
