"""The record search: chains of iterated local search, run until a time budget is spent, on one process or Dask.

Past N ≈ 60 points in R^3 nearly every start of :func:`spherecodes.solvers.tammes`
ends in a local optimum of its own, and the basin of the best known code
is rarer than one start in several hundred: a hard size needs many more
polished local optima than one run gives.  :func:`record_search` runs
**chains**, each one run of :func:`spherecodes.solvers.tammes` at
``effort="record"`` (the annealed starts of ``"high"``, the polish of the
best, then rounds of perturb / re-anneal / polish,
:mod:`spherecodes.solvers._basin`, until they stop gaining) with a seed of
its own, one after the other until the budget is spent, and keeps
the best code.  Given a start code (``init``: the best code of an earlier
search, read from its bank), the even chains start from it (perturbed
copies of it, then the rounds), the odd ones from scratch: the search
resumes where the code left off.

Given the codes of the **adjacent sizes** (``adjacent``: K ± 1 or K ± 2
points in R^d, the banks of N ± 1 and N ± 2), a third kind of chain starts
from them: the best codes of neighbouring N are often close to each other
(a point or two more or less), and a record code of N + 1 less one point, or
of N - 1 with a point in one of its deepest holes, can lie in a basin that no
start from scratch finds (:func:`adjacent_starts`).  Such a chain anneals and
polishes the starts so derived, briefly, from :data:`SCREEN_RESTARTS` warm
starts each (for at most half its time, taking the codes in turn), and runs
its rounds from the best.  The chains then
take turns: from the start code, from the adjacent codes, from scratch.

Chain c of a search draws from a seed derived from (``seed``, c, and the
start code's prototypes when there is one), so the same settings give the
same chains in any order and on any worker, and a resumed search runs new
chains rather than those that made its start code.  The best code is the
chain with the smallest max-cos (float64), the lowest chain number among
equals: with a number of chains (``chains``) and no budget, one process and
a Dask cluster return the same code.  Under a budget, the chains that end
within it are the same; how many end depends on the machine.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import heavy
from ..checks import check_int, check_positive, check_seed, check_sizes
from ..cluster import check_cluster, dask_client
from ..devices import resolve_device
from ..errors import SpherecodesError
from ..sphere import normalise_rows
from ..stats import max_cos
from ._basin import contact_pairs, deepest_holes
from ._core import SolverResult, check_init
from .tammes import tammes

__all__ = ["ADJACENT_HOLES", "CHAIN_EFFORT", "SCREEN_RESTARTS", "ChainResult", "SearchProgress", "adjacent_starts",
           "chain_seed", "chain_start", "record_search", "run_chain"]

#: The effort of :func:`spherecodes.solvers.tammes` that each chain runs: in R^3 up to
#: 130 points, 512 starts then perturbation rounds until 150 in a row gain nothing,
#: elsewhere four times the default starts and 40 rounds (the CPU time a chain
#: takes: docs/optimisers.md, "Record tables").
CHAIN_EFFORT = "record"

#: The deepest holes of a code of K - 1 (or K - 2) points that each give one start of K points.
ADJACENT_HOLES = 10

#: Warm starts (the derived start and noisy copies of it) annealed for each start derived from an adjacent code.
SCREEN_RESTARTS = 4


@dataclass(frozen=True)
class ChainResult:
    """One chain's code and what it cost."""

    chain: int
    seed: int
    start: str  # "init" (the search's start code), "adjacent" (the adjacent sizes' codes) or "scratch"
    max_cos: float
    prototypes: np.ndarray
    seconds: float
    cpu_seconds: float  # of the process that ran it
    stop_reason: str
    # A chain from the adjacent sizes: the size of the code its best start came from, and the starts screened.
    screen: dict | None = None

    def to_dict(self) -> dict:
        screen = {} if self.screen is None else {"screen": self.screen}
        return {"chain": self.chain, "seed": self.seed, "start": self.start, **screen, "max_cos": self.max_cos,
                "seconds": self.seconds, "cpu_seconds": self.cpu_seconds, "stop_reason": self.stop_reason}


@dataclass(frozen=True)
class SearchProgress:
    """Sent to ``progress`` after every chain: the chain, and the best code so far."""

    chains_done: int
    chain: ChainResult
    best_max_cos: float
    best_chain: int
    elapsed: float
    budget: float | None


def chain_seed(seed: int, chain: int, init: np.ndarray | None = None) -> int:
    """The seed of chain ``chain`` of a search with ``seed`` (and start code ``init``), in [0, 2**63).

    Examples
    --------
    >>> chain_seed(0, 1) == chain_seed(0, 1), chain_seed(0, 1) == chain_seed(1, 0)
    (True, False)
    """
    entropy = [seed, chain]
    if init is not None:
        digest = hashlib.sha256(np.ascontiguousarray(init, dtype=np.float64).tobytes()).digest()
        entropy.extend(np.frombuffer(digest[:16], dtype=np.uint32).tolist())
    low, high = np.random.SeedSequence(entropy).generate_state(2, dtype=np.uint32)
    return (int(high) << 31) ^ int(low)


