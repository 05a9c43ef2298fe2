"""The phases of a ``generate`` run estimated before any work: candidates, statistics and certificate.

:meth:`spherecodes.run.RunPlan.estimate` assembles them: each phase is timed
on a sample of its own work on this machine (the optimisers through
:func:`spherecodes.solvers.tammes_estimate`, the certificate through
:func:`spherecodes.certificate.certificate_estimate`, the statistics by a
block of their products), so that the command can print one estimate for
the whole run, say what ``--no-certify`` would save, split a
``--time-limit`` between the optimisers and the phases after them, and
refuse a run that would take absurdly long, naming the flags that fit.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import h5py
import numpy as np

from .bank import prototype_storage
from .bounds import max_cos_lower_bound
from .lp_store import cache_path, read_table
from .errors import SpherecodesError
from .memory import ABSURD_SECONDS, format_bytes, format_duration
from .orbit import ORBIT_MIN_K, OrbitPrefix, resolve_orbit
from .rotated import orthogonality_error
from .sphere import DEFAULT_TILE, nearest_others, random_rotation, random_start
from .z4orbit import Z4Orbit

#: The certificate "dominates" when it is more than this fraction of the
#: run and longer than :data:`NOTABLE_SECONDS`: the estimate then says what
#: ``--no-certify`` would save.
DOMINANT = 0.5
NOTABLE_SECONDS = 30.0

#: K·d from which timing the certificate's sample takes seconds (a QP block or NNLS at large d): said first.
LARGE_CODE = 10**7

#: Bytes of prototypes written (into memory) to time the bank's write.
WRITE_SAMPLE_BYTES = 256 * 2**10

#: Rows and columns of the block of float64 products that times the statistics.
STATS_SAMPLE_ROWS = 512
STATS_SAMPLE_COLUMNS = 4096
STATS_SAMPLE_DIMENSIONS = 1024


@dataclass(frozen=True)
class Phase:
    """One phase of a run: what it does, and its expected time and memory.

    Attributes
    ----------
    name : str
        In the order they run: ``"start-up"`` (Python, the libraries and the
        command up to the estimate: spent), ``"bound"`` (the lower bound on
        max-cos the report shows: found for the estimate), ``"candidates"``,
        ``"statistics"``, ``"certificate"``, ``"writing"`` (the bank).
    what : str
        For people.
    seconds : float
        Expected wall time.
    nbytes, limit : float
        Expected peak memory of the process and the bytes allowed (0: not
        estimated).  The limit bounds the phase's own arrays, not the
        interpreter and libraries around them, so the peak may exceed it.
    """

    name: str
    what: str
    seconds: float
    nbytes: float = 0.0
    limit: float = 0.0


@dataclass(frozen=True)
class RunEstimate:
    """What a ``generate`` run is expected to take, phase by phase, decided before any work.

    Attributes
    ----------
    d, k : int
    phases : tuple of Phase
        In the order they run.
    time_limit : float or None
        The time limit of the whole run (``--time-limit``).
    optimiser_time_limit : float or None
        What the optimisers may use of it: the time limit less the estimate
        of the phases after them and the time already spent.
    """

    d: int
    k: int
    phases: tuple
    time_limit: float | None = None
    optimiser_time_limit: float | None = None

    @property
    def seconds(self) -> float:
        """The whole run's expected wall time."""
        return sum(p.seconds for p in self.phases)

    def phase(self, name: str) -> Phase | None:
        """The phase of that name, or None."""
        return next((p for p in self.phases if p.name == name), None)

    def describe(self) -> str:
        """The estimate as printed before the work: a line per phase, the total, and what dominates.

        Examples
        --------
        >>> est = RunEstimate(64, 1000, (Phase("candidates", "BCH", 0.01), Phase("statistics", "pairs", 0.2),
        ...                              Phase("certificate", "QP", 300.0, 2**30, 2**32)))
        >>> print(est.describe())
        estimate for the whole run (d = 64, K = 1000), timed on samples here:
          candidates   BCH: ~0.01 s
          statistics   pairs: ~0.2 s
          certificate  QP: ~5.0 min, process peak ~1.0 GiB (its arrays within the 4.0 GiB allowed)
          total        ~5.0 min; the certificate is 100% of it: --no-certify would finish in ~0.2 s (certify later with 'spherecodes certify BANK --write')
        """
        lines = [f"estimate for the whole run (d = {self.d}, K = {self.k}), timed on samples here:"]
        for p in self.phases:
            memory = (f", process peak ~{format_bytes(p.nbytes)} (its arrays within the {format_bytes(p.limit)} "
                      "allowed)") if p.limit else ""
            lines.append(f"  {p.name:<12} {p.what}: ~{format_duration(p.seconds)}{memory}")
        total = f"  {'total':<12} ~{format_duration(self.seconds)}"
        if self.time_limit is not None:
            total += f" (--time-limit {format_duration(self.time_limit)} bounds the whole run"
            total += "" if self.optimiser_time_limit is None else \
                f"; the optimisers get {format_duration(self.optimiser_time_limit)} of it"
            total += ")"
        certificate = self.phase("certificate")
        if certificate is not None and certificate.seconds > NOTABLE_SECONDS \
                and certificate.seconds > DOMINANT * self.seconds:
            total += (f"; the certificate is {certificate.seconds / self.seconds:.0%} of it: --no-certify would "
                      f"finish in ~{format_duration(self.seconds - certificate.seconds)} (certify later with "
                      "'spherecodes certify BANK --write')")
        lines.append(total)
        return "\n".join(lines)

    def check(self) -> None:
        """Refuse, naming the flags that fit, a run whose statistics and certificate would take absurdly long, or
        that cannot keep its time limit.

        Examples
        --------
        >>> RunEstimate(64, 10**6, (Phase("certificate", "QP", 1e6),)).check()
        Traceback (most recent call last):
        ...
        spherecodes.errors.SpherecodesError: this run is estimated at ~277.8 h, the certificate ~277.8 h of it; ...
        """
        certificate = self.phase("certificate")
        after = sum(p.seconds for p in self.phases if p.name in ("statistics", "certificate"))
        without = self.seconds - (certificate.seconds if certificate is not None else 0.0)
        no_certify = (f"pass --no-certify (~{format_duration(without)} without it; 'spherecodes certify BANK "
                      "--write' can certify later, with its own estimate)")
        if self.time_limit is not None and after > self.time_limit:
            fix = no_certify if certificate is not None and without < self.time_limit else \
                "choose a smaller size"
            raise SpherecodesError(
                f"--time-limit {format_duration(self.time_limit)} cannot hold this run: the statistics"
                + (" and the certificate" if certificate is not None else "")
                + f" alone are estimated at ~{format_duration(after)}; {fix}, or raise --time-limit above "
                f"~{format_duration(after)}")
        # The optimisers are not refused: --time-limit or Ctrl-C bounds them and keeps the best code so far.
        if after <= ABSURD_SECONDS:
            return
        longest = max((p for p in self.phases if p.name != "candidates"), key=lambda p: p.seconds)
        fix = no_certify if longest.name == "certificate" else \
            "choose a smaller K, or --device cuda where a GPU is present"
        raise SpherecodesError(
            f"this run is estimated at ~{format_duration(self.seconds)}, the {longest.name} "
            f"~{format_duration(longest.seconds)} of it; not started (over {format_duration(ABSURD_SECONDS)}): {fix}")


