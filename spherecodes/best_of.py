"""Best-of generation: the structured codes, the closed forms and the optimiser, compared on (d, K).

``generate(d, k)`` (method ``auto``) returns a provably optimal closed form at
once where one applies (:func:`spherecodes.constructions.optimal_closed_form`).
Everywhere else it gathers *candidates* and keeps the one with the smallest
max-cos (ties: the larger certified ρ where both are computed, else the
earlier candidate):

1. the structured code that fits (d, K) best
   (:func:`spherecodes.structured.best_structured_code`, embedded from a
   smaller dimension where that wins), with its exact max-cos;
2. the other closed forms that apply (24-cell, 600-cell, E8);
3. the ``tammes`` optimiser warm-started from that structured code (it can
   use what the construction leaves free: the dimensions it is embedded
   away from, the words left out; an embedded code is first moved off its
   subspace by :func:`lift`);
4. the ``tammes`` optimiser from random starts, exactly as ``--method tammes``
   runs it with the same seed.

The optimisers run only where they can compete in the budget
(:func:`plan_auto`): where no structured code or closed form fits, ``auto``
is ``tammes``; where one does, the optimisers run when their work (starts ×
steps × K²d multiply-adds, known before any work, so the choice is
deterministic) is at most :data:`AUTO_WORK` next to a code embedded from a
smaller dimension, whose free dimensions the optimiser can use, and at most
:data:`NATIVE_WORK` next to a code that lives in R^d itself: in high
dimension such a code is far ahead of what the optimiser reaches from
random starts (measured in ``docs/structured.md``).  Under a time limit the
optimisers that run share what the structured code leaves of it, and the
warm start also runs beyond those limits (it can only improve its start).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .constructions import applicable_closed_forms, construct, optimal_closed_form
from .errors import SpherecodesError
from .memory import require_memory
from .structured import StructuredCode, available_codes, best_structured_code

#: Work (multiply-adds of the annealing: starts × steps × K²·d) up to which
#: ``auto`` runs the optimisers next to a structured code embedded from a
#: smaller dimension (whose free dimensions the optimiser can use): about
#: ten seconds of one CPU core.
AUTO_WORK = 1e11

#: The same next to a code that lives in R^d itself (a structured code or a
#: closed form): about a second.  Such codes are far ahead of what the
#: optimiser reaches in high dimension (docs/structured.md), so it runs only
#: where it is cheap, which covers the low dimensions where it finds the best
#: known codes.
NATIVE_WORK = 1e9

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
        ``"structured"``, ``"closed-form"``, ``"tammes-warm"`` or ``"tammes"``.
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

    def to_dict(self) -> dict:
        """JSON-serialisable summary (no prototypes)."""
        return {
            "label": self.label,
            "kind": self.kind,
            "max_cos": self.max_cos,
            "exact": None if self.exact is None else str(self.exact),
            "rho": self.rho,
            "seconds": round(self.seconds, 3),
            "skipped": self.skipped or None,
        }


@dataclass(frozen=True)
class AutoPlan:
    """What ``auto`` will do for (d, K), decided before any work.

    Attributes
    ----------
    closed_form : str or None
        A provably optimal closed form: returned at once.
    structured : StructuredCode or None
        The best structured code for (d, K) (already in R^d).
    closed_forms : tuple of str
        The other closed forms that apply.
    run_random, run_warm : str
        ``""`` when the optimiser from random starts / warm-started runs,
        else why not.
    work : float
        The annealing's multiply-adds (starts × steps × K²·d).
    """

    closed_form: str | None
    structured: StructuredCode | None
    closed_forms: tuple
    run_random: str
    run_warm: str
    work: float

    @property
    def single_method(self) -> str | None:
        """The method when ``auto`` reduces to one: a closed form, or ``tammes`` (nothing else fits)."""
        if self.closed_form is not None:
            return self.closed_form
        if self.structured is None and not self.closed_forms:
            return "tammes"
        return None


def describe_plan(plan: AutoPlan, k: int) -> str:
    """One line on stderr before the work: the structured code and which optimisers will run.

    Examples
    --------
    >>> describe_plan(plan_auto(64, 1000), 1000).split(";")[0]
    'auto: extended BCH [64,10,28], 1000 of 1024 words (max-cos 1/8)'
    """
    parts = []
    if plan.structured is not None:
        parts.append(f"{structured_label(plan.structured, k)} (max-cos {plan.structured.max_cos_bound(k)})")
    parts.extend(f"closed form {method}" for method in plan.closed_forms)
    for what, why in (("tammes from the structured code", plan.run_warm), ("tammes from random starts",
                                                                          plan.run_random)):
        if plan.structured is None and what.endswith("structured code"):
            continue
        parts.append(what if not why else f"no {what} ({why.removeprefix('skipped: ')})")
    return "auto: " + "; ".join(parts)


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


def auto_method(d: int, k: int) -> str:
    """What ``auto`` is for (d, K): a provably optimal closed form, ``tammes`` when nothing else fits, else ``auto``.

    Decided from (d, K) alone, before any work (the code's name depends on it).

    Examples
    --------
    >>> auto_method(3, 4), auto_method(3, 13), auto_method(64, 1000)
    ('etf', 'tammes', 'auto')
    """
    closed = optimal_closed_form(d, k)
    if closed is not None:
        return closed
    if best_structured_code(d, k) is None and not applicable_closed_forms(d, k):
        return "tammes"
    return "auto"


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


def plan_auto(d: int, k: int, *, steps: int | None = None, restarts: int | None = None,
              time_limit: float | None = None, neighbours: int | None = None, max_memory: float | None = None
              ) -> AutoPlan:
    """Decide which candidates ``auto`` runs for (d, K): deterministic, from (d, K) and the settings.

    Examples
    --------
    >>> plan = plan_auto(64, 1000)
    >>> plan.structured.name, plan.run_random.split(":")[0]
    ('extended BCH [64,10,28]', 'skipped')
    >>> plan_auto(3, 13).single_method
    'tammes'
    """
    closed = optimal_closed_form(d, k)
    if closed is not None:
        return AutoPlan(closed, None, (), "not needed: a provably optimal closed form",
                        "not needed: a provably optimal closed form", 0.0)
    structured = best_structured_code(d, k)
    closed_forms = tuple(applicable_closed_forms(d, k))
    if structured is None and not closed_forms:
        return AutoPlan(None, None, (), "", "no structured code fits", 0.0)
    work = _planned_work(d, k, steps, restarts, neighbours, max_memory)
    native = bool(closed_forms) or structured.native_d == d
    limit = NATIVE_WORK if native else AUTO_WORK
    fits = work <= limit
    random = "" if fits else (
        f"skipped: {work:.2g} multiply-adds of annealing, over the {limit:.0e} that auto spends next to a code "
        f"{'in' if native else 'embedded into'} R^{d}"
    )
    if structured is None:
        warm = "no structured code fits"
    elif fits or time_limit is not None:
        warm = ""
    else:
        warm = random
    return AutoPlan(None, structured, closed_forms, random, warm, work)


def _planned_work(d, k, steps, restarts, neighbours, max_memory) -> float:
    from .solvers import TammesOptions

    cfg = TammesOptions.resolve(d, k, steps=steps, restarts=restarts, device="cpu", neighbours=neighbours,
                                max_memory=max_memory)
    return annealing_work(d, k, cfg.restarts, cfg.steps, cfg.neighbours, cfg.refresh)


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
    # The points, the float64 statistics of the code and the bank's copy.
    require_memory(3 * 8.0 * k * code.d, f"the {k} points of {code.name} in R^{code.d} (float64)", "cpu",
                   limit=max_memory, hint="choose a smaller size")
    points = code.points(k)
    exact = code.max_cos_for(k)
    settings = {
        "structured_code": code.name,
        "family": code.family,
        "code_size": int(code.size),
        "native_d": int(code.native_d),
        "exact_max_cos": str(exact),
        "max_cos_exact": bool(code.max_cos_exact),
        "citation": code.citation,
    }
    return Candidate(structured_label(code, k), "structured", points, float(exact), exact,
                     time.perf_counter() - begin, settings=settings)


def closest_structured(d: int, k: int) -> str:
    """The structured codes nearest to (d, K), for the message when none fits.

    Examples
    --------
    >>> closest_structured(8, 300)
    'the largest in R^8 is E8 roots (240 points, max-cos 1/2); ...'
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


def best_of(d: int, k: int, plan: AutoPlan, *, seed: int, device, steps, restarts, time_limit, progress,
            max_memory, neighbours, refresh) -> tuple[Candidate, list[Candidate]]:
    """Run the candidates of ``plan`` and return (winner, all candidates in the order run).

    The caller (:func:`spherecodes.generation.generate`) has checked the input.

    Examples
    --------
    >>> plan = plan_auto(64, 4000)
    >>> winner, tried = best_of(64, 4000, plan, seed=0, device="cpu", steps=None, restarts=None, time_limit=None,
    ...                         progress=None, max_memory=None, neighbours=None, refresh=None)
    >>> winner.label, winner.exact, [c.kind for c in tried if not c.skipped]
    ('Kerdock n = 64, 4000 of 4096 points', Fraction(1, 8), ['structured'])
    """
    begin = time.perf_counter()
    candidates: list[Candidate] = []
    if plan.structured is not None:
        candidates.append(structured_candidate(plan.structured, k, max_memory))
    for method in plan.closed_forms:
        start = time.perf_counter()
        points = construct(method, d, k)
        from .stats import max_cos

        candidates.append(Candidate(f"closed form {method}", "closed-form", points, max_cos(points),
                                    seconds=time.perf_counter() - start, settings={"closed_form": method}))
    options = {"device": device, "steps": steps, "restarts": restarts, "progress": progress,
               "neighbours": neighbours, "refresh": refresh, "max_memory": max_memory, "seed": seed}
    run_warm = plan.structured is not None and not plan.run_warm
    shares = _time_shares(time_limit, begin, run_warm, not plan.run_random)
    if run_warm:
        start_code = candidates[0]
        init = start_code.prototypes
        if plan.structured.native_d < d:
            init = lift(init, plan.structured.native_d, seed)
        candidates.append(_optimise(f"tammes from {start_code.label}", "tammes-warm", d, k, options,
                                    next(shares), init=init))
    else:
        candidates.append(Candidate("tammes from the structured code", "tammes-warm", skipped=plan.run_warm))
    interrupted = candidates[-1].stop_reason == "interrupted"
    if not plan.run_random and not interrupted:
        candidates.append(_optimise("tammes from random starts", "tammes", d, k, options, next(shares)))
    else:
        candidates.append(Candidate("tammes from random starts", "tammes",
                                    skipped="interrupted (Ctrl-C)" if interrupted else plan.run_random))
    return _winner(candidates), candidates


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
    from .solvers._core import estimated_angle
    from .sphere import normalise_rows

    k, d = points.shape
    rng = np.random.default_rng([seed, 0, 3])
    noise = estimated_angle(d, k) / 4 / np.sqrt(d)
    return normalise_rows(points + noise * rng.standard_normal((k, d)))


def _time_shares(time_limit, begin, *runs):
    """Time limits of the optimiser runs: what is left of ``time_limit``, split evenly among those still to run."""
    planned = sum(bool(r) for r in runs)
    for i in range(planned):
        if time_limit is None:
            yield None
        else:
            left = time_limit - (time.perf_counter() - begin)
            yield max(left / (planned - i), 1e-3)


def _optimise(label, kind, d, k, options, time_limit, init=None) -> Candidate:
    from .solvers import tammes

    start = time.perf_counter()
    result = tammes(d, k, time_limit=time_limit, init=init, **options)
    return Candidate(label, kind, result.prototypes, float(result.max_cos), seconds=time.perf_counter() - start,
                     settings=dict(result.settings), stop_reason=result.stop_reason)


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
