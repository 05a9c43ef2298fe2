"""Make a code for (d, K) by name: the library function behind ``spherecodes generate``.

:func:`generate` validates (d, K) and the seed once, resolves ``auto``, checks
which options apply to the method (:data:`METHOD_OPTIONS`,
:data:`SINGLE_START`, :data:`NEEDS_CLASS_DATA`: the command line reads the
same tables) and runs the method from a dispatch table: a closed form of
:mod:`spherecodes.constructions`, the best structured code of
:mod:`spherecodes.structured`, an optimiser of :mod:`spherecodes.solvers`,
the privileged optimiser of :mod:`spherecodes.semantic`, or the best of
several of them (``auto``, :mod:`spherecodes.best_of`).
"""

from __future__ import annotations

import time

import numpy as np

from .best_of import Candidate, auto_method, best_of, plan_auto, run_structured
from .checks import check_seed, check_sizes
from .code import Code, default_code_name, make_code
from .constructions import CLOSED_FORMS, construct
from .rotated import ROTATION_KIND, turn_rows
from .errors import SpherecodesError
from .orbit import describe_orbit, resolve_orbit
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

#: Options of :func:`generate` that only some methods take: option -> those methods.
METHOD_OPTIONS = {
    "embeddings": ("privileged",),
    "semantic_weight": ("privileged",),
    "max_cos_tolerance": ("privileged",),
    "triplets": ("privileged",),
    "neighbours": ("tammes", "auto"),
    "refresh": ("tammes", "auto"),
    "effort": ("tammes", LINES),
    "init": ("tammes", "softmax", "maxsep", LINES),
}

#: ``rotation`` of :func:`generate`.  ``auto``: a seeded random rotation for a
#: code that would otherwise leave dimensions unused (a structured code
#: embedded from a smaller dimension, padded with zero columns, or a closed
#: form that does not fill R^d), canonical coordinates for everything else; ``none`` (or ``canonical``): never
#: rotate; ``random``: always a seeded Haar-random rotation.
ROTATION_CHOICES = ("auto", "none", "canonical", "random")

#: Methods that run a single start (``restarts`` does not apply).
SINGLE_START = ("privileged",)

#: Methods that need per-class input (word embeddings of the class names): a
#: code for them depends on a data set, not on (d, K) alone.
NEEDS_CLASS_DATA = ("privileged",)


def inapplicable_options(method: str, **options) -> list[str]:
    """The options given (not ``None``) that ``method`` does not take, in :data:`METHOD_OPTIONS` order.

    Examples
    --------
    >>> inapplicable_options("softmax", neighbours=16, refresh=None, embeddings=None)
    ['neighbours']
    >>> inapplicable_options("tammes", neighbours=16)
    []
    """
    return [name for name, methods in METHOD_OPTIONS.items()
            if options.get(name) is not None and method not in methods]


def options_of(methods: tuple) -> list[str]:
    """The method-specific options that exactly ``methods`` take, in :data:`METHOD_OPTIONS` order.

    Examples
    --------
    >>> options_of(("tammes", "auto"))
    ['neighbours', 'refresh']
    >>> options_of(("tammes", "lines"))
    ['effort']
    """
    return [name for name, takers in METHOD_OPTIONS.items() if takers == tuple(methods)]


def resolve_method(d: int, k: int, method: str = "auto") -> str:
    """The method that ``generate`` will run for (d, K).

    ``auto`` is a provably optimal closed form where one applies (simplex ETF,
    cross-polytope, polygon); ``tammes`` where neither a structured code nor
    another closed form fits; else ``auto`` itself: the best of the
    structured code, the other closed forms and the optimiser
    (:mod:`spherecodes.best_of`).  ``softmax`` maximises ρ instead of
    minimising max-cos; ``privileged`` also follows word embeddings.

    Examples
    --------
    >>> resolve_method(11, 12), resolve_method(3, 5), resolve_method(3, 13)
    ('etf', 'cross-polytope', 'tammes')
    >>> resolve_method(64, 1000), resolve_method(8, 240)
    ('auto', 'auto')
    """
    check_sizes(d, k)
    return _resolve(d, k, method)


def _resolve(d: int, k: int, method: str) -> str:
    if method == "auto":
        return auto_method(d, k)
    if method not in METHODS:
        raise SpherecodesError(f"unknown method {method!r}; choose auto or one of {', '.join(METHODS)}")
    return method


