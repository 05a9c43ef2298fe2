"""Check a stored certificate from its witness, in float64 (NumPy only, no torch).

A certificate stores, for each class k, the primal point ``v`` of the simplex
that gives its upper bound (its support and weights).  From the prototypes and
that witness alone both ends of the interval follow again:
``hi_k = ‖r_k‖`` with ``r_k = w_k − Σ_j v_j w_j``, and the weak-duality bound
``lo_k = min_{j≠k} <w_k − w_j, h_k>`` with ``h_k = r_k/‖r_k‖`` (Jiang et al.
2024, Lemma C.6; ``docs/certificate.md``).  Re-checking takes one (K, K)
product in tiles (of bounded size, whatever K), not a new solve; for a code
with a proved symmetry whose witnesses are class 0's moved, one row of it
after the orbit is checked against the rows (O(K·d)), or for the first K
words of an orbit :meth:`spherecodes.symmetry.OrbitWords.witness_bounds`
(O(K·(d + s))).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import SpherecodesError
from ..orbit import OrbitPrefix, resolve_orbit

__all__ = ["WITNESS_SLACK", "prefix_bounds", "support_residuals", "verify_witness"]

#: Largest difference allowed between a stored interval end and the one
#: recomputed from its witness (both are float64 evaluations of the same sums).
WITNESS_SLACK = 1e-12

#: Numbers held at a time by the gathers and weight blocks of :func:`support_residuals` (32 MiB).
_GATHER_ELEMENTS = 2**22

#: Supports at least 1/_DENSE_SUPPORT of K wide are summed through a dense weight block.
_DENSE_SUPPORT = 8

#: Rows and columns of the tiles of the product of :func:`verify_witness`
#: (64 MiB of float64 scores a tile, whatever K).
_TILE = 2048
_COLUMN_TILE = 4096


def support_residuals(prototypes: np.ndarray, indices: np.ndarray, weights: np.ndarray,
                      others: np.ndarray | None = None) -> np.ndarray:
    """``r_k = w_k − Σ_j v_j w_j`` for the primal points stored in a certificate.

    Padded entries (index −1) carry weight 0.  Rows are gathered in blocks, so
    memory stays near 32 MiB whatever K and the support width.

    Parameters
    ----------
    prototypes : ndarray, shape (n, d)
        The classes ``w_k`` whose residuals are wanted.
    indices : ndarray of int, shape (n, s)
        Support of each class, padded with −1.
    weights : ndarray, shape (n, s)
        Their weights, padded with 0.
    others : ndarray, shape (K, d), optional
        The prototypes the indices name (default ``prototypes``): given when
        only some classes' residuals are wanted, e.g. class 0's of an orbit.

    Returns
    -------
    ndarray, shape (n, d), float64

    Examples
    --------
    >>> w = np.eye(3)
    >>> support_residuals(w, np.array([[1, 2], [0, -1], [0, 1]]), np.array([[0.5, 0.5], [1.0, 0], [0.5, 0.5]]))
    array([[ 1. , -0.5, -0.5],
           [-1. ,  1. ,  0. ],
           [-0.5, -0.5,  1. ]])
    """
    others = prototypes if others is None else others
    k, d = others.shape
    width = indices.shape[1] if indices.ndim == 2 else 0
    residuals = np.array(prototypes, dtype=np.float64, copy=True)
    if width == 0:
        return residuals
    # Wide supports (a simplex ETF's witness holds K − 1 points per class) are
    # summed as a dense (rows × K) weight matrix times W, one BLAS product per
    # block; narrow ones are gathered.
    dense = width * _DENSE_SUPPORT >= k
    rows = max(1, _GATHER_ELEMENTS // ((k if dense else width * d)))
    for start in range(0, len(residuals), rows):
        part = slice(start, start + rows)
        if dense:
            mix = np.zeros((len(indices[part]), k))
            hit = indices[part] >= 0
            np.add.at(mix, (np.nonzero(hit)[0], indices[part][hit]), weights[part][hit])
            residuals[part] -= mix @ others
        else:
            gathered = others[np.maximum(indices[part], 0)]  # (rows, s, d)
            residuals[part] -= np.matmul(weights[part, None, :], gathered)[:, 0, :]
    return residuals


def prefix_bounds(w: np.ndarray, prefix: OrbitPrefix, indices: np.ndarray, weights: np.ndarray,
                  nearest: np.ndarray, where: str = "the code") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every class's interval for the first K words of an orbit (:class:`spherecodes.orbit.OrbitPrefix`), from
    one witness of the orbit's class 0 (``indices`` and ``weights`` of shape (s,)): (lo, hi, feature).

    The witness moved to class i (words ``i ⊕ u``) is a point of the hull of
    the others where all its words are below K (``nearest[i] = −1``), else
    ``hi_i = ‖w_i − w_{nearest[i]}‖``; the witness's dual bound against all
    2^t words bounds every class from below
    (:meth:`spherecodes.symmetry.OrbitWords.witness_bounds`).

    Examples
    --------
    The cube's first five vertices (messages 0 … 4): the hull of vertex 0's
    three neighbours (words 1, 2, 4) is at distance 2/3 from it, and moved
    to class 0 only does that witness stay among the rows; the other
    classes are bounded by their nearest row (at distance 2/√3).

    >>> import itertools
    >>> from spherecodes.orbit import orbit_prefix
    >>> w = np.array(list(itertools.product([1, -1], repeat=3)))[:5] / np.sqrt(3)
    >>> lo, hi, _ = prefix_bounds(w, orbit_prefix(w), np.array([1, 2, 4]), np.full(3, 1 / 3), [-1, 0, 0, 1, 0])
    >>> lo.round(6).tolist(), hi.round(6).tolist()
    ([0.666667, 0.666667, 0.666667, 0.666667, 0.666667], [0.666667, 1.154701, 1.154701, 1.154701, 1.154701])
    """
    lo, hi, features = prefix.witness_bounds(w, np.asarray(indices)[None, :], np.asarray(weights)[None, :], nearest,
                                             where)
    return lo, hi, features[0]


