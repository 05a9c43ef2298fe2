"""Exact constructions: codes whose separation is known in closed form.

Every function returns a float64 array of shape (K, d) whose rows are unit
vectors, in a fixed *canonical* orientation.  :func:`construct` dispatches by
method name and optionally applies a seeded Haar-random rotation, which changes
no separation number (all of them depend on inner products only).

Which construction applies where (Jiang et al. 2024, Theorem 3.3):

==============  =====================  ===================
method          sizes                  max-cos
==============  =====================  ===================
etf             K <= d + 1             -1/(K-1)
cross-polytope  d + 2 <= K <= 2d       0
polygon         d = 2                  cos(2π/K)
24-cell         d = 4, K = 24          1/2
600-cell        d = 4, K = 120         (1 + √5)/4
e8              d = 8, K = 240         1/2
==============  =====================  ===================
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .checks import check_sizes
from .errors import SpherecodesError
from .memory import require_memory
from .sphere import random_rotation

#: Closed-form methods, in the order ``auto`` prefers them.
CLOSED_FORMS = ("etf", "cross-polytope", "polygon", "24-cell", "600-cell", "e8")

ROTATIONS = ("canonical", "random")

#: Rows of the simplex ETF filled at a time (bounds the temporary masks).
ETF_BLOCK_ROWS = 1024


def simplex_etf(k: int, d: int | None = None) -> np.ndarray:
    """The simplex equiangular tight frame: K unit vectors with all cosines −1/(K−1).

    Works for every ``K <= d + 1``, including ``d = K − 1``: the K standard
    basis vectors of R^K are centred and mapped isometrically onto the
    (K−1)-dimensional sum-zero subspace through its Helmert basis, then padded
    with zeros up to d.  The Helmert basis is explicit, so no K×K
    eigen- or QR-decomposition is needed.

    Parameters
    ----------
    k : int
        Number of vectors, at least 2.
    d : int, optional
        Ambient dimension, at least K − 1 (default K − 1).

    Returns
    -------
    ndarray, shape (k, d)

    Examples
    --------
    >>> W = simplex_etf(4)
    >>> W.shape
    (4, 3)
    >>> G = W @ W.T
    >>> bool(np.allclose(G[~np.eye(4, dtype=bool)], -1 / 3))
    True
    """
    d = k - 1 if d is None else d
    d, k = check_sizes(d, k)
    if k > d + 1:
        raise SpherecodesError(f"the simplex ETF needs K <= d+1, got d={d}, K={k}")
    # The result is the only K x d array: filled in place, a block of rows at
    # a time, so that the peak is the result itself (K = d = 10^5 is 80 GB).
    require_memory(8.0 * k * d + 8.0 * ETF_BLOCK_ROWS * k, f"the simplex ETF (K={k}, d={d})")
    # Column j (1-based) of the Helmert basis is (1,...,1, -j, 0,...,0)/sqrt(j(j+1))
    # with j ones; the coordinates of e_i - 1/K in that basis are its i-th row.
    # Rows of the centred basis have squared norm (K-1)/K; rescaled to unit length.
    j = np.arange(1, k, dtype=float)
    norm = np.sqrt(j * (j + 1))
    unit = math.sqrt(k / (k - 1))
    above, diagonal = 1.0 / norm * unit, -j / norm * unit
    etf = np.zeros((k, d))
    for start in range(0, k, ETF_BLOCK_ROWS):
        rows = np.arange(start, min(k, start + ETF_BLOCK_ROWS))
        # Row i holds above[j-1] in every column j > i, and diagonal[i-1] in column i.
        np.copyto(etf[start : start + len(rows), : k - 1], above, where=rows[:, None] < j[None, :])
        ones = rows[rows >= 1]
        etf[ones, ones - 1] = diagonal[ones - 1]
    return etf


def cross_polytope(k: int, d: int) -> np.ndarray:
    """K vertices of the cross-polytope {±e_i}: max-cos 0 and ρ = 1 for d+2 <= K <= 2d.

    The canonical choice is ``e_1 … e_d`` followed by ``−e_1 … −e_{K−d}``.

    Parameters
    ----------
    k : int
        Number of vertices, ``d + 2 <= k <= 2d`` (where it is optimal; any
        ``k <= 2d`` is accepted).
    d : int
        Dimension.

    Examples
    --------
    >>> cross_polytope(5, 3)
    array([[ 1.,  0.,  0.],
           [ 0.,  1.,  0.],
           [ 0.,  0.,  1.],
           [-1., -0., -0.],
           [-0., -1., -0.]])
    """
    d, k = check_sizes(d, k)
    if k > 2 * d:
        raise SpherecodesError(f"the cross-polytope has 2d = {2 * d} vertices, K={k} is too many")
    require_memory(8.0 * k * d, f"the cross-polytope (K={k}, d={d})")
    eye = np.eye(d)
    return np.vstack([eye, -eye[: k - d]]) if k > d else eye[:k].copy()


def regular_polygon(k: int) -> np.ndarray:
    """The regular K-gon on the unit circle (d = 2): max-cos cos(2π/K).

    Examples
    --------
    >>> regular_polygon(4).round(12)
    array([[ 1.,  0.],
           [ 0.,  1.],
           [-1.,  0.],
           [-0., -1.]])
    """
    check_sizes(2, k)
    require_memory(16.0 * k, f"the regular polygon (K={k})")
    angles = 2 * np.pi * np.arange(k) / k
    return np.column_stack([np.cos(angles), np.sin(angles)])


def cell_24() -> np.ndarray:
    """The 24 vertices of the 24-cell in R^4 (the D4 roots): max-cos 1/2.

    They are the permutations of (±1, ±1, 0, 0)/√2.

    Examples
    --------
    >>> W = cell_24()
    >>> W.shape, bool(np.isclose(np.max(W @ W.T - 2 * np.eye(24)), 0.5))
    ((24, 4), True)
    """
    return _signed_pairs(4) / math.sqrt(2)


def _signed_pairs(d: int) -> np.ndarray:
    """All vectors ±e_i ± e_j (i < j) of R^d: the D_d root system."""
    rows = []
    for i, j in itertools.combinations(range(d), 2):
        for si, sj in itertools.product((1.0, -1.0), repeat=2):
            v = np.zeros(d)
            v[i], v[j] = si, sj
            rows.append(v)
    return np.array(rows)


def cell_600() -> np.ndarray:
    """The 120 vertices of the 600-cell in R^4: max-cos (1+√5)/4, the Tammes optimum.

    8 points ±e_i, 16 points (±½, ±½, ±½, ±½), and the 96 even permutations
    of ½(±φ, ±1, ±1/φ, 0) with φ the golden ratio.

    Examples
    --------
    >>> W = cell_600()
    >>> W.shape
    (120, 4)
    >>> bool(np.isclose(np.max(W @ W.T - 2 * np.eye(120)), (1 + 5 ** 0.5) / 4))
    True
    """
    phi = (1 + math.sqrt(5)) / 2
    axes = np.vstack([np.eye(4), -np.eye(4)])
    halves = np.array(list(itertools.product((0.5, -0.5), repeat=4)))
    even_perms = [p for p in itertools.permutations(range(4)) if _is_even(p)]
    icosian = []
    for signs in itertools.product((1.0, -1.0), repeat=3):
        base = 0.5 * np.array([signs[0] * phi, signs[1] * 1.0, signs[2] / phi, 0.0])
        for perm in even_perms:
            icosian.append(base[list(perm)])
    return np.vstack([axes, halves, np.array(icosian)])


def _is_even(perm: tuple[int, ...]) -> bool:
    """Whether a permutation has an even number of inversions."""
    return sum(1 for a, b in itertools.combinations(perm, 2) if a > b) % 2 == 0


def e8_roots() -> np.ndarray:
    """The 240 roots of E8, normalised: max-cos 1/2, the optimal kissing arrangement in R^8.

    112 roots ±e_i ± e_j and 128 roots (±½)^8 with an even number of minus
    signs, all of norm √2 before normalisation.

    Examples
    --------
    >>> W = e8_roots()
    >>> W.shape, bool(np.isclose(np.max(W @ W.T - 2 * np.eye(240)), 0.5))
    ((240, 8), True)
    """
    halves = np.array([s for s in itertools.product((0.5, -0.5), repeat=8) if sum(x < 0 for x in s) % 2 == 0])
    return np.vstack([_signed_pairs(8), halves]) / math.sqrt(2)


def applicable_closed_forms(d: int, k: int) -> list[str]:
    """Closed-form methods that construct a K-point code in R^d.

    Examples
    --------
    >>> applicable_closed_forms(4, 24)
    ['24-cell']
    >>> applicable_closed_forms(2, 3)
    ['etf', 'polygon']
    """
    d, k = check_sizes(d, k)
    methods = []
    if k <= d + 1:
        methods.append("etf")
    if d + 2 <= k <= 2 * d:
        methods.append("cross-polytope")
    if d == 2:
        methods.append("polygon")
    if (d, k) == (4, 24):
        methods.append("24-cell")
    if (d, k) == (4, 120):
        methods.append("600-cell")
    if (d, k) == (8, 240):
        methods.append("e8")
    return methods


#: Closed forms that are provably optimal for max-cos and for ρ alike whenever
#: they apply: the simplex meets the bound −1/(K−1) (K <= d + 1), part of the
#: cross-polytope meets Rankin's bound 0 (d + 2 <= K <= 2d), and in the plane
#: the regular polygon is optimal (Jiang et al. 2024, Thm 3.3).
OPTIMAL_CLOSED_FORMS = ("etf", "cross-polytope", "polygon")


def optimal_closed_form(d: int, k: int) -> str | None:
    """The closed form that is a provably optimal K-point code in R^d, or None.

    The one rule every part of the package uses to decide when no optimiser
    is needed: the first of :data:`OPTIMAL_CLOSED_FORMS` that applies.
    (d = 1 is left to the solvers: on S^0 max-cos is 1 for any K >= 3.)

    Examples
    --------
    >>> optimal_closed_form(3, 4), optimal_closed_form(3, 6), optimal_closed_form(2, 7), optimal_closed_form(3, 12)
    ('etf', 'cross-polytope', 'polygon', None)
    """
    optimal = [m for m in applicable_closed_forms(d, k) if m in OPTIMAL_CLOSED_FORMS]
    return optimal[0] if optimal else None


def closed_form_rho(d: int, k: int) -> float | None:
    """ρ (the smallest one-vs-rest distance) of the optimal closed form for (d, K), or None.

    K/(K−1) for the simplex (the nearest point of the hull of the others is
    their centroid), 1 for the cross-polytope with K >= d + 2 (the origin lies
    in the hull of the others), and 1 − cos(2π/K) for the polygon.

    Examples
    --------
    >>> closed_form_rho(99, 100), closed_form_rho(50, 100), closed_form_rho(16, 100)
    (1.0101010101010102, 1.0, None)
    >>> round(closed_form_rho(2, 6), 12)
    0.5
    """
    method = optimal_closed_form(d, k)
    if method is None:
        return None
    if method == "etf":
        return k / (k - 1)
    if method == "cross-polytope":
        return 1.0
    return 1 - math.cos(2 * math.pi / k)


def construct(method: str, d: int, k: int, *, rotation: str = "canonical", seed: int = 0) -> np.ndarray:
    """Build a closed-form code by name, in canonical orientation or randomly rotated.

    Parameters
    ----------
    method : str
        One of :data:`CLOSED_FORMS`.
    d, k : int
        Dimension and number of prototypes; the method must apply to them.
    rotation : {"canonical", "random"}
        ``"random"`` multiplies by :func:`random_rotation` ``(d, seed)``.
    seed : int
        Seed of the random rotation.

    Returns
    -------
    ndarray, shape (k, d), float64 with unit rows.

    Examples
    --------
    >>> W = construct("etf", d=11, k=12, rotation="random", seed=3)
    >>> W.shape, bool(np.allclose(np.linalg.norm(W, axis=1), 1))
    ((12, 11), True)
    """
    d, k = check_sizes(d, k)
    if rotation not in ROTATIONS:
        raise SpherecodesError(f"rotation must be one of {', '.join(ROTATIONS)}, got {rotation!r}")
    if method not in CLOSED_FORMS:
        raise SpherecodesError(f"unknown closed form {method!r}; closed forms are {', '.join(CLOSED_FORMS)}")
    applicable = applicable_closed_forms(d, k)
    if method not in applicable:
        hint = f"closed forms for these sizes: {', '.join(applicable)}" if applicable else \
            "no closed form applies to these sizes"
        raise SpherecodesError(f"method {method!r} does not apply to d={d}, K={k}; {hint}")
    builders = {"etf": lambda: simplex_etf(k, d), "cross-polytope": lambda: cross_polytope(k, d),
                "polygon": lambda: regular_polygon(k), "24-cell": cell_24, "600-cell": cell_600, "e8": e8_roots}
    points = builders[method]()
    if rotation == "random":
        points = points @ random_rotation(d, seed)
        # Rotation preserves norms only up to rounding; restore exact unit rows.
        points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points
