"""Dask distributed clients for the work that spreads over a cluster: catalog builds and certificates.

:func:`dask_client` connects to an existing scheduler, or starts a
``LocalCluster`` of worker processes on this machine, and closes what it
opened on exit.  The catalog build runs one bank per task
(:mod:`spherecodes.catalog.build`); a certificate runs one block of classes
per task (:func:`spherecodes.certificate.one_vs_rest_distances` with
``client``).
"""

from __future__ import annotations

import contextlib
import logging
import os

from .errors import SpherecodesError

__all__ = ["CONNECT_TIMEOUT_S", "dask_client"]

#: How long to wait for an existing scheduler before giving up.
CONNECT_TIMEOUT_S = 30


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None, processes: bool = True, tasks: int | None = None):
    """A Dask client (and the local cluster it needs), closed on exit; yields (client, torch threads per task).

    Parameters
    ----------
    scheduler : str, optional
        Address of an existing scheduler (``tcp://host:8786``); its workers
        choose their own thread counts (None is yielded).
    workers : int, optional
        Worker processes (or threads) of a local cluster; default one per
        core, at most ``tasks``.
    processes : bool
        Local workers as processes (each with its share of the cores'
        torch threads) or as threads of this process.
    tasks : int, optional
        How many tasks there are, to start no idle workers.

    Raises
    ------
    SpherecodesError
        The scheduler cannot be reached within :data:`CONNECT_TIMEOUT_S`.

    Examples
    --------
    >>> with dask_client(None, 1, processes=False) as (client, threads):
    ...     client.submit(sum, [1, 2, 3]).result()
    6
    """
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as err:
            raise SpherecodesError(f"cannot connect to the Dask scheduler at {scheduler} ({err})") from None
        try:
            yield client, None
        finally:
            client.close()
        return
    cores = os.cpu_count() or 1
    # A worker without a task still costs a process: never more workers than tasks.
    n = max(1, min(workers if workers is not None else cores, tasks or cores))
    # No dashboard; the scheduler's small HTTP server takes a free local port rather than 8787.
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=processes, dashboard_address=None,
                           scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=logging.ERROR)
    try:
        client = Client(cluster)
        try:
            # Separate worker processes share the cores; threads of this process share its torch pool.
            yield client, (max(1, cores // n) if processes else None)
        finally:
            client.close()
    finally:
        cluster.close()
