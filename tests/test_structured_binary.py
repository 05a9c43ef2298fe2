"""Binary codes on the sphere, checked against literature values and exact integer Gram matrices."""

import math
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest

from spherecodes.errors import SpherecodesError
from spherecodes.structured import bch_chain, bch_code, golay_code, reed_muller_code
from spherecodes.structured.binary import (
    bch_enumerated_distance,
    bch_generator_polynomial,
    bch_zero_count,
)
from spherecodes.structured.gf2 import PRIMITIVE_POLYNOMIALS, clmul, gf_tables, minimal_polynomial


def _sign_gram_max(x: np.ndarray, rows=None) -> int:
    """Largest off-diagonal entry of the integer Gram of the ±1 matrix √n·x, in blocks of rows.

    Exact: the entries are ±1 and every partial sum an integer below 2^53.
    ``rows``: only these rows against all (a sample, for large codes).
    """
    s = np.rint(x * math.sqrt(x.shape[1]))
    assert np.array_equal(np.abs(s), np.ones_like(s))
    assert np.allclose(s / math.sqrt(x.shape[1]), x, rtol=0, atol=1e-15)
    rows = np.arange(len(s)) if rows is None else np.asarray(rows)
    best = -np.inf
    for b in range(0, len(rows), 1024):
        idx = rows[b : b + 1024]
        g = s[idx] @ s.T
        assert np.array_equal(g, np.rint(g))
        g[np.arange(len(idx)), idx] = -np.inf
        best = max(best, g.max())
    return int(best)


def _polymod(a: int, b: int) -> int:
    while a and a.bit_length() >= b.bit_length():
        a ^= b << (a.bit_length() - b.bit_length())
    return a


@pytest.mark.parametrize("m", sorted(PRIMITIVE_POLYNOMIALS))
def test_primitive_polynomials_have_full_order(m):
    exp, log = gf_tables(m)  # raises if α has smaller order
    assert sorted(exp[: (1 << m) - 1].tolist()) == list(range(1, 1 << m))


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8])
def test_bch_generator_divides_x_n_minus_1(m):
    order = (1 << m) - 1
    for bose, k, _, _ in bch_chain(m):
        g = bch_generator_polynomial(m, bose)
        assert g.bit_length() - 1 == order - k
        assert _polymod((1 << order) | 1, g) == 0
    # every minimal polynomial has α^s as a root: m_s(α^s) = 0 evaluated by Horner in GF(2^m)
    exp, log = gf_tables(m)
    for s in (1, 3, 5):
        p = minimal_polynomial(m, s)
        acc = 0
        for i in reversed(range(p.bit_length())):
            acc = int(exp[(log[acc] + s) % order]) if acc else 0
            acc ^= (p >> i) & 1
        assert acc == 0


@pytest.mark.parametrize(
    "m, designed, n, k, dist",
    [
        (6, 27, 64, 10, 28),  # designed 27 → true 28 after extension
        (6, 23, 64, 16, 24),
        (6, 21, 64, 18, 22),
        (7, 55, 128, 15, 56),
        (7, 47, 128, 22, 48),
        (8, 111, 256, 21, 112),
        (5, 7, 32, 16, 8),  # extended BCH [32,16,8] = RM(2,5)
        (4, 5, 16, 7, 6),
    ],
)
def test_bch_literature_parameters(m, designed, n, k, dist):
    code = bch_code(m, designed)
    assert (code.d, code.size, code.min_distance) == (n, 2**k, dist)
    assert code.max_cos == Fraction(n - 2 * dist, n) and code.max_cos_exact
    assert code.name == f"extended BCH [{n},{k},{dist}]"


def test_bch_designed_distance_maps_to_bose_distance():
    assert bch_zero_count(6, 25) == bch_zero_count(6, 27)
    assert bch_code(6, 25).size == bch_code(6, 27).size == 1024


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8])
def test_tabulated_bch_distances_recomputed(m):
    for bose, k, dist, exact in bch_chain(m):
        if 2 <= k <= 22:
            assert exact and bch_enumerated_distance(m, bose) == dist


@pytest.mark.slow
@pytest.mark.parametrize("m", [9, 10, 11, 12])
def test_tabulated_bch_distances_recomputed_long(m):
    for bose, k, dist, exact in bch_chain(m):
        if 2 <= k <= 24:
            assert exact and bch_enumerated_distance(m, bose) == dist


@pytest.mark.slow
@pytest.mark.parametrize("m, bose, k, dist", [(6, 13, 30, 14), (10, 479, 26, 480)])
def test_tabulated_bch_distances_above_24_recomputed(m, bose, k, dist):
    # (7, 43), (8, 95) and (9, 223) (dimension 28–29) take 30–60 s each; same code path.
    code = bch_code(m, bose)
    assert code.size == 2**k and code.max_cos_exact
    assert bch_enumerated_distance(m, bose) == dist == code.min_distance


def test_untabulated_distances_are_marked_as_bounds():
    code = bch_code(7, 9)
    assert not code.max_cos_exact and code.min_distance == 10 and "≥" in code.name


