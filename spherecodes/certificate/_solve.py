"""The QP of the classes that the NumPy passes leave open, a block of classes at a time (torch, loaded here on first use).

torch (and the solver module ``_qp``, which needs it) is imported only when
a class is left for the QP, so that ``import spherecodes.certificate``, the
bank, and the certificate of every symmetric code stay torch-free.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from .. import heavy
from ..devices import resolve_device
from ..memory import require_memory
from . import _blocks
from ._budget import linalg_threads
from ._distributed import cluster_results
from ._result import CertificateOutOfTime, CertificateProgress

__all__ = ["MAX_QP_WORKERS", "collect_blocks", "qp_workers", "scan_threads", "solve_rest"]


#: Most QP blocks certified at once on a CPU: a block's QP is many small torch
#: operations under the interpreter lock, so more threads stop helping
#: (docs/certificate.md, "2.1 The QP").
MAX_QP_WORKERS = 4


def qp_workers(dev) -> int:
    """Blocks of the QP certified at once: torch's CPU thread count on a CPU, at most :data:`MAX_QP_WORKERS`; else 1."""
    torch = heavy.torch()

    return max(1, min(torch.get_num_threads(), MAX_QP_WORKERS)) if dev.type == "cpu" else 1


def scan_threads(workers: int) -> int:
    """Torch threads of each worker's products with all K prototypes: the CPU threads shared among the workers."""
    torch = heavy.torch()

    return max(1, torch.get_num_threads() // workers)


def solve_rest(w_np, rest, duplicate_of, m, tol, device, max_memory, lo, hi, pieces, *, progress, done, started,
               client=None, deadline=None):
    """The QP of the classes ``rest`` (those the nearest shell did not settle), in place; returns (rounds, device).

    With a Dask ``client`` the same blocks are tasks on its workers
    (:func:`certify_task`); the results are taken in block order either way.

    On a CPU the blocks are shared among :func:`qp_workers` threads, each
    running its batched solves with one torch thread (:func:`linalg_threads`)
    and its products with all K prototypes with the CPU threads divided among
    the workers.  Each block's result depends on its rows only, whichever
    worker ran it.
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
    threads = scan_threads(workers)
    settled = [done]  # classes settled so far, kept up to date by collect_blocks
    if client is not None:
        results = cluster_results(client, w_np, parts, duplicate_of, m, tol, tile, block, threads)
        return collect_blocks(parts, results, lo, hi, pieces, progress, settled, k, started), "cpu (Dask cluster)"
    w = torch.from_numpy(w_np).to(dev)
    w32 = w.to(torch.float32)
    # The float32 similarities of every streamed product, reused (no fresh
    # allocation per tile): one buffer per worker, handed out per block.
    free = [torch.empty(block * tile, dtype=torch.float32, device=dev) for _ in range(workers)]

    def certify_part(part):
        scratch = free.pop()
        try:
            # Set in the worker itself: for OpenMP, torch's thread count is per thread.
            with linalg_threads(dev):
                return certify_block(w, w32, torch.from_numpy(part).to(dev), m, tol,
                                     torch.from_numpy(duplicate_of[part]).to(dev), tile, scratch,
                                     scan_threads=threads, deadline=deadline)
        finally:
            free.append(scratch)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        rounds = collect_blocks(parts, pool.map(certify_part, parts), lo, hi, pieces, progress, settled, k, started)
    except OutOfTime:
        raise CertificateOutOfTime(CertificateProgress(settled[0], k, time.perf_counter() - started)) from None
    finally:
        # On Ctrl-C the blocks not started are dropped; those running end first.
        pool.shutdown(wait=True, cancel_futures=True)
    return rounds, str(dev)


def collect_blocks(parts, results, lo, hi, pieces, progress, settled: list, k, started) -> int:
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
