"""Large-support certificates from the whole Gram matrix, without a QP solver (NumPy only).

A code with K <= d whose Gram matrix ``G = W Wᵀ`` is well conditioned (a
near-orthonormal basis, equiangular basis vectors, a frame close to tight)
has witnesses that spread over hundreds of prototypes: the nearest point of
the hull of the others is an interior point of a large face.  An active-set
solver adds those points one pivot at a time; here, instead, every class's
QP

    min over v in the simplex (v_k = 0) of  f(v) = ½ ‖w_k − Wᵀ v‖²

is solved by projected gradient steps with momentum, a block of classes at a
time, each step one product of the block's weights with ``G`` and one
projection onto the simplex per class (Duchi et al. 2008, by sorting).  The
gradient of ``f`` is ``G v − G[:, k]``; ``f`` restricted to the simplex is
``μ``-strongly convex with a ``L``-Lipschitz gradient, where by eigenvalue
interlacing ``μ >= λ_min(G)`` and ``L <= λ_max(G)`` for every k, so with
Nesterov's constant momentum ``(√L − √μ)/(√L + √μ)`` the error falls by at
least ``1 − √(μ/L)`` a step (Nesterov 2004, Thm 2.2.3): the whole spectrum
of ``G`` fixes how many steps every class needs, before any is taken.

Nothing here is trusted: each class's final weights are a point of the
simplex, and both ends of its interval are evaluated in float64 against all
K prototypes exactly as :func:`spherecodes.certificate.witness.verify_witness`
does, ``hi_k = ‖r_k‖`` and ``lo_k = min_{j≠k} <w_k − w_j, r_k/‖r_k‖>``
(Jiang et al. 2024, Lemma C.6).  Classes whose interval is wider than the
tolerance are left to the QP solver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["GRAM_MAX_CONDITION", "GRAM_MAX_K", "GRAM_MAX_STEPS", "GramBounds", "GramPass", "gram_applies",
           "gram_block_bytes", "gram_bytes"]

#: Largest K for the Gram pass: its (K, K) Gram matrix and eigenvalues
#: (K³ work) stay small next to the certificate of such a code by the QP.
GRAM_MAX_K = 8192

#: Largest ``λ_max(G)/λ_min(G)`` for the Gram pass.  The steps needed grow
#: like its square root: at 100 about 10 steps per decade of accuracy.
GRAM_MAX_CONDITION = 100.0

#: Most projected gradient steps per block before its open classes go to the QP.
GRAM_MAX_STEPS = 400

#: Steps between checks of the duality gaps of a block.
CHECK_EVERY = 5

#: A class stops when its duality gap is below this fraction of the tolerance
#: (the final float64 evaluation from the prototypes then meets the tolerance
#: with room for the rounding of the Gram products).
GAP_FRACTION = 0.01


@dataclass(frozen=True)
class GramBounds:
    """What the Gram pass proved for the classes it was given.

    Attributes
    ----------
    rows : ndarray of int
        The classes settled (interval within the tolerance).
    lo, hi : ndarray
        Their certified bounds, float64.
    support_indices, support_weights : ndarray, shape (len(rows), s)
        Their witnesses, padded with −1 / 0.
    """

    rows: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    support_indices: np.ndarray
    support_weights: np.ndarray


def gram_bytes(k: int) -> float:
    """Bytes of the Gram matrix and its eigenvalue work (two K × K float64 arrays)."""
    return 2 * 8.0 * k * k


def _bytes_per_row(k: int) -> float:
    # The weights, momentum point, gradient, sorted copy, cumulative sums and
    # the final residual scores: about eight K-vectors per class, float64.
    return 8 * 8.0 * k


def gram_block_bytes(k: int, budget_bytes: float) -> float:
    """Working memory of one block of :func:`gram_bounds` (at most about ``budget_bytes``)."""
    return _block_rows(k, budget_bytes) * _bytes_per_row(k)


def _block_rows(k: int, budget_bytes: float) -> int:
    return int(max(1, min(k, budget_bytes // _bytes_per_row(k))))


def gram_applies(k: int, d: int) -> bool:
    """Whether the Gram pass may settle classes of a (K, d) code: K <= d (so G can be definite) and K small enough.

    Examples
    --------
    >>> gram_applies(1000, 1000), gram_applies(2000, 256)
    (True, False)
    """
    return 2 < k <= min(d, GRAM_MAX_K)


class GramPass:
    """The Gram matrix of a code with K <= d, its spectrum, and the certificate of any of its classes from them.

    Building it costs one (K, K) product and a few Lanczos iterations;
    :meth:`bounds` then costs a few products of a block of classes with G
    per step.

    Parameters
    ----------
    w : ndarray, shape (K, d)
        float64 rows of (almost) unit norm.

    Attributes
    ----------
    usable : bool
        Whether the code qualifies: :func:`gram_applies` and a condition
        number at most :data:`GRAM_MAX_CONDITION`.  Otherwise :meth:`bounds`
        settles nothing.

    Examples
    --------
    The standard basis of R^4: each vector's nearest point of the hull of the
    other three is their centroid, at distance √(1 + 1/3).

    >>> b = GramPass(np.eye(4)).bounds(np.arange(4), tol=1e-9, block_bytes=2**20)
    >>> b.rows.tolist(), bool(np.allclose(b.hi, np.sqrt(4 / 3)))
    ([0, 1, 2, 3], True)
    """

    def __init__(self, w: np.ndarray):
        self.w = w
        k, d = w.shape
        self.usable = gram_applies(k, d)
        if not self.usable:
            return
        self.gram = w @ w.T
        largest, smallest = _extreme_eigenvalues(self.gram)
        # (Near-)singular: the steps would converge too slowly to settle anything.
        self.usable = smallest * GRAM_MAX_CONDITION >= largest
        self.step = 1.0 / largest
        self.momentum = (np.sqrt(largest) - np.sqrt(smallest)) / (np.sqrt(largest) + np.sqrt(smallest))

    def bounds(self, rows: np.ndarray, *, tol: float, block_bytes: float,
               progress: Callable[[int], None] | None = None) -> GramBounds:
        """Certify those of the classes ``rows`` whose interval comes within ``tol``, in blocks of ``block_bytes``.

        ``progress``, if given, is called after each block with the number of
        classes settled so far.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if not self.usable or rows.size == 0:
            return GramBounds(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0),
                              np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1)))
        settled_rows, los, his, pieces = [], [], [], []
        done = 0
        per_block = _block_rows(len(self.w), block_bytes)
        for start in range(0, len(rows), per_block):
            block = rows[start : start + per_block]
            weights = _solve(self.gram, block, self.step, self.momentum, tol)
            lo, hi = _evaluate(self.w, block, weights)
            good = (hi > 0) & (hi - lo <= tol)
            settled_rows.append(block[good])
            los.append(lo[good])
            his.append(hi[good])
            pieces.append(weights[good])
            done += int(good.sum())
            if progress is not None:
                progress(done)
        weights = np.concatenate(pieces)
        width = max(1, int((weights > 0).sum(axis=1).max(initial=0)))
        # The support of each row, in increasing index order (a stable sort of "is zero").
        order = np.argsort(weights <= 0, axis=1, kind="stable")[:, :width]
        chosen = np.take_along_axis(weights, order, axis=1)
        indices = np.where(chosen > 0, order, -1)
        return GramBounds(np.concatenate(settled_rows), np.concatenate(los), np.concatenate(his), indices,
                          np.where(indices >= 0, chosen, 0.0))


