"""The description object of a structured code, and the helpers every family shares.

A :class:`StructuredCode` carries the exact parameters of a construction
(dimension, size, max-cos as a :class:`fractions.Fraction` — or, for the few
codes with irrational inner products, an exact
:class:`~spherecodes.structured.surd.Surd` —, minimum distance,
symmetry, citation) and a *construction* object that builds the points only
when asked. Families (``binary``, ``kerdock``, ``lattices``, ``derived``, ``srg``, ``etf``) each
provide a construction with four methods:

``points(k)``
    the first k points in the family's preferred order (k = None: all), in
    the native dimension, float64 unit rows;
``max_cos_bound(k)``
    an upper bound on the max-cos of those k points, from the structure alone
    (cheap: no points are built), used to rank codes;
``max_cos_for(k)``
    the exact max-cos of those k points (may build or enumerate them);
``spectrum()``
    the inner-product spectrum seen from every point, or None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.memory import require_memory

# Largest Gram block formed at once (rows × cols): 4·10^6 float64 = 32 MB, so
# that no K×K matrix is ever materialised for large K.
_BLOCK_ENTRIES = 4_000_000
#: Bytes of points up to which the shortened and punctured codes are listed.
MAX_POINTS_BYTES = 4 * 2**30


@dataclass(frozen=True)
class StructuredCode:
    """An algebraic spherical code with exact parameters; its points are built on request.

    Attributes
    ----------
    name : str
        Human-readable name, e.g. ``"extended BCH [64,10,28]"``.
    family : str
        ``"bch"``, ``"reed-muller"``, ``"golay"``, ``"kerdock"``, ``"lattice"``, ``"derived"``, ``"srg"`` or
        ``"etf"``.
    d : int
        Ambient dimension of the points (≥ ``native_d``; zero padding beyond it).
    size : int
        Number of points N.
    max_cos : Fraction or Surd
        Largest inner product between distinct points: exact when
        ``max_cos_exact``, otherwise an upper bound (e.g. the BCH bound). A
        :class:`~spherecodes.structured.surd.Surd` (an exact square root) where
        it is irrational, as for some equiangular tight frames.
    native_d : int
        Dimension the construction lives in.
    min_distance : int or None
        True minimum Hamming distance, for binary codes.
    max_cos_exact : bool
        Whether ``max_cos`` (and ``min_distance``) is the true value.
    transitive : bool
        True when a symmetry group of the code is known to act transitively on
        its points (False means: not claimed).
    orbits : int or None
        Number of point orbits under the known symmetry group, where known.
    citation : str
        Where the construction and its parameters are published.
    construction : object
        Builds the points (see the module docstring).

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> code = e8_roots()
    >>> code.d, code.size, code.max_cos
    (8, 240, Fraction(1, 2))
    >>> code.points(10).shape
    (10, 8)
    """

    name: str
    family: str
    d: int
    size: int
    max_cos: Fraction
    native_d: int
    min_distance: int | None = None
    max_cos_exact: bool = True
    transitive: bool = False
    orbits: int | None = None
    citation: str = ""
    construction: Any = field(default=None, repr=False, compare=False)

    def _check_k(self, k: int | None) -> int:
        k = self.size if k is None else int(k)
        if not 1 <= k <= self.size:
            raise SpherecodesError(f"{self.name} has {self.size} points; cannot take K = {k}")
        return k

    def points(self, k: int | None = None) -> np.ndarray:
        """The first k points (all when k is None) as (k, d) float64 unit rows.

        The k points are the family's deterministic choice (a subcode, whole
        bases, or a greedy far-apart subset); memory is O(k·d).

        Examples
        --------
        >>> from spherecodes.structured import cross_polytope
        >>> cross_polytope(3).points().tolist()[:2]
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
        """
        k = self._check_k(k)
        require_memory(8.0 * k * self.d, f"{k:,} points of {self.name} in R^{self.d} (float64)",
                       hint="ask for fewer points")
        pts = self.construction.points(k)
        if self.d > self.native_d:
            pts = np.concatenate([pts, np.zeros((len(pts), self.d - self.native_d))], axis=1)
        return pts

    def build_cost(self) -> tuple[float, float] | None:
        """(seconds, bytes) that building the points is expected to take, where it takes long; None: milliseconds.

        The seconds are timed on a sample of the build's own work on this
        machine (a rough figure), the bytes are the build's peak arrays.

        Examples
        --------
        >>> from spherecodes.structured import e8_roots
        >>> e8_roots().build_cost() is None
        True
        """
        cost = getattr(self.construction, "cost", None)
        return None if cost is None else cost()

    def sign_orbit(self, k: int | None = None) -> bool:
        """Whether ``points(k)`` are, by construction, one orbit of a group of sign changes of the coordinates,
        or the first K words of one in order.

        The first 2^t words of a linear binary code are all the words of a
        t-dimensional subcode: sign changes by its words act transitively
        (:mod:`spherecodes.orbit`, which proves it from the points); the
        first K < 2^t words are a prefix of that orbit.

        Examples
        --------
        >>> from spherecodes.structured import bch_code, e8_roots
        >>> bch_code(6, 21).sign_orbit(1024), bch_code(6, 21).sign_orbit(1000), e8_roots().sign_orbit()
        (True, True, False)
        """
        k = self._check_k(k)
        orbit = getattr(self.construction, "sign_orbit", None)
        return bool(orbit is not None and orbit(k))

    def max_cos_for(self, k: int | None = None) -> Fraction:
        """Exact max-cos of ``points(k)`` (may be smaller than the parent's ``max_cos``).

        Examples
        --------
        >>> from spherecodes.structured import bch_code
        >>> code = bch_code(6, 21)          # [64,18,22]: max-cos 5/16
        >>> code.max_cos, code.max_cos_for(1000)   # 1000 words of the [64,10,28] subcode
        (Fraction(5, 16), Fraction(1, 8))
        """
        k = self._check_k(k)
        if k < 2:
            return Fraction(-1)
        return self.construction.max_cos_for(k)

    def max_cos_bound(self, k: int | None = None) -> Fraction:
        """Upper bound on the max-cos of ``points(k)`` from the structure alone (nothing is built).

        Examples
        --------
        >>> from spherecodes.structured import kerdock_code
        >>> kerdock_code(64).max_cos_bound(100)   # inside one orthonormal basis pair
        Fraction(0, 1)
        """
        k = self._check_k(k)
        if k < 2:
            return Fraction(-1)
        return self.construction.max_cos_bound(k)

    def spectrum(self) -> dict[Fraction, int] | None:
        """Inner products seen from any one point (itself included) → counts, or None.

        Given only when every point sees the same spectrum (a distance-invariant
        code, e.g. any linear binary code or transitive code).

        Examples
        --------
        >>> from spherecodes.structured import e8_roots
        >>> sorted(e8_roots().spectrum().items())
        [(Fraction(-1, 1), 1), (Fraction(-1, 2), 56), (Fraction(0, 1), 126), (Fraction(1, 2), 56), (Fraction(1, 1), 1)]
        """
        return self.construction.spectrum()

    def embedded(self, d: int) -> StructuredCode:
        """The same code in R^d, d ≥ native_d, padded with zero coordinates.

        Examples
        --------
        >>> from spherecodes.structured import e8_roots
        >>> e8_roots().embedded(10).points(1).shape
        (1, 10)
        """
        if d < self.native_d:
            raise SpherecodesError(f"{self.name} needs d ≥ {self.native_d}, got d = {d}")
        return replace(self, d=int(d))


def exact_fraction(x: float, max_denominator: int = 10_000) -> Fraction:
    """The small-denominator rational a float64 inner product stands for (checked to 1e-9).

    Every code here has rational inner products with small denominators, so a
    float64 value determines its exact value; a value that is not within 1e-9 of
    such a rational is an error, not something to round.

    Examples
    --------
    >>> exact_fraction(1 / 3)
    Fraction(1, 3)
    """
    f = Fraction(float(x)).limit_denominator(max_denominator)
    if abs(float(f) - float(x)) > 1e-9:
        raise ArithmeticError(f"{x!r} is not a small-denominator rational")
    return f


def exact_value(x: float, values=()) -> Fraction:
    """The exact value a float64 inner product stands for: one of ``values`` if given, else a small rational.

    ``values`` lists a code's exact inner products (Fractions or
    :class:`~spherecodes.structured.surd.Surd`); the one within 1e-9 of x is
    returned. Without them x must be a small-denominator rational
    (:func:`exact_fraction`).

    Examples
    --------
    >>> from spherecodes.structured.surd import exact_sqrt
    >>> str(exact_value(0.2773500981126146, (Fraction(-1), exact_sqrt(Fraction(1, 13)))))
    '1/√13'
    """
    if not values:
        return exact_fraction(x)
    for value in values:
        if abs(float(value) - float(x)) <= 1e-9:
            return value
    raise ArithmeticError(f"{x!r} is none of the code's inner products {', '.join(map(str, values))}")


def blocked_max_cos(points: np.ndarray, rows: np.ndarray | None = None) -> float:
    """Largest off-diagonal inner product of ``points`` (rows: only these rows against all), in blocks.

    Examples
    --------
    >>> blocked_max_cos(np.eye(3))
    0.0
    """
    n = len(points)
    rows = np.arange(n) if rows is None else np.asarray(rows)
    step = max(1, _BLOCK_ENTRIES // max(n, 1))
    best = -np.inf
    for s in range(0, len(rows), step):
        idx = rows[s : s + step]
        g = points[idx] @ points.T
        g[np.arange(len(idx)), idx] = -np.inf  # drop each row's inner product with itself
        best = max(best, float(g.max()))
    return best


def spectrum_of_rows(points: np.ndarray, rows: np.ndarray, values=()) -> list[dict[Fraction, int]]:
    """The exact inner-product spectrum of each listed row against all points (blocked).

    ``values``: the code's exact inner products where they are not all small
    rationals (see :func:`exact_value`).

    Examples
    --------
    >>> spectrum_of_rows(np.eye(2), np.array([0]))
    [{Fraction(0, 1): 1, Fraction(1, 1): 1}]
    """
    out = []
    step = max(1, _BLOCK_ENTRIES // max(len(points), 1))
    for s in range(0, len(rows), step):
        g = points[rows[s : s + step]] @ points.T
        for line in g:
            found, counts = np.unique(np.round(line, 9), return_counts=True)
            out.append({exact_value(v, values): int(c) for v, c in zip(found, counts)})
    return out


def greedy_far_order(points: np.ndarray, k: int, stop_at: float) -> tuple[np.ndarray, float]:
    """Indices of k points chosen greedily far apart, and the largest inner product they reach.

    Start from point 0; repeatedly add the unchosen point whose largest inner
    product with the chosen ones is smallest (ties: lowest index, so the choice
    is deterministic). Once that value reaches ``stop_at`` (the parent's
    max-cos, which no choice can beat from then on) the rest are taken in
    index order, which bounds the work. Memory is O(N) beyond the points.

    Examples
    --------
    >>> pts = np.array([[1.0, 0.0], [0.8, 0.6], [-1.0, 0.0], [0.0, 1.0]])
    >>> greedy_far_order(pts, 3, stop_at=0.8)
    (array([0, 2, 3]), 0.0)
    """
    n = len(points)
    chosen = np.zeros(n, dtype=bool)
    order = [0]
    chosen[0] = True
    worst = points @ points[0]
    reached = -math.inf
    while len(order) < k:
        cand = np.where(chosen, np.inf, worst)
        j = int(np.argmin(cand))
        value = float(cand[j])
        if value >= stop_at - 1e-12:
            rest = np.flatnonzero(~chosen)[: k - len(order)]
            order.extend(int(i) for i in rest)
            reached = max(reached, stop_at)
            break
        reached = max(reached, value)
        order.append(j)
        chosen[j] = True
        np.maximum(worst, points @ points[j], out=worst)
    return np.array(order[:k]), reached


@dataclass(frozen=True)
class PointSetConstruction:
    """A code given by a function that builds all its (moderately many) points.

    K < N points are chosen by :func:`greedy_far_order`; the points are built
    once per call (N·d float64, N ≤ ~2·10^5 here). ``values``: the exact inner
    products, where they are not all small rationals (:func:`exact_value`).
    ``cost``: where building takes long, a function returning its expected
    (seconds, bytes) (:meth:`StructuredCode.build_cost`).

    Examples
    --------
    >>> c = PointSetConstruction(build=lambda: np.eye(3), max_cos=Fraction(0), distance_invariant=True)
    >>> c.points(2).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """

    build: Any
    max_cos: Fraction
    distance_invariant: bool = False
    values: tuple = ()
    cost: Any = None

    def points(self, k: int) -> np.ndarray:
        pts = self.build()
        if k >= len(pts):
            return pts
        idx, _ = greedy_far_order(pts, k, float(self.max_cos))
        return pts[idx]

    def max_cos_bound(self, k: int) -> Fraction:
        return self.max_cos

    def max_cos_for(self, k: int) -> Fraction:
        pts = self.build()
        if k >= len(pts):
            return self.max_cos
        idx, reached = greedy_far_order(pts, k, float(self.max_cos))
        return exact_value(reached, self.values)

    def spectrum(self) -> dict[Fraction, int] | None:
        pts = self.build()
        if self.distance_invariant:
            return spectrum_of_rows(pts, np.array([0]), self.values)[0]
        if len(pts) > 5000:
            return None
        # Not known to be distance-invariant: report a spectrum only if every
        # point really sees the same one.
        spectra = spectrum_of_rows(pts, np.arange(len(pts)), self.values)
        return spectra[0] if all(s == spectra[0] for s in spectra) else None


def gram_points(gram: np.ndarray, rank: int) -> np.ndarray:
    """Unit rows with the given Gram matrix (positive semidefinite, of the given rank), as (N, rank) float64.

    Pivoted Cholesky (LAPACK ``dpstrf``) factors ``gram`` in place: its rows
    are the points in an orthonormal basis of their span. A rank other than
    ``rank``, or rows that are not unit vectors, mean the matrix is not what
    its construction claims, and raise.

    Examples
    --------
    >>> x = gram_points(np.array([[1.0, -0.5, -0.5], [-0.5, 1.0, -0.5], [-0.5, -0.5, 1.0]]), 2)
    >>> x.shape, round(float(x[0] @ x[1]), 12)
    ((3, 2), -0.5)
    """
    from scipy.linalg import lapack

    factor, pivots, found, info = lapack.dpstrf(gram, lower=1, tol=1e-9, overwrite_a=1)
    if info < 0 or found != rank:
        raise ArithmeticError(f"the Gram matrix has rank {found}, not {rank}")
    points = np.empty((len(gram), rank))
    points[pivots - 1] = np.tril(factor[:, :rank])
    norms = np.linalg.norm(points, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-9):
        raise ArithmeticError("the rows of the factor are not unit vectors: the matrix is not a Gram matrix of them")
    return points / norms[:, None]


def gram_points_by_blocks(gram_block, n: int, rank: int, *, block_rows: int = 1024, check_rows: int = 64,
                          progress=None) -> np.ndarray:
    """Unit rows whose Gram matrix has blocks ``gram_block(rows, cols)``, of the given rank, never forming it whole.

    A basis of ``rank`` points is chosen by pivoted Cholesky (LAPACK
    ``dpstrf``) of the Gram matrix of a fixed sample of 2·rank points (every
    point when n ≤ 2·rank); with G[P, P] = L·Lᵀ on that basis P, the points
    are X = G[:, P]·L⁻ᵀ, since a positive semidefinite matrix of rank
    ``rank`` equals G[:, P]·G[P, P]⁻¹·G[P, :] (its Schur complement
    vanishes), computed ``block_rows`` rows at a time by one triangular solve
    (BLAS ``dtrsm``).  Rows that are not unit vectors (G has a larger rank,
    or the sample does not span), or ``check_rows`` rows whose products with
    every point miss G by more than 1e-9, raise ArithmeticError.
    ``progress``, if given, is called with the fraction of rows done.

    Examples
    --------
    >>> g = np.array([[1.0, -0.5, -0.5], [-0.5, 1.0, -0.5], [-0.5, -0.5, 1.0]])
    >>> x = gram_points_by_blocks(lambda r, c: g[np.ix_(r, c)], 3, 2)
    >>> x.shape, round(float(x[0] @ x[1]), 12)
    ((3, 2), -0.5)
    """
    from scipy.linalg import blas, lapack

    everyone = np.arange(n)
    # A fixed sample (deterministic), twice the rank: its best-conditioned basis is the pivots.
    sample = everyone if n <= 2 * rank else np.sort(np.random.default_rng(0).choice(n, 2 * rank, replace=False))
    factor, pivots, found, info = lapack.dpstrf(np.asarray(gram_block(sample, sample), dtype=np.float64),
                                                lower=1, tol=1e-9, overwrite_a=1)
    if info < 0 or found != rank:
        raise ArithmeticError(f"the Gram matrix has rank {found} on a sample of {len(sample)} points, not {rank}")
    basis = sample[pivots[:rank] - 1]
    lower = np.asfortranarray(np.tril(factor[:rank, :rank]))
    del factor
    points = np.empty((n, rank))
    for start in range(0, n, block_rows):
        rows = everyone[start : start + block_rows]
        points[rows] = gram_block(rows, basis)
        # In place: the rows' block, seen transposed, is a Fortran-ordered (rank, rows) matrix B; L·Y = B.
        solved = blas.dtrsm(1.0, lower, points[rows[0] : rows[-1] + 1].T, side=0, lower=1, overwrite_b=1)
        if not np.shares_memory(solved, points):
            points[rows] = solved.T
        if progress is not None:
            progress(min(n, start + block_rows) / n)
    norms = np.sqrt(np.einsum("ij,ij->i", points, points))  # no (n, rank) temporary
    if np.abs(norms - 1.0).max() > 1e-9:
        raise ArithmeticError(f"the Gram matrix has rank above {rank} (a row of norm {norms.min():.6g})")
    points /= norms[:, None]
    checked = everyone[:: max(1, n // check_rows)][:check_rows]
    error = np.abs(points[checked] @ points.T - gram_block(checked, everyone)).max()
    if error > 1e-9:
        raise ArithmeticError(f"the points miss their Gram matrix by {error:.3g}")
    return points


def _householder_drop(vectors: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Coordinates of vectors ⊥ p in a fixed orthonormal basis of p⊥ (a Householder reflection).

    The reflection H = I − 2vvᵀ/|v|², v = p + sign(p_last)·e_last, sends p to
    ∓e_last; for x ⊥ p, Hx has last coordinate 0 and the others are x in the
    basis {H e_1, …, H e_(d−1)} of p⊥ — explicit and deterministic.
    """
    v = p.copy()
    v[-1] += 1.0 if p[-1] >= 0 else -1.0
    hx = vectors - np.outer(vectors @ v, 2.0 * v / (v @ v))
    return hx[:, :-1]