def unused_dimensions(prototypes) -> int:
    """How many coordinates are zero in every prototype: dimensions the code leaves dead.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> unused_dimensions(e8_roots().embedded(10).points())
    2
    """
    return int((~np.asarray(prototypes).any(axis=0)).sum())


def rotates(d: int, k: int, method: str, rotation: str) -> bool:
    """Whether :func:`generate` turns the code by the seeded random rotation, decided before any work.

    ``auto`` rotates every code that would leave a dimension unused (an
    all-zero column): a structured code embedded from a smaller dimension
    (``method`` ``structured``), a closed form that does not fill R^d (the
    simplex ETF of K < d + 1 points, a cross-polytope of K < 2d points),
    and for ``method="auto"`` a winner that leaves dimensions unused (known
    only once it has won; the seed is then in the name anyway).  A
    rotation costs no certificate: a structured code is certified in the
    coordinates of its construction and carried through the rotation
    (:mod:`spherecodes.rotated`).

    Examples
    --------
    >>> rotates(100, 10_000, "structured", "auto"), rotates(64, 1000, "structured", "auto")
    (True, False)
    >>> rotates(11, 12, "etf", "auto"), rotates(512, 100, "etf", "auto"), rotates(11, 12, "etf", "random")
    (False, True, True)
    >>> rotates(100, 10_000, "structured", "none")
    False
    """
    if rotation == "random":
        return True
    if rotation != "auto":
        return False
    if method == STRUCTURED:
        code = best_structured_code(d, k)
        return code is not None and code.native_d < d
    return method in CLOSED_FORMS and unused_dimensions(construct(method, d, k)) > 0


def uses_seed(method: str, rotation: str, d: int | None = None, k: int | None = None) -> bool:
    """Whether the seed changes the code (so it belongs in the code's name).

    Examples
    --------
    >>> uses_seed("tammes", "none"), uses_seed("etf", "none"), uses_seed("structured", "auto", 100, 10_000)
    (True, False, True)
    """
    if method not in CLOSED_FORMS + (STRUCTURED,):
        return True
    return rotation == "random" or (d is not None and rotates(d, k, method, rotation))


def planned_code_name(d: int, k: int, method: str = "auto", *, seed: int = 0, rotation: str = "auto") -> str:
    """The name :func:`generate` will give the code, known before any work is done.

    Examples
    --------
    >>> planned_code_name(11, 12), planned_code_name(11, 12, rotation="random", seed=4)
    ('etf-d11-k12', 'etf-d11-k12-s4')
    >>> planned_code_name(100, 10_000, "structured", seed=3), planned_code_name(100, 10_000, "structured",
    ...                                                                        rotation="none")
    ('structured-d100-k10000-s3', 'structured-d100-k10000')
    """
    method = resolve_method(d, k, method)
    return default_code_name(method, d, k, seed if uses_seed(method, rotation, d, k) else None)


def rotation_reason(prototypes: np.ndarray, rotation: str) -> str | None:
    """Why :func:`generate` turns the prototypes (what the bank records), or None where it keeps them as built.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> rotation_reason(e8_roots().embedded(10).points(), "auto")
    '2 of 10 dimensions unused (all-zero columns)'
    >>> rotation_reason(e8_roots().embedded(10).points(), "none") is None
    True
    """
    if rotation == "random":
        return "asked for (--rotation random)"
    unused = unused_dimensions(prototypes)
    if rotation == "auto" and unused:
        return f"{unused} of {prototypes.shape[1]} dimensions unused (all-zero columns)"
    return None


