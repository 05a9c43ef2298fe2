"""Rows of a code compared without a copy of the code: 64-bit row hashes and groups of equal rows.

Both work a block of :data:`HASH_ROWS` rows at a time, so their memory is
O(K) however large d is: the certificate finds identical prototypes with
them, the solvers refuse a start code whose rows point the same way.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["HASH_ROWS", "equal_rows", "row_hashes"]

#: Rows hashed at a time by :func:`row_hashes`.
HASH_ROWS = 8192


def row_hashes(x: np.ndarray, to_bits: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """A 64-bit hash of each row: a multiply-add of its 64-bit words ``to_bits(rows)`` with fixed odd multipliers.

    A block of :data:`HASH_ROWS` rows at a time, so memory stays O(K);
    uint64 arithmetic wraps around.  Equal words give equal hashes; rows
    with equal hashes must still be compared.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0]])
    >>> h = row_hashes(x, lambda rows: np.ascontiguousarray(rows).view(np.uint64))
    >>> bool(h[0] == h[1]), bool(h[0] == h[2])
    (True, False)

    Rows that differ only in signs (the 256 words of a sign code in R^8) hash apart:

    >>> import itertools
    >>> signs = np.array(list(itertools.product([-1.0, 1.0], repeat=8))) / 8 ** 0.5
    >>> len(set(row_hashes(signs, lambda rows: np.ascontiguousarray(rows).view(np.uint64)).tolist()))
    256
    """
    k, d = x.shape
    multipliers = np.random.default_rng(0).integers(1, 2**63, size=d, dtype=np.uint64) | np.uint64(1)
    hashes = np.empty(k, dtype=np.uint64)
    for start in range(0, k, HASH_ROWS):
        words = to_bits(x[start : start + HASH_ROWS])
        # The high bits folded into the low ones first: a product with an odd multiplier keeps the top bit (a
        # float's sign) where it is, so rows of +-c would otherwise hash to two values in all (each sign code).
        words = words ^ (words >> np.uint64(29))
        hashes[start : start + HASH_ROWS] = (words * multipliers).sum(axis=1, dtype=np.uint64)
    return hashes


def _signless(rows: np.ndarray) -> np.ndarray:
    # Adding 0.0 turns -0.0 into 0.0.
    return rows + 0.0


def equal_rows(w: np.ndarray, canonical: Callable[[np.ndarray], np.ndarray] = _signless,
               ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Groups of rows equal after ``canonical``, and for each row another member of its group (or −1).

    ``canonical`` maps a block of float64 rows to the float64 rows that are
    compared (default: the rows, with ``−0.0`` counted as ``0.0``; e.g.
    ``lambda rows: np.round(rows, 12) + 0.0`` compares them to 12 decimals).
    The canonical rows are hashed (:func:`row_hashes`); rows with equal
    hashes are then compared exactly.  Groups are listed by first member.

    Examples
    --------
    >>> w = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -0.0], [0.0, 1.0 + 1e-15]])
    >>> equal_rows(w)[0]
    [(0, 2)]
    >>> equal_rows(w, lambda rows: np.round(rows, 12) + 0.0)[0]
    [(0, 2), (1, 3)]
    """
    k = len(w)
    keys = row_hashes(w, lambda rows: np.ascontiguousarray(canonical(rows)).view(np.uint64))
    order = np.argsort(keys, kind="stable")
    same = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    duplicate_of = np.full(k, -1, dtype=np.int64)
    groups = []
    if same.size:
        # Runs of equal keys: each candidate set is split by exact equality.
        starts = np.flatnonzero(np.diff(np.concatenate([[-2], same])) > 1)
        for first, last in zip(same[starts], np.append(same[starts[1:] - 1], same[-1])):
            candidates = np.sort(order[first : last + 2])
            _, label = np.unique(canonical(w[candidates]), axis=0, return_inverse=True)
            for value in np.unique(label.reshape(-1)):
                members = candidates[label.reshape(-1) == value]
                if len(members) > 1:
                    groups.append(tuple(int(i) for i in members))
                    # Each member's nearest point in the hull of the others is its twin.
                    duplicate_of[members] = np.roll(members, 1)
    return sorted(groups), duplicate_of
