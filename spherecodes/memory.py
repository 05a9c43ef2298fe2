"""Memory estimates, checked before large arrays are allocated.

Every routine that would allocate an array whose size grows with K or d asks
:func:`require_memory` first, so that an impossible size is refused with the
estimate instead of dying half-way with ``MemoryError`` or being killed.
"""

from __future__ import annotations

import os

from .errors import SpherecodesError

#: Fraction of the currently available memory that one request may use.  The
#: rest is left to the interpreter, BLAS work buffers and the operating system.
SAFE_FRACTION = 0.8


def available_memory_bytes(device: str = "cpu") -> int:
    """Memory that can be allocated now on ``device``, in bytes.

    On Linux the CPU figure is ``MemAvailable`` from ``/proc/meminfo``; on other
    systems the physical memory size.  For a CUDA device it is the free memory
    reported by the driver.

    Examples
    --------
    >>> available_memory_bytes() > 0
    True
    """
    if str(device).startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def format_bytes(n: float) -> str:
    """Human-readable size with binary units.

    Examples
    --------
    >>> format_bytes(3 * 2**30)
    '3.0 GiB'
    >>> format_bytes(512)
    '512 B'
    """
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def require_memory(nbytes: float, what: str, device: str = "cpu") -> None:
    """Refuse with an estimate when ``nbytes`` cannot be allocated on ``device``.

    Parameters
    ----------
    nbytes : float
        Estimated peak size of the allocation(s) about to happen.
    what : str
        What needs the memory, for the message (``"the prototypes (K x d float64)"``).
    device : str
        ``"cpu"`` or a CUDA device string.

    Raises
    ------
    SpherecodesError
        If ``nbytes`` exceeds :data:`SAFE_FRACTION` of the available memory.

    Examples
    --------
    >>> require_memory(1024, "a tiny array")
    >>> require_memory(2.0**70, "an impossible array")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: an impossible array needs about 1048576.0 PiB on cpu, ...
    """
    limit = SAFE_FRACTION * available_memory_bytes(device)
    if nbytes > limit:
        raise SpherecodesError(
            f"{what} needs about {format_bytes(nbytes)} on {device}, but only "
            f"{format_bytes(limit)} can safely be allocated there; choose a smaller size"
        )
