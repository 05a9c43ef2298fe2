"""Separation statistics of a code, exact in float64 and computed in blocks.

The pairwise cosines are visited in square tiles of the upper triangle of the
Gram matrix, so memory stays O(K·d + B²) for a tile size B: K = 100,000 at
d = 64 needs about 50 MiB of prototypes and one tile, never a K×K matrix.
On the CPU the tiles are NumPy products; with ``device="cuda"`` they are
torch products on the GPU (still float64), which is what makes the
statistics of a million prototypes in R^512 a matter of seconds.  A code
with a symmetry proved from its rows (:func:`spherecodes.orbit.resolve_orbit`:
one orbit of sign changes or of Z4 translations, or the first K words of one)
needs one or two rows of cosines and a tree of their block maxima.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from . import heavy
from .errors import SpherecodesError
from .memory import memory_limit, require_memory
from .orbit import resolve_orbit
from .sphere import DEFAULT_TILE, gram_tiles, nearest_others, one_lapack_thread, random_start

#: Largest allowed deviation of a row norm from 1 for a matrix to count as a code.
UNIT_TOL = 1e-9

#: Largest deviation of a row norm from 1 accepted, in any dtype, in a file
#: made by another tool (rows computed in float32 and saved as float64 miss 1
#: by about 1e-7): such rows are normalised in float64, and the code records it.
FILE_UNIT_TOL = 1e-6

#: A prototype is a Tammes rattler when its nearest-neighbour cosine is below
#: max-cos by more than this: moving it a little cannot change max-cos.
RATTLER_TOL = 1e-6

#: Tile side on a GPU, where larger products keep the device busy (512 MiB).
DEVICE_TILE = 8192


def rounding_tolerance(dtype, d: int) -> float:
    """How far from 1 the norm of a unit row stored as ``dtype`` may be: its rounding, sqrt(d) machine epsilons.

    Rounding each of d coordinates to a float of machine epsilon eps moves the
    norm by about sqrt(d)·eps/2; float64 rows keep :data:`UNIT_TOL`.

    Examples
    --------
    >>> bool(rounding_tolerance(np.float32, 4) == 2 * np.finfo(np.float32).eps)
    True
    >>> rounding_tolerance(np.float64, 4) == UNIT_TOL
    True
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f" or dtype.itemsize >= 8:
        return UNIT_TOL
    return max(UNIT_TOL, float(np.sqrt(d) * np.finfo(dtype).eps))


#: Rows whose norms are computed at a time (their squares are a temporary array: 64 MiB at d = 128).
_NORM_ROWS = 65536


