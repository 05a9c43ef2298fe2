"""Derived codes: the points of a code at fixed inner products with given points, one dimension down per point.

For a code C with max-cos c, a point p ∈ C and an inner product α, the points
q ∈ C with ⟨p, q⟩ = α, projected on p⊥ and normalised, q' = (q − αp)/√(1 − α²),
form a code in R^(d−1) whose inner products are (⟨q, q'⟩ − α²)/(1 − α²), hence
max-cos ≤ (c − α²)/(1 − α²) (Conway & Sloane 1999, ch. 1 §2; Levenshtein 1992).
Several fixed points at once project on the complement of their span. The
coordinates come from a fixed Householder basis of the complement (float64).

Repeating it gives the classical tight codes: E8 → (7, 56, 1/3) → (6, 27, 1/4) →
(5, 16, 1/5), and Leech → (23, 4600, 1/3) → (22, 891, 1/4).

A step may also fix the sum of two points p + w at ⟨p, w⟩ = β: the points q
with ⟨q, p⟩ + ⟨q, w⟩ = σ, projected on (p + w)⊥. For Leech minimal vectors
(norm 4) with p·w = −1, p + w is a vector of type 3 and the 552 minimal
vectors q with q·(p + w) = 3 are the 276 ways of writing it as a sum of two
minimal vectors: 276 equiangular lines in R^23 at cos 1/5 (Conway 1969;
Lemmens & Seidel 1973), then the McLaughlin configuration (22, 275, 1/6) and
its two subconstituents (21, 162, 1/7) and (21, 112, 1/9) one step further
(Cohn & Kumar 2007, Table 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError
from spherecodes.structured.description import (
    PointSetConstruction,
    StructuredCode,
    blocked_max_cos,
    derive_points,
    exact_fraction,
)
from spherecodes.structured.lattices import e8_roots, leech_lattice

DERIVED_CITATION = (
    "Conway & Sloane (1999), Sphere Packings, Lattices and Groups, 3rd ed., ch. 1 §2 and ch. 14; "
    "Levenshtein (1992), Designs as maximum codes in polynomial metric spaces"
)


def derived_bound(c: Fraction, alphas: list[Fraction], gram: list[list[Fraction]] | None = None) -> Fraction:
    """The max-cos bound (c − |u|²)/(1 − |u|²) of a derived code, u the common component in span(p_i).

    With fixed points of Gram matrix G and inner products a, |u|² = aᵀG⁻¹a
    (one fixed point: |u|² = α²).

    Examples
    --------
    >>> derived_bound(Fraction(1, 2), [Fraction(1, 2)])
    Fraction(1, 3)
    """
    a = [Fraction(x) for x in alphas]
    if gram is None:
        if len(a) != 1:
            raise SpherecodesError("several fixed points need their Gram matrix")
        u2 = a[0] ** 2
    else:
        u2 = _quadratic_form_inverse([[Fraction(x) for x in row] for row in gram], a)
    if u2 >= 1:
        raise SpherecodesError("the fixed inner products leave no room: |u|² ≥ 1")
    return (Fraction(c) - u2) / (1 - u2)


def _quadratic_form_inverse(g: list[list[Fraction]], a: list[Fraction]) -> Fraction:
    """aᵀ G⁻¹ a by exact Gaussian elimination over the rationals."""
    n = len(a)
    m = [row[:] + [a[i]] for i, row in enumerate(g)]
    for col in range(n):
        piv = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[piv] = m[piv], m[col]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    return sum(a[i] * m[i][n] / m[i][i] for i in range(n))


@dataclass(frozen=True)
class _Chain:
    """A parent code and derivation steps applied in order.

    A step (index, α) fixes point ``index`` at inner product α; a step
    (index, σ, β) fixes the sum of point ``index`` and the first point w at
    inner product β with it, keeping the points whose inner products with the
    two sum to σ.
    """

    parent: StructuredCode
    steps: tuple

    def __call__(self) -> np.ndarray:
        return _build_chain(self)


@lru_cache(maxsize=16)
def _build_chain(chain: _Chain) -> np.ndarray:
    x = chain.parent.points()
    for index, alpha, *partner in chain.steps:
        fixed = x[index]
        if partner:
            w = x[np.flatnonzero(np.abs(x @ fixed - float(partner[0])) < 1e-9)[0]]
            norm = float(np.linalg.norm(fixed + w))
            fixed, alpha = (fixed + w) / norm, float(alpha) / norm
        x = derive_points(x, fixed[None, :], [float(alpha)])
    x.setflags(write=False)
    return x


def derived_code(
    parent: StructuredCode,
    alphas: list[Fraction],
    index: int = 0,
    name: str | None = None,
) -> StructuredCode:
    """Derive a code from ``parent`` by fixing point ``index`` at each step with inner product α (one step per α).

    The parent's points are built; size and max-cos are measured from the
    result (exact rationals), and the bound (c − α²)/(1 − α²) is checked.

    Parameters
    ----------
    parent : StructuredCode
        The code to derive from (all its points are built).
    alphas : list of Fraction
        The inner product fixed at each step, in order.
    index : int
        Which point of the current code is fixed at each step.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from spherecodes.structured import e8_roots
    >>> code = derived_code(e8_roots(), [Fraction(1, 2)])
    >>> code.d, code.size, code.max_cos
    (7, 56, Fraction(1, 3))
    """
    chain = _Chain(parent=parent, steps=tuple((index, Fraction(a)) for a in alphas))
    pts = chain()
    if len(pts) < 2:
        raise SpherecodesError(f"fewer than 2 points of {parent.name} lie at these inner products")
    bound = parent.max_cos
    for a in chain.steps:
        bound = derived_bound(bound, [a[1]])
    measured = exact_fraction(blocked_max_cos(pts))
    if measured > bound:
        raise ArithmeticError("derived code exceeds its max-cos bound")
    return StructuredCode(
        name=name or f"derived from {parent.name} at α = {', '.join(str(a) for a in alphas)}",
        family="derived",
        d=parent.native_d - len(alphas),
        size=len(pts),
        max_cos=measured,
        native_d=parent.native_d - len(alphas),
        citation=DERIVED_CITATION,
        construction=PointSetConstruction(build=chain, max_cos=measured),
    )


# The type-3 step of the Leech chain: minimal vectors q with q·(p + w) = 3 for p·w = −1 (norm 4),
# i.e. cosines summing to 3/4 with p and w at cos −1/4.
_TYPE3 = (Fraction(3, 4), Fraction(-1, 4))

# The classical derived codes (name, parent, steps, size, max-cos, transitive), tabulated so that describing them
# builds nothing; test_structured_derived.py rebuilds each and checks size and max-cos.
_TABLE = {
    "e8-56": ("E8-derived (7, 56): 28 antipodal lines", "E8", (Fraction(1, 2),), 56, Fraction(1, 3), True),
    "e8-27": ("E8-derived (6, 27): Schläfli configuration",
              "E8", (Fraction(1, 2), Fraction(1, 3)), 27, Fraction(1, 4), True),
    "e8-16": ("E8-derived (5, 16): Clebsch configuration",
              "E8", (Fraction(1, 2), Fraction(1, 3), Fraction(1, 4)), 16, Fraction(1, 5), True),
    "leech-4600": ("Leech-derived (23, 4600)", "Leech", (Fraction(1, 2),), 4600, Fraction(1, 3), False),
    "leech-891": ("Leech-derived (22, 891)", "Leech", (Fraction(1, 2), Fraction(1, 3)), 891, Fraction(1, 4), False),
    "leech-552": ("Leech-derived (23, 552): 276 equiangular lines", "Leech", (_TYPE3,), 552, Fraction(1, 5), True),
    "leech-275": ("Leech-derived (22, 275): McLaughlin configuration",
                  "Leech", (_TYPE3, Fraction(1, 5)), 275, Fraction(1, 6), True),
    "leech-162": ("Leech-derived (21, 162): McLaughlin second subconstituent, SRG(162, 56, 10, 24)",
                  "Leech", (_TYPE3, Fraction(1, 5), Fraction(1, 6)), 162, Fraction(1, 7), True),
}


def _step(alpha) -> tuple:
    """A table step as a chain step on point 0: (0, α) or, for a fixed sum of two points, (0, σ, β)."""
    return (0, *alpha) if isinstance(alpha, tuple) else (0, alpha)


def classical_derived_code(key: str) -> StructuredCode:
    """One of the tabulated derived codes: ``"e8-56"``, ``"e8-27"``, ``"e8-16"``, ``"leech-4600"``, ``"leech-891"``,
    ``"leech-552"``, ``"leech-275"``, ``"leech-162"``.

    The E8-derived codes are transitive (their symmetry groups W(E7), W(E6) and
    W(D5) act transitively), and so are the Leech-derived 552, 275 and 162
    (Co3 is 2-transitive on the 276 lines; McL and U4(3) are rank 3 on the 275
    and the 162 points; Brouwer & van Maldeghem 2022); the 4600 and 891 are not
    claimed so here.

    Examples
    --------
    >>> code = classical_derived_code("e8-27")
    >>> code.d, code.size, code.max_cos, code.transitive
    (6, 27, Fraction(1, 4), True)
    """
    if key not in _TABLE:
        raise SpherecodesError(f"unknown derived code {key!r}; known: {', '.join(_TABLE)}")
    name, parent_name, alphas, size, max_cos, transitive = _TABLE[key]
    parent = e8_roots() if parent_name == "E8" else leech_lattice()
    chain = _Chain(parent=parent, steps=tuple(_step(a) for a in alphas))
    d = parent.native_d - len(alphas)
    return StructuredCode(
        name=name,
        family="derived",
        d=d,
        size=size,
        max_cos=max_cos,
        native_d=d,
        transitive=transitive,
        orbits=1 if transitive else None,
        citation=DERIVED_CITATION,
        construction=PointSetConstruction(build=chain, max_cos=max_cos, distance_invariant=transitive),
    )


def classical_derived_keys() -> list[str]:
    """Keys accepted by :func:`classical_derived_code`.

    Examples
    --------
    >>> classical_derived_keys()[0]
    'e8-56'
    """
    return list(_TABLE)
