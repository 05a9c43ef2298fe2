"""Files that peer projects publish: pickles refused with a conversion that works, float64 rows from float32 arithmetic."""

import json
import pickle
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from spherecodes.cli import main
from spherecodes.constructions import cross_polytope


def certify(path, *extra):
    return CliRunner().invoke(main, ["certify", str(path), "--quiet", "--device", "cpu", *extra])


def test_a_pickle_is_refused_with_a_one_line_conversion_that_works(tmp_path):
    """The command in the message, run as printed, writes a .npy that certifies to the cross-polytope's rho, 1."""
    w = cross_polytope(8, 4)
    (tmp_path / "protos.pkl").write_bytes(pickle.dumps(w))
    done = subprocess.run([sys.executable, "-m", "spherecodes", "certify", "protos.pkl", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("Error:")
    command = re.search(r"(python -c .*)$", done.stderr.strip())[1]
    argv = shlex.split(command)
    converted = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True)
    assert converted.returncode == 0, converted.stderr
    report = json.loads(certify(tmp_path / "protos.npy", "--json").stdout)
    # Every class of the cross-polytope is at distance 1 from the hull of the others (its face through 0).
    assert report["rho"]["lower"] == pytest.approx(1.0, abs=1e-12)


def float32_arithmetic_rows(k, d):
    """Unit rows normalised in float32 and saved as float64: norms 1 +- 1e-7 (the HPN reference prototypes)."""
    w = np.random.default_rng(0).standard_normal((k, d)).astype(np.float32)
    return (w / np.linalg.norm(w, axis=1, keepdims=True)).astype(np.float64)


@pytest.mark.parametrize("suffix", [".pt", ".npy"])
def test_float64_rows_within_the_file_tolerance_are_normalised_and_recorded(tmp_path, suffix):
    w = float32_arithmetic_rows(200, 64)
    deviation = np.abs(np.linalg.norm(w, axis=1) - 1).max()
    assert 1e-9 < deviation < 1e-6
    path = tmp_path / f"hpn{suffix}"
    torch.save(torch.from_numpy(w), path) if suffix == ".pt" else np.save(path, w)
    result = certify(path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["settings"]["normalized"] is True
    assert report["settings"]["normalized_from"] == "float64"
    assert report["settings"]["norm_deviation"] == pytest.approx(deviation, rel=1e-9)
    # The statistics are those of the rows normalised in float64.
    unit = w / np.linalg.norm(w, axis=1, keepdims=True)
    gram = unit @ unit.T
    np.fill_diagonal(gram, -np.inf)
    assert report["max_cos"] == pytest.approx(gram.max(), abs=1e-14)
    assert "normalised in float64 from float64" in certify(path).stdout


def test_float64_rows_beyond_the_file_tolerance_need_normalize(tmp_path):
    w = cross_polytope(6, 3) * (1 + 3e-6)
    np.save(tmp_path / "loose.npy", w)
    result = certify(tmp_path / "loose.npy")
    assert result.exit_code != 0
    assert "may miss 1 by 1e-06" in result.output and "--normalize" in result.output
    assert certify(tmp_path / "loose.npy", "--normalize").exit_code == 0
