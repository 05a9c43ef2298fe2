"""How much annealing :func:`spherecodes.solvers.tammes` does by default at (d, K): its starts, steps and
neighbour lists.

Torch-free, so that ``auto`` plans its candidates (:func:`spherecodes.best_of.predicted_seconds`)
without loading the solvers; :func:`spherecodes.solvers.tammes_defaults` builds
the rest of a run's settings on it.
"""

from __future__ import annotations

from .checks import check_int
from .memory import memory_limit

__all__ = ["ANNEAL_ENTRIES", "MAX_STEPS", "MIN_STEPS", "NEIGHBOUR_MIN_K", "WORK_BUDGET", "annealing_budget",
           "dense_bytes", "neighbour_defaults", "resolve_neighbours"]

#: Work per step (K^2 d multiply-adds) at which the default budget stops
#: growing: a start gets ``WORK_BUDGET / (K^2 d)`` steps, within the bounds below.
WORK_BUDGET = 6.4e10
MIN_STEPS, MAX_STEPS = 100, 2000

#: Pair entries (restarts x steps x K^2) that the default starts of a small
#: code may anneal: each step also passes over the K x K matrices some ten
#: times whatever d is, so in low dimension the K^2 d budget above
#: under-counts the work.  The cap (that of R^3 at N = 81, 64 x 2000 steps)
#: never takes the starts below 4 (benchmarks/README.md has the figures).
ANNEAL_ENTRIES = 8.4e8

#: Above this many prototypes :func:`spherecodes.solvers.tammes` uses neighbour
#: lists by default (below it, when the dense working set fits, it is dense).
NEIGHBOUR_MIN_K = 10_000


def neighbour_defaults(d: int, k: int) -> dict:
    """Default ``neighbours`` (m), ``refresh`` and ``steps`` of the neighbour-list path.

    * m = d, within [32, 128] and at most K − 1.  An optimised code in R^d
      has about 2d neighbours at nearly the largest cosine (a jammed code
      needs 2(d − 1) contacts per point), and with the lists made symmetric
      each row sees up to 2m pairs; a step costs time in proportion to m.
    * refresh = K / 2000, within [10, 100].  A refresh costs K² products and
      a step about 1.5·K·m, so this keeps the refreshes at roughly the cost
      of the steps between them.  Fresher lists give better codes
      (``docs/optimisers.md``): pass a smaller ``refresh`` when time allows.
    * 1000 steps: the schedule of the dense path at (64, 1000).

    Examples
    --------
    >>> neighbour_defaults(64, 100_000)
    {'neighbours': 64, 'refresh': 50, 'steps': 1000}
    >>> neighbour_defaults(512, 1_000_000)
    {'neighbours': 128, 'refresh': 100, 'steps': 1000}
    """
    return {"neighbours": int(min(k - 1, max(32, min(128, d)))), "refresh": int(min(100, max(10, k // 2000))),
            "steps": 1000}


def dense_bytes(k: int, d: int, batch: int, itemsize: int) -> float:
    """Peak working memory of the dense annealing: two K×K matrices and the vectors, per start."""
    return itemsize * batch * (2.0 * k * k + 8.0 * k * d)


def resolve_neighbours(d: int, k: int, device: str, neighbours, max_memory) -> int:
    """m for the neighbour-list path, or 0 for the dense one on ``device`` (its name: ``"cpu"``, ``"cuda:0"``),
    see :func:`spherecodes.solvers.tammes_defaults`."""
    if neighbours is not None:
        return min(check_int("neighbours", neighbours, 0), k - 1)
    itemsize = 4 if str(device).startswith("cuda") or float(k) ** 2 * d > 2e6 else 8
    if k > NEIGHBOUR_MIN_K or dense_bytes(k, d, 1, itemsize) > memory_limit(str(device), max_memory):
        return neighbour_defaults(d, k)["neighbours"]
    return 0


def annealing_budget(d: int, k: int, device: str = "cpu", neighbours: int | None = None,
                     max_memory: float | None = None) -> dict:
    """The default ``steps``, ``restarts``, ``neighbours`` (0: all pairs) and ``refresh`` of a tammes run.

    Examples
    --------
    >>> annealing_budget(3, 12)
    {'steps': 2000, 'restarts': 64, 'neighbours': 0, 'refresh': None}
    >>> annealing_budget(64, 100_000)
    {'steps': 1000, 'restarts': 1, 'neighbours': 64, 'refresh': 50}
    """
    m = resolve_neighbours(d, k, device, neighbours, max_memory)
    if m:
        large = neighbour_defaults(d, k)
        # One start at a time; the work per step is ~K·m·d, not K²·d.
        return {"steps": large["steps"], "restarts": 1, "neighbours": m, "refresh": large["refresh"]}
    work = float(k) ** 2 * d
    restarts = 64 if work <= 2e4 else 16 if work <= 2e5 else 4 if work <= 2e6 else 1
    steps = int(min(max(WORK_BUDGET / work, MIN_STEPS), MAX_STEPS))
    restarts = min(restarts, max(4, int(ANNEAL_ENTRIES // (steps * float(k) ** 2))))
    return {"steps": steps, "restarts": restarts, "neighbours": 0, "refresh": None}
