"""The symmetry of a code: one interface for every structure proved from its rows (NumPy only).

A code's rows may be one orbit of a group of isometries
(:class:`spherecodes.orbit.SignOrbit`: sign changes), the first K words of
one (:class:`spherecodes.orbit.OrbitPrefix`, :class:`spherecodes.z4orbit.Z4Orbit`:
sign changes, Z4 translations), or such a code turned by a seeded rotation
(:class:`spherecodes.rotated.Rotated`).  Each is proved from the rows, never
trusted from a claim, and each answers the same questions through
:class:`Symmetry`: its statistics, how a certificate holds its witnesses,
what a bank stores of it and how it is proved again from that, and what a
report says of it.  A code without one has ``orbit = None``.

:class:`OrbitWords` is what the first K words of an orbit of 2^t words
share, whichever the group: every class's certificate interval from
witnesses of the whole orbit's class 0 (:meth:`OrbitWords.witness_bounds`),
moved by the group where they stay among the rows.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from .errors import SpherecodesError

__all__ = ["PAIR_ELEMENTS", "OrbitWords", "Symmetry", "block_maxima"]

#: Numbers of the pairs ``w_i − w_nearest`` formed at a time by :meth:`OrbitWords.witness_bounds` (16 MiB).
PAIR_ELEMENTS = 2**21


class Symmetry(ABC):
    """A symmetry of a code's K rows, proved from them.

    Attributes
    ----------
    k : int
        K, the rows (a field or a property of each implementation).
    moves_witnesses : bool
        Whether a certificate holds class 0's witness alone, which the group
        (:meth:`moved`) takes to every other class's.
    whole_orbit_bounds : bool
        Whether a certificate bounds every class through the whole orbit's
        class 0 instead (:meth:`OrbitWords.witness_bounds`).
    certificate_witness : str
        How such a certificate holds its witnesses, in the words a bank
        records (its ``certificate`` attribute ``witness``).
    """

    k: int
    moves_witnesses: ClassVar[bool] = False
    whole_orbit_bounds: ClassVar[bool] = False
    certificate_witness: ClassVar[str] = ""

    @property
    def unturned(self) -> Symmetry:
        """The symmetry of the rows as they were built: itself, or for a turned code the structure it carries."""
        return self

    @property
    def witness_words(self) -> int:
        """How many words a certificate's witness may name: the K rows, or all words of the whole orbit."""
        return self.k

    @property
    def carried(self) -> str | None:
        """How the structure is carried to the stored rows (a rotation), in words; None where they are its rows."""
        return None

    @property
    def cosine_error(self) -> float | None:
        """A bound on how far the stored rows' cosines are from the structure's; None where they are its rows."""
        return None

    @property
    def span_bound(self) -> int | None:
        """The most dimensions the rows can span, where the structure says (a turned code's live columns)."""
        return None

    @abstractmethod
    def reprove(self, w: np.ndarray) -> Symmetry | None:
        """The same symmetry proved for rows ``w`` from what it stores (its generators), or None."""

    @abstractmethod
    def moved(self, rows, to) -> np.ndarray:
        """The words that the group element taking class 0 to class ``to`` makes of ``rows`` (broadcast)."""

    @abstractmethod
    def nearest(self, w: np.ndarray, cosines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Every row's nearest cosine and nearest row, and the smallest cosine of two rows, through the symmetry."""

    @abstractmethod
    def describe_statistics(self) -> str:
        """How the statistics of a code with this symmetry are computed, in words."""

    @abstractmethod
    def stored(self) -> dict:
        """The arrays a bank stores of it (its ``orbit`` group's datasets), from which :meth:`reprove` proves it."""

    @abstractmethod
    def stored_attributes(self) -> dict:
        """The attributes a bank stores with them (what the arrays mean, a rotation's seed)."""

    def pair_cosines(self, w: np.ndarray) -> list[tuple[np.ndarray, int]] | None:
        """The cosines of all pairs i < j as (values, multiplicity), through the symmetry; None: no shortcut."""
        return None

    def extension(self, w: np.ndarray, m: int) -> tuple[str, np.ndarray] | None:
        """The M rows that follow the K rows in the structure, with what they are in words; None: none follow."""
        return None

    def checked_on_read(self) -> dict:
        """What reading a bank proved of the rows, as the report's flags."""
        return {"orbit_prefix": False, "orbit_z4": False}

    def same_group(self, other) -> bool:
        """Whether ``other`` is this symmetry again (the same kind, rows and stored arrays)."""
        return type(other) is type(self) and other.k == self.k and all(
            np.array_equal(a, b) for a, b in zip(self.stored().values(), other.stored().values()))


class OrbitWords(Symmetry):
    """K rows that are words 0 … K−1, in order, of an orbit of 2^t words of a group of isometries, exact in float64.

    The whole orbit F has one one-vs-rest distance (its group acts
    transitively on it), and the rows other than ``w_i`` are part of F's
    other words, so ``dist_i >= dist_0(F)``: the dual bound (Jiang et al.
    2024, Lemma C.6) of a witness of F's class 0 against all 2^t words
    (:meth:`products`, two products with the rows) bounds every class.  A
    witness of class 0 moved to class i is a point of the hull of class i's
    others wherever its words are all rows (:meth:`fits`), with class 0's
    residual turned.

    Attributes
    ----------
    rank : int
        t = ⌈log2 K⌉: the orbit has 2^t words.
    group : str
        The group, in words (``"sign changes"``, ``"Z4 translations"``).
    several_witnesses : bool
        Whether a certificate may take several witnesses of class 0, one per
        candidate set of :meth:`witness_candidates` (disjoint sets), or the
        first one only (nested sets: the smallest words move furthest).
    tree_numbers : int
        float64 numbers per word of the whole orbit that :meth:`nearest`
        holds (the cosines, the trees' levels of block maxima and their words).
    """

    rank: int
    group: ClassVar[str] = ""
    whole_orbit_bounds: ClassVar[bool] = True
    several_witnesses: ClassVar[bool] = False
    tree_numbers: ClassVar[int] = 5

    @property
    def words(self) -> int:
        """2^t, the words of the whole orbit."""
        return 1 << self.rank

    @property
    def witness_words(self) -> int:
        return self.words

    @abstractmethod
    def top(self, w: np.ndarray, vectors: np.ndarray, inverse: bool = False) -> np.ndarray:
        """``vectors`` moved by the isometry of word h = 2^(t−1), which takes ``x_u`` to ``x_{u ⊕ h}`` for u < h
        (by its inverse where ``inverse``): exact in floating point."""

    def rows_of(self, w: np.ndarray, words) -> np.ndarray:
        """The orbit's words ``x_u`` for the integers ``words`` (u < 2^t), built from the rows: exact in float64.

        For u ≥ K, ``x_u`` is ``x_{u ⊕ h}`` moved by word h = 2^(t−1) (:meth:`top`), u ⊕ h < h < K.

        Examples
        --------
        >>> from spherecodes.orbit import orbit_prefix
        >>> from spherecodes.z4orbit import SQUARE, z4_orbit
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> (orbit_prefix(w, check_size=False).rows_of(w, np.array([3])) * np.sqrt(2)).tolist()
        [[-1.0, -1.0]]
        >>> (z4_orbit(SQUARE[:3]).rows_of(SQUARE[:3], np.array([3])) * np.sqrt(2)).round(12).tolist()
        [[-1.0, 1.0]]
        """
        words = np.asarray(words, dtype=np.int64)
        beyond = words >= self.k
        out = w[np.where(beyond, words ^ (self.words // 2), words)]
        out[beyond] = self.top(w, out[beyond])
        return out

    def products(self, w: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """``<x_u, vector>`` for every word u < 2^t of the orbit: two products with the rows, never the 2^t words.

        Examples
        --------
        >>> from spherecodes.orbit import orbit_prefix
        >>> from spherecodes.z4orbit import SQUARE, z4_orbit
        >>> w = np.array([[1, 1], [1, -1], [-1, 1]]) / np.sqrt(2)
        >>> (orbit_prefix(w, check_size=False).products(w, w[0]).round(12) + 0.0).tolist()  # f(u)
        [1.0, 0.0, 0.0, -1.0]
        >>> (z4_orbit(SQUARE[:3]).products(SQUARE[:3], SQUARE[0]).round(12) + 0.0).tolist()  # f(u)
        [1.0, 0.0, -1.0, 0.0]
        """
        half = self.words // 2
        out = np.empty(self.words)
        out[: self.k] = w @ vector
        # x_u for u in [K, 2^t) is x_{u ⊕ h} moved by word h, u ⊕ h in [K − h, h): <x_u, v> = <x_{u ⊕ h}, h⁻¹ v>.
        out[self.k :] = w[self.k - half : half] @ self.top(w, vector, inverse=True)
        return out

    @abstractmethod
    def pair_counts(self) -> np.ndarray:
        """For every word u < 2^t, the pairs of rows whose cosine is ``f(u)``."""

    @abstractmethod
    def fits(self, classes, words) -> np.ndarray:
        """For each class of ``classes``, whether ``words`` moved to it (:meth:`moved`) are all rows (below K)."""

    @abstractmethod
    def witness_candidates(self, shell: np.ndarray):
        """Sets of words of the nearest shell of class 0 (the integers ``shell``) to look for a witness among."""

    @abstractmethod
    def describe(self) -> str:
        """The structure in words."""

    def cosines(self, w: np.ndarray) -> np.ndarray:
        """``f(u) = <x_0, x_u>`` for u < 2^t: the cosine of two rows is ``f`` of their difference in the group."""
        return self.products(w, w[0])

    def nearest_cosines(self, w: np.ndarray, cosines: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """:meth:`cosines` (or ``cosines``, not changed) with f(0) = −inf, a row not being its own neighbour, and
        the smallest cosine of two rows, min f(u) over u ≠ 0: the start of :meth:`nearest`."""
        f = self.cosines(w) if cosines is None else cosines.copy()
        f[0] = np.inf
        low = float(f.min())
        f[0] = -np.inf
        return f, low

    def pair_cosines(self, w: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """The pairs of each difference u have the cosine ``f(u)`` (:meth:`pair_counts`): grouped by their count."""
        cosines, pairs = self.cosines(w)[1:], self.pair_counts()[1:]
        return [(cosines[pairs == count], int(count)) for count in np.unique(pairs[pairs > 0])]

    def describe_statistics(self) -> str:
        return f"{self.describe()}, the float64 cosines of one class of the orbit and trees of their block maxima"

    def witness_bounds(self, w: np.ndarray, indices: np.ndarray, weights: np.ndarray, nearest: np.ndarray,
                       where: str = "the code") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every class's interval from witnesses of the whole orbit's class 0: (lo, hi, features).

        Parameters
        ----------
        w : ndarray, shape (K, d)
            The rows this structure was proved for.
        indices, weights : ndarray, shape (L, s)
            L witnesses of the orbit's class 0: words of the orbit (below
            2^t, not 0; padded with −1) and their weights (points of the simplex).
        nearest : ndarray of int, shape (K,)
            ``−1 − j`` where class i takes witness j moved (:meth:`moved`),
            else the row that bounds the class (``hi_i = ‖w_i − w_j‖``).
        where : str
            How error messages name the code.

        Returns
        -------
        lo, hi : ndarray, shape (K,)
            ``lo`` is witness 0's dual bound against all 2^t words (every
            class's, capped by its ``hi``); ``hi`` the moved witness's
            residual norm, ``‖r_j‖``, bit for bit, or the segment to the
            nearest row.  O(K·(d + s)).
        features : ndarray, shape (L, d)
            ``r_j/‖r_j‖`` of each witness (NaN where ``r_j = 0``).

        Raises
        ------
        SpherecodesError
            A witness that is not a point of the simplex over the orbit's
            other words, a moved witness claimed where it leaves the rows,
            or a nearest row outside [0, K) or the class itself.

        Examples
        --------
        The square's first three vertices (Gray images of 0, 1, 2 in Z4):
        the hull of vertices 1 and 3 of the whole square is at distance 1
        from vertex 0.  Class 1 takes that witness moved (words 1 + 1 = 2
        and 1 + 3 = 0, both rows); classes 0 and 2 would need word 3, and
        are bounded by their nearest row.

        >>> from spherecodes.z4orbit import SQUARE, z4_orbit
        >>> orbit = z4_orbit(SQUARE[:3])
        >>> lo, hi, _ = orbit.witness_bounds(SQUARE[:3], np.array([[1, 3]]), np.array([[0.5, 0.5]]),
        ...                                  np.array([1, -1, 1]))
        >>> lo.round(12).tolist(), hi.round(12).tolist()
        ([1.0, 1.0, 1.0], [1.414213562373, 1.0, 1.414213562373])
        """
        k = len(w)
        indices, weights = np.asarray(indices, dtype=np.int64), np.asarray(weights, dtype=np.float64)
        nearest = np.asarray(nearest, dtype=np.int64)
        used = indices >= 0
        if indices.ndim != 2 or len(indices) < 1 or weights.shape != indices.shape or nearest.shape != (k,) \
                or not used.any(axis=1).all():
            raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape")
        if (indices[used] >= self.words).any() or (indices[used] == 0).any() or (weights < 0).any() \
                or (weights[~used] != 0).any() or np.abs(weights.sum(axis=1) - 1).max() > 1e-12:
            raise SpherecodesError(f"{where}: the certificate's witness is not a point of the simplex over the "
                                   "orbit's other words (bad word or weight)")
        if ((nearest < -len(indices)) | (nearest >= k) | (nearest == np.arange(k))).any():
            raise SpherecodesError(f"{where}: the certificate names a nearest row outside [0, {k}) or the class "
                                   "itself, or a witness it does not hold")
        norms = np.empty(len(indices))
        features = np.empty((len(indices), w.shape[1]))
        for j, (words, mix) in enumerate(zip(indices, weights)):
            classes = np.flatnonzero(nearest == -1 - j)
            if not self.fits(classes, words[words >= 0]).all():
                raise SpherecodesError(f"{where}: the certificate moves a witness of the orbit's class 0 to a class "
                                       "where it leaves the rows")
            residual = w[0] - mix[words >= 0] @ self.rows_of(w, words[words >= 0])
            norms[j] = math.sqrt(residual @ residual)
            features[j] = residual / norms[j] if norms[j] > 0 else np.nan
        moved = nearest < 0
        hi = np.empty(k)
        hi[moved] = norms[-1 - nearest[moved]]
        rows = max(1, PAIR_ELEMENTS // w.shape[1])
        for start in range(0, k, rows):
            pairs = np.flatnonzero(~moved[start : start + rows]) + start
            difference = w[pairs] - w[nearest[pairs]]
            hi[pairs] = np.sqrt(np.einsum("nd,nd->n", difference, difference))
        if norms[0] == 0:  # a word repeated in the orbit: distance 0, no direction separates it
            return np.zeros(k), hi, features
        scores = self.products(w, features[0])
        scores[0] = -np.inf
        lo = min(float(w[0] @ features[0] - scores.max()), float(norms.min()))
        return np.minimum(lo, hi), hi, features


def block_maxima(values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Level c of the tree of :meth:`OrbitWords.nearest`: the maxima of ``values`` over the aligned blocks of 2^c,
    and where they are (the first on ties).

    Examples
    --------
    >>> [(v.tolist(), i.tolist()) for v, i in block_maxima(np.array([1.0, 3.0, 2.0, 2.0]))]
    [([1.0, 3.0, 2.0, 2.0], [0, 1, 2, 3]), ([3.0, 2.0], [1, 2]), ([3.0], [1])]
    """
    where = np.arange(len(values), dtype=np.int64)
    levels = [(values, where)]
    while len(values) > 1:
        pairs, places = values.reshape(-1, 2), where.reshape(-1, 2)
        right = pairs[:, 1] > pairs[:, 0]
        values, where = np.where(right, pairs[:, 1], pairs[:, 0]), np.where(right, places[:, 1], places[:, 0])
        levels.append((values, where))
    return levels
