"""Classes that arrive later: add prototypes to a code without moving the ones it has.

A network trained towards fixed prototypes has placed each class's features
around its prototype; a code generated afresh for K + M classes moves every
prototype and so undoes the training.  :func:`extend` keeps the K rows bit for
bit (and their labels) and places M new rows as far as it can from them and
from each other:

* a code that is the first K points of a construction (:func:`next_points`)
  extends by the construction's next M points when they keep max-cos where
  it was; nothing can do better then, since the extended code contains the K
  old rows and their max-cos;
* otherwise the new rows start from a farthest-point choice among random
  directions and :func:`spherecodes.solvers.tammes` refines them with the old
  rows frozen (started from the construction's next points, where there are
  any).
"""

from __future__ import annotations

import time

import numpy as np

from .checks import check_int
from .code import Code, check_code_name, check_labels, make_code
from .devices import resolve_device
from .context import RunContext
from .constructions import CLOSED_FORMS, applicable_closed_forms, construct, random_rotation
from .errors import SpherecodesError
from .memory import require_memory
from .options import TammesOptions, given_options
from .sphere import random_start
from .stats import max_cos
from .structured import native_codes

__all__ = ["EXTEND_METHODS", "extend", "farthest_points", "new_old_max_cos", "next_points"]

#: How :func:`extend` places the new rows.  ``auto``: the construction's next
#: points where they keep max-cos, else the optimiser (started from them where
#: there are any); ``next-points``: the construction's next points, refused
#: for a code that is not the start of one; ``tammes``: the optimiser.
EXTEND_METHODS = ("auto", "next-points", "tammes")

#: The optimiser's options that extend passes on only where given (None is not the solver's default for them).
NEIGHBOUR_OPTIONS = ("neighbours", "refresh")

#: Rows of the old code compared with the new ones at a time (memory: M x this many cosines).
_BLOCK = 65536

#: Multiply-adds the farthest-point start may spend scoring its random candidates against the old rows.
_START_WORK = 2e10

#: Two stored rows that a construction rebuilds may differ by this much (a rotation applied in another order).
_SAME_ROWS = 1e-12


