"""Shortened and punctured BCH and Golay codes, checked against published parameters and brute force."""

import math
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.cli import main
from spherecodes.errors import SpherecodesError
from spherecodes.structured import (
    available_codes,
    bch_code,
    best_structured_code,
    golay_code,
    native_codes,
    primitive_bch_code,
    reed_muller_code,
    shortened_punctured_code,
    shortened_punctured_codes,
)
from spherecodes.structured.binary import bch_chain
from spherecodes.structured.description import blocked_max_cos, exact_fraction
from spherecodes.structured.gf2 import enumerate_weights


def _signs(x: np.ndarray) -> np.ndarray:
    """The ±1 matrix √n·x, checked to be exactly ±1."""
    s = np.rint(x * math.sqrt(x.shape[1]))
    assert np.array_equal(np.abs(s), np.ones_like(s))
    return s


def _gram_max(x: np.ndarray) -> Fraction:
    """Exact largest off-diagonal inner product of ±1/√n rows, from the integer Gram matrix."""
    s = _signs(x)
    g = s @ s.T
    np.fill_diagonal(g, -np.inf)
    return Fraction(int(g.max()), x.shape[1])


def _null_space(rows: list[int], n: int) -> list[int]:
    """A basis of the dual code (GF(2) reduced row echelon form on int bit masks); the rows must be independent."""
    pivots: dict[int, int] = {}
    for r in rows:
        for c, pr in pivots.items():
            if (r >> c) & 1:
                r ^= pr
        assert r, "dependent rows"
        c = (r & -r).bit_length() - 1
        for c2 in pivots:
            if (pivots[c2] >> c) & 1:
                pivots[c2] ^= r
        pivots[c] = r
    dual = []
    for f in (j for j in range(n) if j not in pivots):
        v = 1 << f
        for c, pr in pivots.items():
            if (pr >> f) & 1:
                v |= 1 << c
        dual.append(v)
    return dual


def _true_distance(rows: list[int], n: int) -> int:
    """Minimum distance of the code spanned by ``rows``: all its words, or the MacWilliams transform of its dual's."""
    k = len(rows)
    if k <= n - k:
        weights = enumerate_weights(rows, n, max_dim=k)
    else:
        dual = _null_space(rows, n)
        assert len(dual) == n - k
        assert all(bin(a & b).count("1") % 2 == 0 for a in rows for b in dual)
        b = enumerate_weights(dual, n, max_dim=n - k)

        def kraw(j, i):
            return sum((-1) ** l * math.comb(i, l) * math.comb(n - i, j - l) for l in range(j + 1))

        weights = []
        for j in range(n + 1):
            total = sum(b[i] * kraw(j, i) for i in range(n + 1) if b[i])
            assert total % (1 << (n - k)) == 0
            weights.append(total >> (n - k))
        assert weights[0] == 1 and min(weights) >= 0 and sum(weights) == 1 << k
    return next(w for w in range(1, n + 1) if weights[w])


def _dimension(code) -> int:
    return code.size.bit_length() - 1


# --- the acceptance example --------------------------------------------------


def test_63_1000_is_the_primitive_bch_code_at_one_seventh():
    code = best_structured_code(63, 1000)
    assert code.name == "BCH [63,10,27]" and code.d == code.native_d == 63
    assert code.max_cos_for(1000) == Fraction(1, 7) == code.max_cos_bound(1000)
    x = code.points(1000)
    assert x.shape == (1000, 63) and x.dtype == np.float64
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
    assert len(np.unique(x, axis=0)) == 1000
    g = x @ x.T
    np.fill_diagonal(g, -np.inf)
    assert abs(g.max() - 1 / 7) < 1e-12


# --- primitive BCH codes: published parameters -------------------------------

