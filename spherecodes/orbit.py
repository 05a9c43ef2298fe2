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

:func:`sign_orbit` proves the structure from the prototypes alone (all live
coordinates of equal magnitude, K = 2^r distinct words, exactly the span of
r generators found by elimination over GF(2) or given, as a bank stores
them, and checked the same way either way).  A code of K words with
2^(t−1) < K < 2^t taken as the first K messages of a linear code is no
orbit, but the *prefix* of one: :func:`orbit_prefix` proves it
(:class:`OrbitPrefix`), whose tree of block maxima gives every row's nearest
neighbour in O(K·t).  docs/certificate.md (2.0c and 2.0d) gives the
arguments and the costs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .symmetry import OrbitWords, Symmetry, block_maxima
from .z4orbit import z4_orbit

__all__ = ["ORBIT_MIN_K", "OrbitPrefix", "SignOrbit", "moved_vectors", "orbit_prefix", "resolve_orbit",
           "sign_orbit"]

#: Smallest K for which statistics and certificates take the orbit's shortcut
#: (below it the scans take milliseconds and the shortcut gains nothing).
ORBIT_MIN_K = 256

#: Rows examined at a time when checking the magnitudes (bounded memory: 64 MiB of rows at d = 128).
_ROWS = 65536

#: Words of moved witnesses checked at a time by :meth:`OrbitPrefix.fits` (int64 and a mask each).
_FIT_ELEMENTS = 2**20


