"""Which structured codes fit (d, K), and the best of them — decided from exact parameters, nothing built.

Every code is described by its construction's exact parameters (tabulated
where they came from an enumeration; the tests rebuild the codes and check
them). A code native to R^d' fits every d ≥ d' by zero padding.
"""

from __future__ import annotations

from functools import lru_cache

from spherecodes.errors import SpherecodesError
from spherecodes.structured.binary import bch_chain, bch_code, golay_code, reed_muller_code
from spherecodes.structured.description import StructuredCode
from spherecodes.structured.derived import classical_derived_code, classical_derived_keys
from spherecodes.structured.etf import etf_codes
from spherecodes.structured.kerdock import KERDOCK_LENGTHS, kerdock_code
from spherecodes.structured.lattices import (
    barnes_wall_16,
    e6_roots,
    e7_roots,
    e8_roots,
    leech_lattice,
    root_system_d,
)
from spherecodes.structured.punctured import shortened_punctured_codes
from spherecodes.structured.srg import srg_codes

# Largest native length of the binary families (extended BCH and Reed–Muller: 2^12).
MAX_BINARY_M = 12

#: Derived codes that a graph of :data:`~spherecodes.structured.srg.GRAPHS` builds from its definition: the
#: selection lists them under the graph's name (the derived construction stays, a second method the tests compare).
BUILT_FROM_GRAPHS = {"leech-275": "mclaughlin", "leech-162": "mclaughlin-2"}


def native_codes(max_d: int) -> list[StructuredCode]:
    """Every structured code whose native dimension is at most ``max_d`` (D_n only for n = max_d).

    Smaller D_n are left out: D_max_d has more points at the same max-cos.
    The shortened and punctured binary codes are, for each K, the best of
    length ≤ max_d (cached per max_d; see
    :func:`~spherecodes.structured.punctured.shortened_punctured_codes`), so
    that the best code for K never gets worse as max_d grows.
    Reed–Muller codes are listed for r = 1, 2 only.

    Examples
    --------
    >>> sorted({c.family for c in native_codes(8)})
    ['bch', 'derived', 'etf', 'lattice', 'reed-muller', 'srg']
    >>> [c.name for c in native_codes(63) if c.native_d == 63][:3]
    ['BCH [63,1,63]', 'shortened extended BCH [63,6,32]', 'BCH [63,7,31]']
    """
    # Listed once per max_d (frozen objects, nothing built): a run asks for it several times.
    return list(_native_codes(max_d))


@lru_cache(maxsize=64)
def _native_codes(max_d: int) -> tuple[StructuredCode, ...]:
    codes: list[StructuredCode] = []
    for m in range(3, MAX_BINARY_M + 1):
        if (1 << m) > max_d:
            break
        codes.extend(_bch_codes(m))
    for m in range(2, MAX_BINARY_M + 1):
        if (1 << m) > max_d:
            break
        # RM(1, m) and RM(2, m); higher orders have max-cos ≥ 3/4 and are matched
        # or beaten by the extended BCH codes of the same length.
        for r in (1, 2):
            if r < m:
                codes.append(reed_muller_code(r, m))
    if max_d >= 24:
        codes.append(golay_code())
    codes.extend(shortened_punctured_codes(max_d))
    for n in KERDOCK_LENGTHS:
        if n <= max_d:
            codes.append(kerdock_code(n))
            codes.append(kerdock_code(n, axes=True))
    if max_d >= 3:
        codes.append(root_system_d(max_d))
    for d, make in ((6, e6_roots), (7, e7_roots), (8, e8_roots), (16, barnes_wall_16), (24, leech_lattice)):
        if d <= max_d:
            codes.append(make())
    for key in classical_derived_keys():
        if key in BUILT_FROM_GRAPHS:
            continue
        code = classical_derived_code(key)
        if code.native_d <= max_d:
            codes.append(code)
    # Two-distance codes of strongly regular graphs; one that repeats the
    # parameters of a code above is that code (the Clebsch and Schläfli
    # configurations are E8-derived), which keeps its name.
    listed = {(c.native_d, c.size, c.max_cos) for c in codes}
    codes.extend(c for c in _srg_codes() if c.native_d <= max_d and (c.native_d, c.size, c.max_cos) not in listed)
    # Real equiangular tight frames, the same way (the 28 lines of E7 are the Steiner frame of PG(2,2)).
    listed = {(c.native_d, c.size, c.max_cos) for c in codes}
    codes.extend(c for c in _etf_codes() if c.native_d <= max_d and (c.native_d, c.size, c.max_cos) not in listed)
    return tuple(codes)


