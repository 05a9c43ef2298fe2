"""Dask distributed clients for the work that spreads over a cluster: catalog builds and certificates.

:func:`dask_client` connects to an existing scheduler, or starts a
``LocalCluster`` on this machine, and closes what it opened on exit.  The
catalog build runs one bank per task, a certificate one block of classes.

A scheduler is trusted code (Dask's protocol unpickles what it sends), so
:func:`check_scheduler_trust` refuses one it cannot authenticate unless told
to trust it; docs/security.md ("A Dask scheduler is trusted code") says
why.  Every step with a scheduler has a deadline (:data:`CONNECT_TIMEOUT_S`,
:data:`WORKERS_TIMEOUT_S`, :func:`next_result`), so that a scheduler that
stays silent, has no workers or loses them is one line, never a hang.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import time

from . import heavy
from .errors import SpherecodesError

__all__ = ["CONNECT_TIMEOUT_S", "RESULT_TIMEOUT_S", "WORKERS_TIMEOUT_S", "check_cluster", "check_scheduler_address",
           "check_scheduler_trust", "dask_client", "next_result"]

#: Seconds to connect to an existing scheduler and complete its handshake.
CONNECT_TIMEOUT_S = 30

#: Seconds to wait for an existing scheduler to have a worker.
WORKERS_TIMEOUT_S = 60

#: Default seconds to wait for each task's result (a bank of a catalog, a block of a certificate).
RESULT_TIMEOUT_S = 3600.0

#: Address schemes of Dask's communication layers that reach another machine.
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")

#: Schemes whose connection authenticates the scheduler (with Dask's TLS configuration).
AUTHENTICATED_SCHEMES = ("tls", "wss")


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


def _host(address: str) -> str:
    """The host of a scheduler address of the form :func:`check_scheduler_address` lets through."""
    rest = address.partition("://")[2] if "://" in address else address
    return rest.rpartition(":")[0].strip("[]")


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: whatever it resolves to now, it is another machine's to answer
        return False


def check_scheduler_trust(address: str, trust: bool = False) -> str:
    """``address`` unchanged if a scheduler there may be trusted with this process: refused otherwise.

    A scheduler can run any code in the client.  Let through: a scheduler
    in this process (``inproc://``) or on this machine (a loopback address),
    and one reached over ``tls://`` or ``wss://`` when Dask's TLS
    configuration names a certificate authority that authenticates it
    (``distributed.comm.tls.ca-file``).  Any other address only with
    ``trust=True``.

    Raises
    ------
    SpherecodesError
        The address is malformed (:func:`check_scheduler_address`), or not
        trusted.

    Examples
    --------
    >>> check_scheduler_trust("tcp://127.0.0.1:8786")
    'tcp://127.0.0.1:8786'
    >>> check_scheduler_trust("tcp://10.0.0.5:8786", trust=True)
    'tcp://10.0.0.5:8786'
    >>> check_scheduler_trust("tcp://10.0.0.5:8786")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: refusing the Dask scheduler at tcp://10.0.0.5:8786: ...
    """
    check_scheduler_address(address)
    scheme = address.partition("://")[0] if "://" in address else "tcp"
    if trust or scheme == "inproc" or _is_loopback(_host(address)):
        return address
    flags = {"trust=True": "--trust-scheduler", "the Dask scheduler at": "--scheduler"}
    why = (f"refusing the Dask scheduler at {address}: Dask's protocol unpickles what a scheduler sends, so whoever "
           "answers there can run any code in this process")
    if scheme in AUTHENTICATED_SCHEMES:
        if heavy.load("dask.config").get("distributed.comm.tls.ca-file", None):
            return address
        raise SpherecodesError(f"{why}; {scheme}:// authenticates it only with Dask's TLS configuration: set "
                               "DASK_DISTRIBUTED__COMM__TLS__CA_FILE (and the client's certificate and key, "
                               "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT and __KEY), or pass trust=True if you trust "
                               "the network and the scheduler", flags=flags)
    raise SpherecodesError(f"{why}; a scheduler on another machine is reached without asking only over tls:// with "
                           "Dask's TLS configuration; pass trust=True if you trust it and every machine on the way",
                           flags=flags)


def check_cluster(workers: int | None, scheduler: str | None, trust: bool = False) -> None:
    """Refuse, before a cluster starts, a Dask cluster asked for both ways, a bad worker count, or a scheduler that
    may not be trusted (:func:`check_scheduler_trust`).

    Examples
    --------
    >>> check_cluster(2, None)
    >>> check_cluster(2, "tcp://127.0.0.1:8786")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: give either workers=N (local cluster) or scheduler=ADDRESS (existing cluster), not both
    """
    spelled = {"trust=True": "--trust-scheduler", "workers=N": "--workers", "scheduler=ADDRESS": "--scheduler"}
    if workers is not None and scheduler is not None:
        raise SpherecodesError("give either workers=N (local cluster) or scheduler=ADDRESS (existing cluster), not "
                               "both", flags=spelled)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise SpherecodesError(f"workers must be an integer >= 1, got {workers!r}")
    if scheduler is None:
        if trust:
            raise SpherecodesError("trust=True applies to scheduler=ADDRESS", flags=spelled)
        return
    check_scheduler_trust(scheduler, trust)


def _connect(scheduler: str):
    """A client of the scheduler at ``scheduler``: connected, handshake done and a worker there, each within its
    deadline; else one line saying which step failed."""
    Client = heavy.distributed().Client

    class BoundedClient(Client):
        """A client whose start (connection, handshake, first answers) ends within its timeout: Dask bounds the
        connection alone, and a scheduler that accepts and stays silent would hold the handshake for ever."""

        def start(self, **kwargs):
            kwargs.setdefault("callback_timeout", self._timeout)
            try:
                return super().start(**kwargs)
            except BaseException:
                # Closed here, within the deadline, and marked so: Dask would close it again when it is collected,
                # printing that close's own timeout as a traceback.
                with contextlib.suppress(Exception):
                    self.close(timeout=self._timeout)
                self.status = "closed"
                raise

    began = time.monotonic()
    try:
        client = BoundedClient(scheduler, timeout=CONNECT_TIMEOUT_S)
    except Exception as err:  # noqa: BLE001 (whatever answers there and however Dask fails on it: one line)
        # Out of time, whatever Dask raised as its start was cancelled (a TimeoutError, at times an assertion).
        silent = (isinstance(err, TimeoutError) or "Timed out" in str(err)
                  or time.monotonic() - began >= 0.9 * CONNECT_TIMEOUT_S)
        if silent:
            why = (f"no Dask handshake within {CONNECT_TIMEOUT_S:g} s (nothing listens there, or what answers stays "
                   "silent)")
        elif isinstance(err, OSError):
            why = _short(err)
        else:
            why = f"what answers there does not speak Dask's protocol ({type(err).__name__}: {_short(err)})"
        raise SpherecodesError(f"cannot connect to the Dask scheduler at {scheduler}: {why}") from None
    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
    except BaseException as err:
        client.close()
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
        raise SpherecodesError(f"the Dask scheduler at {scheduler} has no worker to run the tasks (none within "
                               f"{WORKERS_TIMEOUT_S:g} s): start workers with 'dask worker {scheduler}'") from None
    return client


def _short(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def next_result(futures, timeout: float, scheduler: str | None, what: str, *, failed: str = "raise"):
    """The first of ``futures`` to finish, and its result, within ``timeout`` seconds; else one line.

    A wait past ``timeout`` ends in :class:`SpherecodesError`; so do a lost
    scheduler or worker (its results cancelled) and a task that raised,
    unless ``failed="return"``, which returns the error as the task's result
    (the other tasks go on).

    Examples
    --------
    >>> with dask_client(None, 1, processes=False) as (client, threads):
    ...     done, value = next_result([client.submit(sum, [1, 2, 3])], 60, None, "a sum")
    >>> value
    6
    """
    wait = heavy.distributed().wait

    where = f"the Dask scheduler at {scheduler}" if scheduler else "the local Dask cluster"
    try:
        finished = wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED").done
    except TimeoutError:
        finished = set()
    if not finished:
        raise SpherecodesError(f"no result from {where} within {timeout:g} s for {what} (its workers busy, lost "
                               "or stalled); the unfinished tasks were cancelled")
    future = next(iter(finished))
    try:
        return future, future.result(timeout=timeout)
    except Exception as err:  # noqa: BLE001 (a lost connection, a cancelled or failed task: each one line)
        error = SpherecodesError(f"{where} failed on {what} ({type(err).__name__}: {_short(err)})")
        if failed == "return":
            return future, error
        raise error from None


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None, processes: bool = True, tasks: int | None = None, *,
                trust: bool = False):
    """A Dask client (and the local cluster it needs), closed on exit; yields (client, torch threads per task).

    Parameters
    ----------
    scheduler : str, optional
        Address of an existing scheduler (``tcp://host:8786``); its workers
        choose their own thread counts (None is yielded).  It must be one
        :func:`check_scheduler_trust` lets through.
    workers : int, optional
        Worker processes (or threads) of a local cluster; default one per
        core, at most ``tasks``.
    processes : bool
        Local workers as processes (each with its share of the cores'
        torch threads) or as threads of this process.
    tasks : int, optional
        How many tasks there are, to start no idle workers.
    trust : bool
        Connect to a scheduler on another machine over a plain connection.

    Raises
    ------
    SpherecodesError
        The scheduler address is malformed or not trusted
        (:func:`check_scheduler_trust`); no Dask scheduler completes the
        handshake there within :data:`CONNECT_TIMEOUT_S`; or it has no
        worker within :data:`WORKERS_TIMEOUT_S`.

    Examples
    --------
    >>> with dask_client(None, 1, processes=False) as (client, threads):
    ...     client.submit(sum, [1, 2, 3]).result()
    6
    """
    distributed = heavy.distributed()
    Client, LocalCluster = distributed.Client, distributed.LocalCluster

    if scheduler is not None:
        check_scheduler_trust(scheduler, trust)
        client = _connect(scheduler)
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
