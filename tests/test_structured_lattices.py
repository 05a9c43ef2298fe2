"""Lattice shells: sizes, exact integer inner products, spectra, and K-of-N choice."""

from fractions import Fraction

import numpy as np
import pytest

from spherecodes.structured import (
    barnes_wall_16,
    cross_polytope,
    e6_roots,
    e7_roots,
    e8_roots,
    leech_lattice,
    root_system_d,
)
from spherecodes.structured.description import blocked_max_cos
from spherecodes.structured.lattices import bw16_integer_points, e8_integer_points, leech_integer_points


def _int_max(v, norm, rows=None):
    v = v.astype(np.int64)
    assert set((v * v).sum(axis=1).tolist()) == {norm}
    rows = np.arange(len(v)) if rows is None else rows
    g = v[rows] @ v.T
    g[np.arange(len(rows)), rows] = -(10**9)
    return Fraction(int(g.max()), norm)


def test_e8_exact():
    v = e8_integer_points()
    assert len(np.unique(v, axis=0)) == 240
    assert _int_max(v, 8) == Fraction(1, 2)
    # E8 is closed under addition of roots at 120°: a lattice shell, not only a code
    assert sorted(e8_roots().spectrum().values()) == [1, 1, 56, 56, 126]


def test_bw16_exact():
    v = bw16_integer_points()
    assert len(np.unique(v, axis=0)) == 4320
    assert _int_max(v, 8) == Fraction(1, 2)
    spec = barnes_wall_16().spectrum()
    assert spec[Fraction(1, 2)] == 280 and sum(spec.values()) == 4320


def test_leech_exact_sampled():
    v = leech_integer_points()
    assert v.shape == (196560, 24)
    assert len(np.unique(np.ascontiguousarray(v).view("V24"))) == 196560  # distinct rows
    rows = np.random.default_rng(0).choice(196560, 300, replace=False)
    assert _int_max(v, 32, rows) == Fraction(1, 2)
    spec = leech_lattice().spectrum()
    assert spec == {
        Fraction(-1): 1, Fraction(-1, 2): 4600, Fraction(-1, 4): 47104, Fraction(0): 93150,
        Fraction(1, 4): 47104, Fraction(1, 2): 4600, Fraction(1): 1,
    }


@pytest.mark.parametrize(
    "make, d, n, near",
    [(e7_roots, 7, 126, 32), (e6_roots, 6, 72, 20), (e8_roots, 8, 240, 56)],
)
def test_exceptional_root_systems(make, d, n, near):
    code = make()
    x = code.points()
    assert x.shape == (n, d) and code.size == n
    assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-14)
    assert abs(blocked_max_cos(x) - 0.5) < 1e-12
    assert code.spectrum()[Fraction(1, 2)] == near  # 2·(rank-dependent) neighbours
    assert len(np.unique(np.round(x, 9), axis=0)) == n


@pytest.mark.parametrize("n", [3, 4, 7, 10])
def test_dn(n):
    code = root_system_d(n)
    x = code.points()
    assert x.shape == (2 * n * (n - 1), n)
    s = np.rint(x * np.sqrt(2))
    assert len(np.unique(s, axis=0)) == code.size
    g = s @ s.T
    np.fill_diagonal(g, -9)
    assert g.max() == 1  # 1/2 after dividing by 2
    values, counts = np.unique(g[0], return_counts=True)
    spec = {Fraction(int(v), 2): int(c) for v, c in zip(values, counts) if v != -9}
    spec[Fraction(1)] = 1
    assert spec == code.spectrum()
    frame = 4 * (n // 2)
    assert code.max_cos_for(frame) == 0 and blocked_max_cos(code.points(frame)) <= 1e-15
    assert code.max_cos_for(frame + 1) == Fraction(1, 2)


def test_greedy_subsets_of_shells():
    code = e8_roots()
    for k in (16, 17, 60, 200):
        x = code.points(k)
        exact = code.max_cos_for(k)
        assert exact <= code.max_cos
        assert abs(blocked_max_cos(x) - float(exact)) < 1e-12
    assert code.max_cos_for(16) == 0  # a cross-polytope inside E8
    assert np.array_equal(code.points(60), e8_roots().points(60))


def test_leech_subset():
    code = leech_lattice()
    x = code.points(48)
    assert abs(blocked_max_cos(x) - float(code.max_cos_for(48))) < 1e-12
    assert code.max_cos_for(48) <= Fraction(1, 4) < code.max_cos  # greedy beats the parent


def test_cross_polytope_and_embedding():
    x = cross_polytope(3).points()
    assert blocked_max_cos(x) == 0
    y = e8_roots().embedded(12).points(5)
    assert y.shape == (5, 12) and not y[:, 8:].any()
