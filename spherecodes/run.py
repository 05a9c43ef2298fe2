"""One ``generate`` run, as one object: planned, estimated, checked, executed and stored.

:func:`plan_run` checks the input once (sizes, seed, rotation, name, the
method's options), resolves the method and, for ``auto``, plans its
candidates once (:func:`spherecodes.best_of.plan_auto`).  The
:class:`RunPlan` it returns holds what the run builds: the exact codes are
built once, whether the estimate or the run asks first, and the structure
the estimate proves on them is kept for the run.

* :meth:`RunPlan.estimate` times each phase on a sample of its own work
  (:mod:`spherecodes.run_estimate`) and splits the time limit; :meth:`RunPlan.check`
  refuses, before any work, a run that cannot keep it or would take absurdly long.
* :meth:`RunPlan.execute` runs the method (its entry of
  :data:`spherecodes.generation.METHOD_TABLE`) and certifies the code
  within the deadline (:func:`certify_within`).
* :func:`destination` refuses, before any work, a file or code it would
  replace without ``overwrite``; :meth:`RunPlan.store` writes the code
  there under the same rule for every caller: a run cut short (Ctrl-C)
  never replaces an existing code.

:func:`generate` is the whole of it for a code in memory.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from .atomic import LOCK_QUIET_S
from .bank import check_writable_destination, list_codes, write_code
from .best_of import describe_build, describe_plan, plan_auto, structured_build
from .bounds import max_cos_lower_bound
from .certificate import CertificateOutOfTime, one_vs_rest_distances
from .checks import check_seed, check_sizes
from .code import Code, check_code_name
from .context import RunContext
from .errors import SpherecodesError
from .export import EXPORT_FORMATS, export_code
from .generation import ROTATION_CHOICES, STRUCTURED, code_name, method_entry, method_options, resolve_method, \
    rotation_reason, unused_dimensions
from .memory import format_duration, require_memory
from .run_estimate import LARGE_CODE, RunEstimate, bound_phase, certificate_phase, start_up_phase, \
    statistics_phase, writing_phase
from .sphere import random_start
from .structured import best_structured_code

__all__ = ["Destination", "RunPlan", "RunResult", "certify_within", "destination", "generate", "plan_run"]


@dataclass
class RunResult:
    """What :meth:`RunPlan.execute` made.

    Attributes
    ----------
    code : Code
    interrupted : bool
        Ctrl-C (or SIGTERM) cut the run short: the code is the best so far.
    out_of_time : str or None
        Where the time limit stopped the certificate (the code is uncertified), else None.
    """

    code: Code
    interrupted: bool = False
    out_of_time: str | None = None


@dataclass
class RunPlan:
    """A checked ``generate`` run for (d, K), before any work (see the module docstring).

    Attributes
    ----------
    d, k, seed, rotation, name, labels, context
        As :func:`plan_run` takes them, checked (``name`` given or the default, ``context`` given or made).
    method : str
        The method that runs (``auto`` resolved: :func:`spherecodes.generation.resolve_method`).
    options : options object or None
        Its options (:mod:`spherecodes.options`).
    auto : AutoPlan or None
        What ``auto`` runs (:func:`spherecodes.best_of.plan_auto`), planned once.
    optimiser_time_limit : float or None
        What the optimisers may use of the time limit (set by :meth:`estimate`).
    """

    d: int
    k: int
    method: str
    options: object
    seed: int
    rotation: str
    name: str
    labels: list | None
    context: RunContext
    auto: object = None
    optimiser_time_limit: float | None = field(default=None, init=False)
    _built: list | None = field(default=None, init=False, repr=False)
    _orbits: dict = field(default_factory=dict, init=False, repr=False)
    _estimate: RunEstimate | None = field(default=None, init=False, repr=False)
    _bound: object = field(default=None, init=False, repr=False)

    @property
    def entry(self):
        """The method's entry of :data:`spherecodes.generation.METHOD_TABLE`."""
        return method_entry(self.method)

    @property
    def optimises(self) -> bool:
        """Whether an optimiser runs."""
        return self.entry.optimises(self)

    @property
    def used_seed(self) -> int | None:
        """The seed the code records: where it changes the code (an optimiser, ``auto``, a rotation)."""
        return code_name(self.d, self.k, self.method, self.seed, self.rotation)[1]

    @property
    def built(self) -> list:
        """The exact codes of the method (closed form, structured code, ``auto``'s exact candidates), built on first
        use and kept, so that the estimate and the run build them once."""
        if self._built is None:
            self._built = list(self.entry.build(self))
        return self._built

    @property
    def build_cost(self) -> tuple | None:
        """(seconds, bytes) of building the structured code where that takes long, refused where it cannot fit."""
        if self.method == "auto":
            return self.auto.build
        code = best_structured_code(self.d, self.k) if self.method == STRUCTURED else None
        return structured_build(code, self.context.max_memory) if code is not None else None

    @property
    def stand_in(self):
        """The code an optimiser's certificate is timed on: a random code of the size, its first start."""
        return random_start(self.seed, 0, self.k, self.d)

    @property
    def optimiser_context(self) -> RunContext:
        """The context the optimisers run in: their share of the time limit (:meth:`estimate`), or what is left."""
        limit = self.optimiser_time_limit
        if limit is None and self.context.time_limit is not None:
            limit = max(self.context.seconds_left(), 1e-3)
        return replace(self.context, time_limit=limit)

    def structure(self, candidate):
        """The structure of a built candidate's rows as proved by the estimate (else the candidate's own)."""
        return self._orbits.get(id(candidate.prototypes), candidate.orbit)

    def estimate(self, certify: bool = True) -> RunEstimate:
        """Every phase of the run timed on samples here, before any work; the optimisers' share of the time limit.

        Raises
        ------
        SpherecodesError
            A phase that cannot fit in memory, or statistics alone too long (refused by its own estimate).

        Examples
        --------
        >>> est = plan_run(64, 1000, context=RunContext(device="cpu")).estimate()
        >>> [p.name for p in est.phases]
        ['start-up', 'bound', 'candidates', 'statistics', 'certificate', 'writing']
        """
        context, d, k = self.context, self.d, self.k
        # The method's refusals of its inputs, before any of its work: the options may be completed after planning
        # (files read once the destination is checked).
        self.entry.check(self)
        if self.auto is not None:
            context.say(describe_plan(self.auto, k))
        # What cannot fit in memory is refused first: the optimiser's working set, or the exact code as it is built.
        cost = _optimiser_cost(self) if self.optimises else None
        build = self.build_cost
        if build is not None and not self.optimises:
            context.say(f"estimating: the structured code first ({describe_build(build)}; the certificate is timed "
                        "on it) ...")
        elif not self.optimises and k * d >= LARGE_CODE:  # seconds of building, which the run keeps: not in silence
            context.say("estimating: building the exact codes first (the run keeps them; the certificate is timed "
                        "on them) ...")
        statistics, certificate, built_seconds = self._after_the_code(certify, announce_certificate=True)
        writing = writing_phase(self._certified_points(), k, d)
        limit = None
        if context.time_limit is not None:
            after = statistics.seconds + (certificate.seconds if certificate is not None else 0.0) + writing.seconds
            # An optimising run builds its structured candidate itself: its build is not the optimisers' either.
            later_build = build[0] if build is not None and self.optimises else 0.0
            limit = max(context.time_limit - after - later_build - (time.perf_counter() - context.started), 1e-3)
            if self.auto is not None:
                optimising = self.optimises
                self.auto = self.auto.within(limit)
                if optimising and not self.optimises:  # the share left no optimiser: the exact code it is
                    context.say(f"{describe_plan(self.auto, k)}\nestimating: timing the certificate of that code ...")
                    statistics, certificate, built_seconds = self._after_the_code(certify)
        phases = [statistics] + ([certificate] if certificate is not None else []) + [writing]
        first = self.entry.phase(self, cost, built_seconds, limit)
        fixed = (start_up_phase(context.started, self._bound.seconds + (0.0 if self.optimises else built_seconds)),
                 self._bound)
        self.optimiser_time_limit = limit if self.optimises else None
        self._estimate = RunEstimate(d, k, (*fixed, first, *phases), context.time_limit, self.optimiser_time_limit)
        return self._estimate

    def _certified_points(self):
        """The rows the certificate will see: the best exact code built, else a random code of the size."""
        if self.optimises:
            return self.stand_in
        # The best of them is the code returned (a tie goes to the earlier, as auto breaks ties of large codes).
        return min(self.built, key=lambda c: c.max_cos).prototypes

    def _after_the_code(self, certify: bool, announce_certificate: bool = False):
        """The statistics' and the certificate's phases (the bound's found between them), and the build's seconds."""
        d, k, context = self.d, self.k, self.context
        began = time.perf_counter()
        points = self._certified_points()
        built_seconds = 0.0 if self.optimises else time.perf_counter() - began
        turned = rotation_reason(self.rotation, unused_dimensions(points), d) is not None
        statistics, orbit = statistics_phase(d, k, points, not self.optimises, turned)
        if not isinstance(orbit, str):
            self._orbits[id(points)] = orbit
        # Refused at once where the statistics alone are too long: timing the certificate could take minutes more.
        RunEstimate(d, k, (statistics,), context.time_limit).check()
        if self._bound is None:
            self._bound = bound_phase(d, k)  # after the refusals: it may take a second where it is solved
        if not certify:
            return statistics, None, built_seconds
        if announce_certificate and k * d >= LARGE_CODE:  # smaller certificates are timed in seconds
            context.say(f"estimating: statistics ~{format_duration(statistics.seconds)}; timing the certificate on a "
                        "sample of its classes (seconds; --no-certify skips it and the certificate) ...")
        stored = None if self.optimises or turned else \
            next((c for c in self.built if c.prototypes is points and c.certificate is not None), None)
        certificate = certificate_phase(points, context, None if isinstance(orbit, str) else orbit,
                                        optimising=self.optimises, turned=turned, stored=stored)
        return statistics, certificate, built_seconds

    def describe(self) -> str:
        """The estimate as printed before the work (:meth:`spherecodes.run_estimate.RunEstimate.describe`)."""
        return (self._estimate or self.estimate()).describe()

    def check(self) -> None:
        """Refuse, naming the flags that fit, a run that cannot keep its time limit or would take absurdly long."""
        (self._estimate or self.estimate()).check()

    def execute(self, certify: bool = False, tol: float | None = None) -> RunResult:
        """Make the code and, with ``certify``, its certificate within the deadline.

        Ctrl-C during an optimiser keeps its best code so far (``interrupted``);
        during the certificate or the bound it ends them and keeps the code.
        """
        self.entry.check(self)
        code = self.entry.run(self)
        result = RunResult(code, code.settings.get("stop_reason") == "interrupted")
        try:
            if certify and not result.interrupted and code.certificate is None:  # a bundled code's comes checked
                self._certify(result, tol)
            # The LP bound the bank stores takes seconds at large sizes: computed here (and remembered), so that
            # Ctrl-C during it keeps the code instead of abandoning the write.
            max_cos_lower_bound(self.d, self.k)
        except KeyboardInterrupt:
            result.interrupted = True
        code.wall_time = time.perf_counter() - self.context.started  # the whole run, as the report's "made ... in" says
        return result

    def _certify(self, result: RunResult, tol) -> None:
        context, code = self.context, result.code
        if context.past_deadline():
            result.out_of_time = "before the certificate"
            return
        # An optimiser's code was not known to the estimate (timed on a random code): not described.
        certificate = None if self._estimate is None or self.optimises else self._estimate.phase("certificate")
        context.say(f"certificate: {certificate.what}" if certificate is not None
                    else f"certificate: K = {code.k} classes in d = {code.d}")
        try:
            code.certificate = certify_within(code, context, **({} if tol is None else {"tol": tol}))
        except CertificateOutOfTime as stop:
            result.out_of_time = (f"during the certificate ({stop.progress.step:,} of {stop.progress.steps:,} "
                                  "classes settled)")

    def store(self, result: RunResult, where: Destination, waiting=None) -> bool:
        """Write the code at ``where`` (a bank, or a matrix file); False where a run cut short would replace an
        existing code or file (``overwrite`` asked to replace it with a finished run's code), which is kept."""
        if result.interrupted and where.replaces():
            return False
        if where.matrix:
            export_code(result.code, where.path, dtype=where.dtype or "float32", overwrite=where.overwrite)
        else:
            # The time limit bounds the wait for another process writing the bank too (a second at least, past a
            # run that used all its time).
            left = self.context.seconds_left()
            write_code(where.path, result.code, overwrite=where.overwrite, waiting=waiting,
                       lock_timeout=None if left is None else max(left, LOCK_QUIET_S))
        return True


