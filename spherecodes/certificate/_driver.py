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

Three passes settle the classes, each taking those the one before left open
(docs/certificate.md, §2):

* the nearest shell (:mod:`._shell`, NumPy only): ``h = w_k`` gives
  ``lo_k = 1 − max_{j≠k} <w_k, w_j>``, and a balanced shell gives a primal
  point with ``hi_k = lo_k`` up to rounding: every class of a symmetric code,
  in any rotation, with one or two products per block of classes;
* the Gram pass (:mod:`._gram`, NumPy only) for codes with K <= d and a
  well-conditioned Gram matrix, whose witnesses hold hundreds of points;
* the QP (:mod:`._qp`, torch, on CPU or CUDA): Wolfe's minimum-norm-point
  algorithm, batched over a block of classes, on each class's nearest
  candidates, restarted from an interior point where the QP is nearly
  degenerate, and checked against all K prototypes (bounded from the first
  scan where possible, screened in float32, the maximum recomputed in
  float64), violators joining the candidates.

The blocks are sized to the memory allowed (``max_memory``, by default a safe
fraction of the device's), so memory is O(K·d) plus the blocks, whatever K.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..devices import resolve_device
from ..errors import SpherecodesError
from ..memory import require_memory
from ..orbit import resolve_orbit
from ..rotated import Rotated
from ..rows import equal_rows
from ..stats import RATTLER_TOL, validate_prototypes
from ._blocks import assemble_supports, host_memory
from ._budget import DEFAULT_TOL, as_array, gram_fits, max_support, orbit_bytes, shell_block_budget
from ._gram import GramPass
from ._orbits import orbit_words_certificate, sign_orbit_certificate
from ._result import CertificateProgress, OneVsRestCertificate
from ._shell import shell_bounds
from ._solve import solve_rest
from .witness import support_residuals

if TYPE_CHECKING:
    import torch

__all__ = ["carried_certificate", "one_vs_rest_distances"]


def check_dask_device(device) -> None:
    """Refuse a device other than the CPU for a certificate on a Dask cluster (its blocks run on the workers'
    CPUs); called before a cluster starts, and by :func:`one_vs_rest_distances` given a client.

    Examples
    --------
    >>> check_dask_device("auto")
    >>> check_dask_device("cuda")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: a certificate on a Dask cluster runs on the workers' CPUs; got device='cuda': leave it out with a Dask client
    """
    if str(device).strip().lower() not in ("auto", "cpu"):
        raise SpherecodesError(f"a certificate on a Dask cluster runs on the workers' CPUs; got device={device!r}: "
                               "leave it out with a Dask client",
                               flags={f"device={device!r}": f"--device {device}",
                                      "with a Dask client": "with --scheduler or --workers"})


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
    orbit : Symmetry, None or "auto"
        The code's symmetry (:class:`spherecodes.symmetry.Symmetry`) when
        already proved: for an orbit of sign changes
        (:func:`spherecodes.orbit.sign_orbit`) class 0 is certified and the
        group gives every other class; for the first K words of an orbit
        (:func:`spherecodes.orbit.orbit_prefix`, or of Z4 translations:
        :func:`spherecodes.z4orbit.z4_orbit`) the whole orbit's class 0 bounds
        every class where that certifies ρ (:func:`prefix_bounds`;
        docs/certificate.md, 2.0c–2.0f).  None: a generic code; ``"auto"``:
        proved here (:func:`spherecodes.orbit.resolve_orbit`).
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
    w_np = validate_prototypes(as_array(prototypes), copy=False)  # only read: no copy of K·d numbers
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
    if client is not None:
        check_dask_device(device)
    if str(device).strip().lower() not in ("auto", "cpu"):
        # Refuse an unknown or absent device even when no QP is needed; "auto"
        # cannot be refused, and resolving it would load torch for codes that
        # the shells settle.
        resolve_device(device)
    orbit = resolve_orbit(w_np, orbit)
    if orbit is not None and orbit.unturned is not orbit:  # a structured code turned: certified as built, carried
        options = dict(tol=tol, device=device, candidates=candidates, rattler_tol=rattler_tol, max_memory=max_memory,
                       progress=progress, client=client, deadline=deadline)
        inner = one_vs_rest_distances(orbit.coordinates, orbit=orbit.structure, **options)
        if inner.orbit is None:
            # The structure did not certify the code (a prefix whose witness leaves the rows): every class of the
            # stored rows, as for any code.
            return one_vs_rest_distances(w_np, orbit=None, **options)
        return carried_certificate(inner, orbit, time.perf_counter() - started)
    if orbit is not None and orbit.whole_orbit_bounds:  # the first K words of an orbit: ._orbits
        cert = orbit_words_certificate(w_np, orbit, tol, rattler_tol, max_memory, started, progress)
        if cert is not None:
            return cert
        # The whole orbit does not pin ρ down (its nearest shell is not balanced, or no moved witness stays
        # among the rows, where ρ may exceed the orbit's distance): every class against the K rows.
        orbit = None
    require_memory(
        host_memory(k, d) if orbit is None else orbit_bytes(k, d, max_memory),
        f"the certificate's inputs and results (K={k}, d={d})",
        "cpu",
        limit=max_memory,
    )
    if orbit is not None:
        return sign_orbit_certificate(w_np, orbit, tol, rattler_tol, m, device, max_memory, started, progress, deadline)
    duplicates, duplicate_of = equal_rows(w_np)
    shell_progress = None
    if progress is not None:
        def shell_progress(settled):
            progress(CertificateProgress(settled, k, time.perf_counter() - started))
    shell = shell_bounds(w_np, tol=tol, block_bytes=shell_block_budget(max_memory),
                         max_support=max_support(k, max_memory), progress=shell_progress)
    lo, hi = shell.lo, shell.hi
    exact = np.flatnonzero(shell.exact)
    pieces = [(exact, shell.support_indices[exact], shell.support_weights[exact])]
    if progress is not None:
        progress(CertificateProgress(len(exact), k, time.perf_counter() - started))
    rest = np.flatnonzero(~shell.exact)
    if rest.size and gram_fits(k, d, max_memory):
        def gram_progress(settled):
            progress(CertificateProgress(len(exact) + settled, k, time.perf_counter() - started))

        gram = GramPass(w_np).bounds(rest, tol=tol, block_bytes=shell_block_budget(max_memory),
                                     progress=None if progress is None else gram_progress)
        lo[gram.rows], hi[gram.rows] = gram.lo, gram.hi
        pieces.append((gram.rows, gram.support_indices, gram.support_weights))
        exact = np.concatenate([exact, gram.rows])
        rest = np.setdiff1d(rest, gram.rows)
    rounds, where = 1, "cpu"
    if rest.size:
        rounds, where = solve_rest(w_np, rest, duplicate_of, m, tol, "cpu" if client is not None else device,
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
