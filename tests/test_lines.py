"""Line packings against independent facts: equiangular tight frames at the Welch bound, mutually unbiased
bases at the orthoplex bound, orthonormal bases at 0, and the coherence against a direct computation."""

import json
import math

import numpy as np
import pytest
import torch
from click.testing import CliRunner

import spherecodes
from spherecodes.cli import main
from spherecodes.code import make_code
from spherecodes.errors import SpherecodesError
from spherecodes.options import TammesOptions
from spherecodes.lines import (
    antipodal_half, line_closed_form, line_lower_bound, line_report, max_abs_cos, orthoplex_bound, structured_lines,
    welch_bound,
)
from spherecodes.solvers import line_packing
from spherecodes.solvers.line_packing import LineCosines

from conftest import random_code

GOLDEN = (1 + math.sqrt(5)) / 2


def icosahedron_diagonals():
    """The 6 lines through opposite vertices of the icosahedron: (0, ±1, ±φ) and cyclic shifts, one per pair."""
    rows = np.array([[0, 1, GOLDEN], [0, 1, -GOLDEN], [1, GOLDEN, 0], [1, -GOLDEN, 0], [GOLDEN, 0, 1], [-GOLDEN, 0, 1]])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def brute_coherence(w):
    g = np.abs(w @ w.T)
    np.fill_diagonal(g, -1)
    return g.max()


def test_the_icosahedron_diagonals_meet_the_welch_bound_exactly():
    w = icosahedron_diagonals()
    assert welch_bound(3, 6) == pytest.approx(1 / math.sqrt(5), rel=1e-15)
    report = line_report(make_code(w, method="external"))
    assert report["max_abs_cos"] == pytest.approx(1 / math.sqrt(5), abs=1e-15)
    assert report["optimal"] and report["lower_bound"]["method"] == "Welch bound"


@pytest.mark.parametrize("d,k", [(5, 3), (8, 8), (64, 10)])
def test_an_orthonormal_basis_has_coherence_zero_and_is_optimal(d, k):
    rotation = np.linalg.qr(np.random.default_rng(d).standard_normal((d, d)))[0]
    w = np.eye(k, d) @ rotation
    report = line_report(make_code(w, method="external"))
    assert report["max_abs_cos"] < 1e-15 and report["optimal"]
    rows, name = line_closed_form(d, k)
    assert name == "orthonormal basis" and brute_coherence(rows) == 0


@pytest.mark.parametrize("d,k", [(3, 10), (8, 40), (20, 25)])
def test_coherence_is_the_largest_absolute_cosine(d, k):
    w = random_code(k, d, seed=k)
    assert max_abs_cos(w) == pytest.approx(brute_coherence(w), abs=1e-15)


def test_welch_and_orthoplex_bounds_match_their_formulas_and_hold_for_random_codes():
    for d, k in [(3, 5), (4, 11), (4, 20), (10, 100)]:
        welch = math.sqrt((k - d) / (d * (k - 1)))
        assert welch_bound(d, k) == pytest.approx(welch, rel=1e-15)
        ortho = orthoplex_bound(d, k)
        assert (ortho is None) == (k <= d * (d + 1) / 2)
        bound = line_lower_bound(d, k).value
        assert bound == pytest.approx(max(welch, ortho or 0), rel=1e-15)
        for seed in range(5):
            assert brute_coherence(random_code(k, d, seed)) >= bound


@pytest.mark.parametrize("k", [3, 5, 12])
def test_lines_in_the_plane_are_optimal_equally_spaced(k):
    """K lines in R^2 are K points of the circle at double the angle: at best pi/K apart."""
    rows, _ = line_closed_form(2, k)
    assert brute_coherence(rows) == pytest.approx(math.cos(math.pi / k), abs=1e-15)
    assert line_lower_bound(2, k).value == pytest.approx(math.cos(math.pi / k), abs=1e-15)


def test_the_antipodal_half_keeps_one_vector_per_line():
    cross = np.vstack([np.eye(4), -np.eye(4)])
    assert np.array_equal(antipodal_half(cross), np.eye(4))
    assert antipodal_half(np.vstack([np.eye(4), -np.eye(4)[:3]])) is None