def turned(prototypes: np.ndarray, rotation: str, seed: int, structure=None):
    """The prototypes after the rotation that ``rotation`` asks for, what the bank records of it, and their
    structure.

    ``random`` always turns them by :func:`spherecodes.sphere.random_rotation`
    ``(d, seed)``; ``auto`` only when some dimension is unused (all-zero
    column), so that every coordinate carries signal.  ``structure``, the
    proved symmetry of the rows as built (:class:`spherecodes.orbit.SignOrbit`,
    :class:`spherecodes.orbit.OrbitPrefix`, or None), is carried through
    the rotation (:func:`spherecodes.rotated.rotated_structure`): the
    returned structure is a :class:`spherecodes.rotated.Rotated`, so the
    statistics and the certificate still come from the construction.  Such
    rows are first put in the canonical form the bank's reader recovers
    (:func:`spherecodes.rotated.snap_rows`: one magnitude per row, exactly).
    Cosines, max-cos and ρ are unchanged up to rounding.

    Examples
    --------
    >>> from spherecodes.structured import e8_roots
    >>> rows, record, _ = turned(e8_roots().embedded(10).points(), "auto", seed=3)
    >>> unused_dimensions(rows), record["seed"], record["why"]
    (0, 3, '2 of 10 dimensions unused (all-zero columns)')
    >>> turned(e8_roots().points(), "auto", seed=3)[1] is None
    True
    """
    why = rotation_reason(prototypes, rotation)
    if why is None:
        return prototypes, None, structure
    w, carried = turn_rows(prototypes, seed, structure)
    return w, {"seed": int(seed), "why": why, "kind": ROTATION_KIND}, carried


def code_from_result(
    result, *, name: str, labels=None, seed: int | None = None, max_memory: float | None = None,
    rotation: str = "none", rotation_seed: int = 0, announce=None, progress=None,
) -> Code:
    """Package a :class:`spherecodes.solvers.SolverResult` as a :class:`Code`.

    The solver's settings are kept, with what the run actually did (steps,
    starts, the start returned, why it stopped) added, so the bank says how
    the code was made.  The prototypes are turned as ``rotation`` asks
    (:func:`turned`, seeded by ``rotation_seed``).  The statistics are
    computed on the device the solver ran on (a GPU makes them fast for
    large K), within ``max_memory`` bytes.
    """
    settings = {
        **result.settings,
        "steps_taken": int(result.steps),
        "restarts_run": int(result.restarts),
        "best_restart": int(result.best_restart),
        "stop_reason": result.stop_reason,
    }
    if result.stop_detail:
        settings["stop_detail"] = result.stop_detail
    if result.stages:
        settings["stages"] = result.stages
    if result.refreshes:
        settings["refreshes_run"] = int(result.refreshes)
    return _packaged(
        result.prototypes, rotation=rotation, rotation_seed=rotation_seed, settings=settings, announce=announce or _silent,
        progress=progress, max_memory=max_memory, stats_device=result.device, method=result.method, name=name,
        labels=labels, seed=seed, device=result.device, wall_time=result.wall_time,
    )


