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

The solver (all classes as a batch, on CPU or CUDA through torch):

1. each class gets a candidate set, its ``m`` nearest prototypes (a product
   of a block of classes with all K prototypes, streamed over tiles of
   prototypes so that no block × K matrix is needed);
2. Wolfe's minimum-norm-point algorithm runs on the candidate sets of a block of
   classes at once: the support ("corral") of each class is kept, the affine
   minimiser of the corral is one batched Cholesky solve, a ratio test drops
   points that would get negative weight, and the most violating candidates
   join the corral when it is optimal.  Classes whose QP is nearly
   degenerate (optimised codes, where about d neighbours sit at nearly the
   same cosine) start Wolfe from the support suggested by a few
   interior-point iterations instead;
3. one matrix product per block (streamed the same way) checks the
   optimality condition ``max_j <w_j, r_k> = <Σ v_j w_j, r_k>`` against all K
   prototypes; violators join the candidate sets and step 2 resumes for the
   classes that had them.  The same product gives ``lo_k``.

The blocks are sized to the memory allowed (``max_memory``, by default a safe
fraction of the device's), so memory is O(K·d) plus the blocks, whatever K.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..devices import resolve_device, torch_threads
from ..errors import SpherecodesError
from ..memory import Estimate, memory_limit, require_memory
from ..stats import RATTLER_TOL, validate_prototypes
from . import _blocks
from ._blocks import exact_duplicates, host_memory, pad_supports, per_class_bytes
from ._result import CertificateProgress, OneVsRestCertificate
from .witness import WITNESS_SLACK, support_residuals, verify_witness

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEFAULT_TOL", "WITNESS_SLACK", "CertificateProgress", "OneVsRestCertificate", "certificate_estimate",
    "host_memory", "one_vs_rest_distances", "support_residuals", "verify_witness",
]

#: Default bound on every class's interval width ``hi_k − lo_k``.
DEFAULT_TOL = 1e-9


# torch (and the solver module ``_qp``, which needs it) is imported by the
# functions below when they run, so that ``import spherecodes.certificate``
# (and the bank, which rebuilds stored certificates) stays torch-free.


def _linalg_threads(dev):
    """One torch thread on the CPU for the batched small-matrix LAPACK calls.

    Batched Cholesky of many ~100×100 matrices gains nothing from threads
    inside each factorisation, and on a busy machine the spinning worker
    threads slowed it down by up to 50× in measurements; the large matrix
    products are batched GEMMs that stay efficient on one thread.
    """
    return torch_threads(1 if dev.type == "cpu" else None)


def one_vs_rest_distances(
    prototypes,
    *,
    tol: float = DEFAULT_TOL,
    device: str | torch.device = "auto",
    candidates: int | None = None,
    rattler_tol: float = RATTLER_TOL,
    max_memory: float | None = None,
    progress: Callable[[CertificateProgress], None] | None = None,
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

    Returns
    -------
    OneVsRestCertificate

    Raises
    ------
    SpherecodesError
        Input that is not a code (see :func:`spherecodes.stats.validate_prototypes`),
        a non-positive ``tol`` or ``candidates``, an unknown or absent device,
        or working memory that cannot be allocated.

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
    import torch

    from ._qp import certify_block

    started = time.perf_counter()
    if isinstance(prototypes, torch.Tensor):
        prototypes = prototypes.detach().cpu().numpy()
    w_np = validate_prototypes(prototypes)
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
    dev = resolve_device(device)

    require_memory(
        host_memory(k, d),
        f"the certificate's inputs and results (K={k}, d={d})",
        "cpu",
        limit=max_memory,
    )
    if dev.type == "cuda":
        require_memory(8.0 * k * d, f"the prototypes on the GPU (K={k}, d={d})", str(dev), limit=max_memory)
    w = torch.from_numpy(w_np).to(dev)
    duplicates, duplicate_of = exact_duplicates(w_np)

    block, tile = _blocks.block_size(k, d, m, dev, max_memory)
    # The similarities of every streamed product, reused (no fresh allocation per tile).
    scratch = torch.empty(block * tile, dtype=w.dtype, device=dev)
    lo = np.empty(k)
    hi = np.empty(k)
    features = np.empty((k, d))
    supports: list[tuple[np.ndarray, np.ndarray]] = []
    rounds = 0
    with _linalg_threads(dev):
        for start in range(0, k, block):
            rows = torch.arange(start, min(start + block, k), device=dev)
            result = certify_block(
                w, rows, m, tol, torch.from_numpy(duplicate_of[start : start + block]).to(dev), tile, scratch
            )
            lo[start : start + len(rows)] = result.lo
            hi[start : start + len(rows)] = result.hi
            features[start : start + len(rows)] = result.features
            supports.append((result.support_indices, result.support_weights))
            rounds = max(rounds, result.rounds)
            if progress is not None:
                progress(CertificateProgress(start + len(rows), k, time.perf_counter() - started))
    support_indices, support_weights = pad_supports(supports)
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
        device=str(dev),
        wall_time=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------
# setup


def certificate_estimate(
    prototypes=None, *, k: int | None = None, d: int | None = None, device: str | torch.device = "auto",
    max_memory: float | None = None,
) -> Estimate:
    """Memory (and time, given the code) that :func:`one_vs_rest_distances` is expected to take.

    The memory is the estimate the certificate itself checks, so an
    impossible size is refused here with the same message, before any work.
    Given ``prototypes``, the time is measured on a sample: the first 32
    classes are certified against all K prototypes on ``device`` and the time
    is scaled to K (the sample is too small to keep a GPU busy, so on a GPU
    this errs on the long side).  Given only ``k`` and ``d``, the time is 0
    (unknown).

    Examples
    --------
    >>> est = certificate_estimate(k=100_000, d=64, device="cpu")
    >>> est.what  # doctest: +ELLIPSIS
    'certificate of K = 100000 classes in d = 64 (blocks of ...)'
    >>> est.nbytes < 2**30, est.seconds
    (True, 0.0)
    """
    import torch

    from ._qp import certify_block

    if prototypes is not None:
        if isinstance(prototypes, torch.Tensor):
            prototypes = prototypes.detach().cpu().numpy()
        prototypes = validate_prototypes(prototypes)
        k, d = prototypes.shape
    dev = resolve_device(device)
    m = min(k - 1, max(32, 2 * d + 2))
    require_memory(host_memory(k, d), f"the certificate's inputs and results (K={k}, d={d})", "cpu",
                   limit=max_memory)
    block, tile = _blocks.block_size(k, d, m, dev, max_memory)
    device_bytes = 8.0 * k * d + block * per_class_bytes(k, d, m)
    if dev.type == "cpu":
        device_bytes += host_memory(k, d)
    seconds = 0.0
    if prototypes is not None:
        w = torch.from_numpy(prototypes).to(dev)
        rows = torch.arange(min(k, 32), device=dev)
        no_twins = torch.full((len(rows),), -1, dtype=torch.long, device=dev)
        with _linalg_threads(dev):
            started = time.perf_counter()
            certify_block(w, rows, m, DEFAULT_TOL, no_twins, tile, None)
            seconds = (time.perf_counter() - started) * k / len(rows)
    return Estimate(f"certificate of K = {k} classes in d = {d} (blocks of {block})", str(dev), device_bytes,
                    memory_limit(str(dev), max_memory), seconds)

