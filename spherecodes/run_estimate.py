"""The whole of a ``generate`` run estimated before any work: candidates, statistics and certificate.

:func:`estimate_run` times each phase on a sample of its own work on this
machine (the optimisers through :func:`spherecodes.solvers.tammes_estimate`,
the certificate through :func:`spherecodes.certificate.certificate_estimate`,
the float64 statistics by a block of their products), so that the command
can print one estimate for the whole run, say which phase dominates and
what ``--no-certify`` would save, split a ``--time-limit`` between the
optimisers and the phases after them, and refuse a run that would take
absurdly long, naming the flags that fit.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import h5py
import numpy as np

from .best_of import (
    AutoPlan,
    Candidate,
    describe_build,
    describe_plan,
    exact_candidates,
    plan_auto,
    run_structured,
    structured_build,
)
from .bank import prototype_storage
from .bounds import max_cos_lower_bound
from .constructions import construct
from .errors import SpherecodesError
from .generation import CLOSED_FORMS, STRUCTURED, resolve_method, rotation_reason
from .lp_store import cache_path, read_table
from .memory import ABSURD_SECONDS, format_bytes, format_duration, memory_limit
from .orbit import ORBIT_MIN_K, OrbitPrefix, describe_orbit, resolve_orbit
from .rotated import orthogonality_error
from .sphere import DEFAULT_TILE, nearest_others, random_rotation, random_start
from .structured import best_structured_code
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

#: Phases whose time is spent after the code exists, counted against a time limit before the optimisers.
AFTER_THE_CODE = ("statistics", "certificate", "writing")

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
        estimated).  The limit bounds the phase's own arrays (their blocks
        are sized to it, and a phase whose arrays cannot fit is refused by
        its estimate), not the interpreter and libraries around them, so
        the peak may exceed it.
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
    built : tuple of spherecodes.best_of.Candidate or None
        The exact codes built for the estimate where no optimiser runs (the
        certificate was timed on them): pass them to
        :func:`spherecodes.generation.generate` (``built``) so that the run
        does not build them again.  None where the estimate built none (an
        optimiser runs: the run builds its candidates itself).
    """

    d: int
    k: int
    phases: tuple
    time_limit: float | None = None
    optimiser_time_limit: float | None = None
    built: tuple | None = field(default=None, repr=False, compare=False)

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


