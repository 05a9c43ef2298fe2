"""Kerdock codes on the sphere: n² points in R^n (n = 4^j) with max-cos 1/√n, i.e. n/2 real MUBs.

Construction (Hammons, Kumar, Calderbank, Sloane & Solé 1994): with r = log2(n) − 1
odd, the quaternary Kerdock code of length 2^r is the Z4-linear code
{ (T(λx) + ε)_{x ∈ {0} ∪ ⟨ξ⟩} : λ ∈ GR(4, r), ε ∈ Z4 }, T the trace of the
Galois ring and ξ a root of the Hensel lift of a primitive binary polynomial.
Its Gray image (0 → 00, 1 → 01, 2 → 11, 3 → 10) is the binary Kerdock code of
length n = 2^(r+1), and a quaternary symbol z becomes the pair of signs
(+,+), (+,−), (−,−), (−,+) for z = 0, 1, 2, 3.

Writing λ = a + 2b coordinate-wise (a, b ∈ {0,1}^r in the basis 1, ξ, …, ξ^(r−1)),
the words sharing a form a coset of RM(1, n) — one orthonormal basis and its
negatives (Calderbank, Cameron, Kantor & Seidel 1997) — so the points are
ordered basis by basis: index i = 2n·a + n·h + 2b + e, with ε = 2h + e; the
first n of each basis are orthogonal, the next n their negatives. With the 2n
vectors ±e_i put first, one gets n/2 + 1 mutually unbiased bases, n² + 2n points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.structured.description import StructuredCode
from spherecodes.structured.gf2 import galois_ring_trace_sequence

KERDOCK_CITATION = (
    "Hammons, Kumar, Calderbank, Sloane & Solé (1994), The Z4-linearity of Kerdock, Preparata, "
    "Goethals and related codes; Calderbank, Cameron, Kantor & Seidel (1997), Z4-Kerdock codes, "
    "orthogonal spreads, and extremal Euclidean line-sets"
)
KERDOCK_LENGTHS = (16, 64, 256, 1024, 4096)
# Messages encoded at once: bounds the int64 intermediate to ~2^14 × n/2 entries.
_CHUNK = 1 << 14
# Sign pairs of the Gray map for z = 0, 1, 2, 3.
_GRAY_SIGNS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, -1.0], [-1.0, 1.0]])


@lru_cache(maxsize=None)
def kerdock_generator(n: int) -> np.ndarray:
    """The r × 2^r quaternary matrix whose row j is (T(ξ^j·x))_x, x = 0, ξ^0, ξ^1, … (n = 2^(r+1)).

    Examples
    --------
    >>> kerdock_generator(16).tolist()
    [[0, 3, 2, 2, 1, 2, 1, 1], [0, 2, 2, 1, 2, 1, 1, 3], [0, 2, 1, 2, 1, 1, 3, 2]]
    """
    if n not in KERDOCK_LENGTHS:
        raise SpherecodesError(f"Kerdock codes are built for n in {KERDOCK_LENGTHS}, got n = {n}")
    r = int(math.log2(n)) - 1
    trace = galois_ring_trace_sequence(r)
    order = len(trace)
    gen = np.zeros((r, order + 1), dtype=np.int64)
    for j in range(r):
        gen[j, 1:] = trace[(np.arange(order) + j) % order]
    return gen


@dataclass(frozen=True)
class KerdockConstruction:
    """Builds the first K points of the Kerdock code of length n (with ±e_i first if ``axes``)."""

    n: int
    axes: bool

    def _kerdock_points(self, index: np.ndarray) -> np.ndarray:
        n = self.n
        r = int(math.log2(n)) - 1
        gen = kerdock_generator(n).astype(np.uint8)
        # A symbol's pair of coordinates as one complex number: one gather of 16 bytes per symbol.
        pairs = (_GRAY_SIGNS / math.sqrt(n)).view(np.complex128)[:, 0]
        out = np.empty((len(index), n), dtype=np.float64)
        for s in range(0, len(index), _CHUNK):
            i = index[s : s + _CHUNK]
            a, w = np.divmod(i, 2 * n)
            h, rem = np.divmod(w, n)
            e, b = rem & 1, rem >> 1
            # z = Σ_j λ_j·gen_j + ε mod 4, in bytes (their wrap-around mod 256 keeps the value mod 4).
            z = np.empty((len(i), n // 2), dtype=np.uint8)
            z[:] = (2 * h + e).astype(np.uint8)[:, None]
            for j in range(r):
                z += np.multiply.outer((((a >> j) & 1) + 2 * ((b >> j) & 1)).astype(np.uint8), gen[j])
            z &= 3
            out[s : s + _CHUNK].view(np.complex128)[:] = pairs[z]
        return out

    def points(self, k: int) -> np.ndarray:
        n = self.n
        if not self.axes:
            return self._kerdock_points(np.arange(k))
        head = min(k, 2 * n)
        axes = np.zeros((head, n))
        idx = np.arange(head)
        axes[idx, idx % n] = np.where(idx < n, 1.0, -1.0)
        if k <= 2 * n:
            return axes
        return np.concatenate([axes, self._kerdock_points(np.arange(k - 2 * n))])

    def max_cos_bound(self, k: int) -> Fraction:
        # Within one basis and its negatives the inner products are 0 and −1;
        # across bases they are ±1/√n (mutually unbiased).
        return Fraction(0) if k <= 2 * self.n else Fraction(1, math.isqrt(self.n))

    def max_cos_for(self, k: int) -> Fraction:
        return self.max_cos_bound(k)

    def spectrum(self) -> dict[Fraction, int] | None:
        if self.axes:
            return None  # two orbits: the axes and the Kerdock points see different spectra
        # Kerdock weight distribution (MacWilliams & Sloane 1977, ch. 15 §5): the
        # code is distance-invariant.
        n, s = self.n, math.isqrt(self.n)
        return {
            Fraction(-1): 1,
            Fraction(-1, s): n * (n - 2) // 2,
            Fraction(0): 2 * n - 2,
            Fraction(1, s): n * (n - 2) // 2,
            Fraction(1): 1,
        }


def kerdock_code(n: int, axes: bool = False) -> StructuredCode:
    """The Kerdock code of length n = 4^j on the sphere (n = 16 is the Nordstrom–Robinson code).

    Parameters
    ----------
    n : int
        16, 64, 256, 1024 or 4096.
    axes : bool
        Add the 2n vectors ±e_i (one more mutually unbiased basis): n² + 2n
        points, same max-cos 1/√n, two orbits.

    Examples
    --------
    >>> code = kerdock_code(16, axes=True)
    >>> code.size, code.max_cos
    (288, Fraction(1, 4))
    >>> import numpy as np
    >>> x = code.points()
    >>> float(np.max(x @ x.T - 2 * np.eye(288)))
    0.25
    """
    kerdock_generator(n)
    s = math.isqrt(n)
    name = "Nordstrom–Robinson (Kerdock n = 16)" if n == 16 else f"Kerdock n = {n}"
    if axes:
        name += " + ±e_i"
    size = n * n + (2 * n if axes else 0)
    return StructuredCode(
        name=name,
        family="kerdock",
        d=n,
        size=size,
        max_cos=Fraction(1, s),
        native_d=n,
        min_distance=None if axes else n // 2 - s // 2,
        transitive=not axes,
        orbits=2 if axes else 1,
        citation=KERDOCK_CITATION,
        construction=KerdockConstruction(n=n, axes=axes),
    )


def kerdock_basis_of(n: int, index: int) -> int:
    """Which mutually unbiased basis (0-based, in point order) the point ``index`` of ``kerdock_code(n)`` is in.

    Examples
    --------
    >>> kerdock_basis_of(16, 31), kerdock_basis_of(16, 32)
    (0, 1)
    """
    return index // (2 * n)
