"""Memory estimates, checked before large arrays are allocated.

Every routine that would allocate an array whose size grows with K or d asks
:func:`require_memory` first, so that an impossible size is refused with the
estimate instead of dying half-way with ``MemoryError`` or being killed.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from . import heavy
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
        torch = heavy.torch()

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    available = _proc_kib("/proc/meminfo", "MemAvailable:")
    if available is not None:
        return available * 1024
    return physical_memory_bytes()


def physical_memory_bytes() -> int:
    """The machine's physical memory in bytes (what it could ever allocate, not what is free now).

    Examples
    --------
    >>> physical_memory_bytes() >= available_memory_bytes()
    True
    """
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _proc_kib(path: str, key: str) -> int | None:
    """The kiB figure of the line starting with ``key`` in a /proc file; None where there is none."""
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


#: Resident memory that loading torch adds to a process and its first CPU
#: kernels take (libraries, thread pools, allocator caches; torch 2.13, Linux).
TORCH_OVERHEAD_BYTES = 210 * 2**20


def resident_bytes() -> float:
    """The resident memory of this process now (``VmRSS``; 0 where it cannot be read).

    Estimates of a whole command's peak add their arrays to this.

    Examples
    --------
    >>> resident_bytes() >= 0
    True
    """
    resident = _proc_kib("/proc/self/status", "VmRSS:")
    return 0.0 if resident is None else float(resident) * 1024


def torch_overhead_bytes() -> float:
    """What loading torch will add to this process: 0 once it is loaded, else :data:`TORCH_OVERHEAD_BYTES`.

    Examples
    --------
    >>> torch_overhead_bytes() in (0.0, float(TORCH_OVERHEAD_BYTES))
    True
    """
    import sys

    return 0.0 if "torch" in sys.modules else float(TORCH_OVERHEAD_BYTES)


def process_peak(working_bytes: float, *, loads_torch: bool = False) -> float:
    """Expected peak resident memory of this process when a computation adds ``working_bytes``.

    Its resident size now, plus the computation's arrays, plus torch's own
    working set if the computation loads torch and it is not loaded yet: what
    an :class:`Estimate` reports, comparable with what ``/usr/bin/time`` measures.

    Examples
    --------
    >>> process_peak(2**20) >= 2**20
    True
    """
    return resident_bytes() + float(working_bytes) + (torch_overhead_bytes() if loads_torch else 0.0)


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
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def parse_size(text, what: str = "memory size") -> int:
    """Bytes from a size such as ``"4GiB"``, ``"512MB"``, ``"1.5 GiB"`` or ``"800000000"``.

    Binary (KiB, MiB, GiB, TiB) and decimal (kB, MB, GB, TB) units, case-insensitive;
    a bare number is bytes.  ``what`` names the size in error messages.

    Raises
    ------
    SpherecodesError
        For anything else, or a size that is not positive.

    Examples
    --------
    >>> parse_size("4GiB"), parse_size("512MB"), parse_size(1024)
    (4294967296, 512000000, 1024)
    >>> parse_size("4 parsecs")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: memory size must be a number with an optional unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 4GiB; got '4 parsecs'
    """
    match = _SIZE_PATTERN.fullmatch(str(text).strip())
    if match is None or match.group(2).lower() not in _UNITS:
        raise SpherecodesError(f"{what} must be a number with an optional unit (B, kB, MB, GB, TB, KiB, MiB, GiB, "
                               f"TiB), e.g. 4GiB; got {text!r}")
    size = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not math.isfinite(size) or size >= 2**63:
        raise SpherecodesError(f"{what} must be below 2**63 bytes, got {text!r}")
    if not size >= 1:
        raise SpherecodesError(f"{what} must be at least 1 byte, got {text!r}")
    return int(size)


_SIZE_PATTERN = re.compile(r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)")
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12,
          "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory_limit(device: str = "cpu", max_memory: float | None = None) -> float:
    """Bytes that one computation may use on ``device``.

    ``max_memory`` when given (``--max-memory``), otherwise
    :data:`SAFE_FRACTION` of what is available now.

    Examples
    --------
    >>> memory_limit("cpu", 2**30)
    1073741824.0
    >>> 0 < memory_limit("cpu") < available_memory_bytes("cpu")
    True
    """
    if max_memory is not None:
        return float(max_memory)
    return SAFE_FRACTION * available_memory_bytes(device)


def require_memory(nbytes: float, what: str, device: str = "cpu", limit: float | None = None,
                   hint: str = "choose a smaller size") -> None:
    """Refuse with an estimate when ``nbytes`` cannot be allocated on ``device``.

    Parameters
    ----------
    nbytes : float
        Estimated peak size of the allocation(s) about to happen.
    what : str
        What needs the memory, for the message (``"the prototypes (K x d float64)"``).
    device : str
        ``"cpu"`` or a CUDA device string.
    limit : float, optional
        Bytes allowed by the caller (``max_memory``, ``--max-memory``);
        default :data:`SAFE_FRACTION` of the available memory.
    hint : str
        What to change, ending the message.

    Raises
    ------
    SpherecodesError
        If ``nbytes`` exceeds the limit.

    Examples
    --------
    >>> require_memory(1024, "a tiny array")
    >>> require_memory(2.0**70, "an impossible array")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: an impossible array needs about 1048576.0 PiB on cpu, ...
    >>> require_memory(2.0**31, "the lists", limit=2.0**30)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: the lists needs about 2.0 GiB on cpu, but max_memory (--max-memory) allows 1.0 GiB; raise it or choose a smaller size
    """
    allowed = memory_limit(device) if limit is None else limit
    if not nbytes > allowed:
        return
    given = (f"only {format_bytes(allowed)} can safely be allocated there;" if limit is None
             else f"max_memory (--max-memory) allows {format_bytes(limit)}; raise it or")
    raise SpherecodesError(f"{what} needs about {format_bytes(nbytes)} on {device}, but {given} {hint}")


#: A computation estimated longer than this is refused before any work (a day): a run of ``generate``, reading and
#: checking a bank.
ABSURD_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class Estimate:
    """What a computation is expected to need, worked out before it starts.

    Attributes
    ----------
    what : str
        The computation, for people (``"tammes with neighbour lists (m = 64, ...)"``).
    device : str
        Where it runs.
    nbytes : float
        Estimated peak resident memory of the process (:func:`process_peak`):
        what it holds now plus the computation's working set.
    limit : float
        Bytes allowed there (``max_memory``, or a safe fraction of what is free).
    seconds : float
        Expected wall time: a model of the work timed on a small sample of it
        on this device, so a rough figure (within a factor of about two).
    """

    what: str
    device: str
    nbytes: float
    limit: float
    seconds: float

    def describe(self) -> str:
        """One line: ``estimate: <what> on cpu: ~1.2 GiB of 18.0 GiB allowed, ~14 min``.

        Examples
        --------
        >>> Estimate("a run", "cpu", 2**30, 2**32, 95.0).describe()
        'estimate: a run on cpu: ~1.0 GiB of 4.0 GiB allowed, ~1.6 min'
        """
        return (f"estimate: {self.what} on {self.device}: ~{format_bytes(self.nbytes)} of "
                f"{format_bytes(self.limit)} allowed, ~{format_duration(self.seconds)}")


def format_duration(seconds: float) -> str:
    """Seconds in a short human form.

    Examples
    --------
    >>> format_duration(0.2), format_duration(42), format_duration(95), format_duration(7200)
    ('0.2 s', '42 s', '1.6 min', '2.0 h')
    >>> format_duration(0.01), format_duration(1e-300)  # never "0.0 s" for a time that is not zero
    ('0.01 s', '1e-300 s')
    """
    if seconds < 0.095:  # below what one decimal shows (0.1 s): two significant digits
        return f"{seconds:.2g} s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