def estimate_run(
    d: int, k: int, method: str = "auto", *, seed: int = 0, device: str = "auto", steps: int | None = None,
    restarts: int | None = None, time_limit: float | None = None, max_memory: float | None = None,
    neighbours: int | None = None, refresh: int | None = None, effort: str = "default", catalog: bool = True,
    certify: bool = True, started: float | None = None, announce=None, rotation: str = "auto",
) -> tuple[RunEstimate, AutoPlan | None]:
    """Estimate every phase of ``generate`` (and the certificate after it) for these settings, before any work.

    Parameters
    ----------
    d, k, method, seed, device, steps, restarts, max_memory, neighbours, refresh, effort, catalog
        As for :func:`spherecodes.generation.generate`.
    time_limit : float, optional
        Seconds for the whole run: the optimisers get what the estimated
        statistics and certificate leave of it (``optimiser_time_limit``).
    certify : bool
        Whether the run certifies the code.
    rotation : str
        As for :func:`spherecodes.generation.generate`: a code that is one
        orbit of sign changes, kept in its coordinates, has its statistics
        read off one class.
    started : float, optional
        ``time.perf_counter()`` when the run began (default: now); the time
        spent since counts against ``time_limit``.
    announce : callable, optional
        Called with one line of text before each timing (the plan of
        ``auto`` first, as :func:`spherecodes.best_of.describe_plan` words
        it): timing a large certificate can itself take minutes.

    Returns
    -------
    (RunEstimate, AutoPlan or None)
        The estimate, and for ``auto`` the plan that fits the optimisers'
        share of the time limit (print it with
        :func:`spherecodes.best_of.describe_plan`).

    Raises
    ------
    SpherecodesError
        A phase that cannot fit in memory (refused by its own estimate).

    Examples
    --------
    >>> est, plan = estimate_run(64, 1000, device="cpu")
    >>> [p.name for p in est.phases], plan.runs_optimiser
    (['start-up', 'bound', 'candidates', 'statistics', 'certificate', 'writing'], False)
    """
    started = time.perf_counter() if started is None else started
    announce = announce or (lambda line: None)
    method = resolve_method(d, k, method)
    plan = None
    if method == "auto":
        plan = plan_auto(d, k, steps=steps, restarts=restarts, time_limit=time_limit, neighbours=neighbours,
                         max_memory=max_memory, catalog=catalog, seed=seed)
        announce(describe_plan(plan, k))
    optimising = _optimising(method, plan)
    # What cannot fit in memory is refused first: the optimiser's working set, or the exact code as it is built.
    solver = _solver_estimate(d, k, method, device, steps, restarts, neighbours, refresh, max_memory, effort) \
        if optimising else None
    build = _structured_build(d, k, method, plan, max_memory)
    if build is not None and not optimising:
        announce(f"estimating: the structured code first ({describe_build(build)}; the certificate is timed on it) ...")
    elif not optimising and k * d >= LARGE_CODE:  # seconds of building, which the run keeps: not in silence
        announce("estimating: building the exact codes first (the run keeps them; the certificate is timed on them) ...")
    built, points, build_seconds = _code_to_certify(d, k, method, plan, optimising, seed, max_memory)
    statistics, orbit = _statistics_phase(d, k, built, points, optimising, rotation)
    # Refused at once where the statistics alone are too long: timing the certificate could take minutes more.
    RunEstimate(d, k, (statistics,), time_limit).check()
    bound = _bound_phase(d, k)  # after the refusals: it may take a second where it is solved
    if certify and k * d >= LARGE_CODE:  # smaller certificates are timed in seconds: no need to say so
        announce(f"estimating: statistics ~{format_duration(statistics.seconds)}; timing the certificate on a sample "
                 "of its classes (seconds; --no-certify skips it and the certificate) ...")
    certificate = _certificate_phase(points, optimising, device, max_memory, orbit, rotation,
                                     _stored(built, points, rotation)) if certify else None
    writing = _writing_phase(points, k, d)
    optimiser_limit = None
    if time_limit is not None:
        after = statistics.seconds + (certificate.seconds if certificate is not None else 0.0) + writing.seconds
        # An optimising run builds its structured candidate itself: its build is not the optimisers' either.
        later_build = build[0] if build is not None and optimising else 0.0
        optimiser_limit = max(time_limit - after - later_build - (time.perf_counter() - started), 1e-3)
        if plan is not None:
            plan = plan_auto(d, k, steps=steps, restarts=restarts, time_limit=optimiser_limit,
                             neighbours=neighbours, max_memory=max_memory, catalog=catalog, seed=seed)
            if optimising and not _optimising(method, plan):  # the share left no optimiser: the exact code it is
                optimising = False
                announce(f"{describe_plan(plan, k)}\nestimating: timing the certificate of that code ...")
                built, points, build_seconds = _code_to_certify(d, k, method, plan, optimising, seed, max_memory)
                statistics, orbit = _statistics_phase(d, k, built, points, optimising, rotation)
                certificate = _certificate_phase(points, optimising, device, max_memory, orbit, rotation,
                                                 _stored(built, points, rotation)) if certify else None
    phases = [statistics] + ([certificate] if certificate is not None else []) + [writing]
    first = _candidates_phase(d, k, method, plan, build_seconds, optimiser_limit, solver, points,
                              device=device, steps=steps, max_memory=max_memory, build=build)
    fixed = (_start_up_phase(started, bound.seconds + (0.0 if optimising else build_seconds)), bound)
    estimate = RunEstimate(d, k, (*fixed, first, *phases), time_limit, optimiser_limit if optimising else None, built)
    return estimate, plan


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


def _start_up_phase(started: float, counted: float) -> Phase:
    """What the process has spent so far besides the ``counted`` seconds of other phases: starting Python and
    the libraries, the command's checks and this estimate's timings."""
    age = process_seconds()
    if age is None:  # the command's part only
        return Phase("start-up", "the command and this estimate (spent)", time.perf_counter() - started - counted)
    return Phase("start-up", "Python, the libraries, the command and this estimate (spent)", max(age - counted, 0.0))


