"""``spherecodes report`` says what reading the bank verified and how long each check took."""

import json

import h5py
import numpy as np
from click.testing import CliRunner

from spherecodes.bank import write_code
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.cli import main
from spherecodes.code import make_code
from spherecodes.constructions import cross_polytope


def test_report_names_the_checks_done_on_read_with_their_times(tmp_path):
    code = make_code(cross_polytope(12, 6), method="cross-polytope")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    write_code(tmp_path / "b.h5", code)
    runner = CliRunner()
    report = json.loads(runner.invoke(main, ["report", str(tmp_path / "b.h5"), "--json"]).output)
    verified = report["verified"]
    assert verified["certificate"] is True
    assert verified["checksum_seconds"] > 0 and verified["certificate_seconds"] > 0 and verified["statistics_seconds"] > 0
    text = runner.invoke(main, ["report", str(tmp_path / "b.h5")]).output
    assert "SHA-256 and unit norms of the 12 prototypes" in text and "witness re-evaluated against all 12" in text


def test_a_certificate_that_fails_on_read_is_reported_as_failed(tmp_path):
    code = make_code(cross_polytope(12, 6), method="cross-polytope")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    write_code(tmp_path / "b.h5", code)
    with h5py.File(tmp_path / "b.h5", "r+") as f:
        hi = f["codes/cross-polytope-d6-k12/certificate/hi"]
        hi[...] = np.asarray(hi) + 0.5  # claims every class is farther than its witness shows
    result = CliRunner().invoke(main, ["report", str(tmp_path / "b.h5")])
    assert result.exit_code != 0
    assert "witness FAILED when re-evaluated" in result.output


def test_report_of_an_orbit_code_within_max_memory_checks_its_generators(tmp_path):
    import itertools

    from spherecodes.bank import read_estimate

    # The even-weight words of length 10 on the sphere: one orbit of sign changes; nearest words differ in
    # two places (cosine 1 - 4/10) and balance around each word, so rho = 4/10 for every class.
    words = np.array([c for c in itertools.product([0, 1], repeat=10) if sum(c) % 2 == 0])
    code = make_code((1.0 - 2.0 * words) / np.sqrt(10), method="external", name="even")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    write_code(tmp_path / "b.h5", code)
    estimate = read_estimate(tmp_path / "b.h5", max_memory=2**30)
    assert "class 0 against all K" in estimate.what and estimate.limit == 2**30
    runner = CliRunner()
    result = runner.invoke(main, ["report", str(tmp_path / "b.h5"), "--json", "--max-memory", "1GiB"])
    report = json.loads(result.output)
    assert abs(report["rho"]["lower"] - 0.4) < 1e-14 and report["verified"]["certificate_by_orbit"] is True
    assert report["verified"]["orbit"] is True
    # Too little memory for even the prototypes: refused in one line before anything is read.
    small = runner.invoke(main, ["report", str(tmp_path / "b.h5"), "--max-memory", "10kB"])
    assert small.exit_code == 1 and small.output.count("\n") == 1
    assert small.output.startswith("Error: reading code 'even' (K = 512, d = 10)") and "--max-memory" in small.output


def test_an_uncertified_code_in_a_bank_names_the_command_that_certifies_it():
    from spherecodes.report import code_report, format_code_report

    code = make_code(cross_polytope(6, 3), method="cross-polytope", name="octa")
    text = format_code_report(code_report(code, bank="my heads.h5"))
    assert "not certified (spherecodes certify 'my heads.h5' --code octa --write adds it)" in text