def _optimiser_cost(plan):
    """The optimiser's :class:`spherecodes.memory.Estimate` (:func:`spherecodes.solvers.tammes_estimate`: every
    optimiser starts from its annealing), refusing what cannot fit."""
    from .solvers import tammes_estimate

    options, context = plan.options, plan.context
    return tammes_estimate(plan.d, plan.k, steps=getattr(options, "steps", None),
                           restarts=getattr(options, "restarts", None), device=context.device,
                           neighbours=getattr(options, "neighbours", None), refresh=getattr(options, "refresh", None),
                           max_memory=context.max_memory,
                           effort=options.effort if plan.method == "tammes" else "default")


def plan_run(d: int, k: int, method: str = "auto", options=None, *, seed: int = 0, rotation: str = "auto",
             name: str | None = None, labels=None, context: RunContext | None = None) -> RunPlan:
    """Check a ``generate`` run once and plan it, before any work.

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
    method : str
        ``"auto"`` or one of :data:`spherecodes.generation.METHODS`.
    options : options object, optional
        The method's (:mod:`spherecodes.options`): ``TammesOptions`` for
        ``tammes``, ... (``AutoOptions`` for ``auto`` also serve the method
        ``auto`` resolves to); None: the defaults.  The closed forms and
        ``structured`` take none.
    seed : int
        Seed of the optimiser's random starts, and of the random rotation.
    rotation : {"auto", "none", "canonical", "random"}
        See :func:`spherecodes.generation.rotation_reason`.
    name : str, optional
        Code name; default :func:`spherecodes.generation.code_name`.
    labels : sequence of str, optional
        Class names, one per prototype (``privileged``: the embeddings' names).
    context : RunContext, optional
        Device, memory limit, time limit, progress and announcements.

    Examples
    --------
    >>> plan = plan_run(64, 1000)
    >>> plan.method, plan.name, plan.optimises
    ('auto', 'auto-d64-k1000-s0', False)
    """
    d, k = check_sizes(d, k)
    seed = check_seed(seed)
    if rotation not in ROTATION_CHOICES:
        raise SpherecodesError(f"rotation must be one of {', '.join(ROTATION_CHOICES)}, got {rotation!r}")
    # Whatever method makes it, the code ends as K x d float64 numbers in memory: refused first where they cannot fit.
    require_memory(8.0 * k * d, f"the code itself (K={k} x d={d} float64 prototypes)")
    resolved = resolve_method(d, k, method)
    options = method_options(method, resolved, options)
    name = check_code_name(name) if name is not None else code_name(d, k, resolved, seed, rotation)[0]
    context = context or RunContext()
    auto = None
    if resolved == "auto":
        auto = plan_auto(d, k, steps=options.steps, restarts=options.restarts, time_limit=context.time_limit,
                         neighbours=options.neighbours, max_memory=context.max_memory, catalog=options.catalog,
                         seed=seed)
    return RunPlan(d, k, resolved, options, seed, rotation, name, None if labels is None else list(labels), context,
                   auto)