# (n, k, d) of the narrow-sense primitive BCH codes, designed distance = d
# (MacWilliams & Sloane 1977, Appendix A; Lin & Costello 2004, Table 6.1).
PUBLISHED_BCH = [
    (15, 11, 3), (15, 7, 5), (15, 5, 7),
    (31, 26, 3), (31, 21, 5), (31, 16, 7), (31, 11, 11), (31, 6, 15),
    (63, 57, 3), (63, 51, 5), (63, 45, 7), (63, 39, 9), (63, 36, 11), (63, 30, 13),
    (63, 24, 15), (63, 18, 21), (63, 16, 23), (63, 10, 27), (63, 7, 31),
]


@pytest.mark.parametrize(
    "n, k, d",
    [
        pytest.param(*p, marks=pytest.mark.slow) if min(p[1], p[0] - p[1]) > 24 else p
        for p in PUBLISHED_BCH
    ],
)
def test_primitive_bch_codes_match_published_parameters(n, k, d):
    code = primitive_bch_code(n.bit_length(), d)
    assert (code.d, code.size) == (n, 2**k)
    assert code.name in (f"BCH [{n},{k},{d}]", f"BCH [{n},{k},≥{d}]")
    assert code.min_distance == d and code.max_cos == Fraction(n - 2 * d, n)
    # The true minimum distance of the words the construction builds.
    assert _true_distance(code.construction.rows(k), n) == d


def test_primitive_bch_is_the_extended_code_without_its_parity():
    ext, prim = bch_code(5, 11), primitive_bch_code(5, 11)   # [32,11,12] → [31,11,11]
    assert np.array_equal(_signs(prim.points()), _signs(ext.points())[:, :31])


# --- the Golay code ----------------------------------------------------------


def test_punctured_golay_is_the_perfect_golay_code():
    code = shortened_punctured_code(golay_code(), puncture=1)
    assert code.name == "Golay [23,12,7]" and (code.d, code.size) == (23, 4096)
    assert code.max_cos == Fraction(9, 23) and code.max_cos_exact
    # Weight distribution of the [23,12,7] Golay code (MacWilliams & Sloane 1977, ch. 2 §6).
    published = {0: 1, 7: 253, 8: 506, 11: 1288, 12: 1288, 15: 506, 16: 253, 23: 1}
    assert code.spectrum() == {Fraction(23 - 2 * w, 23): a for w, a in published.items()}
    x = code.points()
    assert x.shape == (4096, 23) and len(np.unique(x, axis=0)) == 4096
    assert _gram_max(x) == Fraction(9, 23)
    # Perfect: the 4096 balls of radius 3 fill F_2^23.
    assert 4096 * sum(math.comb(23, i) for i in range(4)) == 2**23


def test_shortened_golay_codes():
    for s, n, k in [(1, 23, 11), (2, 22, 10)]:
        code = shortened_punctured_code(golay_code(), shorten=s)
        assert (code.d, code.size, code.min_distance) == (n, 2**k, 8)
        assert _gram_max(code.points()) == code.max_cos == Fraction(n - 16, n)


# --- independent checks of the construction ----------------------------------


@pytest.mark.parametrize(
    "parent, shorten, puncture",
    [
        (bch_code(4, 5), 0, 2),
        (bch_code(4, 5), 2, 0),
        (bch_code(4, 5), 1, 3),
        (bch_code(4, 3), 3, 2),
        (bch_code(5, 11), 2, 4),
        (bch_code(3, 3), 1, 0),
        (golay_code(), 3, 2),
        (golay_code(), 0, 6),
    ],
)
def test_deleting_coordinates_of_the_built_parent(parent, shorten, puncture):
    """The code equals the parent's words that are + on the shortened coordinates, with the deleted ones removed."""
    big = _signs(parent.points())
    order = parent.d - 1  # cyclic coordinates 0 … order − 1, then the parity
    shortened = list(range(order - shorten, order))
    punctured = ([order] + list(range(order - shorten - puncture + 1, order - shorten))) if puncture else []
    keep = np.all(big[:, shortened] == 1, axis=1)
    cols = [j for j in range(parent.d) if j not in shortened + punctured]
    expected = np.unique(big[keep][:, cols], axis=0)
    code = shortened_punctured_code(parent, shorten, puncture)
    got = _signs(code.points())
    assert got.shape == (code.size, len(cols)) == (len(expected), code.d)
    assert np.array_equal(np.unique(got, axis=0), expected)


