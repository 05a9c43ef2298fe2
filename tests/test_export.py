"""Getting prototypes out: export to NumPy / torch / text, rotations, labels in reports, Code attributes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from spherecodes import generate
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.cli import main
from spherecodes.code import make_code
from spherecodes.constructions import simplex_etf
from spherecodes.errors import SpherecodesError
from spherecodes.export import export_code, rotate_code

from conftest import dense_offdiagonal_cos, random_code


@pytest.fixture
def labelled():
    return make_code(random_code(30, 8, 1), method="tammes", labels=[f"class {i}" for i in range(30)])


def test_npy_and_text_files_hold_the_stored_numbers(labelled, tmp_path):
    w = labelled.prototypes
    assert np.array_equal(np.load(export_code(labelled, tmp_path / "p.npy")), w)
    assert np.array_equal(np.loadtxt(export_code(labelled, tmp_path / "p.csv"), delimiter=","), w)
    assert np.array_equal(np.loadtxt(export_code(labelled, tmp_path / "p.txt")), w)
    single = np.load(export_code(labelled, tmp_path / "p32.npy", dtype="float32"))
    assert single.dtype == np.float32 and np.array_equal(single, w.astype(np.float32))
    text32 = np.loadtxt(export_code(labelled, tmp_path / "p32.csv", dtype="float32"), delimiter=",")
    assert np.array_equal(text32.astype(np.float32), w.astype(np.float32))


def test_pt_is_a_tensor_or_a_dict_with_labels(labelled, tmp_path):
    tensor = torch.load(export_code(labelled, tmp_path / "p.pt"), weights_only=True)
    assert torch.equal(tensor, torch.from_numpy(labelled.prototypes))
    payload = torch.load(export_code(labelled, tmp_path / "l.pt", labels=True, dtype="float32"), weights_only=True)
    assert payload["labels"] == labelled.labels and payload["name"] == labelled.name
    assert payload["prototypes"].dtype == torch.float32 and payload["prototypes"].shape == (30, 8)


@pytest.mark.parametrize("kwargs, match", [
    ({"path": "p.h5"}, "end the file name in .npy, .pt, .pth, .csv or .txt"),
    ({"path": "p.npy", "labels": True}, "labels go into .pt files only"),
    ({"path": "p.npy", "dtype": "float16"}, "dtype"),
    ({"path": "p.npy", "rotation": "sideways"}, "rotation"),
])
def test_bad_exports_are_refused_and_write_nothing(labelled, tmp_path, kwargs, match):
    kwargs = dict(kwargs)
    path = tmp_path / kwargs.pop("path")
    with pytest.raises(SpherecodesError, match=match):
        export_code(labelled, path, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_file_needs_overwrite(labelled, tmp_path):
    path = export_code(labelled, tmp_path / "p.npy")
    with pytest.raises(SpherecodesError, match="pass --overwrite"):
        export_code(labelled, path, dtype="float32")
    export_code(labelled, path, dtype="float32", overwrite=True)
    assert np.load(path).dtype == np.float32


def test_rotation_keeps_every_cosine_and_the_certified_rho():
    k, d = 100, 512
    etf = make_code(simplex_etf(k, d), method="etf")
    etf.certificate = one_vs_rest_distances(etf.prototypes, device="cpu")
    turned = rotate_code(etf, seed=1)
    # The canonical simplex lives in K - 1 coordinates; the rotated one uses all d.
    assert (np.abs(etf.prototypes).max(axis=0) == 0).sum() == d - (k - 1)
    assert (np.abs(turned.prototypes).max(axis=0) > 0).all()
    np.testing.assert_allclose(dense_offdiagonal_cos(turned.prototypes), -1 / (k - 1), atol=1e-12)
    # The optimum for K <= d + 1 is rho = K / (K - 1) (the simplex); the rotated certificate still says so.
    assert turned.certificate.rho_lower == pytest.approx(k / (k - 1), abs=1e-9)
    assert turned.certificate.certified and turned.settings["rotation"] == {
        "seed": 1, "of": etf.name, "of_sha256": etf.sha256}
    # A closed form turned here is the one generate makes with that rotation seed.
    generated = generate(d, k, "etf", rotation="random", seed=1)
    assert turned.name == generated.name and np.allclose(turned.prototypes, generated.prototypes, atol=1e-12)


def test_code_attributes_and_a_short_repr():
    w = random_code(1000, 16, 2)
    code = make_code(w, method="external")
    assert code.max_cos == pytest.approx(dense_offdiagonal_cos(w).max(), abs=1e-14)
    assert code.min_angle_deg == pytest.approx(np.degrees(np.arccos(dense_offdiagonal_cos(w).max())), abs=1e-9)
    assert code.rho is None
    text = repr(code)
    assert "\n" not in text and len(text) < 200 and "not certified" in text
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    assert code.rho == code.certificate.rho_lower and "rho >=" in repr(code)


def test_cli_export_fetch_and_labels_in_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPHERECODES_CACHE", str(tmp_path / "cache"))
    runner = CliRunner()
    names = [f"name {i:02d}" for i in range(12)]
    (tmp_path / "classes.txt").write_text("\n".join(names) + "\n")
    assert runner.invoke(main, ["generate", "--d", "11", "--classes", "classes.txt", "--out", "b.h5",
                                "-q"]).exit_code == 0
    report = json.loads(runner.invoke(main, ["report", "b.h5", "--json"]).output)
    assert report["labels"] == names
    text = runner.invoke(main, ["report", "b.h5"]).output
    assert "labels" in text and "12, in row order: name 00, name 01" in text and "name 11" not in text
    result = runner.invoke(main, ["export", "b.h5", "--out", "head.pt", "--labels", "--rotation", "random",
                                  "--seed", "4"])
    assert result.exit_code == 0, result.output
    payload = torch.load(tmp_path / "head.pt", weights_only=True)
    assert payload["labels"] == names and payload["name"] == "etf-d11-k12-s4"
    result = runner.invoke(main, ["export", "b.h5", "--out", "head.npy", "--labels"])
    assert result.exit_code == 1 and result.output.startswith("Error: labels go into .pt files only")
    result = runner.invoke(main, ["fetch", "--d", "64", "--k", "200", "--out", "f.npy", "--rotation", "random",
                                  "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert "rotation" in result.output and "re-verified" in result.output
    fetched = np.load(tmp_path / "f.npy")
    assert fetched.shape == (200, 64)
    bundled = runner.invoke(main, ["fetch", "--d", "64", "--k", "200", "--json"])
    assert json.loads(bundled.output)["max_cos"] == pytest.approx(dense_offdiagonal_cos(fetched).max(), abs=1e-12)
    result = runner.invoke(main, ["fetch", "--d", "64", "--k", "200", "--out", "f.bin"])
    assert result.exit_code == 1 and "end --out in .h5" in result.output