def _bound_phase(d: int, k: int) -> Phase:
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


def _writing_phase(points: np.ndarray, k: int, d: int) -> Phase:
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


def _statistics_phase(d: int, k: int, built, points: np.ndarray, optimising: bool, rotation: str):
    """The float64 statistics' phase, and the structure the certificate's timing is given.

    For a code that is one orbit of sign changes, or the first K words of
    one: the structure proved here, once (the candidate keeps it for the
    run, :attr:`spherecodes.best_of.Candidate.orbit`), and the statistics'
    own work on it timed (a product or two and, for a prefix, a tree of
    maxima: O(K·d)).  A rotation keeps it: the statistics and the
    certificate are computed in the construction's coordinates and carried
    to the turned rows (:mod:`spherecodes.rotated`), at the cost of one
    product of the rows with the rotation, timed here on a block of rows.
    Else every pair.
    """
    if not optimising and k >= ORBIT_MIN_K:
        proved = time.perf_counter()
        orbit = resolve_orbit(points)
        for candidate in built:
            if candidate.prototypes is points:
                candidate.orbit = orbit
        if orbit is not None:
            if isinstance(orbit, (OrbitPrefix, Z4Orbit)):
                orbit.nearest(points)
            seconds = time.perf_counter() - proved
            what = describe_orbit(orbit)
            if rotation_reason(points, rotation) is not None:
                seconds += _rotation_seconds(points)
                what += ", carried through the rotation"
            return Phase("statistics", what, seconds), orbit
    return Phase("statistics", f"float64 cosines of all {k * (k - 1) // 2:,} pairs", statistics_seconds(d, k)), None


#: Rows of the code turned in :func:`_rotation_seconds`' timing.
ROTATION_SAMPLE_ROWS = 1024


def _rotation_seconds(points: np.ndarray) -> float:
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


def _optimising(method: str, plan: AutoPlan | None) -> bool:
    """Whether an optimiser runs: the method is one, or ``auto`` plans one."""
    return method not in CLOSED_FORMS + (STRUCTURED, "auto") or (plan is not None and plan.runs_optimiser)


def _solver_estimate(d, k, method, device, steps, restarts, neighbours, refresh, max_memory, effort):
    """The optimiser's :class:`spherecodes.memory.Estimate`, refusing what cannot fit."""
    from .solvers import tammes_estimate

    return tammes_estimate(d, k, steps=steps, restarts=restarts, device=device, neighbours=neighbours,
                           refresh=refresh, max_memory=max_memory,
                           effort=effort if method == "tammes" else "default")


def _code_to_certify(d, k, method, plan, optimising, seed, max_memory) -> tuple[tuple, np.ndarray, float]:
    """The exact codes built, the code the run will certify, and the seconds it took to build them.

    The codes are built here where they are exact (milliseconds to a
    minute), once: the run takes them over (:attr:`RunEstimate.built`).
    Else the code is a random code of the size, the optimiser's first start
    (its result is not known yet), and nothing is built.
    """
    if optimising:
        return None, random_start(seed, 0, k, d), 0.0
    began = time.perf_counter()
    built = tuple(_exact_codes(d, k, method, plan, max_memory))
    # The best of them is the code returned (a tie goes to the earlier, as auto breaks ties of large codes).
    points = min(built, key=lambda c: c.max_cos).prototypes if len(built) > 1 else built[0].prototypes
    return built, points, time.perf_counter() - began


def _stored(built, points, rotation: str):
    """The candidate the run will certify where it brings its own checked certificate (a bundled code kept as
    stored, :attr:`spherecodes.best_of.Candidate.certificate`), else None."""
    winner = next((c for c in built or () if c.prototypes is points), None)
    if winner is None or winner.certificate is None or rotation_reason(points, rotation) is not None:
        return None
    return winner