def generate(
    d: int,
    k: int,
    method: str = "auto",
    *,
    seed: int = 0,
    rotation: str = "auto",
    name: str | None = None,
    labels=None,
    device: str = "auto",
    steps: int | None = None,
    restarts: int | None = None,
    time_limit: float | None = None,
    progress=None,
    announce=None,
    embeddings=None,
    semantic_weight: float | None = None,
    max_cos_tolerance: float | None = None,
    triplets: str = "auto",
    max_memory: float | None = None,
    neighbours: int | None = None,
    refresh: int | None = None,
    effort: str = "default",
    init=None,
    catalog: bool = True,
    lines: bool = False,
    built=None,
    workers: int | None = None,
    scheduler: str | None = None,
) -> Code:
    """Compute a K-prototype code in R^d and its float64 statistics.

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
    method : str
        ``"auto"`` (the best of the structured codes, the closed forms and
        the ``tammes`` optimiser, see :mod:`spherecodes.best_of`) or one of
        :data:`METHODS` (``"structured"``: the best structured code alone).
    seed : int
        Seed of the optimiser's random starts, and of the random rotation.
    rotation : {"auto", "none", "canonical", "random"}
        Orientation of the code, for every method (:data:`ROTATION_CHOICES`):
        ``auto`` turns a code that leaves dimensions unused (a structured
        code embedded from a smaller dimension, a closed form that does not
        fill R^d) by the seeded random rotation, so that every coordinate
        carries signal, and keeps the others as made; ``none`` (``canonical``) keeps every code as made;
        ``random`` turns every code.  The rotation is recorded in
        ``code.settings["rotation"]``.
    name : str, optional
        Code name; defaults to :func:`planned_code_name`.
    labels : sequence of str, optional
        Class names, one per prototype (``privileged``: the embeddings' names).
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where an optimiser runs; ``auto`` takes CUDA when present.
    steps, restarts, time_limit : optional
        Optimiser budget (see :func:`spherecodes.solvers.tammes`); ``None``
        keeps the solver's defaults for (d, K).
    progress : callable, optional
        Receives :class:`spherecodes.solvers.Progress` updates from an
        optimiser and :class:`spherecodes.stats.StatisticsProgress` updates
        from the float64 statistics.
    announce : callable, optional
        Called with one line of text as each phase starts (each candidate of
        ``auto``, the statistics), so that no phase is silent.
    embeddings : spherecodes.semantic.ClassEmbeddings, optional
        ``privileged`` only (and required there): one vector per class, see
        :func:`spherecodes.semantic.class_embeddings`.
    semantic_weight : float, optional
        ``privileged`` only: weight of the ranking loss (default
        :data:`spherecodes.semantic.DEFAULT_SEMANTIC_WEIGHT`).
    max_cos_tolerance : float, optional
        ``privileged`` only: how far max-cos may rise above the Tammes code it
        starts from (default :data:`spherecodes.semantic.DEFAULT_MAX_COS_TOLERANCE`).
    triplets : {"auto", "all", "sampled", "neighbours"}
        ``privileged`` only: the triplets of the ranking loss.
    max_memory : float, optional
        Bytes that the statistics, and the ``tammes`` optimiser, may use on
        the device (default: a safe fraction of what is available).
    neighbours, refresh : int, optional
        ``tammes`` and ``auto`` only: neighbour lists of this many prototypes (0: all
        pairs, the dense path), refreshed every ``refresh`` steps; default
        chosen from (d, K) and the memory (see
        :func:`spherecodes.solvers.tammes_defaults`).
    effort : {"low", "default", "high", "record"}
        ``tammes`` only: how much work to spend (see :func:`spherecodes.solvers.tammes`);
        ``"record"`` runs the record search (:func:`spherecodes.solvers.record_search`):
        chains of ``"high"`` runs until ``time_limit`` is spent, or ``restarts`` chains.
    init : array_like, optional
        ``tammes``, ``softmax`` and ``maxsep``: the optimiser's start code, (K, d).
    catalog : bool
        ``auto`` only: whether the bundled catalog's code of this size is a
        candidate (False when building a catalog).
    lines : bool
        Make K lines instead of K points: minimise the largest |cos| (no two
        prototypes may be nearly antipodal either), the same as
        ``method="lines"``: an optimal closed form where one exists, else the
        lines of the best antipodal structured code, kept when they meet the
        Welch or orthoplex bound and otherwise refined by
        :func:`spherecodes.solvers.line_packing` (see :mod:`spherecodes.lines`).
    workers, scheduler : optional
        ``tammes`` at ``effort="record"`` only: run the chains on a local Dask
        cluster of ``workers`` processes, or on the cluster of the scheduler at
        that address (see :func:`spherecodes.cluster.dask_client`).
    built : list of spherecodes.best_of.Candidate, optional
        ``auto``, ``structured`` and the closed forms: the exact codes of
        (d, K) already built, as :func:`spherecodes.run_estimate.estimate_run`
        returns them in ``RunEstimate.built`` (for ``auto`` those of
        :func:`spherecodes.best_of.exact_candidates`), so that a run with an
        estimate builds them once.

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
    >>> code = generate(7, 28, lines=True)   # 28 equiangular lines in R^7, at the Welch bound 1/3
    >>> code.settings["construction"], round(code.settings["max_abs_cos"], 12)
    ("Steiner ETF of PG(2,2)'s lines (28 lines)", 0.333333333333)
    """
    d, k = check_sizes(d, k)
    seed = check_seed(seed)
    if lines:
        if method not in ("auto", LINES):
            raise SpherecodesError(f"lines=True makes a line packing (method 'lines'); leave method unset, "
                                   f"got {method!r}")
        method = LINES
    method = _resolve(d, k, method)
    if rotation not in ROTATION_CHOICES:
        raise SpherecodesError(f"rotation must be one of {', '.join(ROTATION_CHOICES)}, got {rotation!r}")
    wrong = inapplicable_options(method, embeddings=embeddings, semantic_weight=semantic_weight,
                                 max_cos_tolerance=max_cos_tolerance,
                                 triplets=None if triplets == "auto" else triplets, neighbours=neighbours,
                                 refresh=refresh, effort=None if effort == "default" else effort, init=init)
    if wrong:
        takers = METHOD_OPTIONS[wrong[0]]
        raise SpherecodesError(f"{_listed(options_of(takers))} apply to the {_listed(takers, 'or')} method, "
                               f"not {method!r}")
    if effort == "record" and method != "tammes":
        raise SpherecodesError(f"effort 'record' runs the record search of method 'tammes', not {method!r}; give "
                               "method tammes (--method tammes)")
    if (workers is not None or scheduler is not None) and (method, effort) != ("tammes", "record"):
        raise SpherecodesError("workers and scheduler spread the chains of a record search over Dask: they apply "
                               f"to method 'tammes' with effort 'record', not to {method!r} at effort {effort!r}")
    used_seed = seed if uses_seed(method, rotation, d, k) else None
    name = name or default_code_name(method, d, k, used_seed)
    run = _RUNNERS.get(method, _closed_form)
    return run(d, k, method, name=name, labels=labels, seed=seed, used_seed=used_seed, rotation=rotation,
               device=device, steps=steps, restarts=restarts, time_limit=time_limit, progress=progress,
               announce=announce or _silent, embeddings=embeddings, semantic_weight=semantic_weight, max_cos_tolerance=max_cos_tolerance,
               triplets=triplets, max_memory=max_memory, neighbours=neighbours, refresh=refresh, effort=effort,
               init=init, catalog=catalog, built=_checked_built(built, d, k), workers=workers, scheduler=scheduler)


