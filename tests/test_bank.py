"""Banks: round trips, atomic writes, and every refusal of a damaged or foreign file."""

import os
import tempfile

import h5py
import numpy as np
import pytest

from spherecodes.bank import _writing as bank_module
from spherecodes.bank import (
    FORMAT_NAME,
    PLAIN_SCHEMA_VERSION,
    SCHEMA_VERSION,
    delete_code,
    list_codes,
    read_code,
    write_code,
)
from spherecodes.code import make_code, prototype_checksum
from spherecodes.constructions import cell_600, construct, simplex_etf
from spherecodes.errors import SpherecodesError

from conftest import random_code


def etf_code(**kwargs):
    return make_code(simplex_etf(12, 11), method="etf", **kwargs)


def test_round_trip_keeps_everything(tmp_bank):
    labels = [f"class {i} é" for i in range(120)]
    code = make_code(
        construct("600-cell", 4, 120, rotation="random", seed=9),
        method="600-cell",
        labels=labels,
        settings={"rotation": "random", "nested": {"a": [1, 2]}},
        seed=9,
        device="cpu",
        wall_time=0.25,
    )
    write_code(tmp_bank, code)
    back = read_code(tmp_bank)
    assert back.prototypes.tobytes() == code.prototypes.tobytes()
    assert back.labels == labels
    assert back.settings == code.settings
    assert (back.seed, back.method, back.device, back.wall_time) == (9, "600-cell", "cpu", 0.25)
    assert back.sha256 == prototype_checksum(code.prototypes)
    assert back.created_utc == code.created_utc and back.package_version == code.package_version
    assert back.stats.max_cos == code.stats.max_cos
    np.testing.assert_array_equal(back.stats.nearest_cos, code.stats.nearest_cos)
    np.testing.assert_array_equal(back.stats.nearest_index, code.stats.nearest_index)


def test_bank_is_readable_with_plain_h5py(tmp_bank):
    """The documented layout, read without spherecodes (docs/bank-format.md)."""
    write_code(tmp_bank, etf_code())
    with h5py.File(tmp_bank, "r") as f:
        assert f.attrs["format"] == FORMAT_NAME
        assert f.attrs["schema_version"] == PLAIN_SCHEMA_VERSION  # no certificate keeps class 0 alone
        g = f["codes/etf-d11-k12"]
        w = g["prototypes"][()]
        assert g.attrs["method"] == "etf"
        assert (g.attrs["k"], g.attrs["d"]) == (12, 11)
        import hashlib

        assert hashlib.sha256(w.astype("<f8").tobytes()).hexdigest() == g.attrs["sha256"]
        assert g["stats"].attrs["max_cos"] == pytest.approx(-1 / 11, abs=1e-14)
        assert g["stats"].attrs["known_optimal"]


def test_several_codes_list_and_delete(tmp_bank):
    write_code(tmp_bank, etf_code())
    write_code(tmp_bank, make_code(cell_600(), method="600-cell"))
    write_code(tmp_bank, make_code(random_code(30, 5), method="random", name="rnd"))
    assert [c["name"] for c in list_codes(tmp_bank)] == ["600-cell-d4-k120", "etf-d11-k12", "rnd"]
    with pytest.raises(SpherecodesError, match="holds 3 codes"):
        read_code(tmp_bank)
    delete_code(tmp_bank, "rnd")
    assert [c["name"] for c in list_codes(tmp_bank)] == ["600-cell-d4-k120", "etf-d11-k12"]
    assert read_code(tmp_bank, "600-cell-d4-k120").k == 120
    with pytest.raises(SpherecodesError, match="no code 'rnd'.*available: 600-cell-d4-k120, etf-d11-k12"):
        delete_code(tmp_bank, "rnd")


def test_existing_code_needs_overwrite(tmp_bank):
    write_code(tmp_bank, etf_code())
    with pytest.raises(SpherecodesError, match="already exists"):
        write_code(tmp_bank, etf_code())
    replacement = make_code(construct("etf", 11, 12, rotation="random", seed=1), method="etf", name="etf-d11-k12")
    write_code(tmp_bank, replacement, overwrite=True)
    assert read_code(tmp_bank).sha256 == replacement.sha256


def test_interrupted_write_leaves_the_old_bank_intact(tmp_bank, monkeypatch):
    write_code(tmp_bank, etf_code())
    before = tmp_bank.read_bytes()
    original = bank_module._write_stats

    def crash_half_way(*args):
        original(*args)
        raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-write

    monkeypatch.setattr(bank_module, "_write_stats", crash_half_way)
    with pytest.raises(KeyboardInterrupt):
        write_code(tmp_bank, make_code(cell_600(), method="600-cell"))
    assert tmp_bank.read_bytes() == before
    assert [p.name for p in tmp_bank.parent.iterdir()] == [tmp_bank.name]
    assert read_code(tmp_bank).name == "etf-d11-k12"