def _listed(dims) -> list:
    """The distinct codes ``shortened_punctured_codes`` lists for these d (each at its own length ≤ d)."""
    codes = {}
    for d in dims:
        for code in shortened_punctured_codes(d):
            assert code.d == code.native_d <= d, (d, code.name)
            codes[code.name, code.construction] = code
    return list(codes.values())


@pytest.mark.parametrize("dims", [range(5, 10), range(10, 13), range(13, 16)])
def test_max_cos_for_k_equals_the_gram_of_the_points(dims):
    for code in _listed(dims):
        for k in (2, 3, 5, 9, 16, 17, 40, 100, 500, 1000):
            if k > code.size:
                break
            x = code.points(k)
            assert x.shape == (k, code.d) and len(np.unique(x, axis=0)) == k, code.name
            assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-15)
            assert _gram_max(x) == code.max_cos_for(k) <= code.max_cos_bound(k), (code.name, k)


def _check_distances(dims, max_dim):
    for code in _listed(dims):
        k, n = _dimension(code), code.d
        if k > max_dim:
            continue
        true = _true_distance(code.construction.rows(k), n)
        assert true == code.min_distance if code.max_cos_exact else true >= code.min_distance, code.name
        # the nested chain: each member's distance claim holds for its first rows
        for dim, dist, exact in code.construction.chain:
            sub = _true_distance(code.construction.rows(dim), n)
            assert sub == dist if exact else sub >= dist, (code.name, dim)


def test_claimed_distances_hold_up_to_length_40():
    _check_distances(range(5, 41), max_dim=14)


@pytest.mark.slow
def test_claimed_distances_hold_up_to_length_128():
    _check_distances(range(41, 129), max_dim=22)


def test_simplex_codes_from_shortening_are_regular_simplices():
    # RM(1, m) shortened once is the simplex code [2^m − 1, m, 2^(m−1)]: 2^m points at max-cos −1/(2^m − 1).
    for m in (3, 4, 6):
        code = shortened_punctured_code(bch_code(m, (1 << (m - 1)) - 1), shorten=1)
        n = (1 << m) - 1
        assert (code.d, code.size, code.min_distance) == (n, 1 << m, 1 << (m - 1))
        assert _gram_max(code.points()) == code.max_cos == Fraction(-1, n)


@pytest.mark.parametrize(
    "make, d, size, max_cos",
    [
        (lambda: shortened_punctured_code(golay_code(), shorten=2), 22, 1024, Fraction(3, 11)),
        (lambda: primitive_bch_code(5, 11), 31, 2048, Fraction(9, 31)),
        (lambda: primitive_bch_code(6, 27), 63, 1024, Fraction(1, 7)),
        (lambda: shortened_punctured_code(bch_code(6, 23), shorten=1), 63, 2**15, Fraction(5, 21)),
        (lambda: shortened_punctured_code(bch_code(7, 55), shorten=1), 127, 2**14, Fraction(15, 127)),
        (lambda: shortened_punctured_code(bch_code(5, 11), shorten=1), 31, 2**10, Fraction(7, 31)),
        (lambda: shortened_punctured_code(bch_code(6, 23), shorten=5), 59, 2**11, Fraction(11, 59)),
        (lambda: shortened_punctured_code(bch_code(6, 27), shorten=2), 62, 2**8, Fraction(3, 31)),
        (lambda: shortened_punctured_code(bch_code(6, 21), shorten=1), 63, 2**17, Fraction(19, 63)),
        (lambda: shortened_punctured_code(bch_code(7, 55), shorten=5), 123, 2**10, Fraction(11, 123)),
    ],
)
def test_documented_codes_from_their_points(make, d, size, max_cos):
    """The rows of docs/structured.md's table; a linear code's points all see the same spectrum, so a few rows suffice."""
    code = make()
    x = code.points()
    assert x.shape == (size, d) == (code.size, code.d) and code.max_cos == max_cos
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-14)
    assert exact_fraction(blocked_max_cos(x, np.arange(16))) == max_cos


