"""Check a stored certificate from its witness, in float64 (NumPy only, no torch).

A certificate stores, for each class k, the primal point ``v`` of the simplex
that gives its upper bound (its support and weights).  From the prototypes and
that witness alone both ends of the interval follow again:
``hi_k = ‖r_k‖`` with ``r_k = w_k − Σ_j v_j w_j``, and the weak-duality bound
``lo_k = min_{j≠k} <w_k − w_j, h_k>`` with ``h_k = r_k/‖r_k‖`` (Jiang et al.
2024, Lemma C.6; ``docs/certificate.md``).  Re-checking takes one (K, K)
product in tiles (of bounded size, whatever K), not a new solve; for a code
that is one orbit of sign changes (:mod:`spherecodes.orbit`) whose witnesses
are class 0's moved by the group, one row of it, after the orbit itself is
checked against the rows (O(K·d)); for the first K words of such an orbit,
the whole orbit's class 0 against its 2^t words by two products with the
rows, and every class's bound from its moved witness or its nearest row
(:func:`prefix_bounds`, O(K·(d + s))); the same for an orbit of Z4
translations (a Kerdock code, :mod:`._z4`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import SpherecodesError
from ..orbit import OrbitPrefix, SignOrbit, orbit_prefix, resolve_orbit, sign_orbit
from ..rotated import Rotated, rotated_structure
from ..z4orbit import Z4Orbit
from ._z4 import z4_interval

__all__ = ["PAIR_ELEMENTS", "WITNESS_SLACK", "moved_witness_fits", "prefix_bounds", "support_residuals", "verify_witness"]

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


#: Words of moved witnesses checked at a time (int64 and a mask each).
_FIT_ELEMENTS = 2**20

#: Numbers of the pairs ``w_i − w_nearest`` formed at a time by :func:`prefix_bounds` (16 MiB).
PAIR_ELEMENTS = 2**21


def moved_witness_fits(k: int, words: np.ndarray) -> np.ndarray:
    """For each class i < K, whether the orbit's words ``i ⊕ u``, u in ``words``, are all rows (below K).

    Examples
    --------
    >>> moved_witness_fits(5, np.array([1, 2])).tolist()  # class 3 would need word 3 ⊕ 2 = 1 and 3 ⊕ 1 = 2: yes
    [True, True, True, True, False]
    """
    fits = np.empty(k, dtype=bool)
    step = max(1, _FIT_ELEMENTS // max(1, len(words)))
    for start in range(0, k, step):
        classes = np.arange(start, min(start + step, k), dtype=np.int64)
        fits[classes] = ((classes[:, None] ^ words[None, :]) < k).all(axis=1)
    return fits


def prefix_bounds(w: np.ndarray, prefix: OrbitPrefix, indices: np.ndarray, weights: np.ndarray,
                  nearest: np.ndarray, where: str = "the code") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every class's interval for the first K words of an orbit (:class:`spherecodes.orbit.OrbitPrefix`), from
    a witness of the orbit's class 0: (lo, hi, feature).

    The whole orbit F (2^t words) is one orbit of isometries, so every class
    of F has the distance ``dist_0(F)``, and the prototypes other than
    ``w_i`` are part of F's others: ``dist_i >= dist_0(F) >= lo_0``, the dual
    bound of the witness's direction ``h`` against all 2^t words (two
    products with the rows, :meth:`~spherecodes.orbit.OrbitPrefix.products`).
    The witness moved to class i (words ``i ⊕ u``) is a point of the hull
    of the others where all its words are below K (``nearest[i] = −1``):
    ``hi_i = ‖r_0‖``, bit for bit.  Elsewhere ``hi_i = ‖w_i − w_{nearest[i]}‖``,
    a point of that hull too.  O(K·(d + s)).

    Parameters
    ----------
    w : ndarray, shape (K, d)
    prefix : OrbitPrefix
        Proved for these rows.
    indices, weights : ndarray, shape (s,)
        The witness of the orbit's class 0: words of the orbit (below 2^t,
        not 0; padded with −1) and their weights (a point of the simplex).
    nearest : ndarray of int, shape (K,)
        −1 where the moved witness is used, else the row that bounds the class.
    where : str
        How error messages name the code.

    Raises
    ------
    SpherecodesError
        A witness that is not a point of the simplex over the orbit's other
        words, a moved witness claimed where it leaves the rows, or a
        nearest row outside [0, K) or the class itself.
    """
    k = len(w)
    indices, weights = np.asarray(indices, dtype=np.int64), np.asarray(weights, dtype=np.float64)
    nearest = np.asarray(nearest, dtype=np.int64)
    used = indices >= 0
    words = indices[used]
    if nearest.shape != (k,) or indices.ndim != 1 or weights.shape != indices.shape or not used.any():
        raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape")
    if (words >= prefix.words).any() or (words == 0).any() or (weights < 0).any() or (weights[~used] != 0).any() \
            or abs(weights.sum() - 1) > 1e-12:
        raise SpherecodesError(f"{where}: the certificate's witness is not a point of the simplex over the orbit's "
                               "other words (bad word or weight)")
    classes = np.arange(k)
    if ((nearest < -1) | (nearest >= k) | (nearest == classes)).any():
        raise SpherecodesError(f"{where}: the certificate names a nearest row outside [0, {k}) or the class itself")
    moved = nearest < 0
    if not moved_witness_fits(k, words)[moved].all():
        raise SpherecodesError(f"{where}: the certificate moves the orbit's witness to a class where it leaves the "
                               "rows")
    residual = w[0] - weights[used] @ prefix.rows_of(w, words)
    norm = float(np.sqrt(residual @ residual))
    feature = residual / norm if norm > 0 else np.full_like(residual, np.nan)
    hi = np.full(k, norm)
    rows = max(1, PAIR_ELEMENTS // w.shape[1])
    for start in range(0, k, rows):
        part = slice(start, start + rows)
        pairs = np.flatnonzero(~moved[part]) + start
        difference = w[pairs] - w[nearest[pairs]]
        hi[pairs] = np.sqrt(np.einsum("nd,nd->n", difference, difference))
    if norm == 0:  # a word repeated in the orbit: distance 0, no direction separates it
        return np.zeros(k), hi, feature
    scores = prefix.products(w, feature)
    scores[0] = -np.inf
    lo = min(float(w[0] @ feature - scores.max()), norm)
    return np.minimum(lo, hi), hi, feature


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
        moved = isinstance(orbit, SignOrbit) and (wt == wt[0]).all() and _moved_from_first(orbit, np.asarray(idx))
        return orbit if moved else None
    if not (isinstance(orbit, type(claimed)) and np.array_equal(orbit.generators, claimed.generators)):
        orbit = sign_orbit(w, claimed.generators)
    if orbit is None or not np.array_equal(orbit.coordinates, claimed.coordinates):
        raise SpherecodesError(f"{where}: the certificate's witnesses are class 0's moved by sign changes that do "
                               "not map the prototypes onto themselves")
    return orbit


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
    # A code that is one orbit of sign changes, each witness class 0's moved
    # by the isometry D that takes w_0 to w_k: then r_k = D r_0 (exactly, in
    # float64, so ‖r_k‖ = ‖r_0‖ bit for bit) and lo_k = lo_0, so only class
    # 0's interval needs the scan of all K prototypes.
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


def _prefix_interval(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from the certificate of the first K words of an orbit: the orbit checked
    from its generators (unless ``orbit`` is that one, already proved), then :func:`prefix_bounds`."""
    claimed = cert.orbit
    if not (isinstance(orbit, OrbitPrefix) and np.array_equal(orbit.generators, claimed.generators)):
        orbit = orbit_prefix(w, claimed.generators)
    if orbit is None:
        raise SpherecodesError(f"{where}: the certificate's witness is the orbit's class 0's, but the prototypes are "
                               "not the first K words of that orbit of sign changes")
    idx, wt = np.asarray(cert.support_indices), np.asarray(cert.support_weights, dtype=np.float64)
    if idx.ndim != 2 or idx.shape[0] != 1 or wt.shape != idx.shape or np.shape(cert.lo) != (len(w),) \
            or np.shape(cert.hi) != (len(w),) or cert.nearest is None:
        raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape {idx.shape}")
    lo, hi, _ = prefix_bounds(w, orbit, idx[0], wt[0], cert.nearest, where)
    return lo, hi


def _rotated_interval(w: np.ndarray, cert, orbit, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Every class's interval recomputed from a certificate carried through a rotation: the structured rows
    recovered from ``w`` and proved (unless ``orbit`` is that structure, already proved for these rows), their
    intervals recomputed from the witness, and carried to ``w`` (:meth:`spherecodes.rotated.Rotated.distance_bounds`)."""
    claimed = cert.orbit
    if not (isinstance(orbit, Rotated) and orbit.seed == claimed.seed
            and np.array_equal(orbit.generators, claimed.generators)):
        orbit = rotated_structure(w, claimed.seed, claimed.structure.reprove)
    if orbit is None:
        raise SpherecodesError(f"{where}: the certificate is carried through the rotation of seed {claimed.seed}, "
                               "but the prototypes are not the structured code turned by that rotation")
    inner = replace(cert, orbit=orbit.structure)
    x = orbit.coordinates
    if isinstance(orbit.structure, OrbitPrefix):
        lo, hi = _prefix_interval(x, inner, orbit.structure, where)
    elif isinstance(orbit.structure, Z4Orbit):
        lo, hi = z4_interval(x, inner, orbit.structure, where)
    else:
        lo, hi = _interval(x, inner, orbit.structure, where)
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
    orbit : SignOrbit, OrbitPrefix, Z4Orbit, None or "auto"
        The code's orbit of sign changes (or the one it is the first K words
        of) when already proved for these rows
        (:func:`spherecodes.orbit.sign_orbit`, :func:`spherecodes.orbit.orbit_prefix`),
        None for a generic code, ``"auto"`` to prove it here.  A certificate
        that holds only class 0's witness has its orbit checked against the
        rows in any case; a prefix's is re-derived by :func:`prefix_bounds`.

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
    carried = isinstance(getattr(cert, "orbit", None), Rotated)
    if carried:
        lo, hi = _rotated_interval(w, cert, orbit, where)
    elif isinstance(getattr(cert, "orbit", None), OrbitPrefix):
        lo, hi = _prefix_interval(w, cert, orbit, where)
    elif isinstance(getattr(cert, "orbit", None), Z4Orbit):
        lo, hi = z4_interval(w, cert, orbit, where)
    else:
        lo, hi = _interval(w, cert, orbit, where)
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
