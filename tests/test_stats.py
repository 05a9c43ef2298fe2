"""Separation statistics: tiled computation against a direct one, invariances, refusals."""

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spherecodes.constructions import random_rotation, simplex_etf
from spherecodes.errors import SpherecodesError
from spherecodes.stats import separation_statistics, validate_prototypes

from conftest import dense_offdiagonal_cos, random_code


@pytest.mark.parametrize("k,d,tile", [(2, 3, 1), (50, 3, 7), (301, 16, 64), (1000, 8, 1000), (257, 5, 2048)])
def test_tiled_statistics_equal_the_direct_computation(k, d, tile):
    w = random_code(k, d, seed=k)
    s = separation_statistics(w, tile=tile)
    g = w @ w.T
    np.fill_diagonal(g, -np.inf)
    off = dense_offdiagonal_cos(w)
    assert s.max_cos == pytest.approx(off.max(), abs=1e-14)
    assert s.min_cos == pytest.approx(off.min(), abs=1e-14)
    assert s.mean_cos == pytest.approx(off.mean(), abs=1e-12)
    np.testing.assert_allclose(s.nearest_cos, g.max(axis=1), atol=1e-14)
    np.testing.assert_array_equal(s.nearest_index, g.argmax(axis=1))
    assert s.min_angle_deg == pytest.approx(math.degrees(math.acos(off.max())), abs=1e-9)
    assert s.separation["min"] == pytest.approx(1 - off.max(), abs=1e-14)
    assert s.separation["mean"] == pytest.approx(1 - off.mean(), abs=1e-12)
    assert s.separation["max"] == pytest.approx(1 - off.min(), abs=1e-14)
    assert s.one_vs_one_distance == pytest.approx(
        np.min(np.linalg.norm(w[:, None] - w[None], axis=2) + 9 * np.eye(k)), abs=1e-12
    )


def test_rattler_is_the_point_away_from_the_active_pairs():
    # Angles 0, 60 and 200 degrees: max-cos is cos 60 (points 0 and 1); point 2's
    # nearest neighbour is 140 degrees away, so it rattles.
    angles = np.radians([0.0, 60.0, 200.0])
    w = np.column_stack([np.cos(angles), np.sin(angles)])
    s = separation_statistics(w)
    assert s.max_cos == pytest.approx(0.5)
    assert list(s.rattlers) == [2]
    assert list(separation_statistics(simplex_etf(6)).rattlers) == []


def test_etf_mean_cos_is_exact():
    s = separation_statistics(simplex_etf(300, 299))
    assert s.mean_cos == pytest.approx(-1 / 299, abs=1e-14)
    assert s.max_cos == pytest.approx(-1 / 299, abs=1e-14)


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(2, 40),
    d=st.integers(2, 9),
    seed=st.integers(0, 2**31 - 1),
)
def test_statistics_are_invariant_under_rotation_and_permutation(k, d, seed):
    w = random_code(k, d, seed)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(k)
    moved = (w @ random_rotation(d, seed + 1))[perm]
    a = separation_statistics(w, tile=7)
    b = separation_statistics(moved, tile=5)
    assert b.max_cos == pytest.approx(a.max_cos, abs=1e-12)
    assert b.min_cos == pytest.approx(a.min_cos, abs=1e-12)
    assert b.mean_cos == pytest.approx(a.mean_cos, abs=1e-12)
    np.testing.assert_allclose(b.nearest_cos, a.nearest_cos[perm], atol=1e-12)
    np.testing.assert_allclose(np.sort(b.nearest_cos), np.sort(a.nearest_cos), atol=1e-12)


@pytest.mark.slow
def test_large_k_never_builds_a_k_by_k_matrix():
    k, d, tile = 12_000, 16, 512
    w = random_code(k, d, seed=1)
    tracemalloc.start()
    separation_statistics(w, tile=tile)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    dense_bytes = 8 * k * k  # 1.15 GB
    assert peak < dense_bytes / 20


@pytest.mark.parametrize(
    "bad,match",
    [
        (np.ones(3), "2-D"),
        (np.ones((1, 3)) / np.sqrt(3), "at least 2 rows"),
        (np.array([[1.0, 0.0], [np.nan, 0.0]]), "finite"),
        (np.array([[1.0, 0.0], [0.0, 0.0]]), "zero"),
        (np.array([[1.0, 0.0], [0.0, 1.0 + 1e-6]]), "largest deviation from 1: 1e-06"),
    ],
)
def test_invalid_codes_are_refused(bad, match):
    with pytest.raises(SpherecodesError, match=match):
        separation_statistics(bad)


def test_normalize_rescales_rows():
    w = validate_prototypes([[3.0, 4.0], [0.0, 2.0]], normalize=True)
    np.testing.assert_allclose(w, [[0.6, 0.8], [0.0, 1.0]])


def test_normalize_rescales_subnormal_rows_to_full_precision():
    # Rows of subnormal numbers are integers times 2^-1074: their directions are those of the integers.
    mantissas = np.array([[3.0, 4.0, 12.0], [1.0, -1.0, 1.0], [5.0, 0.0, -12.0]])
    w = validate_prototypes(mantissas * 2.0**-1074, normalize=True)
    np.testing.assert_allclose(w, mantissas / np.linalg.norm(mantissas, axis=1, keepdims=True), rtol=0, atol=2e-16)
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1, rtol=0, atol=2e-16)
