"""Certificates of codes with a proved symmetry (:class:`spherecodes.symmetry.Symmetry`), from class 0.

A code that is one orbit of sign changes (:class:`spherecodes.orbit.SignOrbit`)
has class 0 certified against all K rows, and the group moves its witness
to every other class.  A code that is the first K words of an orbit of 2^t
words (:class:`spherecodes.symmetry.OrbitWords`: the first K messages of a
linear code, :class:`spherecodes.orbit.OrbitPrefix`; a Kerdock code and its
first K points, :class:`spherecodes.z4orbit.Z4Orbit`) is certified through
the whole orbit F, as :class:`~spherecodes.symmetry.OrbitWords` proves:
``dist_i >= dist_0(F) >= lo_0``, and ``hi_i = ‖r_0‖`` wherever the witness
of F's class 0 moved to class i holds rows only.

F's class 0's witnesses come from its nearest shell, in the candidate sets
of words that the structure names
(:meth:`~spherecodes.symmetry.OrbitWords.witness_candidates`: the smallest
words first for a prefix of sign changes, one other orthonormal basis at a
time for a Kerdock code; docs/certificate.md, 2.0d and 2.0f).  A class that
finds none is bounded by its nearest row.  O(K·(d + s + t) + 2^t·d).  NumPy
only, but for class 0 of an orbit of sign changes whose nearest shell is not
balanced (the QP, :mod:`._solve`).
"""

from __future__ import annotations

import time

import numpy as np

from .. import memory
from ..memory import Estimate, memory_limit, require_memory
from ..orbit import OrbitPrefix
from ..symmetry import PAIR_ELEMENTS
from ..z4orbit import Z4Orbit
from ._blocks import assemble_supports
from ._budget import DEFAULT_TOL, max_support, shell_block_budget
from ._result import CertificateProgress, OneVsRestCertificate
from ._shell import SHELL_TOL, shell_block_bytes, shell_bounds
from ._solve import solve_rest

__all__ = ["orbit_words_bytes", "orbit_words_certificate", "orbit_words_estimate", "sign_orbit_certificate"]


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


def orbit_words_certificate(w: np.ndarray, orbit, tol: float, rattler_tol: float, max_memory: float | None,
                            started: float, progress=None) -> OneVsRestCertificate | None:
    """The certificate of the first K words of an orbit (:class:`spherecodes.symmetry.OrbitWords`), or None where
    the whole orbit does not certify ρ (no balanced witness of its class 0, or none that stays among the rows).

    Each class takes the first of class 0's witnesses (:func:`_witnesses`)
    whose moved words are all rows, else its nearest row; witnesses no class
    takes (but the first, whose dual bound bounds every class) are dropped.
    ``progress`` gets a :class:`CertificateProgress` once, at the end.
    """
    k, d = w.shape
    require_memory(orbit_words_bytes(k, d, orbit.words, orbit.tree_numbers, max_memory),
                   f"the certificate's inputs and results (K={k}, d={d})", "cpu", limit=max_memory)
    cosines = orbit.cosines(w)  # the witnesses' shell and every row's nearest row both start from them
    choice = np.full(k, -1, dtype=np.int64)
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    for words, weights in _witnesses(w, orbit, cosines, tol, max_memory):
        open_classes = np.flatnonzero(choice < 0)
        fits = orbit.fits(open_classes, words)
        if not kept or fits.any():
            choice[open_classes[fits]] = len(kept)
            kept.append((words, weights))
        if (choice >= 0).all():
            break
    if not kept or (choice < 0).all():
        return None
    nearest = -1 - choice
    if (choice < 0).any():
        _, nearest_rows, _ = orbit.nearest(w, cosines)
        nearest = np.where(choice < 0, nearest_rows, nearest)
    indices, weights = assemble_supports(len(kept), [([j], words[None, :], mix[None, :])
                                                     for j, (words, mix) in enumerate(kept)])
    lo, hi, features = orbit.witness_bounds(w, indices, weights, nearest)
    cert = OneVsRestCertificate(
        lo=lo, hi=hi, tol=float(tol), rattler_tol=float(rattler_tol), support_indices=indices,
        support_weights=weights, features=features, duplicates=[], rounds=1, device="cpu",
        wall_time=time.perf_counter() - started, orbit=orbit, nearest=nearest,
    )
    if not cert.rho_certified:
        return None
    if progress is not None:
        progress(CertificateProgress(k, k, time.perf_counter() - started))
    return cert


