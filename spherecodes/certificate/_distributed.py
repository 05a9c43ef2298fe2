"""The QP's blocks of classes as tasks on a Dask cluster (:func:`spherecodes.cluster.dask_client`)."""

from __future__ import annotations

from .. import cluster, heavy
from ._budget import linalg_threads

__all__ = ["certify_task", "cluster_results"]


def cluster_results(client, w_np, parts, duplicate_of, m, tol, tile, block, scan_threads):
    """The blocks' results from tasks on a Dask cluster, yielded in block order (unfinished tasks cancelled on exit)."""
    # The prototypes go to every worker once; a task then carries only its rows.
    prototypes = client.scatter(w_np, broadcast=True)
    futures = [client.submit(certify_task, prototypes, part, duplicate_of[part], m, tol, tile, block, scan_threads,
                             pure=False) for part in parts]
    scheduler = None if client.cluster is not None else client.scheduler.address  # for messages: not a local one
    try:
        for number, future in enumerate(futures, start=1):
            # Each block within its deadline: a lost scheduler or a cluster without workers is one line, not a hang.
            yield cluster.next_result([future], cluster.RESULT_TIMEOUT_S, scheduler,
                                      f"block {number} of {len(futures)} of classes")[1]
    finally:
        client.cancel(futures)


def certify_task(w_np, part, duplicates, m, tol, tile, block, scan_threads):
    """One block of classes certified in a Dask worker, as a worker thread of :func:`solve_rest` certifies it."""
    torch = heavy.torch()

    from ._qp import certify_block

    dev = torch.device("cpu")
    w = torch.from_numpy(w_np)
    scratch = torch.empty(block * tile, dtype=torch.float32)
    with linalg_threads(dev):
        return certify_block(w, w.to(torch.float32), torch.from_numpy(part), m, tol, torch.from_numpy(duplicates),
                             tile, scratch, scan_threads=scan_threads)