def _moved_from_first(orbit, idx: np.ndarray) -> bool:
    """Whether every row of ``idx`` is row 0's moved by the orbit (checked a block of rows at a time)."""
    first, used = np.maximum(idx[0], 0), idx[0] >= 0
    rows = max(1, _GATHER_ELEMENTS // max(1, idx.shape[1]))
    for start in range(0, len(idx), rows):
        to = np.arange(start, min(start + rows, len(idx)))[:, None]
        if not (np.where(used, orbit.moved(first[None, :], to), -1) == idx[start : start + rows]).all():
            return False
    return True


def _certificate_orbit(w: np.ndarray, cert, orbit, where: str):
    """The orbit whose images of class 0's witness are the certificate's witnesses, checked; None for a generic one.

    A certificate that holds class 0's witness with an orbit
    (:attr:`OneVsRestCertificate.orbit`) needs the orbit to be these rows':
    it is checked from its generators unless ``orbit`` is one already
    proved for them (and the same group).  A certificate with every class's
    witness takes the orbit's shortcut where they are class 0's moved.
    """
    claimed = getattr(cert, "orbit", None)
    if claimed is None:
        orbit = resolve_orbit(w, orbit)
        idx, wt = cert.support_indices, cert.support_weights
        moved = orbit is not None and orbit.moves_witnesses and (wt == wt[0]).all() \
            and _moved_from_first(orbit, np.asarray(idx))
        return orbit if moved else None
    if not claimed.same_group(orbit):
        orbit = claimed.reprove(w)
    if orbit is None or not np.array_equal(orbit.coordinates, claimed.coordinates):
        raise SpherecodesError(f"{where}: the certificate's witnesses are class 0's moved by sign changes that do "
                               "not map the prototypes onto themselves")
    return orbit


def _interval_of(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from a certificate, as its symmetry holds its witnesses."""
    claimed = getattr(cert, "orbit", None)
    if claimed is not None and claimed.unturned is not claimed:
        return _rotated_interval(w, cert, orbit, where)
    if claimed is not None and claimed.whole_orbit_bounds:
        return _orbit_words_interval(w, cert, orbit, where)
    return _interval(w, cert, orbit, where)


def _interval(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from a certificate that holds every class's witness, or class 0's of an
    orbit (:class:`spherecodes.orbit.SignOrbit`)."""
    k = w.shape[0]
    idx = np.asarray(cert.support_indices)
    wt = np.asarray(cert.support_weights, dtype=np.float64)
    rows = 1 if getattr(cert, "orbit", None) is not None else k
    if idx.ndim != 2 or idx.shape[0] != rows or wt.shape != idx.shape or np.shape(cert.lo) != (k,) \
            or np.shape(cert.hi) != (k,):
        raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape {idx.shape}")
    used = idx >= 0
    bad = used & ((idx >= k) | (idx == np.arange(rows)[:, None]))
    if bad.any() or (wt < 0).any() or (wt[~used] != 0).any():
        raise SpherecodesError(f"{where}: the certificate's witness is not a point of the simplex (bad index or weight)")
    sums = wt.sum(axis=1)
    if np.abs(sums - 1).max(initial=0) > 1e-12:
        raise SpherecodesError(
            f"{where}: the certificate's witness weights do not sum to 1 (largest deviation {np.abs(sums - 1).max():.3g})"
        )
    # Witnesses that are class 0's moved by the isometry D taking w_0 to w_k have r_k = D r_0 exactly in float64:
    # only class 0's interval needs the scan of all K prototypes.
    moved = _certificate_orbit(w, cert, orbit, where) is not None
    checked = 1 if moved else k
    if moved:
        residual = (w[0] - wt[0] @ w[np.maximum(idx[0], 0)])[None, :]  # padding has weight 0
    else:
        residual = support_residuals(w, idx, wt)
    hi = np.sqrt(np.einsum("kd,kd->k", residual, residual))
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(hi[:, None] > 0, residual / hi[:, None], 0.0)
    lo = np.empty(checked)
    for start in range(0, checked, _TILE):
        rows = np.arange(start, min(start + _TILE, checked))
        best = np.full(len(rows), -np.inf)
        for c0 in range(0, k, _COLUMN_TILE):
            block = h[rows] @ w[c0 : c0 + _COLUMN_TILE].T  # <w_j, h_k>, rows k, columns j
            own = np.flatnonzero((rows >= c0) & (rows < c0 + block.shape[1]))
            block[own, rows[own] - c0] = -np.inf
            np.maximum(best, block.max(axis=1), out=best)
        lo[rows] = (w[rows] * h[rows]).sum(axis=1) - best
    if moved:
        lo, hi = np.full(k, lo[0]), np.full(k, hi[0])
    # A duplicated prototype has distance 0 and no separating direction.
    lo[hi == 0] = 0.0
    lo = np.minimum(lo, hi)
    return lo, hi


def _orbit_words_interval(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from the certificate of the first K words of an orbit: the orbit checked
    from what it stores (unless ``orbit`` is that one, already proved), then
    :meth:`~spherecodes.symmetry.OrbitWords.witness_bounds`.  O(K·d + 2^t·d)."""
    claimed = cert.orbit
    if not claimed.same_group(orbit):
        orbit = claimed.reprove(w)
    if orbit is None:
        raise SpherecodesError(f"{where}: the certificate's witness is the orbit's class 0's, but the prototypes are "
                               f"not the first K words of that orbit of {claimed.group}")
    if np.shape(cert.lo) != (len(w),) or np.shape(cert.hi) != (len(w),) or cert.nearest is None:
        raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape")
    lo, hi, _ = orbit.witness_bounds(w, cert.support_indices, cert.support_weights, cert.nearest, where)
    return lo, hi


def _rotated_interval(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from a certificate carried through a rotation: the structured rows
    recovered from ``w`` and proved (unless ``orbit`` is that structure, already proved for these rows), their
    intervals recomputed from the witness, and carried to ``w`` (:meth:`spherecodes.rotated.Rotated.distance_bounds`)."""
    claimed = cert.orbit
    if not claimed.same_group(orbit):
        orbit = claimed.reprove(w)
    if orbit is None:
        raise SpherecodesError(f"{where}: the certificate is carried through the rotation of seed {claimed.seed}, "
                               "but the prototypes are not the structured code turned by that rotation")
    lo, hi = _interval_of(orbit.coordinates, replace(cert, orbit=orbit.structure), orbit.structure, where)
    return orbit.distance_bounds(lo, hi)


def verify_witness(prototypes: np.ndarray, certificate, *, where: str = "the code",
                   orbit="auto") -> tuple[np.ndarray, np.ndarray]:
    """Re-evaluate a stored certificate from its witness, in float64.

    Recomputes ``hi_k`` and ``lo_k`` against all K prototypes and checks that
    they agree with the stored interval.

    Parameters
    ----------
    prototypes : ndarray, shape (K, d)
        The code's unit rows.
    certificate : OneVsRestCertificate or None
        Anything with ``lo``, ``hi``, ``support_indices`` and ``support_weights``.
    where : str
        How error messages name the code (e.g. ``"code 'tammes-d3-k12'"``).
    orbit : Symmetry, None or "auto"
        The code's symmetry (:class:`spherecodes.symmetry.Symmetry`: an
        orbit of sign changes or of Z4 translations, the first K words of
        one, such a code turned) when already proved for these rows, None
        for a generic code, ``"auto"`` to prove it here.  A certificate that
        holds only class 0's witnesses has its symmetry proved again from
        what it stores (:meth:`~spherecodes.symmetry.Symmetry.reprove`)
        unless ``orbit`` is that one.

    Returns
    -------
    lo, hi : ndarray, shape (K,)
        The recomputed interval ends; every ``dist_k`` lies in ``[lo_k, hi_k]``.

    Raises
    ------
    SpherecodesError
        There is no certificate, the witness is not a point of the simplex,
        or the recomputed interval disagrees with the stored one by more than
        :data:`WITNESS_SLACK`.

    Examples
    --------
    >>> from spherecodes.certificate import one_vs_rest_distances
    >>> from spherecodes.constructions import regular_polygon
    >>> w = regular_polygon(6)
    >>> lo, hi = verify_witness(w, one_vs_rest_distances(w, device="cpu"))
    >>> round(float(lo.min()), 12), round(float(hi.min()), 12)
    (0.5, 0.5)
    """
    cert = certificate
    if cert is None:
        raise SpherecodesError(f"{where} has no certificate; run spherecodes certify BANK --write first")
    w = np.asarray(prototypes, dtype=np.float64)
    claimed = getattr(cert, "orbit", None)
    carried = claimed is not None and claimed.unturned is not claimed
    lo, hi = _interval_of(w, cert, orbit, where)
    slack = WITNESS_SLACK
    # A carried interval is re-derived with the row error measured from the stored rows, which may be below
    # the a-priori bound the run stored: a smaller upper end still proves the stored one.
    high = hi - cert.hi > slack if carried else np.abs(hi - cert.hi) > slack
    if high.any() or (lo < cert.lo - slack).any():
        worst = int(np.argmax(np.maximum(np.abs(hi - cert.hi), cert.lo - lo)))
        raise SpherecodesError(
            f"{where}: the stored certificate does not check: class {worst} stores "
            f"[{cert.lo[worst]:.17g}, {cert.hi[worst]:.17g}] but its witness gives [{lo[worst]:.17g}, {hi[worst]:.17g}]"
        )
    return lo, hi
