"""Kerdock codes: n² points with max-cos 1/√n, n/2 mutually unbiased bases, exact integer checks."""

import math
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

from spherecodes.structured import kerdock_code
from spherecodes.structured.gf2 import galois_ring_trace_sequence, hensel_lift


def _int_gram(x, rows=None):
    """√n-scaled ±1 Gram rows (exact integers), self inner products set to −inf."""
    n = x.shape[1]
    s = np.rint(x * math.sqrt(n))
    assert np.allclose(s / math.sqrt(n), x, atol=1e-15, rtol=0)
    rows = np.arange(len(x)) if rows is None else rows
    g = s[rows] @ s.T
    assert np.array_equal(g, np.rint(g))
    return g, rows


@pytest.mark.parametrize("r", [3, 5, 7, 9, 11])
def test_hensel_lift_divides_x_n_minus_1_over_z4(r):
    h = hensel_lift(r)
    order = (1 << r) - 1
    rem = [0] * order + [1]
    rem[0] = -1  # x^N − 1
    rem = [c % 4 for c in rem]
    for top in range(order, r - 1, -1):  # long division by the monic h
        c = rem[top]
        if c:
            for i, hc in enumerate(h):
                rem[top - r + i] = (rem[top - r + i] - c * hc) % 4
    assert not any(rem[:r])
    assert len(galois_ring_trace_sequence(r)) == order


@pytest.mark.parametrize("n", [16, 64])
def test_kerdock_full_gram_and_spectrum(n):
    code = kerdock_code(n)
    x = code.points()
    assert x.shape == (n * n, n) and code.size == n * n
    assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-15)
    g, _ = _int_gram(x)
    s = math.isqrt(n)
    values, counts = np.unique(g, return_counts=True)
    # every point sees the same spectrum (distance-invariant): counts are N × spectrum
    expected = {Fraction(int(v), n): int(c) // (n * n) for v, c in zip(values, counts)}
    assert expected == code.spectrum()
    assert code.spectrum() == {
        Fraction(-1): 1, Fraction(-1, s): n * (n - 2) // 2, Fraction(0): 2 * n - 2,
        Fraction(1, s): n * (n - 2) // 2, Fraction(1): 1,
    }
    np.fill_diagonal(g, -np.inf)
    assert Fraction(int(g.max()), n) == code.max_cos == Fraction(1, s)


def test_nordstrom_robinson_distances():
    x = kerdock_code(16).points()
    s = np.rint(x * 4)
    dist = (16 - s @ s.T) / 2
    assert sorted(np.unique(dist).astype(int).tolist()) == [0, 6, 8, 10, 16]


@pytest.mark.parametrize("n", [16, 64, 256])
def test_kerdock_bases_are_orthonormal_and_mutually_unbiased(n):
    code = kerdock_code(n)
    k = min(code.size, 6 * n)
    x = code.points(k)
    s = math.isqrt(n)
    for b in range(k // (2 * n)):
        basis = x[2 * n * b : 2 * n * b + n]
        assert np.allclose(basis @ basis.T, np.eye(n), atol=1e-12)
        assert np.allclose(x[2 * n * b + n : 2 * n * (b + 1)], -basis)
        if b:
            assert np.allclose(np.abs(basis @ x[:n].T), 1 / s, atol=1e-12)
    assert code.max_cos_for(2 * n) == 0 and code.max_cos_for(2 * n + 1) == Fraction(1, s)


def test_kerdock_with_axes():
    code = kerdock_code(16, axes=True)
    assert code.size == 288 and code.orbits == 2 and not code.transitive and code.spectrum() is None
    g, _ = _int_gram(code.points())
    np.fill_diagonal(g, -np.inf)
    assert g.max() == 4  # 1/4 after dividing by 16
    x = kerdock_code(64, axes=True).points()
    assert np.allclose(x[:64], np.eye(64)) and np.allclose(x[64:128], -np.eye(64))


@pytest.mark.parametrize("n, k", [(256, 65536), (1024, 20000)])
def test_large_kerdock_sampled(n, k):
    code = kerdock_code(n)
    x = code.points(k)
    rows = np.random.default_rng(0).choice(k, 64, replace=False)
    g, rows = _int_gram(x, rows)
    g[np.arange(len(rows)), rows] = -np.inf
    assert g.max() == math.isqrt(n)  # n·(1/√n)
    assert len(np.unique(x[:4096], axis=0)) == 4096


def test_kerdock_is_deterministic_and_memory_bounded():
    code = kerdock_code(1024)  # 2^20 points
    code.points(10)
    tracemalloc.start()
    x = code.points(1000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 1000 * 1024 * 8  # O(K·n), never n² rows
    assert np.array_equal(x, kerdock_code(1024).points(1000))
