"""Separation statistics of a code, exact in float64 and computed in blocks.

The pairwise cosines are visited in square tiles of the upper triangle of the
Gram matrix, so memory stays O(K·d + B²) for a tile size B: K = 100,000 at
d = 64 needs about 50 MiB of prototypes and one tile, never a K×K matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .errors import SpherecodesError
from .memory import require_memory

#: Largest allowed deviation of a row norm from 1 for a matrix to count as a code.
UNIT_TOL = 1e-9

#: A prototype is a Tammes rattler when its nearest-neighbour cosine is below
#: max-cos by more than this: moving it a little cannot change max-cos.
RATTLER_TOL = 1e-6

#: Side of the square Gram tiles (a 2048×2048 float64 tile is 32 MiB).
DEFAULT_TILE = 2048


def validate_prototypes(prototypes, *, normalize: bool = False) -> np.ndarray:
    """Check that ``prototypes`` is a code and return it as a float64 (K, d) array.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Rows are the prototypes.
    normalize : bool
        Rescale the rows to unit length instead of refusing rows that are not.

    Raises
    ------
    SpherecodesError
        Not two-dimensional, fewer than two rows, no columns, non-finite
        values, a zero row, or (without ``normalize``) a row norm further than
        :data:`UNIT_TOL` from 1 — the message shows the largest deviation.

    Examples
    --------
    >>> validate_prototypes([[1, 0], [0, 1]]).dtype
    dtype('float64')
    >>> validate_prototypes([[2, 0], [0, 1]])
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: rows must be unit vectors: row 0 has norm 2 (largest deviation from 1: 1); rescale them or pass normalize=True
    """
    w = np.asarray(prototypes, dtype=np.float64)
    if w.ndim != 2:
        raise SpherecodesError(
            f"prototypes must be a 2-D array (K rows of dimension d), got {w.ndim}-D shape {w.shape}"
        )
    k, d = w.shape
    if k < 2 or d < 1:
        raise SpherecodesError(
            f"a code needs at least 2 rows and 1 column, got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)):
        bad = int(np.argwhere(~np.isfinite(w))[0, 0])
        raise SpherecodesError(f"prototypes must be finite; row {bad} has NaN or infinity")
    norms = np.linalg.norm(w, axis=1)
    if np.any(norms == 0):
        raise SpherecodesError(f"row {int(np.argmin(norms))} is zero; a prototype needs a direction")
    if normalize:
        return w / norms[:, None]
    deviation = np.abs(norms - 1.0)
    worst = int(np.argmax(deviation))
    if deviation[worst] > UNIT_TOL:
        raise SpherecodesError(
            f"rows must be unit vectors: row {worst} has norm {norms[worst]:.12g} "
            f"(largest deviation from 1: {deviation[worst]:.3g}); rescale them or pass normalize=True"
        )
    return w


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


@dataclass(frozen=True)
class SeparationStats:
    """Pairwise separation of a code (SPEC §1), all in float64.

    Attributes
    ----------
    k, d : int
        Number of prototypes and dimension.
    max_cos : float
        Largest cosine between two different prototypes.
    min_cos : float
        Smallest cosine between two different prototypes.
    mean_cos : float
        Mean cosine over ordered pairs i ≠ j.
    nearest_cos : ndarray, shape (K,)
        For each prototype, the cosine to its nearest other prototype.
    nearest_index : ndarray, shape (K,)
        Index of that nearest prototype.
    rattlers : ndarray
        Indices of Tammes rattlers: ``nearest_cos < max_cos − rattler_tol``.
    rattler_tol : float
    """

    k: int
    d: int
    max_cos: float
    min_cos: float
    mean_cos: float
    nearest_cos: np.ndarray
    nearest_index: np.ndarray
    rattlers: np.ndarray
    rattler_tol: float

    @property
    def min_angle_deg(self) -> float:
        """Smallest angle between two prototypes, in degrees."""
        return math.degrees(math.acos(min(1.0, max(-1.0, self.max_cos))))

    @property
    def separation(self) -> dict:
        """HPN cosine-distance statistics (seed 002 Table 2): min, mean, max of ``1 − cos``."""
        return {
            "min": 1.0 - self.max_cos,
            "mean": 1.0 - self.mean_cos,
            "max": 1.0 - self.min_cos,
        }

    @property
    def one_vs_one_distance(self) -> float:
        """Smallest Euclidean distance between two prototypes, ``sqrt(2 − 2·max-cos)``."""
        return math.sqrt(max(0.0, 2.0 - 2.0 * self.max_cos))


def separation_statistics(
    prototypes, *, rattler_tol: float = RATTLER_TOL, tile: int = DEFAULT_TILE
) -> SeparationStats:
    """Exact separation statistics of a code, in float64 and in tiles.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Unit rows (checked by :func:`validate_prototypes`).
    rattler_tol : float
        Slack below max-cos under which a prototype counts as a rattler.
    tile : int
        Side of the Gram tiles; memory is O(K·d + tile²).

    Returns
    -------
    SeparationStats

    Examples
    --------
    >>> from spherecodes.constructions import simplex_etf
    >>> s = separation_statistics(simplex_etf(4))
    >>> round(s.max_cos, 12), round(s.min_angle_deg, 6), len(s.rattlers)
    (-0.333333333333, 109.471221, 0)
    """
    w = validate_prototypes(prototypes)
    k, d = w.shape
    tile = max(1, min(int(tile), k))
    require_memory(8.0 * (2 * k * d + 3 * tile * tile + 4 * k), f"separation statistics (K={k}, d={d})")

    nearest_cos = np.full(k, -np.inf)
    nearest_index = np.zeros(k, dtype=np.int64)
    min_cos = np.inf
    for r, c, g in gram_tiles(w, tile):
        if r == c:
            # Self-products are not pairs: exclude them from both max and min.
            np.fill_diagonal(g, np.inf)
            min_cos = min(min_cos, float(g.min()))
            np.fill_diagonal(g, -np.inf)
        else:
            min_cos = min(min_cos, float(g.min()))
        _update_nearest(nearest_cos, nearest_index, r, c, g, axis=1)
        if r != c:
            _update_nearest(nearest_cos, nearest_index, c, r, g, axis=0)

    total = w.sum(axis=0)
    squared_norms = np.einsum("ij,ij->", w, w)
    mean_cos = float((total @ total - squared_norms) / (k * (k - 1)))
    max_cos = float(nearest_cos.max())
    rattlers = np.flatnonzero(nearest_cos < max_cos - rattler_tol)
    return SeparationStats(
        k=k,
        d=d,
        max_cos=max_cos,
        min_cos=float(min_cos),
        mean_cos=mean_cos,
        nearest_cos=nearest_cos,
        nearest_index=nearest_index,
        rattlers=rattlers,
        rattler_tol=float(rattler_tol),
    )


def _update_nearest(best_cos, best_index, start, other_start, g, axis):
    """Fold the row (axis=1) or column (axis=0) maxima of a tile into the running best."""
    local = g.argmax(axis=axis)
    values = g[np.arange(g.shape[0]), local] if axis == 1 else g[local, np.arange(g.shape[1])]
    span = slice(start, start + values.shape[0])
    better = values > best_cos[span]
    best_cos[span] = np.where(better, values, best_cos[span])
    best_index[span] = np.where(better, local + other_start, best_index[span])