@lru_cache(maxsize=1)
def _etf_codes() -> tuple[StructuredCode, ...]:
    return tuple(etf_codes())


@lru_cache(maxsize=1)
def _srg_codes() -> tuple[StructuredCode, ...]:
    # Described once (frozen objects, nothing built).
    return tuple(srg_codes())


@lru_cache(maxsize=None)
def _bch_codes(m: int) -> tuple[StructuredCode, ...]:
    # Described once per length (frozen objects): native_codes runs on every generate.
    return tuple(bch_code(m, bose) for bose, *_ in bch_chain(m))


def available_codes(d: int, k: int | None = None) -> list[StructuredCode]:
    """Every structured code that fits R^d (native or zero-padded), with at least k points if k is given.

    Sorted by max-cos for k points (smallest first), then size. Nothing is
    built: the parameters are those of the constructions.

    Parameters
    ----------
    d : int
        Dimension, ≥ 1.
    k : int, optional
        Minimum number of points.

    Examples
    --------
    >>> codes = available_codes(8, 200)   # the E8 roots, then the cube {±1}^8/√8
    >>> [(c.name, c.size, str(c.max_cos)) for c in codes]
    [('E8 roots', 240, '1/2'), ('shortened BCH [8,8,1]', 256, '3/4')]
    """
    if d < 1:
        raise SpherecodesError(f"d must be at least 1, got {d}")
    if k is not None and k < 1:
        raise SpherecodesError(f"K must be at least 1, got {k}")
    out = []
    for code in native_codes(d):
        if k is not None and code.size < k:
            continue
        out.append(code if code.native_d == d else code.embedded(d))
    kk = k if k is not None and k >= 2 else 2
    out.sort(key=lambda c: (c.max_cos_bound(min(kk, c.size)), c.size, c.name))
    return out


@lru_cache(maxsize=256)
def best_structured_code(d: int, k: int) -> StructuredCode | None:
    """The structured code in R^d with at least k points whose k chosen points have the smallest max-cos.

    Ties go to fewer points wasted (smaller N), then a native code, then the
    larger minimum distance. Decided from the exact parameters alone (nothing
    built). ``code.points(k)`` then gives the K points and
    ``code.max_cos_for(k)`` their exact max-cos. None when no code has k points.

    Examples
    --------
    >>> code = best_structured_code(64, 1000)
    >>> code.name, code.max_cos_bound(1000)
    ('extended BCH [64,10,28]', Fraction(1, 8))
    >>> best_structured_code(16, 288).name
    'Nordstrom–Robinson (Kerdock n = 16) + ±e_i'
    >>> code = best_structured_code(64, 200)   # a code of R^52, zero-padded, beats those of length 64
    >>> code.name, code.d, code.max_cos_bound(200)
    ('isotropic subspaces q = 4 SRG(325,68,3,17), eigenspace -17', 64, Fraction(1, 16))
    """
    if d < 1:
        raise SpherecodesError(f"d must be at least 1, got {d}")
    if k < 2:
        raise SpherecodesError(f"K must be at least 2, got {k}")

    def key(c: StructuredCode) -> tuple:
        return (c.max_cos_bound(k), c.size - k, c.native_d != d, -(c.min_distance or 0), c.name)

    # Ranked at their native length (the key does not change with padding) and
    # only the winner embedded: this runs on every generate.
    best = min((c for c in native_codes(d) if c.size >= k), key=key, default=None)
    return best if best is None or best.native_d == d else best.embedded(d)


def describe(code: StructuredCode) -> str:
    """One line: name, (d, N, max-cos), and whether max-cos is exact.

    Examples
    --------
    >>> describe(e8_roots())
    'E8 roots: 240 points in R^8, max-cos 1/2'
    """
    exact = "" if code.max_cos_exact else " (upper bound)"
    return f"{code.name}: {code.size} points in R^{code.d}, max-cos {code.max_cos}{exact}"
