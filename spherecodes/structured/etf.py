"""Real equiangular tight frames (ETFs): N lines in R^d at the Welch bound, beyond the simplex.

N unit vectors of R^d whose inner products are all ±α with
α = √((N − d)/(d(N − 1))) meet the Welch bound: no N lines of R^d have a
smaller coherence, and their frame operator is (N/d)·I (Welch 1974;
Strohmer & Heath 2003). Real ETFs are the same thing as Seidel matrices
S (zero diagonal, ±1 elsewhere) with two eigenvalues λ₁ < 0 < λ₂: the Gram
matrix is I − S/λ₁, of rank N − mult(λ₁), and I − S/λ₂ is the Gram matrix of
the *Naimark complement*, N lines in R^(N − d) (Lemmens & Seidel 1973;
Fickus & Mixon 2015, "Tables of the existence of equiangular tight frames").
Built here (docs/structured.md, "Families", has the sizes): the **Paley
conference ETFs**, q + 1 lines in R^((q+1)/2) at α = 1/√q for a prime power
q ≡ 1 mod 4, from the symmetric conference matrix C (C² = qI; Paley 1933;
Goethals & Seidel 1967; Strohmer & Heath 2003, §3), α kept exactly as a
:class:`~spherecodes.structured.surd.Surd`; the **Steiner ETFs** of all pairs
of v points and of the lines of PG(m − 1, 2) (Fickus, Mixon & Tremain 2012,
Thm. 1; :func:`steiner_etf_vectors`); the **Latin-square ETFs** of 36 lines
in R^15 and R^21, from the Seidel matrix J − I − 2A of L₃(6), SRG(36, 15, 6, 6)
(Goethals & Seidel 1970; Brouwer & Van Maldeghem 2022, §8.4); and the
**Naimark complements** of the Steiner ETFs.  Each ETF gives two codes: the
N vectors (one per line) and the 2N antipodal points ±w, both of max-cos α.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.structured.description import PointSetConstruction, StructuredCode, gram_points
from spherecodes.structured.gfq import finite_field, prime_power
from spherecodes.structured.surd import Surd, exact_sqrt

WELCH = "Welch (1974); Strohmer & Heath (2003), Grassmannian frames with applications to coding, ACHA 14"
FMT = "Fickus, Mixon & Tremain (2012), Steiner equiangular tight frames, Linear Algebra Appl. 436, Thm. 1"
PALEY = "Paley (1933); Goethals & Seidel (1967), Orthogonal matrices with zero diagonal, Canad. J. Math. 19"
SEIDEL = "Lemmens & Seidel (1973), Equiangular lines, J. Algebra 24; Fickus & Mixon (2015), Tables of ETFs"
LATIN = "Goethals & Seidel (1970), Strongly regular graphs derived from combinatorial designs, Canad. J. Math. 22"

#: Largest N whose N × N Gram matrix is formed (Paley frames, complements): 8 MiB of float64.
MAX_GRAM_N = 1024
#: Largest frame (N vectors × d) listed: 256 MiB of float64 for its 2N antipodal points.
MAX_FRAME_ENTRIES = 2**24


def welch_alpha(d: int, n: int) -> Fraction | Surd:
    """The Welch bound √((N − d)/(d(N − 1))) exactly (a Fraction where rational).

    Examples
    --------
    >>> welch_alpha(6, 16), str(welch_alpha(7, 14))
    (Fraction(1, 3), '1/√13')
    """
    return exact_sqrt(Fraction(n - d, d * (n - 1)))


# ------------------------------------------------------------ the matrices


def quadratic_character(q: int) -> np.ndarray:
    """χ on GF(q) (q odd), as an array: 0 at 0, 1 on the nonzero squares, −1 elsewhere.

    Examples
    --------
    >>> quadratic_character(5).tolist()
    [0, 1, -1, -1, 1]
    """
    p, e = prime_power(q) or (0, 0)
    if p in (0, 2):
        raise SpherecodesError(f"the quadratic character needs an odd prime power q, got q = {q}")
    x = np.arange(1, q)
    # Modulo a prime the squares are x² mod q; otherwise the field's tables (q² entries, built once).
    squares = x * x % q if e == 1 else finite_field(q).mul[x, x]
    chi = -np.ones(q, dtype=np.int64)
    chi[np.unique(squares)] = 1
    chi[0] = 0
    return chi


def paley_conference_matrix(q: int) -> np.ndarray:
    """The conference matrix of order q + 1 for an odd prime power q (symmetric for q ≡ 1 mod 4, skew for q ≡ 3).

    C_{00} = 0, C_{0i} = 1, C_{i0} = χ(−1), C_{ij} = χ(x_i − x_j): C Cᵀ = qI.

    Examples
    --------
    >>> c = paley_conference_matrix(5)
    >>> bool((c @ c.T == 5 * np.eye(6)).all()), bool((c == c.T).all())
    (True, True)
    """
    chi = quadratic_character(q)
    x = np.arange(q)
    if prime_power(q)[1] == 1:
        differences = (x[:, None] - x[None, :]) % q
    else:
        f = finite_field(q)
        differences = f.add[x[:, None], f.neg[x][None, :]]
    c = np.zeros((q + 1, q + 1), dtype=np.int64)
    c[0, 1:] = 1
    c[1:, 0] = 1 if q % 4 == 1 else -1  # χ(−1)
    c[1:, 1:] = chi[differences]
    return c


def hadamard_matrix(n: int) -> np.ndarray:
    """A Hadamard matrix of order n with an all-ones first row: Sylvester doubling and Paley's first construction.

    Orders built: 1, 2, and n = 2m or n = q + 1 (q ≡ 3 mod 4 a prime power)
    recursively — every order ≤ 64 except 36 and 52, 64 included.

    Examples
    --------
    >>> h = hadamard_matrix(12)
    >>> bool((h @ h.T == 12 * np.eye(12)).all()), h[0].tolist() == [1] * 12
    (True, True)
    """
    h = _hadamard(n)
    if h is None:
        raise SpherecodesError(f"no Hadamard matrix of order {n} is built here (orders 2^a·(q + 1), q ≡ 3 mod 4)")
    return h * h[0][None, :]  # columns times their first entry: the first row becomes all ones


def _hadamard(n: int) -> np.ndarray | None:
    recipe = _hadamard_recipe(n)
    if recipe is None:
        return None
    q, doublings = recipe
    h = np.ones((1, 1), dtype=np.int64) if q == 0 else np.eye(q + 1, dtype=np.int64) + paley_conference_matrix(q)
    for _ in range(doublings):
        h = np.block([[h, h], [h, -h]])
    return h


def _hadamard_recipe(n: int) -> tuple[int, int] | None:
    """How :func:`_hadamard` builds order n, decided without building it: (q, doublings), Paley's matrix of
    order q + 1 (q = 0: the 1 x 1 matrix) doubled that many times by Sylvester's; None where neither reaches n."""
    doublings = 0
    while n != 1:
        if n % 4 and n != 2:
            return None
        q = n - 1
        if q > 2 and q % 4 == 3 and prime_power(q) is not None:
            return q, doublings
        if n % 2:
            return None
        n, doublings = n // 2, doublings + 1
    return 0, doublings


