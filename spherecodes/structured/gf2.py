"""Arithmetic over GF(2), GF(2^m) and the Galois ring GR(4, m), exact and small.

Binary polynomials and binary vectors are Python integers (bit i is the
coefficient of x^i, or coordinate i): carry-less products and XOR are exact and
fast enough for lengths up to a few thousand, and they need no dependency.
Packed ``uint64`` arrays are used only where many codewords are handled at once
(:func:`pack_rows`, :func:`enumerate_weights`).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from spherecodes.errors import SpherecodesError

# One primitive polynomial per degree (bit i = coefficient of x^i), from the
# standard tables (Lidl & Niederreiter 1997, table C; MacWilliams & Sloane 1977,
# ch. 4); primitivity is re-checked by :func:`gf_tables` when the field is built.
PRIMITIVE_POLYNOMIALS = {
    2: 0b111,
    3: 0b1011,
    4: 0b10011,
    5: 0b100101,
    6: 0b1000011,
    7: 0b10001001,
    8: 0b100011101,
    9: 0b1000010001,
    10: 0b10000001001,
    11: 0b100000000101,
    12: 0b1000001010011,
    13: 0b10000000011011,
}


def clmul(a: int, b: int) -> int:
    """Product of two binary polynomials (carry-less multiplication).

    Examples
    --------
    >>> bin(clmul(0b11, 0b11))   # (x + 1)^2 = x^2 + 1 over GF(2)
    '0b101'
    """
    out = 0
    while b:
        if b & 1:
            out ^= a
        a <<= 1
        b >>= 1
    return out


@lru_cache(maxsize=None)
def gf_tables(m: int) -> tuple[np.ndarray, np.ndarray]:
    """Exponential and logarithm tables of GF(2^m) for the primitive polynomial of degree m.

    ``exp[i]`` is α^i as an m-bit integer (i = 0 … 2^m − 2, repeated once more so
    that sums of two logarithms need no reduction); ``log[x]`` is the discrete
    logarithm of x ≠ 0.

    Examples
    --------
    >>> exp, log = gf_tables(3)
    >>> [int(v) for v in exp[:7]]
    [1, 2, 4, 3, 6, 7, 5]
    """
    if m not in PRIMITIVE_POLYNOMIALS:
        raise SpherecodesError(f"GF(2^m) is tabulated for m = 2 … 13, got m = {m}")
    poly = PRIMITIVE_POLYNOMIALS[m]
    order = (1 << m) - 1
    exp = np.zeros(2 * order, dtype=np.int64)
    log = np.full(1 << m, -1, dtype=np.int64)
    x = 1
    for i in range(order):
        exp[i] = x
        if log[x] != -1:
            # α would have order < 2^m − 1: the table entry is not primitive.
            raise SpherecodesError(f"the tabulated polynomial of degree {m} is not primitive")
        log[x] = i
        x <<= 1
        if x >> m:
            x ^= poly
    exp[order:] = exp[:order]
    return exp, log


def cyclotomic_cosets(m: int) -> list[list[int]]:
    """The 2-cyclotomic cosets modulo 2^m − 1, each sorted, ordered by their least element.

    Examples
    --------
    >>> cyclotomic_cosets(3)
    [[0], [1, 2, 4], [3, 5, 6]]
    """
    return [list(c) for c in _cyclotomic_cosets(m)]


@lru_cache(maxsize=None)
def _cyclotomic_cosets(m: int) -> tuple[tuple[int, ...], ...]:
    order = (1 << m) - 1
    seen = [False] * order
    cosets = []
    for s in range(order):
        if seen[s]:
            continue
        coset, x = [], s
        while not seen[x]:
            seen[x] = True
            coset.append(x)
            x = (2 * x) % order
        cosets.append(tuple(sorted(coset)))
    return tuple(cosets)


@lru_cache(maxsize=None)
def minimal_polynomial(m: int, s: int) -> int:
    """The minimal polynomial of α^s over GF(2), as a bit mask (α primitive in GF(2^m)).

    It is the product of (x − α^j) over the cyclotomic coset of s; the product is
    formed in GF(2^m) and its coefficients are checked to lie in GF(2).

    Examples
    --------
    >>> bin(minimal_polynomial(3, 1))   # the primitive polynomial x^3 + x + 1
    '0b1011'
    """
    exp, log = gf_tables(m)
    order = (1 << m) - 1
    coset = next(c for c in cyclotomic_cosets(m) if s % order in c)
    coeffs = [1]  # field elements, coeffs[i] = coefficient of x^i
    for j in coset:
        root = int(exp[j])
        nxt = [0] * (len(coeffs) + 1)
        for i, c in enumerate(coeffs):
            nxt[i + 1] ^= c
            if c:
                nxt[i] ^= int(exp[log[c] + log[root]])
        coeffs = nxt
    if any(c not in (0, 1) for c in coeffs):
        raise ArithmeticError("minimal polynomial with coefficients outside GF(2)")
    return sum(c << i for i, c in enumerate(coeffs))


def hensel_lift(m: int) -> list[int]:
    """The Hensel lift to Z4 of the primitive binary polynomial of degree m (Graeffe's method).

    With h2 = e − o split into even and odd powers, the lift h satisfies
    h(x²) = ±(e(x)² − o(x)²) mod 4 and divides x^(2^m − 1) − 1 over Z4
    (Hammons et al. 1994, §IV). Coefficients are listed from x^0 up.

    Examples
    --------
    >>> hensel_lift(3)   # x^3 + 2x^2 + x + 3
    [3, 1, 2, 1]
    """
    poly = PRIMITIVE_POLYNOMIALS[m]
    h2 = [(poly >> i) & 1 for i in range(m + 1)]
    even = [c if i % 2 == 0 else 0 for i, c in enumerate(h2)]
    odd = [c if i % 2 == 1 else 0 for i, c in enumerate(h2)]

    def square(p: list[int]) -> list[int]:
        out = [0] * (2 * len(p) - 1)
        for i, a in enumerate(p):
            for j, b in enumerate(p):
                out[i + j] += a * b
        return out

    diff = [(a - b) % 4 for a, b in zip(square(even), square(odd))]
    lift = [diff[2 * i] for i in range(m + 1)]  # only even powers survive
    if lift[m] == 3:  # make it monic: multiply by −1
        lift = [(-c) % 4 for c in lift]
    if lift[m] != 1 or any(diff[2 * i + 1] for i in range(m)):
        raise ArithmeticError("Graeffe step did not give a monic polynomial in x^2")
    return lift


def galois_ring_trace_sequence(m: int) -> np.ndarray:
    """T(ξ^k) for k = 0 … 2^m − 2, with T the trace of GR(4, m) → Z4 and ξ a root of the Hensel lift.

    ξ is a Teichmüller element of order 2^m − 1 and the Frobenius map sends it
    to ξ², so T(ξ^k) = Σ_i ξ^(k·2^i), summed in Z4[x]/(h(x)); the sum lies in Z4.

    Examples
    --------
    >>> galois_ring_trace_sequence(3).tolist()
    [3, 2, 2, 1, 2, 1, 1]
    """
    h = hensel_lift(m)
    order = (1 << m) - 1
    # Powers of ξ as coefficient vectors in Z4^m (reduction by the monic h).
    powers = np.zeros((order, m), dtype=np.int64)
    cur = np.zeros(m, dtype=np.int64)
    cur[0] = 1
    for k in range(order):
        powers[k] = cur
        top = cur[m - 1]
        cur = np.concatenate(([0], cur[:-1]))
        cur = (cur - top * np.array(h[:m])) % 4
    if not (cur[0] == 1 and not cur[1:].any()):
        raise ArithmeticError("ξ does not have order 2^m − 1 in GR(4, m)")
    trace = np.zeros(order, dtype=np.int64)
    for k in range(order):
        total = np.zeros(m, dtype=np.int64)
        for i in range(m):
            total += powers[(k << i) % order]
        total %= 4
        if total[1:].any():
            raise ArithmeticError("trace left Z4")
        trace[k] = total[0]
    return trace


def pack_rows(rows: list[int], n: int) -> np.ndarray:
    """Binary vectors given as integers, packed little-endian into a (len(rows), ⌈n/64⌉) uint64 array.

    Examples
    --------
    >>> pack_rows([1, 1 << 64 | 2], 70).tolist()
    [[1, 0], [2, 1]]
    """
    words = (n + 63) // 64
    out = np.zeros((len(rows), words), dtype=np.uint64)
    mask = (1 << 64) - 1
    for i, r in enumerate(rows):
        for w in range(words):
            out[i, w] = (r >> (64 * w)) & mask
    return out


def encode_messages(packed_rows: np.ndarray, messages: np.ndarray) -> np.ndarray:
    """Codewords Σ_j bit_j(message)·row_j over GF(2), packed, for integer messages.

    Memory is O(len(messages) · words): only the requested codewords are formed.

    Examples
    --------
    >>> rows = pack_rows([0b011, 0b110], 3)
    >>> encode_messages(rows, np.arange(4)).ravel().tolist()
    [0, 3, 6, 5]
    """
    messages = np.asarray(messages, dtype=np.int64)
    out = np.zeros((len(messages), packed_rows.shape[1]), dtype=np.uint64)
    for j in range(packed_rows.shape[0]):
        bit = ((messages >> j) & 1).astype(bool)
        out[bit] ^= packed_rows[j]
    return out


def unpack_signs(packed: np.ndarray, n: int) -> np.ndarray:
    """(−1)^c for packed codewords c, as float64 rows of length n (not yet normalised).

    Examples
    --------
    >>> unpack_signs(np.array([[0b101]], dtype=np.uint64), 3).tolist()
    [[-1.0, 1.0, -1.0]]
    """
    as_bytes = np.ascontiguousarray(packed.astype("<u8")).view(np.uint8)
    bits = np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :n]
    return 1.0 - 2.0 * bits.astype(np.float64)


def enumerate_weights(rows: list[int], n: int, max_dim: int = 26) -> list[int]:
    """Weight distribution A_0 … A_n of the binary linear code spanned by ``rows`` (independent).

    All 2^k codewords are enumerated with XOR and popcount, in blocks: a table
    of the codewords of the first (at most 16) rows, XORed with each combination
    of the others, so memory is O(2^16 · n/64) whatever k is.

    Examples
    --------
    >>> enumerate_weights([0b0111, 0b1110], 4)   # {0000, 0111, 1110, 1001}
    [1, 0, 1, 2, 0]
    """
    k = len(rows)
    if k > max_dim:
        raise SpherecodesError(f"enumerating 2^{k} codewords is too slow; at most 2^{max_dim} are")
    packed = pack_rows(rows, n)
    low = min(k, 16)
    table = np.zeros((1, packed.shape[1]), dtype=np.uint64)
    for j in range(low):
        table = np.concatenate([table, table ^ packed[j]])
    counts = np.zeros(n + 1, dtype=np.int64)
    high = packed[low:]
    offset = np.zeros(packed.shape[1], dtype=np.uint64)
    for g in range(1 << (k - low)):
        if g:
            # Gray code: consecutive combinations differ in one row.
            offset = offset ^ high[(g & -g).bit_length() - 1]
        weights = np.bitwise_count(table ^ offset).sum(axis=1, dtype=np.int64)
        counts += np.bincount(weights, minlength=n + 1)
    return [int(c) for c in counts]