def chain_start(chain: int, init: bool, adjacent: bool) -> str:
    """Where chain ``chain`` of a search starts: ``"init"``, ``"adjacent"`` or ``"scratch"``, in turns.

    The turns are those of the start kinds the search has, in the order
    start code, adjacent codes, scratch.

    Examples
    --------
    >>> [chain_start(c, True, False) for c in range(3)]
    ['init', 'scratch', 'init']
    >>> [chain_start(c, True, True) for c in range(4)]
    ['init', 'adjacent', 'scratch', 'init']
    """
    turns = [kind for kind, present in (("init", init), ("adjacent", adjacent), ("scratch", True)) if present]
    return turns[chain % len(turns)]


def adjacent_starts(codes, k: int, seed: int) -> list[tuple[int, np.ndarray]]:
    """Starts of K points derived from codes of K ± 1 and K ± 2 points, one code's start after another's.

    Returns (the size of the code it came from, the start) for each start.

    * K + 1 points: K + 1 starts, each of its points left out in turn.
    * K + 2 points: one start per contact pair
      (:func:`spherecodes.solvers._basin.contact_pairs`) with both its points
      left out, so that the room freed is in one place.
    * K - 1 points: :data:`ADJACENT_HOLES` starts, a point added at each of
      its deepest holes (:func:`spherecodes.solvers._basin.deepest_holes`).
    * K - 2 points: as for K - 1, then a second point at the deepest hole of each.

    Each code's starts come in an order drawn from ``seed``, and the codes
    take turns, so that a screen cut short by its time limit has tried
    every code.

    Examples
    --------
    >>> import numpy as np
    >>> square = np.array([[1.0, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]])
    >>> starts = adjacent_starts([square], 5, seed=0) + adjacent_starts([square], 3, seed=0)
    >>> len(starts), sorted({s.shape for _, s in starts})
    (14, [(3, 3), (5, 3)])
    >>> [size for size, _ in adjacent_starts([square, np.vstack([square, [0, 0, 1]])], 3, seed=0)][:4]
    [4, 5, 4, 5]
    """
    rng = np.random.default_rng([seed, 5])
    turns = []
    for code in codes:
        if len(code) > k:
            drops = range(len(code)) if len(code) == k + 1 else contact_pairs(code)
            starts = [np.delete(code, drop, axis=0) for drop in drops]
        else:
            starts = [np.vstack([code, hole]) for hole in deepest_holes(code, ADJACENT_HOLES, rng)]
            if len(code) == k - 2:
                starts = [np.vstack([start, deepest_holes(start, 1, rng)]) for start in starts]
        turns.append([(len(code), starts[i]) for i in rng.permutation(len(starts))])
    return [start for turn in itertools.zip_longest(*turns) for start in turn if start is not None]


def _best_adjacent_start(d: int, k: int, adjacent, seed: int, time_limit: float | None, device: str,
                         options: dict) -> tuple[np.ndarray, dict, bool]:
    """The best code of the starts derived from the adjacent codes, each annealed and polished briefly from
    :data:`SCREEN_RESTARTS` warm starts, within ``time_limit`` (at least one); what the screen did (the size of
    the code the best came from, the starts screened, of how many); and whether Ctrl-C ended it."""
    began = time.perf_counter()
    screen = {**options, "restarts": SCREEN_RESTARTS, "perturb_rounds": 0}
    starts = adjacent_starts(adjacent, k, seed)
    best, best_size, screened, interrupted = None, None, 0, False
    for size, start in starts:
        left = None if time_limit is None else time_limit - (time.perf_counter() - began)
        if best is not None and left is not None and left <= 0:
            break
        result = tammes(d, k, seed=seed, init=start, time_limit=None if left is None else max(left, 1e-3),
                        device=device, **screen)
        screened += 1
        interrupted = result.stop_reason == "interrupted"
        if best is None or result.max_cos < best.max_cos:
            best, best_size = result, size
        if interrupted:
            break
    summary = {"from_size": best_size, "screened": screened, "starts": len(starts)}
    return best.prototypes, summary, interrupted