def _extreme_eigenvalues(gram: np.ndarray) -> tuple[float, float]:
    """Estimates of ``λ_max(G)`` (from above, within 0.1 %) and ``λ_min(G)`` by Lanczos iterations.

    They only set the step and the momentum (the certificate is checked
    apart), so a few products with G do instead of the K³ of a full
    eigendecomposition.  The start vector is fixed, so the result is
    deterministic.
    """
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    k = len(gram)
    start = np.random.default_rng(0).standard_normal(k)
    try:
        top = float(eigsh(gram, k=1, which="LA", tol=1e-4, v0=start, return_eigenvectors=False)[0])
        ceiling = top * (1.0 + 1e-3)
        # The smallest eigenvalue of G is the ceiling less the largest of ceiling·I − G.
        shifted = LinearOperator((k, k), matvec=lambda x: ceiling * x.ravel() - gram @ x.ravel(), dtype=gram.dtype)
        drop = float(eigsh(shifted, k=1, which="LA", tol=1e-4, v0=start, return_eigenvectors=False)[0])
        return ceiling, max(ceiling - drop * (1.0 + 1e-3), 0.0)
    except ArpackNoConvergence:
        eigenvalues = np.linalg.eigvalsh(gram)
        return float(eigenvalues[-1]), float(eigenvalues[0])


