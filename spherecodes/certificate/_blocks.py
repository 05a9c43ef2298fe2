"""Block sizing, memory and bookkeeping of the certificate (no solver here).

The classes are certified a block at a time, and each block's products with
all K prototypes are streamed over tiles of :data:`COLUMN_TILE` prototypes,
so memory is O(K·d) plus the blocks, whatever K.
"""

from __future__ import annotations

import numpy as np

from .. import memory
from ..memory import require_memory

__all__ = [
    "BLOCK_BUDGET_BYTES", "COLUMN_TILE", "GLOBAL_ADDITIONS", "KNOWN_PER_DIM", "assemble_supports", "block_size",
    "column_tile", "host_memory", "per_class_bytes",
]

#: Bytes that the working arrays of one block of classes may take, by device
#: type; the block size is chosen so that this holds, and never more than a
#: quarter of what is free on the device (or half of ``max_memory`` beyond
#: the inputs and results).  A GPU needs large blocks to be busy; on a CPU
#: larger blocks gain nothing.
BLOCK_BUDGET_BYTES = {"cpu": 256 * 2**20, "cuda": 4 * 2**30}

#: Prototypes per tile of the products of a block with all K prototypes, so
#: that a block holds ``block × COLUMN_TILE`` similarities, not ``block × K``;
#: wide on a CPU, where they make the top-m selections cheaper per score
#: (docs/certificate.md, "2.1 The QP").
COLUMN_TILE = {"cpu": 131072, "cuda": 32768}

#: Candidates that join a class's candidate set per failed global check.
GLOBAL_ADDITIONS = 32

#: The first scan keeps ``max(m, KNOWN_PER_DIM · d)`` nearest prototypes of
#: each class (the "known" keys; the solver's candidates are the first m).
#: The cosine of the last one bounds every other prototype's score in the
#: global check (``outside_bound`` in the solver module), so that where the
#: bound is below the best known score no scan of all K prototypes is needed:
#: on Tammes-optimised codes it is with 4d keys, not with 2d + 2
#: (docs/certificate.md, "2.1 The QP", step 3).
KNOWN_PER_DIM = 4


def host_memory(k: int, d: int) -> float:
    """Bytes of the certificate's inputs and results on the host: prototypes, features, supports, bounds."""
    return 8.0 * k * d * 3 + 8.0 * k * (2 * (d + 2) + 4)


def column_tile(k: int, dev) -> int:
    """Prototypes per tile of a block's products with all K prototypes on ``dev`` (:data:`COLUMN_TILE`)."""
    return min(k, COLUMN_TILE["cuda" if dev.type == "cuda" else "cpu"])


def per_class_bytes(k: int, d: int, m: int, tile: int) -> float:
    """Working memory of one class in a block with column tiles of ``tile`` prototypes (see :func:`block_size`)."""
    s = min(d, m + GLOBAL_ADDITIONS) + 2 + 16  # a corral holds affinely independent candidates
    known = min(k - 1, max(m, KNOWN_PER_DIM * d))  # the known keys, their scores and their gathered vectors
    return 6.0 * tile + 8.0 * (2 * (m + GLOBAL_ADDITIONS) * d + 2 * s * d + 4 * s * s + 8 * m
                  + known * (d + 4))


def block_size(k: int, d: int, m: int, dev, max_memory: float | None = None, workers: int = 1) -> tuple[int, int]:
    """Classes per block and prototypes per column tile, so that the working arrays of ``workers`` blocks fit.

    Each worker's block gets :data:`BLOCK_BUDGET_BYTES` (every block streams
    all K prototypes, so dividing one budget among the workers would make
    many small blocks each pay a full pass; benchmarks/README.md,
    "Certificate: blocks, workers, the restart"), all of them together at
    most a quarter of the device's free memory (or half of what
    ``max_memory`` leaves beyond the inputs and results).  What a class holds
    (:func:`per_class_bytes`) is listed in docs/certificate.md, "2.1 The QP";
    the interior-point restart runs after Wolfe's arrays are freed and needs
    less.
    """
    tile = column_tile(k, dev)
    per_class = per_class_bytes(k, d, m, tile)
    budget = min(BLOCK_BUDGET_BYTES["cuda" if dev.type == "cuda" else "cpu"] * workers,
                 0.25 * memory.available_memory_bytes(str(dev)))
    if max_memory is not None:
        # The prototypes stay on the device; on the CPU the inputs and results share the limit.
        fixed = 8.0 * k * d + (host_memory(k, d) if dev.type == "cpu" else 0.0)
        budget = min(budget, 0.5 * (max_memory - fixed))
    block = int(max(1, min(k, budget // (per_class * workers))))
    require_memory(
        per_class * block * workers,
        f"the working arrays of {workers} block(s) of {block} classes (K={k}, d={d}, {m} candidates each)",
        str(dev),
        limit=None if max_memory is None else max(max_memory - 8.0 * k * d, 0.0),
    )
    return block, tile


def assemble_supports(k: int, pieces) -> tuple[np.ndarray, np.ndarray]:
    """(K, s) support arrays, padded with −1 / 0, from ``(rows, indices, weights)`` pieces that cover every class.

    Examples
    --------
    >>> idx, wt = assemble_supports(3, [(np.array([0, 2]), np.array([[1, 2], [0, 1]]), np.full((2, 2), 0.5)),
    ...                                 (np.array([1]), np.array([[0]]), np.array([[1.0]]))])
    >>> idx.tolist(), wt.tolist()
    ([[1, 2], [0, -1], [0, 1]], [[0.5, 0.5], [1.0, 0.0], [0.5, 0.5]])
    """
    width = max([idx.shape[1] for rows, idx, _ in pieces if len(rows)], default=1)
    indices = np.full((k, width), -1, dtype=np.int64)
    weights = np.zeros((k, width))
    for rows, idx, wt in pieces:
        if not len(rows):
            continue
        indices[rows, : idx.shape[1]] = idx
        weights[rows, : wt.shape[1]] = wt
    return indices, weights
