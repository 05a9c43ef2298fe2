"""The finite field GF(q), q = p^e a prime power, as addition and multiplication tables.

Elements are the integers 0 … q−1; the integer with base-p digits
(c_0, c_1, …, c_(e−1)) stands for the polynomial Σ c_i t^i modulo a fixed
monic irreducible polynomial of degree e over GF(p) (the first one in
lexicographic order, so the field is the same on every run). For e = 1 this is
arithmetic modulo p. Tables are q × q, so q is meant to be small (at most a
few hundred).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError


def prime_power(q: int) -> tuple[int, int] | None:
    """(p, e) with q = p^e, p prime, or None when q is not a prime power.

    Examples
    --------
    >>> prime_power(9), prime_power(8), prime_power(12)
    ((3, 2), (2, 3), None)
    """
    if q < 2:
        return None
    p = next(f for f in range(2, q + 1) if q % f == 0)
    e, rest = 0, q
    while rest % p == 0:
        rest //= p
        e += 1
    return (p, e) if rest == 1 else None


def _poly_mul_mod(a: tuple, b: tuple, modulus: tuple, p: int) -> tuple:
    """Product of two polynomials (coefficient tuples, lowest degree first) modulo a monic polynomial, over GF(p)."""
    e = len(modulus) - 1
    prod = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            prod[i + j] = (prod[i + j] + x * y) % p
    for deg in range(len(prod) - 1, e - 1, -1):
        c = prod[deg]
        if c:
            for i in range(e + 1):
                prod[deg - e + i] = (prod[deg - e + i] - c * modulus[i]) % p
    return tuple(prod[:e]) + (0,) * max(0, e - len(prod))


def _irreducible(p: int, e: int) -> tuple:
    """The first monic irreducible polynomial of degree e over GF(p) (coefficients lowest first)."""
    if e == 1:
        return (0, 1)
    for low in itertools.product(range(p), repeat=e):
        modulus = tuple(low) + (1,)
        # A reducible polynomial of degree e has a monic factor of degree at most
        # e/2: trial division by all of them (the fields here are small).
        if low[0] == 0:
            continue
        if not any(_divides(f, modulus, p) for deg in range(1, e // 2 + 1)
                   for f in (tuple(c) + (1,) for c in itertools.product(range(p), repeat=deg))):
            return modulus
    raise ArithmeticError(f"no irreducible polynomial of degree {e} over GF({p})")


def _divides(f: tuple, g: tuple, p: int) -> bool:
    """Whether the monic polynomial f divides g over GF(p)."""
    rem = list(g)
    for deg in range(len(rem) - 1, len(f) - 2, -1):
        c = rem[deg]
        if c:
            shift = deg - (len(f) - 1)
            for i, fc in enumerate(f):
                rem[shift + i] = (rem[shift + i] - c * fc) % p
    return not any(rem[: len(f) - 1])


@dataclass(frozen=True)
class FiniteField:
    """GF(q) as tables: ``add[x, y]``, ``mul[x, y]``, ``neg[x]``, and each element's base-p digits.

    Examples
    --------
    >>> f = finite_field(4)
    >>> int(f.mul[2, 2]), int(f.mul[2, 3])   # t·t = t + 1, t·(t + 1) = 1 in GF(4)
    (3, 1)
    """

    q: int
    p: int
    e: int
    add: np.ndarray
    mul: np.ndarray
    neg: np.ndarray
    digits: np.ndarray  # (q, e): the coefficients of each element


@lru_cache(maxsize=16)
def finite_field(q: int) -> FiniteField:
    """The field with q elements (q a prime power), built once per q.

    Examples
    --------
    >>> f = finite_field(9)
    >>> sorted({int(f.mul[x, y]) for x in range(1, 9) for y in range(1, 9)}) == list(range(1, 9))
    True
    """
    pe = prime_power(q)
    if pe is None:
        raise SpherecodesError(f"GF(q) needs q to be a prime power, got q = {q}")
    p, e = pe
    modulus = _irreducible(p, e)
    digits = np.array([[(x // p**i) % p for i in range(e)] for x in range(q)], dtype=np.int64)
    weights = p ** np.arange(e)
    add = ((digits[:, None, :] + digits[None, :, :]) % p) @ weights
    neg = ((-digits) % p) @ weights
    polys = [tuple(int(c) for c in row) for row in digits]
    mul = np.array([[int(np.dot(_poly_mul_mod(a, b, modulus, p), weights)) for b in polys] for a in polys],
                   dtype=np.int64)
    for table in (add, mul, neg):
        table.setflags(write=False)
    return FiniteField(q=q, p=p, e=e, add=add, mul=mul, neg=neg, digits=digits)
