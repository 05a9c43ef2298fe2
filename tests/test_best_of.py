"""Best-of ``auto``, ``--method structured``, warm starts, ``codes``, and structured codes in fetch and the catalog.

The expected values are facts from the literature, not this code's output:
an extended BCH or Golay code of length n and minimum distance δ, mapped to
±1/√n, has max-cos 1 − 2δ/n (extended BCH [64,10,28]: 1/8; extended Golay
[24,12,8]: 1/3); the E8 roots have max-cos 1/2 and the configurations derived
from E8 and the Leech lattice (56 lines in R^7, Schläfli 27 in R^6, Clebsch
16 in R^5, 891 in R^22, 4600 in R^23) have 1/3, 1/4, 1/5, 1/4, 1/3 (Conway &
Sloane 1999, ch. 1 and 4); the icosahedron has max-cos 1/√5; ρ ≥ 1 − max-cos
for every code, with equality for the BCH code's balanced nearest shells.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes import generate
from spherecodes.best_of import AUTO_WORK, NATIVE_WORK, lift, plan_auto
from spherecodes.cli import main
from spherecodes.errors import SpherecodesError
from spherecodes.solvers import tammes
from spherecodes.stats import max_cos
from spherecodes.structured import best_structured_code

EXACT = 1e-12


def candidates(code) -> dict:
    return {c["kind"]: c for c in code.settings["auto"]["candidates"]}


def test_auto_returns_the_bch_code_at_64_by_1000_with_its_exact_value():
    code = generate(64, 1000)
    assert abs(code.stats.max_cos - 1 / 8) < EXACT
    auto = code.settings["auto"]
    assert auto["winner"] == "extended BCH [64,10,28], 1000 of 1024 words"
    assert auto["exact_max_cos"] == "1/8" and code.method == "auto" and code.name == "auto-d64-k1000-s0"
    # The optimisers cannot catch up in the budget: skipped, and the report says why.
    found = candidates(code)
    assert found["tammes"]["skipped"].startswith("skipped:") and found["tammes"]["max_cos"] is None
    assert found["structured"]["exact"] == "1/8"


@pytest.mark.parametrize("d,k,value", [(16, 288, 1 / 4), (22, 891, 1 / 4), (23, 4600, 1 / 3), (24, 4096, 1 / 3),
                                       (64, 4000, 1 / 8)])
def test_auto_reaches_the_structured_optima_without_being_named(d, k, value):
    code = generate(d, k)
    assert abs(code.stats.max_cos - value) < EXACT


@pytest.mark.slow
@pytest.mark.parametrize("d,k,value", [(8, 240, 1 / 2), (7, 56, 1 / 3), (6, 27, 1 / 4), (5, 16, 1 / 5)])
def test_auto_reaches_the_e8_configurations(d, k, value):
    code = generate(d, k)
    assert abs(code.stats.max_cos - value) < EXACT


def test_auto_keeps_the_optimal_closed_forms():
    assert generate(11, 12).method == "etf" and generate(3, 6).method == "cross-polytope"


@pytest.mark.slow
def test_auto_is_tammes_where_nothing_else_fits():
    auto, alone = generate(3, 13, seed=2), generate(3, 13, "tammes", seed=2)
    assert auto.method == "tammes" and auto.name == "tammes-d3-k13-s2"
    np.testing.assert_array_equal(auto.prototypes, alone.prototypes)


@pytest.mark.slow
@pytest.mark.parametrize("n", [8, 12])
def test_auto_is_never_worse_than_tammes_and_reaches_the_3d_optima(n):
    auto, alone = generate(3, n, seed=1), generate(3, n, "tammes", seed=1)
    assert auto.stats.max_cos <= alone.stats.max_cos + EXACT
    # Auto runs tammes exactly as --method tammes does, as one of its candidates.
    assert candidates(auto)["tammes"]["max_cos"] == pytest.approx(alone.stats.max_cos, abs=EXACT)
    if n == 12:
        assert auto.stats.max_cos == pytest.approx(1 / math.sqrt(5), abs=1e-9)


@pytest.mark.slow
def test_auto_is_deterministic_for_a_seed():
    first, second = generate(5, 16, seed=3), generate(5, 16, seed=3)
    assert first.sha256 == second.sha256


def test_plan_runs_the_optimisers_only_where_they_can_compete():
    native = plan_auto(64, 1000)  # BCH lives in R^64: 6.4e10 multiply-adds of annealing are over the limit
    assert native.run_random and native.run_warm and native.work > NATIVE_WORK
    embedded = plan_auto(100, 1000)  # BCH from R^64: the optimiser can use the 36 free dimensions
    assert embedded.structured.native_d == 64 and embedded.work <= AUTO_WORK
    assert not embedded.run_random and not embedded.run_warm
    big = plan_auto(64, 100_000, time_limit=60)  # only the warm start, and only under a time limit
    assert big.run_random and not big.run_warm
    assert plan_auto(64, 100_000).run_warm


@pytest.mark.slow
def test_auto_shares_the_time_limit_among_the_optimisers():
    code = generate(20, 100, time_limit=2.0, steps=50)  # Nordstrom–Robinson from R^16, and both optimisers
    limits = [c for c in code.settings["auto"]["candidates"] if c["kind"].startswith("tammes")]
    assert all(c["skipped"] is None for c in limits)
    assert code.settings["time_limit"] is not None and code.settings["time_limit"] <= 2.0


def test_warm_start_is_never_worse_than_its_start():
    start = best_structured_code(16, 100).points(100)
    result = tammes(16, 100, init=start, steps=30, restarts=2, device="cpu")
    assert result.max_cos <= max_cos(start) + EXACT
    assert result.settings["init"] == "array"


def test_lift_moves_an_embedded_code_off_its_subspace_deterministically():
    points = best_structured_code(10, 240).points(240)  # E8 roots, zero-padded to R^10
    moved = lift(points, 8, seed=5)
    assert np.all(np.abs(moved[:, 8:]) > 0)
    np.testing.assert_array_equal(moved, lift(points, 8, seed=5))
    assert np.allclose(np.linalg.norm(moved, axis=1), 1)


def test_structured_method_and_its_error():
    code = generate(24, 4096, "structured")
    assert abs(code.stats.max_cos - 1 / 3) < EXACT and code.name == "structured-d24-k4096"
    assert code.settings["exact_max_cos"] == "1/3"
    with pytest.raises(SpherecodesError, match=r"no structured code has 30 points in R\^3; the largest in R\^3 is"):
        generate(3, 30, "structured")


# --------------------------------------------------------------------------- command line


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(main, [str(a) for a in args])

    return invoke


def test_codes_lists_the_structured_codes_with_exact_max_cos(run):
    result = run("codes", "--d", 24, "--k", 4096, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["codes"]
    assert rows[0]["name"] == "extended Golay [24,12,8]" and rows[0]["max_cos"] == "1/3" and rows[0]["size"] == 4096
    assert all(r["size"] >= 4096 for r in rows)
    text = run("codes", "--d", 8)
    assert text.exit_code == 0 and "E8 roots" in text.output and "240" in text.output


def test_cli_structured_method_reports_the_exact_value(run):
    result = run("generate", "--d", 16, "--k", 288, "--method", "structured", "--no-certify")
    assert result.exit_code == 0, result.output
    assert "structured code" in result.output and "max-cos 1/4" in result.output
    assert "exactly 1/4" in result.output
    error = run("generate", "--d", 3, "--k", 30, "--method", "structured")
    lines = error.output.strip().splitlines()
    assert error.exit_code == 1 and len(lines) == 1 and lines[0].startswith("Error: no structured code has 30")


@pytest.mark.slow
def test_cli_readme_main_job_is_the_certified_bch_code(run):
    result = run("generate", "--d", 64, "--k", 1000, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["exact_max_cos"] == "1/8" and report["auto"]["winner"].startswith("extended BCH [64,10,28]")
    assert report["rho"]["certified"] and abs(report["rho"]["lower"] - 7 / 8) < 1e-9
    text = run("report", "spherecodes_d64_k1000.h5")
    assert "auto chose" in text.output and "extended BCH [64,10,28], 1000 of 1024 words: max-cos 1/8" in text.output
    assert "tammes from random starts: skipped" in text.output


@pytest.mark.slow
def test_fetch_builds_the_structured_code_that_beats_the_bundled_bank(run):
    result = run("fetch", "--d", 64, "--k", 1000, "--url", "", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["name"] == "structured-d64-k1000" and report["fetched"]["source"] == "structured code"
    assert abs(report["max_cos"] - 1 / 8) < EXACT and report["exact_max_cos"] == "1/8"
    by_name = run("fetch", "structured-d24-k4096", "--url", "", "-q")
    assert by_name.exit_code == 0 and "exact max-cos 1/3" in by_name.output
    bank = json.loads(run("fetch", "--d", 64, "--k", 1000, "--method", "tammes", "--url", "", "--json").output)
    assert bank["fetched"]["source"] == "bundled" and bank["max_cos"] > 1 / 8


def test_catalog_list_offers_the_structured_codes_that_beat_its_banks(run):
    result = run("catalog", "list", "--url", "")
    assert result.exit_code == 0, result.output
    assert "structured-d64-k1000" in result.output and "max-cos 1/8 (tammes-d64-k1000: 0.14556" in result.output
    rows = json.loads(run("catalog", "list", "--url", "", "--json").output)
    offered = [r for r in rows if r["source"] == "built on demand"]
    assert {"structured-d64-k1000", "structured-d32-k1000"} <= {r["name"] for r in offered}
    assert all(r["max_cos"] < r["beats_max_cos"] for r in offered)