def generate(d: int, k: int, method: str = "auto", options=None, *, seed: int = 0, rotation: str = "auto",
             name: str | None = None, labels=None, context: RunContext | None = None) -> Code:
    """Compute a K-prototype code in R^d and its float64 statistics.

    The arguments are those of :func:`plan_run`; the code is not certified
    (:func:`spherecodes.certificate.one_vs_rest_distances`, or
    ``plan_run(...).execute(certify=True)``), except a bundled code, whose
    certificate comes checked.

    Returns
    -------
    Code
        Ready for :func:`spherecodes.bank.write_code`; the optimiser's
        diagnostics are in ``code.settings``.

    Examples
    --------
    >>> code = generate(d=11, k=12)
    >>> code.method, code.name, round(code.stats.max_cos, 12)
    ('etf', 'etf-d11-k12', -0.090909090909)
    >>> code = generate(64, 1000)      # extended BCH [64,10,28]: exact max-cos 1/8
    >>> code.name, code.settings["auto"]["winner"], code.settings["auto"]["exact_max_cos"]
    ('auto-d64-k1000-s0', 'extended BCH [64,10,28], 1000 of 1024 words', '1/8')
    >>> code = generate(7, 28, "lines")   # 28 equiangular lines in R^7, at the Welch bound 1/3
    >>> code.settings["construction"], round(code.settings["max_abs_cos"], 12)
    ("Steiner ETF of PG(2,2)'s lines (28 lines)", 0.333333333333)
    >>> from spherecodes.options import TammesOptions
    >>> generate(3, 13, "tammes", TammesOptions(steps=50, restarts=2), seed=1).name
    'tammes-d3-k13-s1'
    """
    plan = plan_run(d, k, method, options, seed=seed, rotation=rotation, name=name, labels=labels, context=context)
    return plan.execute().code


