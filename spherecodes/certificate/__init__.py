"""Certified one-vs-rest distances of a code (Jiang et al. 2024, Def. 2.1, Lemma C.4/C.6).

The one-vs-rest distance of class k is the distance from its prototype to the
convex hull of the other prototypes::

    dist_k = min over v in the simplex of ‖w_k − Σ_{j≠k} v_j w_j‖

and ρ = min_k dist_k is the Softmax-Code objective.  Every number reported here
comes with a proof that it is right to within the interval ``[lo_k, hi_k]``:

* ``hi_k = ‖r_k‖`` with ``r_k = w_k − Σ v_j w_j`` for a point ``v`` of the
  simplex (any feasible point of the QP bounds its minimum from above);
* ``lo_k = min_{j≠k} <w_k − w_j, h_k>`` with ``h_k = r_k/‖r_k‖`` (weak duality of
  Lemma C.6: for every unit h and every v in the simplex,
  ``‖w_k − Σ v_j w_j‖ >= Σ v_j <w_k − w_j, h> >= min_j <w_k − w_j, h>``).

Both are evaluated in float64 over *all* K prototypes, whatever the solver did,
so a certificate never contains a number that was not checked.

First, without any QP (NumPy only, :mod:`._shell`): the direction
``h = w_k`` gives ``lo_k = 1 − max_{j≠k} <w_k, w_j>``, and where the nearest
shell of ``w_k`` is balanced (one antipodal pair of it, uniform weights on
it, or non-negative weights on part of it found by NNLS, put the mixture at
``(1 − lo_k) w_k``) that primal point gives ``hi_k = lo_k`` up to rounding.
Every class of a symmetric code (the simplex ETF, cross-polytopes and their
subsets, polygons, root systems and lattice shells, binary codes with a
transitive group) and of the large subsets of binary codes that
:mod:`spherecodes.structured` chooses is certified this way with one or two
products per block of classes, in any rotation.

Next, for a code with K <= d whose Gram matrix is well conditioned (a
near-orthonormal file, equiangular basis vectors), the classes still open
go to :mod:`._gram` (NumPy only): projected gradient steps with momentum on
the whole Gram matrix, the step and momentum from its extreme eigenvalues,
a block of classes per product.  There the witnesses hold hundreds of
points, which an active-set solver would add a few per pivot.

The other classes go to the solver (as a batch, on CPU or CUDA through torch):

1. each class gets a candidate set, its ``m`` nearest prototypes, out of
   its ``max(m, 4d)`` nearest ("known") ones (a product of a block of
   classes with all K prototypes, streamed over tiles of prototypes so that
   no block × K matrix is needed);
2. Wolfe's minimum-norm-point algorithm runs on the candidate sets of a block of
   classes at once: the support ("corral") of each class is kept, the affine
   minimiser of the corral is one batched Cholesky solve, a ratio test drops
   points that would get negative weight, and the most violating candidates
   join the corral when it is optimal.  Classes whose QP is nearly
   degenerate (optimised codes, where about d neighbours sit at nearly the
   same cosine) start Wolfe from the support suggested by a few
   interior-point iterations instead;
3. the optimality condition ``max_j <w_j, r_k> = <Σ v_j w_j, r_k>`` is
   checked against all K prototypes: exactly on the known ones, and for the
   rest through a bound from the cosine of the last known one
   (Cauchy–Schwarz on the part orthogonal to ``w_k``); only the classes for
   which that bound is not below the best exact score get one matrix product
   with all K prototypes (streamed the same way).  Violators join the
   candidate sets and step 2 resumes for the classes that had them (only
   they are checked again).  The same maximum gives ``lo_k``.  The candidate
   search and the scans are screened in float32, with every entry that could
   be the maximum recomputed in float64.

The blocks are sized to the memory allowed (``max_memory``, by default a safe
fraction of the device's), so memory is O(K·d) plus the blocks, whatever K.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import cluster, heavy, memory
from ..devices import resolve_device, torch_threads
from ..errors import SpherecodesError
from ..memory import Estimate, memory_limit, require_memory
from ..orbit import OrbitPrefix, SignOrbit, resolve_orbit
from ..rotated import Rotated
from ..stats import RATTLER_TOL, validate_prototypes
from ..z4orbit import Z4Orbit
from . import _blocks
from ..rows import equal_rows
from ._blocks import assemble_supports, host_memory, per_class_bytes
from ._gram import GramPass, gram_applies, gram_block_bytes, gram_bytes
from ._result import CertificateOutOfTime, CertificateProgress, OneVsRestCertificate
from ._shell import SHELL_TOL, classes_before_giving_up, shell_block_bytes, shell_bounds
from ._z4 import z4_bytes, z4_certificate, z4_estimate
from .witness import (
    PAIR_ELEMENTS, WITNESS_SLACK, moved_witness_fits, prefix_bounds, support_residuals, verify_witness,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_TOL", "WITNESS_SLACK", "CertificateOutOfTime", "CertificateProgress", "OneVsRestCertificate",
    "carried_certificate", "certificate_estimate",
    "host_memory", "one_vs_rest_distances", "prefix_bounds", "prefix_bytes", "support_residuals", "verify_witness",
    "z4_bytes",
]

#: Default bound on every class's interval width ``hi_k − lo_k``.
DEFAULT_TOL = 1e-9

#: Classes of the nearest-shell pass that :func:`certificate_estimate` times:
#: enough that their cost stands out from the fixed cost of a pass (the
#: scans of all K prototypes are shared by a block), which is measured apart.
SHELL_SAMPLE = 128

#: Most seconds that :func:`certificate_estimate` spends timing the QP.  At
#: d = 1024 one block of two classes can take minutes; a timing cut short
#: still says that a block takes at least that long, which is what decides a
#: refusal.
QP_TIMING_SECONDS = 4.0

#: A QP block that :func:`certificate_estimate` times in less than this
#: many seconds is timed a second time (the faster run kept): the first run
#: also meets its arrays' first page faults, which only a short run notices.
#: A longer one is timed once (at (256, 2000) a block takes about a second
#: of CPU, which the whole certificate would otherwise pay once more).
QP_TIMING_REPEAT_BELOW = 0.5

#: Seconds after which :func:`certificate_estimate` stops timing a slow
#: nearest-shell pass (seconds per class: NNLS on large shells at large d).
SHELL_TIMING_SECONDS = 3.0

#: Working memory of one block of the nearest-shell pass (NumPy, float64).
SHELL_BLOCK_BYTES = 64 * 2**20

#: Bytes that the witnesses of the nearest-shell pass may take in all (a
#: uniform witness of the simplex ETF has K − 1 points per class).
SHELL_SUPPORT_BYTES = 512 * 2**20


# torch (and the solver module ``_qp``, which needs it) is imported only when
# a class is left for the QP, so that ``import spherecodes.certificate``, the
# bank, and the certificate of every symmetric code stay torch-free.


def _linalg_threads(dev):
    """One torch thread on the CPU for the batched small-matrix LAPACK calls.

    Batched Cholesky of many ~100×100 matrices gains nothing from threads
    inside each factorisation, and on a busy machine the spinning worker
    threads slowed it down by up to 50× in measurements.  The products with
    all K prototypes run with the process's thread count instead.
    """
    return torch_threads(1 if dev.type == "cpu" else None)


def _as_array(prototypes):
    """A torch tensor as a NumPy array (without importing torch for anything else)."""
    if hasattr(prototypes, "detach") and hasattr(prototypes, "cpu"):
        return prototypes.detach().cpu().numpy()
    return prototypes


def _max_support(k: int, limit: float | None) -> int:
    """Widest witness the nearest-shell pass may store, from :data:`SHELL_SUPPORT_BYTES` and the limit."""
    budget = SHELL_SUPPORT_BYTES if limit is None else min(SHELL_SUPPORT_BYTES, 0.25 * limit)
    return int(max(2, budget // (16.0 * k)))


def one_vs_rest_distances(
    prototypes,
    *,
    tol: float = DEFAULT_TOL,
    device: str | torch.device = "auto",
    candidates: int | None = None,
    rattler_tol: float = RATTLER_TOL,
    max_memory: float | None = None,
    progress: Callable[[CertificateProgress], None] | None = None,
    orbit="auto",
    client=None,
    deadline: float | None = None,
) -> OneVsRestCertificate:
    """Certified one-vs-rest distances ``dist_k`` and ρ of a code.

    Parameters
    ----------
    prototypes : array_like or torch.Tensor, shape (K, d)
        Unit rows (within :data:`spherecodes.stats.UNIT_TOL`).
    tol : float
        Width asked of every class's interval; the solver keeps going until
        the widths are far below it (normally at rounding level), and the
        result says whether it was reached.
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device
        ``"auto"`` takes the GPU when torch sees one.  The arithmetic is
        float64 on every device.
    candidates : int, optional
        Size of the initial candidate set of each class (its nearest
        prototypes).  Default ``max(32, 2d + 2)``, capped at K − 1.  Too few
        only costs extra global checks, never correctness.
    rattler_tol : float
        Margin for :attr:`OneVsRestCertificate.softmax_rattlers`.
    max_memory : float, optional
        Bytes the certificate may use on the device (and on the host for
        its inputs and results); the blocks of classes are sized to fit.
        Default: a safe fraction of what is free.
    progress : callable, optional
        Called with a :class:`CertificateProgress` after every block of classes.
    orbit : SignOrbit, OrbitPrefix, Z4Orbit, None or "auto"
        The code's orbit of sign changes when already proved
        (:func:`spherecodes.orbit.sign_orbit`): class 0 is certified and the
        group gives every other class, and the result holds class 0's
        witness with the orbit.  For the first K words of an orbit
        (:func:`spherecodes.orbit.orbit_prefix`): the whole orbit's class 0
        bounds every class (:func:`prefix_bounds`), where its nearest shell
        is balanced and ρ is certified so; else every class as for a generic
        code.  The same for (the first K words of) an orbit of Z4
        translations (:func:`spherecodes.z4orbit.z4_orbit`: Kerdock codes).
        None: a generic code; ``"auto"``: proved here
        (:func:`spherecodes.orbit.resolve_orbit`).
    client : distributed.Client, optional
        Run the QP's blocks of classes as tasks on this Dask cluster
        (:func:`spherecodes.cluster.dask_client`), on its workers' CPUs: the
        prototypes are sent to every worker once, and each block is the same
        block, solved the same way, as without a cluster, so the result is
        the same.  The nearest-shell pass and the Gram pass stay here.
    deadline : float, optional
        A ``time.perf_counter()`` value: once it has passed, the QP's blocks
        stop between two iterations, within a fraction of a block (a block
        at d = 1024 can take tens of seconds), and :class:`CertificateOutOfTime`
        is raised.  Not on a Dask cluster, whose tasks run to their end.

    Returns
    -------
    OneVsRestCertificate

    Raises
    ------
    SpherecodesError
        Input that is not a code (see :func:`spherecodes.stats.validate_prototypes`),
        a non-positive ``tol`` or ``candidates``, an unknown or absent device,
        or working memory that cannot be allocated.
    CertificateOutOfTime
        ``deadline`` passed during the QP.

    Examples
    --------
    The regular hexagon: the hull of the other five vertices is nearest to a
    vertex at the chord between its two neighbours, so ρ = 1 − cos(2π/6) = 1/2.

    >>> from spherecodes.constructions import regular_polygon
    >>> cert = one_vs_rest_distances(regular_polygon(6), device="cpu")
    >>> cert.certified, round(cert.rho_lower, 12), round(cert.rho_upper, 12)
    (True, 0.5, 0.5)
    >>> cert.softmax_rattlers.tolist()
    []
    """
    started = time.perf_counter()
    w_np = validate_prototypes(_as_array(prototypes), copy=False)  # only read: no copy of K·d numbers
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise SpherecodesError(f"tol must be a positive finite number, got {tol!r}")
    if not (isinstance(rattler_tol, (int, float)) and math.isfinite(rattler_tol) and rattler_tol >= 0):
        raise SpherecodesError(f"rattler_tol must be a finite number >= 0, got {rattler_tol!r}")
    k, d = w_np.shape
    if candidates is None:
        m = min(k - 1, max(32, 2 * d + 2))
    elif isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise SpherecodesError(f"candidates must be a positive integer, got {candidates!r}")
    else:
        m = min(k - 1, candidates)
    if client is not None and str(device).strip().lower() not in ("auto", "cpu"):
        raise SpherecodesError(f"a certificate on a Dask cluster runs on the workers' CPUs; got device {device!r} "
                               "(leave --device out with --scheduler or --workers)")
    if str(device).strip().lower() not in ("auto", "cpu"):
        # Refuse an unknown or absent device even when no QP is needed; "auto"
        # cannot be refused, and resolving it would load torch for codes that
        # the shells settle.
        resolve_device(device)
    orbit = resolve_orbit(w_np, orbit)
    if isinstance(orbit, Rotated):
        options = dict(tol=tol, device=device, candidates=candidates, rattler_tol=rattler_tol, max_memory=max_memory,
                       progress=progress, client=client, deadline=deadline)
        inner = one_vs_rest_distances(orbit.coordinates, orbit=orbit.structure, **options)
        if inner.orbit is None:
            # The structure did not certify the code (a prefix whose witness leaves the rows): every class of the
            # stored rows, as for any code.
            return one_vs_rest_distances(w_np, orbit=None, **options)
        return carried_certificate(inner, orbit, time.perf_counter() - started)
    if isinstance(orbit, OrbitPrefix):
        require_memory(prefix_bytes(k, d, orbit.words, max_memory), f"the certificate's inputs and results (K={k}, "
                       f"d={d})", "cpu", limit=max_memory)
        cert = _prefix_certificate(w_np, orbit, tol, rattler_tol, max_memory, started, progress)
        if cert is not None:
            return cert
        # The whole orbit does not pin ρ down (its nearest shell is not balanced, or no moved witness stays
        # among the rows, where ρ may exceed the orbit's distance): every class against the K rows.
        orbit = None
    if isinstance(orbit, Z4Orbit):  # the same for an orbit of Z4 translations (a Kerdock code): ._z4
        cert = z4_certificate(w_np, orbit, tol, rattler_tol, max_memory, _shell_block_bytes(max_memory),
                              _max_support(k, max_memory), started, progress)
        if cert is not None:
            return cert
        orbit = None
    require_memory(
        host_memory(k, d) if orbit is None else _orbit_bytes(k, d, max_memory),
        f"the certificate's inputs and results (K={k}, d={d})",
        "cpu",
        limit=max_memory,
    )
    if orbit is not None:
        return _orbit_certificate(w_np, orbit, tol, rattler_tol, m, device, max_memory, started, progress, deadline)
    duplicates, duplicate_of = equal_rows(w_np)
    shell_progress = None
    if progress is not None:
        def shell_progress(settled):
            progress(CertificateProgress(settled, k, time.perf_counter() - started))
    shell = shell_bounds(w_np, tol=tol, block_bytes=_shell_block_bytes(max_memory),
                         max_support=_max_support(k, max_memory), progress=shell_progress)
    lo, hi = shell.lo, shell.hi
    exact = np.flatnonzero(shell.exact)
    pieces = [(exact, shell.support_indices[exact], shell.support_weights[exact])]
    if progress is not None:
        progress(CertificateProgress(len(exact), k, time.perf_counter() - started))
    rest = np.flatnonzero(~shell.exact)
    if rest.size and _gram_fits(k, d, max_memory):
        def gram_progress(settled):
            progress(CertificateProgress(len(exact) + settled, k, time.perf_counter() - started))

        gram = GramPass(w_np).bounds(rest, tol=tol, block_bytes=_shell_block_bytes(max_memory),
                                     progress=None if progress is None else gram_progress)
        lo[gram.rows], hi[gram.rows] = gram.lo, gram.hi
        pieces.append((gram.rows, gram.support_indices, gram.support_weights))
        exact = np.concatenate([exact, gram.rows])
        rest = np.setdiff1d(rest, gram.rows)
    rounds, where = 1, "cpu"
    if rest.size:
        rounds, where = _solve_rest(w_np, rest, duplicate_of, m, tol, "cpu" if client is not None else device,
                                    max_memory, lo, hi, pieces, progress=progress, done=len(exact), started=started,
                                    client=client, deadline=deadline)
    support_indices, support_weights = assemble_supports(k, pieces)
    residuals = support_residuals(w_np, support_indices, support_weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        features = np.where(hi[:, None] > 0, residuals / hi[:, None], np.nan)
    return OneVsRestCertificate(
        lo=lo,
        hi=hi,
        tol=float(tol),
        rattler_tol=float(rattler_tol),
        support_indices=support_indices,
        support_weights=support_weights,
        features=features,
        duplicates=duplicates,
        rounds=rounds,
        device=where,
        wall_time=time.perf_counter() - started,
    )


def carried_certificate(inner: OneVsRestCertificate, rotated: Rotated, wall_time: float) -> OneVsRestCertificate:
    """The certificate of the structured rows ``X``, carried to the stored rows ``W ≈ X Q``.

    Every interval is widened by :meth:`spherecodes.rotated.Rotated.distance_bounds`
    (the primal weights stay, so the upper ends are points of the hull of
    ``W``'s others up to the proved row error; the lower ends follow from
    the dual bound on ``X`` and the rotation's proved near-orthogonality),
    and the dual directions turn with ``Q``.
    """
    lo, hi = rotated.distance_bounds(inner.lo, inner.hi)
    features = rotated.turn(inner.features)
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        features = np.where(norms > 0, features / norms, np.nan)
    return replace(inner, lo=lo, hi=np.maximum(hi, lo), features=features, orbit=rotated, wall_time=wall_time)


def _orbit_certificate(w_np, orbit, tol, rattler_tol, m, device, max_memory, started, progress, deadline):
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
    shell = shell_bounds(w_np, tol=tol, block_bytes=_shell_block_bytes(max_memory),
                         max_support=_max_support(k, max_memory), rows=first)
    lo, hi = shell.lo, shell.hi
    if shell.exact[0]:
        indices, weights = shell.support_indices[0], shell.support_weights[0]
        rounds, where = 1, "cpu"
    else:
        pieces = []
        rounds, where = _solve_rest(w_np, first, np.full(k, -1, dtype=np.int64), m, tol, device, max_memory, lo, hi,
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


def _prefix_certificate(w_np, prefix, tol, rattler_tol, max_memory, started, progress):
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
    cert = OneVsRestCertificate(
        lo=lo, hi=hi, tol=float(tol), rattler_tol=float(rattler_tol), support_indices=words[None, :],
        support_weights=weights[None, :], features=feature[None, :], duplicates=[], rounds=1, device="cpu",
        wall_time=time.perf_counter() - started, orbit=prefix, nearest=nearest,
    )
    if not cert.rho_certified:
        return None
    if progress is not None:
        progress(CertificateProgress(k, k, time.perf_counter() - started))
    return cert


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
        found = shell_bounds(small, tol=tol, block_bytes=_shell_block_bytes(max_memory),
                             max_support=_max_support(len(small), max_memory), rows=first)
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
            + shell_block_bytes(candidates, d, _shell_block_bytes(max_memory)))


def _orbit_bytes(k: int, d: int, max_memory: float | None) -> float:
    """Working memory of an orbit's certificate: class 0's scan in blocks, its witness, and the per-class bounds."""
    return shell_block_bytes(k, d, _shell_block_bytes(max_memory)) + 8.0 * 4 * k + 16.0 * min(k, 4 * (d + 1))


def _gram_fits(k: int, d: int, max_memory: float | None) -> bool:
    """Whether the Gram pass applies to a (K, d) code, its Gram matrix and witnesses (up to K × K) fitting too."""
    if not gram_applies(k, d):
        return False
    working = gram_bytes(k) + gram_block_bytes(k, _shell_block_bytes(max_memory)) + 16.0 * k * k
    return host_memory(k, d) + working <= 0.5 * memory_limit("cpu", max_memory)


def _shell_block_bytes(max_memory: float | None) -> float:
    return SHELL_BLOCK_BYTES if max_memory is None else max(1.0, min(SHELL_BLOCK_BYTES, 0.25 * max_memory))


def _solve_rest(w_np, rest, duplicate_of, m, tol, device, max_memory, lo, hi, pieces, *, progress, done, started,
                client=None, deadline=None):
    """The QP of the classes ``rest`` (those the nearest shell did not settle), in place; returns (rounds, device).

    With a Dask ``client`` the same blocks are tasks on its workers
    (:func:`_certify_task`); the results are taken in block order either way.

    On a CPU the blocks are shared among :func:`qp_workers` threads, each
    running its batched solves with one torch thread (see
    :func:`_linalg_threads`) and its products with all K prototypes with the
    CPU threads divided among the workers, so whole blocks are what the
    cores share.  Each block's result depends on its rows only, so
    the certificate does not depend on which worker ran which block.
    """
    torch = heavy.torch()

    from ._qp import OutOfTime, certify_block

    k, d = w_np.shape
    dev = resolve_device(device)
    if dev.type == "cuda":
        require_memory(8.0 * k * d, f"the prototypes on the GPU (K={k}, d={d})", str(dev), limit=max_memory)
    workers = qp_workers(dev)
    # The blocks are those of this process's run also on a cluster: a block's result depends on its rows.
    block, tile = _blocks.block_size(k, d, m, dev, max_memory, workers=workers)
    parts = [rest[start : start + block] for start in range(0, len(rest), block)]
    workers = min(workers, len(parts))
    scan_threads = _scan_threads(workers)
    settled = [done]  # classes settled so far, kept up to date by _collect
    if client is not None:
        results = _cluster_results(client, w_np, parts, duplicate_of, m, tol, tile, block, scan_threads)
        return _collect(parts, results, lo, hi, pieces, progress, settled, k, started), "cpu (Dask cluster)"
    w = torch.from_numpy(w_np).to(dev)
    w32 = w.to(torch.float32)
    # The float32 similarities of every streamed product, reused (no fresh
    # allocation per tile): one buffer per worker, handed out per block.
    free = [torch.empty(block * tile, dtype=torch.float32, device=dev) for _ in range(workers)]

    def certify_part(part):
        scratch = free.pop()
        try:
            # Set in the worker itself: for OpenMP, torch's thread count is per thread.
            with _linalg_threads(dev):
                return certify_block(w, w32, torch.from_numpy(part).to(dev), m, tol,
                                     torch.from_numpy(duplicate_of[part]).to(dev), tile, scratch,
                                     scan_threads=scan_threads, deadline=deadline)
        finally:
            free.append(scratch)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        rounds = _collect(parts, pool.map(certify_part, parts), lo, hi, pieces, progress, settled, k, started)
    except OutOfTime:
        raise CertificateOutOfTime(CertificateProgress(settled[0], k, time.perf_counter() - started)) from None
    finally:
        # On Ctrl-C the blocks not started are dropped; those running end first.
        pool.shutdown(wait=True, cancel_futures=True)
    return rounds, str(dev)


def _collect(parts, results, lo, hi, pieces, progress, settled: list, k, started) -> int:
    """Each block's result into ``lo``, ``hi`` and ``pieces``, in block order (progress follows the code); the rounds.

    ``settled[0]`` counts the classes settled, also for a caller that an exception interrupts."""
    rounds = 0
    for part, result in zip(parts, results):
        lo[part] = result.lo
        hi[part] = result.hi
        pieces.append((part, result.support_indices, result.support_weights))
        rounds = max(rounds, result.rounds)
        settled[0] += len(part)
        if progress is not None:
            progress(CertificateProgress(settled[0], k, time.perf_counter() - started))
    return rounds


def _cluster_results(client, w_np, parts, duplicate_of, m, tol, tile, block, scan_threads):
    """The blocks' results from tasks on a Dask cluster, yielded in block order (unfinished tasks cancelled on exit)."""
    # The prototypes go to every worker once; a task then carries only its rows.
    prototypes = client.scatter(w_np, broadcast=True)
    futures = [client.submit(_certify_task, prototypes, part, duplicate_of[part], m, tol, tile, block, scan_threads,
                             pure=False) for part in parts]
    scheduler = None if client.cluster is not None else client.scheduler.address  # for messages: not a local one
    try:
        for number, future in enumerate(futures, start=1):
            # Each block within its deadline: a lost scheduler or a cluster without workers is one line, not a hang.
            yield cluster.next_result([future], cluster.RESULT_TIMEOUT_S, scheduler,
                                      f"block {number} of {len(futures)} of classes")[1]
    finally:
        client.cancel(futures)


def _certify_task(w_np, part, duplicates, m, tol, tile, block, scan_threads):
    """One block of classes certified in a Dask worker, as a worker thread of :func:`_solve_rest` certifies it."""
    torch = heavy.torch()

    from ._qp import certify_block

    dev = torch.device("cpu")
    w = torch.from_numpy(w_np)
    scratch = torch.empty(block * tile, dtype=torch.float32)
    with _linalg_threads(dev):
        return certify_block(w, w.to(torch.float32), torch.from_numpy(part), m, tol, torch.from_numpy(duplicates),
                             tile, scratch, scan_threads=scan_threads)


#: Most QP blocks certified at once on a CPU.  A block's QP is many small
#: torch operations, each paying Python time under the interpreter lock, so
#: worker threads stop scaling early.  Measured at (64, 20,000) on a 16-core
#: CPU: 4 workers 34 s, 16 workers and 1 worker each over 45 s.
MAX_QP_WORKERS = 4


def qp_workers(dev) -> int:
    """Blocks of the QP certified at once: torch's CPU thread count on a CPU, at most :data:`MAX_QP_WORKERS`; else 1."""
    torch = heavy.torch()

    return max(1, min(torch.get_num_threads(), MAX_QP_WORKERS)) if dev.type == "cpu" else 1


def _scan_threads(workers: int) -> int:
    """Torch threads of each worker's products with all K prototypes: the CPU threads shared among the workers."""
    torch = heavy.torch()

    return max(1, torch.get_num_threads() // workers)


# --------------------------------------------------------------------------
# setup


def certificate_estimate(
    prototypes=None, *, k: int | None = None, d: int | None = None, device: str | torch.device = "auto",
    max_memory: float | None = None, orbit="auto",
) -> Estimate:
    """Peak memory of the process and time that :func:`one_vs_rest_distances` is expected to take.

    The memory is the process's resident size now plus the certificate's
    arrays, plus torch's own working set where torch has to be loaded for the
    QP; an impossible size is refused here with the same message as in the
    certificate, before any work.  Given ``prototypes``, a sample of up to
    :data:`SHELL_SAMPLE` classes (spread over the code) goes through the
    nearest-shell pass first, to tell whether it settles them (then no QP
    and no torch are needed) and to time the work, which is scaled to K;
    where the QP is needed, one block of the real size, spread over the
    code, is also solved and timed, for at most :data:`QP_TIMING_SECONDS`:
    a block not solved by then makes the time a lower bound (the
    description says so).  Given only ``k`` and ``d``, the QP is assumed and
    the time is 0 (unknown).  ``orbit`` is as for
    :func:`one_vs_rest_distances`.

    Examples
    --------
    >>> est = certificate_estimate(k=100_000, d=64, device="cpu")
    >>> est.what  # doctest: +ELLIPSIS
    'certificate of K = 100000 classes in d = 64 (QP in ...)'
    >>> est.nbytes > 8 * 100_000 * 64, est.seconds
    (True, 0.0)
    >>> from spherecodes.constructions import simplex_etf
    >>> certificate_estimate(simplex_etf(100), device="cpu").what
    'certificate of K = 100 classes in d = 99 (nearest shells, no QP)'
    """
    w = None
    if prototypes is not None:
        w = validate_prototypes(_as_array(prototypes), copy=False)
        k, d = w.shape
    seconds = 0.0
    if w is not None:
        started = time.perf_counter()
        resolved = resolve_orbit(w, orbit)
        if isinstance(resolved, Rotated):
            inner = certificate_estimate(resolved.coordinates, device=device, max_memory=max_memory,
                                         orbit=resolved.structure)
            return replace(inner, what=inner.what[:-1] + ", carried through the rotation)",
                           nbytes=inner.nbytes + 8.0 * k * d)
        found = _prefix_estimate(w, resolved, max_memory) if isinstance(resolved, OrbitPrefix) else z4_estimate(
            w, resolved, DEFAULT_TOL, max_memory, _shell_block_bytes(max_memory), _max_support(k, max_memory)
        ) if isinstance(resolved, Z4Orbit) else None
        if found is not None:
            return found
        if isinstance(resolved, SignOrbit):
            # Class 0 against all K prototypes: every other class is its image.
            require_memory(_orbit_bytes(k, d, max_memory), f"the certificate's inputs and results (K={k}, d={d})",
                           "cpu", limit=max_memory)
            first = shell_bounds(w, tol=DEFAULT_TOL, block_bytes=_shell_block_bytes(max_memory),
                                 max_support=_max_support(k, max_memory), rows=np.zeros(1, dtype=np.int64))
            if first.exact[0]:
                seconds = 2.0 * (time.perf_counter() - started)
                return Estimate(f"certificate of K = {k} classes in d = {d} (one orbit of sign changes: class 0 "
                                "and its images, no QP)", "cpu", memory.process_peak(_orbit_bytes(k, d, max_memory)),
                                memory_limit("cpu", max_memory), seconds)
    require_memory(host_memory(k, d), f"the certificate's inputs and results (K={k}, d={d})", "cpu",
                   limit=max_memory)
    shell_bytes = host_memory(k, d) + 3 * 8.0 * k * d + shell_block_bytes(k, d, _shell_block_bytes(max_memory))
    needs_qp = True
    sample = None
    if w is not None:
        sample = np.unique(np.linspace(0, k - 1, min(k, SHELL_SAMPLE)).astype(np.int64))
        sample, settled, fixed, per_class = _time_shells(w, sample, max_memory)
        # A pass that settles none of its first GIVE_UP_AFTER classes gives up (the QP takes them all).
        examined = k if settled.exact[sample].any() else classes_before_giving_up(k, d, _shell_block_bytes(max_memory))
        seconds = fixed + per_class * examined
        needs_qp = not settled.exact[sample].all()
        if not needs_qp:
            shell_bytes += 16.0 * k * settled.support_indices.shape[1]  # the stored witnesses
        elif _gram_fits(k, d, max_memory):
            # The Gram matrix and its spectrum once, then the sample's open
            # classes, whose time scales to all of the code's.
            started = time.perf_counter()
            gram = GramPass(w)
            built = time.perf_counter()
            open_rows = sample[~settled.exact[sample]]
            found = gram.bounds(open_rows, tol=DEFAULT_TOL, block_bytes=_shell_block_bytes(max_memory))
            seconds += (built - started) + (time.perf_counter() - built) * k / len(open_rows)
            needs_qp = len(found.rows) < len(open_rows)
            if not needs_qp:
                shell_bytes += gram_bytes(k) + gram_block_bytes(k, _shell_block_bytes(max_memory)) + 16.0 * k * k
                return Estimate(f"certificate of K = {k} classes in d = {d} (nearest shells and the Gram matrix, "
                                "no QP)", "cpu", memory.process_peak(shell_bytes), memory_limit("cpu", max_memory),
                                seconds)
    if not needs_qp:
        return Estimate(f"certificate of K = {k} classes in d = {d} (nearest shells, no QP)", "cpu",
                        memory.process_peak(shell_bytes), memory_limit("cpu", max_memory), seconds)

    dev = resolve_device(device)
    m = min(k - 1, max(32, 2 * d + 2))
    workers = qp_workers(dev)
    block, tile = _blocks.block_size(k, d, m, dev, max_memory, workers=workers)
    # The float32 copy of the prototypes, and on a GPU the float64 one (on a
    # CPU torch shares the NumPy array's memory).
    qp_bytes = 4.0 * k * d + workers * block * per_class_bytes(k, d, m, tile)
    qp_bytes += 8.0 * k * d if dev.type == "cuda" else host_memory(k, d)
    # Before the timing below, whose arrays would otherwise count twice.
    nbytes = memory.process_peak(max(shell_bytes, qp_bytes), loads_torch=True)
    cut = ""
    if w is not None:
        block_seconds, cut = _time_qp_block(w, sample, dev, m, block, tile, workers)
        seconds += math.ceil(k / block) * block_seconds / workers
    blocks = f"{workers} workers, blocks of {block}" if workers > 1 else f"blocks of {block}"
    return Estimate(f"certificate of K = {k} classes in d = {d} (QP in {blocks}{cut})", str(dev), nbytes,
                    memory_limit(str(dev), max_memory), seconds)


def _prefix_estimate(w: np.ndarray, prefix, max_memory: float | None) -> Estimate | None:
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


def _time_shells(w: np.ndarray, sample: np.ndarray, max_memory: float | None):
    """The nearest-shell pass timed on ``sample``: (the classes timed, their bounds, fixed seconds, seconds per class).

    A pass costs a fixed part (the rows hashed once, O(K·d)) and a part per
    class (one product with all K prototypes, then its shell: milliseconds,
    or seconds where NNLS works on large shells at large d).  The first 1,
    2, 4, ... classes of the sample are timed, doubling until the whole
    sample or :data:`SHELL_TIMING_SECONDS` is reached; the last two runs
    give the cost per class (their difference, free of the fixed cost) and
    the fixed cost.  A first class that alone takes longer than the cap is
    the only one timed, its fixed cost counted as the class's (an
    over-estimate, by the fixed cost per class).
    """
    k = len(w)
    began = time.perf_counter()
    runs = []  # (classes, seconds)
    n = 1
    while True:
        started = time.perf_counter()
        settled = shell_bounds(w, tol=DEFAULT_TOL, block_bytes=_shell_block_bytes(max_memory),
                               max_support=_max_support(k, max_memory), rows=sample[:n])
        runs.append((n, time.perf_counter() - started))
        if n == len(sample) or time.perf_counter() - began > SHELL_TIMING_SECONDS:
            break
        n = min(2 * n, len(sample))
    if len(runs) == 1:
        return sample[:n], settled, 0.0, runs[0][1] / n
    (n_a, t_a), (n_b, t_b) = runs[-2:]
    per_class = max(t_b - t_a, 0.0) / (n_b - n_a)
    return sample[:n], settled, max(t_b - n_b * per_class, 0.0), per_class


def _time_qp_block(w: np.ndarray, sample: np.ndarray, dev, m: int, block: int, tile: int, workers: int):
    """Seconds of one QP block of the real size, spread over the code, as one worker runs it; and a note.

    A block's classes are solved side by side, so a block costs about what
    its slowest class costs, and much less than its classes one by one.
    After a run of a few classes that takes the device's warm-up, the block
    is timed, twice where the first run took less than
    :data:`QP_TIMING_REPEAT_BELOW` and time allows (the faster kept: the
    first also meets its arrays' first page faults): a fraction of a second
    each at (64, 10^5); a quarter of the code where one block holds it all.  Everything
    stops at :data:`QP_TIMING_SECONDS`: the time of a run cut short is a
    lower bound, and the note (``""`` otherwise) says so.
    """
    torch = heavy.torch()

    from ._qp import OutOfTime, certify_block

    k = len(w)
    w_t = torch.from_numpy(w).to(dev)
    w32 = w_t.to(torch.float32)
    scratch = torch.empty(block * tile, dtype=torch.float32, device=dev)  # as each worker has
    deadline = time.perf_counter() + QP_TIMING_SECONDS

    def timed(rows: np.ndarray) -> tuple[float, bool]:
        started = time.perf_counter()
        try:
            certify_block(w_t, w32, torch.from_numpy(rows).to(dev), m, DEFAULT_TOL,
                          torch.full((len(rows),), -1, dtype=torch.long, device=dev), tile, scratch,
                          _scan_threads(workers), deadline=deadline)
        except OutOfTime:
            return time.perf_counter() - started, False
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter() - started, True

    spread = np.unique(np.linspace(0, k - 1, min(block, max(32, k // 4))).astype(np.int64))
    warm_up = sample[:min(8, len(spread))]
    with _linalg_threads(dev):
        seconds, done = timed(warm_up)
        if not done:  # not even the warm-up's few classes: a block of the code's classes takes longer
            return seconds, f"; at least this: {len(warm_up)} of its classes were not solved in {seconds:.1f} s"
        runs = []
        while len(runs) < 2:
            seconds, done = timed(spread)
            if not done:
                if runs:  # the first run finished: it is the measurement
                    break
                return seconds, f"; at least this: a block was not solved in {seconds:.1f} s"
            runs.append(seconds)
            if seconds >= QP_TIMING_REPEAT_BELOW:
                break
    return min(runs), ""
