"""Certificates of the codes that are (the first K words of) one orbit of ℤ₄ translations: Kerdock codes.

Kerdock codes on the sphere (Hammons, Kumar, Calderbank, Sloane & Solé
1994) are one orbit of the translations by their quaternary words, which
the Gray map makes signed permutations of the coordinates: isometries that
are exact in float64.  So the whole orbit F (2^t words) has one one-vs-rest
distance, and the rows other than ``w_i`` are part of F's other words:
``dist_i >= dist_0(F) >= lo_0``, the dual bound (Jiang et al. 2024, Lemma
C.6) of a witness of F's class 0 against all 2^t words, two products with
the rows (:meth:`~spherecodes.z4orbit.Z4Orbit.products`).  A witness of
class 0 moved by the translation to class i (words ``i + u``) is a point of
the hull of class i's others wherever its words are all rows, and its
residual is class 0's turned: ``hi_i = ‖r_0‖``.

Class 0's witnesses come from its nearest shell in the blocks of the orbit
(:attr:`~spherecodes.z4orbit.Z4Orbit.block_bits`): the block of row 0 and
the blocks 2^j.  For a Kerdock code the blocks are its orthonormal bases
and their negatives, and the shell's words in one other basis — the n of
its 2n points at cosine +1/√n — average to ``x_0/√n``: a balanced witness
of n points, ρ = 1 − 1/√n.  A class i in basis M moves the witness of basis
2^j to basis ``M ⊕ 2^j``, below M wherever bit j of M is set, so every class
finds a witness among the rows once the code holds two whole bases; a class
that finds none is bounded by its nearest row.  O(K·(d + t) + 2^t·d).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import memory
from ..errors import SpherecodesError
from ..memory import Estimate, memory_limit, require_memory
from ..z4orbit import Z4Orbit, z4_orbit
from ._result import OneVsRestCertificate, orbit_witness_certificate
from ._shell import SHELL_TOL, shell_block_bytes, shell_bounds

__all__ = ["z4_bounds", "z4_bytes", "z4_certificate", "z4_estimate", "z4_interval", "z4_witnesses"]

#: Numbers of the pairs ``w_i − w_nearest`` formed at a time by :func:`z4_bounds` (16 MiB).
_PAIR_ELEMENTS = 2**21


def z4_witnesses(w: np.ndarray, orbit: Z4Orbit, cosines: np.ndarray, tol: float, block_bytes: float,
                 max_support: int):
    """Balanced witnesses of the whole orbit's class 0, one per block that holds one, as (words, weights).

    The candidates of a block are the words of the orbit's nearest shell to
    ``w_0`` in it, built from the rows (:meth:`~spherecodes.z4orbit.Z4Orbit.rows_of`);
    the nearest-shell pass settles them where they are balanced.  The
    blocks are row 0's and then those at 2^j, j = 0, 1, …: a class in block
    M moves the witness of block B to block ``M ⊕ B``.
    """
    f = cosines.copy()
    f[0] = -np.inf
    shell = np.flatnonzero(f >= f.max() - SHELL_TOL)
    q = orbit.block_bits
    first = np.zeros(1, dtype=np.int64)
    for block in [0] + [1 << j for j in range(orbit.rank - q)]:
        near = shell[(shell >> q) == block]
        if len(near) == 0:
            continue
        small = np.vstack([w[:1], orbit.rows_of(w, near)])
        found = shell_bounds(small, tol=tol, block_bytes=block_bytes, max_support=max_support, rows=first)
        if found.exact[0]:
            used = found.support_indices[0] >= 0
            yield near[found.support_indices[0][used] - 1], found.support_weights[0][used]


def z4_certificate(w: np.ndarray, orbit: Z4Orbit, tol: float, rattler_tol: float, max_memory: float | None,
                   block_bytes: float, max_support: int, started: float, progress=None) -> OneVsRestCertificate | None:
    """The certificate of a code that is (the first K words of) an orbit of ℤ₄ translations, or None where ρ is not
    certified so (no balanced witness of class 0 in a block, or none that stays among the rows).

    Each class takes the first of class 0's witnesses (:func:`z4_witnesses`)
    whose moved words are all rows, else its nearest row; witnesses no class
    takes (but the first, whose dual bound bounds every class) are dropped.
    ``progress`` gets a :class:`CertificateProgress` once, at the end.
    """
    k, d = w.shape
    require_memory(z4_bytes(k, d, orbit.words, block_bytes), f"the certificate's inputs and results (K={k}, d={d})",
                   "cpu", limit=max_memory)
    cosines = orbit.cosines(w)  # the witnesses' shell and every row's nearest row both start from them
    choice = np.full(k, -1, dtype=np.int64)
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    for words, weights in z4_witnesses(w, orbit, cosines, tol, block_bytes, max_support):
        open_classes = np.flatnonzero(choice < 0)
        fits = orbit.fits(open_classes, words)
        if not kept or fits.any():
            choice[open_classes[fits]] = len(kept)
            kept.append((words, weights))
        if (choice >= 0).all():
            break
    if not kept or (choice < 0).all():
        return None
    nearest = -1 - choice
    if (choice < 0).any():
        _, nearest_rows, _ = orbit.nearest(w, cosines)
        nearest = np.where(choice < 0, nearest_rows, nearest)
    width = max(len(words) for words, _ in kept)
    indices = np.full((len(kept), width), -1, dtype=np.int64)
    weights = np.zeros((len(kept), width))
    for j, (words, mix) in enumerate(kept):
        indices[j, : len(words)], weights[j, : len(words)] = words, mix
    lo, hi, features = z4_bounds(w, orbit, indices, weights, nearest)
    return orbit_witness_certificate(lo, hi, indices, weights, features, nearest, orbit, tol, rattler_tol, started,
                                     progress)


def z4_bounds(w: np.ndarray, orbit: Z4Orbit, indices: np.ndarray, weights: np.ndarray, nearest: np.ndarray,
              where: str = "the code") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every class's interval from witnesses of the orbit's class 0: (lo, hi, features).

    Parameters
    ----------
    w : ndarray, shape (K, d)
    orbit : Z4Orbit
        Proved for these rows.
    indices, weights : ndarray, shape (L, s)
        L witnesses of the orbit's class 0: words of the orbit (below 2^t,
        not 0; padded with −1) and their weights (points of the simplex).
    nearest : ndarray of int, shape (K,)
        ``−1 − j`` where class i takes witness j moved (words ``i + u``),
        else the row that bounds the class (``hi_i = ‖w_i − w_j‖``).
    where : str
        How error messages name the code.

    Returns
    -------
    lo, hi : ndarray, shape (K,)
        ``lo`` is witness 0's dual bound against all 2^t words (every
        class's, capped by its ``hi``); ``hi`` the moved witness's residual
        norm, ``‖r_j‖``, or the segment to the nearest row.
    features : ndarray, shape (L, d)
        ``r_j/‖r_j‖`` of each witness (NaN where ``r_j = 0``).

    Raises
    ------
    SpherecodesError
        A witness that is not a point of the simplex over the orbit's other
        words, a moved witness claimed where it leaves the rows, or a
        nearest row outside [0, K) or the class itself.

    Examples
    --------
    The square's first three vertices (Gray images of 0, 1, 2 in ℤ₄): the
    hull of vertices 1 and 3 of the whole square is at distance 1 from
    vertex 0.  Class 1 takes that witness moved (words 1 + 1 = 2 and
    1 + 3 = 0, both rows); classes 0 and 2 would need word 3, and are
    bounded by their nearest row.

    >>> from spherecodes.z4orbit import SQUARE, z4_orbit
    >>> orbit = z4_orbit(SQUARE[:3])
    >>> lo, hi, _ = z4_bounds(SQUARE[:3], orbit, np.array([[1, 3]]), np.array([[0.5, 0.5]]), np.array([1, -1, 1]))
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
    if (indices[used] >= orbit.words).any() or (indices[used] == 0).any() or (weights < 0).any() \
            or (weights[~used] != 0).any() or np.abs(weights.sum(axis=1) - 1).max() > 1e-12:
        raise SpherecodesError(f"{where}: the certificate's witness is not a point of the simplex over the orbit's "
                               "other words (bad word or weight)")
    if ((nearest < -len(indices)) | (nearest >= k) | (nearest == np.arange(k))).any():
        raise SpherecodesError(f"{where}: the certificate names a nearest row outside [0, {k}) or the class itself, "
                               "or a witness it does not hold")
    norms = np.empty(len(indices))
    features = np.empty((len(indices), w.shape[1]))
    for j, (words, mix) in enumerate(zip(indices, weights)):
        classes = np.flatnonzero(nearest == -1 - j)
        if not orbit.fits(classes, words[words >= 0]).all():
            raise SpherecodesError(f"{where}: the certificate moves a witness of the orbit's class 0 to a class where "
                                   "it leaves the rows")
        residual = w[0] - mix[words >= 0] @ orbit.rows_of(w, words[words >= 0])
        norms[j] = math.sqrt(residual @ residual)
        features[j] = residual / norms[j] if norms[j] > 0 else np.nan
    moved = nearest < 0
    hi = np.empty(k)
    hi[moved] = norms[-1 - nearest[moved]]
    rows = max(1, _PAIR_ELEMENTS // w.shape[1])
    for start in range(0, k, rows):
        pairs = np.flatnonzero(~moved[start : start + rows]) + start
        difference = w[pairs] - w[nearest[pairs]]
        hi[pairs] = np.sqrt(np.einsum("nd,nd->n", difference, difference))
    if norms[0] == 0:  # a word repeated in the orbit: distance 0, no direction separates it
        return np.zeros(k), hi, features
    scores = orbit.products(w, features[0])
    scores[0] = -np.inf
    lo = min(float(w[0] @ features[0] - scores.max()), float(norms.min()))
    return np.minimum(lo, hi), hi, features


def z4_interval(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from a stored certificate of (the first K words of) an orbit of ℤ₄
    translations: the orbit checked from its generators and pairs (unless ``orbit`` is that one, already proved),
    then :func:`z4_bounds`.  O(K·d + 2^t·d)."""
    claimed = cert.orbit
    same = isinstance(orbit, Z4Orbit) and orbit.k == len(w) and all(
        np.array_equal(a, b) for a, b in zip(orbit.stored().values(), claimed.stored().values()))
    if not same:
        orbit = z4_orbit(w, claimed.generators, claimed.pairs)
    if orbit is None:
        raise SpherecodesError(f"{where}: the certificate's witness is the orbit's class 0's, but the prototypes are "
                               "not the first K words of that orbit of Z4 translations")
    if np.shape(cert.lo) != (len(w),) or np.shape(cert.hi) != (len(w),) or cert.nearest is None:
        raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape")
    lo, hi, _ = z4_bounds(w, orbit, cert.support_indices, cert.support_weights, cert.nearest, where)
    return lo, hi