@pytest.mark.parametrize("m, designed", [(4, 5), (5, 11), (5, 15), (6, 27)])
def test_bch_points_exact_gram(m, designed):
    code = bch_code(m, designed)
    x = code.points()
    n = code.d
    assert x.shape == (code.size, n) and x.dtype == np.float64
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)
    assert len(np.unique(x, axis=0)) == code.size
    rows = None if code.size <= 4096 else np.random.default_rng(0).choice(code.size, 256, replace=False)
    assert _sign_gram_max(x, rows) == n - 2 * code.min_distance


def test_golay_weight_distribution_and_gram():
    code = golay_code()
    spec = code.spectrum()
    # weights 0, 8, 12, 16, 24 → inner products 1, 1/3, 0, −1/3, −1
    assert spec == {Fraction(1): 1, Fraction(1, 3): 759, Fraction(0): 2576, Fraction(-1, 3): 759, Fraction(-1): 1}
    x = code.points()
    assert _sign_gram_max(x) == 24 - 16


@pytest.mark.parametrize("r, m", [(1, 3), (1, 4), (1, 6), (2, 4), (2, 5), (3, 4)])
def test_reed_muller_parameters(r, m):
    code = reed_muller_code(r, m)
    k = sum(math.comb(m, i) for i in range(r + 1))
    assert code.size == 2**k and code.min_distance == 2 ** (m - r)
    x = code.points()
    assert len(np.unique(x, axis=0)) == code.size
    rows = None if code.size <= 4096 else np.random.default_rng(1).choice(code.size, 128, replace=False)
    assert _sign_gram_max(x, rows) == 2**m - 2 ** (m - r + 1)


def test_rm1_is_a_cross_polytope():
    x = reed_muller_code(1, 5).points()
    g = np.rint(x @ x.T * 32)
    assert set(np.unique(g).tolist()) == {-32.0, 0.0, 32.0}


def test_bch_spectrum_matches_points():
    code = bch_code(6, 27)
    x = code.points()
    vals, counts = np.unique(np.rint(x[:5] @ x.T * 64), return_counts=True)
    expected = {Fraction(int(v), 64): int(c) // 5 for v, c in zip(vals, counts)}
    assert code.spectrum() == expected
    assert sum(code.spectrum().values()) == 1024


@pytest.mark.parametrize(
    "m, designed, k, expected",
    [
        (6, 21, 1000, Fraction(1, 8)),  # [64,18,22] → its [64,10,28] subcode
        (6, 21, 1024, Fraction(1, 8)),
        (6, 21, 1025, Fraction(1, 4)),  # [64,16,24]
        (6, 21, 128, Fraction(0)),  # inside RM(1,6)
        (7, 47, 10_000, Fraction(1, 8)),  # [128,22,48] → [128,15,56]
        (8, 111, 2, Fraction(-1)),  # 0 and the all-ones word
    ],
)
def test_choosing_k_reaches_the_subcode(m, designed, k, expected):
    code = bch_code(m, designed)
    assert code.max_cos_bound(k) >= code.max_cos_for(k)
    assert code.max_cos_for(k) <= code.max_cos
    x = code.points(k)
    assert x.shape == (k, code.d)
    assert len(np.unique(x, axis=0)) == k
    rows = None if k <= 4096 else np.random.default_rng(2).choice(k, 500, replace=False)
    measured = Fraction(_sign_gram_max(x, rows), code.d)
    assert measured == code.max_cos_for(k) <= expected


def test_choosing_k_between_chain_dimensions_is_exact():
    # t = ⌈log2 300⌉ = 9 lies between the chain dimensions 7 and 10: enumerated.
    code = bch_code(6, 27)
    x = code.points(300)
    assert Fraction(_sign_gram_max(x), 64) == code.max_cos_for(300) <= Fraction(1, 8)


def test_points_are_deterministic():
    a = bch_code(7, 47).points(3000)
    b = bch_code(7, 47).points(3000)
    assert np.array_equal(a, b)
    assert np.array_equal(golay_code().points(100), golay_code().points(100))


def test_k_of_2_to_the_18_does_not_build_the_code():
    code = bch_code(6, 21)  # 2^18 words in R^64
    code.points(10)  # warm caches (generator rows)
    tracemalloc.start()
    x = code.points(1000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert x.shape == (1000, 64)
    assert peak < 2**18 * 64 * 8 / 20  # far below the full 2^18 × 64 float64 array


def test_bad_requests_raise():
    with pytest.raises(SpherecodesError):
        bch_code(13, 3)
    with pytest.raises(SpherecodesError):
        bch_code(6, 64)
    with pytest.raises(SpherecodesError):
        golay_code().points(4097)
    with pytest.raises(SpherecodesError):
        reed_muller_code(3, 2)
    with pytest.raises(SpherecodesError, match="PiB on cpu, but only .* can safely be allocated"):
        reed_muller_code(3, 7).points()  # 2^64 points


def test_clmul_is_polynomial_product():
    assert clmul(0b1011, 0b11) == 0b11101
