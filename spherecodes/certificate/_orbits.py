"""Certificates of codes that are one orbit of sign changes, or the first K words of one (:mod:`spherecodes.orbit`).

For an orbit, class 0 is certified against all K rows and the group gives
every other class; for the first K words of an orbit, the whole orbit's
class 0 is certified from its balanced nearest shell and its witness moved
to each class (:func:`.witness.prefix_bounds`).  NumPy only, but for class
0 of an orbit whose nearest shell is not balanced (the QP, :mod:`._solve`).
"""

from __future__ import annotations

import time

import numpy as np

from .. import memory
from ..memory import Estimate, memory_limit, require_memory
from ._budget import DEFAULT_TOL, max_support, shell_block_budget
from ._result import CertificateProgress, OneVsRestCertificate, orbit_witness_certificate
from ._shell import SHELL_TOL, shell_block_bytes, shell_bounds
from ._solve import solve_rest
from .witness import PAIR_ELEMENTS, moved_witness_fits, prefix_bounds

__all__ = ["prefix_bytes", "prefix_certificate", "prefix_estimate", "sign_orbit_certificate"]


def sign_orbit_certificate(w_np, orbit, tol, rattler_tol, m, device, max_memory, started, progress, deadline):
    """The certificate of a code that is one orbit of sign changes (:mod:`spherecodes.orbit`), from class 0.

    Class 0 is certified like any class (its nearest shell, else the QP),
    against all K prototypes; the sign change ``D`` taking ``w_0`` to ``w_c``
    is an isometry of the code, so ``dist_c = dist_0``, and class 0's witness
    moved by ``D`` (its indices mapped by the orbit) is a witness of class c
    with the same weights, whose residual is class 0's moved by ``D``: sign
    changes are exact in float64, so its norm and bound are class 0's bit
    for bit.  O(K·d) for class 0's scan; class 0's witness is what is kept.
    """
    k = len(w_np)
    first = np.zeros(1, dtype=np.int64)
    shell = shell_bounds(w_np, tol=tol, block_bytes=shell_block_budget(max_memory),
                         max_support=max_support(k, max_memory), rows=first)
    lo, hi = shell.lo, shell.hi
    if shell.exact[0]:
        indices, weights = shell.support_indices[0], shell.support_weights[0]
        rounds, where = 1, "cpu"
    else:
        pieces = []
        rounds, where = solve_rest(w_np, first, np.full(k, -1, dtype=np.int64), m, tol, device, max_memory, lo, hi,
                                   pieces, progress=None, done=0, started=started, deadline=deadline)
        indices, weights = pieces[0][1][0], pieces[0][2][0]
    used = indices >= 0
    indices, weights = indices[used][None, :], weights[used][None, :]
    residual = w_np[0] - weights[0] @ w_np[indices[0]]
    norm = float(np.sqrt(residual @ residual))
    feature = residual / norm if norm > 0 else np.full_like(residual, np.nan)
    if progress is not None:
        progress(CertificateProgress(k, k, time.perf_counter() - started))
    return OneVsRestCertificate(
        lo=np.full(k, min(lo[0], norm)), hi=np.full(k, norm), tol=float(tol), rattler_tol=float(rattler_tol),
        support_indices=indices, support_weights=weights, features=feature[None, :], duplicates=[],
        rounds=rounds, device=where, wall_time=time.perf_counter() - started, orbit=orbit,
    )


def prefix_certificate(w_np, prefix, tol, rattler_tol, max_memory, started, progress):
    """The certificate of the first K words of an orbit of sign changes (:class:`spherecodes.orbit.OrbitPrefix`),
    or None where the whole orbit does not certify ρ.

    The whole orbit's class 0 is certified from its balanced nearest shell
    (:func:`_prefix_witness`), its dual bound checked against all 2^t
    words of the orbit; :func:`.witness.prefix_bounds` turns that witness
    into every class's interval: the moved witness where it stays among the
    rows, the nearest row elsewhere.  O(K·(d + s + log K)).  None when the
    shell is not balanced or no moved witness stays among the rows.
    """
    k = len(w_np)
    cosines = prefix.cosines(w_np)  # the witness's shell and every row's nearest row both start from them
    found = _prefix_witness(w_np, prefix, cosines, tol, max_memory)
    if found is None:
        return None
    words, weights = found
    fits = moved_witness_fits(k, words)
    if not fits.any():
        return None
    _, nearest_rows, _ = prefix.nearest(w_np, cosines)
    nearest = np.where(fits, -1, nearest_rows)
    lo, hi, feature = prefix_bounds(w_np, prefix, words, weights, nearest)
    return orbit_witness_certificate(lo, hi, words[None, :], weights[None, :], feature[None, :], nearest, prefix,
                                     tol, rattler_tol, started, progress)