def _project(y: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``y`` onto the simplex with the entry ``own`` held at 0."""
    n, k = y.shape
    y = y.copy()
    y[np.arange(n), own] = -np.inf
    ordered = -np.sort(-y, axis=1)[:, : k - 1]  # the excluded entry sorts last
    sums = np.cumsum(ordered, axis=1) - 1.0
    count = np.arange(1, k)
    positive = ordered - sums / count > 0  # a prefix of each row in exact arithmetic
    last = k - 2 - np.argmax(positive[:, ::-1], axis=1)  # its last true entry
    threshold = sums[np.arange(n), last] / (last + 1)
    return np.maximum(y - threshold[:, None], 0.0)


def _solve(gram: np.ndarray, block: np.ndarray, step: float, momentum: float, tol: float) -> np.ndarray:
    """Weights of the classes ``block`` after projected gradient steps with momentum, until their gaps are small."""
    n = len(block)
    target = gram[block]  # G[k, :]: the linear term of each class's objective
    at = np.arange(n)
    weights = _project(step * target, block)  # one step from v = 0
    point = weights
    for iteration in range(1, GRAM_MAX_STEPS + 1):
        gradient = point @ gram - target
        new = _project(point - step * gradient, block)
        point = new + momentum * (new - weights)
        weights = new
        if iteration % CHECK_EVERY == 0:
            # Duality gap of the Frank–Wolfe kind in the units of the interval:
            # (max_j <w_j, r> − Σ v_j <w_j, r>)/‖r‖ with <w_j, r> = G[k, j] − (G v)_j.
            mixed = weights @ gram
            explained = (weights * target).sum(axis=1) - (weights * mixed).sum(axis=1)  # Σ v_j <w_j, r> (v_k = 0)
            squared = gram[block, block] - (weights * target).sum(axis=1) - explained  # ‖r‖²
            scores = target - mixed
            scores[at, block] = -np.inf
            with np.errstate(invalid="ignore", divide="ignore"):
                gap = (scores.max(axis=1) - explained) / np.sqrt(np.maximum(squared, 0.0))
            if (gap <= GAP_FRACTION * tol).all():
                break
    return weights / weights.sum(axis=1, keepdims=True)


def _evaluate(w: np.ndarray, block: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both ends of each class's interval from its weights, in float64 from the prototypes (not the Gram matrix)."""
    residual = w[block] - weights @ w
    hi = np.sqrt(np.einsum("nd,nd->n", residual, residual))
    with np.errstate(invalid="ignore", divide="ignore"):
        direction = residual / hi[:, None]
    scores = direction @ w.T
    scores[np.arange(len(block)), block] = -np.inf
    lo = np.einsum("nd,nd->n", w[block], direction) - scores.max(axis=1)
    lo = np.where(hi > 0, np.minimum(lo, hi), 0.0)
    return lo, hi
