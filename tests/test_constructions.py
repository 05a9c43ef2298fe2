"""Closed forms against the geometry they are known to have."""

import math

import numpy as np
import pytest

from spherecodes.constructions import (
    CLOSED_FORMS,
    applicable_closed_forms,
    cell_24,
    cell_600,
    construct,
    cross_polytope,
    e8_roots,
    random_rotation,
    regular_polygon,
    simplex_etf,
)
from spherecodes.errors import SpherecodesError

from conftest import dense_offdiagonal_cos


def assert_unit_rows(w):
    assert w.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1.0, atol=1e-14)


@pytest.mark.parametrize("k,d", [(2, 1), (3, 2), (12, 11), (12, 40), (1025, 1024), (1001, 1000)])
def test_simplex_etf_is_equiangular_with_cos_minus_one_over_k_minus_one(k, d):
    w = simplex_etf(k, d)
    assert w.shape == (k, d)
    assert_unit_rows(w)
    off = dense_offdiagonal_cos(w)
    np.testing.assert_allclose(off, -1.0 / (k - 1), atol=1e-12)
    # The ETF is centred: the prototypes sum to zero.
    np.testing.assert_allclose(w.sum(axis=0), 0.0, atol=1e-9)


@pytest.mark.slow
def test_simplex_etf_at_d_equal_k_minus_one_large():
    """The case common code in the wild cannot do: K = d + 1 with d = 2047."""
    k, d = 2048, 2047
    w = simplex_etf(k, d)
    assert w.shape == (k, d)
    assert_unit_rows(w)
    g = w @ w.T
    np.fill_diagonal(g, np.nan)
    assert np.nanmax(np.abs(g + 1.0 / (k - 1))) < 1e-12
    # A tight frame: W^T W = K/d I, so the prototypes span all of R^d.
    np.testing.assert_allclose(w.T @ w, k / d * np.eye(d), atol=1e-10)


def test_simplex_etf_is_built_in_place():
    """The K x d result is the only large array: K = d = 10^5 is 80 GB, and temporaries of that size would not fit."""
    import tracemalloc

    k = 1500
    tracemalloc.start()
    try:
        w = simplex_etf(k, k)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 1.1 * w.nbytes, peak / w.nbytes


def test_simplex_etf_refuses_too_many_points():
    with pytest.raises(SpherecodesError, match="K <= d\\+1"):
        simplex_etf(5, 3)


@pytest.mark.parametrize("k,d", [(5, 3), (6, 3), (7, 5), (10, 5), (130, 100)])
def test_cross_polytope_max_cos_zero(k, d):
    w = cross_polytope(k, d)
    assert_unit_rows(w)
    off = dense_offdiagonal_cos(w)
    assert off.max() == 0.0
    # Every entry is 0 or -1: vertices are orthogonal or antipodal.
    assert set(np.unique(off)) <= {0.0, -1.0}
    assert len({tuple(r) for r in w}) == k


@pytest.mark.parametrize("k", [3, 5, 7, 100, 1000])
def test_regular_polygon_max_cos(k):
    w = regular_polygon(k)
    assert_unit_rows(w)
    assert abs(dense_offdiagonal_cos(w).max() - math.cos(2 * math.pi / k)) < 1e-12


@pytest.mark.parametrize(
    "builder,k,d,max_cos,neighbours",
    [
        # Each vertex of the 24-cell touches 8 others, of the 600-cell 12, and
        # each E8 root has 56 nearest roots: the kissing numbers of these codes.
        (cell_24, 24, 4, 0.5, 8),
        (cell_600, 120, 4, (1 + math.sqrt(5)) / 4, 12),
        (e8_roots, 240, 8, 0.5, 56),
    ],
)
def test_exceptional_codes(builder, k, d, max_cos, neighbours):
    w = builder()
    assert w.shape == (k, d)
    assert_unit_rows(w)
    off = dense_offdiagonal_cos(w)
    assert abs(off.max() - max_cos) < 1e-12
    counts = np.sum(np.abs(off - max_cos) < 1e-9, axis=1)
    assert np.all(counts == neighbours)
    # Centrally symmetric: every point's antipode is in the code.
    assert np.all(np.isclose(off, -1.0).sum(axis=1) == 1)


def test_random_rotation_is_orthogonal_and_seeded():
    q1 = random_rotation(50, seed=7)
    np.testing.assert_allclose(q1 @ q1.T, np.eye(50), atol=1e-12)
    assert np.array_equal(q1, random_rotation(50, seed=7))
    assert not np.allclose(q1, random_rotation(50, seed=8))


@pytest.mark.parametrize("method,d,k", [("etf", 11, 12), ("cross-polytope", 6, 10), ("600-cell", 4, 120), ("polygon", 2, 9)])
def test_rotation_preserves_the_gram_matrix(method, d, k):
    canonical = construct(method, d, k)
    rotated = construct(method, d, k, rotation="random", seed=5)
    assert not np.allclose(canonical, rotated)
    assert_unit_rows(rotated)
    np.testing.assert_allclose(rotated @ rotated.T, canonical @ canonical.T, atol=1e-12)


def test_applicable_closed_forms_follow_theorem_3_3():
    assert applicable_closed_forms(10, 11) == ["etf"]
    assert applicable_closed_forms(10, 12) == ["cross-polytope"]
    assert applicable_closed_forms(10, 20) == ["cross-polytope"]
    assert applicable_closed_forms(10, 21) == []
    assert "polygon" in applicable_closed_forms(2, 50)
    for method in CLOSED_FORMS:
        assert any(method in applicable_closed_forms(d, k) for d, k in [(3, 4), (3, 5), (2, 7), (4, 24), (4, 120), (8, 240)])


def test_construct_refuses_inapplicable_method_and_names_the_ones_that_apply():
    with pytest.raises(SpherecodesError, match="does not apply.*etf"):
        construct("cross-polytope", 3, 4)
    with pytest.raises(SpherecodesError, match="unknown closed form"):
        construct("hexagon", 3, 4)
    with pytest.raises(SpherecodesError, match="rotation"):
        construct("etf", 3, 4, rotation="sideways")