def _checked_built(built, d: int, k: int):
    """``built`` as a list, each candidate's prototypes checked to be (K, d); or None (nothing built)."""
    if not built:
        return None
    built = list(built)
    for candidate in built:
        if getattr(candidate, "prototypes", None) is None or candidate.prototypes.shape != (k, d):
            raise SpherecodesError(f"built must hold the exact candidates of (d, K) = ({d}, {k}), built by "
                                   "spherecodes.run_estimate.estimate_run")
    return built


def _silent(line: str) -> None:
    """The default ``announce``: say nothing."""


def _packaged(prototypes, *, rotation, rotation_seed, settings, announce, progress, max_memory, stats_device="cpu",
              orbit="auto", **code_fields) -> Code:
    """The code: turned as ``rotation`` asks (:func:`turned`), then its float64 statistics, announced.

    The orbit of sign changes or its prefix (``"auto"``: proved here from
    the rows; None: known not to be one; else as the run's estimate proved
    it, :attr:`spherecodes.best_of.Candidate.orbit`) is proved once and
    passed on, to the rotation's decision, the statistics and (as
    ``code.orbit``) the certificate.
    """
    prototypes = np.asarray(prototypes, dtype=np.float64)
    k, d = prototypes.shape
    if isinstance(orbit, str):
        orbit = resolve_orbit(prototypes)
    prototypes, record, orbit = turned(prototypes, rotation, rotation_seed, orbit)
    settings = dict(settings)
    if record is not None:
        settings["rotation"] = record
    announce(f"statistics: {describe_orbit(orbit)}" if orbit is not None
             else f"statistics: float64 cosines of all {k * (k - 1) // 2:,} pairs")
    return make_code(prototypes, settings=settings, stats_device=stats_device, max_memory=max_memory,
                     progress=progress, orbit=orbit, **code_fields)


def _listed(names, conjunction: str = "and") -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


# --------------------------------------------------------------------------- the methods
# Each runner takes generate's arguments (checked) and returns the Code.  The
# solvers import torch, so they are imported when an optimiser runs, not when
# spherecodes is imported.


def _structured(d, k, method, *, name, labels, seed, used_seed, rotation, max_memory, announce, progress, built,
                **_) -> Code:
    announce("candidate: the best structured code")
    candidate = built[0] if built else run_structured(d, k, max_memory)
    settings = {**candidate.settings, "label": candidate.label}
    return _packaged(candidate.prototypes, rotation=rotation, rotation_seed=seed, settings=settings, announce=announce,
                     progress=progress, max_memory=max_memory, method=STRUCTURED, name=name, labels=labels,
                     seed=used_seed, device="cpu", wall_time=candidate.seconds, orbit=candidate.orbit)