def test_failed_first_write_leaves_no_file(tmp_bank, monkeypatch):
    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(bank_module, "_write_group", crash)
    with pytest.raises(SpherecodesError, match=r"\(disk full\); it is unchanged"):
        write_code(tmp_bank, etf_code())
    assert not bank_module.hdf5_left_unclosed()  # HDF5 itself wrote nothing that failed: it closed the file
    assert list(tmp_bank.parent.iterdir()) == []


# ----------------------------------------------------------------- refusals


def test_missing_file(tmp_path):
    with pytest.raises(SpherecodesError, match="no such bank file"):
        read_code(tmp_path / "nope.h5")


def test_non_hdf5_file(tmp_path):
    path = tmp_path / "notes.h5"
    path.write_text("hello\n")
    with pytest.raises(SpherecodesError, match="not an HDF5 file"):
        read_code(path)
    with pytest.raises(SpherecodesError, match="not an HDF5 file"):
        write_code(path, etf_code())
    assert path.read_text() == "hello\n"


def test_truncated_file(tmp_bank):
    write_code(tmp_bank, make_code(random_code(2000, 8), method="random", name="big"))
    data = tmp_bank.read_bytes()
    tmp_bank.write_bytes(data[: len(data) // 2])
    with pytest.raises(SpherecodesError, match="truncated or damaged"):
        read_code(tmp_bank)


def test_foreign_hdf5_file(tmp_bank):
    with h5py.File(tmp_bank, "w") as f:
        f["data"] = np.eye(3)
    with pytest.raises(SpherecodesError, match="not a spherecodes bank"):
        list_codes(tmp_bank)


def test_newer_schema_is_refused(tmp_bank):
    write_code(tmp_bank, etf_code())
    with h5py.File(tmp_bank, "r+") as f:
        f.attrs["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(SpherecodesError, match="newer.*upgrade spherecodes"):
        read_code(tmp_bank)


def test_edited_prototypes_fail_the_checksum(tmp_bank):
    write_code(tmp_bank, etf_code())
    with h5py.File(tmp_bank, "r+") as f:
        w = f["codes/etf-d11-k12/prototypes"]
        w[0, 0] = w[0, 0] + 1e-15
    with pytest.raises(SpherecodesError, match="checksum"):
        read_code(tmp_bank)


def _tamper(path, values, update_checksum=True, **attrs):
    """Replace the prototypes of the only code (optionally with a matching checksum)."""
    with h5py.File(path, "r+") as f:
        g = f["codes"][next(iter(f["codes"]))]
        del g["prototypes"]
        g["prototypes"] = values
        if update_checksum:
            g.attrs["sha256"] = prototype_checksum(values)
        for key, value in attrs.items():
            g.attrs[key] = value


def test_non_finite_prototypes_are_refused_even_with_a_matching_checksum(tmp_bank):
    write_code(tmp_bank, etf_code())
    w = simplex_etf(12, 11)
    w[3, 2] = np.nan
    _tamper(tmp_bank, w)
    with pytest.raises(SpherecodesError, match="finite"):
        read_code(tmp_bank)


def test_non_unit_rows_are_refused(tmp_bank):
    write_code(tmp_bank, etf_code())
    _tamper(tmp_bank, simplex_etf(12, 11) * 1.001)
    with pytest.raises(SpherecodesError, match="unit vectors"):
        read_code(tmp_bank)


def test_shape_mismatch_is_refused(tmp_bank):
    write_code(tmp_bank, etf_code())
    _tamper(tmp_bank, simplex_etf(11, 11))
    with pytest.raises(SpherecodesError, match="shape"):
        read_code(tmp_bank)


def test_missing_output_directory(tmp_path):
    with pytest.raises(SpherecodesError, match="does not exist"):
        write_code(tmp_path / "missing" / "bank.h5", etf_code())


def test_unwritable_output_directory(tmp_path):
    directory = tmp_path / "locked"
    directory.mkdir()
    directory.chmod(0o555)
    try:
        if os.access(directory, os.W_OK) and os.geteuid() == 0:
            directory = "/sys"  # root ignores permission bits; /sys is mounted read-only
            try:
                with tempfile.TemporaryFile(dir=directory):
                    pytest.skip("no unwritable directory available to this user")
            except OSError:
                pass
        with pytest.raises(SpherecodesError, match="not writable"):
            write_code(os.path.join(directory, "bank.h5"), etf_code())
    finally:
        (tmp_path / "locked").chmod(0o755)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"name": "bad/name"}, "invalid code name"),
        ({"labels": ["a"] * 12}, "distinct"),
        ({"labels": ["a", "b"]}, "one per row"),
        ({"settings": {"x": object()}}, "JSON"),
    ],
)
def test_make_code_refuses_bad_metadata(kwargs, match):
    with pytest.raises(SpherecodesError, match=match):
        etf_code(**kwargs)
