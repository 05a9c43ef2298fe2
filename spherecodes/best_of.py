"""Best-of generation: the structured codes, the closed forms, the bundled catalog and the optimiser, compared on (d, K).

``generate(d, k)`` (method ``auto``) returns a provably optimal closed form at
once where one applies (:func:`spherecodes.constructions.optimal_closed_form`).
Everywhere else it gathers *candidates* and keeps the one with the smallest
max-cos (ties: the larger certified ρ where both are computed, else the
earlier candidate): the structured code that fits best
(:func:`spherecodes.structured.best_structured_code`), the other closed forms
that apply (24-cell, 600-cell, E8), the bundled catalog's code of that size,
``tammes`` warm-started from the structured code (moved off its subspace by
:func:`lift` where it is embedded) and ``tammes`` from random starts, exactly
as ``--method tammes`` runs it with the same seed.

The first three are exact and cost milliseconds.  Which optimisers run is
decided before any work, deterministically, from what they are known to
reach (:mod:`spherecodes.optimiser_table`) and what they cost
(:func:`predicted_seconds`): an optimiser that cannot win is skipped, the
predicted winner always runs and the others where they fit the budget
(1.5 times the winner's predicted time plus :data:`EXTRA_SECONDS`, or
``time_limit``).  docs/structured.md ("How ``auto`` decides what to run")
gives the rules in full.  So ``auto`` is never worse than ``--method tammes``
where the table says the optimiser can compete, and does not spend minutes
on an optimiser that the measurements say cannot win.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from .bounds import sharp_optimum
from .budget import annealing_budget
from .context import RunContext
from .constructions import applicable_closed_forms, construct, optimal_closed_form
from .errors import SpherecodesError
from .memory import format_bytes, format_duration, require_memory
from .optimiser_table import MEASURED_SEED, NOISE, Prediction, measurements, predict_tammes, predict_warm
from .records import compare_with_record
from .stats import max_cos
from .structured import StructuredCode, available_codes, best_structured_code

#: Seconds that ``auto`` may spend beyond 1.5 times its predicted winner's
#: time, on candidates that could still win (without a time limit).
EXTRA_SECONDS = 2.0

#: K·d up to which ties are broken by certifying ρ (milliseconds per code).
SMALL_CODE = 20_000

#: Two max-cos values closer than this are a tie (then ρ decides).
TIE = 1e-12

#: Binary families, whose points are code words.
_WORD_FAMILIES = ("bch", "reed-muller", "golay")


@dataclass
class Candidate:
    """One code ``auto`` considered: what it is, what it reached, and how long it took.

    Attributes
    ----------
    label : str
        For people: ``"extended BCH [64,10,28], 1000 of 1024 words"``,
        ``"tammes from random starts"``, ...
    kind : str
        ``"structured"``, ``"closed-form"``, ``"catalog"``, ``"tammes-warm"`` or ``"tammes"``.
    prototypes : ndarray or None
        (K, d) float64 unit rows; None when the candidate was skipped.
    max_cos : float or None
        In float64 (for a structured code: its exact value, rounded).
    exact : Fraction or None
        The exact max-cos of a structured code.
    seconds : float
        Wall time spent on it.
    skipped : str
        Why it did not run ("" when it did).
    rho : float or None
        Certified lower bound on ρ, where computed (to break a tie).
    settings : dict
        How it was made (the solver's settings, or the structured code's parameters).
    orbit : SignOrbit, OrbitPrefix, None or "auto"
        The structure of sign changes of its prototypes where already proved
        (:func:`spherecodes.orbit.resolve_orbit`; None: proved absent), else
        ``"auto"``: the run proves it once it is chosen.
    certificate : Certificate or None
        A bundled code's stored certificate, checked against its witness as
        its bank was read: the run keeps it rather than certifying again.
    """

    label: str
    kind: str
    prototypes: np.ndarray | None = None
    max_cos: float | None = None
    exact: Fraction | None = None
    seconds: float = 0.0
    skipped: str = ""
    rho: float | None = None
    settings: dict = field(default_factory=dict)
    stop_reason: str = ""
    orbit: object = field(default="auto", repr=False, compare=False)
    certificate: object = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        """JSON-serialisable summary (no prototypes)."""
        return {"label": self.label, "kind": self.kind, "max_cos": self.max_cos,
                "exact": None if self.exact is None else str(self.exact), "rho": self.rho,
                "seconds": round(self.seconds, 3), "skipped": self.skipped or None}


@dataclass(frozen=True)
class PlannedOptimiser:
    """An optimiser candidate of ``auto``: what it is predicted to reach and cost, and whether it runs.

    Attributes
    ----------
    kind : str
        ``"tammes-warm"`` (from the structured code) or ``"tammes"`` (from random starts).
    label : str
        For people.
    prediction : spherecodes.optimiser_table.Prediction
        The bracket of max-cos it is expected to reach.
    seconds : float
        Its predicted wall time (:func:`predicted_seconds`).
    skip : str
        ``""`` when it is planned to run, else why not.
    """

    kind: str
    label: str
    prediction: Prediction
    seconds: float
    skip: str = ""


@dataclass(frozen=True)
class AutoPlan:
    """What ``auto`` will do for (d, K), decided before any work.

    Attributes
    ----------
    closed_form : str or None
        A provably optimal closed form: returned at once.
    structured : StructuredCode or None
        The best structured code for (d, K) (already in R^d).
    closed_forms : tuple of (str, float)
        The other closed forms that apply, with their max-cos.
    stored : CatalogEntry or None
        The bundled catalog's best code of this size.
    optimisers : tuple of PlannedOptimiser
        In the order they run (those planned to run first).
    budget : float
        Seconds for the whole best-of: the time limit, or 1.5 times the
        predicted winner's time plus :data:`EXTRA_SECONDS`.
    sure : float or None
        The smallest max-cos among the exact candidates (structured code,
        closed forms, bundled code): what an optimiser must beat.
    build : tuple of (float, float) or None
        (seconds, bytes) expected for building the structured code, where
        that takes long (:meth:`~spherecodes.structured.StructuredCode.build_cost`):
        every run of this plan spends them, optimisers or not.
    predicted : tuple of PlannedOptimiser
        The optimisers in the order of their prediction, before the budget
        is applied: :meth:`within` plans them again for another time limit.
    """

    closed_form: str | None
    structured: StructuredCode | None = None
    closed_forms: tuple = ()
    stored: object = None
    optimisers: tuple = ()
    budget: float = 0.0
    sure: float | None = None
    build: tuple | None = None
    predicted: tuple = field(default=(), repr=False)
    d: int = 0
    k: int = 0
    seed: int = MEASURED_SEED
    defaults: bool = True

    @property
    def runs_optimiser(self) -> bool:
        """Whether any optimiser is planned to run."""
        return any(not o.skip for o in self.optimisers)

    def within(self, time_limit: float | None) -> AutoPlan:
        """The same candidates, with the optimisers planned for the budget of ``time_limit`` (None: the default
        budget): which of them run, and the budget.  Deterministic, and no prediction is made again.

        Examples
        --------
        >>> plan = plan_auto(64, 1000)
        >>> plan.runs_optimiser, plan.within(600).runs_optimiser
        (False, True)
        """
        if self.closed_form is not None or not self.predicted:
            return self
        if self.sure is None:  # only the bundled code fitted, and it is left out: the optimiser alone
            alone = self.predicted[0]
            return replace(self, optimisers=(alone,), budget=alone.seconds if time_limit is None else time_limit)
        optimisers, sure = self.predicted, self.sure
        proven = sharp_optimum(self.d, self.k)
        if proven is not None and sure <= proven.value + TIE:
            why = f"cannot win: {sure:.4g} is the proven optimum (Levenshtein bound)"
            return replace(self, optimisers=tuple(replace(o, skip=why) for o in optimisers), budget=0.0)
        # At a size of the published tables the bundled code was searched for long (from what a default run
        # does): a default run does not beat it. A time limit given for the optimisers still lets them try.
        stored = self.stored
        best_known = compare_with_record(self.d, self.k, stored.max_cos) if stored is not None else None
        if time_limit is None and best_known is not None:
            standing = {"better": f"is below the best known value ({best_known.gap:+.2g})",
                        "reaches": "reaches the best known value"}.get(
                best_known.standing, f"was searched for long ({best_known.gap:+.2g} to the best known value)")
            why = f"cannot win: the bundled code {standing} ({best_known.record.source}); --time-limit runs it"
            return replace(self, optimisers=tuple(replace(o, skip=why) for o in optimisers), budget=0.0)
        planned, budget = _budgeted(optimisers, sure, time_limit,
                                    self.defaults and self.seed == MEASURED_SEED and time_limit is None)
        return replace(self, optimisers=planned, budget=budget)


def describe_plan(plan: AutoPlan, k: int) -> str:
    """One line on stderr before the work: the exact candidates, each optimiser's prediction and the budget.

    Examples
    --------
    >>> describe_plan(plan_auto(64, 1000), 1000).split(";")[0]
    'auto: extended BCH [64,10,28], 1000 of 1024 words (max-cos 1/8)'
    """
    parts = []
    if plan.structured is not None:
        built = "" if plan.build is None else f"; {describe_build(plan.build)}"
        parts.append(f"{structured_label(plan.structured, k)} (max-cos {plan.structured.max_cos_bound(k)}{built})")
    parts.extend(f"closed form {method} (max-cos {value:.4g})" for method, value in plan.closed_forms)
    if plan.stored is not None:
        parts.append(f"bundled {plan.stored.name} (max-cos {plan.stored.max_cos:.4g})")
    for opt in plan.optimisers:
        parts.append(f"{opt.label}: {_predicted(opt.prediction)}, "
                     + (f"~{format_duration(opt.seconds)}" if not opt.skip else f"skipped ({opt.skip})"))
    return "auto: " + "; ".join(parts) + f"; budget {format_duration(plan.budget)}"


def describe_build(build: tuple) -> str:
    """How long building a structured code is expected to take, and its memory, for the plan and the estimate.

    Examples
    --------
    >>> describe_build((59.0, 2.75e9))
    'building it takes ~59 s and ~2.6 GiB'
    """
    seconds, nbytes = build
    return f"building it takes ~{format_duration(seconds)} and ~{format_bytes(nbytes)}"


def structured_build(code: StructuredCode, max_memory: float | None = None) -> tuple | None:
    """(seconds, bytes) of building ``code`` where that takes long (else None), refused where it cannot fit.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> structured_build(e8_roots()) is None
    True
    """
    cost = code.build_cost()
    if cost is not None:
        require_memory(cost[1], f"building {code.name} ({code.size:,} points in R^{code.native_d})", "cpu",
                       limit=max_memory, hint="choose a smaller size (spherecodes codes --d D lists the codes)")
    return cost


def _predicted(prediction: Prediction) -> str:
    if not prediction.known:
        return f"unknown ({prediction.source})"
    if prediction.high is None:  # only an easier size bounds it: the best it may reach, not a prediction
        return f"max-cos at best ~{prediction.low:.4g} ({prediction.source})"
    return f"predicted max-cos ~{prediction.value:.4g} ({prediction.source})"


def auto_method(d: int, k: int) -> str:
    """What ``auto`` is for (d, K): a provably optimal closed form, ``tammes`` when nothing else fits, else ``auto``.

    Decided from (d, K) alone, before any work (the code's name depends on it).

    Examples
    --------
    >>> auto_method(3, 4), auto_method(3, 131), auto_method(64, 1000)
    ('etf', 'tammes', 'auto')
    """
    closed = optimal_closed_form(d, k)
    if closed is not None:
        return closed
    if best_structured_code(d, k) is None and not applicable_closed_forms(d, k) and bundled_entry(d, k) is None:
        return "tammes"
    return "auto"


def bundled_entry(d: int, k: int):
    """The bundled catalog's code of size (d, K) with the smallest max-cos, or None.

    Examples
    --------
    >>> bundled_entry(16, 100).name, bundled_entry(17, 100)
    ('tammes-d16-k100', None)
    """
    from .registry import bundled_catalog

    entries = [e for e in bundled_catalog().entries if (e.d, e.k) == (d, k)]
    return min(entries, key=lambda e: e.max_cos, default=None)


def predicted_seconds(d: int, k: int, *, steps: int | None = None, restarts: int | None = None,
                      neighbours: int | None = None, max_memory: float | None = None) -> float:
    """Predicted wall time of one ``tammes`` run at (d, K): deterministic, from the measured table.

    The time measured at (d, K) with the default settings; elsewhere (or
    with other settings) the time measured at the nearest measured size (in
    log d and log K), scaled by the ratio of the annealing's multiply-adds
    (:func:`annealing_work`).  Deterministic, so that the same settings give
    the same plan (a timing taken now would not).

    Examples
    --------
    >>> predicted_seconds(16, 100) == measurements()[(16, 100)].seconds
    True
    >>> predicted_seconds(16, 100, steps=4000) > predicted_seconds(16, 100)
    True
    """
    table = measurements()
    defaults = steps is None and restarts is None and neighbours is None
    if defaults and (d, k) in table:
        return table[(d, k)].seconds
    near = min(table.values(), key=lambda m: math.hypot(math.log(m.d / d), math.log(m.k / k)))
    work = _planned_work(d, k, steps, restarts, neighbours, max_memory)
    return near.seconds * work / _planned_work(near.d, near.k, None, None, None, None)


def plan_auto(d: int, k: int, *, steps: int | None = None, restarts: int | None = None,
              time_limit: float | None = None, neighbours: int | None = None, max_memory: float | None = None,
              catalog: bool = True, seed: int = MEASURED_SEED) -> AutoPlan:
    """Decide which candidates ``auto`` runs for (d, K): deterministic, from (d, K), the settings and the table.

    Parameters
    ----------
    d, k : int
    steps, restarts, neighbours, max_memory : optional
        The optimiser's settings; given steps or restarts make the measured
        predictions (of the default settings) unknown, so those optimisers
        run where the budget allows.
    time_limit : float, optional
        The budget in seconds (default: see the module docstring).
    catalog : bool
        Whether the bundled catalog's code of this size is a candidate.
    seed : int
        The optimisers' seed: with the table's (:data:`spherecodes.optimiser_table.MEASURED_SEED`)
        and the default settings they repeat their measured values.

    Examples
    --------
    >>> plan = plan_auto(64, 1000)          # the BCH code: the optimisers cannot reach 1/8
    >>> plan.structured.name, plan.runs_optimiser
    ('extended BCH [64,10,28]', False)
    >>> plan_auto(256, 1000, catalog=False).optimisers[0].kind   # predicted to beat every binary code of R^256
    'tammes'
    >>> [o.kind for o in plan_auto(3, 131).optimisers]   # nothing exact fits: tammes alone
    ['tammes']
    """
    closed = optimal_closed_form(d, k)
    if closed is not None:
        return AutoPlan(closed)
    structured = best_structured_code(d, k)
    build = structured_build(structured, max_memory) if structured is not None else None
    closed_forms = tuple((method, max_cos(construct(method, d, k))) for method in applicable_closed_forms(d, k))
    stored = bundled_entry(d, k) if catalog else None
    exact = [float(structured.max_cos_bound(k))] if structured is not None else []
    exact += [value for _, value in closed_forms] + ([stored.max_cos] if stored is not None else [])
    sure = min(exact, default=None)
    seconds = predicted_seconds(d, k, steps=steps, restarts=restarts, neighbours=neighbours, max_memory=max_memory)
    defaults = steps is None and restarts is None
    unknown = Prediction(None, None, "other settings than the measured defaults")
    optimisers = []
    if structured is not None and sure is not None:
        warm = predict_warm(d, k, structured.name) if defaults else unknown
        optimisers.append(PlannedOptimiser("tammes-warm", "tammes from the structured code", warm, seconds))
    random = predict_tammes(d, k) if defaults else unknown
    optimisers.append(PlannedOptimiser("tammes", "tammes from random starts", random, seconds))
    # Known predictions first, best first; a stable sort keeps the warm start first among equals.
    optimisers.sort(key=lambda o: (not o.prediction.known, o.prediction.value or 0.0))
    plan = AutoPlan(None, structured, closed_forms, stored, (), 0.0, sure, build, tuple(optimisers), d, k, seed,
                    defaults)
    return plan.within(time_limit)


def _budgeted(optimisers, sure: float, time_limit: float | None, repeats: bool) -> tuple[tuple, float]:
    """Which optimisers run within the budget, those first, and the budget (see the module docstring)."""
    # A predicted winner must beat the exact candidates by more than half the noise band (a bundled code is
    # often this optimiser's own result), and a bracket with no upper end is no evidence that it gets below them.
    first = optimisers[0].prediction
    margin = abs(sure) * NOISE / 2 + TIE
    winner = optimisers[0] if first.high is not None and first.value < sure - margin else None
    budget = time_limit if time_limit is not None else (
        (1.5 * winner.seconds if winner is not None else 0.0) + EXTRA_SECONDS)
    # With the table's seed and settings (``repeats``) an optimiser repeats its measured value: the band around
    # it is for other seeds and machines.
    planned, bar, spent = [], sure, 0.0
    for opt in optimisers:
        low = opt.prediction.low
        if low is not None and low >= bar - TIE:
            why = f"cannot win: at best ~{low:.4g}, not below {bar:.4g}"
        elif repeats and opt.prediction.measured and opt.prediction.value >= bar - TIE:
            why = (f"cannot win: measured at {opt.prediction.value:.6g} with this seed and these settings, "
                   f"not below {bar:.6g}; --time-limit runs it")
        elif opt is winner or spent + opt.seconds <= budget:
            why = ""
            spent += opt.seconds
            if opt.prediction.high is not None:
                bar = min(bar, opt.prediction.high)
        elif opt.prediction.value is not None and opt.prediction.value >= bar - TIE:
            why = (f"not predicted to beat {bar:.4g} (~{opt.prediction.value:.4g}); it needs "
                   f"~{format_duration(opt.seconds)}, over the budget; --time-limit raises it")
        else:
            why = f"could win but needs ~{format_duration(opt.seconds)}, over the budget; --time-limit raises it"
        planned.append(replace(opt, skip=why))
    planned.sort(key=lambda o: bool(o.skip))
    return tuple(planned), budget


def structured_label(code: StructuredCode, k: int) -> str:
    """How a structured code's K chosen points are described in reports.

    Examples
    --------
    >>> structured_label(best_structured_code(64, 1000), 1000)
    'extended BCH [64,10,28], 1000 of 1024 words'
    """
    unit = "words" if code.family in _WORD_FAMILIES else "points"
    label = code.name if k == code.size else f"{code.name}, {k} of {code.size} {unit}"
    if code.d > code.native_d:
        label += f", embedded from R^{code.native_d}"
    return label


def annealing_work(d: int, k: int, restarts: int, steps: int, neighbours: int = 0, refresh: int | None = None
                   ) -> float:
    """Multiply-adds of the annealing: starts × steps × the work of a step.

    A step costs K²·d on the dense path (the Gram matrix); with neighbour
    lists of m prototypes 2·K·m·d for the listed pairs plus K²·d per refresh,
    spread over the ``refresh`` steps between refreshes.

    Examples
    --------
    >>> annealing_work(64, 1000, 1, 1000)
    64000000000.0
    >>> annealing_work(64, 100_000, 1, 1000, neighbours=64, refresh=50) > 1e13
    True
    """
    per_step = float(k) ** 2 * d
    if neighbours:
        per_step = 2.0 * k * neighbours * d + per_step / refresh
    return float(restarts) * steps * per_step


def _planned_work(d, k, steps, restarts, neighbours, max_memory) -> float:
    """The annealing's work of a tammes run at the default effort with these settings (the defaults of
    :func:`spherecodes.budget.annealing_budget`, as :func:`spherecodes.solvers.tammes` resolves them on the CPU)."""
    budget = annealing_budget(d, k, "cpu", neighbours, max_memory)
    return annealing_work(d, k, budget["restarts"] if restarts is None else restarts,
                          budget["steps"] if steps is None else steps, budget["neighbours"], budget["refresh"])


def structured_candidate(code: StructuredCode, k: int, max_memory: float | None = None) -> Candidate:
    """Build the K chosen points of a structured code (already in R^d) with their exact max-cos.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> c = structured_candidate(e8_roots(), 240)
    >>> c.label, c.exact, c.prototypes.shape
    ('E8 roots', Fraction(1, 2), (240, 8))
    """
    begin = time.perf_counter()
    # The points, the float64 statistics of the code and the bank's copy; where the build is large, its arrays
    # (the points among them).
    build = code.build_cost()
    require_memory((3 * 8.0 * k * code.d) if build is None else (build[1] + 2 * 8.0 * k * code.d),
                   f"the {k:,} points of {code.name} in R^{code.d} (float64)", "cpu",
                   limit=max_memory, hint="choose a smaller size")
    points = code.points(k)
    exact = code.max_cos_for(k)
    settings = {"structured_code": code.name, "family": code.family, "code_size": int(code.size),
                "native_d": int(code.native_d), "exact_max_cos": str(exact), "max_cos_exact": bool(code.max_cos_exact),
                "citation": code.citation}
    return Candidate(structured_label(code, k), "structured", points, float(exact), exact,
                     time.perf_counter() - begin, settings=settings)


def closest_structured(d: int, k: int) -> str:
    """The structured codes nearest to (d, K), for the message when none fits.

    Examples
    --------
    >>> closest_structured(3, 30)
    'the largest in R^3 is Paley ETF q = 5 (6 lines), ± (12 points, max-cos 1/√5); ...'
    """
    here = available_codes(d)
    parts = []
    if here:
        largest = max(here, key=lambda c: (c.size, -c.max_cos))
        parts.append(f"the largest in R^{d} is {largest.name} ({largest.size} points, max-cos {largest.max_cos})")
    for bigger in range(d + 1, 4 * d + 64):
        fits = best_structured_code(bigger, k)
        if fits is not None:
            parts.append(f"{k} points first fit in R^{bigger}: {fits.name} (max-cos {fits.max_cos_bound(k)})")
            break
    return "; ".join(parts) if parts else "none is known up to this dimension"


def run_structured(d: int, k: int, max_memory: float | None = None) -> Candidate:
    """The best structured code for (d, K) as a candidate, or a clear error naming the closest option.

    Examples
    --------
    >>> run_structured(24, 4096).label
    'extended Golay [24,12,8]'
    >>> run_structured(3, 30)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: no structured code has 30 points in R^3; the largest in R^3 is ...
    """
    code = best_structured_code(d, k)
    if code is None:
        raise SpherecodesError(f"no structured code has {k} points in R^{d}; {closest_structured(d, k)} "
                               "(spherecodes codes --d D lists them)")
    return structured_candidate(code, k, max_memory)


def exact_candidates(d: int, k: int, plan: AutoPlan, max_memory: float | None = None) -> list[Candidate]:
    """The exact candidates of ``plan``, built: the structured code, the other closed forms, the bundled code.

    They depend on (d, K) and the catalog only, not on the optimisers'
    budget, so a run builds them once (for its estimate) and hands them to
    :func:`best_of`.

    Examples
    --------
    >>> [c.kind for c in exact_candidates(8, 240, plan_auto(8, 240, catalog=False))]
    ['structured', 'closed-form']
    """
    candidates = []
    if plan.structured is not None:
        candidates.append(structured_candidate(plan.structured, k, max_memory))
    for method, _ in plan.closed_forms:
        start = time.perf_counter()
        points = construct(method, d, k)
        candidates.append(Candidate(f"closed form {method}", "closed-form", points, max_cos(points),
                                    seconds=time.perf_counter() - start, settings={"closed_form": method}))
    if plan.stored is not None:
        candidates.append(stored_candidate(plan.stored))
    return candidates


def best_of(d: int, k: int, plan: AutoPlan, options=None, *, seed: int, context=None,
            built=None) -> tuple[Candidate, list[Candidate]]:
    """Run the candidates of ``plan`` and return (winner, all candidates in the order considered).

    The caller (:class:`spherecodes.run.RunPlan`) has checked the input.
    ``options`` (:class:`spherecodes.options.AutoOptions`) are the tammes
    runs' settings; ``context`` their device, memory limit, time limit
    (shared by the optimisers that run) and progress, and it announces each
    optimiser as it starts, so that its progress bar is not mistaken for
    another's.  ``built`` holds the candidates of :func:`exact_candidates`
    where they are built already.  The warm start never ends above the
    structured code it starts from (moved by :func:`lift`): where the
    optimiser finishes worse, the structured code itself is its result.

    Examples
    --------
    >>> from spherecodes.context import RunContext
    >>> winner, tried = best_of(64, 4000, plan_auto(64, 4000), seed=0, context=RunContext(device="cpu"))
    >>> winner.label, winner.exact, [c.kind for c in tried if not c.skipped]
    ('Kerdock n = 64, 4000 of 4096 points', Fraction(1, 8), ['structured'])
    """
    begin = time.perf_counter()
    context = context or RunContext()
    candidates = list(built) if built else exact_candidates(d, k, plan, context.max_memory)
    settings = {"device": context.device, "steps": getattr(options, "steps", None),
                "restarts": getattr(options, "restarts", None), "progress": context.progress,
                "neighbours": getattr(options, "neighbours", None), "refresh": getattr(options, "refresh", None),
                "max_memory": context.max_memory, "seed": seed}
    to_run = [opt for opt in plan.optimisers if not opt.skip]
    time_limit = context.time_limit
    for opt in plan.optimisers:
        ran = [c for c in candidates if c.prototypes is not None]
        best = min((c.max_cos for c in ran), default=math.inf)
        leader = next((c.label for c in ran if c.max_cos == best), "")
        interrupted = any(c.stop_reason == "interrupted" for c in candidates)
        if opt.skip or interrupted:
            candidates.append(Candidate(opt.label, opt.kind, skipped="interrupted (Ctrl-C)" if interrupted
                                        else f"skipped: {opt.skip}"))
            continue
        if opt.prediction.low is not None and opt.prediction.low >= best - TIE:
            candidates.append(Candidate(opt.label, opt.kind, skipped=f"skipped: cannot win: at best "
                                        f"~{opt.prediction.low:.4g}, not below {best:.4g} ({leader})"))
            continue
        share = None
        if time_limit is not None:
            left = time_limit - (time.perf_counter() - begin)
            share = max(left / (len(to_run) - to_run.index(opt)), 1e-3)
        context.say(f"optimiser {to_run.index(opt) + 1}/{len(to_run)}: {opt.label}, ~{format_duration(opt.seconds)}"
                    + ("" if share is None else f" (at most {format_duration(share)})"))
        if opt.kind == "tammes-warm":
            start_code = candidates[0]
            init = start_code.prototypes
            if plan.structured.native_d < d:
                init = lift(init, plan.structured.native_d, seed)
            warm = _optimise(f"tammes from {start_code.label}", opt.kind, d, k, settings, share, init=init)
            candidates.append(warm if warm.max_cos <= start_code.max_cos else _kept_start(warm, start_code))
        else:
            candidates.append(_optimise(opt.label, opt.kind, d, k, settings, share))
    return _winner(candidates), candidates


def stored_candidate(entry) -> Candidate:
    """A bundled catalog entry as a candidate: its bank read and verified (size, SHA-256, certificate), with the
    certificate it carries.

    Examples
    --------
    >>> c = stored_candidate(bundled_entry(16, 100))
    >>> c.label, c.kind, c.prototypes.shape
    ('bundled tammes-d16-k100', 'catalog', (100, 16))
    """
    from .registry import read_bundled

    start = time.perf_counter()
    code, _ = read_bundled(entry)
    settings = {**code.settings, "catalog_entry": entry.name, "catalog_method": entry.method}
    return Candidate(f"bundled {entry.name}", "catalog", code.prototypes, float(code.stats.max_cos),
                     seconds=time.perf_counter() - start, settings=settings, certificate=code.certificate)


def lift(points: np.ndarray, native_d: int, seed: int) -> np.ndarray:
    """An embedded code moved off its subspace: each row plus Gaussian noise of angular size a quarter of
    the estimated neighbour angle, seeded by ``[seed, 0, 3]``.

    The gradient of any function of the inner products of points in a
    subspace stays in that subspace, so the optimiser started from the
    zero-padded code itself could never use the free dimensions.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> moved = lift(e8_roots().embedded(10).points(), 8, seed=0)
    >>> bool(abs(moved[:, 8:]).min() > 0), bool(np.allclose((moved ** 2).sum(axis=1), 1))
    (True, True)
    """
    from .solvers import estimated_angle
    from .sphere import normalise_rows

    k, d = points.shape
    rng = np.random.default_rng([seed, 0, 3])
    noise = estimated_angle(d, k) / 4 / np.sqrt(d)
    return normalise_rows(points + noise * rng.standard_normal((k, d)))


def _optimise(label, kind, d, k, options, time_limit, init=None) -> Candidate:
    from .solvers import tammes

    start = time.perf_counter()
    result = tammes(d, k, time_limit=time_limit, init=init, **options)
    return Candidate(label, kind, result.prototypes, float(result.max_cos), seconds=time.perf_counter() - start,
                     settings=dict(result.settings), stop_reason=result.stop_reason)


def _kept_start(warm: Candidate, start: Candidate) -> Candidate:
    """The warm start's result when the optimiser ended above its start: the start itself, saying so."""
    note = f"ended at max-cos {warm.max_cos:.6g}, above its start; the start is kept"
    return replace(warm, prototypes=start.prototypes, max_cos=start.max_cos, exact=start.exact,
                   settings={**start.settings, "warm_start": note}, label=f"{warm.label} ({note})")


def _winner(candidates: list[Candidate]) -> Candidate:
    """The smallest max-cos; a tie goes to the larger certified ρ when the codes are small, else the earlier."""
    ran = [c for c in candidates if c.prototypes is not None]
    best = min(c.max_cos for c in ran)
    tied = [c for c in ran if c.max_cos <= best + TIE]
    if len(tied) > 1 and all(c.prototypes.size <= SMALL_CODE for c in tied):
        from .certificate import one_vs_rest_distances

        for c in tied:
            c.rho = float(one_vs_rest_distances(c.prototypes, device="cpu").rho_lower)
        top = max(c.rho for c in tied)
        tied = [c for c in tied if c.rho >= top - TIE]
    return tied[0]