def _row_norms(w: np.ndarray) -> np.ndarray:
    """Euclidean norms of the rows, exact also for rows like 1e200 or 1e-200 whose squares overflow or vanish."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        norms = np.concatenate([np.linalg.norm(w[start : start + _NORM_ROWS], axis=1)
                                for start in range(0, len(w), _NORM_ROWS)])
    extreme = ~((norms > 1e-150) & (norms < 1e150))
    if extreme.any():  # scaled by the largest entry first (the rare rows only: a copy of all of w can be GBs)
        rows = w[extreme]
        peak = np.abs(rows).max(axis=1)
        safe = np.where(peak > 0, peak, 1.0)
        with np.errstate(invalid="ignore"):  # a row holding infinity or NaN gets a NaN norm: refused by the caller
            norms[extreme] = peak * np.linalg.norm(rows / safe[:, None], axis=1)
    return norms


def validate_prototypes(prototypes, *, normalize: bool = False, tolerance: float = UNIT_TOL,
                        copy: bool = True) -> np.ndarray:
    """Check that ``prototypes`` is a code and return it as a float64 (K, d) array.

    Rows whose norms miss 1 by no more than their format's rounding
    (:func:`rounding_tolerance`: float32 or float16, what torch users save) or
    ``tolerance`` are normalised in float64; larger deviations need ``normalize``.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Rows are the prototypes: real numbers.
    normalize : bool
        Rescale the rows to unit length instead of refusing rows that are not.
    tolerance : float
        Deviation of a row norm from 1 normalised without ``normalize``, in
        any dtype (:data:`FILE_UNIT_TOL` for files made by other tools).
    copy : bool
        Return a copy even of float64 unit rows (False: the array itself, so
        that checking a million rows read from a bank takes no second copy).

    Raises
    ------
    SpherecodesError
        Not real numbers, not two-dimensional, fewer than two rows, no
        columns, non-finite values, a zero row, or (without ``normalize``) a
        row norm further than the tolerance from 1 — the message shows the
        largest deviation.

    Examples
    --------
    >>> validate_prototypes([[1, 0], [0, 1]]).dtype
    dtype('float64')
    >>> validate_prototypes([[2, 0], [0, 1]])
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: rows must be unit vectors: row 0 has norm 2 (largest deviation from 1: 1); rescale them or pass normalize=True
    """
    raw = np.asarray(prototypes)
    if raw.dtype.kind == "c":
        raise SpherecodesError(f"prototypes must be real numbers, got complex numbers ({raw.dtype})")
    if raw.dtype.kind not in "biuf":
        raise SpherecodesError(f"prototypes must be real numbers, got {raw.dtype} values")
    w = raw.astype(np.float64, copy=copy)
    if w.ndim != 2:
        raise SpherecodesError(f"prototypes must be a 2-D array (K rows of dimension d), got {w.ndim}-D shape "
                               f"{w.shape}")
    k, d = w.shape
    if k < 2 or d < 1:
        raise SpherecodesError(f"a code needs at least 2 rows and 1 column, got shape {w.shape}")
    norms = _row_norms(w)
    if not np.all(np.isfinite(norms)):  # a row of finite numbers has a finite norm (_row_norms scales it)
        bad = int(np.flatnonzero(~np.isfinite(norms))[0])
        raise SpherecodesError(f"prototypes must be finite; row {bad} has NaN or infinity")
    if np.any(norms == 0):
        raise SpherecodesError(f"row {int(np.argmin(norms))} is zero; a prototype needs a direction")
    if normalize:
        unit = w / norms[:, None]
        # A subnormal norm (rows like 1e-320) holds a few digits only: such rows are scaled by their largest
        # entry first (exact), so that they end as unit as the others.
        tiny = norms < np.finfo(np.float64).tiny
        if tiny.any():
            rows = w[tiny] / np.abs(w[tiny]).max(axis=1, keepdims=True)
            unit[tiny] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return unit
    deviation = np.abs(norms - 1.0)
    worst = int(np.argmax(deviation))
    if deviation[worst] <= UNIT_TOL:
        return w
    allowed = max(rounding_tolerance(raw.dtype, d), tolerance)
    if deviation[worst] <= allowed:
        return w / norms[:, None]
    stored = f"; rows stored as {raw.dtype} may miss 1 by {allowed:.3g}" if allowed > UNIT_TOL else ""
    raise SpherecodesError(
        f"rows must be unit vectors: row {worst} has norm {norms[worst]:.12g} "
        f"(largest deviation from 1: {deviation[worst]:.3g}{stored}); rescale them or pass normalize=True",
        flags={"normalize=True": "--normalize"},
    )


@dataclass(frozen=True)
class SeparationStats:
    """Pairwise separation of a code (max-cos and the cosine statistics of Mettes, van der Pol & Snoek 2019), all in float64.

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
        """HPN cosine-distance statistics (Mettes, van der Pol & Snoek 2019, Table 2): min, mean, max of ``1 − cos``."""
        return {"min": 1.0 - self.max_cos, "mean": 1.0 - self.mean_cos, "max": 1.0 - self.min_cos}

    @property
    def one_vs_one_distance(self) -> float:
        """Smallest Euclidean distance between two prototypes, ``sqrt(2 − 2·max-cos)``."""
        return math.sqrt(max(0.0, 2.0 - 2.0 * self.max_cos))


@dataclass(frozen=True)
class StatisticsProgress:
    """A progress report passed to the ``progress`` callable of :func:`separation_statistics`.

    Attributes
    ----------
    step : int
        Prototypes whose nearest neighbour is known.
    steps : int
        Prototypes in all (K).
    elapsed : float
        Seconds since the call.
    """

    step: int
    steps: int
    elapsed: float