def orbit_words_estimate(w: np.ndarray, orbit, max_memory: float | None) -> Estimate | None:
    """The certificate of the first K words of an orbit, timed on its parts; None where it falls back to every
    class (no balanced witness of class 0, or none that stays among the rows).

    The witnesses are searched for as the certificate does; the bounds' products and the nearest rows are counted as three
    times the cosines' two products, which the search began with.
    """
    k, d = w.shape
    nbytes = orbit_words_bytes(k, d, orbit.words, orbit.tree_numbers, max_memory)
    require_memory(nbytes, f"the certificate's inputs and results (K={k}, d={d})", "cpu", limit=max_memory)
    started = time.perf_counter()
    cosines = orbit.cosines(w)
    products = time.perf_counter()
    if not any(orbit.fits(np.arange(k), words).any()
               for words, _ in _witnesses(w, orbit, cosines, DEFAULT_TOL, max_memory)):
        return None
    seconds = 4 * (products - started) + (time.perf_counter() - products)
    return Estimate(f"certificate of K = {k} classes in d = {d} ({orbit.describe()}: the whole orbit's class 0 by "
                    "its nearest shell, and its images)", "cpu", memory.process_peak(nbytes),
                    memory_limit("cpu", max_memory), seconds)


#: Witnesses found by :func:`_witnesses`, by the orbit they are of (its kind, size and stored arrays, and row 0's
#: signs and zero columns, which fix every word up to the common magnitude) and the tolerance: a run's estimate
#: searches the same orbit as the run (at d = 2048 each search is a minute of NNLS).  A witness taken from here
#: is checked again like any other (:meth:`~spherecodes.symmetry.OrbitWords.witness_bounds`).
_WITNESSES: dict = {}


def _witnesses(w: np.ndarray, orbit, cosines: np.ndarray, tol: float, max_memory: float | None):
    """Balanced witnesses of the whole orbit's class 0 as (words, weights).

    A search for one witness is remembered whole (see :data:`_WITNESSES`);
    one for several is done as the caller asks for them, which stops once
    every class has one.
    """
    search = _search_witnesses(w, orbit, cosines, tol, max_memory)
    if orbit.several_witnesses:
        return search
    key = (type(orbit).__name__, orbit.k, *(np.ascontiguousarray(a).tobytes() for a in orbit.stored().values()),
           np.packbits(w[0] < 0).tobytes(), np.packbits(w[0] != 0).tobytes(), float(tol))
    if key not in _WITNESSES:
        if len(_WITNESSES) >= 8:
            _WITNESSES.clear()
        _WITNESSES[key] = list(search)
    return _WITNESSES[key]


def _search_witnesses(w: np.ndarray, orbit, cosines: np.ndarray, tol: float, max_memory: float | None):
    """Balanced witnesses of the whole orbit's class 0 as (words, weights), one per candidate set that holds one
    (the first only, unless the structure keeps several).

    The candidates are the orbit's nearest words to ``w_0``, its nearest
    shell, built from the rows (:meth:`~spherecodes.symmetry.OrbitWords.rows_of`);
    the nearest-shell pass settles them where they are balanced.
    """
    f = cosines.copy()
    f[0] = -np.inf
    shell = np.flatnonzero(f >= f.max() - SHELL_TOL)
    first = np.zeros(1, dtype=np.int64)
    for near in orbit.witness_candidates(shell):
        small = np.vstack([w[:1], orbit.rows_of(w, near)])
        # Several witnesses are capped as the code's own are (K classes' worth of supports), a single one as its
        # shell's.
        support = max_support(len(w) if orbit.several_witnesses else len(small), max_memory)
        found = shell_bounds(small, tol=tol, block_bytes=shell_block_budget(max_memory), max_support=support,
                             rows=first)
        if found.exact[0]:
            used = found.support_indices[0] >= 0
            yield near[found.support_indices[0][used] - 1], found.support_weights[0][used]
            if not orbit.several_witnesses:
                return


def orbit_words_bytes(k: int, d: int, words: int, tree_numbers: int, max_memory: float | None) -> float:
    """Working memory of the certificate of the first K words of an orbit of 2^t ``words``, or of its check: the
    trees of the nearest rows (``tree_numbers`` per word, :attr:`~spherecodes.symmetry.OrbitWords.tree_numbers`),
    ten per-class arrays, the pairs formed for the nearest rows, the nearest shell's rows (counted as 4(d + 1), or
    all words if fewer) and the shell pass's block.

    Examples
    --------
    >>> orbit_words_bytes(1_000_000, 128, 2**20, OrbitPrefix.tree_numbers, None) < 2**30
    True
    >>> orbit_words_bytes(100_000, 1024, 2**17, Z4Orbit.tree_numbers, None) < 2**30
    True
    """
    candidates = min(words, 4 * (d + 1))
    return (8.0 * (tree_numbers * words + 10 * k) + 2 * 8.0 * PAIR_ELEMENTS + 8.0 * candidates * d
            + shell_block_bytes(candidates, d, shell_block_budget(max_memory)))
