"""The command-line tool, through click's runner and as a real subprocess."""

import json
import math
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.cli import main


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)

    return invoke


def test_generate_writes_a_bank_and_reports_it(run, tmp_path):
    result = run("generate", "--d", 11, "--k", 12)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "spherecodes_d11_k12.h5").exists()
    assert "max-cos" in result.output and "etf" in result.output
    report = json.loads(run("report", "spherecodes_d11_k12.h5", "--json").output)
    for key in ("max_cos", "min_angle_deg", "separation", "rattlers", "theorem_3_9",
                "max_cos_lower_bound", "known_optimal", "d", "k", "method"):
        assert key in report
    assert report["max_cos"] == pytest.approx(-1 / 11, abs=1e-12)
    assert report["min_angle_deg"] == pytest.approx(math.degrees(math.acos(-1 / 11)), abs=1e-9)
    assert report["known_optimal"]["value"] is True
    assert set(report["separation"]) == {"min", "mean", "max"}
    assert set(report["theorem_3_9"]) >= {"lower", "upper", "applicable"}
    assert set(report["max_cos_lower_bound"]) >= {"value", "method"}
    assert report["rattlers"] == []


def test_generate_json_with_method_rotation_and_out(run, tmp_path):
    out = tmp_path / "mine.h5"
    result = run("generate", "--d", 4, "--k", 120, "--method", "600-cell", "--rotation", "random",
                 "--seed", 3, "--out", out, "--json")
    report = json.loads(result.output)
    assert report["name"] == "600-cell-d4-k120-s3"
    assert report["max_cos"] == pytest.approx((1 + 5**0.5) / 4, abs=1e-12)
    listing = run("ls", out).output
    assert "600-cell-d4-k120-s3" in listing


def test_bounds_json(run):
    data = json.loads(run("bounds", "--d", 512, "--k", 100000, "--json").output)
    assert set(data) >= {"d", "k", "theorem_3_9", "max_cos_lower_bound"}
    assert data["theorem_3_9"]["applicable"] is True
    assert 0 < data["theorem_3_9"]["lower"] < data["theorem_3_9"]["upper"]


def test_rm_removes_a_code(run, tmp_path):
    run("generate", "--d", 3, "--k", 4, "--out", "b.h5")
    run("generate", "--d", 3, "--k", 4, "--out", "b.h5", "--rotation", "random")
    assert run("rm", "b.h5", "--code", "etf-d3-k4").exit_code == 0
    assert "etf-d3-k4-s0" in run("ls", "b.h5").output
    assert "etf-d3-k4 " not in run("ls", "b.h5").output