def _auto(d, k, method, *, name, labels, seed, used_seed, rotation, device, steps, restarts, time_limit, progress,
          announce, max_memory, neighbours, refresh, catalog, built, **_) -> Code:
    begin = time.perf_counter()
    plan = plan_auto(d, k, steps=steps, restarts=restarts, time_limit=time_limit, neighbours=neighbours,
                     max_memory=max_memory, catalog=catalog, seed=seed)
    winner, candidates = best_of(d, k, plan, seed=seed, device=device, steps=steps, restarts=restarts,
                                 time_limit=time_limit, progress=progress, max_memory=max_memory,
                                 neighbours=neighbours, refresh=refresh, announce=announce, built=built)
    settings = {
        **winner.settings,
        "auto": {
            "winner": winner.label,
            "winner_kind": winner.kind,
            "exact_max_cos": None if winner.exact is None else str(winner.exact),
            "budget_seconds": round(plan.budget, 3),
            "candidates": [c.to_dict() for c in candidates],
        },
    }
    if any(c.stop_reason == "interrupted" for c in candidates):
        settings["stop_reason"] = "interrupted"
    elif winner.stop_reason:
        settings["stop_reason"] = winner.stop_reason
    code = _packaged(winner.prototypes, rotation=rotation, rotation_seed=seed, settings=settings, announce=announce,
                     progress=progress, max_memory=max_memory, stats_device=_where(winner), method="auto",
                     name=name, labels=labels, seed=used_seed, device=_where(winner),
                     wall_time=time.perf_counter() - begin, orbit=winner.orbit)
    if winner.certificate is not None and "rotation" not in code.settings:
        code.certificate = winner.certificate  # a bundled code's, checked as its bank was read: not computed again
    return code


def _where(candidate: Candidate) -> str:
    """Where a candidate was computed: the optimiser's device, else the CPU."""
    return candidate.settings.get("device", "cpu")


def _closed_form(d, k, method, *, name, labels, seed, used_seed, rotation, max_memory, announce, progress, built,
                 **_) -> Code:
    start = time.perf_counter()
    # The canonical coordinates define the closed form; _packaged turns them where they leave dimensions unused
    # (or where --rotation random asks), by the same rotation construct(rotation="random") applies.
    prototypes = built[0].prototypes if built else construct(method, d, k)
    return _packaged(prototypes, rotation=rotation, rotation_seed=seed, settings={"rotation": "canonical"},
                     announce=announce, progress=progress, max_memory=max_memory, method=method, name=name,
                     labels=labels, seed=used_seed, device="cpu", wall_time=time.perf_counter() - start,
                     orbit=built[0].orbit if built else "auto")


def _optimise(solver, d, k, *, name, labels, seed, used_seed, rotation, device, steps, restarts, time_limit,
              progress, announce, init, max_memory, solver_options=None) -> Code:
    announce(f"optimiser: {solver.__name__}")
    result = solver(d, k, seed=seed, steps=steps, restarts=restarts, time_limit=time_limit, device=device,
                    progress=progress, init=init, **(solver_options or {}))
    return code_from_result(result, name=name, labels=labels, seed=used_seed, max_memory=max_memory,
                            rotation=rotation, rotation_seed=seed, announce=announce, progress=progress)


def _tammes(d, k, method, *, max_memory, neighbours, refresh, effort, workers, scheduler, **options) -> Code:
    from .solvers import tammes

    if effort == "record":
        return _record_search(d, k, max_memory=max_memory, neighbours=neighbours, refresh=refresh, workers=workers,
                              scheduler=scheduler, **options)
    # Only tammes sizes its working set (dense or neighbour lists) to the memory limit.
    large = {"neighbours": neighbours, "refresh": refresh, "max_memory": max_memory, "effort": effort}
    return _optimise(tammes, d, k, max_memory=max_memory, solver_options=large, **_common(options))


def _record_search(d, k, *, max_memory, neighbours, refresh, workers, scheduler, **options) -> Code:
    """The record search (chains of tammes at high effort) for ``time_limit`` seconds or ``restarts`` chains."""
    from .solvers import record_search

    announce = options["announce"]
    chain_options = {key: value for key, value in (("steps", options["steps"]), ("neighbours", neighbours),
                                                   ("refresh", refresh), ("max_memory", max_memory))
                     if value is not None}

    def report(p) -> None:
        budget = f" of {p.budget:.0f}" if p.budget is not None else ""
        announce(f"chain {p.chain.chain}{' (from the start code)' if p.chain.warm else ''}: max-cos "
                 f"{p.chain.max_cos:.12g} in {p.chain.seconds:.1f} s; best {p.best_max_cos:.12g} (chain "
                 f"{p.best_chain}) after {p.elapsed:.0f}{budget} s")

    announce("optimiser: record_search")
    result = record_search(d, k, seed=options["seed"], time_budget=options["time_limit"],
                           chains=options["restarts"], init=options["init"], device=options["device"],
                           workers=workers, scheduler=scheduler, progress=report, **chain_options)
    return code_from_result(result, name=options["name"], labels=options["labels"], seed=options["used_seed"],
                            max_memory=max_memory, rotation=options["rotation"], rotation_seed=options["seed"],
                            announce=announce, progress=options["progress"])


