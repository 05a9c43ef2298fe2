"""Codes that are one orbit of a group of sign changes: binary linear codes (and their cosets) on the sphere.

A binary code ``C`` of length n is put on the sphere as the rows
``x_c = (−1)^c/√n`` (padded with zero columns in a larger space).  When the
words, each XOR-ed with the first, form a linear subspace ``S`` of GF(2)^n,
the sign changes ``D_s = diag((−1)^s)``, s in S, are isometries that map the
code onto itself, and ``D_{c ⊕ c'}`` maps ``x_c`` to ``x_{c'}``: the group acts
transitively (MacWilliams & Sloane 1977, ch. 1 §2: a linear code looks the
same from every codeword).  So every class sees the same multiset of cosines
and the same one-vs-rest distance, and a witness of class 0 moved by ``D_s``
is a witness of every other class.  Statistics and certificates then need
one row of the Gram matrix instead of all K, and re-checking them needs
O(K·d) work.

:func:`sign_orbit` proves the structure from the prototypes alone (no stored
generators are trusted): all live coordinates of equal magnitude, K = 2^r
distinct words, and a basis of r words over GF(2) found by elimination, so
that the K words are exactly its span, each numbered by its coordinates.
That takes O(K·d·r/64) word operations; memory is O(K·d/64) words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ORBIT_MIN_K", "SignOrbit", "moved_vectors", "sign_orbit"]

#: Smallest K for which statistics and certificates take the orbit's shortcut
#: (below it the scans take milliseconds and the shortcut gains nothing).
ORBIT_MIN_K = 256

#: Rows examined at a time when checking the magnitudes (bounded memory).
_ROWS = 65536


@dataclass(frozen=True)
class SignOrbit:
    """The rows of a code that is one orbit of sign changes, numbered by their coordinates over GF(2).

    Row i's signs XOR row 0's are a word of an r-dimensional subspace; its
    bits at the r pivot positions of an echelon basis are a linear bijection
    onto GF(2)^r, read as the integer ``coordinates[i]``.  The sign change
    taking row 0 to row c takes row j to the row with coordinates
    ``coordinates[j] ^ coordinates[c]``.

    Attributes
    ----------
    coordinates : ndarray of int64, shape (K,)
        A permutation of 0 … K − 1 (row 0 has 0).
    rows : ndarray of int64, shape (K,)
        Its inverse: the row with each coordinate.
    rank : int
        r, with K = 2^r.
    """

    coordinates: np.ndarray
    rows: np.ndarray
    rank: int

    def moved(self, rows, to) -> np.ndarray:
        """The rows that the sign change taking class 0 to class ``to`` makes of ``rows`` (broadcast).

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> sign_orbit(w).moved(np.array([1, 2, 3]), 3).tolist()
        [2, 1, 0]
        """
        return self.rows[self.coordinates[np.asarray(rows)] ^ self.coordinates[np.asarray(to)]]


def moved_vectors(w: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``D_c vector`` for every class c, where ``D_c`` is the sign change taking ``w_0`` to ``w_c``.

    Sign changes are exact in floating point, so a float64 vector computed
    for class 0 (a residual ``w_0 − Σ v_j w_j``) moved here is bit for bit
    the same sum computed for class c from the moved witness.  O(K·d).

    Examples
    --------
    >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
    >>> moved_vectors(w, np.array([0.5, 2.0])).tolist()
    [[0.5, 2.0], [0.5, -2.0], [-0.5, 2.0], [-0.5, -2.0]]
    """
    signs = np.where(w[0] < 0, -1.0, 1.0)
    # The sign of w_c relative to w_0, column by column (1 on zero columns, where the vector is 0 too).
    return np.where(w < 0, -1.0, 1.0) * (signs * vector)


def sign_orbit(w: np.ndarray) -> SignOrbit | None:
    """The orbit structure of a code, proved from its rows, or None when it is not such a code.

    Parameters
    ----------
    w : ndarray, shape (K, d)
        float64 rows.

    Returns
    -------
    SignOrbit or None
        None unless K = 2^r >= 2, every non-zero column's entries share one
        magnitude, the K sign patterns are distinct, and XOR-ed with row 0's
        they are exactly a linear subspace of GF(2)^n.

    Examples
    --------
    The square's vertices (±1, ±1)/√2 are GF(2)^2 on the sphere; three of
    them are not an orbit.

    >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
    >>> sign_orbit(w).rank, sign_orbit(w[:3]), sign_orbit(w[[0, 0, 1, 1]])
    (2, None, None)
    """
    k, d = w.shape
    if k < 2 or k & (k - 1):
        return None
    live = np.flatnonzero(np.any(w != 0, axis=0))
    if live.size == 0:
        return None
    size = abs(w[0, live[0]])
    packed = []
    for start in range(0, k, _ROWS):
        part = w[start : start + _ROWS][:, live]
        if not (np.abs(part) == size).all():
            return None
        packed.append(np.packbits(part < 0, axis=1))
    bits = np.concatenate(packed)
    pad = (-bits.shape[1]) % 8
    words = np.ascontiguousarray(np.pad(bits, ((0, 0), (0, pad)))).view(np.uint64)
    words ^= words[0]
    rank = int(round(math.log2(k)))
    pivots = _echelon_pivots(words, rank)
    if pivots is None:
        return None
    coordinates = np.zeros(k, dtype=np.int64)
    for i, (column, bit) in enumerate(pivots):
        coordinates |= ((words[:, column] & bit) != 0).astype(np.int64) << i
    if len(pivots) != rank or (np.bincount(coordinates, minlength=k) != 1).any():
        return None  # repeated words: fewer than 2^r distinct rows
    rows = np.empty(k, dtype=np.int64)
    rows[coordinates] = np.arange(k)
    return SignOrbit(coordinates, rows, rank)


def _echelon_pivots(words: np.ndarray, rank: int) -> list[tuple[int, np.uint64]] | None:
    """Pivot positions (word, bit mask) of an echelon basis of the words' span, or None if it exceeds ``rank``.

    Gaussian elimination over GF(2): each basis word clears its lowest set
    bit from all the words still left.  A non-zero word of the span has a
    set bit at the pivot of the first basis word in its expansion (the later
    ones were cleared there), so reading the pivot bits is injective on the
    span.
    """
    remaining = words.copy()
    pivots = []
    for _ in range(rank + 1):
        nonzero = np.flatnonzero(remaining.any(axis=1))
        if nonzero.size == 0:
            return pivots
        if len(pivots) == rank:
            return None
        basis = remaining[nonzero[0]].copy()
        column = int(np.flatnonzero(basis)[0])
        bit = basis[column] & (~basis[column] + np.uint64(1))  # its lowest set bit
        pivots.append((column, bit))
        remaining[(remaining[:, column] & bit) != 0] ^= basis
    return None
