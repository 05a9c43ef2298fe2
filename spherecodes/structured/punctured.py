"""Binary codes of every length: the extended BCH and Golay codes, shortened and punctured.

The extended BCH codes live in R^(2^m) and the extended Golay code in R^24.
Deleting coordinates of a parent [N, k, δ] gives shorter codes
(MacWilliams & Sloane 1977, ch. 1 §9):

* *puncturing* p coordinates keeps every word (while p < δ): [N − p, k, ≥ δ − p].
  The parity coordinate goes first: it gives the narrow-sense primitive BCH
  code of length 2^m − 1 (minimum distance δ − 1, odd) and the perfect Golay
  code [23,12,7]; then the highest remaining cyclic coordinates;
* *shortening* s coordinates (the highest cyclic ones, s < k) keeps the words
  that vanish there and deletes them: [N − s, k − s, ≥ δ].

Doing both gives [N − s − p, k − s, ≥ δ − p]. A code fits R^d when its
length is at most d (zero padding), so for K points (t = ⌈log2 K⌉) a member of
dimension k ≥ t is shortened on every coordinate it can spare, s = k − t (each
one keeps the distance and shortens the code), and punctured only where it is
still longer than d, p = max(0, N − s − d) (examples in docs/structured.md,
"Every length").

The minimum distance is exact (no ≥ in the name) when the parent's is and few
coordinates are deleted: the extended BCH codes are invariant under the affine
group of GF(2^m) (ch. 8 §5), which is 2-transitive on the coordinates, so every
coordinate lies in A_δ·δ/N and every pair in A_δ·δ(δ−1)/(N(N−1)) of the A_δ
minimum-weight words (N = 2^m); by inclusion–exclusion, for s + p ≤ 2 (and
δ ≤ N − 2) one of them covers the punctured coordinates and avoids the
shortened ones. The Golay code's group M24 is 5-transitive (ch. 20), and the
same count over its 759 octads works for s + p ≤ 5. A bound that reaches the
Singleton bound n − k + 1 is exact too (e.g. the whole space, [8,8,1]).
Elsewhere δ − p is a bound, and ``max_cos_for(k)`` enumerates the 2^t words
spanned by the K chosen ones for their exact max-cos.

Reed–Muller codes are not derived: RM(r, m) lies inside the extended BCH code of
designed distance 2^(m−r) − 1 (ch. 13 §5), which has at least its dimension and
its minimum distance, so its derived codes are never worse.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from itertools import count

from spherecodes.errors import SpherecodesError
from spherecodes.structured.binary import (
    MACWILLIAMS_SLOANE,
    LinearBinaryConstruction,
    bch_chain,
    bch_code,
    bch_nested_rows,
    golay_code,
    golay_rows,
    linear_code,
)
from spherecodes.structured.description import MAX_POINTS_BYTES, StructuredCode

# s + p up to which the minimum distance of an exact parent stays exact: the
# transitivity of its symmetry group (see the module docstring).
_TRANSITIVITY = {"bch": 2, "golay": 5}
_BASE_NAME = {"bch": "BCH", "golay": "Golay"}
_CITATION = {
    "bch": MACWILLIAMS_SLOANE + ", ch. 1 §9 (puncturing, shortening), ch. 7–9 (BCH codes) and ch. 8 §5",
    "golay": MACWILLIAMS_SLOANE + ", ch. 1 §9 (puncturing, shortening), ch. 2 §6 and ch. 20 (Golay codes)",
}


def _cyclic_length(family: str, params: tuple) -> int:
    """Length of the cyclic code the parent extends (its parity bit sits at this coordinate)."""
    return (1 << params[0]) - 1 if family == "bch" else 23


def delete_coordinates(row: int, order: int, shorten: int, puncture: int) -> int:
    """An extended cyclic word (bit ``order`` = parity) with its shortened and punctured coordinates deleted.

    The shortened coordinates are the top ``shorten`` cyclic ones (they must be
    0); the punctured ones are the parity, then the next-highest cyclic ones.
    The kept coordinates keep their order (the parity last when it is kept).

    Examples
    --------
    >>> bin(delete_coordinates(0b10001011, 7, 1, 0))   # [8,4,4] → simplex [7,3,4]: parity moves to bit 6
    '0b1001011'
    >>> bin(delete_coordinates(0b10001011, 7, 0, 2))   # drop the parity and coordinate 6
    '0b1011'
    """
    kept = order - shorten
    if (row >> kept) & ((1 << shorten) - 1):
        raise ArithmeticError("a shortened coordinate is not zero")
    if puncture == 0:
        return (row & ((1 << kept) - 1)) | (((row >> order) & 1) << kept)
    return row & ((1 << (kept - puncture + 1)) - 1)


@dataclass(frozen=True)
class ShortenedPuncturedConstruction(LinearBinaryConstruction):
    """A linear binary construction for an extended BCH or Golay code with coordinates deleted.

    ``family`` and ``params`` name the parent, ``n`` is the new length and
    ``chain`` lists the derived members (dimension, distance, exact). The rows
    are the parent's nested rows for the shortened chain (see
    :func:`~spherecodes.structured.binary.bch_nested_rows`) with the deleted
    coordinates removed, so they stay nested and K points are the first K
    messages, as for the parent.

    Examples
    --------
    >>> c = primitive_bch_code(6, 27).construction
    >>> c.n, c.chain
    (63, ((1, 63, True), (7, 31, True), (10, 27, True)))
    """

    shorten: int = 0
    puncture: int = 0

    def rows(self, t: int) -> list[int]:
        order = _cyclic_length(self.family, self.params)
        if self.family == "bch":
            parent_rows = bch_nested_rows(self.params[0], t, self.shorten)
        else:
            # x^i·g(x) (i < t ≤ 12 − s) has degree below 23 − s: it vanishes on the shortened coordinates.
            parent_rows = golay_rows()[:t]
        return [delete_coordinates(r, order, self.shorten, self.puncture) for r in parent_rows]


def _distance_is_exact(family: str, parent_exact: bool, deleted: int, n: int, k: int, dist: int) -> bool:
    """Whether the bound ``dist`` on the minimum distance of a derived [n, k] code is its true value.

    It is when the parent member's distance is exact and at most as many
    coordinates were deleted as its symmetry group is transitive on (see the
    module docstring), or when ``dist`` reaches the Singleton bound n − k + 1,
    which no [n, k] code exceeds (the repetition, even-weight and full codes).

    Examples
    --------
    >>> _distance_is_exact("bch", True, 2, 62, 8, 28), _distance_is_exact("bch", True, 3, 61, 8, 28)
    (True, False)
    >>> _distance_is_exact("bch", True, 8, 8, 8, 1)   # all of F_2^8
    True
    """
    return (parent_exact and deleted <= _TRANSITIVITY[family]) or dist == n - k + 1


def shortened_punctured_code(parent: StructuredCode, shorten: int = 0, puncture: int = 0) -> StructuredCode:
    """An extended BCH or Golay code shortened on ``shorten`` coordinates and punctured on ``puncture``.

    Parameters
    ----------
    parent : StructuredCode
        :func:`~spherecodes.structured.bch_code` or :func:`~spherecodes.structured.golay_code`,
        a code [N, k, δ].
    shorten : int
        0 ≤ s < k coordinates where the kept words vanish (then deleted).
    puncture : int
        0 ≤ p < δ coordinates deleted, the parity coordinate first.

    Returns
    -------
    StructuredCode
        2^(k−s) points in R^(N−s−p), max-cos ≤ 1 − 2(δ − p)/(N − s − p); the
        parent itself when nothing is deleted.

    Examples
    --------
    >>> from spherecodes.structured import bch_code, golay_code
    >>> shortened_punctured_code(bch_code(6, 27), puncture=4).name
    'punctured extended BCH [60,10,≥24]'
    >>> code = shortened_punctured_code(bch_code(6, 27), shorten=2)
    >>> code.name, code.size, code.max_cos
    ('shortened extended BCH [62,8,28]', 256, Fraction(3, 31))
    >>> shortened_punctured_code(golay_code(), shorten=1).name
    'shortened extended Golay [23,11,8]'
    """
    construction = parent.construction
    if type(construction) is not LinearBinaryConstruction or parent.family not in _TRANSITIVITY:
        raise SpherecodesError(f"only extended BCH and Golay codes are shortened or punctured here, not {parent.name}")
    k, dist, _ = construction.chain[-1]
    if not 0 <= shorten < k:
        raise SpherecodesError(f"{parent.name} can be shortened on 0 … {k - 1} coordinates, not {shorten}")
    if not 0 <= puncture < dist:
        # Deleting δ coordinates could merge two words.
        raise SpherecodesError(f"{parent.name} can be punctured on 0 … {dist - 1} coordinates, not {puncture}")
    if shorten == puncture == 0:
        return parent
    n = construction.n - shorten - puncture
    deleted = shorten + puncture
    chain = tuple(
        (kk - shorten, dd - puncture, _distance_is_exact(parent.family, ex, deleted, n, kk - shorten, dd - puncture))
        for kk, dd, ex in construction.chain
        if kk > shorten
    )
    k, dist, exact = chain[-1]
    base = _BASE_NAME[parent.family]
    kind = base if puncture == 1 else (f"extended {base}" if puncture == 0 else f"punctured extended {base}")
    if shorten:
        kind = "shortened " + kind
    return linear_code(kind, parent.family, n, k, dist, exact, _CITATION[parent.family],
                       ShortenedPuncturedConstruction(n=n, family=construction.family, params=construction.params,
                                                      chain=chain, shorten=shorten, puncture=puncture))


def primitive_bch_code(m: int, delta: int) -> StructuredCode:
    """The narrow-sense primitive BCH code of length 2^m − 1 and designed distance δ, on the sphere.

    The extended code punctured on its parity coordinate; its minimum distance
    is that of the extended code minus one (exact where that one is).

    Examples
    --------
    >>> code = primitive_bch_code(6, 27)
    >>> code.name, code.size, code.max_cos
    ('BCH [63,10,27]', 1024, Fraction(1, 7))
    """
    return shortened_punctured_code(bch_code(m, delta), puncture=1)


def max_useful_length(t: int) -> int:
    """The largest length n at which ``points(K)`` builds K = 2^(t−1) + 1 points (at most 4 GiB of float64).

    A code of dimension t is listed only for K > 2^(t−1) (smaller K are served
    by smaller codes), so it is worth listing only up to this length.

    Examples
    --------
    >>> max_useful_length(24), max_useful_length(25)
    (63, 31)
    """
    return MAX_POINTS_BYTES // (8 * ((1 << (t - 1)) + 1))


# The longest parent: the extended BCH codes are built up to length 2^12.
_MAX_PARENT_LENGTH = 1 << 12


@lru_cache(maxsize=1)
def _parents() -> tuple[tuple[str, int, tuple], ...]:
    """(family, length N, members (key, dimension, distance, exact) by increasing dimension) of every parent."""
    parents = [("bch", 1 << m, bch_chain(m)) for m in range(3, _MAX_PARENT_LENGTH.bit_length())]
    parents.append(("golay", 24, ((None, 12, 8, True),)))
    return tuple(sorted(parents, key=lambda p: p[1]))


def _cos_bound(distance: int, length: int) -> float:
    """The max-cos bound (n − 2δ)/n that ranks the candidates, as a float: it orders them exactly as the fraction
    would (lengths are at most :data:`_MAX_PARENT_LENGTH` = 2^12, so two different bounds differ by at least
    2^-24, far above float64 rounding, and equal ones round alike), at a fraction of the cost."""
    return (length - 2 * distance) / length


@lru_cache(maxsize=None)
def _parent_table(index: int, t: int) -> tuple[list[int], list[tuple], list[tuple]] | None:
    """The members of dimension k ≥ t of one parent, prepared for every d at once (None: there are none).

    Every member is shortened on s = k − t coordinates (each shortening keeps
    the distance and shortens the code, so this is the best s): it fits R^d
    when N − k + t ≤ d. Otherwise it is also punctured on p = N − d − s
    coordinates to length d, distance δ − p: the larger δ + k, the better.
    Returns the dimensions k, then for each position i the best shortened
    candidate among the members from i on (they fit together: k grows with i),
    and the best punctured member (δ + k, exact, key, k, δ) up to i.
    """
    family, length, members = _parents()[index]
    members = [mem for mem in members if mem[1] >= t]
    if not members:
        return None
    suffix: list[tuple] = []
    for key, k, dist, exact in reversed(members):
        n = length - (k - t)
        shortened_exact = _distance_is_exact(family, exact, k - t, n, t, dist)
        cand = (_cos_bound(dist, n), -n, not shortened_exact, index, key, k - t, 0)
        suffix.append(cand if not suffix or cand < suffix[-1] else suffix[-1])
    suffix.reverse()
    prefix: list[tuple] = []
    for key, k, dist, exact in members:
        entry = (dist + k, exact, key, k, dist)
        # Ties in δ + k (same length and bound): an exact member, then the first.
        prefix.append(entry if not prefix or entry[:2] > prefix[-1][:2] else prefix[-1])
    return [mem[1] for mem in members], suffix, prefix


def _best_candidate(t: int, d: int) -> tuple | None:
    """The best code of dimension t and length ≤ d from any parent, as a rank tuple.

    (max-cos bound, −length, not exact, parent index, key, s, p): ties go to
    the longer code (closer to native, larger distance), then an exact one.
    """
    best = None
    for index, (family, length, _) in enumerate(_parents()):
        table = _parent_table(index, t)
        if table is None:
            continue
        ks, suffix, prefix = table
        i = bisect_left(ks, t + length - d)  # members from i on fit after shortening alone
        cands = [suffix[i]] if i < len(ks) else []
        if i > 0:
            _, parent_exact, key, k, dist = prefix[i - 1]
            s = k - t
            p = length - d - s
            if dist - p >= 1:  # puncturing δ coordinates could merge two words
                exact = _distance_is_exact(family, parent_exact, s + p, d, t, dist - p)
                cands.append((_cos_bound(dist - p, d), -d, not exact, index, key, s, p))
        for cand in cands:
            if best is None or cand < best:
                best = cand
    return best


def shortened_punctured_codes(d: int) -> tuple[StructuredCode, ...]:
    """For every K, the best shortened or punctured BCH or Golay code that fits R^d (length ≤ d).

    Parents: the extended BCH codes of every length 2^m ≤ 2^12 and the extended
    Golay code, each member shortened and punctured as the module text says
    (puncturing more and zero-padding back never helps: each puncture can cost
    one unit of distance; shortening more leaves fewer than 2^t words). For
    each t the code with the smallest max-cos bound is kept (ties: the longer
    one, then an exact distance), among the lengths
    n at which 2^(t−1) + 1 points fit in memory (:func:`max_useful_length`),
    unless it is a parent itself (listed as such). Every code fitting R^(d−1)
    fits R^d, so the best max-cos never grows with d. For d = 2^m − 1 all the
    primitive BCH codes are listed too. Each code is at its own length (pad
    with ``embedded(d)``); decided from the exact parameters, cached per d.

    Examples
    --------
    >>> [c.name for c in shortened_punctured_codes(63) if c.size in (256, 1024, 2048)]
    ['shortened extended BCH [62,8,28]', 'BCH [63,10,27]', 'shortened extended BCH [59,11,≥24]']
    >>> [c.name for c in shortened_punctured_codes(64) if c.size == 256]   # shorter than 64: still best
    ['shortened extended BCH [62,8,28]']
    >>> [c.name for c in shortened_punctured_codes(23) if c.family == "golay"][-3:]
    ['shortened extended Golay [22,10,8]', 'shortened extended Golay [23,11,8]', 'Golay [23,12,7]']
    >>> shortened_punctured_codes(4)
    ()
    """
    if d < 5:
        # In R^3 and R^4 these codes are far from the optima the optimisers reach
        # (the cube: max-cos 1/3 for K = 8 in R^3, the square antiprism 0.2612).
        return ()
    # Every parent fits from d = 2^12 on: larger d list the same codes.
    return _codes_fitting(min(d, _MAX_PARENT_LENGTH))


@lru_cache(maxsize=None)
def _codes_fitting(d: int) -> tuple[StructuredCode, ...]:
    chosen: list[tuple] = []
    for t in count(1):
        longest = max_useful_length(t)
        if longest < t:
            break  # a code of dimension t has length ≥ t
        # Codes too long for 2^(t−1) + 1 points in memory are left out at every d.
        best = _best_candidate(t, min(d, longest))
        # A parent itself (nothing deleted) is listed as such by the selection (structured/selection.py).
        if best is not None and best[-2:] != (0, 0) and best[3:] not in chosen:
            chosen.append(best[3:])
    m = d.bit_length()
    if d == (1 << m) - 1 and m >= 3:
        index = next(i for i, p in enumerate(_parents()) if p[1] == 1 << m)
        chosen += [c for c in ((index, bose, 0, 1) for bose, *_ in bch_chain(m)) if c not in chosen]
    codes = [_derived(*c) for c in chosen]
    codes.sort(key=lambda c: (c.family, c.size, c.name))
    return tuple(codes)


@lru_cache(maxsize=None)
def _derived(index: int, key: int | None, shorten: int, puncture: int) -> StructuredCode:
    # One object per code, shared by every d that lists it.
    family, length, _ = _parents()[index]
    parent = bch_code(length.bit_length() - 1, key) if family == "bch" else golay_code()
    return shortened_punctured_code(parent, shorten, puncture)