def _certificate_phase(points, optimising, device, max_memory, orbit, rotation: str = "none", stored=None) -> Phase:
    """The certificate's phase, timed on a sample of its classes by :func:`spherecodes.certificate.certificate_estimate`;
    nothing to compute for a ``stored`` candidate's certificate, checked as its bank was read.

    A code with a proved structure is certified through its construction (in
    its own coordinates, and carried through the rotation where the run
    turns it): the phase says so first."""
    if stored is not None:
        return Phase("certificate", f"the stored certificate of the {stored.label} code, checked against its witness "
                     "as its bank was read (among the candidates)", 0.0)
    from .certificate import certificate_estimate

    cert = certificate_estimate(points, device=device, max_memory=max_memory, orbit=orbit)
    what = cert.what.replace("certificate of ", "", 1)
    if orbit is not None:
        what = "certified through the construction: " + what
        if rotation_reason(points, rotation) is not None:
            what += ", carried through the rotation"
    if optimising:
        what += ", timed on a random code of this size"
    return Phase("certificate", what, cert.seconds, cert.nbytes, cert.limit)


def _exact_codes(d: int, k: int, method: str, plan: AutoPlan | None, max_memory) -> list[Candidate]:
    """The codes that a run without optimiser chooses from, as ``generate`` takes them (``built``), before any
    rotation (which keeps every cosine)."""
    if method in CLOSED_FORMS:
        began = time.perf_counter()
        points = construct(method, d, k)
        return [Candidate(f"closed form {method}", "closed-form", points, seconds=time.perf_counter() - began)]
    if method == STRUCTURED:
        return [run_structured(d, k, max_memory)]  # or the error naming the closest structured codes
    return exact_candidates(d, k, plan, max_memory)


def _structured_build(d, k, method, plan, max_memory) -> tuple | None:
    """(seconds, bytes) of building the run's structured code where that takes long, refused where it cannot fit."""
    if method == "auto":
        return plan.build
    code = best_structured_code(d, k) if method == STRUCTURED else None
    return structured_build(code, max_memory) if code is not None else None


def _candidates_phase(d, k, method, plan, build_seconds, optimiser_limit, solver, stand_in, *, device, steps,
                      max_memory, build=None) -> Phase:
    """The first phase: the exact codes built (timed above), or the optimisers (``solver``: their estimate).

    ``build``: the (seconds, bytes) expected for building the structured code where that takes long; built
    above where no optimiser runs (its measured seconds are the phase's), else by the run, before the optimisers.
    """
    runs = 1
    memory = {} if build is None else {"nbytes": build[1], "limit": memory_limit("cpu", max_memory)}
    if method == "auto":
        if not plan.runs_optimiser:
            return Phase("candidates", "exact codes (structured, closed forms, bundled)", build_seconds, **memory)
        runs = sum(1 for o in plan.optimisers if not o.skip)
    elif method in CLOSED_FORMS + (STRUCTURED,):
        return Phase("candidates", f"{method}: built", build_seconds, **memory)
    seconds, what = runs * solver.seconds, solver.what
    if method == "auto":
        what = f"{runs} optimiser run{'s' if runs > 1 else ''} of {what}"
    elif method == "softmax":
        seconds, what = _softmax_seconds(d, k, steps, solver.seconds, stand_in, device, max_memory)
    elif method != "tammes":
        what = f"{method}: the start and work of {what} (its cost at this size)"
    if optimiser_limit is not None:
        seconds = min(seconds, optimiser_limit)
    if build is not None and method == "auto":
        seconds += build[0]
        what = f"the structured code ({describe_build(build)}), then {what}"
    return Phase("candidates", what, seconds, solver.nbytes, solver.limit)


def _softmax_seconds(d, k, steps, start_seconds, stand_in, device, max_memory) -> tuple[float, str]:
    """Softmax Code: its tammes start, then one certificate per ascent step."""
    from .certificate import certificate_estimate
    from .solvers import SoftmaxOptions

    cfg, _ = SoftmaxOptions.resolve(d, k, steps=steps)
    per_step = certificate_estimate(stand_in, device=device, max_memory=max_memory).seconds
    return (start_seconds + cfg.steps * per_step,
            f"softmax: the tammes start (~{format_duration(start_seconds)}), then {cfg.steps} ascent steps of one "
            f"certificate each (~{format_duration(per_step)})")
