"""Two-distance sets from strongly regular graphs: the standard basis projected on an eigenspace.

A strongly regular graph SRG(v, k, λ, μ) has adjacency eigenvalues k, r and
s (r > 0 > s) with multiplicities 1, f and g. The orthogonal projection E_θ
on the eigenspace of θ ∈ {r, s} maps the standard basis to v vectors of equal
norm in a space of dimension m_θ; normalised, their inner products are

* θ/k between adjacent vertices,
* −(1 + θ)/(v − k − 1) between non-adjacent ones

(E_θ is a polynomial in the adjacency matrix A, and E_θ·A = θ·E_θ; Delsarte,
Goethals & Seidel 1977, "Spherical codes and designs", §9; Brouwer & Haemers
2012, Spectra of Graphs, §9.1). These are exact rationals when θ is an
integer. This module builds every such code the same way: the exact Gram
matrix I + (θ/k)·A + (−(1 + θ)/(v − k − 1))·(J − I − A) is factored by a
pivoted Cholesky decomposition (LAPACK ``dpstrf``), whose rank must be m_θ;
its rows are the points in an orthonormal basis of the eigenspace.

The graphs are built from their definitions: the Petersen and Clebsch
graphs, the Schläfli graph (the complement of GQ(2, 4) below), the Gewirtz and Higman–Sims graphs from the Steiner system
S(3, 6, 22), the McLaughlin graph and its second subconstituent
SRG(162, 56, 10, 24) from S(4, 7, 23) (both Steiner systems from the extended
Golay code), and the collinearity
graph of the generalised quadrangle Q⁻(5, q), whose eigenspace of −(q² + 1)
gives the *isotropic subspaces* codes of Cohn & Kumar (2007, Table 1):
(q + 1)(q³ + 1) points in R^(q(q² − q + 1)) with inner products −1/q and
1/q², for every prime power q.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.memory import format_bytes, physical_memory_bytes, require_memory
from spherecodes.structured.description import PointSetConstruction, StructuredCode, gram_points, gram_points_by_blocks
from spherecodes.structured.gfq import finite_field, prime_power
from spherecodes.structured.lattices import golay_codewords

COHN_KUMAR = "Cohn & Kumar (2007), Universally optimal distribution of points on spheres, J. AMS 20, Table 1"
BROUWER = "Brouwer & Van Maldeghem (2022), Strongly Regular Graphs, ch. 10"
DGS = "Delsarte, Goethals & Seidel (1977), Spherical codes and designs, §9"

#: Largest Gram matrix (bytes) formed whole and factored by LAPACK (every named graph, and the isotropic codes
#: up to q = 5); a larger code is built in blocks, the faster from q = 7 on (docs/structured.md, "Families").
MAX_GRAM_BYTES = 2**25
#: Multiply-adds (v·m²) from which building a code in blocks takes seconds: its cost is estimated and shown.
SLOW_BUILD_WORK = 10**10
#: Rows of the points computed at once when the Gram matrix is not formed (one triangular solve each).
BLOCK_ROWS = 1024


@dataclass(frozen=True)
class SRGParameters:
    """The parameters (v, k, λ, μ) of a strongly regular graph and its exact spectrum.

    Examples
    --------
    >>> p = SRGParameters(10, 3, 0, 1)       # the Petersen graph
    >>> p.eigenvalues(), p.multiplicities()
    ((1, -2), (5, 4))
    >>> p.inner_products(-2)                # (adjacent, non-adjacent)
    (Fraction(-2, 3), Fraction(1, 6))
    """

    v: int
    k: int
    lam: int
    mu: int

    def eigenvalues(self) -> tuple[int, int]:
        """(r, s): the roots of x² − (λ − μ)x − (k − μ), which must be integers here."""
        b, c = self.lam - self.mu, self.k - self.mu
        disc = b * b + 4 * c
        root = math.isqrt(disc)
        if root * root != disc or (b + root) % 2:
            raise SpherecodesError(f"SRG{self.as_tuple()} has irrational eigenvalues; its codes are not rational")
        return (b + root) // 2, (b - root) // 2

    def multiplicities(self) -> tuple[int, int]:
        """(f, g): the multiplicities of r and s, from trace(A) = 0 and f + g = v − 1."""
        r, s = self.eigenvalues()
        f = Fraction(-self.k - s * (self.v - 1), r - s)
        if f.denominator != 1:
            raise SpherecodesError(f"SRG{self.as_tuple()} is not feasible: multiplicity {f}")
        return int(f), self.v - 1 - int(f)

    def dimension(self, theta: int) -> int:
        """The multiplicity of the eigenvalue θ: the dimension its code lives in."""
        r, s = self.eigenvalues()
        if theta not in (r, s):
            raise SpherecodesError(f"{theta} is not a restricted eigenvalue of SRG{self.as_tuple()}: {r}, {s}")
        return self.multiplicities()[0 if theta == r else 1]

    def inner_products(self, theta: int) -> tuple[Fraction, Fraction]:
        """(adjacent, non-adjacent) inner products of the normalised projections on the θ-eigenspace."""
        self.dimension(theta)
        return Fraction(theta, self.k), Fraction(-(1 + theta), self.v - self.k - 1)

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.v, self.k, self.lam, self.mu)


def srg_parameters(adjacency: np.ndarray) -> SRGParameters:
    """Check that a 0/1 adjacency matrix is strongly regular (exactly, in integers) and return (v, k, λ, μ).

    A² = kI + λA + μ(J − I − A) is checked entry by entry.

    Examples
    --------
    >>> srg_parameters(petersen_graph()).as_tuple()
    (10, 3, 0, 1)
    """
    a = np.asarray(adjacency, dtype=np.int64)
    v = len(a)
    degrees = a.sum(axis=1)
    if v < 3 or not np.array_equal(a, a.T) or a.diagonal().any() or len(set(degrees.tolist())) != 1:
        raise SpherecodesError("not the adjacency matrix of a regular simple graph")
    k = int(degrees[0])
    a2 = a @ a
    off = ~np.eye(v, dtype=bool)
    common_adj = a2[(a == 1) & off]
    common_non = a2[(a == 0) & off]
    if len(set(common_adj.tolist())) > 1 or len(set(common_non.tolist())) > 1 or not len(common_non):
        raise SpherecodesError("the graph is not strongly regular")
    lam = int(common_adj[0]) if len(common_adj) else 0
    return SRGParameters(v, k, lam, int(common_non[0]))


def eigenspace_points(adjacency, params: SRGParameters, theta: int, progress=None) -> np.ndarray:
    """The v normalised projections of the standard basis on the θ-eigenspace, as (v, m_θ) float64 rows.

    ``adjacency(rows, cols)`` returns the block of the 0/1 adjacency matrix
    on those vertices (index arrays), so that a large graph is never held
    whole. The Gram matrix of the code, I + (θ/k)·A + (−(1 + θ)/(v − k − 1))·(J − I − A),
    is formed exactly from the two inner products and factored by pivoted
    Cholesky (whole up to :data:`MAX_GRAM_BYTES`, in blocks beyond:
    :func:`~spherecodes.structured.description.gram_points_by_blocks`, memory
    estimated first); a rank other than m_θ, or rows that are not unit
    vectors, mean the graph is not SRG(v, k, λ, μ), and raise.
    ``progress``, if given, is called with the fraction built (large graphs).

    Examples
    --------
    >>> x = eigenspace_points(lambda r, c: petersen_graph()[np.ix_(r, c)], SRGParameters(10, 3, 0, 1), -2)
    >>> x.shape, round(float(x[0] @ x[1]), 12)
    ((10, 4), 0.166666666667)
    """
    v, m = params.v, params.dimension(theta)
    adjacent, other = (float(x) for x in params.inner_products(theta))

    def gram_block(rows, cols):
        block = np.where(adjacency(rows, cols), adjacent, other)
        block[rows[:, None] == cols[None, :]] = 1.0
        return block

    if 8 * v * v > MAX_GRAM_BYTES:
        require_memory(eigenspace_bytes(v, m), f"the {v:,} points in R^{m} of SRG{params.as_tuple()} (float64)")
        try:
            return gram_points_by_blocks(gram_block, v, m, block_rows=BLOCK_ROWS, progress=progress)
        except ArithmeticError as err:
            raise ArithmeticError(f"{err}: the graph is not SRG{params.as_tuple()}") from None
    gram = np.empty((v, v))
    step = max(1, 2**22 // v)
    everyone = np.arange(v)
    for start in range(0, v, step):
        rows = everyone[start : start + step]
        if not np.all(adjacency(rows, everyone).sum(axis=1) == params.k):
            raise ArithmeticError(f"the graph is not {params.k}-regular")
        gram[rows] = gram_block(rows, everyone)
    try:
        return gram_points(gram, m)
    except ArithmeticError as err:
        raise ArithmeticError(f"{err}: the graph is not SRG{params.as_tuple()} (multiplicity {m} of {theta})") from None


def eigenspace_bytes(v: int, m: int) -> float:
    """Peak bytes of building v points in R^m: the points and the Gram matrix, or (large v) the sample's and a block.

    Examples
    --------
    >>> round(eigenspace_bytes(69_649, 3_856) / 2**30, 2)    # isotropic subspaces, q = 16
    2.56
    """
    if 8 * v * v <= MAX_GRAM_BYTES:
        return 8.0 * v * v + 8.0 * v * m
    sample = min(v, 2 * m)
    return 8.0 * v * m + 8.0 * sample * sample + 4 * 8.0 * BLOCK_ROWS * m


@lru_cache(maxsize=8)
def eigenspace_seconds(v: int, m: int) -> float:
    """Expected seconds of building v points in R^m in blocks (v² float64 over :data:`MAX_GRAM_BYTES`), timed here.

    The work is one triangular solve of v rows against the m × m basis
    (v·m² multiply-adds) and the basis itself, the pivoted Cholesky
    factorisation of a 2m-point sample (about 5·m³, measured); its rate is
    timed on one block of :data:`BLOCK_ROWS` rows against a triangular
    matrix of order min(m, 1024), so the figure is rough (within a factor
    of about two), and follows the machine's load.

    Examples
    --------
    >>> 0 < eigenspace_seconds(15_984, 1_221) < eigenspace_seconds(69_649, 3_856)
    True
    """
    from scipy.linalg import blas

    order = min(m, 1024)
    rng = np.random.default_rng(0)
    lower = np.asfortranarray(np.tril(rng.normal(size=(order, order))) + order * np.eye(order))
    rows = np.asfortranarray(rng.normal(size=(order, BLOCK_ROWS)))
    fastest = math.inf
    for _ in range(2):  # the faster of two: the first also meets the arrays' first page faults
        began = time.perf_counter()
        blas.dtrsm(1.0, lower, rows, side=0, lower=1, overwrite_b=1)
        fastest = min(fastest, time.perf_counter() - began)
    rate = BLOCK_ROWS * order * order / fastest
    return (float(v) * m * m + 5.0 * m**3) / rate


@dataclass(frozen=True)
class _EigenspaceCost:
    """The (seconds, bytes) of building a large eigenspace code: a picklable, hashable function."""

    v: int
    m: int

    def __call__(self) -> tuple[float, float]:
        return eigenspace_seconds(self.v, self.m), eigenspace_bytes(self.v, self.m)


# ----------------------------------------------------------------- the graphs


@lru_cache(maxsize=1)
def petersen_graph() -> np.ndarray:
    """The Petersen graph SRG(10, 3, 0, 1): the 2-subsets of {0, …, 4}, adjacent when disjoint.

    Examples
    --------
    >>> petersen_graph().sum(axis=1).tolist()
    [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
    """
    pairs = [set(p) for p in itertools.combinations(range(5), 2)]
    return np.array([[not (a & b) for b in pairs] for a in pairs])


@lru_cache(maxsize=1)
def clebsch_graph() -> np.ndarray:
    """The (folded 5-cube) Clebsch graph SRG(16, 5, 0, 2): GF(2)^4, adjacent when differing in one coordinate or all.

    Examples
    --------
    >>> int(clebsch_graph().sum(axis=1)[0])
    5
    """
    x = np.arange(16)
    diff = x[:, None] ^ x[None, :]
    return (np.vectorize(lambda z: bin(z).count("1"))(diff) == 1) | (diff == 15)


@lru_cache(maxsize=1)
def steiner_hexads() -> np.ndarray:
    """The 77 blocks of the Steiner system S(3, 6, 22) as a (77, 22) 0/1 array.

    The octads of the extended Golay code that contain coordinates 0 and 1,
    with those two coordinates removed (Conway & Sloane 1999, ch. 10).

    Examples
    --------
    >>> h = steiner_hexads()
    >>> h.shape, set(h.sum(axis=1).tolist())
    ((77, 22), {6})
    """
    words = golay_codewords()
    octads = words[(words.sum(axis=1) == 8) & (words[:, 0] == 1) & (words[:, 1] == 1)]
    return octads[:, 2:]


@lru_cache(maxsize=1)
def gewirtz_graph() -> np.ndarray:
    """The Gewirtz graph SRG(56, 10, 0, 2): the 56 hexads of S(3, 6, 22) avoiding a point, adjacent when disjoint.

    Examples
    --------
    >>> gewirtz_graph().shape
    (56, 56)
    """
    h = steiner_hexads()
    h = h[h[:, 0] == 0]
    return (h @ h.T) == 0


@lru_cache(maxsize=1)
def higman_sims_graph() -> np.ndarray:
    """The Higman–Sims graph SRG(100, 22, 0, 6) from S(3, 6, 22) (Higman & Sims 1968).

    Vertices: a point ∞, the 22 points and the 77 hexads. ∞ is adjacent to
    the points, a point to the 21 hexads through it, a hexad to the 16 hexads
    disjoint from it.

    Examples
    --------
    >>> higman_sims_graph().sum(axis=1)[:3].tolist()
    [22, 22, 22]
    """
    h = steiner_hexads()
    a = np.zeros((100, 100), dtype=bool)
    a[0, 1:23] = a[1:23, 0] = True
    a[1:23, 23:] = h.T == 1
    a[23:, 1:23] = h == 1
    a[23:, 23:] = (h @ h.T) == 0
    return a


@lru_cache(maxsize=1)
def steiner_heptads() -> np.ndarray:
    """The 253 blocks of the Steiner system S(4, 7, 23) as a (253, 23) 0/1 array.

    The octads of the extended Golay code that contain coordinate 0, with it
    removed: the weight-7 words of the perfect Golay code (Conway & Sloane 1999, ch. 10).

    Examples
    --------
    >>> h = steiner_heptads()
    >>> h.shape, set(h.sum(axis=1).tolist())
    ((253, 23), {7})
    """
    words = golay_codewords()
    return words[(words.sum(axis=1) == 8) & (words[:, 0] == 1)][:, 1:]


@lru_cache(maxsize=1)
def mclaughlin_graph() -> np.ndarray:
    """The McLaughlin graph SRG(275, 112, 30, 56) from S(4, 7, 23), by switching a regular two-graph.

    The graph on the 23 points and 253 heptads (a point adjacent to the
    heptads that miss it, two heptads adjacent when they meet in one point)
    is in the switching class of the regular two-graph on 276 vertices;
    switching on the neighbours of point 0 isolates it, and the other 275
    vertices (22 points, then the 253 heptads) form the McLaughlin graph
    (Goethals & Seidel 1975, "The regular two-graph on 276 vertices";
    Brouwer & Van Maldeghem 2022, ch. 10).

    Examples
    --------
    >>> a = mclaughlin_graph()
    >>> a.shape, set(a.sum(axis=1).tolist())
    ((275, 275), {112})
    """
    h = steiner_heptads().astype(np.int64)
    x = np.zeros((276, 276), dtype=bool)
    x[:23, 23:] = h.T == 0
    x[23:, :23] = h == 0
    x[23:, 23:] = (h @ h.T) == 1
    # Switching on a set S exchanges edges and non-edges between S and the rest.
    s = x[0].copy()
    x ^= s[:, None] ^ s[None, :]
    return x[1:, 1:]


@lru_cache(maxsize=1)
def mclaughlin_subconstituent_graph() -> np.ndarray:
    """SRG(162, 56, 10, 24): the McLaughlin graph on the 162 vertices not adjacent to vertex 0 (nor equal).

    The second subconstituent of the McLaughlin graph (Brouwer & Van Maldeghem 2022, ch. 10).

    Examples
    --------
    >>> mclaughlin_subconstituent_graph().sum(axis=1)[:3].tolist()
    [56, 56, 56]
    """
    a = mclaughlin_graph()
    keep = ~a[0]
    keep[0] = False
    return a[np.ix_(keep, keep)]


@lru_cache(maxsize=1)
def schlafli_graph() -> np.ndarray:
    """The Schläfli graph SRG(27, 16, 10, 8): the complement of the collinearity graph of GQ(2, 4).

    Its vertices are the 27 lines on a cubic surface, adjacent when skew; the
    quadrangle's points are the same lines, collinear when they meet.

    Examples
    --------
    >>> int(schlafli_graph().sum(axis=1)[0])
    16
    """
    everyone = np.arange(27)
    return ~quadrangle_adjacency(2)(everyone, everyone) & ~np.eye(27, dtype=bool)


@lru_cache(maxsize=4)
def elliptic_quadric_points(q: int) -> np.ndarray:
    """The (q + 1)(q³ + 1) points of the elliptic quadric Q⁻(5, q), as (N, 6) field elements.

    Q(x) = x0·x1 + x2·x3 + x4² + b·x4·x5 + c·x5², with t² + bt + c the first
    irreducible quadratic over GF(q); each projective point is listed once,
    with its first nonzero coordinate 1, in lexicographic order. The
    (q⁶ − 1)/(q − 1) projective points are enumerated as arrays and Q is
    evaluated with the field's tables, all points at once.

    Examples
    --------
    >>> elliptic_quadric_points(2).shape
    (27, 6)
    """
    f = finite_field(q)
    b, c = _irreducible_quadratic(q)
    found = []
    for lead in range(5, -1, -1):  # (0, …, 0, 1) first: lexicographic order
        free = 5 - lead
        x = np.zeros((q**free, 6), dtype=np.int64)
        x[:, lead] = 1
        index = np.arange(q**free)
        for j in range(free):  # base-q digits, the last coordinate least significant
            x[:, 5 - j] = (index // q**j) % q
        m, add = f.mul, f.add
        value = add[m[x[:, 0], x[:, 1]], m[x[:, 2], x[:, 3]]]
        value = add[value, add[m[x[:, 4], x[:, 4]], add[m[b, m[x[:, 4], x[:, 5]]], m[c, m[x[:, 5], x[:, 5]]]]]]
        found.append(x[value == 0])
    return np.concatenate(found)


def _irreducible_quadratic(q: int) -> tuple[int, int]:
    """(b, c) with t² + bt + c irreducible over GF(q): the first in order."""
    f = finite_field(q)
    t = np.arange(q)
    for b, c in itertools.product(range(q), repeat=2):
        values = f.add[f.add[f.mul[t, t], f.mul[b, t]], c]
        if not (values == 0).any():
            return b, c
    raise ArithmeticError(f"no irreducible quadratic over GF({q})")


def _polar_form_tensors(q: int) -> np.ndarray:
    """Integer tensors T_c with B(x, y)_c = Xᵀ T_c Y mod p in base-p digits (the polar form of Q, GF(p)-bilinear).

    B(x, y) = Q(x + y) − Q(x) − Q(y) = Σ M_ij x_i y_j; each entry times the
    product of two basis elements t^a·t^b is written in the basis t^0 … t^(e−1).
    """
    f = finite_field(q)
    b, c = _irreducible_quadratic(q)
    two = f.add[1, 1]
    polar = np.zeros((6, 6), dtype=np.int64)
    polar[0, 1] = polar[1, 0] = polar[2, 3] = polar[3, 2] = 1
    polar[4, 4], polar[4, 5], polar[5, 4], polar[5, 5] = two, b, b, f.mul[two, c]
    basis = [f.p**a for a in range(f.e)]
    tensors = np.zeros((f.e, 6 * f.e, 6 * f.e), dtype=np.int64)
    for i, j, a1, a2 in itertools.product(range(6), range(6), range(f.e), range(f.e)):
        tensors[:, i * f.e + a1, j * f.e + a2] = f.digits[f.mul[polar[i, j], f.mul[basis[a1], basis[a2]]]]
    return tensors


def quadrangle_adjacency(q: int):
    """The collinearity graph of the generalised quadrangle Q⁻(5, q), GQ(q, q²), in blocks on demand.

    Two points of the quadric are collinear (on a line of the quadric) when
    they are orthogonal for its polar form. The graph is
    SRG((q + 1)(q³ + 1), q(q² + 1), q − 1, q² + 1) (Brouwer & Van Maldeghem 2022,
    §2.2); its vertices are also the totally isotropic lines of the Hermitian
    quadrangle H(3, q²), adjacent when they meet (the dual quadrangle).
    Returns ``block(rows, cols)``: the 0/1 adjacency between two arrays of
    point indices, from the polar form, GF(p)-bilinear in the points' base-p digits.

    Examples
    --------
    >>> block = quadrangle_adjacency(3)
    >>> block(np.arange(2), np.arange(112)).sum(axis=1).tolist()
    [30, 30]
    """
    f = finite_field(q)
    x = elliptic_quadric_points(q)
    digits = f.digits[x].reshape(len(x), 6 * f.e).astype(np.float64)
    tensors = _polar_form_tensors(q)
    # Digit c of B(x, y) is the integer Xᵀ·T_c·Y (below 2^width) reduced mod p; the e integers are packed in
    # one float64 (exact below 2^53), width bits each, so that one matrix product gives them all.
    width = (int(tensors.max()) * (f.p - 1) ** 2 * 6 * f.e).bit_length()
    if f.e * width > 52:
        raise SpherecodesError(f"GF({q}) is too large for the exact float64 products here")
    packed = sum((digits @ t) * 2.0 ** (width * c) for c, t in enumerate(tensors))
    fields = (1 << width) - 1
    zero_mod_p = np.arange(fields + 1) % f.p == 0
    # In characteristic 2 a digit vanishes mod 2 when its lowest bit is 0: one mask tests all e of them.
    low_bits = sum(1 << (width * c) for c in range(f.e))

    def block(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        values = (packed[rows] @ digits[cols].T).astype(np.int64)
        if f.p == 2:
            orth = (values & low_bits) == 0
        else:
            orth = np.ones(values.shape, dtype=bool)
            for c in range(f.e):  # every GF(p) coordinate of B(x, y) must vanish
                orth &= zero_mod_p[(values >> (width * c)) & fields]
        orth[rows[:, None] == cols[None, :]] = False
        return orth

    return block


# ------------------------------------------------------------------ the codes


@dataclass(frozen=True)
class _Eigenspace:
    """Builds (and caches) the points of one eigenspace code: a picklable, hashable build function."""

    graph: str
    theta: int

    def __call__(self) -> np.ndarray:
        return _eigenspace_points(self.graph, self.theta)


@lru_cache(maxsize=8)
def _eigenspace_points(graph: str, theta: int) -> np.ndarray:
    params = GRAPHS[graph][1]
    if graph.startswith("isotropic-"):
        block = quadrangle_adjacency(int(graph.split("-")[1]))
    else:
        adjacency = GRAPHS[graph][2]()

        def block(rows, cols):
            return adjacency[np.ix_(rows, cols)]

    points = eigenspace_points(block, params, theta)
    points.setflags(write=False)
    return points


def _isotropic_parameters(q: int) -> SRGParameters:
    return SRGParameters((q + 1) * (q**3 + 1), q * (q * q + 1), q - 1, q * q + 1)


#: The graphs by key: (name, parameters (tabulated, so that describing builds nothing;
#: the tests rebuild every graph and check them), adjacency builder, citation).
GRAPHS = {
    "petersen": ("Petersen graph", SRGParameters(10, 3, 0, 1), petersen_graph, BROUWER + " §10.3"),
    "clebsch": ("Clebsch graph", SRGParameters(16, 5, 0, 2), clebsch_graph, BROUWER + " §10.7"),
    "gewirtz": ("Gewirtz graph", SRGParameters(56, 10, 0, 2), gewirtz_graph, BROUWER + " §10.19"),
    "higman-sims": ("Higman–Sims graph", SRGParameters(100, 22, 0, 6), higman_sims_graph,
                    "Higman & Sims (1968); " + BROUWER + " §10.31"),
    "schlafli": ("Schläfli graph", SRGParameters(27, 16, 10, 8), schlafli_graph, BROUWER),
    "mclaughlin-2": ("McLaughlin second subconstituent", SRGParameters(162, 56, 10, 24),
                     mclaughlin_subconstituent_graph, BROUWER),
    "mclaughlin": ("McLaughlin graph", SRGParameters(275, 112, 30, 56), mclaughlin_graph,
                   "McLaughlin (1969); Goethals & Seidel (1975); " + BROUWER),
}


def isotropic_orders(memory: float) -> list[int]:
    """The prime powers q whose isotropic-subspaces code can be built in ``memory`` bytes (:func:`eigenspace_bytes`).

    Examples
    --------
    >>> isotropic_orders(24 * 2**30)
    [2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19]
    """
    orders, q = [], 2
    while True:
        params = _isotropic_parameters(q)
        if eigenspace_bytes(params.v, q * (q * q - q + 1)) > memory:  # grows with q
            return orders
        if prime_power(q) is not None:
            orders.append(q)
        q += 1


def _register_isotropic() -> None:
    # Every member of the family that this machine could hold; whether it fits now is checked when it is built.
    for q in isotropic_orders(physical_memory_bytes()):
        GRAPHS[f"isotropic-{q}"] = (f"isotropic subspaces q = {q}", _isotropic_parameters(q), None,
                                    COHN_KUMAR + "; " + BROUWER + " §2.2")


_register_isotropic()


def srg_code(graph: str, theta: int | None = None) -> StructuredCode:
    """The two-distance code of a graph of :data:`GRAPHS` on the eigenspace of θ (default: the negative one, s).

    Parameters
    ----------
    graph : str
        A key of :data:`GRAPHS` (``"petersen"``, ``"clebsch"``, ``"gewirtz"``,
        ``"higman-sims"``, ``"schlafli"``, ``"mclaughlin"``, ``"mclaughlin-2"``, ``"isotropic-q"`` for the prime
        powers q of :func:`isotropic_orders`).
    theta : int, optional
        A restricted eigenvalue r or s of the graph.

    Examples
    --------
    >>> code = srg_code("higman-sims")
    >>> code.d, code.size, code.max_cos
    (22, 100, Fraction(1, 11))
    >>> sorted(code.spectrum().items())
    [(Fraction(-4, 11), 22), (Fraction(1, 11), 77), (Fraction(1, 1), 1)]
    """
    if graph not in GRAPHS:
        raise SpherecodesError(f"unknown graph {graph!r}; known: {', '.join(GRAPHS)}")
    name, params, _, citation = GRAPHS[graph]
    theta = params.eigenvalues()[1] if theta is None else int(theta)
    m = params.dimension(theta)
    max_cos = max(params.inner_products(theta))
    v, k, lam, mu = params.as_tuple()
    return StructuredCode(
        name=f"{name} SRG({v},{k},{lam},{mu}), eigenspace {theta}",
        family="srg",
        d=m,
        size=v,
        max_cos=max_cos,
        native_d=m,
        # Every graph here is vertex-transitive, so its code is.
        transitive=True,
        orbits=1,
        citation=citation + "; " + DGS,
        construction=PointSetConstruction(build=_Eigenspace(graph, theta), max_cos=max_cos, distance_invariant=True,
                                          cost=_EigenspaceCost(v, m) if v * m * m >= SLOW_BUILD_WORK else None),
    )


def isotropic_code(q: int) -> StructuredCode:
    """The isotropic-subspaces code for a prime power q: (q + 1)(q³ + 1) points in R^(q(q² − q + 1)).

    Inner products −1/q and 1/q² (Cohn & Kumar 2007, Table 1): a sharp configuration, universally optimal.
    Listed for every prime power q whose points this machine's memory could hold (:func:`isotropic_orders`);
    building a large one takes seconds to minutes (:meth:`~spherecodes.structured.description.StructuredCode.build_cost`
    estimates it; build times in docs/structured.md, "Families").

    Examples
    --------
    >>> code = isotropic_code(3)
    >>> code.d, code.size, code.max_cos
    (21, 112, Fraction(1, 9))
    """
    key = f"isotropic-{q}"
    if key not in GRAPHS:
        listed = ", ".join(g.split("-")[1] for g in GRAPHS if g.startswith("isotropic-"))
        if prime_power(q) is None:
            raise SpherecodesError(f"isotropic subspaces need a prime power q (here: {listed}); got q = {q}")
        params = _isotropic_parameters(q)
        need = eigenspace_bytes(params.v, q * (q * q - q + 1))
        raise SpherecodesError(f"the isotropic-subspaces code of q = {q} needs about {format_bytes(need)}, over "
                               f"this machine's {format_bytes(physical_memory_bytes())}: q in {listed}")
    return srg_code(key)


def srg_codes() -> list[StructuredCode]:
    """Every two-distance code of this module: both eigenspaces of the named graphs, the sharp one of each quadrangle.

    Examples
    --------
    >>> [(c.d, c.size, str(c.max_cos)) for c in srg_codes()][:2]
    [(5, 10, '1/3'), (4, 10, '1/6')]
    """
    codes = []
    for graph, (_, params, _, _) in GRAPHS.items():
        thetas = params.eigenvalues() if not graph.startswith("isotropic-") else params.eigenvalues()[1:]
        codes.extend(srg_code(graph, theta) for theta in thetas)
    return codes
