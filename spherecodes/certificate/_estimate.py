"""How much memory and time a certificate will take, measured on a sample of its classes before it runs."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .. import heavy, memory
from ..devices import resolve_device
from ..memory import Estimate, memory_limit, require_memory
from ..orbit import resolve_orbit
from ..stats import validate_prototypes
from . import _blocks
from ._blocks import host_memory, per_class_bytes
from ._budget import DEFAULT_TOL, as_array, gram_fits, linalg_threads, max_support, orbit_bytes, shell_block_budget
from ._gram import GramPass, gram_block_bytes, gram_bytes
from ._orbits import orbit_words_estimate
from ._shell import classes_before_giving_up, shell_block_bytes, shell_bounds
from ._solve import qp_workers, scan_threads

if TYPE_CHECKING:
    import torch

__all__ = ["QP_TIMING_REPEAT_BELOW", "QP_TIMING_SECONDS", "SHELL_SAMPLE", "SHELL_TIMING_SECONDS",
           "certificate_estimate"]

#: Classes of the nearest-shell pass that :func:`certificate_estimate` times:
#: enough that their cost stands out from the fixed cost of a pass (the
#: scans of all K prototypes are shared by a block), which is measured apart.
SHELL_SAMPLE = 128

#: Most seconds that :func:`certificate_estimate` spends timing the QP.  At
#: d = 1024 one block of two classes can take minutes; a timing cut short
#: still says that a block takes at least that long, which is what decides a
#: refusal.
QP_TIMING_SECONDS = 4.0

#: A QP block that :func:`certificate_estimate` times in less than this many
#: seconds is timed a second time (the faster run kept), for the first run's
#: page faults; a longer one is timed once, since a second timing would add a
#: whole block to the cost (benchmarks/README.md, "Certificate: blocks, workers, the restart").
QP_TIMING_REPEAT_BELOW = 0.5

#: Seconds after which :func:`certificate_estimate` stops timing a slow
#: nearest-shell pass (seconds per class: NNLS on large shells at large d).
SHELL_TIMING_SECONDS = 3.0


def certificate_estimate(
    prototypes=None, *, k: int | None = None, d: int | None = None, device: str | torch.device = "auto",
    max_memory: float | None = None, orbit="auto",
) -> Estimate:
    """Peak memory of the process and time that :func:`one_vs_rest_distances` is expected to take.

    The memory is the process's resident size now plus the certificate's
    arrays (and torch's working set where the QP needs it); an impossible
    size is refused here, before any work.  Given ``prototypes``, a sample of
    up to :data:`SHELL_SAMPLE` classes goes through the nearest-shell pass,
    and where the QP is needed one block of the real size is solved, for at
    most :data:`QP_TIMING_SECONDS` (else the time is a lower bound, and the
    description says so), the times scaled to K (docs/certificate.md, "2.1
    The QP").  Given only ``k`` and ``d``, the QP is assumed and the time is 0
    (unknown).  ``orbit`` is as for :func:`one_vs_rest_distances`.

    Examples
    --------
    >>> est = certificate_estimate(k=100_000, d=64, device="cpu")
    >>> est.what  # doctest: +ELLIPSIS
    'certificate of K = 100000 classes in d = 64 (QP in ...)'
    >>> est.nbytes > 8 * 100_000 * 64, est.seconds
    (True, 0.0)
    >>> from spherecodes.constructions import simplex_etf
    >>> certificate_estimate(simplex_etf(100), device="cpu").what
    'certificate of K = 100 classes in d = 99 (nearest shells, no QP)'
    """
    w = None
    if prototypes is not None:
        w = validate_prototypes(as_array(prototypes), copy=False)
        k, d = w.shape
    seconds = 0.0
    if w is not None:
        started = time.perf_counter()
        resolved = resolve_orbit(w, orbit)
        if resolved is not None and resolved.unturned is not resolved:  # turned: estimated as built
            inner = certificate_estimate(resolved.coordinates, device=device, max_memory=max_memory,
                                         orbit=resolved.structure)
            return replace(inner, what=inner.what[:-1] + ", carried through the rotation)",
                           nbytes=inner.nbytes + 8.0 * k * d)
        found = orbit_words_estimate(w, resolved, max_memory) if resolved is not None and \
            resolved.whole_orbit_bounds else None
        if found is not None:
            return found
        if resolved is not None and resolved.moves_witnesses:
            # Class 0 against all K prototypes: every other class is its image.
            require_memory(orbit_bytes(k, d, max_memory), f"the certificate's inputs and results (K={k}, d={d})",
                           "cpu", limit=max_memory)
            first = shell_bounds(w, tol=DEFAULT_TOL, block_bytes=shell_block_budget(max_memory),
                                 max_support=max_support(k, max_memory), rows=np.zeros(1, dtype=np.int64))
            if first.exact[0]:
                seconds = 2.0 * (time.perf_counter() - started)
                return Estimate(f"certificate of K = {k} classes in d = {d} (one orbit of sign changes: class 0 "
                                "and its images, no QP)", "cpu", memory.process_peak(orbit_bytes(k, d, max_memory)),
                                memory_limit("cpu", max_memory), seconds)
    require_memory(host_memory(k, d), f"the certificate's inputs and results (K={k}, d={d})", "cpu",
                   limit=max_memory)
    shell_bytes = host_memory(k, d) + 3 * 8.0 * k * d + shell_block_bytes(k, d, shell_block_budget(max_memory))
    needs_qp = True
    sample = None
    if w is not None:
        sample = np.unique(np.linspace(0, k - 1, min(k, SHELL_SAMPLE)).astype(np.int64))
        sample, settled, fixed, per_class = _time_shells(w, sample, max_memory)
        # A pass that settles none of its first GIVE_UP_AFTER classes gives up (the QP takes them all).
        examined = k if settled.exact[sample].any() else classes_before_giving_up(k, d, shell_block_budget(max_memory))
        seconds = fixed + per_class * examined
        needs_qp = not settled.exact[sample].all()
        if not needs_qp:
            shell_bytes += 16.0 * k * settled.support_indices.shape[1]  # the stored witnesses
        elif gram_fits(k, d, max_memory):
            # The Gram matrix and its spectrum once, then the sample's open
            # classes, whose time scales to all of the code's.
            started = time.perf_counter()
            gram = GramPass(w)
            built = time.perf_counter()
            open_rows = sample[~settled.exact[sample]]
            found = gram.bounds(open_rows, tol=DEFAULT_TOL, block_bytes=shell_block_budget(max_memory))
            seconds += (built - started) + (time.perf_counter() - built) * k / len(open_rows)
            needs_qp = len(found.rows) < len(open_rows)
            if not needs_qp:
                shell_bytes += gram_bytes(k) + gram_block_bytes(k, shell_block_budget(max_memory)) + 16.0 * k * k
                return Estimate(f"certificate of K = {k} classes in d = {d} (nearest shells and the Gram matrix, "
                                "no QP)", "cpu", memory.process_peak(shell_bytes), memory_limit("cpu", max_memory),
                                seconds)
    if not needs_qp:
        return Estimate(f"certificate of K = {k} classes in d = {d} (nearest shells, no QP)", "cpu",
                        memory.process_peak(shell_bytes), memory_limit("cpu", max_memory), seconds)

    dev = resolve_device(device)
    m = min(k - 1, max(32, 2 * d + 2))
    workers = qp_workers(dev)
    block, tile = _blocks.block_size(k, d, m, dev, max_memory, workers=workers)
    # The float32 copy of the prototypes, and on a GPU the float64 one (on a
    # CPU torch shares the NumPy array's memory).
    qp_bytes = 4.0 * k * d + workers * block * per_class_bytes(k, d, m, tile)
    qp_bytes += 8.0 * k * d if dev.type == "cuda" else host_memory(k, d)
    # Before the timing below, whose arrays would otherwise count twice.
    nbytes = memory.process_peak(max(shell_bytes, qp_bytes), loads_torch=True)
    cut = ""
    if w is not None:
        block_seconds, cut = _time_qp_block(w, sample, dev, m, block, tile, workers)
        seconds += math.ceil(k / block) * block_seconds / workers
    blocks = f"{workers} workers, blocks of {block}" if workers > 1 else f"blocks of {block}"
    return Estimate(f"certificate of K = {k} classes in d = {d} (QP in {blocks}{cut})", str(dev), nbytes,
                    memory_limit(str(dev), max_memory), seconds)


def _time_shells(w: np.ndarray, sample: np.ndarray, max_memory: float | None):
    """The nearest-shell pass timed on ``sample``: (the classes timed, their bounds, fixed seconds, seconds per class).

    A pass costs a fixed part (the rows hashed once, O(K·d)) and a part per
    class.  The first 1, 2, 4, ... classes of the sample are timed, doubling
    until the whole sample or :data:`SHELL_TIMING_SECONDS` is reached; the
    last two runs give the cost per class (their difference) and the fixed
    cost.  A first class that alone takes longer than the cap is the only one
    timed, the fixed cost counted as the class's (an over-estimate).
    """
    k = len(w)
    began = time.perf_counter()
    runs = []  # (classes, seconds)
    n = 1
    while True:
        started = time.perf_counter()
        settled = shell_bounds(w, tol=DEFAULT_TOL, block_bytes=shell_block_budget(max_memory),
                               max_support=max_support(k, max_memory), rows=sample[:n])
        runs.append((n, time.perf_counter() - started))
        if n == len(sample) or time.perf_counter() - began > SHELL_TIMING_SECONDS:
            break
        n = min(2 * n, len(sample))
    if len(runs) == 1:
        return sample[:n], settled, 0.0, runs[0][1] / n
    (n_a, t_a), (n_b, t_b) = runs[-2:]
    per_class = max(t_b - t_a, 0.0) / (n_b - n_a)
    return sample[:n], settled, max(t_b - n_b * per_class, 0.0), per_class


def _time_qp_block(w: np.ndarray, sample: np.ndarray, dev, m: int, block: int, tile: int, workers: int):
    """Seconds of one QP block of the real size, spread over the code, as one worker runs it; and a note.

    A block's classes are solved side by side, so a block costs about what
    its slowest class costs, and much less than its classes one by one.
    After a run of a few classes that takes the device's warm-up, the block
    (a quarter of the code where one block holds it all) is timed, twice
    where the first run took less than :data:`QP_TIMING_REPEAT_BELOW` and time
    allows.  Everything stops at :data:`QP_TIMING_SECONDS`: the time of a run
    cut short is a lower bound, and the note (``""`` otherwise) says so.
    """
    torch = heavy.torch()

    from ._qp import OutOfTime, certify_block

    k = len(w)
    w_t = torch.from_numpy(w).to(dev)
    w32 = w_t.to(torch.float32)
    scratch = torch.empty(block * tile, dtype=torch.float32, device=dev)  # as each worker has
    deadline = time.perf_counter() + QP_TIMING_SECONDS

    def timed(rows: np.ndarray) -> tuple[float, bool]:
        started = time.perf_counter()
        try:
            certify_block(w_t, w32, torch.from_numpy(rows).to(dev), m, DEFAULT_TOL,
                          torch.full((len(rows),), -1, dtype=torch.long, device=dev), tile, scratch,
                          scan_threads(workers), deadline=deadline)
        except OutOfTime:
            return time.perf_counter() - started, False
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        return time.perf_counter() - started, True

    spread = np.unique(np.linspace(0, k - 1, min(block, max(32, k // 4))).astype(np.int64))
    warm_up = sample[:min(8, len(spread))]
    with linalg_threads(dev):
        seconds, done = timed(warm_up)
        if not done:  # not even the warm-up's few classes: a block of the code's classes takes longer
            return seconds, f"; at least this: {len(warm_up)} of its classes were not solved in {seconds:.1f} s"
        runs = []
        while len(runs) < 2:
            seconds, done = timed(spread)
            if not done:
                if runs:  # the first run finished: it is the measurement
                    break
                return seconds, f"; at least this: a block was not solved in {seconds:.1f} s"
            runs.append(seconds)
            if seconds >= QP_TIMING_REPEAT_BELOW:
                break
    return min(runs), ""
