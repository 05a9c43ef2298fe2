"""Exact square roots of rationals: the max-cos of codes whose inner products are irrational.

Most structured codes have rational inner products (a :class:`fractions.Fraction`).
A real equiangular tight frame of N lines in R^d meets the Welch bound
α = √((N − d)/(d(N − 1))), which is irrational for some of them (the Paley
frames: α = 1/√q). :func:`exact_sqrt` returns a ``Fraction`` where the root is
rational and a :class:`Surd` otherwise; both compare exactly with each other,
with ints and with floats, so codes of either kind rank together.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction


def _rational_sqrt(x: Fraction) -> Fraction | None:
    """√x when it is rational, else None (x ≥ 0)."""
    n, d = math.isqrt(x.numerator), math.isqrt(x.denominator)
    return Fraction(n, d) if n * n == x.numerator and d * d == x.denominator else None


@functools.total_ordering
@dataclass(frozen=True)
class Surd:
    """The irrational number sign·√square, square a positive non-square rational.

    Made by :func:`exact_sqrt` (which returns a ``Fraction`` when the root is
    rational). Compares exactly with ints, Fractions, floats and other surds;
    ``float()`` rounds it, ``str()`` writes it as ``1/√13`` or ``√(3/5)``.

    Examples
    --------
    >>> a = exact_sqrt(Fraction(1, 13))
    >>> str(a), round(float(a), 6), Fraction(1, 4) < a < Fraction(2, 7), -a < 0
    ('1/√13', 0.27735, True, True)
    """

    square: Fraction
    sign: int = 1

    def __post_init__(self):
        if self.square <= 0 or _rational_sqrt(self.square) is not None or self.sign not in (1, -1):
            raise ValueError(f"not an irrational square root: {self.sign}·√{self.square}")

    def __float__(self) -> float:
        return self.sign * math.sqrt(self.square)

    def __neg__(self) -> Surd:
        return Surd(self.square, -self.sign)

    def __abs__(self) -> Surd:
        return Surd(self.square, 1)

    def __str__(self) -> str:
        sign = "-" if self.sign < 0 else ""
        if self.square.numerator == 1:
            return f"{sign}1/√{self.square.denominator}"
        if self.square.denominator == 1:
            return f"{sign}√{self.square.numerator}"
        return f"{sign}√({self.square})"

    def _compare(self, other) -> int | None:
        """−1, 0 or 1 as self <, =, > other; None for a type it cannot compare with."""
        if isinstance(other, Surd):
            mine, theirs = self.sign * self.square, other.sign * other.square
        elif isinstance(other, (int, Fraction)) or (isinstance(other, float) and math.isfinite(other)):
            other = Fraction(other)
            mine, theirs = self.sign * self.square, (1 if other >= 0 else -1) * other * other
        elif isinstance(other, float) and math.isinf(other):
            return -1 if other > 0 else 1
        else:
            return None
        # x ↦ sign(x)·x² is increasing: it preserves the order of signed roots.
        return (mine > theirs) - (mine < theirs)

    def __eq__(self, other) -> bool:
        c = self._compare(other)
        return NotImplemented if c is None else c == 0

    def __lt__(self, other) -> bool:
        c = self._compare(other)
        return NotImplemented if c is None else c < 0

    def __hash__(self) -> int:
        return hash((self.square, self.sign))


def exact_sqrt(x, sign: int = 1) -> Fraction | Surd:
    """sign·√x exactly: a ``Fraction`` when √x is rational, else a :class:`Surd`.

    Examples
    --------
    >>> exact_sqrt(Fraction(1, 9)), exact_sqrt(Fraction(5, 3))
    (Fraction(1, 3), Surd(square=Fraction(5, 3), sign=1))
    """
    x = Fraction(x)
    if x < 0:
        raise ValueError(f"no real square root of {x}")
    root = _rational_sqrt(x)
    return sign * root if root is not None else Surd(x, sign)