def test_half_of_e8_is_120_lines_at_one_half():
    rows, name = structured_lines(8, 120)
    g = np.abs(rows @ rows.T)
    np.fill_diagonal(g, 0)
    # The 240 roots of E8 have inner products 0, ±1/2, ±1: their 120 lines meet at |cos| 0 or 1/2.
    assert "E8" in name and rows.shape == (120, 8)
    assert set(np.round(g[np.triu_indices(120, 1)], 12)) == {0.0, 0.5}


def test_nine_mutually_unbiased_bases_of_r16_meet_the_orthoplex_bound():
    """The Kerdock code of length 16 with the axes: 9 real MUBs (the most R^16 has), 144 lines at 1/4 = 1/sqrt(16)."""
    rows, _ = structured_lines(16, 144)
    assert rows.shape == (144, 16)
    assert brute_coherence(rows) == pytest.approx(0.25, abs=1e-15)
    assert 144 > 16 * 17 / 2 and orthoplex_bound(16, 144) == 0.25


def test_line_packing_finds_the_icosahedron_diagonals_from_random_starts():
    result = line_packing(3, 6, device="cpu", restarts=4, steps=300)
    assert result.method == "lines"
    assert brute_coherence(result.prototypes) == pytest.approx(1 / math.sqrt(5), abs=1e-9)
    assert result.settings["max_abs_cos"] == pytest.approx(brute_coherence(result.prototypes), abs=1e-15)


def test_the_polish_linearisation_is_the_derivative_of_the_signed_cosines():
    """The gradients the LP uses against central finite differences of s <w_i, w_j>."""
    w = random_code(7, 3, seed=1)
    lin = LineCosines().active(w, 0.0)
    assert len(lin.values) == 21  # every pair has one of +-cos >= 0
    rng = np.random.default_rng(0)
    delta = rng.standard_normal(w.shape) * 1e-6
    for f in range(len(lin.values)):
        blocks = np.flatnonzero(lin.funcs == f)
        linear = sum(lin.grads[b] @ delta[lin.rows[b]] for b in blocks)
        i, j = lin.rows[blocks]
        sign = np.sign(lin.values[f] * (w[i] @ w[j]))
        moved = w + delta
        exact = sign * (moved[i] @ moved[j]) - lin.values[f]
        assert linear == pytest.approx(exact, abs=1e-11)


def test_generate_lines_takes_28_equiangular_lines_in_r7():
    code = spherecodes.generate(7, 28, "lines")
    assert code.method == "lines"
    assert brute_coherence(code.prototypes) == pytest.approx(1 / 3, abs=1e-14)
    with pytest.raises(SpherecodesError, match="method 'lines' takes options of type LinesOptions"):
        spherecodes.generate(7, 28, "lines", TammesOptions(steps=5))


def test_cli_generate_lines_and_certify_lines_of_a_foreign_file(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["generate", "--d", "3", "--k", "4", "--method", "lines", "--out",
                                  str(tmp_path / "l.h5"), "--quiet"])
    assert result.exit_code == 0, result.output
    text = runner.invoke(main, ["report", str(tmp_path / "l.h5")]).output
    assert "max |cos|" in text and "Welch bound; optimal" in text
    for dtype in (np.float64, np.float32):
        torch.save(torch.from_numpy(icosahedron_diagonals().astype(dtype)), tmp_path / "ebv.pt")
        result = runner.invoke(main, ["certify", str(tmp_path / "ebv.pt"), "--lines", "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["max_abs_cos"] == pytest.approx(1 / math.sqrt(5), abs=1e-7)
        # float64 rows meet the bound; float32 rows miss it by their rounding, which the gap shows.
        assert report["optimal"] == (dtype == np.float64)
        assert -1e-15 <= report["lower_bound"]["gap"] < 1e-6
    refused = runner.invoke(main, ["certify", str(tmp_path / "l.h5"), "--lines", "--write"])
    assert refused.exit_code != 0 and "drop --write" in refused.output
