"""Where torch work runs: the device names every command and solver accepts, and torch's CPU threads.

torch is imported inside the functions, so that importing this module (and
everything that only needs its names) does not import torch.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from typing import TYPE_CHECKING

from . import heavy
from .errors import SpherecodesError

if TYPE_CHECKING:
    import torch

__all__ = ["SMALL_WORK", "cuda_possible", "default_threads", "resolve_device", "set_cpu_threads", "timed_call",
           "torch_threads", "usable_cores"]

#: Per-step work (multiply-adds of one pairwise product, summed over a batch)
#: below which the solvers run single-threaded by default: on matrices this
#: small, OpenMP threads cost more in synchronisation than they save
#: (docs/optimisers.md, "Threads").
SMALL_WORK = 4e6


def cuda_possible() -> bool:
    """False when this machine certainly has no CUDA GPU, known without loading torch.

    On Linux a CUDA GPU needs the NVIDIA driver, which shows in
    ``/proc/driver/nvidia``; elsewhere only torch can tell, so this is True.
    ``"auto"`` devices resolve to the CPU without loading torch when this is False.

    Examples
    --------
    >>> isinstance(cuda_possible(), bool)
    True
    """
    return not sys.platform.startswith("linux") or os.path.exists("/proc/driver/nvidia")


def usable_cores() -> int:
    """CPU cores this process may actually use: its affinity mask, capped by the cgroup's CPU quota.

    The quota is read from ``/sys/fs/cgroup/cpu.max`` (cgroup v2) or
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (cgroup v1), rounded up; a
    container limited to 1.5 CPUs gets 2 threads, one pinned to one core gets 1.

    Examples
    --------
    >>> 1 <= usable_cores() <= (os.cpu_count() or 1)
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def _cgroup_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs allowed by the cgroup CPU quota under ``root`` (None: no quota, or none readable)."""
    try:
        with open(os.path.join(root, "cpu.max"), encoding="ascii") as fh:
            limit, period = fh.read().split()[:2]
        return None if limit == "max" else int(limit) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us"), encoding="ascii") as fh:
            limit = int(fh.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us"), encoding="ascii") as fh:
            period = int(fh.read())
        return None if limit <= 0 or period <= 0 else limit / period
    except (OSError, ValueError):
        return None


def set_cpu_threads(threads: int | None = None, *, torch_only: bool = False) -> int:
    """Use ``threads`` CPU threads for the rest of the process (default :func:`usable_cores`).

    Applies to torch (now if it is loaded, else through ``OMP_NUM_THREADS``
    when it loads) and to the BLAS library under NumPy.  Waiting OpenMP
    workers sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, before
    torch loads), which would take the cores the working threads need.  This
    is the one place a run's thread count
    (:attr:`spherecodes.context.RunContext.threads`) is applied.

    With ``torch_only`` only torch's pool is set (loading torch): a task on a
    Dask worker, whose environment and BLAS pool are the worker's.

    Returns
    -------
    int
        The thread count now in use.

    Examples
    --------
    >>> set_cpu_threads() == usable_cores()
    True
    """
    n = usable_cores() if threads is None else int(threads)
    if n < 1:
        raise SpherecodesError(f"threads must be a positive integer, got {threads!r}")
    if torch_only:
        heavy.torch().set_num_threads(n)
        return n
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ["OMP_NUM_THREADS"] = str(n)
    os.environ["MKL_NUM_THREADS"] = str(n)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n, user_api="blas")
    return n


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The torch device a solver runs on.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Returns
    -------
    torch.device

    Raises
    ------
    SpherecodesError
        For any other string, or a CUDA device that this machine does not have.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("auto").type in ("cpu", "cuda")
    True
    """
    torch = heavy.torch()

    _cap_torch_threads(torch)
    text = str(device).strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if text == "cpu":
        return torch.device("cpu")
    if text == "cuda" or text.startswith("cuda:"):
        index = text[5:]
        if index and not index.isdigit():
            raise SpherecodesError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
        if not torch.cuda.is_available():
            raise SpherecodesError(f"device {device!r} was requested but no CUDA GPU is available; use 'cpu' or 'auto'")
        count = torch.cuda.device_count()
        if index and int(index) >= count:
            raise SpherecodesError(f"device {device!r} does not exist; this machine has cuda:0 to cuda:{count - 1}")
        return torch.device(text if index else "cuda:0")
    raise SpherecodesError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


_capped = False


def _cap_torch_threads(torch) -> None:
    """Once per process: never more torch threads than :func:`usable_cores` (torch counts all cores)."""
    global _capped
    if not _capped:
        _capped = True
        if torch.get_num_threads() > usable_cores():
            torch.set_num_threads(usable_cores())


def timed_call(fn, device: torch.device) -> float:
    """Seconds that one call of ``fn()`` takes on ``device``, after one warm-up call.

    CUDA work is asynchronous, so the device is synchronised before the clock
    is read; the warm-up takes allocation and kernel selection out of the figure.

    Examples
    --------
    >>> import torch
    >>> timed_call(lambda: torch.ones(10).sum(), torch.device("cpu")) >= 0
    True
    """
    import time

    torch = heavy.torch()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """Run the enclosed code with ``threads`` torch CPU threads (None: unchanged).

    torch's thread count is process-wide; it is restored on the way out.

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    torch = heavy.torch()

    if threads is None or threads == torch.get_num_threads():
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def default_threads(work_per_step: float, device: torch.device) -> int | None:
    """Default torch CPU threads of a solver: 1 for small per-step work on the CPU, else None (unchanged).

    Examples
    --------
    >>> import torch
    >>> default_threads(1e3, torch.device("cpu")), default_threads(1e9, torch.device("cpu"))
    (1, None)
    """
    return 1 if device.type == "cpu" and work_per_step <= SMALL_WORK else None