def derive_points(points: np.ndarray, fixed: np.ndarray, alphas: list[float]) -> np.ndarray:
    """The points q with ⟨q, p_i⟩ = α_i for every fixed p_i, projected on span(p_i)⊥ and normalised.

    The result lives in R^(d − f) (f fixed points, linearly independent),
    expressed in an explicit orthonormal basis (one Householder reflection per
    fixed point). For a code with max-cos c and one fixed point the result has
    max-cos ≤ (c − α²)/(1 − α²) (Conway & Sloane 1999, ch. 1 §2).

    Examples
    --------
    >>> sq = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    >>> derive_points(sq, sq[:1], [0.0]).tolist()   # the two points ⊥ (1, 0)
    [[-1.0], [1.0]]
    """
    fixed = np.atleast_2d(np.asarray(fixed, dtype=np.float64))
    ips = points @ fixed.T
    keep = np.all(np.abs(ips - np.asarray(alphas, dtype=np.float64)) < 1e-9, axis=1)
    q = points[keep]
    rest = fixed.copy()
    for _ in range(len(fixed)):
        p = rest[0] / np.linalg.norm(rest[0])
        q = q - np.outer(q @ p, p)
        q = _householder_drop(q / np.linalg.norm(q, axis=1, keepdims=True), p)
        rest = rest[1:] - np.outer(rest[1:] @ p, p)
        if len(rest):
            rest = _householder_drop(rest, p)
    return q