def certify_within(code: Code, context: RunContext, tol: float | None = None, client=None):
    """The certificate of ``code`` (its proved structure used) on the context's device, within its memory limit
    and its deadline: past the deadline it stops at the next block of classes (or pass) and raises
    :class:`spherecodes.certificate.CertificateOutOfTime`.

    Examples
    --------
    >>> import numpy as np
    >>> from spherecodes.code import make_code
    >>> rows = np.random.default_rng(2).standard_normal((300, 8))
    >>> code = make_code(rows / np.linalg.norm(rows, axis=1, keepdims=True), method="random")
    >>> certify_within(code, RunContext(device="cpu", time_limit=1e-9))
    Traceback (most recent call last):
    ...
    spherecodes.certificate._result.CertificateOutOfTime: the certificate's deadline passed with ...
    """
    deadline, progress = context.deadline, context.progress

    def report(update):
        if progress is not None:
            progress(update)
        if deadline is not None and time.perf_counter() > deadline and update.step < update.steps:
            raise CertificateOutOfTime(update)

    options = {} if tol is None else {"tol": tol}
    return one_vs_rest_distances(code.prototypes, device=context.device, max_memory=context.max_memory,
                                 progress=report, orbit=code.orbit, client=client, deadline=deadline, **options)


@dataclass(frozen=True)
class Destination:
    """Where a run stores its code: a bank (``.h5``) or a matrix file, checked before any work (:func:`destination`)."""

    path: Path
    name: str
    overwrite: bool = False
    dtype: str | None = None

    @property
    def matrix(self) -> bool:
        """A matrix file for a training script (no name, no statistics), not a bank."""
        return self.path.suffix.lower() in EXPORT_FORMATS

    def replaces(self) -> bool:
        """Whether storing the code would replace an existing file or code."""
        if not self.path.exists():
            return False
        return self.matrix or self.name in {c["name"] for c in list_codes(self.path)}