def statistics_seconds(d: int, k: int) -> float:
    """Expected seconds of the float64 statistics of K prototypes in R^d on the CPU (every pair's cosine).

    Times one block of the products (:data:`STATS_SAMPLE_ROWS` rows against
    :data:`STATS_SAMPLE_COLUMNS`, in at most :data:`STATS_SAMPLE_DIMENSIONS`
    dimensions) on a random code and scales it to K² (and d).

    Examples
    --------
    >>> 0 < statistics_seconds(64, 1000) < statistics_seconds(64, 100_000)
    True
    """
    rows, columns = min(k, STATS_SAMPLE_ROWS), min(k, STATS_SAMPLE_COLUMNS)
    width = min(d, STATS_SAMPLE_DIMENSIONS)  # the products' cost grows like d: a wider code is scaled, not built
    sample = random_start(0, 0, columns, width)
    fastest = math.inf
    for _ in range(2):  # the faster of two: the first also meets the arrays' first page faults
        started = time.perf_counter()
        nearest_others(sample, np.arange(rows), min(DEFAULT_TILE, columns), smallest=True)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest * (k / rows) * (k / columns) * (d / width)


def process_seconds() -> float | None:
    """Seconds since this process started (from ``/proc`` on Linux), or None where that cannot be read.

    Examples
    --------
    >>> seconds = process_seconds()
    >>> seconds is None or 0 <= seconds < 10**9
    True
    """
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            # Field 22, the start in clock ticks after boot, counted after the command's name in parentheses.
            ticks = int(stat.read().rpartition(")")[2].split()[19])
            return max(0.0, float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def start_up_phase(started: float, counted: float) -> Phase:
    """What the process has spent so far besides the ``counted`` seconds of other phases: starting Python and
    the libraries, the command's checks and this estimate's timings."""
    age = process_seconds()
    if age is None:  # the command's part only
        return Phase("start-up", "the command and this estimate (spent)", time.perf_counter() - started - counted)
    return Phase("start-up", "Python, the libraries, the command and this estimate (spent)", max(age - counted, 0.0))


def bound_phase(d: int, k: int) -> Phase:
    """The lower bound on max-cos that the bank and the report show, found here (the run then reuses it)."""
    found = time.perf_counter()
    where = "the table shipped with spherecodes" if (d, k) in read_table() else \
        "this user's cache" if cache_path(d, k).is_file() else None
    bound = max_cos_lower_bound(d, k)
    seconds = time.perf_counter() - found
    if not bound.method.startswith("Delsarte"):
        return Phase("bound", f"the lower bound on max-cos ({bound.method})", seconds)
    if where is not None:
        return Phase("bound", f"the LP bound on max-cos, from {where} (its polynomial verified here)", seconds)
    return Phase("bound", "the LP bound on max-cos, solved here (and kept in this user's cache)", seconds)


def writing_phase(points: np.ndarray, k: int, d: int) -> Phase:
    """Writing the K x d prototypes into a bank as it stores them (:func:`spherecodes.bank.prototype_storage`):
    a sample of the rows written into memory, timed and scaled to K (the bank's other arrays are small)."""
    rows = min(k, max(1, WRITE_SAMPLE_BYTES // (8 * d)))
    storage = prototype_storage(k, d)
    began = time.perf_counter()
    with h5py.File(f"estimate-{os.getpid()}.h5", "w", driver="core", backing_store=False) as memory:
        memory.create_dataset("prototypes", data=points[:rows], **storage)
    seconds = (time.perf_counter() - began) * k / rows
    how = "gzip-compressed" if storage["compression"] else "plain"
    return Phase("writing", f"the {k:,} x {d} prototypes into the bank ({how})", seconds)


def statistics_phase(d: int, k: int, points: np.ndarray, exact: bool, turned: bool):
    """The float64 statistics' phase, and the structure the certificate's timing is given.

    For an ``exact`` code with a symmetry: the structure proved here, once
    (the run keeps it), and the statistics' own work on it timed, plus, where
    the run turns the code (``turned``), the product of the rows with the
    rotation (:mod:`spherecodes.rotated`).  Else every pair, and the
    structure ``"auto"``: proved by the run where the code is made.
    """
    if exact and k >= ORBIT_MIN_K:
        proved = time.perf_counter()
        orbit = resolve_orbit(points)
        if orbit is not None:
            if isinstance(orbit, (OrbitPrefix, Z4Orbit)):
                orbit.nearest(points)
            seconds = time.perf_counter() - proved
            what = orbit.describe_statistics()
            if turned:
                seconds += rotation_seconds(points)
                what += ", carried through the rotation"
            return Phase("statistics", what, seconds), orbit
    pairs = Phase("statistics", f"float64 cosines of all {k * (k - 1) // 2:,} pairs", statistics_seconds(d, k))
    return pairs, (None if exact and k >= ORBIT_MIN_K else "auto")


#: Rows of the code turned in :func:`rotation_seconds`' timing.
ROTATION_SAMPLE_ROWS = 1024


def rotation_seconds(points: np.ndarray) -> float:
    """Seconds to turn the code: the rotation's QR and its check (O(d³)), and the product with the rows (O(K·d²)),
    timed on a block of rows and scaled to K."""
    k, d = points.shape
    rows = min(k, ROTATION_SAMPLE_ROWS)
    started = time.perf_counter()
    q = random_rotation(d, 0)
    orthogonality_error(q)
    cubic = time.perf_counter() - started
    started = time.perf_counter()
    points[:rows] @ q
    return cubic + (time.perf_counter() - started) * k / rows


def certificate_phase(points, context, orbit, *, optimising: bool, turned: bool, stored=None) -> Phase:
    """The certificate's phase, timed on a sample of its classes by :func:`spherecodes.certificate.certificate_estimate`
    (through the construction where the code has a proved structure); nothing to compute for a ``stored``
    candidate's certificate, checked as its bank was read."""
    if stored is not None:
        return Phase("certificate", f"the stored certificate of the {stored.label} code, checked against its witness "
                     "as its bank was read (among the candidates)", 0.0)
    from .certificate import certificate_estimate

    cert = certificate_estimate(points, device=context.device, max_memory=context.max_memory, orbit=orbit)
    what = cert.what.replace("certificate of ", "", 1)
    if orbit is not None:
        what = "certified through the construction: " + what
        if turned:
            what += ", carried through the rotation"
    if optimising:
        what += ", timed on a random code of this size"
    return Phase("certificate", what, cert.seconds, cert.nbytes, cert.limit)


def softmax_seconds(d: int, k: int, steps, start_seconds: float, stand_in, context) -> tuple[float, str]:
    """Softmax Code: its tammes start, then one certificate per ascent step (timed on ``stand_in``)."""
    from .certificate import certificate_estimate
    from .solvers import SoftmaxSettings

    cfg, _ = SoftmaxSettings.resolve(d, k, steps=steps)
    per_step = certificate_estimate(stand_in, device=context.device, max_memory=context.max_memory).seconds
    return (start_seconds + cfg.steps * per_step,
            f"softmax: the tammes start (~{format_duration(start_seconds)}), then {cfg.steps} ascent steps of one "
            f"certificate each (~{format_duration(per_step)})")
