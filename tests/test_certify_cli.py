"""``spherecodes certify`` on banks and on matrices from other tools, and the stored certificate."""

import json
import math

import h5py
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from spherecodes.bank import read_code
from spherecodes.cli import main
from spherecodes.constructions import cross_polytope, regular_polygon, simplex_etf


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    return lambda *args: runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


def certify_json(run, *args):
    result = run("certify", *args, "--json", "--device", "cpu")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".txt", ".pt", ".pth"])
def test_certifies_matrices_from_other_tools(run, tmp_path, suffix):
    w = simplex_etf(10, 12)
    path = tmp_path / f"protos{suffix}"
    if suffix == ".npy":
        np.save(path, w)
    elif suffix == ".csv":
        np.savetxt(path, w, delimiter=",", fmt="%.17g")
    elif suffix == ".txt":
        np.savetxt(path, w, fmt="%.17g")
    else:
        torch.save({"weight": torch.from_numpy(w)} if suffix == ".pth" else torch.from_numpy(w), path)
    report = certify_json(run, path)
    # Jiang et al. (2024) Thm 3.3: the simplex ETF has rho = K/(K-1); the stored
    # prototypes are that ETF rounded to float64, so the interval holds it up to rounding.
    rounding = 1e-15
    assert report["rho"]["lower"] - rounding <= 10 / 9 <= report["rho"]["upper"] + rounding
    assert report["rho"]["upper"] - report["rho"]["lower"] <= 1e-9
    assert report["rho"]["certified"] is True
    assert report["softmax_rattlers"] == []
    assert len(report["one_vs_rest"]["lo"]) == 10


def test_closed_form_rhos(run, tmp_path):
    np.save(tmp_path / "cp.npy", cross_polytope(9, 6))
    np.save(tmp_path / "poly.npy", regular_polygon(7))
    assert certify_json(run, "cp.npy")["rho"]["lower"] == pytest.approx(1.0, abs=1e-12)
    assert certify_json(run, "poly.npy")["rho"]["lower"] == pytest.approx(1 - math.cos(2 * math.pi / 7), abs=1e-12)


def test_write_stores_the_certificate_in_the_bank(run, tmp_path):
    assert run("generate", "--d", 6, "--k", 9, "--no-certify").exit_code == 0
    bank = tmp_path / "spherecodes_d6_k9.h5"
    assert read_code(bank).certificate is None
    assert "not certified" in run("report", bank).output
    assert run("certify", bank, "--write", "--device", "cpu").exit_code == 0
    code = read_code(bank)
    assert code.certificate.rho_lower == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(code.certificate.lo, json.loads(run("report", bank, "--json").output)["one_vs_rest"]["lo"])
    # The stored supports give back the optimal features h_k = r_k / |r_k|: unit vectors
    # whose inner product with w_k - w_j is at least rho for every j (Lemma C.6).
    h = code.certificate.features
    np.testing.assert_allclose(np.linalg.norm(h, axis=1), 1.0, atol=1e-12)
    w = code.prototypes
    margins = np.einsum("kd,kd->k", h, w)[:, None] - h @ w.T
    np.fill_diagonal(margins, np.inf)
    assert margins.min() >= code.certificate.rho_lower - 1e-12


def test_generate_certifies_by_default(run, tmp_path):
    report = json.loads(run("generate", "--d", 11, "--k", 12, "--json", "--device", "cpu").output)
    assert report["rho"]["lower"] == pytest.approx(12 / 11, abs=1e-12)
    # The simplex attains the cap K/(K-1) on rho, so nothing is left between them.
    assert report["theorem_3_9"]["best_upper"] == pytest.approx(12 / 11, rel=1e-15)
    assert report["theorem_3_9"]["gap"] == pytest.approx(0, abs=1e-12)


def test_certificate_of_other_prototypes_is_refused(run, tmp_path):
    run("generate", "--d", 6, "--k", 9, "--device", "cpu")
    bank = tmp_path / "spherecodes_d6_k9.h5"
    with h5py.File(bank, "r+") as f:
        f["codes/cross-polytope-d6-k9/certificate"].attrs["prototypes_sha256"] = "0" * 64
    result = run("report", bank)
    assert result.exit_code == 1 and "certificate belongs to other prototypes" in result.output


def test_duplicates_give_a_zero_distance_not_a_crash(run, tmp_path):
    w = np.vstack([simplex_etf(5, 5), simplex_etf(5, 5)[:1]])
    np.save(tmp_path / "dup.npy", w)
    report = certify_json(run, "dup.npy")
    assert report["rho"]["lower"] == 0.0 and report["rho"]["upper"] == 0.0
    assert report["one_vs_rest"]["duplicates"] == [[0, 5]]


def one_line_error(result, match):
    assert result.exit_code == 1, result.output
    assert len(result.output.strip().splitlines()) == 1 and match in result.output
    assert "Traceback" not in result.output


def test_non_unit_rows_are_refused_unless_normalize(run, tmp_path):
    w = simplex_etf(4, 3)
    w[2] *= 1.5
    np.save(tmp_path / "w.npy", w)
    one_line_error(run("certify", "w.npy"), "largest deviation from 1: 0.5")
    assert certify_json(run, "w.npy", "--normalize")["rho"]["lower"] == pytest.approx(4 / 3, abs=1e-12)


@pytest.mark.parametrize(
    "name,writer,match",
    [
        ("w.npy", lambda p: np.save(p, np.ones(3)), "2-D"),
        ("w.npy", lambda p: np.save(p, np.array([[1.0, 0.0], [np.inf, 0.0]])), "finite"),
        ("w.npy", lambda p: np.save(p, np.array([[1.0, 0.0]])), "at least 2 rows"),
        ("w.csv", lambda p: p.write_text(""), "empty"),
        ("w.csv", lambda p: p.write_text("1,0\n0,abc\n"), "cannot read"),
        ("w.json", lambda p: p.write_text("[]"), "unknown file type"),
        ("w.pt", lambda p: torch.save({"a": torch.eye(2), "b": torch.eye(3)}, p), "exactly one 2-D tensor"),
    ],
)
def test_bad_matrices(run, tmp_path, name, writer, match):
    writer(tmp_path / name)
    one_line_error(run("certify", name), match)


def test_write_needs_a_bank(run, tmp_path):
    np.save(tmp_path / "w.npy", simplex_etf(3))
    one_line_error(run("certify", "w.npy", "--write"), "--write")