def _one_line_error(result, code, match):
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: ")
    assert match in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "args,code,match",
    [
        (["generate", "--d", "0", "--k", "5"], 2, "--d"),
        (["generate", "--d", "x", "--k", "5"], 2, "not a valid integer"),
        (["generate", "--d", "3", "--k", "1"], 2, "--k"),
        (["generate", "--d", "3", "--k", "4", "--method", "e8"], 1, "does not apply"),
        (["generate", "--d", "3", "--k", "4", "--method", "cube"], 2, "cube"),
        (["generate", "--d", "3", "--k", "4", "--out", "missing/x.h5"], 1, "does not exist"),
        (["report", "nothing.h5"], 1, "no such bank file"),
        (["bounds", "--d", "-3", "--k", "5"], 2, "--d"),
        # 72 TB for the ETF alone: more than any machine has (10^5 x 10^5 fits a large server).
        (["generate", "--d", "3000000", "--k", "3000000"], 1, "needs about"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_file(run, tmp_path, args, code, match):
    _one_line_error(run(*args), code, match)
    assert list(tmp_path.iterdir()) == []


def test_existing_code_without_overwrite(run, tmp_path):
    run("generate", "--d", 11, "--k", 12)
    before = (tmp_path / "spherecodes_d11_k12.h5").read_bytes()
    _one_line_error(run("generate", "--d", 11, "--k", 12), 1, "already exists")
    assert (tmp_path / "spherecodes_d11_k12.h5").read_bytes() == before
    assert run("generate", "--d", 11, "--k", 12, "--overwrite").exit_code == 0


@pytest.mark.parametrize("content,match", [(b"plain text", "not an HDF5 file"), (b"", "not an HDF5 file")])
def test_report_refuses_non_banks(run, tmp_path, content, match):
    (tmp_path / "x.h5").write_bytes(content)
    _one_line_error(run("report", "x.h5"), 1, match)


def test_report_refuses_foreign_and_edited_banks(run, tmp_path):
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f["x"] = [1, 2, 3]
    _one_line_error(run("report", "foreign.h5"), 1, "not a spherecodes bank")
    run("generate", "--d", 3, "--k", 4)
    with h5py.File(tmp_path / "spherecodes_d3_k4.h5", "r+") as f:
        f["codes/etf-d3-k4/prototypes"][1, 1] = 0.5
    _one_line_error(run("report", "spherecodes_d3_k4.h5"), 1, "checksum")


def test_version_and_help(run):
    assert "0." in run("--version").output
    for command in ("generate", "report", "ls", "rm", "bounds"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Usage:" in result.output


@pytest.mark.slow
def test_real_subprocess_follows_the_readme(tmp_path):
    """A new user's session: generate, report, bounds, as separate processes."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cli = [sys.executable, "-m", "spherecodes"]

    def call(*args):
        return subprocess.run(cli + list(args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    gen = call("generate", "--d", "11", "--k", "12")
    assert gen.returncode == 0, gen.stderr
    rep = call("report", "spherecodes_d11_k12.h5", "--json")
    assert json.loads(rep.stdout)["max_cos"] == pytest.approx(-1 / 11, abs=1e-12)
    bounds = json.loads(call("bounds", "--d", "512", "--k", "100000", "--json").stdout)
    assert bounds["theorem_3_9"]["applicable"]
    bad = call("report", "missing.h5")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


# --------------------------------------------------------------------------- warm starts and effort


def test_generate_with_init_and_effort(run, tmp_path):
    # Start from a perturbed octahedron: the result is the octahedron's max-cos 0
    # (Fejes Toth 1943; Rankin's bound for 2d points), however it was reached.
    octahedron = np.concatenate([np.eye(3), -np.eye(3)])
    start = octahedron + 0.05 * np.random.default_rng(0).standard_normal((6, 3))
    np.save(tmp_path / "start.npy", start)
    result = run("generate", "--d", 3, "--k", 6, "--method", "maxsep", "--init", "start.npy", "--steps", 1,
                 "--no-certify", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert report["settings"]["init"] == "array"
    result = run("generate", "--d", 3, "--k", 40, "--method", "tammes", "--effort", "low", "--no-certify", "-q")
    assert result.exit_code == 0, result.output
    report = json.loads(run("report", "spherecodes_d3_k40.h5", "--json").output)
    assert report["settings"]["effort"] == "low"
    assert [st["stage"] for st in report["settings"]["stages"]] == ["anneal", "polish"]
    text = run("report", "spherecodes_d3_k40.h5").output
    assert "time spent" in text and "anneal 16 starts" in text


def test_generate_refuses_a_start_of_the_wrong_shape(run, tmp_path):
    np.save(tmp_path / "start.npy", np.random.default_rng(0).standard_normal((5, 3)))
    result = run("generate", "--d", 3, "--k", 6, "--method", "tammes", "--init", "start.npy")
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "holds 5 prototypes in d = 3; expected (K, d) = (6, 3)" in lines[0]
    np.save(tmp_path / "start.npy", np.random.default_rng(0).standard_normal((4, 3)))
    result = run("generate", "--d", 3, "--k", 4, "--method", "etf", "--init", "start.npy")
    assert result.exit_code != 0 and "--init applies to the tammes, softmax, maxsep or lines method" in result.output
