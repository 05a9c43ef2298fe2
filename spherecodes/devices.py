"""Where torch work runs: the device names every command and solver accepts, and torch's CPU threads.

torch is imported inside the functions, so that importing this module (and
everything that only needs its names) does not import torch.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .errors import SpherecodesError

if TYPE_CHECKING:
    import torch

__all__ = ["SMALL_WORK", "default_threads", "resolve_device", "timed_call", "torch_threads"]

#: Per-step work (multiply-adds of one pairwise product, summed over a batch)
#: below which the solvers run single-threaded by default: on matrices this
#: small, OpenMP threads cost more in synchronisation than they save, and on a
#: busy machine a thread waiting for a core stalls every step (measured: 0.35 s
#: with one thread against 4-18 s with two for 64 starts of K = 8 in R^3).
SMALL_WORK = 4e6


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
    import torch

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

    import torch

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
    import torch

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
