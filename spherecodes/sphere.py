"""Kernels on rows of unit vectors: normalisation, random starts and tiled Gram scans.

The Gram matrix ``W Wᵀ`` of a large code does not fit in memory, so every
scan over it here goes a tile at a time: :func:`gram_tiles` (the upper
triangle, NumPy), :func:`nearest_others` (each row's nearest other row,
NumPy), :func:`pairs_above` (blocks of rows, NumPy) and :func:`top_matches`
(the m largest products per query, torch, on any device).
NumPy only at import; torch is imported by :func:`top_matches` when called.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Iterator

import numpy as np
from threadpoolctl import threadpool_limits

from . import heavy
from .memory import require_memory

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_TILE", "GRAM_BLOCK_ROWS", "gram_tiles", "nearest_others", "normalise_rows", "one_lapack_thread",
           "pairs_above", "random_rotation", "random_start", "top_matches"]

#: Side of the tiles of :func:`gram_tiles` by default.
DEFAULT_TILE = 2048

#: Rows of the float64 Gram matrix computed at a time by :func:`pairs_above`,
#: so that a large code does not need K^2 memory.
GRAM_BLOCK_ROWS = 2048


def normalise_rows(w) -> np.ndarray:
    """The rows of ``w`` scaled to unit norm, as a float64 array.

    Examples
    --------
    >>> normalise_rows([[3.0, 4.0]])
    array([[0.6, 0.8]])
    """
    w = np.asarray(w, dtype=np.float64)
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def one_lapack_thread():
    """A context in which NumPy's LAPACK calls (QR, SVD) run on one BLAS thread.

    LAPACK's blocked factorisations synchronise their BLAS threads at every
    panel, so on a machine whose cores are busy, threads waiting for a core
    make them many times slower than one thread (benchmarks/README.md,
    "Random rotations").

    Examples
    --------
    >>> with one_lapack_thread():
    ...     q, _ = np.linalg.qr(np.eye(3))
    """
    return threadpool_limits(limits=1, user_api="blas")


@functools.lru_cache(maxsize=2)
def random_rotation(d: int, seed: int) -> np.ndarray:
    """A Haar-distributed random orthogonal d×d matrix, reproducible from ``seed``.

    QR of a Gaussian matrix with the signs of R's diagonal moved into Q, which
    makes the distribution exactly Haar (Mezzadri 2007).

    Examples
    --------
    >>> Q = random_rotation(5, seed=1)
    >>> bool(np.allclose(Q @ Q.T, np.eye(5)))
    True
    """
    require_memory(3 * 8.0 * d * d, f"a random {d}x{d} rotation")
    gaussian = np.random.default_rng(seed).standard_normal((d, d))
    # One thread also makes Q the same bits whatever the thread count.
    with one_lapack_thread():
        q, r = np.linalg.qr(gaussian)
    # Kept for the next call (a run's estimate times the rotation the run then applies; O(d³) at d = 2048 is
    # seconds): read-only, so that no caller can change the rotation another one gets.
    q = q * np.sign(np.diag(r))
    q.setflags(write=False)
    return q


def random_start(seed: int, restart: int, k: int, d: int) -> np.ndarray:
    """The random start of one restart: K independent uniform unit vectors in R^d, float64 (K, d).

    Each restart draws from its own stream ``(seed, restart)``, so a start does
    not depend on how restarts are batched or on how many are run.

    Examples
    --------
    >>> w = random_start(0, 0, 5, 3)
    >>> w.shape, bool(np.allclose(np.linalg.norm(w, axis=1), 1))
    ((5, 3), True)
    >>> bool((random_start(0, 1, 5, 3) != w).any())
    True
    """
    return normalise_rows(np.random.default_rng([seed, restart]).standard_normal((k, d)))


def gram_tiles(w: np.ndarray, tile: int = DEFAULT_TILE) -> Iterator[tuple[int, int, np.ndarray]]:
    """Yield ``(row_start, col_start, W[rows] @ W[cols].T)`` over the upper triangle.

    Tiles with ``col_start == row_start`` lie on the diagonal and contain the
    self-products ``<w_i, w_i>``; callers mask them as they need.

    Examples
    --------
    >>> w = np.eye(3)
    >>> [(r, c, g.shape) for r, c, g in gram_tiles(w, tile=2)]
    [(0, 0, (2, 2)), (0, 2, (2, 1)), (2, 2, (1, 1))]
    """
    k = w.shape[0]
    for r in range(0, k, tile):
        rows = w[r : r + tile]
        for c in range(r, k, tile):
            yield r, c, rows @ w[c : c + tile].T


def nearest_others(w: np.ndarray, rows: np.ndarray, tile: int = DEFAULT_TILE, *,
                   smallest: bool = False) -> tuple[np.ndarray, np.ndarray, float | None]:
    """Largest inner product of each ``w[rows]`` with another row, the first row attaining it, and the smallest.

    The block of rows is multiplied with ``tile`` rows of ``w`` at a time
    (memory ``len(rows) × tile``), so a row's nearest neighbour is always a
    row maximum (NumPy's ``argmax`` is far slower down columns).  Ties go to
    the lowest index.

    Returns
    -------
    best : ndarray, shape (n,)
    index : ndarray of int64, shape (n,)
    low : float or None
        With ``smallest=True``, the smallest inner product of a row of the
        block with another row; else None.

    Examples
    --------
    >>> w = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    >>> best, index, low = nearest_others(w, np.arange(3), tile=2, smallest=True)
    >>> best.tolist(), index.tolist(), low
    ([0.6, 0.8, 0.8], [1, 2, 1], 0.0)
    """
    n, k = len(rows), len(w)
    best = np.full(n, -np.inf)
    index = np.zeros(n, dtype=np.int64)
    low = np.inf
    queries = w[rows]
    everyone = np.arange(n)
    for c0 in range(0, k, tile):
        g = queries @ w[c0 : c0 + tile].T
        own = np.flatnonzero((rows >= c0) & (rows < c0 + g.shape[1]))
        if smallest:
            # Self-products are not pairs: exclude them from the minimum too.
            g[own, rows[own] - c0] = np.inf
            low = min(low, float(g.min()))
        g[own, rows[own] - c0] = -np.inf
        local = g.argmax(axis=1)
        values = g[everyone, local]
        better = values > best  # strictly: a later tile wins only with a larger value
        best[better] = values[better]
        index[better] = local[better] + c0
    return best, index, (low if smallest else None)


def pairs_above(w: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs i < j with ``<w_i, w_j> >= threshold``: (i, j, cosine), a block of rows at a time.

    Examples
    --------
    >>> i, j, cos = pairs_above(np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]), 0.5)
    >>> i.tolist(), j.tolist(), cos.tolist()
    ([0, 1], [1, 2], [0.6, 0.8])
    """
    found = []
    for start in range(0, len(w), GRAM_BLOCK_ROWS):
        block = w[start : start + GRAM_BLOCK_ROWS] @ w.T
        rows, cols = np.nonzero(block >= threshold)
        upper = cols > start + rows
        found.append((start + rows[upper], cols[upper], block[rows[upper], cols[upper]]))
    return tuple(np.concatenate(parts) for parts in zip(*found))


def top_matches(queries: torch.Tensor, keys: torch.Tensor, m: int, *, exclude: torch.Tensor | None = None,
                tile: int | None = None, buffer: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The m largest inner products of each query with the keys, streamed over key tiles.

    Parameters
    ----------
    queries : torch.Tensor, shape (n, d)
    keys : torch.Tensor, shape (K, d)
        Same dtype and device as ``queries``.
    m : int
        How many to keep per query (at most the number of keys not excluded).
    exclude : torch.Tensor of int64, shape (n, e), optional
        Key indices that query n must not match (its own row, known
        candidates); −1 entries are ignored.
    tile : int, optional
        Keys per tile (default: all at once).  Memory is ``n × tile`` scores.
    buffer : torch.Tensor, optional
        Scratch space of at least ``n × tile`` elements, reused for the scores.

    Returns
    -------
    values, indices : torch.Tensor, shape (n, m)
        Largest first; the order of exact ties depends only on the inputs
        (and the device).

    Examples
    --------
    >>> import torch
    >>> w = torch.eye(3, dtype=torch.float64)[[0, 0, 1, 2]]
    >>> values, indices = top_matches(w[:2], w, 1, exclude=torch.tensor([[0], [1]]), tile=2)
    >>> values.tolist(), indices.tolist()
    ([[1.0], [1.0]], [[1], [0]])
    """
    torch = heavy.torch()

    n = queries.shape[0]
    k = keys.shape[0]
    tile = k if tile is None else max(1, min(int(tile), k))
    best_values = best_indices = None
    for c0 in range(0, k, tile):
        c1 = min(c0 + tile, k)
        if buffer is None:
            scores = queries @ keys[c0:c1].T
        else:
            # A contiguous view of the scratch space: no fresh allocation (and no page faults) per tile.
            scores = buffer.view(-1)[: n * (c1 - c0)].view(n, c1 - c0)
            torch.matmul(queries, keys[c0:c1].T, out=scores)
        if exclude is not None:
            _exclude(scores, exclude, c0, c1)
        if m == 1:
            values, indices = scores.max(dim=1, keepdim=True)
        else:
            values, indices = _row_topk(scores, min(m, c1 - c0))
        indices = indices + c0
        if best_values is None:
            best_values, best_indices = values, indices
        else:
            values = torch.cat([best_values, values], dim=1)
            indices = torch.cat([best_indices, indices], dim=1)
            best_values, order = torch.topk(values, min(m, values.shape[1]), dim=1)
            best_indices = indices.gather(1, order)
    return best_values, best_indices


def _row_topk(scores, m: int):
    """``torch.topk(scores, m, dim=1)``, by way of the maxima of groups of columns where that is faster.

    Column j belongs to group ``j mod G`` (G = width // g; the columns past
    G·g are candidates by themselves).  A row's m largest scores lie in the
    m groups with the largest maxima: a group holding one of them has a
    maximum of at least the m-th largest score, and at most m groups can
    (each holds a score that large).  So one pass of elementwise maxima over
    g slabs of G columns, a top-m of the G maxima, and a top-m of the m·g
    scores of the chosen groups give the same values as a top-m of the whole
    row; exact ties at the m-th value may be broken differently.  CPU
    ``topk`` scans a row several times over, so this is faster on long rows;
    g grows with the row's length up to 16 (benchmarks/README.md,
    "Certificate: blocks, workers, the restart", has the timings).
    """
    torch = heavy.torch()

    n, width = scores.shape
    g = min(16, max(2, int(math.sqrt(width / m) / 2)))
    groups = width // g
    if groups <= 2 * m or scores.device.type != "cpu":
        # Measured on CPUs only; a GPU's topk is a radix select already.
        return torch.topk(scores, m, dim=1)
    main = groups * g
    maxima = scores[:, :main].unflatten(1, (g, groups)).amax(dim=1)
    chosen = torch.topk(maxima, m, dim=1, sorted=False).indices
    offsets = torch.arange(0, main, groups, device=scores.device)
    columns = (chosen[:, None, :] + offsets[None, :, None]).reshape(n, m * g)
    if main < width:
        columns = torch.cat([columns, torch.arange(main, width, device=scores.device).expand(n, -1)], dim=1)
    values, where = torch.topk(scores.gather(1, columns), m, dim=1)
    return values, columns.gather(1, where)


def _exclude(scores, exclude, c0: int, c1: int) -> None:
    """Set ``scores[n, j - c0] = -inf`` for the excluded keys j of each row that lie in [c0, c1)."""
    local = exclude - c0
    hit = (exclude >= 0) & (local >= 0) & (local < c1 - c0)
    rows, slots = hit.nonzero(as_tuple=True)
    # Duplicate (row, column) pairs all write the same value: deterministic.
    scores[rows, local[rows, slots]] = -math.inf