def separation_statistics(prototypes, *, rattler_tol: float = RATTLER_TOL, tile: int | None = None, device=None,
                          max_memory: float | None = None, progress=None, orbit="auto") -> SeparationStats:
    """Exact separation statistics of a code, in float64 and in tiles.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Unit rows (checked by :func:`validate_prototypes`).
    rattler_tol : float
        Slack below max-cos under which a prototype counts as a rattler.
    tile : int, optional
        Side of the Gram tiles; memory is O(K·d + tile²).  Default
        :data:`DEFAULT_TILE` (:data:`DEVICE_TILE` on a GPU), smaller when
        ``max_memory`` requires it.
    device : str or torch.device, optional
        ``None`` or ``"cpu"``: NumPy on the CPU.  ``"cuda"``/``"cuda:N"``:
        torch on that GPU, float64.  ``"auto"``: the GPU when there is one.
    max_memory : float, optional
        Bytes the computation may use (``--max-memory``); default a safe
        fraction of what is available.
    progress : callable, optional
        Called with a :class:`StatisticsProgress` after each block of rows.
    orbit : Symmetry, None or "auto"
        The code's symmetry when already proved (the statistics then come
        from :meth:`spherecodes.symmetry.Symmetry.nearest`), None for a
        generic code, ``"auto"`` to prove it here
        (:func:`spherecodes.orbit.resolve_orbit`).

    Returns
    -------
    SeparationStats

    Raises
    ------
    SpherecodesError
        Not a code, or not even the prototypes and one row of tiles fit.

    Examples
    --------
    >>> from spherecodes.constructions import simplex_etf
    >>> s = separation_statistics(simplex_etf(4))
    >>> round(s.max_cos, 12), round(s.min_angle_deg, 6), len(s.rattlers)
    (-0.333333333333, 109.471221, 0)
    """
    w = validate_prototypes(prototypes, copy=False)  # only read: no copy of K·d numbers
    k, d = w.shape
    dev = _torch_device(device)
    tile = _tile_size(k, d, tile, dev, max_memory, "separation statistics")
    report = _reporter(progress, k)
    orbit = resolve_orbit(w, orbit)
    if orbit is not None:
        # Through the symmetry; a structured code turned by a rotation has the cosines of its structured rows,
        # to within the rotation's proved cosine_error.
        nearest_cos, nearest_index, min_cos = orbit.nearest(w)
    elif dev is None:
        nearest_cos, nearest_index, min_cos = _numpy_tiles(w, tile, report)
    else:
        nearest_cos, nearest_index, min_cos = _torch_tiles(w, tile, dev, nearest=True, report=report)

    total = w.sum(axis=0)
    squared_norms = np.einsum("ij,ij->", w, w)
    mean_cos = float((total @ total - squared_norms) / (k * (k - 1)))
    max_cos = float(nearest_cos.max())
    rattlers = np.flatnonzero(nearest_cos < max_cos - rattler_tol)
    return SeparationStats(k=k, d=d, max_cos=max_cos, min_cos=float(min_cos), mean_cos=mean_cos,
                           nearest_cos=nearest_cos, nearest_index=nearest_index, rattlers=rattlers,
                           rattler_tol=float(rattler_tol))


#: Largest K·d·min(K, d) for which :func:`spanned_dimensions` takes the singular values of all the rows.
SPAN_FULL_WORK = 2e10


@dataclass(frozen=True)
class Span:
    """How many dimensions a code's prototypes span.

    Attributes
    ----------
    rank : int
        The rank of the (K, d) matrix as :func:`numpy.linalg.matrix_rank`
        counts it (singular values above ``σ_max·max(K, d)·ε``).
    d : int
    zero_columns : int
        Coordinates that are zero in every prototype.
    exact : bool
        False where only a lower bound was found (then ``rank`` is at least
        this and at most ``d − zero_columns``).
    """

    rank: int
    d: int
    zero_columns: int
    exact: bool = True

    def describe(self) -> str:
        """One line, e.g. ``the prototypes span 507 of 512 dimensions (no all-zero column)``.

        Examples
        --------
        >>> Span(507, 512, 0).describe()
        'the prototypes span 507 of 512 dimensions (no all-zero column)'
        >>> Span(99, 2048, 1949).describe()
        'the prototypes span 99 of 2048 dimensions (1949 all-zero columns)'
        """
        zeros = ("no all-zero column" if self.zero_columns == 0 else "1 all-zero column" if self.zero_columns == 1
                 else f"{self.zero_columns} all-zero columns")
        rank = str(self.rank) if self.exact else f"at least {self.rank}"
        return f"the prototypes span {rank} of {self.d} dimensions ({zeros})"

    def to_dict(self) -> dict:
        return {"rank": self.rank, "d": self.d, "zero_columns": self.zero_columns, "exact": self.exact}


