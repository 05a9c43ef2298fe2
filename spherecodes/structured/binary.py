"""Linear binary codes mapped to the sphere: extended BCH, Reed–Muller and the extended Golay code.

A codeword c of length n becomes x_c = ((−1)^c_1, …, (−1)^c_n)/√n, so that
⟨x_c, x_c'⟩ = 1 − 2·dist(c, c')/n and max-cos = 1 − 2δ/n with δ the minimum
distance (MacWilliams & Sloane 1977, ch. 1). Each code keeps a *nested* basis:
its rows are ordered so that the first dim(C_j) rows span each code C_j of a
chain of subcodes (the BCH codes of larger designed distance, or the smaller
Reed–Muller codes). Taking K points then means taking the first K messages
(integers 0 … K−1, bit j selecting row j): they lie in the span of the first
t = ⌈log2 K⌉ rows, a subcode of the smallest chain member with ≥ K words, and
only those K codewords are encoded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.structured.description import StructuredCode
from spherecodes.structured.gf2 import (
    clmul,
    cyclotomic_cosets,
    encode_messages,
    enumerate_weights,
    minimal_polynomial,
    pack_rows,
    unpack_signs,
)

MACWILLIAMS_SLOANE = "MacWilliams & Sloane (1977), The Theory of Error-Correcting Codes"
# Codes of dimension up to this are enumerated for their weight distribution.
ENUMERATION_LIMIT = 24

# True minimum distances of the extended BCH codes, key (m, Bose distance), for
# every code of length 2^m (m = 3 … 12) with dimension 2 … 30:
# enumerated once with bch_enumerated_distance (all 2^k codewords); the tests
# recompute them (the largest ones in the slow set).
_TRUE_DISTANCE: dict[tuple[int, int], int] = {
    (6, 13): 14, (7, 43): 44, (8, 95): 96, (9, 223): 224, (10, 479): 480,
    (3, 3): 4, (4, 3): 4, (4, 5): 6, (4, 7): 8, (5, 5): 6, (5, 7): 8,
    (5, 11): 12, (5, 15): 16, (6, 15): 16, (6, 21): 22, (6, 23): 24, (6, 27): 28,
    (6, 31): 32, (7, 47): 48, (7, 55): 56, (7, 63): 64, (8, 111): 112, (8, 119): 120,
    (8, 127): 128, (9, 239): 240, (9, 255): 256, (10, 495): 496, (10, 511): 512, (11, 991): 992,
    (11, 1023): 1024, (12, 2015): 2016, (12, 2047): 2048,
}


def _distinct_rows(candidates, basis_rows, pivots):
    """Append to basis_rows the candidates that raise the rank (GF(2) elimination on int bit masks)."""
    for cand in candidates:
        v = cand
        while v:
            top = v.bit_length() - 1
            if top not in pivots:
                pivots[top] = v
                basis_rows.append(cand)
                break
            v ^= pivots[top]


@dataclass(frozen=True)
class LinearBinaryConstruction:
    """A binary linear code with a nested basis, and its chain of subcodes.

    ``chain`` lists (dimension, minimum distance, exact) for the nested
    subcodes, increasing dimension, the last one being the code itself; the
    first ``dimension`` rows of ``rows(t)`` span that subcode.

    Examples
    --------
    >>> c = reed_muller_code(1, 3).construction
    >>> c.chain
    ((1, 8, True), (4, 4, True))
    """

    n: int
    family: str
    params: tuple
    chain: tuple

    def rows(self, t: int) -> list[int]:
        """The first t rows of the nested basis, as bit masks of length n."""
        return _nested_rows(self.family, self.params, t)

    def _member(self, t: int) -> tuple[int, int, bool]:
        return next(c for c in self.chain if c[0] >= t)

    def sign_orbit(self, k: int) -> bool:
        """Whether ``points(k)`` are one orbit of sign changes or the first K words of one, in order: always.

        K = 2^t points are all 2^t words of t basis rows; other K are the
        first K of them, message m's word being row 0's with the sign
        changes of the basis rows of m's bits.
        """
        return k >= 2

    def points(self, k: int) -> np.ndarray:
        t = max(1, math.ceil(math.log2(k)))
        packed = pack_rows(self.rows(t), self.n)
        words = encode_messages(packed, np.arange(k))
        return unpack_signs(words, self.n) / math.sqrt(self.n)

    def max_cos_bound(self, k: int) -> Fraction:
        _, dist, _ = self._member(max(1, math.ceil(math.log2(k))))
        return Fraction(self.n - 2 * dist, self.n)

    def max_cos_for(self, k: int) -> Fraction:
        t = max(1, math.ceil(math.log2(k)))
        dim, dist, exact = self._member(t)
        if dim != t or not exact:
            # The K words span the first t rows: their max-cos is that of this
            # t-dimensional code, found by enumerating its 2^t < 2K words.
            weights = enumerate_weights(self.rows(t), self.n, max_dim=max(t, ENUMERATION_LIMIT))
            dist = next(w for w in range(1, self.n + 1) if weights[w])
        return Fraction(self.n - 2 * dist, self.n)

    def spectrum(self) -> dict[Fraction, int] | None:
        # A linear code is distance-invariant: every point sees the weight distribution.
        dim = self.chain[-1][0]
        if dim > ENUMERATION_LIMIT:
            return None
        weights = _weights(self, dim)
        return {Fraction(self.n - 2 * w, self.n): a for w, a in enumerate(weights) if a}


@lru_cache(maxsize=64)
def _weights(construction: LinearBinaryConstruction, dim: int) -> tuple[int, ...]:
    # Keyed by the whole (frozen) construction, so that codes derived from the
    # same parent by shortening or puncturing keep their own distributions.
    return tuple(enumerate_weights(construction.rows(dim), construction.n))


def _nested_rows(family: str, params: tuple, t: int) -> list[int]:
    if family == "bch":
        return bch_nested_rows(params[0], t)
    if family == "reed-muller":
        return reed_muller_rows(params[1], t)
    if family == "golay":
        return golay_rows()[:t]
    raise SpherecodesError(f"unknown binary family {family!r}")


# --- extended BCH codes ------------------------------------------------------


@lru_cache(maxsize=None)
def bch_zero_count(m: int, delta: int) -> tuple[int, int]:
    """(number of zeros, Bose distance) of the narrow-sense primitive BCH code of designed distance δ.

    The zeros are the cyclotomic cosets of 1 … δ−1; the Bose distance is the
    smallest s ≥ 1 that is not a zero (the largest designed distance giving the
    same code), and the dimension is 2^m − 1 minus the number of zeros.

    Examples
    --------
    >>> bch_zero_count(6, 27)   # [63,10] code, Bose distance 27
    (53, 27)
    """
    order = (1 << m) - 1
    if not 1 <= delta <= order:
        raise SpherecodesError(f"designed distance must be 1 … {order} at length {order}, got {delta}")
    zeros: set[int] = set()
    for coset in cyclotomic_cosets(m):
        if coset != [0] and coset[0] < delta:
            zeros.update(coset)
    bose = next((s for s in range(1, order) if s not in zeros), order)
    return len(zeros), bose


def bch_bose_distances(m: int) -> list[int]:
    """All Bose distances at length 2^m − 1, largest first (the nested chain, smallest code first).

    They are the leaders of the nonzero cyclotomic cosets, plus 2^m − 1 (the
    repetition code).

    Examples
    --------
    >>> bch_bose_distances(4)
    [15, 7, 5, 3, 1]
    """
    leaders = [c[0] for c in cyclotomic_cosets(m) if c != [0]]
    return [(1 << m) - 1] + sorted(leaders, reverse=True)


def bch_generator_polynomial(m: int, delta: int) -> int:
    """Generator polynomial (bit mask) of the narrow-sense primitive BCH code of designed distance δ.

    The least common multiple of the minimal polynomials of α^1 … α^(δ−1),
    i.e. the product of the distinct ones.

    Examples
    --------
    >>> bin(bch_generator_polynomial(4, 5))   # (x^4+x+1)(x^4+x^3+x^2+x+1)
    '0b111010001'
    """
    bch_zero_count(m, delta)
    g = 1
    for coset in cyclotomic_cosets(m):
        if coset != [0] and coset[0] < delta:
            g = clmul(g, minimal_polynomial(m, coset[0]))
    return g


@lru_cache(maxsize=256)
def bch_nested_rows(m: int, t: int, shorten: int = 0) -> list[int]:
    """The first t rows of a basis of the extended BCH codes of length 2^m that is nested along the chain.

    For each Bose distance from the largest down, the shifts x^i·g(x) of that
    code's generator polynomial are added when they raise the rank, until t
    rows are found; each row is extended by its parity bit (coordinate 2^m − 1).

    With ``shorten`` = s only the shifts of degree below 2^m − 1 − s are used:
    a word a(x)·g(x) of a code of dimension k vanishes on the top s cyclic
    coordinates exactly when deg a < k − s, so these shifts span that subcode
    (dimension k − s), and the rows stay nested along the chain of shortened codes.

    Examples
    --------
    >>> [bin(r) for r in bch_nested_rows(3, 2)]   # all-ones, then a word of RM(1,3)
    ['0b11111111', '0b10001011']
    >>> [bin(r) for r in bch_nested_rows(3, 2, shorten=1)]   # both vanish on coordinate 6
    ['0b10001011', '0b10010110']
    """
    order = (1 << m) - 1
    rows: list[int] = []
    pivots: dict[int, int] = {}
    for bose in bch_bose_distances(m):
        if len(rows) >= t:
            break
        zeros, _ = bch_zero_count(m, bose)
        count = order - zeros - shorten
        if count <= 0:
            continue  # this code has no nonzero word vanishing on the shortened coordinates
        g = bch_generator_polynomial(m, bose)
        cands = [clmul(g, 1 << i) for i in range(count)]
        _distinct_rows(cands, rows, pivots)
        if len(rows) != count:
            raise ArithmeticError("BCH chain is not nested")
    if len(rows) < t:
        what = f"the extended BCH codes of length {1 << m}"
        what += f" shortened on {shorten} coordinates" if shorten else ""
        raise SpherecodesError(f"{what} have dimension ≤ {len(rows)}")
    return [r | ((bin(r).count("1") & 1) << order) for r in rows[:t]]


@lru_cache(maxsize=None)
def bch_chain(m: int) -> tuple[tuple[int, int, int, bool], ...]:
    """(Bose distance, dimension, minimum distance, exact) of every extended BCH code of length 2^m.

    Listed from the largest Bose distance (the repetition code) down, i.e. along
    the nested chain from the smallest code up. The minimum distance is exact
    when the code was enumerated (dimension ≤ 30, offline, in ``_TRUE_DISTANCE``) and otherwise the BCH bound, Bose distance + 1.

    Examples
    --------
    >>> bch_chain(4)
    ((15, 1, 16, True), (7, 5, 8, True), (5, 7, 6, True), (3, 11, 4, True), (1, 15, 2, True))
    """
    if not 3 <= m <= 12:
        raise SpherecodesError(f"extended BCH codes are built for m = 3 … 12, got m = {m}")
    order = (1 << m) - 1
    cosets = [c for c in cyclotomic_cosets(m) if c != [0]]
    out = [(order, 1, order + 1, True)]
    zeros = 0
    by_leader = []
    for c in cosets:  # ordered by leader: zeros of δ = leader are the cosets before it
        by_leader.append((c[0], order - zeros))
        zeros += len(c)
    for bose, k in reversed(by_leader):
        if bose == 1:
            out.append((1, k, 2, True))  # the even-weight code
        elif bose == 3:
            out.append((3, k, 4, True))  # the extended Hamming code
        elif (m, bose) in _TRUE_DISTANCE:
            out.append((bose, k, _TRUE_DISTANCE[(m, bose)], True))
        else:
            out.append((bose, k, bose + 1, False))
    return tuple(out)


def bch_true_distance(m: int, bose: int) -> tuple[int, bool]:
    """(minimum distance, exact) of the extended BCH code of length 2^m with this Bose distance.

    Exact when tabulated from an enumeration of all codewords (see :func:`bch_chain`);
    otherwise the BCH bound, Bose distance + 1, with ``exact`` False.

    Examples
    --------
    >>> bch_true_distance(6, 27)
    (28, True)
    """
    _, bose = bch_zero_count(m, bose)
    entry = next(e for e in bch_chain(m) if e[0] == bose)
    return entry[2], entry[3]


def bch_enumerated_distance(m: int, bose: int) -> int:
    """The minimum distance of the extended BCH code, found by enumerating all its codewords (slow).

    This is how ``_TRUE_DISTANCE`` was made; the tests call it to recompute the table.

    Examples
    --------
    >>> bch_enumerated_distance(5, 7)   # [32,16,8]
    8
    """
    zeros, bose = bch_zero_count(m, bose)
    k = (1 << m) - 1 - zeros
    weights = enumerate_weights(bch_nested_rows(m, k), 1 << m, max_dim=max(k, ENUMERATION_LIMIT))
    return next(w for w in range(1, (1 << m) + 1) if weights[w])


def bch_code(m: int, delta: int) -> StructuredCode:
    """The extended narrow-sense primitive BCH code of length 2^m and designed distance δ, on the sphere.

    Parameters
    ----------
    m : int
        3 … 12: length n = 2^m.
    delta : int
        Designed distance of the cyclic code of length 2^m − 1 (1 … 2^m − 1).

    Returns
    -------
    StructuredCode
        2^k points in R^n with max-cos 1 − 2·d/n (d the true minimum distance).

    Examples
    --------
    >>> code = bch_code(6, 27)
    >>> code.name, code.size, code.max_cos
    ('extended BCH [64,10,28]', 1024, Fraction(1, 8))
    """
    if not 3 <= m <= 12:
        raise SpherecodesError(f"extended BCH codes are built for m = 3 … 12, got m = {m}")
    order = (1 << m) - 1
    n = order + 1
    _, bose = bch_zero_count(m, delta)
    chain = [(k, dist, exact) for b, k, dist, exact in bch_chain(m) if b >= bose]
    k, dist, exact = chain[-1]
    return linear_code("extended BCH", "bch", n, k, dist, exact, MACWILLIAMS_SLOANE + ", ch. 7–9 (BCH codes)",
                       LinearBinaryConstruction(n=n, family="bch", params=(m, bose), chain=tuple(chain)))


def linear_code(kind: str, family: str, n: int, k: int, dist: int, exact: bool, citation: str,
                construction) -> StructuredCode:
    """A binary linear [n, k, dist] code on the sphere: 2^k points in R^n with max-cos 1 − 2·dist/n.

    ``exact`` says whether ``dist`` is the true minimum distance (else a lower
    bound, shown as ``≥`` in the name).  A linear code is distance-invariant,
    so its symmetry group (translations by code words) is transitive.

    Examples
    --------
    >>> code = linear_code("extended BCH", "bch", 64, 10, 28, True, "", None)
    >>> code.name, code.size, code.max_cos
    ('extended BCH [64,10,28]', 1024, Fraction(1, 8))
    """
    return StructuredCode(
        name=f"{kind} [{n},{k},{dist}]" if exact else f"{kind} [{n},{k},≥{dist}]",
        family=family,
        d=n,
        size=1 << k,
        max_cos=Fraction(n - 2 * dist, n),
        native_d=n,
        min_distance=dist,
        max_cos_exact=exact,
        transitive=True,
        orbits=1,
        citation=citation,
        construction=construction,
    )


# --- Reed–Muller codes -------------------------------------------------------


@lru_cache(maxsize=64)
def reed_muller_rows(m: int, t: int) -> list[int]:
    """The first t rows of the monomial basis of RM(m, m), by degree then lexicographically.

    Coordinate j is the point of F_2^m whose bits are those of j; the monomial
    x_S is 1 exactly where S ⊆ bits(j). The first Σ_{i≤r} C(m, i) rows span RM(r, m).

    Examples
    --------
    >>> [bin(r) for r in reed_muller_rows(2, 4)]
    ['0b1111', '0b1010', '0b1100', '0b1000']
    """
    from itertools import combinations

    rows = []
    for deg in range(m + 1):
        for subset in combinations(range(m), deg):
            mask = sum(1 << s for s in subset)
            rows.append(sum(1 << j for j in range(1 << m) if j & mask == mask))
            if len(rows) == t:
                return rows
    raise SpherecodesError(f"RM(m, {m}) has dimension {len(rows)} < {t}")


def reed_muller_code(r: int, m: int) -> StructuredCode:
    """The Reed–Muller code RM(r, m) on the sphere: 2^(Σ_{i≤r} C(m,i)) points in R^(2^m).

    Minimum distance 2^(m−r), so max-cos 1 − 2^(1−r); RM(1, m) is the
    cross-polytope ±(Hadamard rows)/√n.

    Examples
    --------
    >>> code = reed_muller_code(1, 4)
    >>> code.size, code.max_cos
    (32, Fraction(0, 1))
    """
    if not (0 <= r <= m and 1 <= m <= 12):
        raise SpherecodesError(f"RM(r, m) needs 0 ≤ r ≤ m ≤ 12, got r = {r}, m = {m}")
    n = 1 << m
    chain = tuple((sum(math.comb(m, i) for i in range(j + 1)), 1 << (m - j), True) for j in range(r + 1))
    return linear_code(f"Reed–Muller RM({r},{m})", "reed-muller", n, chain[-1][0], 1 << (m - r), True,
                       MACWILLIAMS_SLOANE + ", ch. 13 (Reed–Muller codes)",
                       LinearBinaryConstruction(n=n, family="reed-muller", params=(r, m), chain=chain))


# --- the extended Golay code -------------------------------------------------

# g(x) = x^11 + x^10 + x^6 + x^5 + x^4 + x^2 + 1 generates the cyclic [23,12,7]
# Golay code (MacWilliams & Sloane 1977, ch. 2 §6).
_GOLAY_GENERATOR = 0b110001110101


@lru_cache(maxsize=1)
def golay_rows() -> list[int]:
    """The 12 rows x^i·g(x), extended by a parity bit, of the extended Golay code [24,12,8].

    Examples
    --------
    >>> len(golay_rows()), bin(golay_rows()[0]).count("1")
    (12, 8)
    """
    rows = [clmul(_GOLAY_GENERATOR, 1 << i) for i in range(12)]
    return [r | ((bin(r).count("1") & 1) << 23) for r in rows]


def golay_code() -> StructuredCode:
    """The extended binary Golay code [24,12,8]: 4096 points in R^24 with max-cos 1/3.

    Examples
    --------
    >>> code = golay_code()
    >>> code.size, code.max_cos, code.min_distance
    (4096, Fraction(1, 3), 8)
    """
    return linear_code("extended Golay", "golay", 24, 12, 8, True, MACWILLIAMS_SLOANE + ", ch. 2 §6 and ch. 20",
                       LinearBinaryConstruction(n=24, family="golay", params=(), chain=((12, 8, True),)))
