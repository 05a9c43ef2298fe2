"""Codes that are one orbit of a group of ℤ₄ translations: Kerdock codes (and other ℤ₄-linear codes) on the sphere.

A quaternary code ``C ⊂ ℤ₄^N`` is put on the sphere by the Gray map: each
symbol z becomes a pair of coordinates with the signs (+,+), (+,−), (−,−),
(−,+) for z = 0, 1, 2, 3, scaled by 1/√(2N) (Hammons, Kumar, Calderbank,
Sloane & Solé 1994).  Adding 1 mod 4 to a symbol maps its pair (a, b) to
(b, −a): a quarter turn R of the plane of that pair, a signed permutation.
So translating by a word c of ℤ₄^N is the isometry ``T_c`` that turns pair j
by ``R^{c_j}``, and for a ℤ₄-linear code these isometries map the code onto
itself, transitively: ``T_c`` maps word u to word u + c.  Every class then sees
the same cosines ``f(u) = <x_0, x_u>``, and a witness of class 0 moved by
``T_c`` is a witness of class c with the same weights.  The Gray image of a
ℤ₄-linear code is in general no binary linear code (the Kerdock codes are
not), so :mod:`spherecodes.orbit`'s sign changes do not see this group.

The rows are numbered as the construction numbers its messages: row i is
word ``Σ_b i_b · g_b`` (mod 4, bit b of i choosing generator b).  When
``2 g_b`` is another generator ``g_c`` (bits b and c are the low and high
bit of one quaternary digit), adding two indices carries from bit b into
bit c; when ``2 g_b = 0`` bit b is a binary digit.  :func:`z4_orbit` proves
such a structure from the rows alone, or checks stored generators, in
O(K·d).  For K < 2^t the rows are the first K words of the orbit of 2^t
words, and every row's nearest row follows from trees of block maxima of f,
as for :class:`spherecodes.orbit.OrbitPrefix` (:meth:`Z4Orbit.nearest`;
docs/certificate.md, "2.0f Kerdock codes").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .symmetry import OrbitWords, block_maxima

__all__ = ["Z4_GROUP", "Z4Orbit", "z4_orbit"]

#: What a bank calls the group of a code that is (the first K words of) an orbit of Z4 translations.
Z4_GROUP = "Z4 translations"

#: Numbers read at a time when the rows are checked (64 MiB of float64).
_ELEMENTS = 2**23

#: Index sums formed at a time by :meth:`Z4Orbit.fits` (8 MiB of int64 each).
_SUMS = 2**20


@dataclass(frozen=True)
class Z4Orbit(OrbitWords):
    """K rows that are words 0 … K−1, in order, of an orbit of 2^t words under ℤ₄ translations (2^(t−1) < K ≤ 2^t).

    Word u of the orbit is ``x_u = T_{φ(u)} x_0`` with ``φ(u) = Σ_b u_b g_b``
    (mod 4) and ``T_z`` the turn of pair j by ``R^{z_j}``,
    ``R(a, b) = (b, −a)``; row m is ``x_m``.  Indices add as the words do
    (:meth:`add`): bit by bit, with a carry from bit b into bit
    ``carries[b]`` where ``2 g_b = g_{carries[b]}``.  K = 2^t is the whole
    orbit.

    Attributes
    ----------
    k : int
        K, the rows.
    rank : int
        t = ⌈log2 K⌉: the orbit has 2^t words.
    generators : ndarray of uint8, shape (t, N)
        Generator b's quaternary symbols (0 … 3), one per pair: row 2^b's
        turns relative to row 0.
    pairs : ndarray of int64, shape (N, 2)
        The columns of each pair (the live columns, two by two).
    carries : ndarray of int64, shape (t,)
        The bit that bit b carries into (the high bit of its digit), −1 for
        a binary digit and for a high bit.
    """

    k: int
    rank: int
    generators: np.ndarray
    pairs: np.ndarray
    carries: np.ndarray

    group = Z4_GROUP
    several_witnesses = True
    tree_numbers = 9
    certificate_witness = ("witnesses of class 0 of the whole orbit of Z4 translations, moved where they stay among "
                           "the rows, else the nearest row")

    @property
    def block_bits(self) -> int:
        """q: no carry reaches bit q or above: the words below 2^q are a subgroup, and the bits from q on add by XOR."""
        return int(self.carries.max(initial=-1)) + 1

    def describe(self) -> str:
        """The structure in words.

        Examples
        --------
        >>> z4_orbit(SQUARE).describe()
        'one orbit of Z4 translations (signed permutations of coordinate pairs), 4 words'
        """
        what = "one orbit of Z4 translations (signed permutations of coordinate pairs)"
        if self.k == self.words:
            return f"{what}, {self.words:,} words"
        return f"the first {self.k:,} of the {self.words:,} words of {what}"

    def stored(self) -> dict:
        """The arrays that :func:`z4_orbit` checks the rows against: ``generators`` and ``pairs``."""
        return {"generators": self.generators, "pairs": self.pairs}

    def stored_attributes(self) -> dict:
        return {"group": Z4_GROUP,
                "meaning": "row i's quaternary symbols relative to row 0's (pair j: the columns pairs[j], signs (+,+), "
                           "(+,-), (-,-), (-,+) for 0, 1, 2, 3) are the sum mod 4 of the generators chosen by the bits "
                           "of i: the first K words of their orbit"}

    def checked_on_read(self) -> dict:
        return {"orbit_prefix": False, "orbit_z4": True}

    def witness_candidates(self, shell: np.ndarray):
        """The words of the nearest shell in the blocks of the orbit (:attr:`block_bits`): row 0's, then those at 2^j.

        A class in block M moves the witness of block B to block ``M ⊕ B``.
        For a Kerdock code the blocks are its orthonormal bases and their
        negatives, and the shell's words in one other basis average to a
        multiple of ``x_0``: a balanced witness.
        """
        q = self.block_bits
        for block in [0] + [1 << j for j in range(self.rank - q)]:
            near = shell[(shell >> q) == block]
            if len(near):
                yield near

    def reprove(self, w: np.ndarray) -> "Z4Orbit | None":
        """The same orbit proved for other rows ``w`` (:func:`z4_orbit` with these generators and pairs), or None.

        Examples
        --------
        >>> z4_orbit(SQUARE).reprove(SQUARE).rank, z4_orbit(SQUARE).reprove(SQUARE[[0, 0, 1, 1]])
        (2, None)
        """
        return z4_orbit(w, self.generators, self.pairs)

    # -- index arithmetic: the words' sums and differences, on their indices

    def _carried(self, x: np.ndarray) -> np.ndarray:
        """The low bits of ``x`` moved to the high bits of their digits."""
        out = np.zeros_like(x)
        for b in np.flatnonzero(self.carries >= 0):
            out |= ((x >> b) & 1) << int(self.carries[b])
        return out

    def add(self, i, j) -> np.ndarray:
        """The index of word i + word j (broadcast): φ(i) + φ(j) = φ(add(i, j)).

        Examples
        --------
        >>> z4_orbit(SQUARE).add(np.array([1, 1, 3]), np.array([1, 2, 3])).tolist()  # 1+1, 1+2, 3+3 mod 4
        [2, 3, 2]
        """
        i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
        return (i ^ j) ^ self._carried(i & j)

    def negated(self, i) -> np.ndarray:
        """The index of −word i: a digit's high bit flips where its low bit is set."""
        i = np.asarray(i, dtype=np.int64)
        return i ^ self._carried(i)

    def moved(self, rows, to) -> np.ndarray:
        """The words that the translation taking class 0 to class ``to`` makes of ``rows`` (broadcast; may be ≥ K).

        Examples
        --------
        >>> z4_orbit(SQUARE).moved(np.array([0, 1, 2, 3]), 3).tolist()
        [3, 0, 1, 2]
        """
        return self.add(rows, to)

    def fits(self, classes, words) -> np.ndarray:
        """For each class c of ``classes``, whether the words ``c + u``, u in ``words``, are all rows (below K).

        The bits from :attr:`block_bits` q on add by XOR (no carry reaches
        them), so for the words u of one block (one value of ``u >> q``) the
        sums with the classes of one block lie in one block: below K's all
        rows, above it none.  Only for the classes whose sums land in K's
        own block are the sums formed, O(len(classes) + 2^q · len(words)).

        Examples
        --------
        >>> z4_orbit(SQUARE[:3]).fits(np.arange(3), np.array([1])).tolist()  # 0+1, 1+1 = 2, 2+1 = 3 ≥ K
        [True, True, False]
        """
        classes, words = np.asarray(classes, dtype=np.int64), np.asarray(words, dtype=np.int64)
        q = self.block_bits
        ok = np.ones(len(classes), dtype=bool)
        for block in np.unique(words >> q):
            part = words[(words >> q) == block]
            top = (classes >> q) ^ block
            ok &= top <= self.k >> q
            edge = np.flatnonzero(ok & (top == self.k >> q))
            step = max(1, _SUMS // len(part))
            for start in range(0, len(edge), step):
                rows = edge[start : start + step]
                ok[rows] = (self.add(classes[rows][:, None], part[None, :]) < self.k).all(axis=1)
        return ok

    # -- the isometries and the orbit's words

    def symbols(self, words) -> np.ndarray:
        """φ(u) for the words u: their quaternary symbols relative to row 0, shape (len(words), N)."""
        words = np.asarray(words, dtype=np.int64)
        bits = ((words[:, None] >> np.arange(self.rank)) & 1).astype(np.int64)
        return ((bits @ self.generators.astype(np.int64)) % 4).astype(np.uint8)

    def turned(self, vectors: np.ndarray, symbols: np.ndarray) -> np.ndarray:
        """``T_z`` applied to each row of ``vectors``: pair j turned by ``R^{z_j}``, exact in floating point.

        Examples
        --------
        >>> z4_orbit(SQUARE).turned(np.array([[3.0, 5.0]]), np.array([1], dtype=np.uint8)).tolist()
        [[5.0, -3.0]]
        """
        vectors = np.asarray(vectors, dtype=np.float64)
        out = vectors.copy()
        p, q = self.pairs[:, 0], self.pairs[:, 1]
        a, b = vectors[..., p], vectors[..., q]
        for power, (first, second) in ((1, (b, -a)), (2, (-a, -b)), (3, (-b, a))):
            chosen = symbols == power
            out[..., p[chosen]] = first[..., chosen]
            out[..., q[chosen]] = second[..., chosen]
        return out

    def top(self, w: np.ndarray, vectors: np.ndarray, inverse: bool = False) -> np.ndarray:
        """``T_{g_{t−1}}`` applied to ``vectors`` (``T⁻¹``, turning each pair back, where ``inverse``)."""
        last = self.generators[-1].astype(np.int64)
        return self.turned(vectors, (4 - last) % 4 if inverse else last)

    def pair_counts(self) -> np.ndarray:
        """For every word u < 2^t, the pairs of rows {i, j} with ``j − i = u`` (their cosine is ``f(u)``): O(2^t·t).

        The ordered pairs with difference u are the autocorrelation of the
        rows' indicator on the group of indices, one discrete Fourier
        transform over its digits (a 4-point axis per quaternary digit, a
        2-point one per binary digit).  A pair {i, j} has the differences u
        and −u: it is counted at the smaller of the two (half of those with
        u = −u).

        Examples
        --------
        >>> z4_orbit(SQUARE[:3]).pair_counts().tolist()  # rows 0, 1, 2: differences 1, 2 and 1 (or 3)
        [0, 2, 1, 0]
        """
        t = self.rank
        rows = np.zeros(self.words)
        rows[: self.k] = 1.0
        # Axis t − 1 − b of the cube is bit b; a digit's high and low bit side by side make one 4-point axis.
        axes, shape = [], []
        for b in range(t):
            if b in self.carries:
                continue
            carry = int(self.carries[b])
            axes += [t - 1 - carry, t - 1 - b] if carry >= 0 else [t - 1 - b]
            shape.append(4 if carry >= 0 else 2)
        spectrum = np.fft.fftn(rows.reshape((2,) * t).transpose(axes).reshape(shape))
        ordered = np.fft.ifftn(np.abs(spectrum) ** 2).real.round().astype(np.int64)
        ordered = ordered.reshape((2,) * t).transpose(np.argsort(axes)).ravel()
        ordered[0] = 0
        u = np.arange(self.words, dtype=np.int64)
        negative = self.negated(u)
        return np.where(u < negative, ordered, np.where(u == negative, ordered // 2, 0))

    # -- every row's nearest row

    def _rising(self) -> tuple[int, int] | None:
        """The digit whose low bit ℓ lies below its high bit η, as (ℓ, η), or None (there is at most one)."""
        rising = [(b, int(c)) for b, c in enumerate(self.carries) if c > b]
        return rising[0] if rising else None

    def nearest(self, w: np.ndarray, cosines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Every row's nearest cosine and nearest row, and the smallest cosine of two rows: O(K·t + 2^t + K·d).

        Row m's others are the rows j < K, at differences ``u = j − m``.  For
        each binary digit c of K, the j whose bits above c are K's, bit c is
        0 and the bits below c are free form an aligned block, and ``j − m``
        runs over the aligned block of level c whose bits from c on are the
        difference of the fixed bits and m's (a digit with both bits free,
        or only its high bit, stays free; one with both fixed stays fixed).
        The one digit whose low bit ℓ is free and high bit η fixed (ℓ < c ≤ η)
        borrows into η where m's bit ℓ is set: its differences are two
        blocks, one per value of bit ℓ, aligned once bit ℓ is read as the top
        bit — a second tree, of f with that bit moved to the top.  Each
        level of the trees holds its blocks' maxima of f (f(0) = −inf) and
        where they are.  Every u ≠ 0 below 2^t is some pair's (u and 0, or
        u + h and h for u ≥ K, h = 2^(t−1)), so the smallest cosine is the
        smallest f(u).  ``cosines``, where given, is :meth:`cosines` already
        computed (not changed).

        Examples
        --------
        >>> best, index, low = z4_orbit(SQUARE[:3]).nearest(SQUARE[:3])
        >>> (best.round(12) + 0.0).tolist(), index.tolist(), round(low, 12)
        ([0.0, 0.0, 0.0], [1, 2, 1], -1.0)
        """
        f, low = self.nearest_cosines(w, cosines)
        rows = np.arange(self.k, dtype=np.int64)
        if self.k == self.words:
            u = int(np.argmax(f))
            return np.full(self.k, f[u]), self.add(rows, u), low
        natural = block_maxima(f)
        rising = self._rising()
        if rising is not None:
            lift = _lifted(np.arange(self.words, dtype=np.int64), rising[0], self.rank)
            g = np.empty_like(f)
            g[lift] = f
            raised = block_maxima(g)
        best = np.full(self.k, -np.inf)
        word = np.zeros(self.k, dtype=np.int64)

        def fold(chosen: np.ndarray, values: np.ndarray, where: np.ndarray) -> None:
            better = values > best[chosen]
            best[chosen[better]] = values[better]
            word[chosen[better]] = where[better]

        for c in range(self.rank):
            if not (self.k >> c) & 1:
                continue
            fixed = ((self.k >> c) ^ 1) << c
            block = self.add(fixed, self.negated(rows & ~((1 << c) - 1))) >> c
            split = rising is not None and rising[0] < c <= rising[1]
            plain = rows if not split else np.flatnonzero(((rows >> rising[0]) & 1) == 0)
            values, where = natural[c]
            fold(plain, values[block[plain]], where[block[plain]])
            if split:
                low_bit, high_bit = rising
                borrowing = np.flatnonzero((rows >> low_bit) & 1)
                for b in (0, 1):
                    start = ((block[borrowing] ^ (b << (high_bit - c))) << c) | (b << low_bit)
                    at = _lifted(start, low_bit, self.rank) >> (c - 1)
                    values, where = raised[c - 1]
                    fold(borrowing, values[at], _lowered(where[at], low_bit, self.rank))
        return best, self.add(rows, word), low


def _lifted(x: np.ndarray, bit: int, rank: int) -> np.ndarray:
    """``x`` with ``bit`` moved to the top (bit rank − 1) and the bits above it moved down by one."""
    below = x & ((1 << bit) - 1)
    return below | ((x >> (bit + 1)) << bit) | (((x >> bit) & 1) << (rank - 1))


def _lowered(y: np.ndarray, bit: int, rank: int) -> np.ndarray:
    """The inverse of :func:`_lifted`."""
    below = y & ((1 << bit) - 1)
    middle = (y >> bit) & ((1 << (rank - 1 - bit)) - 1)
    return below | (middle << (bit + 1)) | (((y >> (rank - 1)) & 1) << bit)


def z4_orbit(w: np.ndarray, generators=None, pairs=None) -> Z4Orbit | None:
    """The structure of a code that is the first K words (or all) of an orbit of ℤ₄ translations, or None.

    Parameters
    ----------
    w : ndarray, shape (K, d)
        float64 rows, K >= 3.
    generators : array_like of int, shape (t, N), optional
        The quaternary generators claimed, t = ⌈log2 K⌉, N the pairs
        (as :attr:`Z4Orbit.generators` holds them); checked, not trusted.
        Default: rows 2^b relative to row 0.
    pairs : array_like of int, shape (N, 2), optional
        The columns of each pair claimed; checked: they must be the live
        columns, each once.  Default: the live columns two by two, in order.

    Returns
    -------
    Z4Orbit or None
        None unless every row has row 0's zero columns and its other
        entries share one magnitude, the generators' doubles are 0 or
        another generator (each at most once, and each such high bit's
        double 0; at most one digit has its low bit below its high bit), and
        row m relative to row 0 is the sum of the generators b over the bits
        b of m, for every m < K.  O(K·d) to read the rows, O(K·N) to check.

    Examples
    --------
    The Gray images of 0, 1, 2, 3 ∈ ℤ₄ are the square's vertices; the first
    three are the first words of that orbit (bit 0 carries into bit 1);
    those of 0, 1, 3 are not (row 1's double, 2, is no generator).

    >>> z4_orbit(SQUARE).generators.tolist(), z4_orbit(SQUARE).carries.tolist()
    ([[1], [2]], [1, -1])
    >>> z4_orbit(SQUARE[:3]).k, z4_orbit(SQUARE[[0, 1, 3]]), z4_orbit(SQUARE, generators=[[1], [3]])
    (3, None, None)
    """
    k, d = w.shape
    if k < 3:
        return None
    rank = (k - 1).bit_length()
    magnitudes = np.abs(w[0])
    live = np.flatnonzero(magnitudes)
    if live.size < 2 or live.size % 2 or np.unique(magnitudes[live]).size != 1:
        return None
    if pairs is None:
        pairs = live.reshape(-1, 2)
    else:
        pairs = np.asarray(pairs)
        if pairs.dtype.kind not in "iu" or pairs.shape != (live.size // 2, 2) \
                or not np.array_equal(np.sort(pairs, axis=None), live):
            return None
        pairs = pairs.astype(np.int64)
    symbols = _symbols(w, pairs, magnitudes)
    if symbols is None:
        return None
    if generators is None:
        generators = symbols[1 << np.arange(rank)]
    else:
        generators = np.asarray(generators)
        if generators.dtype.kind not in "iu" or generators.shape != (rank, len(pairs)) \
                or ((generators < 0) | (generators > 3)).any():
            return None
        generators = generators.astype(np.uint8)
    carries = _carries(generators)
    if carries is None:
        return None
    # Row m is the sum its bits choose, by doubling: rows [2^b, 2^(b+1)) are rows [0, 2^b) plus generator b.
    if symbols[0].any():
        return None
    for b in range(rank):
        size = 1 << b
        count = min(size, k - size)
        if not np.array_equal((symbols[:count] + generators[b]) % 4, symbols[size : size + count]):
            return None
    return Z4Orbit(k, rank, generators, pairs, carries)


def _symbols(w: np.ndarray, pairs: np.ndarray, magnitudes: np.ndarray) -> np.ndarray | None:
    """Each row's quaternary symbols relative to row 0's, (K, N) uint8; None unless every row has row 0's magnitudes.

    A pair's signs (+,+), (+,−), (−,−), (−,+) are its Gray symbol 0 … 3, and
    its symbol relative to row 0 is the difference mod 4: the power of the
    quarter turn taking row 0's pair to this row's.
    """
    k, d = w.shape
    out = np.empty((k, len(pairs)), dtype=np.uint8)
    step = max(1, _ELEMENTS // d)
    size = np.empty((min(k, step), d))
    columns = pairs.ravel()
    for start in range(0, k, step):
        part = w[start : start + step]
        if not (np.abs(part, out=size[: len(part)]) == magnitudes).all():
            return None
        # The signs of the pairs' columns, gathered once (bytes, not floats): first and second of each pair.
        signs = (part < 0).view(np.uint8)[:, columns]
        first, second = signs[:, 0::2], signs[:, 1::2]
        out[start : start + step] = 2 * first + (first ^ second)
    out -= out[0]
    out &= 3
    return out


def _carries(generators: np.ndarray) -> np.ndarray | None:
    """For each generator b, the generator c with ``g_c = 2 g_b`` (−1 where ``2 g_b = 0``); None where there is none,
    where two low bits share a high bit, where a high bit's double is not 0, or where more than one digit has its low
    bit below its high bit (what :meth:`Z4Orbit.nearest` handles)."""
    doubled = (2 * generators.astype(np.int64)) % 4
    carries = np.full(len(generators), -1, dtype=np.int64)
    for b in range(len(generators)):
        if not doubled[b].any():
            continue
        same = np.flatnonzero((generators == doubled[b]).all(axis=1))
        if same.size == 0 or doubled[same[0]].any():
            return None
        carries[b] = same[0]
    targets = carries[carries >= 0]
    if np.unique(targets).size != targets.size or (carries > np.arange(len(carries))).sum() > 1:
        return None
    return carries


#: The Gray images of 0, 1, 2, 3 in ℤ₄ (the documentation's examples).
SQUARE = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, -1.0], [-1.0, 1.0]]) / np.sqrt(2)