def run_chain(d: int, k: int, seed: int, chain: int, init: np.ndarray | None, time_limit: float | None,
              device: str, options: dict | None = None, adjacent=()) -> ChainResult:
    """Chain ``chain`` of a search: one :func:`tammes` run at :data:`CHAIN_EFFORT` (the body of a Dask task).

    It starts where :func:`chain_start` says: from ``init``, from the best
    start derived from the ``adjacent`` codes (screened for at most half of
    ``time_limit``), or from scratch.  ``options`` go to :func:`tammes` as
    they are (``restarts``, ``perturb_rounds``, ...).
    """
    began, cpu_began = time.perf_counter(), time.process_time()
    start = chain_start(chain, init is not None, bool(adjacent))
    own_seed = chain_seed(seed, chain, init)
    options = options or {}
    code, screen = (init if start == "init" else None), None
    if start == "adjacent":
        code, screen, interrupted = _best_adjacent_start(d, k, adjacent, own_seed, None if time_limit is None else
                                                         time_limit / 2, device, options)
        if interrupted:
            return ChainResult(chain, own_seed, start, max_cos(code), code, time.perf_counter() - began,
                               time.process_time() - cpu_began, "interrupted", screen)
    left = None if time_limit is None else max(time_limit - (time.perf_counter() - began), 1e-3)
    result = tammes(d, k, seed=own_seed, effort=CHAIN_EFFORT, init=code, time_limit=left, device=device, **options)
    return ChainResult(chain, own_seed, start, float(result.max_cos), result.prototypes,
                       time.perf_counter() - began, time.process_time() - cpu_began, result.stop_reason, screen)


def record_search(
    d: int,
    k: int,
    *,
    seed: int = 0,
    time_budget: float | None = None,
    chains: int | None = None,
    init: np.ndarray | None = None,
    adjacent=(),
    device: str = "cpu",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[SearchProgress], None] | None = None,
    **chain_options,
) -> SolverResult:
    """Search for the best code of K points in R^d with chains of iterated local search until the budget is spent.

    Parameters
    ----------
    d, k : int
        Dimension and number of points.
    seed : int
        Seed of the search; chain c runs with :func:`chain_seed`.
    time_budget : float, optional
        Seconds: no chain starts after them, and each chain is given the
        time left as its ``time_limit``, so the search ends within the
        budget (plus the re-measurement of the last chains' codes).
    chains : int, optional
        Chains to run at most.  At least one of ``time_budget`` and
        ``chains`` is needed.
    init : array_like, optional
        A start code (K, d): the even chains start from it, and the result
        is never worse than it.  Give the best code of an earlier search to
        resume it.
    adjacent : sequence of array_like, optional
        Codes of K ± 1 or K ± 2 points in R^d (the best codes of the adjacent
        sizes): every third chain (every second without ``init``) starts from
        the best start derived from them (:func:`adjacent_starts`).
    device : str
        Where each chain's annealing runs.
    workers : int, optional
        Run the chains on a local Dask cluster of this many worker processes
        (one chain each at a time).
    scheduler : str, optional
        Run the chains on an existing Dask cluster, given its scheduler's address.
    progress : callable, optional
        Called with a :class:`SearchProgress` after every chain.
    **chain_options
        Passed to every chain's :func:`spherecodes.solvers.tammes` (``restarts``,
        ``steps``, ``perturb_rounds``, ...; ``effort``, ``seed``, ``init``,
        ``time_limit`` and ``device`` are the search's).

    Returns
    -------
    SolverResult
        The best chain's code; ``restarts`` is the number of chains run,
        ``best_restart`` the best chain, and ``settings["record_search"]``
        lists every chain (seed, max-cos, seconds, CPU seconds, why it stopped).

    Raises
    ------
    SpherecodesError
        Neither a budget nor a number of chains, bad sizes or start code, or
        both ``workers`` and ``scheduler``.

    Examples
    --------
    >>> res = record_search(3, 13, chains=2, restarts=16, steps=200, perturb_rounds=2)  # short chains
    >>> res.restarts, len(res.settings["record_search"]["chains"]), res.max_cos < 0.55
    (2, 2, True)
    """
    begin = time.perf_counter()
    d, k = check_sizes(d, k)
    seed = check_seed(seed)
    if time_budget is None and chains is None:
        raise SpherecodesError("a record search runs until its budget is spent: give a time budget in seconds "
                               "(--time-limit) or a number of chains (--restarts)")
    budget = None if time_budget is None else check_positive("time_budget", time_budget)
    limit = math.inf if chains is None else check_int("chains", chains, 1)
    check_cluster(workers, scheduler)
    init = None if init is None else normalise_rows(check_init(init, d, k))
    adjacent = _check_adjacent(adjacent, d, k)
    device = str(resolve_device(device))
    taken = {"effort", "seed", "init", "time_limit", "device"} & set(chain_options)
    if taken:
        raise SpherecodesError(f"{', '.join(sorted(taken))} of the chains are the search's own; give them to the "
                               "search, not as chain options")
    results: list[ChainResult] = []
    best: list[ChainResult] = []

    def remaining() -> float | None:
        return None if budget is None else budget - (time.perf_counter() - begin)

    def may_start(started: int) -> bool:
        # The first chain always runs, so that there is a code however small the budget.
        left = remaining()
        return started < limit and (started == 0 or left is None or left > 0)

    def record(done: ChainResult) -> None:
        results.append(done)
        if not best or (done.max_cos, done.chain) < (best[0].max_cos, best[0].chain):
            best[:] = [done]
        if progress is not None:
            progress(SearchProgress(len(results), done, best[0].max_cos, best[0].chain,
                                    time.perf_counter() - begin, budget))

    def time_left() -> float | None:
        left = remaining()
        return None if left is None else max(left, 1e-3)

    interrupted = False
    try:
        if workers is None and scheduler is None:
            while may_start(len(results)):
                record(run_chain(d, k, seed, len(results), init, time_left(), device, chain_options, adjacent))
                if results[-1].stop_reason == "interrupted":
                    interrupted = True
                    break
        else:
            _run_on_dask(d, k, seed, init, adjacent, device, chain_options, workers, scheduler, may_start,
                         time_left, record, limit)
    except KeyboardInterrupt:
        interrupted = True  # the chains that ended are kept
    if not results:
        raise KeyboardInterrupt  # nothing ended: nothing to return
    chosen = best[0]
    stop_reason = ("interrupted" if interrupted else "time_limit" if budget is not None and remaining() <= 0
                   else "steps")
    wall = time.perf_counter() - begin
    records = sorted((r.to_dict() for r in results), key=lambda r: r["chain"])
    settings = {
        "method": "tammes", "d": d, "k": k, "seed": seed, "effort": "record", "time_limit": budget,
        "device": device, "init": None if init is None else "array",
        "record_search": {"chain_effort": CHAIN_EFFORT, "chains_asked": None if chains is None else int(chains),
                          "adjacent_sizes": [len(code) for code in adjacent], "chain_options": chain_options,
                          "workers": workers, "scheduler": scheduler is not None,
                          "chains": records,
                          "cpu_seconds": sum(r.cpu_seconds for r in results)},
    }
    stages = [{"stage": "search", "starts": len(results), "steps": len(results), "seconds": wall,
               "max_cos": chosen.max_cos}]
    detail = ""
    if stop_reason == "time_limit":
        detail = f"ran {len(results)} chains in the budget of {budget:.3g} s; the best code is returned"
    elif interrupted:
        detail = f"interrupted (Ctrl-C) after {len(results)} chains; the best code so far is returned"
    history = np.array([(r.chain, r.max_cos, min(x.max_cos for x in results[:i + 1]))
                        for i, r in enumerate(results)], dtype=np.float64).reshape(-1, 3)
    return SolverResult(prototypes=chosen.prototypes, method="tammes", max_cos=chosen.max_cos, history=history,
                        restarts=len(results), best_restart=chosen.chain, steps=len(results), wall_time=wall,
                        device=device, stop_reason=stop_reason, settings=settings, stages=stages,
                        stop_detail=detail)