@dataclass(frozen=True)
class SignOrbit(Symmetry):
    """The rows of a code that is one orbit of sign changes, numbered by their coordinates over GF(2).

    Row i's signs XOR row 0's are ``Σ_b coordinates[i]_b · generators[b]``
    over GF(2), where bit b of the integer ``coordinates[i]`` is row i's
    sign pattern at the pivot (first flipped column) of generator b: the
    generators are in reduced echelon form.  The sign change taking row 0
    to row c takes row j to the row with coordinates
    ``coordinates[j] ^ coordinates[c]``.

    Attributes
    ----------
    coordinates : ndarray of int64, shape (K,)
        A permutation of 0 … K − 1 (row 0 has 0).
    rows : ndarray of int64, shape (K,)
        Its inverse: the row with each coordinate.
    rank : int
        r, with K = 2^r.
    generators : ndarray of bool, shape (r, d)
        The columns whose signs each generating sign change flips.
    """

    coordinates: np.ndarray
    rows: np.ndarray
    rank: int
    generators: np.ndarray

    moves_witnesses = True
    certificate_witness = "class 0, moved by the orbit"

    @property
    def k(self) -> int:
        """K = 2^r, the rows."""
        return len(self.coordinates)

    def moved(self, rows, to) -> np.ndarray:
        """The rows that the sign change taking class 0 to class ``to`` makes of ``rows`` (broadcast).

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> sign_orbit(w).moved(np.array([1, 2, 3]), 3).tolist()
        [2, 1, 0]
        """
        return self.rows[self.coordinates[np.asarray(rows)] ^ self.coordinates[np.asarray(to)]]

    def reprove(self, w: np.ndarray) -> "SignOrbit | None":
        """The same group's orbit proved for other rows ``w`` (:func:`sign_orbit` with these generators), or None.

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> sign_orbit(w).reprove(-w).rank, sign_orbit(w).reprove(w[[0, 0, 1, 1]])
        (2, None)
        """
        return sign_orbit(w, self.generators)

    def nearest(self, w: np.ndarray, cosines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Every row's nearest cosine and nearest row, and the smallest cosine of two rows: O(K·d).

        Every row sees row 0's cosines, so one row of the Gram matrix gives
        all the statistics.  ``cosines``, where given, is ``w @ w[0]``
        already computed (not changed).

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> best, index, low = sign_orbit(w).nearest(w)
        >>> (best.round(12) + 0.0).tolist(), index.tolist(), round(float(low), 12)
        ([0.0, 0.0, 0.0, 0.0], [1, 0, 3, 2], -1.0)
        """
        k = len(w)
        cosines = w @ w[0] if cosines is None else cosines.copy()
        cosines[0] = -np.inf
        nearest = int(np.argmax(cosines))
        nearest_cos = np.full(k, cosines[nearest])
        nearest_index = self.moved(nearest, np.arange(k))
        cosines[0] = np.inf
        return nearest_cos, nearest_index, cosines.min()

    def pair_cosines(self, w: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """The K(K − 1)/2 pairs are row 0's K − 1 cosines, each K/2 times (K = 2^r is even)."""
        return [(w[1:] @ w[0], len(w) // 2)]

    def describe_statistics(self) -> str:
        """How the statistics are computed, in words.

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> sign_orbit(w).describe_statistics()
        'one orbit of sign changes, the float64 cosines of one class'
        """
        return "one orbit of sign changes, the float64 cosines of one class"

    def stored(self) -> dict:
        """The generators (0 or 1 per column: whether each generating sign change flips it)."""
        return {"generators": self.generators.astype(np.uint8)}

    def stored_attributes(self) -> dict:
        return {"meaning": "row i's signs XOR row 0's are the sum over GF(2) of the generators (1: the sign flips) "
                           "chosen by row i's signs at the generators' first flipped columns"}


def moved_vectors(w: np.ndarray, vector: np.ndarray, rows=slice(None)) -> np.ndarray:
    """``D_c vector`` for the classes c of ``rows`` (default all), where ``D_c`` takes ``w_0`` to ``w_c``.

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
    return np.where(w[rows] < 0, -1.0, 1.0) * (signs * vector)


def sign_orbit(w: np.ndarray, generators: np.ndarray | None = None) -> SignOrbit | None:
    """The orbit structure of a code, proved from its rows, or None when it is not such a code.

    Parameters
    ----------
    w : ndarray, shape (K, d)
        float64 rows.
    generators : array_like of bool or 0/1, shape (r, d), optional
        Sign changes claimed to generate the group, in reduced echelon form
        (as :attr:`SignOrbit.generators` holds them); checked, not trusted.  Default: found by elimination.

    Returns
    -------
    SignOrbit or None
        None unless K = 2^r >= 2, every row has the same zero columns and
        its other entries share one magnitude, and the K sign patterns
        XOR-ed with row 0's are exactly the 2^r distinct words of the span
        of r generators (the given ones, if any).

    Examples
    --------
    The square's vertices (±1, ±1)/√2 are GF(2)^2 on the sphere; three of
    them are not an orbit.

    >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
    >>> sign_orbit(w).rank, sign_orbit(w[:3]), sign_orbit(w[[0, 0, 1, 1]])
    (2, None, None)
    >>> sign_orbit(w).generators.astype(int).tolist()  # row 1 flips column 1, row 2 column 0
    [[0, 1], [1, 0]]
    >>> sign_orbit(w, generators=[[1, 0], [0, 1]]).rank, sign_orbit(w, generators=[[1, 1]])
    (2, None)
    """
    k, d = w.shape
    if k < 2 or k & (k - 1):
        return None
    rank = int(round(math.log2(k)))
    words = _sign_words(w)
    if words is None:
        return None
    basis = _echelon_basis(words, rank) if generators is None else _claimed_basis(generators, rank, d)
    if basis is None or len(basis) != rank:
        return None
    return _orbit_of(words, basis, d)


def resolve_orbit(w: np.ndarray, orbit="auto") -> Symmetry | None:
    """The structure that statistics and certificates use: ``orbit`` itself, or proved here when it is ``"auto"``.

    ``"auto"`` proves it when K >= :data:`ORBIT_MIN_K`: with
    :func:`sign_orbit` when K is a power of two, else with
    :func:`orbit_prefix`, else (a Kerdock code's Gray image is no linear
    code) with :func:`spherecodes.z4orbit.z4_orbit`.  None means a code
    treated as generic; a :class:`~spherecodes.symmetry.Symmetry` is one
    already proved for these rows (once, where the code was built or read).

    Examples
    --------
    >>> w = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
    >>> resolve_orbit(w) is None, resolve_orbit(w, sign_orbit(w)).rank
    (True, 2)
    """
    if isinstance(orbit, str) and orbit == "auto":
        if len(w) < ORBIT_MIN_K:
            return None
        found = sign_orbit(w) if len(w) & (len(w) - 1) == 0 else orbit_prefix(w)
        return found if found is not None else z4_orbit(w)
    if orbit is not None and (not isinstance(orbit, Symmetry) or orbit.k != len(w)):
        raise ValueError(f"orbit must be 'auto', None or the SignOrbit, OrbitPrefix, Z4Orbit or Rotated of these "
                         f"{len(w)} rows, got {orbit!r}")
    return orbit


@dataclass(frozen=True)
class OrbitPrefix(OrbitWords):
    """K rows that are words 0 … K−1, in order, of an orbit of 2^t words under sign changes (2^(t−1) < K < 2^t).

    Word u of the orbit is ``x_u = D_u w_0``, where ``D_u`` changes the signs
    of the columns flipped by an odd number of the generators b with bit b
    of u set; row m is ``x_m``.  The generators are the rows ``2^b``'s signs
    XOR row 0's.  ``D_m`` maps ``x_u`` to ``x_{u ⊕ m}``, so the cosine of rows
    m and m' is ``f(m ⊕ m')``, ``f(u) = <w_0, x_u>`` (:meth:`cosines`).

    Attributes
    ----------
    k : int
        K, the rows.
    rank : int
        t = ⌈log2 K⌉: the orbit has 2^t words.
    generators : ndarray of bool, shape (t, d)
        The columns whose signs each generating sign change flips.
    """

    k: int
    rank: int
    generators: np.ndarray

    group = "sign changes"
    certificate_witness = "class 0 of the whole orbit, moved where it stays among the rows, else the nearest row"

    def reprove(self, w: np.ndarray) -> "OrbitPrefix | None":
        """The same prefix proved for other rows ``w`` (:func:`orbit_prefix` with these generators), or None.

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> orbit_prefix(w, check_size=False).reprove(-w).rank
        2
        """
        return orbit_prefix(w, self.generators, check_size=False)

    def top(self, w: np.ndarray, vectors: np.ndarray, inverse: bool = False) -> np.ndarray:
        """``D_h vectors`` for h = 2^(t−1), its own inverse: row h's signs relative to row 0's (1 on zero columns)."""
        return vectors * (np.where(w[self.words // 2] < 0, -1.0, 1.0) * np.where(w[0] < 0, -1.0, 1.0))

    def moved(self, rows, to) -> np.ndarray:
        """The words that ``D_to`` makes of the words ``rows``: ``rows ⊕ to`` (broadcast; may be ≥ K)."""
        return np.asarray(rows) ^ to

    def fits(self, classes, words) -> np.ndarray:
        """For each class i of ``classes``, whether the orbit's words ``i ⊕ u``, u in ``words``, are all rows (below K).

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> orbit_prefix(w, check_size=False).fits(np.arange(3), np.array([1])).tolist()  # 2 ⊕ 1 = 3 ≥ K
        [True, True, False]
        """
        classes, words = np.asarray(classes, dtype=np.int64), np.asarray(words, dtype=np.int64)
        fits = np.empty(len(classes), dtype=bool)
        step = max(1, _FIT_ELEMENTS // max(1, len(words)))
        for start in range(0, len(classes), step):
            part = classes[start : start + step]
            fits[start : start + step] = ((part[:, None] ^ words[None, :]) < self.k).all(axis=1)
        return fits

    def witness_candidates(self, shell: np.ndarray):
        """The words of the nearest shell below 2^s for s = 1, 2, …, then those below K, then the whole shell.

        A witness of words below 2^s moves with class i to words below K for
        every i below K rounded down to a multiple of 2^s: the smaller the
        witness's words, the more classes it certifies.  Sets of fewer than
        two words, or no larger than the last, are skipped.
        """
        tried = set()
        for bound in [1 << s for s in range(1, self.rank)] + [self.k, self.words]:
            near = shell[shell < bound]
            if len(near) < 2 or len(near) in tried:
                continue
            tried.add(len(near))
            yield near

    def describe(self) -> str:
        """The structure in words.

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> orbit_prefix(w, check_size=False).describe()
        'the first 3 of the 4 words of one orbit of sign changes'
        """
        return f"the first {self.k:,} of the {self.words:,} words of one orbit of {self.group}"

    def describe_statistics(self) -> str:
        return f"{self.describe()}, the float64 cosines of one class of the orbit and a tree of their block maxima"

    def stored(self) -> dict:
        """The generators (0 or 1 per column: whether each generating sign change flips it)."""
        return {"generators": self.generators.astype(np.uint8)}

    def stored_attributes(self) -> dict:
        return {"meaning": "row i's signs XOR row 0's are the sum over GF(2) of the generators (1: the sign flips) "
                           "chosen by the bits of i: the first K words of their orbit"}

    def extension(self, w: np.ndarray, m: int) -> tuple[str, np.ndarray] | None:
        """The orbit's next M words, where the orbit holds them (K + M <= 2^t)."""
        if self.k + m > self.words:
            return None
        return f"next words of the orbit of {self.words:,} words", self.rows_of(w, np.arange(self.k, self.k + m))

    def checked_on_read(self) -> dict:
        return {"orbit_prefix": True, "orbit_z4": False}

    def pair_counts(self) -> np.ndarray:
        """For every u < 2^t, the pairs of rows i < j with ``i ⊕ j = u`` (their cosine is ``f(u)``): O(2^t · b²).

        Row m ⊕ u for m in the aligned block of [0, K) at binary digit b of
        K runs over one aligned block Q of 2^b integers; Q meets the block
        of digit c ≥ b wholly or not at all, and holds the block of digit
        c < b wholly or not at all.  Summed over b and c that counts the
        ordered pairs, twice the unordered ones.

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> orbit_prefix(w, check_size=False).pair_counts().tolist()  # rows 0, 1, 2: 0⊕1, 0⊕2, 1⊕2
        [0, 1, 1, 1]
        """
        u = np.arange(self.words, dtype=np.int64)
        digits = [b for b in range(self.rank) if (self.k >> b) & 1]
        ordered = np.zeros(self.words, dtype=np.int64)
        for b in digits:
            block = ((self.k >> b) ^ 1) ^ (u >> b)
            for c in digits:
                other = (self.k >> c) ^ 1
                inside = (block >> (c - b)) == other if c >= b else (other >> (b - c)) == block
                ordered += inside.astype(np.int64) << min(b, c)
        ordered[0] = 0
        return ordered // 2

    def nearest(self, w: np.ndarray, cosines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Every row's nearest cosine and nearest row, and the smallest cosine of two rows: O(K·t + K·d).

        Row m's others are the words ``m ⊕ v``, v in [0, K), v ≠ 0.  For each
        binary digit b of K, the v whose bits above b are K's, bit b is 0 and
        bits below are free form one aligned block of 2^b integers, and
        ``m ⊕`` that block is the aligned block number ``(K >> b ⊕ 1) ⊕ (m >> b)``
        of level b.  Each level of the tree holds its blocks' maxima of f
        (f(0) = −inf: a row is not its own neighbour) and where they are.
        Every u ≠ 0 below 2^t is some pair's (u ⊕ h and h for u >= h), so
        the smallest cosine is the smallest f(u).
        ``cosines``, where given, is :meth:`cosines` of these rows already
        computed (it is not changed), so that its two products are not
        taken twice.

        Examples
        --------
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> best, index, low = orbit_prefix(w, check_size=False).nearest(w)
        >>> (best.round(12) + 0.0).tolist(), index.tolist(), round(low, 12)
        ([0.0, 0.0, 0.0], [1, 0, 0], -1.0)
        """
        f, low = self.nearest_cosines(w, cosines)
        rows = np.arange(self.k, dtype=np.int64)
        best = np.full(self.k, -np.inf)
        best_word = np.zeros(self.k, dtype=np.int64)
        levels = block_maxima(f)
        for b in range(self.rank):
            if (self.k >> b) & 1:
                values, where = levels[b]
                block = ((self.k >> b) ^ 1) ^ (rows >> b)
                found = values[block]
                better = found > best
                best[better] = found[better]
                best_word[better] = where[block[better]]
        return best, rows ^ best_word, low


def orbit_prefix(w: np.ndarray, generators: np.ndarray | None = None, *, check_size: bool = True) -> OrbitPrefix | None:
    """The prefix structure of a code, proved from its rows, or None when it is not such a code.

    Parameters
    ----------
    w : ndarray, shape (K, d)
        float64 rows.
    generators : array_like of bool or 0/1, shape (t, d), optional
        The sign changes claimed to generate the orbit, t = ⌈log2 K⌉
        (as :attr:`OrbitPrefix.generators` holds them); checked, not
        trusted.  Default: row 2^b's signs XOR row 0's.
    check_size : bool
        Refuse K = 2^t (a whole orbit: :func:`sign_orbit`) and K < 3; False
        only for the small examples of the documentation.

    Returns
    -------
    OrbitPrefix or None
        None unless every row has the same zero columns and its other
        entries share one magnitude, and row m's signs XOR row 0's are the
        XOR of the generators b over the bits b of m, for every m < K.  The
        check reads the rows once and combines packed words: O(K·d).

    Examples
    --------
    Five of the cube's vertices (±1, ±1, ±1)/√3, in the order of their
    messages 0 … 4, are the prefix of that orbit; in another order they are
    not (row 3 is then not the sum of rows 1 and 2's sign changes).

    >>> import itertools
    >>> w = np.array(list(itertools.product([1, -1], repeat=3))) / np.sqrt(3)
    >>> orbit_prefix(w[:5]).generators.astype(int).tolist()
    [[0, 0, 1], [0, 1, 0], [1, 0, 0]]
    >>> orbit_prefix(w[[0, 1, 2, 4, 3]]), orbit_prefix(w[:5], generators=[[0, 0, 1], [0, 1, 0], [1, 1, 0]])
    (None, None)
    """
    k, d = w.shape
    if check_size and (k < 3 or k & (k - 1) == 0):
        return None
    rank = max(1, (k - 1).bit_length())
    words = _sign_words(w)
    if words is None:
        return None
    basis = words[[1 << b for b in range(rank)]] if generators is None else _claimed_basis(generators, rank, d)
    if basis is None:
        return None
    # The combinations of the generators for messages 0 … K − 1, by doubling:
    # messages [2^b, 2^(b+1)) are messages [0, 2^b) with generator b added.
    combination = np.zeros_like(words)
    for b in range(rank):
        size = 1 << b
        count = min(size, k - size)
        combination[size : size + count] = combination[:count] ^ basis[b]
    if not np.array_equal(combination, words):
        return None
    return OrbitPrefix(k, rank, np.unpackbits(basis.view(np.uint8), axis=1, count=d).astype(bool))


def _pack(bits: np.ndarray) -> np.ndarray:
    """Rows of bits (columns in order) as rows of uint64 words."""
    packed = np.packbits(bits, axis=1)
    pad = (-packed.shape[1]) % 8
    return np.ascontiguousarray(np.pad(packed, ((0, 0), (0, pad)))).view(np.uint64)


def _claimed_basis(generators, rank: int, d: int) -> np.ndarray | None:
    """Claimed generators (0 or 1, shape (rank, d)) packed as :func:`_pack` packs rows; None if they are not such."""
    generators = np.asarray(generators)
    if generators.shape != (rank, d) or not np.isin(generators, (0, 1)).all():
        return None
    return _pack(generators.astype(bool))


def _sign_words(w: np.ndarray) -> np.ndarray | None:
    """Each row's signs XOR row 0's, packed (K, ⌈d/64⌉); None unless every row has row 0's magnitudes."""
    expected = np.abs(w[0])
    if not expected.any() or np.unique(expected[expected > 0]).size != 1:
        return None
    packed = []
    for start in range(0, len(w), _ROWS):
        part = w[start : start + _ROWS]
        if not (np.abs(part) == expected).all():
            return None
        packed.append(_pack(part < 0))
    words = np.concatenate(packed)
    words ^= words[0]
    return words


def _lowest_bit(word_row: np.ndarray) -> tuple[int, np.uint64]:
    """(word, bit mask) of the first set bit of a packed row (its first flipped column)."""
    word = int(np.flatnonzero(word_row)[0])
    # packbits puts column 0 in the top bit of byte 0, and a little-endian
    # uint64 holds byte 0 lowest: the first column is the lowest set byte's top set bit.
    byte = word_row[word : word + 1].view(np.uint8)
    at = int(np.flatnonzero(byte)[0])
    top = 1 << (int(byte[at]).bit_length() - 1)
    return word, np.uint64(top << (8 * at))


def _echelon_basis(words: np.ndarray, rank: int) -> np.ndarray | None:
    """A basis of the words' span in reduced echelon form, or None if its dimension exceeds ``rank``.

    Gaussian elimination over GF(2): each basis word clears its pivot bit
    from all the words still left; back substitution then clears each pivot
    from the earlier basis words.
    """
    remaining = words.copy()
    basis = []
    for _ in range(rank + 1):
        nonzero = np.flatnonzero(remaining.any(axis=1))
        if nonzero.size == 0:
            break
        if len(basis) == rank:
            return None
        row = remaining[nonzero[0]].copy()
        word, bit = _lowest_bit(row)
        basis.append(row)
        remaining[(remaining[:, word] & bit) != 0] ^= row
    basis = np.array(basis, dtype=np.uint64).reshape(len(basis), words.shape[1])
    for i in range(len(basis) - 1, -1, -1):
        word, bit = _lowest_bit(basis[i])
        for j in range(i):
            if basis[j, word] & bit:
                basis[j] ^= basis[i]
    return basis


def _orbit_of(words: np.ndarray, basis: np.ndarray, d: int) -> SignOrbit | None:
    """The orbit numbered by ``basis``, after checking that the words are exactly its 2^r distinct combinations.

    Each word's coordinates are its bits at the basis words' pivots; the
    word must equal the combination of basis words those coordinates name,
    and the coordinates must be all of 0 … 2^r − 1 once each.  Then the K
    distinct words lie in the span of r generators, which has 2^r words:
    they are the span, a group.  (A basis not in reduced echelon form fails
    the check: its pivot bits are not the coefficients.)
    """
    k, rank = len(words), len(basis)
    if rank and not basis.any(axis=1).all():
        return None
    pivots = [_lowest_bit(row) for row in basis]
    coordinates = np.zeros(k, dtype=np.int64)
    combination = np.zeros_like(words)
    for b, (word, bit) in enumerate(pivots):
        chosen = (words[:, word] & bit) != 0
        coordinates |= chosen.astype(np.int64) << b
        combination[chosen] ^= basis[b]
    if not np.array_equal(combination, words) or (np.bincount(coordinates, minlength=k) != 1).any():
        return None
    rows = np.empty(k, dtype=np.int64)
    rows[coordinates] = np.arange(k)
    generators = np.unpackbits(basis.view(np.uint8), axis=1, count=d).astype(bool)
    return SignOrbit(coordinates, rows, rank, generators)