def extend(code: Code, m: int, *, labels=None, name: str | None = None, method: str = "auto", seed: int = 0,
           options: TammesOptions | None = None, context: RunContext | None = None) -> Code:
    """The code with M rows added, as far as possible from its K rows and from each other.

    Parameters
    ----------
    code : Code
        The code to extend; its rows and labels are kept bit for bit as rows
        0 … K − 1.
    m : int
        How many prototypes to add (>= 1).
    labels : sequence of str, optional
        Names of the M new classes.  Without them the new rows are
        unlabelled (``""``), ready for classes that arrive later still; a
        code without labels keeps none unless new ones are given (its old
        rows are then unlabelled).
    name : str, optional
        Name of the new code; default ``<name>+<M>``.
    method : {"auto", "next-points", "tammes"}
        See :data:`EXTEND_METHODS`.
    seed : int
        Seed of the optimiser and of its farthest-point start.
    options : spherecodes.options.TammesOptions, optional
        The optimiser's steps, restarts, effort and neighbour lists when it
        runs (its start is the old rows and the new ones' start: no ``init``).
    context : spherecodes.context.RunContext, optional
        The optimiser's device and progress; its ``time_limit`` stops the
        optimiser, which keeps the best rows found; ``max_memory`` bounds the
        optimiser and the statistics.

    Returns
    -------
    Code
        K + M rows, method ``"extend"``; ``settings`` holds ``parent`` and
        ``parent_sha256`` (the code extended), ``added`` (M), ``placed_by``
        (how), ``new_old_max_cos`` and, for the optimiser, its settings
        (``tammes``).  Not certified (``spherecodes extend`` certifies it).

    Examples
    --------
    The first 1000 words of the extended BCH [64,10,28] code and their next
    24 are the whole code: max-cos stays 1/8.

    >>> from spherecodes import generate
    >>> bigger = extend(generate(d=64, k=1000), 24)
    >>> bigger.k, bigger.max_cos, bigger.settings["placed_by"]
    (1024, 0.125, 'next points of extended BCH [64,10,28]')

    Where no construction continues the code, the optimiser places the new
    rows with the old ones frozen:

    >>> from spherecodes.context import RunContext
    >>> from spherecodes.options import TammesOptions
    >>> wider = extend(generate(3, 5, "tammes", TammesOptions(steps=50, restarts=1)), 2,
    ...                options=TammesOptions(steps=50, restarts=1), context=RunContext(device="cpu"))
    >>> wider.k, wider.settings["placed_by"]
    (7, 'tammes with the 5 old rows frozen')
    """
    began = time.perf_counter()
    options = options if options is not None else TammesOptions()
    context = context if context is not None else RunContext()
    if not isinstance(options, TammesOptions):
        raise SpherecodesError(f"extend's options are TammesOptions (the optimiser's), got {type(options).__name__}")
    unused = [key for key in ("init", "workers", "scheduler") if getattr(options, key) is not None]
    if unused:
        raise SpherecodesError(f"extend runs one optimiser from the old rows and the new rows' start: {unused[0]} "
                               "does not apply")
    max_memory, device = context.max_memory, context.device
    if not isinstance(code, Code):
        raise SpherecodesError(f"extend takes a Code (from read_code or generate), got {type(code).__name__}")
    m = check_int("the number of prototypes to add", m, 1)
    if method not in EXTEND_METHODS:
        raise SpherecodesError(f"method must be one of {', '.join(EXTEND_METHODS)}, got {method!r}")
    k, d = code.k, code.d
    require_memory(3 * 8.0 * (k + m) * d, f"the extended code ({k + m:,} x {d} float64 rows)", limit=max_memory)
    all_labels = _joined_labels(code, m, labels)
    name = check_code_name(f"{code.name}+{m}" if name is None else name)
    old = code.prototypes
    found = next_points(code, m)
    if method == "next-points" and found is None:
        raise SpherecodesError(f"{code.name} is not the first {k:,} points of a construction with {k + m:,} points; "
                               "use method 'auto' or 'tammes'")
    placed, rows = found if found is not None else ("", None)
    if rows is not None and method != "tammes":
        extended = np.vstack([old, rows])
        if method == "next-points" or max_cos(extended, max_memory=max_memory) <= code.max_cos + _SAME_ROWS:
            return _packaged(code, extended, name, all_labels, placed, {}, None, began, max_memory)
    from .solvers import TammesSettings, tammes  # torch: loaded only when the optimiser runs

    schedule = {}
    if rows is None:
        # A warm start anneals sharp and slow, to refine a code; the farthest points are only a start, far from
        # where the rows end: they get the schedule of a cold start ((16, 100) + 10: max-cos 0.321, not 0.348).
        cold = TammesSettings.resolve(d, k + m, steps=options.steps, restarts=options.restarts,
                                     device=resolve_device(device), effort=options.effort)
        schedule = {"t_start": cold.t_start, "lr_start": cold.lr_start, "lr_end": cold.lr_end}
    start = rows if rows is not None else farthest_points(old, m, seed=seed)
    result = tammes(d, k + m, init=np.vstack([old, start]), frozen=np.arange(k + m) < k, seed=seed,
                    steps=options.steps, restarts=options.restarts, time_limit=context.time_limit, device=device,
                    effort=options.effort, max_memory=max_memory, progress=context.progress, **schedule,
                    **{key: value for key, value in given_options(options).items() if key in NEIGHBOUR_OPTIONS})
    placed = f"tammes with the {k:,} old rows frozen" + (f", started from the {placed}" if placed else "")
    return _packaged(code, np.vstack([old, result.prototypes[k:]]), name, all_labels, placed,
                     {"tammes": result.settings}, seed, began, max_memory, device=result.device)


def _packaged(code: Code, extended: np.ndarray, name: str, labels, placed: str, more: dict, seed, began: float,
              max_memory, device: str = "cpu") -> Code:
    """The extended rows as a code whose settings say what it extends and how."""
    settings = {"parent": code.name, "parent_sha256": code.sha256, "parent_method": code.method,
                "added": len(extended) - code.k, "placed_by": placed,
                "new_old_max_cos": new_old_max_cos(extended, code.k), **more}
    return make_code(extended, method="extend", name=name, labels=labels, settings=settings, seed=seed,
                     device=device, wall_time=time.perf_counter() - began,
                     context=RunContext(device="cpu", max_memory=max_memory))