def spanned_dimensions(prototypes, most: int | None = None) -> Span:
    """The rank and the all-zero columns of a code's (K, d) matrix, in float64.

    The rank is numpy's (:func:`numpy.linalg.matrix_rank`, the singular
    values of all the rows) where that takes at most
    :data:`SPAN_FULL_WORK` operations; above, the singular values of 2d rows
    spread over the code, whose rank is a lower bound, exact where it
    reaches ``d − zero_columns`` or ``most`` (no larger rank is possible).

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
    most : int, optional
        A rank the rows cannot exceed, known from their construction (the
        live columns of a structured code before its rotation).

    Examples
    --------
    >>> from spherecodes.constructions import simplex_etf
    >>> spanned_dimensions(simplex_etf(12, 20)).describe()
    'the prototypes span 11 of 20 dimensions (9 all-zero columns)'
    """
    w = np.asarray(prototypes, dtype=np.float64)
    k, d = w.shape
    zero = int((~w.any(axis=0)).sum())
    with one_lapack_thread():
        if k * d * min(k, d) <= SPAN_FULL_WORK:
            return Span(int(np.linalg.matrix_rank(w)), d, zero)
        rows = np.unique(np.linspace(0, k - 1, 2 * d).astype(np.int64))
        singular = np.linalg.svd(w[rows], compute_uv=False)
    # numpy's threshold, with the sample's σ_max (at most the whole matrix's): a subset's singular values are at
    # most the whole matrix's, so its rank is a lower bound of the whole one.
    rank = int((singular > singular[0] * max(k, d) * np.finfo(np.float64).eps).sum())
    return Span(rank, d, zero, exact=rank >= min(d - zero, d if most is None else most))


def max_cos(prototypes, *, tile: int | None = None, device=None, max_memory: float | None = None) -> float:
    """``max_{i != j} <w_i, w_j>`` in float64, in tiles of the upper triangle.

    The same arithmetic as :func:`separation_statistics` without the
    per-prototype statistics (half the passes over each tile).  Parameters
    as there.

    Examples
    --------
    >>> from spherecodes.constructions import cross_polytope
    >>> max_cos(cross_polytope(3, 6))
    0.0
    """
    w = validate_prototypes(prototypes, copy=False)  # only read: no copy of K·d numbers
    k, d = w.shape
    dev = _torch_device(device)
    tile = _tile_size(k, d, tile, dev, max_memory, "max-cos")
    if dev is None:
        best = -np.inf
        for r, c, g in gram_tiles(w, tile):
            if r == c:
                np.fill_diagonal(g, -np.inf)
            best = max(best, float(g.max()))
        return best
    return _torch_tiles(w, tile, dev, nearest=False)


def random_code_max_cos(d: int, k: int, *, seed: int = 0, device=None, max_memory: float | None = None) -> float:
    """Max-cos of K independent uniform unit vectors in R^d: the baseline a code must beat.

    The vectors are the first random start of :func:`spherecodes.solvers.tammes`
    with the same seed; their max-cos is exact (all pairs, in tiles).

    Examples
    --------
    >>> from spherecodes.solvers import tammes
    >>> round(random_code_max_cos(8, 50), 6) > tammes(8, 50, seed=0, device="cpu").max_cos
    True
    """
    return max_cos(random_start(seed, 0, k, d), device=device, max_memory=max_memory)


def _torch_device(device):
    """None for the NumPy path (CPU), else a torch device (``"auto"``: the GPU when there is one)."""
    from .devices import cuda_possible, resolve_device  # torch is imported only for a device

    if device is None or str(device) == "cpu" or (str(device) == "auto" and not cuda_possible()):
        return None
    dev = resolve_device(device)
    return None if dev.type == "cpu" else dev


