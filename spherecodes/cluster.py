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

from . import heavy
from .errors import SpherecodesError

__all__ = ["CONNECT_TIMEOUT_S", "check_scheduler_address", "dask_client"]

#: How long to wait for an existing scheduler before giving up.
CONNECT_TIMEOUT_S = 30

#: Address schemes of Dask's communication layers that reach another machine.
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def check_scheduler_address(address: str) -> str:
    """``address`` unchanged if it reads as a Dask scheduler's ``SCHEME://HOST:PORT`` (``HOST:PORT`` means tcp),
    or is an ``inproc://`` address (a scheduler in this process).

    Only its form is checked (nothing is reached): Dask itself raises
    assorted exceptions on a malformed address.

    Raises
    ------
    SpherecodesError
        Not a known scheme, no host, or a port outside 1 … 65535.

    Examples
    --------
    >>> check_scheduler_address("tcp://10.0.0.5:8786"), check_scheduler_address("[::1]:8786")
    ('tcp://10.0.0.5:8786', '[::1]:8786')
    >>> check_scheduler_address("tcp://10.0.0.5:99999")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: a scheduler address is SCHEME://HOST:PORT ...
    """
    scheme, sep, rest = str(address).partition("://")
    if not sep:
        scheme, rest = "tcp", scheme
    if scheme == "inproc" and rest:  # a scheduler in this very process (a LocalCluster of threads)
        return address
    host, colon, port = rest.rpartition(":")
    if (scheme not in SCHEDULER_SCHEMES or not colon or not host.strip("[]") or "/" in host
            or not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536)):
        schemes = ", ".join(SCHEDULER_SCHEMES)
        shown = repr(address) if len(address) <= 80 else repr(address[:77]) + "..."
        raise SpherecodesError(f"a scheduler address is SCHEME://HOST:PORT with SCHEME one of {schemes} and PORT "
                               f"in 1..65535 (e.g. tcp://10.0.0.5:8786); got {shown}")
    return address


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
        The scheduler address is malformed (:func:`check_scheduler_address`), or
        no Dask scheduler answers there within :data:`CONNECT_TIMEOUT_S`.

    Examples
    --------
    >>> with dask_client(None, 1, processes=False) as (client, threads):
    ...     client.submit(sum, [1, 2, 3]).result()
    6
    """
    distributed = heavy.distributed()
    Client, LocalCluster = distributed.Client, distributed.LocalCluster

    if scheduler is not None:
        check_scheduler_address(scheduler)
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as err:
            raise SpherecodesError(f"cannot connect to the Dask scheduler at {scheduler} ({err})") from None
        except (ValueError, TypeError, MemoryError) as err:
            # Something else listens there: its first bytes, read as Dask's framing, ask for exabytes (MemoryError).
            raise SpherecodesError(f"cannot connect to the Dask scheduler at {scheduler}: what answers there does "
                                   f"not speak Dask's protocol ({type(err).__name__}: {str(err)[:120]})") from None
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
