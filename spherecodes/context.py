"""Where and within what a run works: its device, memory limit, deadline, CPU threads and what it reports to.

One :class:`RunContext` is passed to :func:`spherecodes.generate` (and
:func:`spherecodes.run.plan_run`) instead of the device, the memory limit,
the time limit, the thread count and the progress and announce callbacks
one by one.  It is frozen: a run that needs another (a share of the time
limit for the optimisers) makes one with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .checks import check_int, check_positive
from .errors import SpherecodesError

__all__ = ["RunContext"]


def _silent(line: str) -> None:
    """Say nothing (the default ``announce``)."""


@dataclass(frozen=True)
class RunContext:
    """The circumstances of a run, as opposed to what it computes.

    Attributes
    ----------
    device : str
        ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``: where optimisers and the
        certificate run.
    max_memory : float or None
        Bytes each phase's arrays may use (default: a safe fraction of what is free).
    time_limit : float or None
        Seconds for the whole run, counted from ``started``: the optimisers get what the estimated phases
        after them leave of it, and a certificate still running at the deadline stops.
    started : float
        ``time.perf_counter()`` when the run began (default: when the context was made).
    progress : callable or None
        Receives the optimisers', the statistics' and the certificate's progress updates.
    announce : callable or None
        Called with one line of text as each phase starts.
    threads : int or None
        CPU threads the run may use: what ``--threads`` set for the process
        (:func:`spherecodes.devices.set_cpu_threads`), or a catalog worker's share of the cores, which
        :func:`spherecodes.catalog.build_bank` gives its torch pool.  None: the process's thread count as it is.

    Examples
    --------
    >>> context = RunContext(device="cpu", time_limit=60.0)
    >>> 0 < context.seconds_left() <= 60.0
    True
    >>> RunContext().deadline is None
    True
    >>> RunContext(threads=0)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: threads must be ...
    """

    device: str = "auto"
    max_memory: float | None = None
    time_limit: float | None = None
    started: float = field(default_factory=time.perf_counter)
    progress: Callable | None = field(default=None, repr=False, compare=False)
    announce: Callable | None = field(default=None, repr=False, compare=False)
    threads: int | None = None

    def __post_init__(self):
        if not isinstance(self.device, str):
            raise SpherecodesError(f"device must be a string (auto, cpu, cuda or cuda:N), got {self.device!r}")
        if self.max_memory is not None:
            object.__setattr__(self, "max_memory", check_positive("max_memory", self.max_memory))
        if self.time_limit is not None:
            object.__setattr__(self, "time_limit", check_positive("time_limit", self.time_limit))
        if self.threads is not None:
            object.__setattr__(self, "threads", check_int("threads", self.threads, 1))

    @property
    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` value at which the time limit passes, or None."""
        return None if self.time_limit is None else self.started + self.time_limit

    def seconds_left(self) -> float | None:
        """Seconds of the time limit still left (may be negative), or None without a limit."""
        return None if self.time_limit is None else self.deadline - time.perf_counter()

    def past_deadline(self) -> bool:
        """Whether the time limit has passed."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def say(self, line: str) -> None:
        """Announce one line (nothing without ``announce``)."""
        (self.announce or _silent)(line)