def _check_adjacent(adjacent, d: int, k: int) -> tuple[np.ndarray, ...]:
    """The adjacent codes as float64 unit rows, each of K ± 1 or K ± 2 points in R^d."""
    codes = []
    for code in adjacent or ():
        code = np.asarray(code, dtype=np.float64)
        if code.ndim != 2 or code.shape[1] != d or abs(len(code) - k) not in (1, 2) or len(code) < 2:
            sizes = ", ".join(str(n) for n in (k - 2, k - 1, k + 1, k + 2) if n >= 2)
            raise SpherecodesError(f"adjacent codes hold K ± 1 or K ± 2 points in R^{d} ({sizes} rows of {d}); "
                                   f"one has shape {code.shape}")
        try:
            codes.append(normalise_rows(check_init(code, d, len(code))))
        except SpherecodesError as error:
            reason = str(error).removeprefix("init: ")
            raise SpherecodesError(f"adjacent code of {len(code)} points: {reason}") from None
    return tuple(codes)


def _run_on_dask(d, k, seed, init, adjacent, device, options, workers, scheduler, may_start, time_left, record,
                 limit) -> None:
    """Keep every worker busy with one chain until no more may start; ``record`` each as it ends."""
    as_completed = heavy.distributed().as_completed

    tasks = None if math.isinf(limit) else int(limit)
    with dask_client(scheduler, workers, processes=True, tasks=tasks) as (client, _threads):
        slots = max(1, len(client.scheduler_info().get("workers", {})))
        started = 0
        pending = as_completed()

        def submit() -> None:
            nonlocal started
            pending.add(client.submit(run_chain, d, k, seed, started, init, time_left(), device, options, adjacent,
                                      pure=False, key=f"spherecodes-chain-{d}-{k}-{seed}-{started}-{time.time_ns()}"))
            started += 1

        while started < slots and may_start(started):
            submit()
        for future in pending:
            record(future.result())
            if may_start(started):
                submit()