def pair_design(v: int) -> np.ndarray:
    """The 2-(v, 2, 1) design of all pairs of v points, as a (v(v − 1)/2, v) 0/1 block-by-point array.

    Examples
    --------
    >>> pair_design(3).tolist()
    [[1, 1, 0], [1, 0, 1], [0, 1, 1]]
    """
    blocks = np.zeros((v * (v - 1) // 2, v), dtype=np.int64)
    for row, (a, b) in enumerate(itertools.combinations(range(v), 2)):
        blocks[row, [a, b]] = 1
    return blocks


def projective_triple_system(m: int) -> np.ndarray:
    """The lines of PG(m − 1, 2): a Steiner triple system on the 2^m − 1 nonzero vectors of GF(2)^m.

    The blocks are the triples {a, b, a ⊕ b}; point a is column a − 1.

    Examples
    --------
    >>> t = projective_triple_system(3)
    >>> t.shape, set(t.sum(axis=1).tolist()), set(t.sum(axis=0).tolist())
    ((7, 7), {3}, {3})
    """
    v = (1 << m) - 1
    triples = sorted({tuple(sorted((a, b, a ^ b))) for a in range(1, v + 1) for b in range(a + 1, v + 1)})
    blocks = np.zeros((len(triples), v), dtype=np.int64)
    for row, triple in enumerate(triples):
        blocks[row, [t - 1 for t in triple]] = 1
    return blocks


def steiner_etf_vectors(blocks: np.ndarray) -> np.ndarray:
    """The Steiner ETF of a 2-(v, k, 1) design (blocks × points 0/1), as (v(r + 1), b) float64 unit rows.

    For each point p (in order), the rows 1 … r of a Hadamard matrix of order
    r + 1 with an all-ones first row, scaled by 1/√r, become the coordinates,
    on the r blocks through p, of r + 1 vectors (Fickus, Mixon & Tremain 2012).

    Examples
    --------
    >>> x = steiner_etf_vectors(pair_design(4))
    >>> x.shape, sorted({round(abs(float(c)), 12) for c in (x @ x.T)[np.triu_indices(16, 1)]})
    ((16, 6), [0.333333333333])
    """
    b, v = blocks.shape
    through = [np.flatnonzero(blocks[:, p]) for p in range(v)]
    r = len(through[0])
    if any(len(t) != r for t in through) or not (blocks.T @ blocks - np.diag(blocks.sum(axis=0)) <= 1).all():
        raise SpherecodesError("not a 2-(v, k, 1) design: every point needs r blocks, every pair one")
    h = hadamard_matrix(r + 1)[1:] / math.sqrt(r)
    x = np.zeros((v * (r + 1), b))
    for p, rows in enumerate(through):
        x[p * (r + 1) : (p + 1) * (r + 1), rows] = h.T
    return x


def latin_square_graph(n: int = 6) -> np.ndarray:
    """The Latin-square graph L₃(n) of the cyclic group: cells (i, j), adjacent in one row, column or symbol i + j.

    SRG(n², 3(n − 1), n, 6) (Brouwer & Van Maldeghem 2022, §8.4.2); for n = 6, (36, 15, 6, 6).

    Examples
    --------
    >>> int(latin_square_graph(6).sum(axis=1)[0])
    15
    """
    i, j = np.divmod(np.arange(n * n), n)
    same = (i[:, None] == i) | (j[:, None] == j) | ((i + j)[:, None] % n == (i + j) % n)
    return same & ~np.eye(n * n, dtype=bool)


def seidel_etf(seidel: np.ndarray, eigenvalue: float, d: int) -> np.ndarray:
    """The ETF of a Seidel matrix S with two eigenvalues: the Gram matrix I − S/λ for one of them, λ, as (N, d) rows.

    d = N − mult(λ) is the rank (checked by the factorisation), and the rows
    are checked to be a tight frame, XᵀX = (N/d)·I.

    Examples
    --------
    >>> x = seidel_etf(paley_conference_matrix(5), -5 ** 0.5, 3)   # the six diagonals of the icosahedron
    >>> x.shape, round(abs(float(x[0] @ x[1])) * 5 ** 0.5, 12)
    ((6, 3), 1.0)
    """
    n = len(seidel)
    x = gram_points(np.eye(n) - np.asarray(seidel, dtype=np.float64) / eigenvalue, d)
    if not np.allclose(x.T @ x, (n / d) * np.eye(d), atol=1e-9):
        raise ArithmeticError("the vectors are not a tight frame: S does not have the eigenvalue given")
    return x


# ---------------------------------------------------------------- the frames


@dataclass(frozen=True)
class _Frame:
    """Builds (and caches) the N vectors of one ETF, or its 2N antipodal points: picklable and hashable."""

    key: str
    antipodal: bool

    def __call__(self) -> np.ndarray:
        x = _frame_vectors(self.key)
        if not self.antipodal:
            return x
        both = np.concatenate([x, -x])
        both.setflags(write=False)
        return both


@lru_cache(maxsize=8)
def _frame_vectors(key: str) -> np.ndarray:
    kind, _, arg = key.partition("-")
    if kind == "paley":
        q = int(arg)
        x = seidel_etf(paley_conference_matrix(q), -math.sqrt(q), (q + 1) // 2)  # C² = qI: eigenvalues ±√q
    elif kind == "pairs":
        x = steiner_etf_vectors(pair_design(int(arg)))
    elif kind == "triples":
        x = steiner_etf_vectors(projective_triple_system(int(arg)))
    elif kind == "latin":
        # J − I − 2A of SRG(36, 15, 6, 6): eigenvalue 5 (multiplicity 21) and −7 (multiplicity 15).
        seidel = 1 - np.eye(36) - 2 * latin_square_graph(6)
        x = seidel_etf(seidel, 5.0, 15) if arg == "15" else seidel_etf(seidel, -7.0, 21)
    elif kind == "complement":
        # G = I + αS of rank d: S has the eigenvalues (N/d − 1)/α and −1/α; the first gives rank N − d.
        parent = _frame_vectors(arg)
        n, d = parent.shape
        g = parent @ parent.T
        alpha = float(np.abs(g[0, 1]))
        x = seidel_etf(np.rint((g - np.eye(n)) / alpha), (n / d - 1) / alpha, n - d)
    else:
        raise SpherecodesError(f"unknown frame {key!r}")
    x.setflags(write=False)
    return x


@dataclass(frozen=True)
class FrameSpec:
    """One real ETF, described without building it: key, name, d, N and citation.

    Examples
    --------
    >>> spec = etf_specs()[0]
    >>> spec.name, spec.d, spec.n, str(spec.alpha)
    ('Paley ETF q = 5 (6 lines)', 3, 6, '1/√5')
    """

    key: str
    name: str
    d: int
    n: int
    citation: str

    @property
    def alpha(self) -> Fraction | Surd:
        return welch_alpha(self.d, self.n)


@lru_cache(maxsize=1)
def etf_specs() -> tuple[FrameSpec, ...]:
    """Every real ETF of this module, in order: Paley, Steiner (pairs, triples), Latin-square, complements.

    Paley frames for q ≡ 1 mod 4 with q + 1 ≤ :data:`MAX_GRAM_N`; Steiner
    frames with N·d ≤ :data:`MAX_FRAME_ENTRIES`; complements of the Steiner
    frames with N ≤ :data:`MAX_GRAM_N`.

    Examples
    --------
    >>> sorted((s.d, s.n) for s in etf_specs() if s.n <= 36)
    [(3, 6), (5, 10), (6, 16), (7, 14), (7, 28), (9, 18), (10, 16), (13, 26), (15, 30), (15, 36), (21, 28), (21, 36)]
    """
    specs = []
    for q in range(5, MAX_GRAM_N):
        if q % 4 == 1 and prime_power(q) is not None:
            specs.append(FrameSpec(f"paley-{q}", f"Paley ETF q = {q} ({q + 1} lines)", (q + 1) // 2, q + 1,
                                   PALEY + "; " + WELCH))
    steiner = []
    for v in range(4, MAX_GRAM_N):
        if v * v * v * (v - 1) // 2 > MAX_FRAME_ENTRIES:
            break
        if _hadamard_recipe(v) is not None:
            steiner.append(FrameSpec(f"pairs-{v}", f"Steiner ETF of the pairs of {v} points ({v * v} lines)",
                                     v * (v - 1) // 2, v * v, FMT))
    for m in itertools.count(3):
        v, r = (1 << m) - 1, (1 << (m - 1)) - 1
        n, d = v * (r + 1), v * (v - 1) // 6
        if n * d > MAX_FRAME_ENTRIES:
            break
        steiner.append(FrameSpec(f"triples-{m}", f"Steiner ETF of PG({m - 1},2)'s lines ({n} lines)", d, n, FMT))
    specs += steiner
    specs += [FrameSpec("latin-15", "Latin-square ETF L3(6) (36 lines)", 15, 36, LATIN + "; " + SEIDEL),
              FrameSpec("latin-21", "Latin-square ETF L3(6), complement (36 lines)", 21, 36, LATIN + "; " + SEIDEL)]
    specs += [FrameSpec(f"complement-{s.key}", f"Naimark complement of the {s.name}", s.n - s.d, s.n,
                        s.citation + "; " + SEIDEL) for s in steiner if s.n <= MAX_GRAM_N and s.n - s.d != s.d]
    return tuple(specs)


def etf_code(key: str, antipodal: bool = True) -> StructuredCode:
    """The code of one ETF of :func:`etf_specs`: its 2N antipodal points (default) or its N vectors.

    Max-cos α, the Welch bound, exact (a ``Fraction``, or a
    :class:`~spherecodes.structured.surd.Surd` for the Paley frames of a
    non-square q).

    Examples
    --------
    >>> code = etf_code("paley-13")
    >>> code.d, code.size, str(code.max_cos)
    (7, 28, '1/√13')
    >>> sorted((str(v), c) for v, c in code.spectrum().items())
    [('-1', 1), ('-1/√13', 13), ('1', 1), ('1/√13', 13)]
    """
    spec = next((s for s in etf_specs() if s.key == key), None)
    if spec is None:
        raise SpherecodesError(f"unknown equiangular tight frame {key!r}; e.g. paley-13, pairs-8, triples-4")
    alpha = spec.alpha
    values = (Fraction(-1), -alpha, alpha, Fraction(1)) if antipodal else (-alpha, alpha, Fraction(1))
    return StructuredCode(
        name=f"{spec.name}, ±" if antipodal else spec.name,
        family="etf",
        d=spec.d,
        size=2 * spec.n if antipodal else spec.n,
        max_cos=alpha,
        native_d=spec.d,
        citation=spec.citation,
        # ±w is distance-invariant: every point sees its antipode, and each other line once at α and once
        # at −α. The N vectors alone are not (how many of a row's signs are + depends on the row).
        construction=PointSetConstruction(build=_Frame(key, antipodal), max_cos=alpha, distance_invariant=antipodal,
                                          values=values),
    )


def etf_codes(max_d: int | None = None, antipodal: bool | None = None) -> list[StructuredCode]:
    """The codes of every ETF of :func:`etf_specs` in at most ``max_d`` dimensions: N vectors, then 2N points.

    ``antipodal``: only the 2N-point codes (True) or only the N vectors (False); both by default.

    Examples
    --------
    >>> [(c.d, c.size, str(c.max_cos)) for c in etf_codes(3)]
    [(3, 6, '1/√5'), (3, 12, '1/√5')]
    """
    kinds = (False, True) if antipodal is None else (antipodal,)
    return [etf_code(s.key, kind) for s in etf_specs() if max_d is None or s.d <= max_d for kind in kinds]