def destination(path, name: str | None, *, overwrite: bool = False, dtype: str | None = None) -> Destination:
    """Check, before any work, where a code called ``name`` will be stored: a writable bank or matrix file that it
    replaces only with ``overwrite``; ``dtype`` only for a matrix.  ``name`` None: not known yet (a code still to
    be fetched), so a bank is not searched for it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> destination(pathlib.Path(tempfile.mkdtemp()) / "codes.h5", "etf-d11-k12").matrix
    False
    """
    path = check_writable_destination(Path(path))
    where = Destination(path, name, overwrite, dtype)
    if not where.matrix and path.suffix.lower() not in (".h5", ".hdf5"):
        raise SpherecodesError(f"cannot store the code in {path}: end --out in .h5 (a bank) or in "
                               f"{', '.join(EXPORT_FORMATS)} (a matrix)")
    if dtype is not None and not where.matrix:
        raise SpherecodesError("--dtype applies to a matrix file: give --out FILE.npy, .pt, .csv or .txt")
    # Refuse an existing code or file before computing anything: generation can be long.
    if not overwrite and (where.matrix or name is not None) and where.replaces():
        raise SpherecodesError((f"{path} exists" if where.matrix else f"code {name!r} already exists in {path}")
                               + "; pass --overwrite to replace it")
    return where