def _joined_labels(code: Code, m: int, labels) -> list[str] | None:
    """The old labels (unlabelled where the code has none) followed by the new ones (unlabelled where not given)."""
    if labels is None and code.labels is None:
        return None
    new = [""] * m if labels is None else [str(x) for x in labels]
    if len(new) != m:
        raise SpherecodesError(f"got {len(new)} labels for the {m} new prototypes; give one per new row")
    old = code.labels if code.labels is not None else [""] * code.k
    taken = set(old).intersection(new) - {""}
    if taken:
        raise SpherecodesError(f"new labels already name old classes: {', '.join(sorted(taken)[:10])}")
    return check_labels(old + new, code.k + m)


def next_points(code: Code, m: int) -> tuple[str, np.ndarray] | None:
    """The next M points of the construction whose first K points the code is, or None when it is none.

    Three kinds of construction are recognised: the structured code named
    in the code's settings (``structured_code``, turned by the rotation they
    record), a closed form (the code's method, e.g. a subset of the
    cross-polytope), and an orbit of sign changes whose first K words the code
    is (:class:`spherecodes.orbit.OrbitPrefix`).  The construction is rebuilt
    for K + M points and used only when its first K points are the code's
    rows (to 1e-12).

    Returns
    -------
    (str, ndarray of shape (M, d)) or None
        What the points are, and the points.

    Examples
    --------
    >>> from spherecodes import generate
    >>> placed, rows = next_points(generate(d=4, k=6), 2)   # 6 of the 8 points ±e_i
    >>> placed, (rows + 0.0).tolist()
    ('next points of the cross-polytope', [[0.0, 0.0, -1.0, 0.0], [0.0, 0.0, 0.0, -1.0]])
    """
    k, d = code.k, code.d
    settings = code.settings
    rotation = settings.get("rotation")
    built = what = None
    if isinstance(settings.get("structured_code"), str):
        structured = next((c for c in native_codes(d) if c.name == settings["structured_code"]), None)
        if structured is not None and structured.size >= k + m:
            built = (structured if structured.d == d else structured.embedded(d)).points(k + m)
            if isinstance(rotation, dict) and isinstance(rotation.get("seed"), int):
                built = built @ random_rotation(d, rotation["seed"])
            what = structured.name
    elif code.method in CLOSED_FORMS and code.method in applicable_closed_forms(d, k + m):
        turned = "random" if rotation == "random" else "canonical"
        built = construct(code.method, d, k + m, rotation=turned, seed=code.seed or 0)
        what = f"the {code.method}"
    elif code.orbit is not None and (following := code.orbit.extension(code.prototypes, m)) is not None:
        return following  # the structure's next words (the first K words of an orbit: its next ones)
    if built is None or not np.allclose(built[:k], code.prototypes, rtol=0.0, atol=_SAME_ROWS):
        return None
    return f"next points of {what}", built[k:]


def farthest_points(w: np.ndarray, m: int, *, seed: int = 0) -> np.ndarray:
    """M unit rows chosen greedily from random directions, each the farthest (smallest max-cos) from ``w`` and those before.

    The candidates are uniform random unit vectors (stream ``(seed, 0)``),
    16 per new row and at least 1024, fewer where scoring them against a
    very large ``w`` would pass 2e10 multiply-adds (but never fewer than M).
    A start for the optimiser, not an optimum.

    Examples
    --------
    >>> rows = farthest_points(np.eye(3), 3)   # three directions far from e_1, e_2, e_3 and each other
    >>> round(max_cos(np.vstack([np.eye(3), rows])), 4)
    0.3039
    """
    k, d = w.shape
    count = int(max(m, min(max(16 * m, 1024), _START_WORK // max(k * d, 1))))
    candidates = random_start(seed, 0, count, d)
    worst = np.full(count, -np.inf)
    for first in range(0, k, _BLOCK):
        np.maximum(worst, (candidates @ w[first : first + _BLOCK].T).max(axis=1), out=worst)
    chosen = []
    for _ in range(m):
        pick = int(np.argmin(worst))
        chosen.append(pick)
        np.maximum(worst, candidates @ candidates[pick], out=worst)
        worst[chosen] = np.inf
    return candidates[chosen]


def new_old_max_cos(w: np.ndarray, k: int) -> float:
    """The largest cosine between a row ``>= k`` (new) and a row ``< k`` (old), in float64, a block of rows at a time.

    Examples
    --------
    >>> new_old_max_cos(np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]), 2)
    0.8
    """
    new = w[k:]
    return float(max((new @ w[first : min(first + _BLOCK, k)].T).max() for first in range(0, k, _BLOCK)))