def _tile_size(k: int, d: int, tile, dev, max_memory, what: str) -> int:
    """The tile side: the default (or the one asked), shrunk to fit the memory limit."""
    if tile is None:
        tile = DEFAULT_TILE if dev is None else DEVICE_TILE
    tile = max(1, min(int(tile), k))
    where = "cpu" if dev is None else str(dev)
    fixed = 8.0 * (2 * k * d + 6 * k)
    limit = memory_limit(where, max_memory)
    # Three tile-sized arrays: the product, and the masks and maxima taken from it.
    while tile > 64 and fixed + 24.0 * tile * tile > limit:
        tile //= 2
    require_memory(fixed + 24.0 * tile * tile, f"{what} (K={k}, d={d}, tiles of {tile}x{tile})", where,
                   limit=max_memory)
    return tile


def _reporter(progress, k: int):
    """``report(rows_done)``: calls ``progress`` with a :class:`StatisticsProgress`; a no-op without one."""
    started = time.perf_counter()

    def report(done: int) -> None:
        if progress is not None:
            progress(StatisticsProgress(done, k, time.perf_counter() - started))

    return report


def _numpy_tiles(w: np.ndarray, tile: int, report=None) -> tuple[np.ndarray, np.ndarray, float]:
    """Nearest cosine and index of every row, and the smallest cosine, with NumPy tiles (tile × tile)."""
    k = w.shape[0]
    nearest_cos = np.empty(k)
    nearest_index = np.empty(k, dtype=np.int64)
    min_cos = np.inf
    for r in range(0, k, tile):
        rows = np.arange(r, min(r + tile, k))
        nearest_cos[rows], nearest_index[rows], low = nearest_others(w, rows, tile, smallest=True)
        min_cos = min(min_cos, low)
        if report is not None:
            report(int(rows[-1]) + 1)
    return nearest_cos, nearest_index, min_cos


def _torch_tiles(w: np.ndarray, tile: int, dev, nearest: bool, report=None):
    """The tiles of :func:`_numpy_tiles` as float64 torch products on ``dev``.

    With ``nearest=False`` only max-cos is returned.  The running maxima stay
    on the device; the host waits only at the end.  Ties go to the lowest
    index, as with NumPy: ``max`` returns the first maximum of a row, and a
    later tile replaces an earlier one only when strictly larger.
    """
    torch = heavy.torch()

    k = w.shape[0]
    x = torch.from_numpy(w).to(dev)
    best_cos = torch.full((k,), -math.inf, dtype=torch.float64, device=dev)
    best_index = torch.zeros(k, dtype=torch.int64, device=dev)
    low = torch.tensor(math.inf, dtype=torch.float64, device=dev)
    top = torch.tensor(-math.inf, dtype=torch.float64, device=dev)
    for r in range(0, k, tile):
        rows = x[r : r + tile]
        for c in range(r, k, tile):
            g = rows @ x[c : c + tile].T
            if r == c:
                diagonal = torch.arange(g.shape[0], device=dev)
                g[diagonal, diagonal] = -math.inf
            if not nearest:
                top = torch.maximum(top, g.max())
                continue
            if r == c:
                g[diagonal, diagonal] = math.inf
                low = torch.minimum(low, g.min())
                g[diagonal, diagonal] = -math.inf
            else:
                low = torch.minimum(low, g.min())
            _fold(best_cos, best_index, r, c, *g.max(dim=1))
            if r != c:
                _fold(best_cos, best_index, c, r, *g.max(dim=0))
        if report is not None:
            report(min(r + tile, k))
    if not nearest:
        return float(top)
    return best_cos.cpu().numpy(), best_index.cpu().numpy(), float(low)


def _fold(best_cos, best_index, start: int, other_start: int, values, local) -> None:
    """Fold tile maxima (``values`` at ``local + other_start``) into the running best of rows from ``start``."""
    torch = heavy.torch()

    span = slice(start, start + values.shape[0])
    better = values > best_cos[span]
    best_cos[span] = torch.where(better, values, best_cos[span])
    best_index[span] = torch.where(better, local + other_start, best_index[span])