#: Witnesses found by :func:`_prefix_witness`, by the orbit they are of (its generators and row 0's signs and
#: zero columns, which fix every word up to the common magnitude) and the tolerance: a run's estimate searches
#: the same orbit as the run (at d = 2048 each search is a minute of NNLS).  A witness taken from here is
#: checked again like any other (:func:`prefix_bounds`).
_PREFIX_WITNESSES: dict = {}


def _prefix_witness(w_np, prefix, cosines, tol, max_memory):
    """A balanced witness of the whole orbit's class 0 as (words, weights), or None (remembered, see
    :data:`_PREFIX_WITNESSES`)."""
    key = (prefix.k, prefix.generators.tobytes(), np.packbits(w_np[0] < 0).tobytes(),
           np.packbits(w_np[0] != 0).tobytes(), float(tol))
    if key not in _PREFIX_WITNESSES:
        if len(_PREFIX_WITNESSES) >= 8:
            _PREFIX_WITNESSES.clear()
        _PREFIX_WITNESSES[key] = _search_prefix_witness(w_np, prefix, cosines, tol, max_memory)
    return _PREFIX_WITNESSES[key]


def _search_prefix_witness(w_np, prefix, cosines, tol, max_memory):
    """A balanced witness of the whole orbit's class 0 as (words, weights), or None.

    Its candidates are the orbit's nearest words to ``w_0``, its nearest
    shell, built from the rows (:meth:`spherecodes.orbit.OrbitPrefix.rows_of`).
    The nearest-shell pass tries the shell's words below 2^s for s = 1, 2,
    … first (a witness there moves to rows for all classes but the last
    ones, so ρ's upper end is the orbit's and most classes are certified),
    then its words below K, then the whole shell.
    """
    k = len(w_np)
    f = cosines.copy()
    f[0] = -np.inf
    shell = np.flatnonzero(f >= f.max() - SHELL_TOL)
    first = np.zeros(1, dtype=np.int64)
    tried = set()
    # Words below 2^s move with class i to words below K for every i below K rounded down to a multiple of 2^s:
    # the smaller the witness's words, the more classes it certifies.
    for bound in [1 << s for s in range(1, prefix.rank)] + [k, prefix.words]:
        near = shell[shell < bound]
        if len(near) < 2 or len(near) in tried:
            continue
        tried.add(len(near))
        small = np.vstack([w_np[:1], prefix.rows_of(w_np, near)])
        found = shell_bounds(small, tol=tol, block_bytes=shell_block_budget(max_memory),
                             max_support=max_support(len(small), max_memory), rows=first)
        if found.exact[0]:
            used = found.support_indices[0] >= 0
            return near[found.support_indices[0][used] - 1], found.support_weights[0][used]
    return None


def prefix_bytes(k: int, d: int, words: int, max_memory: float | None) -> float:
    """Working memory of the certificate of the first K words of an orbit of 2^t ``words``, or of its check.

    The tree of the nearest rows (the cosines and a level of maxima with
    their words, and five per-class arrays), the per-class bounds and
    nearest rows, the nearest shell's rows (counted as 4(d + 1), or all
    words if fewer) and the shell pass's block.

    Examples
    --------
    >>> prefix_bytes(1_000_000, 128, 2**20, None) < 2**30
    True
    """
    candidates = min(words, 4 * (d + 1))
    return (8.0 * (5 * words + 10 * k) + 8.0 * candidates * d + 2 * 8.0 * PAIR_ELEMENTS
            + shell_block_bytes(candidates, d, shell_block_budget(max_memory)))


def prefix_estimate(w: np.ndarray, prefix, max_memory: float | None) -> Estimate | None:
    """The certificate of the first K words of an orbit, timed on its parts (None where it falls back to every
    class: no balanced witness, or none that stays among the rows): the witness of the whole orbit's class 0
    and the classes its moved witness fits found here (as the certificate finds them), and the tree of nearest
    rows and the bounds' products, counted as three times the cosines' two products (which the witness's
    search began with)."""
    k, d = w.shape
    nbytes = prefix_bytes(k, d, prefix.words, max_memory)
    require_memory(nbytes, f"the certificate's inputs and results (K={k}, d={d})", "cpu", limit=max_memory)
    started = time.perf_counter()
    cosines = prefix.cosines(w)
    products = time.perf_counter()
    found = _prefix_witness(w, prefix, cosines, DEFAULT_TOL, max_memory)
    if found is None or not moved_witness_fits(k, found[0]).any():
        return None
    seconds = 4 * (products - started) + (time.perf_counter() - products)
    return Estimate(f"certificate of K = {k} classes in d = {d} (the first {k:,} of the {prefix.words:,} words of "
                    "one orbit of sign changes: the whole orbit's class 0 by its nearest shell, and its images)",
                    "cpu", memory.process_peak(nbytes), memory_limit("cpu", max_memory), seconds)
