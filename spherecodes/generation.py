"""The methods of ``generate``: one table, each method's options type, estimate and run.

Every method is one :class:`Method` of :data:`METHOD_TABLE`: a closed form
of :mod:`spherecodes.constructions`, the best structured code of
:mod:`spherecodes.structured`, an optimiser of :mod:`spherecodes.solvers`,
the privileged optimiser of :mod:`spherecodes.semantic`, or the best of
several of them (``auto``, :mod:`spherecodes.best_of`).  A run
(:class:`spherecodes.run.RunPlan`) reads its method's entry: the options
type (:mod:`spherecodes.options`), the optimiser's cost and the phase it
adds to the run's estimate, the exact codes it builds, and the runner that
makes the :class:`Code`.  Where the code is turned and what it is called is
decided in one place, :func:`rotation_reason`, before the code exists (for
its name) and after (to turn it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from .best_of import Candidate, auto_method, best_of, describe_build, exact_candidates, run_structured
from .checks import check_sizes
from .code import Code, default_code_name, make_code
from .constructions import CLOSED_FORMS, construct
from .errors import SpherecodesError
from .memory import memory_limit
from .options import (
    AutoOptions, LinesOptions, MaxsepOptions, PrivilegedOptions, SoftmaxOptions, TammesOptions, check_given,
    given_options,
)
from .orbit import resolve_orbit
from .rotated import ROTATION_KIND, turn_rows
from .run_estimate import Phase, softmax_seconds
from .structured import best_structured_code

#: Optimisers, for any (d, K).  ``auto`` compares ``tammes`` with the
#: structured codes; ``privileged`` also needs word embeddings of the class names.
OPTIMISERS = ("tammes", "softmax", "maxsep", "privileged")

#: Line packings: minimise the largest |cos| (:mod:`spherecodes.lines`).
LINES = "lines"

#: The best structured code for (d, K) (:func:`spherecodes.structured.best_structured_code`).
STRUCTURED = "structured"

#: Every method ``generate`` accepts besides ``auto``.
METHODS = CLOSED_FORMS + (STRUCTURED,) + OPTIMISERS + (LINES,)

#: ``rotation`` of ``generate``.  ``auto``: a seeded random rotation for a
#: code that would otherwise leave dimensions unused (a structured code
#: embedded from a smaller dimension, padded with zero columns, or a closed
#: form that does not fill R^d), canonical coordinates for everything else; ``none`` (or ``canonical``): never
#: rotate; ``random``: always a seeded Haar-random rotation.
ROTATION_CHOICES = ("auto", "none", "canonical", "random")

#: Methods that need per-class input (word embeddings of the class names): a
#: code for them depends on a data set, not on (d, K) alone.
NEEDS_CLASS_DATA = ("privileged",)


@dataclass(frozen=True)
class Method:
    """One method of ``generate``: what it takes, what it costs, what it builds and how it runs.

    Each callable takes the run's :class:`spherecodes.run.RunPlan`.

    Attributes
    ----------
    name : str
    options : type or None
        Its options type (:mod:`spherecodes.options`); None: it takes none.
    run : callable
        ``run(plan) -> Code``.
    phase : callable
        ``phase(plan, cost, built_seconds, limit) -> Phase``: the first phase of the run's estimate (the
        optimiser's ``cost``, a :class:`spherecodes.memory.Estimate`, or the seconds the exact codes took).
    build : callable or None
        ``build(plan) -> list of Candidate``: the exact codes it chooses from, where it runs no optimiser.
    optimises : callable
        ``optimises(plan) -> bool``: whether an optimiser runs.
    check : callable
        ``check(plan)``: refusals of this method's input (the embeddings of ``privileged``), before any work.
    """

    name: str
    options: type | None
    run: Callable
    phase: Callable
    build: Callable | None = None
    optimises: Callable = lambda plan: True
    check: Callable = lambda plan: None


def method_entry(method: str) -> Method:
    """The table entry of ``method`` (every closed form shares one)."""
    return METHOD_TABLE.get(method) or METHOD_TABLE["closed form"]


def options_kinds() -> dict:
    """Every method name (``auto`` last) and its options type."""
    return {**{m: method_entry(m).options for m in METHODS}, "auto": AutoOptions}


def resolve_method(d: int, k: int, method: str = "auto") -> str:
    """The method that ``generate`` will run for (d, K).

    ``auto`` is a provably optimal closed form where one applies (simplex ETF,
    cross-polytope, polygon); ``tammes`` where neither a structured code nor
    another closed form fits; else ``auto`` itself: the best of the
    structured code, the other closed forms and the optimiser
    (:mod:`spherecodes.best_of`).

    Examples
    --------
    >>> resolve_method(11, 12), resolve_method(3, 5), resolve_method(3, 131)
    ('etf', 'cross-polytope', 'tammes')
    >>> resolve_method(64, 1000), resolve_method(8, 240)
    ('auto', 'auto')
    """
    check_sizes(d, k)
    if method == "auto":
        return auto_method(d, k)
    if method not in METHODS:
        raise SpherecodesError(f"unknown method {method!r}; choose auto or one of {', '.join(METHODS)}")
    return method


def method_options(asked: str, method: str, options=None, given: dict | None = None, spell=None):
    """The options of the ``method`` that runs, from those of the method ``asked`` for, checked once.

    ``options`` is an options object (of ``asked`` or of ``method``, None:
    the defaults), or ``given`` the options by name (``None``: not given),
    as the command line reads them from its flags (``spell`` writes a name
    as a flag).  An option applies where ``asked`` or ``method`` takes it
    (``auto`` resolved to ``tammes`` takes ``effort``); one that only
    ``asked`` takes is dropped (``auto``'s ``catalog`` where a closed form is optimal).

    Examples
    --------
    >>> method_options("auto", "tammes", AutoOptions(steps=10))
    TammesOptions(steps=10, restarts=None, init=None, neighbours=None, refresh=None, effort='default', workers=None, scheduler=None, adjacent=())
    >>> method_options("softmax", "softmax", given={"neighbours": 16})
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: neighbours applies to the tammes or auto method, not 'softmax'
    """
    kinds = options_kinds()
    kind, asked_kind = kinds[method], kinds[asked]
    if options is not None:
        if kind is not None and isinstance(options, kind):
            return options
        if asked_kind is None or not isinstance(options, asked_kind):
            takes = f"options of type {kind.__name__}" if kind is not None else "no options"
            raise SpherecodesError(f"method {method!r} takes {takes}, got {type(options).__name__}")
        given = given_options(options)
    check_given(method, kinds, given or {}, spell, also=asked_kind)
    if kind is None:
        return None
    fields = kind.__dataclass_fields__
    return kind(**{name: value for name, value in (given or {}).items() if value is not None and name in fields})


def unused_dimensions(prototypes) -> int:
    """How many coordinates are zero in every prototype: dimensions the code leaves dead.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> unused_dimensions(e8_roots().embedded(10).points())
    2
    """
    return int((~np.asarray(prototypes).any(axis=0)).sum())


def planned_unused(d: int, k: int, method: str) -> int:
    """The dimensions a ``method``'s code will leave unused, known before it is built (0 for an optimiser, and
    for ``auto``, whose winner is not known: its name holds the seed anyway).

    Examples
    --------
    >>> planned_unused(100, 10_000, "structured"), planned_unused(512, 100, "etf"), planned_unused(3, 13, "tammes")
    (38, 413, 0)
    """
    if method == STRUCTURED:
        code = best_structured_code(d, k)
        return 0 if code is None else d - code.native_d
    return unused_dimensions(construct(method, d, k)) if method in CLOSED_FORMS else 0


def rotation_reason(rotation: str, unused: int, d: int) -> str | None:
    """Why a code is turned by the seeded random rotation (what the bank records), or None where it is kept as made.

    The one rule, used before the code exists (its name holds the seed when
    it is turned: :func:`code_name`, from :func:`planned_unused`) and after
    (from the rows' all-zero columns).  ``auto`` turns every code that leaves
    a dimension unused; ``random`` every code; ``none`` and ``canonical``
    none.  A rotation costs no certificate: a structured code is certified in
    the coordinates of its construction and carried through the rotation
    (:mod:`spherecodes.rotated`).

    Examples
    --------
    >>> rotation_reason("auto", 2, 10)
    '2 of 10 dimensions unused (all-zero columns)'
    >>> rotation_reason("none", 2, 10) is None, rotation_reason("random", 0, 10)
    (True, 'asked for (--rotation random)')
    """
    if rotation == "random":
        return "asked for (--rotation random)"
    if rotation == "auto" and unused:
        return f"{unused} of {d} dimensions unused (all-zero columns)"
    return None


def code_name(d: int, k: int, method: str, seed: int, rotation: str) -> tuple[str, int | None]:
    """The name a code gets by default and the seed it records: the seed where it changes the code (an
    optimiser's starts, ``auto``, a rotation), else none.

    Examples
    --------
    >>> code_name(11, 12, "etf", 4, "auto"), code_name(11, 12, "etf", 4, "random")
    (('etf-d11-k12', None), ('etf-d11-k12-s4', 4))
    >>> code_name(100, 10_000, "structured", 3, "auto")[0], code_name(100, 10_000, "structured", 3, "none")[0]
    ('structured-d100-k10000-s3', 'structured-d100-k10000')
    """
    exact = method in CLOSED_FORMS + (STRUCTURED,)
    used = seed if not exact or rotation_reason(rotation, planned_unused(d, k, method), d) else None
    return default_code_name(method, d, k, used), used


# --------------------------------------------------------------------------- making the Code


def _packaged(plan, prototypes, settings: dict, *, stats_device: str = "cpu", orbit="auto", **code_fields) -> Code:
    """The code: turned as the run's rotation asks (:func:`rotation_reason`), then its float64 statistics, announced.

    The orbit of sign changes or its prefix (``"auto"``: proved here from
    the rows; None: known not to be one; else as the run's estimate proved
    it) is proved once and passed on, to the rotation, the statistics and
    (as ``code.orbit``) the certificate.  A turned structure is a
    :class:`spherecodes.rotated.Rotated`, so the statistics and the
    certificate still come from the construction.
    """
    prototypes = np.asarray(prototypes, dtype=np.float64)
    k, d = prototypes.shape
    context = plan.context
    if isinstance(orbit, str):
        orbit = resolve_orbit(prototypes)
    settings = dict(settings)
    why = rotation_reason(plan.rotation, unused_dimensions(prototypes), d)
    if why is not None:
        prototypes, orbit = turn_rows(prototypes, plan.seed, orbit)
        settings["rotation"] = {"seed": int(plan.seed), "why": why, "kind": ROTATION_KIND}
    context.say(f"statistics: {orbit.describe_statistics()}" if orbit is not None
                else f"statistics: float64 cosines of all {k * (k - 1) // 2:,} pairs")
    code_fields.setdefault("labels", plan.labels)
    return make_code(prototypes, settings=settings, orbit=orbit, name=plan.name, seed=plan.used_seed,
                     context=replace(context, device=str(stats_device)), **code_fields)


def _from_result(plan, result, **code_fields) -> Code:
    """A :class:`spherecodes.solvers.SolverResult` as a :class:`Code`: the solver's settings with what the run
    did (steps, starts, the start returned, why it stopped), statistics on the solver's device."""
    settings = {**result.settings, "steps_taken": int(result.steps), "restarts_run": int(result.restarts),
                "best_restart": int(result.best_restart), "stop_reason": result.stop_reason}
    if result.stop_detail:
        settings["stop_detail"] = result.stop_detail
    if result.stages:
        settings["stages"] = result.stages
    if result.refreshes:
        settings["refreshes_run"] = int(result.refreshes)
    return _packaged(plan, result.prototypes, settings, stats_device=result.device, method=result.method,
                     device=result.device, wall_time=result.wall_time, **code_fields)


# --------------------------------------------------------------------------- the exact methods


def _build_closed_form(plan) -> list[Candidate]:
    began = time.perf_counter()
    points = construct(plan.method, plan.d, plan.k)
    return [Candidate(f"closed form {plan.method}", "closed-form", points, seconds=time.perf_counter() - began)]


def _closed_form(plan) -> Code:
    # The canonical coordinates define the closed form; _packaged turns them where they leave dimensions unused
    # (or where --rotation random asks), by the same rotation construct(rotation="random") applies.
    built = plan.built[0]
    return _packaged(plan, built.prototypes, {"rotation": "canonical"}, method=plan.method, device="cpu",
                     wall_time=built.seconds, orbit=plan.structure(built))


def _structured(plan) -> Code:
    plan.context.say("candidate: the best structured code")
    built = plan.built[0]
    return _packaged(plan, built.prototypes, {**built.settings, "label": built.label}, method=STRUCTURED,
                     device="cpu", wall_time=built.seconds, orbit=plan.structure(built))


def _built_phase(plan, cost, seconds: float, limit) -> Phase:
    return Phase("candidates", f"{plan.method}: built", seconds, **_build_memory(plan))


def _build_memory(plan) -> dict:
    build = plan.build_cost
    return {} if build is None else {"nbytes": build[1], "limit": memory_limit("cpu", plan.context.max_memory)}


# --------------------------------------------------------------------------- auto


def _auto(plan) -> Code:
    begin = time.perf_counter()
    winner, candidates = best_of(plan.d, plan.k, plan.auto, plan.options, seed=plan.seed,
                                 context=plan.optimiser_context, built=plan.built)
    settings = {
        **winner.settings,
        "auto": {
            "winner": winner.label,
            "winner_kind": winner.kind,
            "exact_max_cos": None if winner.exact is None else str(winner.exact),
            "budget_seconds": round(plan.auto.budget, 3),
            "candidates": [c.to_dict() for c in candidates],
        },
    }
    if any(c.stop_reason == "interrupted" for c in candidates):
        settings["stop_reason"] = "interrupted"
    elif winner.stop_reason:
        settings["stop_reason"] = winner.stop_reason
    where = winner.settings.get("device", "cpu")  # the optimiser's device, else the CPU
    code = _packaged(plan, winner.prototypes, settings, stats_device=where, method="auto", device=where,
                     wall_time=time.perf_counter() - begin, orbit=plan.structure(winner))
    if winner.certificate is not None and "rotation" not in code.settings:
        code.certificate = winner.certificate  # a bundled code's, checked as its bank was read: not computed again
    return code


def _auto_phase(plan, cost, seconds: float, limit) -> Phase:
    if not plan.optimises:
        return Phase("candidates", "exact codes (structured, closed forms, bundled)", seconds, **_build_memory(plan))
    runs = sum(1 for o in plan.auto.optimisers if not o.skip)
    phase = _capped(f"{runs} optimiser run{'s' if runs > 1 else ''} of {cost.what}", runs * cost.seconds, cost, limit)
    if plan.build_cost is None:
        return phase
    return Phase("candidates", f"the structured code ({describe_build(plan.build_cost)}), then {phase.what}",
                 phase.seconds + plan.build_cost[0], phase.nbytes, phase.limit)


# --------------------------------------------------------------------------- the optimisers


def _optimise(plan, solver, init=None, **solver_options) -> Code:
    """Run ``solver`` with the plan's options."""
    plan.context.say(f"optimiser: {solver.__name__}")
    options, context = plan.options, plan.optimiser_context
    result = solver(plan.d, plan.k, seed=plan.seed, steps=options.steps, restarts=options.restarts,
                    time_limit=context.time_limit, device=context.device, progress=context.progress,
                    init=options.init if init is None else init, **solver_options)
    return _from_result(plan, result)


def _tammes(plan) -> Code:
    from .solvers import tammes

    options = plan.options
    if options.effort == "record":
        return _record_search(plan)
    # Only tammes sizes its working set (dense or neighbour lists) to the memory limit.
    return _optimise(plan, tammes, neighbours=options.neighbours, refresh=options.refresh,
                     max_memory=plan.context.max_memory, effort=options.effort)


def _softmax(plan) -> Code:
    from .solvers.softmax import softmax_code

    return _optimise(plan, softmax_code)


def _maxsep(plan) -> Code:
    from .solvers.maxsep import maxsep

    return _optimise(plan, maxsep)


def _record_search(plan) -> Code:
    """The record search (chains of tammes runs) for the time limit or ``restarts`` chains."""
    from .solvers import record_search

    options, context = plan.options, plan.optimiser_context
    chain_options = {key: value for key, value in (("steps", options.steps), ("neighbours", options.neighbours),
                                                   ("refresh", options.refresh), ("max_memory", context.max_memory))
                     if value is not None}

    def report(p) -> None:
        budget = f" of {p.budget:.0f}" if p.budget is not None else ""
        if p.chain.start == "adjacent":
            start = (f" (from the {p.chain.screen['from_size']}-point code, best of {p.chain.screen['screened']} "
                     "starts screened)")
        else:
            start = " (from the start code)" if p.chain.start == "init" else ""
        context.say(f"chain {p.chain.chain}{start}: max-cos "
                    f"{p.chain.max_cos:.12g} in {p.chain.seconds:.1f} s; best {p.best_max_cos:.12g} (chain "
                    f"{p.best_chain}) after {p.elapsed:.0f}{budget} s")

    context.say("optimiser: record_search")
    result = record_search(plan.d, plan.k, seed=plan.seed, time_budget=context.time_limit, chains=options.restarts,
                           init=options.init, adjacent=options.adjacent, device=context.device,
                           workers=options.workers, scheduler=options.scheduler, progress=report, **chain_options)
    return _from_result(plan, result)


def _lines(plan) -> Code:
    """The closed form, else the structured lines when they meet the bound, else the optimiser from them."""
    from .lines import OPTIMAL_TOL, line_closed_form, line_lower_bound, max_abs_cos, structured_lines
    from .solvers.line_packing import line_packing

    d, k, options = plan.d, plan.k, plan.options
    begin = time.perf_counter()
    found = structured_lines(d, k) if line_closed_form(d, k) is None and options.init is None else None
    if found is not None:
        rows, label = found
        bound = line_lower_bound(d, k)
        value = max_abs_cos(rows)
        if value - bound.value <= OPTIMAL_TOL:
            settings = {"method": LINES, "construction": label, "lower_bound": bound.to_dict(), "max_abs_cos": value,
                        "gap": value - bound.value, "stop_reason": "converged"}
            return make_code(rows, method=LINES, name=plan.name, labels=plan.labels, settings=settings,
                             device="cpu", wall_time=time.perf_counter() - begin,
                             context=replace(plan.context, device="cpu"))
    code = _optimise(plan, line_packing, init=None if found is None else found[0], effort=options.effort)
    if found is not None:
        code.settings["started_from"] = found[1]
    return code


def _check_privileged(plan) -> None:
    from .semantic import ClassEmbeddings

    embeddings = plan.options.embeddings
    if not isinstance(embeddings, ClassEmbeddings):
        raise SpherecodesError("the privileged method needs embeddings: the class names' word vectors "
                               "(spherecodes.semantic.class_embeddings)")
    if plan.labels is not None and list(plan.labels) != list(embeddings.names):
        raise SpherecodesError("the labels of a privileged code are the embeddings' class names; leave labels unset")


def _privileged(plan) -> Code:
    """:func:`spherecodes.semantic.privileged`, packaged as a code labelled by the embeddings' class names."""
    from .semantic import privileged

    options, context = plan.options, plan.optimiser_context
    weights = {key: value for key, value in given_options(options).items()
               if key in ("semantic_weight", "max_cos_tolerance")}  # those not given: privileged's defaults
    result = privileged(plan.d, plan.k, options.embeddings, seed=plan.seed, steps=options.steps, device=context.device,
                        time_limit=context.time_limit, progress=context.progress, triplets=options.triplets, **weights)
    # Every term of its objective is a function of inner products: a rotation changes none of them.
    return _from_result(plan, result, labels=options.embeddings.names)


def _capped(what: str, seconds: float, cost, limit) -> Phase:
    """An optimiser's phase, of ``cost``'s memory, within the optimisers' share of the time limit (they stop there)."""
    return Phase("candidates", what, seconds if limit is None else min(seconds, limit), cost.nbytes, cost.limit)


def _tammes_phase(plan, cost, seconds: float, limit) -> Phase:
    return _capped(cost.what, cost.seconds, cost, limit)


def _optimiser_phase(plan, cost, seconds: float, limit) -> Phase:
    return _capped(f"{plan.method}: the start and work of {cost.what} (its cost at this size)", cost.seconds, cost,
                   limit)


def _softmax_phase(plan, cost, seconds: float, limit) -> Phase:
    total, what = softmax_seconds(plan.d, plan.k, plan.options.steps, cost.seconds, plan.stand_in, plan.context)
    return _capped(what, total, cost, limit)


#: The methods of ``generate``; every closed form of :data:`spherecodes.constructions.CLOSED_FORMS` is
#: ``"closed form"``.
METHOD_TABLE = {m.name: m for m in (
    Method("closed form", None, _closed_form, _built_phase, _build_closed_form, lambda plan: False),
    # The structured build raises the error naming the closest codes where none fits.
    Method(STRUCTURED, None, _structured, _built_phase,
           lambda plan: [run_structured(plan.d, plan.k, plan.context.max_memory)], lambda plan: False),
    Method("auto", AutoOptions, _auto, _auto_phase,
           lambda plan: exact_candidates(plan.d, plan.k, plan.auto, plan.context.max_memory),
           lambda plan: plan.auto.runs_optimiser),
    Method("tammes", TammesOptions, _tammes, _tammes_phase),
    Method("softmax", SoftmaxOptions, _softmax, _softmax_phase),
    Method("maxsep", MaxsepOptions, _maxsep, _optimiser_phase),
    Method("privileged", PrivilegedOptions, _privileged, _optimiser_phase, check=_check_privileged),
    Method(LINES, LinesOptions, _lines, _optimiser_phase),
)}
