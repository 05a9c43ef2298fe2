"""Real equiangular tight frames against the literature, and the exact square roots that carry their max-cos.

Independent facts: the Welch bound √((N − d)/(d(N − 1))) and the tight-frame
identity XᵀX = (N/d)·I that an ETF meets (Welch 1974; Strohmer & Heath 2003);
C Cᵀ = qI for Paley's conference matrices (Paley 1933); H Hᵀ = nI for Hadamard
matrices; a Steiner ETF from a 2-(v, k, 1) design has b = v(v − 1)/(k(k − 1))
dimensions, v(r + 1) vectors and α = 1/r (Fickus, Mixon & Tremain 2012, Thm. 1);
the real ETFs with N ≤ 50 that exist besides the simplex (Fickus & Mixon 2015,
Table 1); L₃(6) is SRG(36, 15, 6, 6) (Brouwer & Van Maldeghem 2022, §8.4).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from spherecodes import generate
from spherecodes.lines import max_abs_cos, structured_lines, welch_bound
from spherecodes.structured import best_structured_code, etf_code
from spherecodes.structured.etf import (
    etf_specs,
    hadamard_matrix,
    latin_square_graph,
    paley_conference_matrix,
    projective_triple_system,
)
from spherecodes.structured.srg import srg_parameters
from spherecodes.structured.surd import Surd, exact_sqrt

# Fickus & Mixon (2015), Table 1: the real ETFs with d + 1 < N ≤ 50 and d ≤ N/2 (conference: N = 2d for
# d = 3, 5, 7, 9, 13, 15, 19, 21, 23, 25; the others), with their Naimark complements (N − d, N).
KNOWN_REAL = {(3, 6), (5, 10), (7, 14), (9, 18), (13, 26), (15, 30), (19, 38), (21, 42), (23, 46), (25, 50),
              (6, 16), (7, 28), (15, 36)}
KNOWN_REAL |= {(n - d, n) for d, n in KNOWN_REAL}

# Small frames of every kind, with α from its closed form: Paley 1/√q, Steiner 1/r, Latin square 1/5 and 1/7.
CASES = [
    ("paley-5", 3, 6, 1 / math.sqrt(5)),
    ("paley-9", 5, 10, 1 / 3),
    ("paley-13", 7, 14, 1 / math.sqrt(13)),
    ("paley-25", 13, 26, 1 / 5),
    ("pairs-4", 6, 16, 1 / 3),        # K4: r = 3
    ("pairs-8", 28, 64, 1 / 7),       # K8: r = 7
    ("pairs-12", 66, 144, 1 / 11),    # Paley Hadamard of order 12
    ("triples-3", 7, 28, 1 / 3),      # the Fano plane: r = 3
    ("triples-4", 35, 120, 1 / 7),    # PG(3, 2): r = 7
    ("latin-15", 15, 36, 1 / 5),
    ("latin-21", 21, 36, 1 / 7),
    ("complement-pairs-4", 10, 16, 1 / 5),
    ("complement-triples-3", 21, 28, 1 / 9),
]


@pytest.mark.parametrize("key, d, n, alpha", CASES)
def test_frames_meet_the_welch_bound_and_are_tight(key, d, n, alpha):
    x = etf_code(key, antipodal=False).points()
    assert x.shape == (n, d)
    assert alpha == pytest.approx(math.sqrt((n - d) / (d * (n - 1))), abs=1e-15)  # the Welch bound
    g = x @ x.T
    off = g[~np.eye(n, dtype=bool)]
    assert np.allclose(np.abs(off), alpha, atol=1e-12)
    assert (off > 0).any() and (off < 0).any()
    assert np.allclose(x.T @ x, (n / d) * np.eye(d), atol=1e-12)
    assert np.allclose(np.diag(g), 1, atol=1e-14)


def test_listed_frames_are_the_known_ones():
    small = {(s.d, s.n) for s in etf_specs() if s.n <= 50}
    assert small <= KNOWN_REAL
    # Every one the constructions here reach (not (23, 46): its conference matrix is not Paley's, 45 is no prime power).
    assert KNOWN_REAL - small == {(23, 46)}


def test_steiner_parameters_follow_fickus_mixon_tremain():
    for spec in etf_specs():
        kind, _, arg = spec.key.partition("-")
        if kind == "pairs":
            v, k = int(arg), 2
        elif kind == "triples":
            v, k = 2 ** int(arg) - 1, 3
        else:
            continue
        r = (v - 1) // (k - 1)
        assert (spec.d, spec.n, spec.alpha) == (v * (v - 1) // (k * (k - 1)), v * (r + 1), Fraction(1, r))


@pytest.mark.parametrize("q", [5, 9, 13, 25, 49, 3, 7, 27])
def test_paley_conference_matrices(q):
    c = paley_conference_matrix(q)
    assert np.array_equal(c @ c.T, q * np.eye(q + 1, dtype=np.int64))
    assert np.array_equal(c, c.T if q % 4 == 1 else -c.T)
    assert not c.diagonal().any()


@pytest.mark.parametrize("n", [2, 4, 8, 12, 20, 24, 28, 32, 44, 64])
def test_hadamard_matrices(n):
    h = hadamard_matrix(n)
    assert np.array_equal(h @ h.T, n * np.eye(n, dtype=np.int64)) and (h[0] == 1).all()


def test_designs():
    t = projective_triple_system(4)
    # a Steiner triple system on 15 points: every pair of points in exactly one triple
    pairs = t.T @ t
    assert t.shape == (35, 15) and np.array_equal(pairs - np.diag(np.diag(pairs)), 1 - np.eye(15, dtype=np.int64))
    assert srg_parameters(latin_square_graph(6)).as_tuple() == (36, 15, 6, 6)


def test_surd_is_exact():
    a = exact_sqrt(Fraction(1, 13))
    assert isinstance(a, Surd) and str(a) == "1/√13" and str(-a) == "-1/√13"
    assert Fraction(1, 4) < a < Fraction(2, 7)             # 1/16 < 1/13 < 4/49
    assert sorted([Fraction(2, 7), a, Fraction(1, 4), -a]) == [-a, Fraction(1, 4), a, Fraction(2, 7)]
    assert a != 1 / math.sqrt(13) and a < math.inf and a > -1   # a float is a (different) rational
    assert exact_sqrt(Fraction(4, 9)) == Fraction(2, 3) and str(exact_sqrt(Fraction(5, 3))) == "√(5/3)"
    assert hash(a) == hash(exact_sqrt(Fraction(2, 26)))
    with pytest.raises(ValueError):
        Surd(Fraction(1, 4))


def test_antipodal_code_spectrum():
    code = etf_code("paley-13")
    a = exact_sqrt(Fraction(1, 13))
    # Each of the 13 other lines gives one point at α and one at −α; the antipode is at −1.
    assert code.spectrum() == {Fraction(1): 1, Fraction(-1): 1, a: 13, -a: 13}
    assert code.max_cos == a and code.max_cos_for(20) == a
    vectors = etf_code("pairs-4", antipodal=False)
    assert vectors.size == 16 and vectors.max_cos == Fraction(1, 3)


@pytest.mark.parametrize("d, k", [(7, 14), (6, 16), (15, 36), (21, 28), (9, 18)])
def test_lines_meet_the_welch_bound(d, k):
    rows, name = structured_lines(d, k)
    assert rows.shape == (k, d)
    assert max_abs_cos(rows) == pytest.approx(welch_bound(d, k), abs=1e-12)


def test_lines_method_proves_optimality():
    code = generate(7, 14, "lines")
    assert code.settings["construction"].startswith("half of Paley ETF q = 13")
    assert code.settings["gap"] == pytest.approx(0, abs=1e-12)


def test_structured_code_keeps_the_exact_root():
    """28 points in R^7: the Paley frame ±, 1/√13 ≈ 0.277, beats every other structured code (1/3)."""
    assert best_structured_code(7, 28).name == "Paley ETF q = 13 (14 lines), ±"
    code = generate(7, 28, "structured", rotation="none")
    assert code.settings["exact_max_cos"] == "1/√13"
    assert code.stats.max_cos == pytest.approx(1 / math.sqrt(13), abs=1e-12)
