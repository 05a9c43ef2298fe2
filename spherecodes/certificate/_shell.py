"""Exact one-vs-rest distances from the nearest shell, without a QP (NumPy only).

For class k let ``g_k = max_{j≠k} <w_k, w_j>`` and let the nearest shell
``S_k`` be the prototypes that attain it (up to rounding).  Two feasible
points bound ``dist_k`` from both sides (the dual bound of Jiang et al. 2024,
Lemma C.6, and the primal of their Eq. C.22):

* the unit direction ``h = w_k/‖w_k‖`` gives ``dist_k >= min_{j≠k} <w_k − w_j, h>
  = ‖w_k‖ − g_k/‖w_k‖`` (so ``ρ >= 1 − max-cos`` for every code);
* a point ``v`` of the simplex supported on ``S_k`` gives ``dist_k <=
  ‖w_k − Σ v_j w_j‖``.  When ``Σ v_j w_j = g_k w_k`` the two agree: this is the
  case exactly when the shell is *balanced* around ``w_k``.

Three witnesses are tried: one antipodal pair of the shell,
``w_i + w_j = 2 g_k w_k`` (the cross-polytope, polygons, root systems and
lattice shells), the uniform weights on the whole shell (the simplex ETF),
and, for subsets of symmetric codes, non-negative weights on a spread part
of the shell with mixture ``g_k w_k`` (non-negative least squares, Lawson &
Hanson 1974; at most d + 1 points by Carathéodory).  A class is certified
here only when the two bounds meet within rounding; all others are left to
the QP.  Each block of classes costs one or two products with all prototypes
(docs/certificate.md, "2.0 Symmetric codes").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import heavy
from ..sphere import nearest_others
from ..rows import row_hashes
from ._blocks import assemble_supports

__all__ = [
    "EXACT_WIDTH", "GATHER_SHELL", "GIVE_UP_AFTER", "PAIR_ATTEMPTS", "SHELL_TOL", "ShellBounds",
    "classes_before_giving_up", "shell_block_bytes", "shell_block_rows", "shell_bounds",
]

#: Inner products within this of the largest count as the nearest shell.
#: Rounding in a product of unit vectors is ~d·1e-16; anything looser only
#: costs a witness that fails its check.
SHELL_TOL = 1e-12

#: A class counts as certified here when its interval is at most this wide
#: (and at most the requested tol): a balanced shell meets at rounding level.
EXACT_WIDTH = 1e-12

#: Members of the shell tried in turn as one end of an antipodal pair (a
#: subset of a symmetric code may lack the partner of some members).
PAIR_ATTEMPTS = 4

#: Classes examined without finding one balanced shell after which the rest
#: are left to the QP at once (an optimised code has no exact ties).
GIVE_UP_AFTER = 1024

#: Shells up to this size have their uniform witness gathered row by row;
#: larger ones are summed with one matrix product.
GATHER_SHELL = 64

#: Parts of a shell handed to non-negative least squares, in multiples of
#: d + 1 points, tried in turn: the first holds the balance point of every
#: class measured on subsets of binary codes, the larger catches the rest.
NNLS_PARTS = (3, 8)


@dataclass(frozen=True)
class ShellBounds:
    """What the nearest-shell pass proved.

    Attributes
    ----------
    lo : ndarray, shape (K,)
        The dual bound from ``h = w_k/‖w_k‖`` for the classes examined (less
        ``2‖r_k/‖r_k‖ − w_k/‖w_k‖‖`` for the settled ones, so that the bound of
        their witness's own direction is never below it), 0 for a class not
        examined when the pass gave up (see :data:`GIVE_UP_AFTER`).
    hi : ndarray, shape (K,)
        ``‖w_k − Σ v_j w_j‖`` where a balanced witness was found, else ``inf``.
    exact : ndarray of bool, shape (K,)
        Classes whose two bounds met (their interval is at rounding level).
    support_indices, support_weights : ndarray, shape (K, s)
        The witnesses, padded with −1 / 0 (rows not in ``exact`` are empty).
    """

    lo: np.ndarray
    hi: np.ndarray
    exact: np.ndarray
    support_indices: np.ndarray
    support_weights: np.ndarray


#: Prototypes per column tile of the scan that finds the nearest shells.
SHELL_TILE = 2048


def _bytes_per_row(k: int, d: int) -> float:
    """A class's share of a block: its row of a (rows × tile) float64 product and mask, and its shell."""
    return 9.0 * min(k, SHELL_TILE) + 16.0 * min(k, 4 * (d + 1)) + 8.0 * (2 * d)


def classes_before_giving_up(k: int, d: int, budget_bytes: float) -> int:
    """Classes :func:`shell_bounds` examines (whole blocks) before it gives up on a code none of whose
    classes it settles (:data:`GIVE_UP_AFTER`).

    Examples
    --------
    >>> classes_before_giving_up(100_000, 1024, 64 * 2**20) == 2 * shell_block_rows(100_000, 1024, 64 * 2**20)
    True
    """
    rows = shell_block_rows(k, d, budget_bytes)
    return min(k, -(-GIVE_UP_AFTER // rows) * rows)


#: The pass reports progress after each block: blocks of at most 1/SHELL_PROGRESS_BLOCKS of the classes
#: (a block of a code in a few hundred dimensions can take minutes), but of at least SHELL_MIN_BLOCK_ROWS.
SHELL_PROGRESS_BLOCKS = 50
SHELL_MIN_BLOCK_ROWS = 256


def shell_block_rows(k: int, d: int, budget_bytes: float) -> int:
    """Classes per block: a (rows × tile) float64 product and its mask, and the rows' shells.

    The shells are counted at up to min(K, 4(d + 1)) members a row on
    average (their stored part; a shell may be larger, and is then a
    product of a code with many exact ties, whose members are kept as int64
    pairs).  Within that memory, blocks are small enough for progress to
    come every 1/:data:`SHELL_PROGRESS_BLOCKS` of the classes.

    Examples
    --------
    >>> shell_block_rows(10_000, 384, 64 * 2**20), shell_block_rows(100, 8, 64 * 2**20)
    (256, 100)
    """
    by_progress = max(SHELL_MIN_BLOCK_ROWS, -(-k // SHELL_PROGRESS_BLOCKS))
    return int(max(1, min(k, budget_bytes // _bytes_per_row(k, d), by_progress)))


def shell_block_bytes(k: int, d: int, budget_bytes: float) -> float:
    """Working memory of one block of :func:`shell_bounds` (at most about ``budget_bytes``)."""
    return shell_block_rows(k, d, budget_bytes) * _bytes_per_row(k, d)


def shell_bounds(
    w: np.ndarray, *, tol: float, block_bytes: float, max_support: int, rows: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
) -> ShellBounds:
    """Certify the classes whose nearest shell is balanced (see the module text).

    Parameters
    ----------
    w : ndarray, shape (K, d)
        float64 rows of (almost) unit norm.
    tol : float
        Width that counts as certified (capped at :data:`EXACT_WIDTH`).
    block_bytes : float
        Working memory of one block of classes.
    max_support : int
        Widest witness that may be stored per class; uniform witnesses over
        larger shells are not tried (the pairs still are).
    rows : ndarray of int, optional
        Examine only these classes (still against all K prototypes); default all.
    progress : callable, optional
        Called after each block of classes with the number settled so far.

    Examples
    --------
    >>> from spherecodes.constructions import cross_polytope
    >>> b = shell_bounds(cross_polytope(5, 3), tol=1e-9, block_bytes=2**20, max_support=8)
    >>> bool(b.exact.all()), round(float(b.lo.min()), 12), round(float(b.hi.min()), 12)
    (True, 1.0, 1.0)
    """
    k, d = w.shape
    accept = min(float(tol), EXACT_WIDTH)
    norms = np.sqrt(np.einsum("ij,ij->i", w, w))
    lo = np.zeros(k)  # dist >= 0: the bound of classes not examined
    hi = np.full(k, np.inf)
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # rows, indices, weights
    rows_per_block = shell_block_rows(k, d, block_bytes)
    todo = np.arange(k) if rows is None else np.asarray(rows, dtype=np.int64)
    lookup = None  # the rows by their coordinates, built when a pair is first looked for
    settled_any = False
    for start in range(0, len(todo), rows_per_block):
        if start >= GIVE_UP_AFTER and not settled_any:
            break  # no balanced shell so far: an optimised code; the QP takes the rest
        block = todo[start : start + rows_per_block]
        n = len(block)
        best, nearest, _ = nearest_others(w, block, SHELL_TILE)
        own = norms[block]
        lo[block] = np.maximum(own - best / own, 0.0)
        unsettled = np.ones(n, dtype=bool)

        def settle(local, idx, wt, mixed):
            """Keep the witnesses whose bounds meet; the others stay unsettled."""
            nonlocal settled_any
            classes = block[local]
            r = w[classes] - mixed
            h = np.sqrt(np.einsum("nd,nd->n", r, r))
            # The witness is checked later with the direction r/‖r‖, whose
            # bound is within 2‖r/‖r‖ − w_k/‖w_k‖‖ of that of w_k/‖w_k‖
            # (Cauchy–Schwarz, ‖w_k − w_j‖ <= 2): store the smaller one.  A
            # duplicated prototype has r = 0 and distance 0.
            with np.errstate(invalid="ignore", divide="ignore"):
                drift = np.linalg.norm(r / h[:, None] - w[classes] / norms[classes, None], axis=1)
            low = np.where(h > 0, lo[classes] - 2.0 * drift, 0.0)
            # lo <= dist <= hi, so lo can exceed hi only by rounding.
            good = np.abs(h - low) <= accept * (1.0 + h)
            hi[classes[good]] = h[good]
            lo[classes[good]] = np.minimum(low[good], h[good])
            pieces.append((classes[good], idx[good], wt[good]))
            unsettled[local[good]] = False
            settled_any = settled_any or bool(good.any())

        # The pair through the nearest neighbour needs no more of the shell:
        # it settles a lattice shell or a cross-polytope after one scan.
        if lookup is None:
            lookup = _RowLookup(w)
        settle(np.arange(n), *_pair_witness(w, block, nearest, best, lookup))
        shell = _nearest_shells(w, block, best, np.flatnonzero(unsettled))
        count = shell.count
        # Carathéodory: some optimal witness has at most d + 1 points, so a
        # shell larger than that is tried as a pair first (two stored
        # indices), then by NNLS (at most d + 1), and only then uniformly
        # (as many indices as the shell has members).
        small = count <= d + 1
        stages = (("pair", ~small), ("uniform", small), ("pair", small), ("nnls", count > 2),
                  ("uniform", ~small & (count <= max_support)))
        for method, eligible in stages:
            if method == "uniform":
                chosen = np.flatnonzero(unsettled & eligible)
                if chosen.size:
                    settle(chosen, *_uniform_witness(w, shell, chosen))
            elif method == "pair":
                for attempt in range(1, PAIR_ATTEMPTS):
                    chosen = np.flatnonzero(unsettled & eligible & (count >= 2))
                    if chosen.size == 0:
                        break
                    first = shell.members[shell.offsets[chosen] + (attempt * count[chosen]) // PAIR_ATTEMPTS]
                    settle(chosen, *_pair_witness(w, block[chosen], first, best[chosen], lookup))
            else:
                tried = 0  # shells no larger than this were handed over whole already
                for parts in NNLS_PARTS:
                    chosen = np.flatnonzero(unsettled & eligible & (count > tried))
                    if chosen.size == 0:
                        break
                    tried = parts * (d + 1)
                    settle(chosen, *_nnls_witness(w, block, shell, chosen, best[chosen], tried))
        del shell
        if progress is not None:
            progress(int(np.isfinite(hi).sum()))
    exact = np.isfinite(hi)
    indices, weights = assemble_supports(k, pieces)
    return ShellBounds(lo=lo, hi=hi, exact=exact, support_indices=indices, support_weights=weights)


def _nearest_shells(w: np.ndarray, block: np.ndarray, best: np.ndarray, which: np.ndarray) -> _Shells:
    """The nearest shells (members within :data:`SHELL_TOL` of ``best``) of the classes ``block[which]``.

    The other classes of the block get empty shells.  One column tile at a
    time, so memory is a (rows × tile) product plus the shells.
    """
    n, k = len(block), len(w)
    if len(which) == 0:
        return _Shells(np.zeros(0, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))
    found_rows, found_cols = [], []
    classes = block[which]
    queries = w[classes]
    floor = (best[which] - SHELL_TOL)[:, None]
    for c0 in range(0, k, SHELL_TILE):
        g = queries @ w[c0 : c0 + SHELL_TILE].T
        own = np.flatnonzero((classes >= c0) & (classes < c0 + g.shape[1]))
        g[own, classes[own] - c0] = -np.inf
        rows, cols = np.nonzero(g >= floor)
        found_rows.append(which[rows])
        found_cols.append(cols + c0)
    rows, cols = np.concatenate(found_rows), np.concatenate(found_cols)
    order = np.argsort(rows, kind="stable")  # by row, then by column (the tiles came in order)
    count = np.bincount(rows, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    return _Shells(cols[order], offsets, count)


class _Shells:
    """The nearest shells of a block of classes as flat member lists (row-major).

    ``members[offsets[i] : offsets[i] + count[i]]`` are the prototypes in the
    shell of the block's i-th class, in increasing order.
    """

    def __init__(self, members: np.ndarray, offsets: np.ndarray, count: np.ndarray):
        self.members, self.offsets, self.count = members, offsets, count

    def __getitem__(self, i: int) -> np.ndarray:
        return self.members[self.offsets[i] : self.offsets[i] + self.count[i]]


class _RowLookup:
    """Find a prototype equal to a given vector: the rows keyed by their coordinates on a grid.

    The keys are hashed (:func:`spherecodes.rows.row_hashes`) and sorted once, so a
    look-up is a binary search and a comparison of d integers.  A vector
    within rounding of a row but on the other side of a grid boundary is
    not found; that only leaves its class to a later witness.
    """

    GRID = 2.0**-30

    def __init__(self, w: np.ndarray):
        self.w = w
        hashes = row_hashes(w, self._grid_words)
        self.order = np.argsort(hashes, kind="stable")  # the first of identical rows comes first
        self.sorted = hashes[self.order]

    @classmethod
    def _grid_words(cls, x: np.ndarray) -> np.ndarray:
        return np.rint(x / cls.GRID).astype(np.int64).view(np.uint64)

    def find(self, x: np.ndarray) -> np.ndarray:
        """Index of the row equal to each row of ``x`` on the grid (−1 where none is)."""
        wanted = row_hashes(x, self._grid_words)
        at = np.minimum(np.searchsorted(self.sorted, wanted), len(self.sorted) - 1)
        found = np.full(len(x), -1, dtype=np.int64)
        words = self._grid_words(x)
        same_hash = self.sorted[at] == wanted
        equal = same_hash & (self._grid_words(self.w[self.order[at]]) == words).all(axis=1)
        found[equal] = self.order[at[equal]]
        for i in np.flatnonzero(same_hash & ~equal):
            # Rows whose hashes collide are told apart by their words (the rare case).
            for position in range(at[i] + 1, len(self.sorted)):
                if self.sorted[position] != wanted[i]:
                    break
                if np.array_equal(self._grid_words(self.w[self.order[position]]), words[i]):
                    found[i] = self.order[position]
                    break
        return found


def _uniform_witness(w: np.ndarray, shell: _Shells, chosen: np.ndarray):
    """Uniform weights on each chosen row's whole shell, as padded (indices, weights) and the mixture."""
    count = shell.count[chosen]
    n, s = len(chosen), int(count.max())
    idx = np.full((n, s), -1, dtype=np.int64)
    rows = np.repeat(np.arange(n), count)
    slots = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    idx[rows, slots] = np.concatenate([shell[i] for i in chosen])
    weights = np.where(idx >= 0, 1.0 / count[:, None], 0.0)
    if s <= GATHER_SHELL:
        mixed = np.einsum("ns,nsd->nd", weights, w[np.maximum(idx, 0)])
    else:  # products with the 0/1 membership matrix of a few rows at a time (rows × K, within the tile budget)
        mixed = np.empty((n, w.shape[1]))
        step = max(1, SHELL_TILE * SHELL_TILE // len(w))
        for r0 in range(0, n, step):
            part = idx[r0 : r0 + step]
            membership = np.zeros((len(part), len(w)))
            at, slot = np.nonzero(part >= 0)
            membership[at, part[at, slot]] = 1.0
            mixed[r0 : r0 + step] = membership @ w
        mixed /= count[:, None]
    return idx, weights, mixed


def _pair_witness(w: np.ndarray, classes: np.ndarray, first: np.ndarray, best: np.ndarray, lookup: _RowLookup):
    """An antipodal pair ``w_i + w_j = 2 g_k w_k/‖w_k‖²`` through the shell member ``i = first`` of each class.

    The partner j is looked up among all rows by its coordinates; such a j
    is in the shell too (``<w_k, w_j> = 2 g_k − g_k``).  Where there is
    none, the witness is ``w_i`` twice, which the caller's check rejects
    (unless it is exact).
    """
    wk = w[classes]
    scale = 2.0 * best / np.einsum("nd,nd->n", wk, wk)
    partner = lookup.find(scale[:, None] * wk - w[first])
    missing = (partner < 0) | (partner == first) | (partner == classes)
    partner[missing] = first[missing]
    idx = np.stack([first, partner], axis=1)
    return idx, np.full(idx.shape, 0.5), 0.5 * (w[idx[:, 0]] + w[idx[:, 1]])


def _nnls_witness(w: np.ndarray, block: np.ndarray, shell: _Shells, chosen: np.ndarray, best: np.ndarray,
                  size: int):
    """Non-negative weights on (a spread part of) each chosen row's shell with mixture ``g_k w_k/‖w_k‖²``.

    Solves ``min ‖[Sᵀ; 1ᵀ] v − [g_k w_k/‖w_k‖²; 1]‖`` over ``v >= 0`` for the
    at most ``size`` shell members ``S`` taken evenly through the shell.  A
    basic solution has at most d + 1 non-zero weights.  The weights are
    returned whether or not the residual vanished: the caller keeps only the
    witnesses whose bounds meet.
    """
    nnls = heavy.scipy_optimize().nnls  # SciPy's optimiser only where a shell needs it

    n, d = len(chosen), w.shape[1]
    idx = np.full((n, d + 1), -1, dtype=np.int64)
    weights = np.zeros((n, d + 1))
    mixed = np.zeros((n, d))
    for row, (i, b) in enumerate(zip(chosen, best)):
        members = shell[i]
        part = members[np.unique(np.linspace(0, len(members) - 1, min(size, len(members))).astype(np.int64))]
        k = block[i]
        target = np.append(b / (w[k] @ w[k]) * w[k], 1.0)
        system = np.vstack([w[part].T, np.ones(len(part))])
        try:
            v, _ = nnls(system, target, maxiter=10 * len(part))
        except RuntimeError:  # iteration limit: no witness from this part
            continue
        keep = np.flatnonzero(v > 0)[: d + 1]
        if keep.size == 0:
            continue
        v = v[keep] / v[keep].sum()
        idx[row, : keep.size] = part[keep]
        weights[row, : keep.size] = v
        mixed[row] = v @ w[part[keep]]
    return idx, weights, mixed
