"""Structured codes turned by a seeded rotation, certified in the coordinates of their construction.

A structured code is built in coordinates ``X`` where its symmetry is
visible, and turned by the seeded Haar rotation ``Q``
(:func:`spherecodes.sphere.random_rotation`) so that it uses every
dimension: the stored rows are ``W = fl(X Q)``.  Cosines and one-vs-rest
distances are invariant under an orthogonal map, so statistics and
certificate are computed on ``X`` in O(K·d) and carried to ``W`` through two
numbers proved here in float64: ``η >= ‖QᵀQ − I‖₂`` and ``δ``, how far the
stored rows are from the structured rows turned (measured as
``max_j ‖x_j − fl(w_j Qᵀ)‖`` where the rows are read back; the a-priori
bound ``γ_d·‖x_j‖·‖Q‖_F`` of the product where a run has just made them)::

    read back:  (dist_c(X) − 2δ) / √(1 + η)  <=  dist_c(W)  <=  (dist_c(X) + 2δ) / √(1 − η)
    a priori:   √(1 − η)·dist_c(X) − 2δ  <=  dist_c(W)  <=  √(1 + η)·dist_c(X) + 2δ

Every cosine of ``W`` is within ``η + δ(2 + δ)`` of the same cosine of ``X``.
``X`` is recovered from the stored rows alone (:func:`snap_rows` of
``fl(W Qᵀ)``, exact for rows of one magnitude on their support: binary and
Kerdock codes, ±e_i) and its structure proved again from the stored
generators: nothing stored is trusted, and rows that are not ``X Q`` for a
structured ``X`` are a generic code.  docs/certificate.md ("2.0e Structured
codes turned by a rotation") gives the argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .sphere import random_rotation
from .symmetry import Symmetry

__all__ = ["ROTATION_KIND", "Rotated", "orthogonality_error", "rotated_structure", "snap_rows", "turn_rows"]

#: How the rotation is made from its seed (recorded in banks): QR of a
#: seeded Gaussian matrix, signs of R's diagonal moved into Q.
ROTATION_KIND = "haar-qr"

#: Unit roundoff of float64.
_U = 2.0**-53

#: Largest ``δ`` (and ``η``) for which the rows count as the structured rows
#: turned: far below the gap between the magnitudes that :func:`snap_rows`
#: rounds to, far above what rounding makes (about 1e-10 at d = 2048).
MAX_ROW_ERROR = 1e-8

#: Rows turned back at a time (bounded memory: 64 MiB of float64 at d = 1024).
_ROWS = 8192


def _gamma(n: int) -> float:
    """γ_n = n·u / (1 − n·u): the relative error bound of an n-term dot product in any order (Higham 2002, §3.1)."""
    return n * _U / (1.0 - n * _U)


def orthogonality_error(q: np.ndarray) -> float:
    """A proved upper bound on ``‖QᵀQ − I‖₂`` for a float64 square matrix.

    ``‖·‖₂ <= ‖·‖_F``; the computed ``fl(QᵀQ)`` differs from ``QᵀQ`` entry by
    entry by at most ``γ_d`` times the products of the column norms, so by
    at most ``γ_d·‖Q‖_F²`` in Frobenius norm.  The Frobenius norms are
    themselves sums of squares, rounded up by their own γ.

    Examples
    --------
    >>> q = random_rotation(64, seed=0)
    >>> 0 < orthogonality_error(q) < 1e-11
    True
    >>> orthogonality_error(np.eye(3))
    0.0
    """
    d = q.shape[0]
    gram = q.T @ q
    gram[np.diag_indices(d)] -= 1.0  # exact: the diagonal is within a factor 2 of 1 (Sterbenz)
    frobenius = math.sqrt(float(np.einsum("ij,ij->", gram, gram)) * (1 + _gamma(d * d + 2)))
    squared = float(np.einsum("ij,ij->", q, q)) * (1 + _gamma(d * d + 2))
    bound = frobenius + _gamma(d) * squared
    return 0.0 if bound == 0.0 or (frobenius == 0.0 and np.array_equal(q, np.eye(d))) else bound * (1 + 4 * _U)


def snap_rows(y: np.ndarray) -> np.ndarray:
    """Each row rounded to one magnitude on its large entries and zero elsewhere: the structured rows it is near.

    An entry is large where it exceeds half the row's largest; the
    magnitude is ``1/√s`` for s large entries, so the rows are unit
    vectors (up to rounding) with the signs of ``y``.

    Examples
    --------
    >>> snap_rows(np.array([[0.70710678, -0.7071068, 1e-14], [1e-15, 0.0, 0.99999999]])).tolist()
    [[0.7071067811865475, -0.7071067811865475, 0.0], [0.0, 0.0, 1.0]]
    """
    magnitude = np.abs(y)
    large = magnitude > 0.5 * magnitude.max(axis=1, keepdims=True)
    value = 1.0 / np.sqrt(np.count_nonzero(large, axis=1))[:, None]
    # Two passes over the block instead of four (this runs over every row of a code as it is made and read).
    snapped = np.copysign(np.broadcast_to(value, y.shape), y)
    snapped[~large] = 0.0
    return snapped


@dataclass(frozen=True, eq=False)
class Rotated(Symmetry):
    """Rows ``W`` proved to be a structured code ``X`` turned by the rotation of ``seed``, with the bounds that
    carry statistics and certificates from ``X`` to ``W``.

    Attributes
    ----------
    structure : Symmetry
        The symmetry of ``X`` (proved on ``coordinates``): a
        :class:`~spherecodes.orbit.SignOrbit`, :class:`~spherecodes.orbit.OrbitPrefix`
        or :class:`~spherecodes.z4orbit.Z4Orbit`.
    coordinates : ndarray, shape (K, d)
        ``X``: the structured rows, float64.
    seed : int
        The rotation's seed (:func:`spherecodes.sphere.random_rotation`).
    row_error : float
        ``δ``: ``max_j ‖x_j − w_j Qᵀ‖`` measured, or where ``a_priori``,
        ``max_j ‖w_j − x_j Q‖`` bounded for the product that made ``W``.
    orthogonality_error : float
        ``η >= ‖QᵀQ − I‖₂``.
    rotation : ndarray, shape (d, d)
        ``Q`` itself (not compared, not shown).
    a_priori : bool
        Whether ``δ`` bounds the product that made ``W`` (a run) rather than
        being measured from the rows (a bank read back).
    """

    structure: Symmetry
    coordinates: np.ndarray = field(repr=False)
    seed: int
    row_error: float
    orthogonality_error: float
    rotation: np.ndarray = field(repr=False, compare=False)
    a_priori: bool = False

    @property
    def k(self) -> int:
        """K, the rows."""
        return int(self.coordinates.shape[0])

    @property
    def generators(self) -> np.ndarray:
        """The generators of the structure of ``X`` (what a bank stores)."""
        return self.structure.generators

    @property
    def unturned(self) -> Symmetry:
        """The structure of ``X``: certificates are its, carried."""
        return self.structure

    @property
    def witness_words(self) -> int:
        return self.structure.witness_words

    @property
    def carried(self) -> str:
        return self.describe()

    @property
    def span_bound(self) -> int:
        """``X``'s live columns: ``W`` spans at most as many dimensions."""
        return int(self.coordinates.any(axis=0).sum())

    def reprove(self, w: np.ndarray) -> "Rotated | None":
        """The same structure proved for rows ``w`` turned back by the same rotation (:func:`rotated_structure`)."""
        return rotated_structure(w, self.seed, self.structure.reprove)

    def moved(self, rows, to) -> np.ndarray:
        return self.structure.moved(rows, to)

    def nearest(self, w: np.ndarray, cosines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """The statistics of ``X`` (``w`` is not read): its cosines are ``W``'s within :attr:`cosine_error`."""
        return self.structure.nearest(self.coordinates)

    def describe_statistics(self) -> str:
        return f"{self.structure.describe_statistics()}, carried through the rotation"

    def stored(self) -> dict:
        return self.structure.stored()

    def stored_attributes(self) -> dict:
        return {"rotation_seed": np.int64(self.seed), "rotation_kind": ROTATION_KIND,
                "rotation_meaning": "the prototypes are these structured rows turned by the rotation of rotation_seed "
                                    "(spherecodes.sphere.random_rotation): snap_rows(prototypes @ Q.T) are the rows "
                                    "the generators describe",
                **self.structure.stored_attributes()}

    def checked_on_read(self) -> dict:
        return {"rotated": {"seed": self.seed, "row_error": self.row_error,
                            "orthogonality_error": self.orthogonality_error}, **self.structure.checked_on_read()}

    def same_group(self, other) -> bool:
        return type(other) is type(self) and other.seed == self.seed and self.structure.same_group(other.structure)

    @property
    def cosine_error(self) -> float:
        """A bound on ``|<w_i, w_j> − <x_i, x_j>|`` for every pair: η + δ(2 + δ), rows of norm 1 up to rounding."""
        eta, delta = self.orthogonality_error, self.row_error
        return (eta * (1 + 1e-9) + delta * (2 + 1e-9 + delta)) * (1 + 8 * _U)

    def distance_bounds(self, lo, hi) -> tuple[np.ndarray, np.ndarray]:
        """One-vs-rest intervals of ``W`` from intervals ``[lo, hi]`` of ``X`` (see the module's inequality).

        Examples
        --------
        >>> from spherecodes.orbit import sign_orbit
        >>> x = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> r = rotated_structure(x @ random_rotation(2, 5), 5, sign_orbit(x).reprove)
        >>> lo, hi = r.distance_bounds(np.full(4, 1.0), np.full(4, 1.0))
        >>> bool((lo < 1).all() and (hi > 1).all() and (hi - lo < 1e-13).all())
        True
        """
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        eta, slack = self.orthogonality_error, 2 * self.row_error
        if self.a_priori:
            low, high = math.sqrt(1 - eta) * lo - slack, math.sqrt(1 + eta) * hi + slack
        else:
            low, high = (lo - slack) / math.sqrt(1 + eta), (hi + slack) / math.sqrt(1 - eta)
        return np.maximum(low * (1 - 4 * _U), 0.0), high * (1 + 4 * _U)

    def turn(self, vectors: np.ndarray) -> np.ndarray:
        """Vectors of ``X``'s coordinates in ``W``'s: ``v Q`` (dual directions turn with the code)."""
        return np.asarray(vectors, dtype=np.float64) @ self.rotation

    def describe(self) -> str:
        """How the structure was carried, in words.

        Examples
        --------
        >>> from spherecodes.orbit import sign_orbit
        >>> x = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
        >>> rotated_structure(x @ random_rotation(2, 5), 5, sign_orbit(x).reprove).describe().split(" within")[0]
        'stored rows'
        """
        return (f"stored rows within {self.row_error:.1e} of it turned, rotation orthogonal within "
                f"{self.orthogonality_error:.1e}")


def rotated_structure(w: np.ndarray, seed: int, prove, *, coordinates: np.ndarray | None = None,
                      rotation: np.ndarray | None = None) -> Rotated | None:
    """Prove that rows ``w`` are a structured code turned by the rotation of ``seed``; None where they are not.

    Parameters
    ----------
    w : ndarray, shape (K, d)
        The stored (turned) rows, float64.
    seed : int
        The rotation's seed.
    prove : callable
        ``prove(X)`` returns the structure of ``X`` proved from the
        generators claimed for it (``structure.reprove`` of a structure
        proved for the rows as built, or a check of stored generators), or
        None: nothing claimed is trusted.
    coordinates : ndarray, optional
        ``X`` where the caller just computed ``w = fl(X Q)`` from it (a
        run that turns its code, with rows as :func:`snap_rows` makes them):
        then ``δ`` is the a-priori bound of that product and no product is
        needed; else ``X`` is recovered with one product ``W Qᵀ``.
    rotation : ndarray, optional
        ``Q`` when already computed from ``seed``.

    Examples
    --------
    >>> from spherecodes.orbit import sign_orbit
    >>> x = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
    >>> w = x @ random_rotation(2, 5)
    >>> r = rotated_structure(w, 5, sign_orbit(x).reprove)
    >>> r.structure.rank, bool(np.array_equal(r.coordinates, snap_rows(x))), r.row_error < 1e-14
    (2, True, True)
    >>> rotated_structure(w, 6, sign_orbit(x).reprove) is None   # not the rotation of seed 6
    True
    """
    w = np.asarray(w, dtype=np.float64)
    k, d = w.shape
    q = random_rotation(d, seed) if rotation is None else rotation
    eta = orthogonality_error(q)
    if not eta < MAX_ROW_ERROR:
        return None
    q_norm = math.sqrt(float(np.einsum("ij,ij->", q, q)) * (1 + _gamma(d * d + 2)))
    if coordinates is not None:
        x = np.asarray(coordinates, dtype=np.float64)
        # w_j = fl(x_j Q) = x_j Q + e_j with ‖e_j‖ <= γ_d‖x_j‖‖Q‖_F (any order of summation).
        x_norm = float(np.sqrt(np.einsum("kd,kd->k", x, x).max())) * (1 + _gamma(d + 2))
        delta = _gamma(d) * x_norm * q_norm * (1 + 8 * _U)
    else:
        x = np.empty_like(w)
        w_norm = 0.0
        gap = 0.0
        for start in range(0, k, _ROWS):
            rows = slice(start, start + _ROWS)
            y = w[rows] @ q.T
            x[rows] = snap_rows(y)
            difference = y - x[rows]
            gap = max(gap, float(np.sqrt(np.einsum("kd,kd->k", difference, difference).max())))
            w_norm = max(w_norm, float(np.sqrt(np.einsum("kd,kd->k", w[rows], w[rows]).max())))
        # ‖x_j − z_j‖ <= ‖x_j − y_j‖ + ‖y_j − z_j‖, the product's rounding ‖y_j − z_j‖ <= γ_d‖w_j‖‖Q‖_F; the
        # norms computed in float64 rounded up by their own γ.
        delta = (gap * (1 + _gamma(d + 3)) + _gamma(d) * w_norm * (1 + _gamma(d + 2)) * q_norm) * (1 + 8 * _U)
    if not delta <= MAX_ROW_ERROR:
        return None
    proved = prove(x)
    if proved is None:
        return None
    return Rotated(proved, x, int(seed), float(delta), float(eta), q, a_priori=coordinates is not None)


def turn_rows(rows: np.ndarray, seed: int, structure=None, *, rotation: np.ndarray | None = None):
    """Rows turned by the rotation of ``seed``, and their structure carried through it: ``(W, Rotated or None)``.

    Rows with a proved ``structure`` (:class:`spherecodes.orbit.SignOrbit`,
    :class:`spherecodes.orbit.OrbitPrefix`, ...) are first put in the
    canonical form that a reader recovers from the turned rows
    (:func:`snap_rows`: one magnitude per row, exactly), then turned; the
    structure is re-proved on them and carried (:func:`rotated_structure`,
    with the a-priori bound of the product).  Without one, or where the
    rows are not of that form, they are turned as they are and None is
    returned with them.

    Examples
    --------
    >>> from spherecodes.orbit import sign_orbit
    >>> x = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]]) / np.sqrt(2)
    >>> w, carried = turn_rows(x, 3, sign_orbit(x))
    >>> carried.seed, bool(np.allclose(w @ w.T, x @ x.T))
    (3, True)
    """
    rows = np.asarray(rows, dtype=np.float64)
    q = random_rotation(rows.shape[1], seed) if rotation is None else rotation
    if structure is None:
        return rows @ q, None
    snapped = np.empty_like(rows)
    w = np.empty_like(rows)
    for start in range(0, len(rows), _ROWS):  # a block at a time: no K x d temporaries beyond the results
        part = slice(start, start + _ROWS)
        snapped[part] = snap_rows(rows[part])
        if np.abs(snapped[part] - rows[part]).max() > 1e-12:  # not rows of one magnitude: nothing to carry
            return rows @ q, None
        w[part] = snapped[part] @ q
    return w, rotated_structure(w, seed, structure.reprove, coordinates=snapped, rotation=q)
