"""Lattice shells: the minimal vectors of D_n, E6, E7, E8, BW16 and the Leech lattice, normalised.

Every shell here has max-cos 1/2 (minimal vectors of a lattice are at least 60°
apart; the cross-polytope, the frame ±e_i of Z^n, has max-cos 0) and a symmetry group (the lattice's automorphism group, or the Weyl group
of the root system) that is transitive on its points (Conway & Sloane 1999,
ch. 4 and ch. 8). Coordinates are built as integers (after scaling), so the
inner products can be checked exactly; E6 and E7 are E8 roots in a subspace,
expressed in a fixed orthonormal basis (float64).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.structured.binary import golay_rows, reed_muller_rows
from spherecodes.structured.description import PointSetConstruction, StructuredCode, derive_points
from spherecodes.structured.gf2 import encode_messages, pack_rows, unpack_signs

CONWAY_SLOANE = "Conway & Sloane (1999), Sphere Packings, Lattices and Groups, 3rd ed."


def _even_sign_patterns(w: int) -> np.ndarray:
    """All ±1 vectors of length w with an even number of −1 (2^(w−1) rows)."""
    signs = np.array(list(itertools.product((1, -1), repeat=w)), dtype=np.int64)
    return signs[np.prod(signs, axis=1) == 1]


def _pairs_pm(n: int, value: int) -> np.ndarray:
    """All vectors with ±value in two coordinates and 0 elsewhere, pairs (i < j) in order."""
    out = []
    for i, j in itertools.combinations(range(n), 2):
        for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            v = np.zeros(n, dtype=np.int64)
            v[i], v[j] = si * value, sj * value
            out.append(v)
    return np.array(out)


@lru_cache(maxsize=1)
def e8_integer_points() -> np.ndarray:
    """The 240 E8 roots scaled by 2: (±2, ±2, 0⁶) and (±1⁸) with an even number of −1; norm 8.

    Examples
    --------
    >>> x = e8_integer_points()
    >>> x.shape, set((x * x).sum(axis=1).tolist())
    ((240, 8), {8})
    """
    return np.concatenate([_pairs_pm(8, 2), _even_sign_patterns(8)])


@lru_cache(maxsize=1)
def bw16_integer_points() -> np.ndarray:
    """The 4320 minimal vectors of the Barnes–Wall lattice BW16, norm 8.

    480 of shape (±2², 0¹⁴) and 3840 of shape (±1⁸, 0⁸) on the 30 octads
    (weight-8 words) of RM(1,4), with an even number of −1 (Conway & Sloane 1999, ch. 4 §10).

    Examples
    --------
    >>> bw16_integer_points().shape
    (4320, 16)
    """
    rows = reed_muller_rows(4, 5)
    words = encode_messages(pack_rows(rows, 16), np.arange(32))
    support = (unpack_signs(words, 16) < 0).astype(np.int64)
    octads = support[support.sum(axis=1) == 8]
    signs = _even_sign_patterns(8)
    blocks = []
    for octad in octads:
        block = np.zeros((len(signs), 16), dtype=np.int64)
        block[:, octad == 1] = signs
        blocks.append(block)
    return np.concatenate([_pairs_pm(16, 2)] + blocks)


@lru_cache(maxsize=1)
def golay_codewords() -> np.ndarray:
    """The 4096 words of the extended Golay code as a (4096, 24) 0/1 int64 array (message order).

    Examples
    --------
    >>> golay_codewords().sum(axis=1).max()
    np.int64(24)
    """
    words = encode_messages(pack_rows(golay_rows(), 24), np.arange(4096))
    return (unpack_signs(words, 24) < 0).astype(np.int64)


@lru_cache(maxsize=1)
def leech_integer_points() -> np.ndarray:
    """The 196,560 minimal vectors of the Leech lattice, scaled by √8 (norm 32), int8.

    From the extended Golay code C (Conway & Sloane 1999, ch. 4 §11):
    97,152 of shape (±2⁸, 0¹⁶) on the octads with an even number of −1;
    98,304 of shape (∓3, ±1²³): (−3, 1²³) with the −3 anywhere and the signs
    changed on a codeword of C; 1104 of shape (±4², 0²²).

    Examples
    --------
    >>> x = leech_integer_points()
    >>> x.shape, int((x[0].astype(int) ** 2).sum())
    ((196560, 24), 32)
    """
    words = golay_codewords()
    octads = words[words.sum(axis=1) == 8]
    signs = _even_sign_patterns(8).astype(np.int8)
    out = np.zeros((196560, 24), dtype=np.int8)
    pos = 0
    for octad in octads:
        out[pos : pos + 128][:, octad == 1] = 2 * signs
        pos += 128
    flips = (1 - 2 * words).astype(np.int8)  # (−1)^c
    for j in range(24):
        base = np.ones(24, dtype=np.int8)
        base[j] = -3
        out[pos : pos + 4096] = flips * base
        pos += 4096
    out[pos:] = _pairs_pm(24, 4).astype(np.int8)
    return out


def _normalised(builder):
    def build():
        x = builder().astype(np.float64)
        return x / np.linalg.norm(x[0])

    return build


def _shell(name, d, build, size, citation=CONWAY_SLOANE, max_cos=Fraction(1, 2), construction=None) -> StructuredCode:
    """A transitive lattice code: its points from ``build`` unless a ``construction`` is given."""
    if construction is None:
        construction = PointSetConstruction(build=build, max_cos=max_cos, distance_invariant=True)
    return StructuredCode(name=name, family="lattice", d=d, size=size, max_cos=max_cos, native_d=d, transitive=True,
                          orbits=1, citation=citation, construction=construction)


def e8_roots() -> StructuredCode:
    """The 240 roots of E8: the unique optimal kissing configuration in R^8, max-cos 1/2.

    Examples
    --------
    >>> e8_roots().size
    240
    """
    return _shell("E8 roots", 8, _normalised(e8_integer_points), 240, CONWAY_SLOANE + ", ch. 4 §8.1")


@lru_cache(maxsize=1)
def _e7_points() -> np.ndarray:
    x = _normalised(e8_integer_points)()
    return derive_points(x, np.full((1, 8), 1 / math.sqrt(8)), [0.0])


@lru_cache(maxsize=1)
def _e6_points() -> np.ndarray:
    # E6 = the E8 roots orthogonal to an A2: two roots at 120°.
    x = _normalised(e8_integer_points)()
    r1 = np.full(8, 1 / math.sqrt(8))
    r2 = np.zeros(8)
    r2[:2] = -1 / math.sqrt(2)
    return derive_points(x, np.stack([r1, r2]), [0.0, 0.0])


def e7_roots() -> StructuredCode:
    """The 126 roots of E7 (the E8 roots orthogonal to one root), in R^7, max-cos 1/2.

    Examples
    --------
    >>> e7_roots().points().shape
    (126, 7)
    """
    return _shell("E7 roots", 7, _e7_points, 126, CONWAY_SLOANE + ", ch. 4 §8.2")


def e6_roots() -> StructuredCode:
    """The 72 roots of E6 (the E8 roots orthogonal to an A2), in R^6, max-cos 1/2.

    Examples
    --------
    >>> e6_roots().points().shape
    (72, 6)
    """
    return _shell("E6 roots", 6, _e6_points, 72, CONWAY_SLOANE + ", ch. 4 §8.3")


def barnes_wall_16() -> StructuredCode:
    """The 4320 minimal vectors of the Barnes–Wall lattice BW16 (Λ16), max-cos 1/2.

    Examples
    --------
    >>> barnes_wall_16().size
    4320
    """
    return _shell(
        "Barnes–Wall BW16 minimal vectors", 16, _normalised(bw16_integer_points), 4320,
        CONWAY_SLOANE + ", ch. 4 §10",
    )


def leech_lattice() -> StructuredCode:
    """The 196,560 minimal vectors of the Leech lattice Λ24: the optimal kissing configuration in R^24.

    Examples
    --------
    >>> code = leech_lattice()
    >>> code.size, code.max_cos
    (196560, Fraction(1, 2))
    """
    return _shell(
        "Leech lattice minimal vectors", 24, _normalised(leech_integer_points), 196560,
        CONWAY_SLOANE + ", ch. 4 §11",
    )


@dataclass(frozen=True)
class RootSystemDConstruction:
    """The D_n roots ±e_i ± e_j (over √2), built directly by index; the orthogonal frame comes first.

    Order: the 2·2⌊n/2⌋ vectors (e_2i ± e_2i+1)/√2 — positives first, then their
    negatives — which are pairwise orthogonal or antipodal (max-cos 0), then
    every other root, pairs (i < j) in lexicographic order, signs (+,+), (+,−),
    (−,+), (−,−). Only the requested K rows are formed.
    """

    n: int

    def _frame_size(self) -> int:
        return 4 * (self.n // 2)

    def points(self, k: int) -> np.ndarray:
        n = self.n
        out = np.zeros((k, n))
        f = min(k, self._frame_size())
        idx = np.arange(f)
        half = self._frame_size() // 2
        base, neg = idx % half, idx >= half
        i = 2 * (base // 2)
        sgn = np.where(neg, -1.0, 1.0)
        out[idx, i] = sgn
        out[idx, i + 1] = sgn * np.where(base % 2 == 0, 1.0, -1.0)
        if k > f:
            rest = k - f
            pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if not (i % 2 == 0 and j == i + 1)]
            need = (rest + 3) // 4
            p = np.array(pairs[:need]).reshape(-1, 2)
            ii = np.repeat(p[:, 0], 4)[:rest]
            jj = np.repeat(p[:, 1], 4)[:rest]
            s = np.tile(np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=np.float64), (len(p), 1))[:rest]
            rows = np.arange(f, k)
            out[rows, ii] = s[:, 0]
            out[rows, jj] = s[:, 1]
        return out / math.sqrt(2)

    def max_cos_bound(self, k: int) -> Fraction:
        return Fraction(0) if k <= self._frame_size() else Fraction(1, 2)

    def max_cos_for(self, k: int) -> Fraction:
        return self.max_cos_bound(k)

    def spectrum(self) -> dict[Fraction, int] | None:
        n = self.n
        # From (e_1 + e_2)/√2: ±1/2 with the 4(n−2) roots sharing one coordinate,
        # 0 with the 2(n−2)(n−3) + 2 sharing none or both with opposite signs.
        spec = {Fraction(1): 1, Fraction(-1): 1, Fraction(1, 2): 4 * (n - 2), Fraction(-1, 2): 4 * (n - 2)}
        spec[Fraction(0)] = 2 * n * (n - 1) - 2 - 8 * (n - 2)
        return spec


def root_system_d(n: int) -> StructuredCode:
    """The D_n root system: 2n(n−1) points ±(e_i ± e_j)/√2 in R^n, max-cos 1/2 (n ≥ 3).

    Examples
    --------
    >>> code = root_system_d(4)
    >>> code.size, code.max_cos_for(8), code.max_cos
    (24, Fraction(0, 1), Fraction(1, 2))
    """
    if n < 3:
        raise SpherecodesError(f"D_n needs n ≥ 3, got n = {n}")
    return _shell(f"D{n} roots", n, None, 2 * n * (n - 1), CONWAY_SLOANE + ", ch. 4 §7.1",
                  construction=RootSystemDConstruction(n=n))


def cross_polytope(d: int) -> StructuredCode:
    """The 2d points ±e_i in R^d (max-cos 0; D_n's orthogonal frame, RM(1, m) up to rotation).

    Examples
    --------
    >>> cross_polytope(2).points().tolist()
    [[1.0, 0.0], [0.0, 1.0], [-1.0, -0.0], [-0.0, -1.0]]
    """
    def build():
        eye = np.eye(d)
        return np.concatenate([eye, -eye])

    return _shell(f"cross-polytope in R^{d}", d, build, 2 * d,
                  "Conway & Sloane (1999), Sphere Packings, Lattices and Groups, ch. 1", max_cos=Fraction(0))