def z4_bytes(k: int, d: int, words: int, block_bytes: float) -> float:
    """Working memory of the certificate of (the first K words of) an orbit of 2^t ``words``, or of its check.

    The two trees of nearest rows (each level a value and a word: twice the
    words per tree, 16 bytes each), the cosines, ten per-class arrays, the
    pairs formed for the nearest rows, one block's shell words (at most
    2^q ≤ 2^t rows, counted as the words or 4(d + 1), whichever is fewer)
    and the shell pass's block.

    Examples
    --------
    >>> z4_bytes(100_000, 1024, 2**17, 64 * 2**20) < 2**30
    True
    """
    candidates = min(words, 4 * (d + 1))
    return (8.0 * (9 * words + 10 * k) + 2 * 8.0 * _PAIR_ELEMENTS + 8.0 * candidates * d
            + shell_block_bytes(candidates, d, block_bytes))


def z4_estimate(w: np.ndarray, orbit: Z4Orbit, tol: float, max_memory: float | None, block_bytes: float,
                max_support: int) -> Estimate | None:
    """The certificate of (the first K words of) an orbit of ℤ₄ translations, timed on its parts; None where it
    falls back to every class (no balanced witness of class 0 among the rows).

    The witnesses are searched for as the certificate does; the bounds'
    products and the nearest rows are counted as three times the cosines'
    two products, which the search began with.
    """
    k, d = w.shape
    nbytes = z4_bytes(k, d, orbit.words, block_bytes)
    require_memory(nbytes, f"the certificate's inputs and results (K={k}, d={d})", "cpu", limit=max_memory)
    started = time.perf_counter()
    cosines = orbit.cosines(w)
    products = time.perf_counter()
    if not any(orbit.fits(np.arange(k), words).any()
               for words, _ in z4_witnesses(w, orbit, cosines, tol, block_bytes, max_support)):
        return None
    seconds = 4 * (products - started) + (time.perf_counter() - products)
    return Estimate(f"certificate of K = {k} classes in d = {d} ({orbit.describe()}: the whole orbit's class 0 by "
                    "its nearest shell, and its images)", "cpu", memory.process_peak(nbytes),
                    memory_limit("cpu", max_memory), seconds)