def test_names_follow_the_style():
    assert primitive_bch_code(6, 27).name == "BCH [63,10,27]"
    assert shortened_punctured_code(bch_code(6, 27), puncture=4).name == "punctured extended BCH [60,10,≥24]"
    assert shortened_punctured_code(bch_code(6, 27), shorten=2).name == "shortened extended BCH [62,8,28]"
    assert shortened_punctured_code(bch_code(6, 27), shorten=1, puncture=1).name == "shortened BCH [62,9,27]"
    assert shortened_punctured_code(bch_code(6, 23), shorten=1, puncture=2).name == (
        "shortened punctured extended BCH [61,15,≥22]"
    )
    assert shortened_punctured_code(bch_code(6, 27), 0, 0) == bch_code(6, 27)


def test_bad_requests_raise():
    with pytest.raises(SpherecodesError):
        shortened_punctured_code(reed_muller_code(2, 4), shorten=1)
    with pytest.raises(SpherecodesError):
        shortened_punctured_code(primitive_bch_code(4, 5), puncture=1)  # already derived
    with pytest.raises(SpherecodesError):
        shortened_punctured_code(bch_code(4, 5), shorten=7)  # [16,7,6]: no word left
    with pytest.raises(SpherecodesError):
        shortened_punctured_code(bch_code(4, 5), puncture=6)  # could merge words


# --- the catalog -------------------------------------------------------------


def test_catalog_lists_the_best_shorter_codes_too():
    names = {c.name for c in native_codes(63)}
    assert {"BCH [63,10,27]", "BCH [63,57,3]", "shortened extended BCH [62,8,28]"} <= names
    in_64 = shortened_punctured_codes(64)
    assert {"shortened extended BCH [62,8,28]", "shortened extended BCH [63,9,28]"} <= {c.name for c in in_64}
    # The parents themselves are listed as such, not again.
    assert not any(c.name.startswith("extended") for c in in_64)
    assert shortened_punctured_codes(4) == () and shortened_punctured_codes(5000) == shortened_punctured_codes(4096)


@pytest.mark.parametrize(
    "d, k, name, max_cos",
    [
        (63, 1000, "BCH [63,10,27]", Fraction(1, 7)),
        (63, 64, "shortened extended BCH [63,6,32]", Fraction(-1, 63)),  # the regular simplex
        (23, 2048, "shortened extended Golay [23,11,8]", Fraction(7, 23)),  # below the Leech-derived 1/3
        (31, 2048, "BCH [31,11,11]", Fraction(9, 31)),
    ],
)
def test_best_structured_code_uses_them(d, k, name, max_cos):
    code = best_structured_code(d, k)
    assert code.name == name and code.max_cos_for(k) == max_cos == code.max_cos_bound(k)


def test_shortening_beats_puncturing_above_a_chain_member():
    # 1024 < K ≤ 2048 in R^63: [64,16,24] shortened five times, [59,11,≥24] (max-cos 11/59),
    # beats [63,15,24] (5/21) and BCH [63,16,23] (17/63).
    code = best_structured_code(63, 2000)
    assert code.name == "shortened extended BCH [59,11,≥24]" and code.native_d == 59
    assert code.max_cos_for(2000) == Fraction(11, 59) < shortened_punctured_code(bch_code(6, 23), shorten=1).max_cos
    assert Fraction(5, 21) < primitive_bch_code(6, 23).max_cos_bound(2000)
    x = code.points(2000)
    assert not x[:, 59:].any() and _gram_max(x[:, :59]) == Fraction(11, 59)