def _softmax(d, k, method, *, max_memory, **options) -> Code:
    from .solvers import softmax_code

    return _optimise(softmax_code, d, k, max_memory=max_memory, **_common(options))


def _maxsep(d, k, method, *, max_memory, **options) -> Code:
    from .solvers import maxsep

    return _optimise(maxsep, d, k, max_memory=max_memory, **_common(options))


def _lines(d, k, method, *, init, effort, max_memory, **options) -> Code:
    """The closed form, else the structured lines when they meet the bound, else the optimiser from them."""
    from .lines import OPTIMAL_TOL, line_closed_form, line_lower_bound, max_abs_cos, structured_lines
    from .solvers import line_packing

    begin = time.perf_counter()
    found = structured_lines(d, k) if line_closed_form(d, k) is None and init is None else None
    if found is not None:
        rows, label = found
        bound = line_lower_bound(d, k)
        value = max_abs_cos(rows)
        if value - bound.value <= OPTIMAL_TOL:
            settings = {"method": LINES, "construction": label, "lower_bound": bound.to_dict(), "max_abs_cos": value,
                        "gap": value - bound.value, "stop_reason": "converged"}
            return make_code(rows, method=LINES, name=options["name"], labels=options["labels"], settings=settings,
                             device="cpu", wall_time=time.perf_counter() - begin, max_memory=max_memory)
        init = rows
    code = _optimise(line_packing, d, k, max_memory=max_memory, solver_options={"effort": effort},
                     **_common({**options, "init": init}))
    if found is not None:
        code.settings["started_from"] = found[1]
    return code


def _common(options: dict) -> dict:
    keys = ("name", "labels", "seed", "used_seed", "rotation", "device", "steps", "restarts", "time_limit", "progress",
            "announce", "init")
    return {key: options[key] for key in keys}


def _privileged(d, k, method, *, embeddings, name, labels, seed, rotation, device, steps, restarts, time_limit,
                progress, announce, semantic_weight, max_cos_tolerance, triplets, **_) -> Code:
    """Checks, then :func:`spherecodes.semantic.privileged`, packaged as a labelled code."""
    from .semantic import DEFAULT_MAX_COS_TOLERANCE, DEFAULT_SEMANTIC_WEIGHT, ClassEmbeddings, privileged

    if not isinstance(embeddings, ClassEmbeddings):
        raise SpherecodesError("the privileged method needs embeddings: the class names' word vectors "
                               "(spherecodes.semantic.class_embeddings)")
    if restarts is not None:
        raise SpherecodesError("the privileged method runs a single start; leave restarts unset")
    if labels is not None and list(labels) != list(embeddings.names):
        raise SpherecodesError("the labels of a privileged code are the embeddings' class names; leave labels unset")
    result = privileged(
        d, k, embeddings, seed=seed, steps=steps, device=device, time_limit=time_limit, progress=progress,
        semantic_weight=DEFAULT_SEMANTIC_WEIGHT if semantic_weight is None else semantic_weight,
        max_cos_tolerance=DEFAULT_MAX_COS_TOLERANCE if max_cos_tolerance is None else max_cos_tolerance,
        triplets=triplets,
    )
    # Every term of its objective is a function of inner products: a rotation changes none of them.
    return code_from_result(result, name=name, labels=embeddings.names, seed=seed, rotation=rotation,
                            rotation_seed=seed, announce=announce, progress=progress)


#: The dispatch table of :func:`generate`: method -> runner (every closed form uses :func:`_closed_form`).
_RUNNERS = {
    **{method: _closed_form for method in CLOSED_FORMS},
    STRUCTURED: _structured,
    "auto": _auto,
    "tammes": _tammes,
    "softmax": _softmax,
    "maxsep": _maxsep,
    "privileged": _privileged,
    LINES: _lines,
}