def _brute_force_bound(t: int, d: int, max_length: int) -> Fraction | None:
    """The smallest max-cos of an [n ≤ d, ≥ t] code got from any parent of length ≤ max_length by any s and p."""
    parents = [(1 << m, [(k, dist) for _, k, dist, _ in bch_chain(m)]) for m in range(3, max_length.bit_length())]
    parents.append((24, [(12, 8)]))
    best = None
    for length, members in parents:
        for k, dist in members:
            if k < t:
                continue
            s, p = np.meshgrid(np.arange(k - t + 1), np.arange(dist), indexing="ij")  # every s ≤ k − t, p < δ
            n = length - s - p
            ok = n <= d
            if not ok.any():
                continue
            i = np.argmax(np.where(ok, (dist - p) / n, -np.inf))
            n_i, dist_i = int(n.flat[i]), dist - int(p.flat[i])
            cand = Fraction(n_i - 2 * dist_i, n_i)
            best = cand if best is None else min(best, cand)
    return best


@pytest.mark.parametrize("d", [5, 7, 8, 12, 16, 17, 20, 23, 24, 31, 32, 40])
def test_every_way_of_deleting_coordinates_is_considered(d):
    """For each t, the best BCH or Golay code fitting R^d matches every shortening and puncturing of every parent."""
    for t in range(1, 13):
        k = 2 ** (t - 1) + 1
        listed = [c.max_cos_bound(k) for c in available_codes(d, k) if c.family in ("bch", "golay")]
        assert min(listed, default=None) == _brute_force_bound(t, d, max_length=128), (d, t)


@pytest.mark.parametrize("k", [50, 100, 200, 1000, 2000, 10_000])
def test_best_bound_never_grows_with_d(k):
    """A code in R^d zero-pads into R^(d+1): the best structured max-cos for K points is non-increasing in d."""
    previous = None
    for d in range(3, 301):
        code = best_structured_code(d, k)
        if previous is not None:
            assert code is not None and code.max_cos_bound(k) <= previous, (d, k)
        if code is not None:
            previous = code.max_cos_bound(k)


@pytest.mark.parametrize(
    "d, k, name, max_cos, in_smaller_d",
    [
        # in_smaller_d: what R^(d−1) reached when only codes of length exactly d were listed
        # (R^d itself then had 1/4 and 1/3). (64, 200), where the shortened BCH [62,8,28] (3/31)
        # beat R^64's 1/8, now goes to the isotropic-subspaces code of R^52 (1/16; test_structured_srg.py).
        (32, 1000, "shortened extended BCH [31,10,12]", Fraction(7, 31), Fraction(7, 31)),
        (24, 2000, "shortened extended Golay [23,11,8]", Fraction(7, 23), Fraction(7, 23)),
    ],
)
def test_shorter_codes_are_used_in_larger_dimensions(d, k, name, max_cos, in_smaller_d):
    code = best_structured_code(d, k)
    assert code.name == name and code.d == d and code.native_d < d
    assert code.max_cos_bound(k) == max_cos <= in_smaller_d
    assert max_cos <= best_structured_code(d - 1, k).max_cos_bound(k)
    x = code.points(k)
    assert x.shape == (k, d) and not x[:, code.native_d :].any()
    assert _gram_max(x[:, : code.native_d]) == max_cos == code.max_cos_for(k)


def test_codes_cli_lists_them():
    out = CliRunner().invoke(main, ["codes", "--d", "63", "--k", "1000"], catch_exceptions=False).output
    lines = [line.strip() for line in out.splitlines()]
    assert lines[2].startswith("BCH [63,10,27]")  # after the title and the header: best first
    assert "<= 1/7" in lines[2]
