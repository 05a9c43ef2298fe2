"""Neighbour lists: optimise codes with very many prototypes in O(K·(d + m)) memory.

Only near pairs matter for max-cos: at the end of the annealing of
:func:`spherecodes.solvers.tammes` a pair whose cosine is 0.05 below the
maximum has a weight of ``exp(-0.05 t)``, below 1e-70.  So instead of the
K×K matrix of all cosines, each prototype keeps its ``m`` nearest prototypes,
found among *all* K by a blocked matrix product (:func:`spherecodes.sphere.top_matches`), and
the smoothed maximum is taken over the pairs of those lists, made symmetric:

    f_t(P) = (1/t) log Σ_i Σ_{j ∈ U(i)} exp(t <p_i, p_j>),
    U(i) = N(i) ∪ {l : i ∈ N(l)},

with ``N(i)`` the m nearest prototypes of i when the lists were last
refreshed.  Its gradient for row i is a sum over ``U(i)`` only, so every row is
computed from a gather of its own list: no scatter-add (whose CUDA atomics
would make the result depend on timing) and no K×K array anywhere.  With
``m = K − 1`` the objective is exactly the dense one.

The lists are refreshed every ``refresh`` steps, unless they are provably
still complete (:func:`_still_complete`): a pair outside them had a cosine
of at most ``τ_i`` (the m-th nearest cosine of i at the refresh), and moving
the two points by ``δ_i`` and ``δ_j`` changes a cosine by at most
``δ_i + δ_j``.  The same bound says when the maximum over the lists is the
true max-cos, which is when the best iterate is recorded.  Everything is
torch on the CPU or a CUDA device and deterministic; docs/optimisers.md
("Large K") has the steps and the measurements.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..budget import NEIGHBOUR_MIN_K, neighbour_defaults
from ..devices import timed_call
from ..sphere import top_matches
from ._core import DTYPES, EXP_FLOOR, Batch, Clock, Schedule, geometric, riemannian_adam_step, run_steps

__all__ = [
    "LIST_TOLERANCE", "NEIGHBOUR_MIN_K", "NeighbourPlan", "anneal_neighbours", "neighbour_defaults", "neighbour_plan",
    "neighbour_seconds",
]

#: Total weight, relative to the largest pair's, that the pairs outside the
#: lists may have before the lists must be refreshed.
LIST_TOLERANCE = 1e-6

#: Bytes of the block of similarities that a refresh computes at a time, by
#: device type.  On a CPU whole rows (one top-m per row, nothing to merge) of
#: a few hundred prototypes are as fast as anything larger; a GPU needs large
#: products to be busy.
REFRESH_BLOCK_BYTES = {"cpu": 128 * 2**20, "cuda": 2 * 2**30}

#: Bytes of the gathered neighbour vectors of one chunk of rows in a step.
STEP_CHUNK_BYTES = {"cpu": 64 * 2**20, "cuda": 512 * 2**20}

#: Time kept out of a schedule under a deadline for the work after the last
#: step, in units of the first refresh: the closing refresh (one) and the
#: float64 re-measurement of the result in ``tammes``, which takes less than
#: a refresh (figures in benchmarks/README.md, "tammes: estimates and budgets").
CLOSING_REFRESHES = 2

#: Under a deadline, the steps between refreshes take at most this fraction
#: of the time of a refresh: a compressed schedule has only tens of steps at
#: K = 10⁵, so the lists would go stale fast (docs/optimisers.md, "Time limit").
DEADLINE_STEP_SHARE = 0.6

#: Rows per block of the Adam update (bounds its temporaries).
_ADAM_ROWS = 65536


# --------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class NeighbourPlan:
    """Block sizes and memory estimate of a neighbour-list run.

    Attributes
    ----------
    k, d, m : int
        Prototypes, dimension, and nearest prototypes kept per prototype.
    itemsize : int
        Bytes per number in the working precision (4 or 8).
    refresh_rows, refresh_cols : int
        The block of the similarity matrix that a refresh computes at a time.
    chunk_elements : int
        Numbers in the gathered neighbour vectors of one chunk of rows.
    nbytes : int
        Estimated peak working memory on the device.
    parts : dict
        The estimate by part: ``vectors``, ``lists``, ``blocks``, ``sort``, ``step``.
    """

    k: int
    d: int
    m: int
    itemsize: int
    refresh_rows: int
    refresh_cols: int
    chunk_elements: int
    nbytes: int
    parts: dict


def neighbour_plan(
    d: int, k: int, m: int, itemsize: int, *, device: str | torch.device = "cpu", limit: float | None = None
) -> NeighbourPlan:
    """Choose the block sizes of a neighbour-list run and estimate its peak memory.

    The estimate is ``vectors + lists + blocks + max(sort, step)``: the
    iterate and its companions (6·K·d numbers), the symmetric lists, the
    block of a refresh and the buffer of a step (:data:`REFRESH_BLOCK_BYTES`,
    :data:`STEP_CHUNK_BYTES`, smaller when the limit requires it), and the
    larger of the sort that makes the lists symmetric and a step's
    temporaries; each term is spelled out in docs/optimisers.md ("Memory and
    time, before the work").

    Parameters
    ----------
    d, k, m : int
        Dimension, prototypes, and nearest prototypes per prototype (<= K - 1).
    itemsize : int
        4 (float32) or 8 (float64).
    device : str or torch.device
        Where it runs (sets the default block sizes).
    limit : float, optional
        Bytes available; the blocks shrink (down to a minimum) to fit.

    Returns
    -------
    NeighbourPlan

    Examples
    --------
    >>> plan = neighbour_plan(64, 100_000, 32, 4)
    >>> plan.refresh_cols, plan.nbytes < 2**30
    (100000, True)
    """
    kind = "cuda" if torch.device(device).type == "cuda" else "cpu"
    vectors = 6 * k * d * itemsize
    lists = 2 * k * m * 9 + 64 * k
    sort = 11 * k * m * 8
    block_bytes = REFRESH_BLOCK_BYTES[kind]
    chunk_bytes = STEP_CHUNK_BYTES[kind]
    adam = 4 * min(k, _ADAM_ROWS) * d * itemsize
    if limit is not None:
        # What the persistent arrays and the sort leave goes to the blocks, up
        # to their default sizes (larger blocks gain nothing measurable).
        spare = max(limit - vectors - lists - max(sort, adam), 0.0)
        block_bytes = min(block_bytes, spare / 2)
        chunk_bytes = min(chunk_bytes, spare / 4)
    # Whole rows of similarities when 64 of them fit; otherwise tiles of columns.
    refresh_cols = int(min(k, max(1024, block_bytes // (64 * itemsize))))
    refresh_rows = int(max(1, min(k, block_bytes // (refresh_cols * itemsize))))
    chunk_elements = int(max(2 * m * d, chunk_bytes // itemsize))
    chunk_rows = max(1, chunk_elements // (2 * m * d))
    # topk of a block: values and indices of m per row, twice while merging tiles.
    blocks = (refresh_rows * (refresh_cols * itemsize + 4 * m * (itemsize + 8)) + chunk_elements * itemsize)
    step = chunk_rows * 2 * m * (2 * itemsize + 17) + adam
    parts = {"vectors": vectors, "lists": lists, "blocks": blocks, "sort": sort, "step": step}
    nbytes = vectors + lists + blocks + max(sort, step)
    return NeighbourPlan(k, d, m, itemsize, refresh_rows, refresh_cols, chunk_elements, int(nbytes), parts)


def neighbour_seconds(cfg, plan: NeighbourPlan, device: torch.device) -> float:
    """Expected seconds of a neighbour-list annealing: its work, timed on a sample of it.

    One refresh block against up to 32,768 random prototypes, one chunk of a
    step (gather, two batched products, the weights) and one Adam update of
    that chunk are timed on ``device`` (about a second in all) and scaled to
    K: a refresh costs ~K² products and a step ~K·(3m/2) gathered pairs (the
    mean length of the symmetric lists).  Every scheduled refresh is counted,
    so the figure errs on the long side when refreshes are skipped.
    """
    dtype = DTYPES[cfg.dtype]
    k, d, m = plan.k, plan.d, plan.m
    generator = torch.Generator().manual_seed(0)
    n_keys = min(k, 32768)
    keys = torch.nn.functional.normalize(torch.randn(n_keys, d, generator=generator, dtype=dtype), dim=1).to(device)
    rows = min(plan.refresh_rows, 256, n_keys)
    scratch = torch.empty(rows * n_keys, dtype=dtype, device=device)
    block = timed_call(lambda: top_matches(keys[:rows], keys, min(m, n_keys - 1), buffer=scratch), device)
    refresh = block * (k / rows) * (k / n_keys)
    width = max(1, (3 * m) // 2)
    n = max(1, min(4096, plan.chunk_elements // (width * d)))
    index = torch.randint(0, n_keys, (n, width), generator=generator).to(device)
    own = torch.arange(n, device=device) % n_keys
    gathered = torch.empty(n * width * d, dtype=dtype, device=device)

    def chunk():
        vectors = torch.index_select(keys, 0, index.view(-1), out=gathered.view(n * width, d)).view(n, width, d)
        cosines = torch.bmm(vectors, keys[own].unsqueeze(2)).squeeze(2)
        weights = cosines.sub_(cosines.amax(1, keepdim=True)).mul_(10.0).exp_()
        return torch.bmm(weights.unsqueeze(1), vectors)

    state = [keys[own].clone(), torch.randn(n, d, generator=generator, dtype=dtype).to(device)]
    moments = [torch.zeros_like(state[0]), torch.zeros_like(state[0])]
    adam = timed_call(lambda: riemannian_adam_step(state[0], state[1].clone(), *moments, 1, 1e-3,
                                                   cfg.beta1, cfg.beta2, cfg.eps), device)
    step = (timed_call(chunk, device) + adam) * k / n
    refreshes = math.ceil(cfg.steps / cfg.refresh) + 1
    return cfg.steps * step + refreshes * refresh


# --------------------------------------------------------------------------- lists


@dataclass
class _Lists:
    """The symmetric neighbour lists, as padded chunks of rows of similar length.

    Chunk c holds rows ``rows[c]`` (int64, B), their neighbours ``index[c]``
    (int64, B × W, padded with the row itself) and ``valid[c]`` (bool, B × W).
    ``tau[i]`` is the m-th largest cosine of row i at the refresh (−inf when
    the lists hold every pair).
    """

    rows: list
    index: list
    valid: list
    tau: torch.Tensor


def _refresh(x: torch.Tensor, plan: NeighbourPlan, scratch: torch.Tensor) -> _Lists:
    """The m nearest prototypes of every row among all K, made symmetric, in chunks."""
    k = x.shape[0]
    m = plan.m
    dev = x.device
    forward = torch.empty(k, m, dtype=torch.long, device=dev)
    tau = torch.empty(k, dtype=x.dtype, device=dev)
    for r0 in range(0, k, plan.refresh_rows):
        r1 = min(r0 + plan.refresh_rows, k)
        own = torch.arange(r0, r1, device=dev)[:, None]
        values, indices = top_matches(x[r0:r1], x, m, exclude=own, tile=plan.refresh_cols, buffer=scratch)
        forward[r0:r1] = indices
        tau[r0:r1] = values[:, -1]
    if m >= k - 1:
        tau.fill_(-math.inf)  # every pair is listed: nothing lies outside
    offsets, flat, degree = _symmetric(forward)
    del forward
    return _chunks(offsets, flat, degree, x.shape[1], plan.chunk_elements, tau)


def _symmetric(forward: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CSR form of the pairs ``{i, j}`` with ``j`` in ``forward[i]`` or ``i`` in ``forward[j]``.

    Returns offsets (K + 1), the neighbours of all rows one after the other
    (each row's sorted, no repeats), and the degrees.  A sort of pair keys
    ``i·K + j`` does the work; it is deterministic on every device.
    """
    k, m = forward.shape
    source = torch.arange(k, device=forward.device).repeat_interleave(m)
    target = forward.reshape(-1)
    keys = torch.unique(torch.cat([source * k + target, target * k + source]))
    del source, target
    source = torch.div(keys, k, rounding_mode="floor")
    flat = keys - source * k
    del keys
    # Every row has at least m >= 1 neighbours, so every row has a count.
    degree = torch.unique_consecutive(source, return_counts=True)[1]
    offsets = torch.zeros(k + 1, dtype=torch.long, device=forward.device)
    torch.cumsum(degree, 0, out=offsets[1:])
    return offsets, flat, degree


def _chunks(offsets, flat, degree, d: int, chunk_elements: int, tau: torch.Tensor) -> _Lists:
    """Split the rows, in order of degree, into chunks whose padded gathers fit ``chunk_elements``."""
    dev = flat.device
    order = torch.argsort(degree, stable=True)
    sorted_degree = degree[order].cpu().numpy()
    k = len(sorted_degree)
    rows, index, valid = [], [], []
    a = 0
    while a < k:
        # The largest b with (b - a) * degree[b - 1] * d <= chunk_elements (at least one row).
        lo, hi = a + 1, k
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if (mid - a) * int(sorted_degree[mid - 1]) * d <= chunk_elements:
                lo = mid
            else:
                hi = mid - 1
        b = lo
        width = int(sorted_degree[b - 1])
        members = order[a:b]
        slots = torch.arange(width, device=dev)
        ok = slots[None, :] < degree[members][:, None]
        position = (offsets[members][:, None] + slots[None, :]).clamp_(max=len(flat) - 1)
        rows.append(members)
        index.append(torch.where(ok, flat[position], members[:, None]))
        valid.append(ok)
        a = b
    return _Lists(rows, index, valid, tau)


# --------------------------------------------------------------------------- annealing


def anneal_neighbours(
    start: np.ndarray,
    t_start: float,
    cfg,
    plan: NeighbourPlan,
    device: torch.device,
    first_restart: int,
    clock: Clock,
    history: list,
    step_offset: int,
    deadline: float = math.inf,
    frozen: np.ndarray | None = None,
) -> Batch:
    """Anneal one start on the pairs of its neighbour lists (the large-K path of ``tammes``).

    The schedule of the dense annealing of :func:`spherecodes.solvers.tammes`
    on the smoothed maximum over the symmetric neighbour lists, refreshed
    every ``cfg.refresh`` steps.  The best iterate is taken among those whose
    maximum over the lists is provably the true max-cos; the last iterate is
    measured with fresh lists.  Ctrl-C ends the annealing early and keeps
    the best iterate so far (``interrupted``).  ``deadline`` (a
    ``time.perf_counter()`` value) compresses the schedule into the time
    available less :data:`CLOSING_REFRESHES` refreshes, and refreshes the
    lists at least once the steps since the last refresh have taken
    :data:`DEADLINE_STEP_SHARE` of its time.  Rows ``frozen`` do not move.
    """
    dtype = DTYPES[cfg.dtype]
    steps = cfg.steps
    k, d = start.shape
    x = torch.tensor(start, dtype=dtype, device=device)
    best_x = x.clone()
    best_val = torch.tensor(math.inf, dtype=dtype, device=device)
    moment1 = torch.zeros_like(x)
    moment2 = torch.zeros_like(x)
    grad = torch.empty_like(x)
    held = None if frozen is None else torch.as_tensor(frozen, device=device)
    ref = torch.empty_like(x)
    per_row = torch.empty(3, k, dtype=dtype, device=device)  # row maximum, row sum, displacement
    scratch = torch.empty(plan.refresh_rows * plan.refresh_cols, dtype=dtype, device=device)
    gathered = torch.empty(plan.chunk_elements, dtype=dtype, device=device)
    # A cosine computed in this precision may be off by about d·eps.
    rounding = 2 * d * torch.finfo(dtype).eps
    outside = 2 * math.log(k) + math.log(1 / LIST_TOLERANCE)

    schedule = Schedule(steps, deadline)

    timing = {"refresh": 0.0, "steps": 0.0}  # seconds of the last refresh, and of the steps since

    def refresh() -> _Lists:
        nonlocal refreshes
        began = time.perf_counter()
        refreshes += 1
        lists = _refresh(x, plan, scratch)
        ref.copy_(x)
        timing.update(refresh=time.perf_counter() - began, steps=0.0)
        if refreshes == 1:
            # Keep the closing refresh and the re-measurement out of the schedule.
            schedule.deadline -= CLOSING_REFRESHES * timing["refresh"]
        return lists

    def keep_if_best(top, bound) -> None:
        nonlocal best_val
        improved = (bound + rounding < top) & (top < best_val)
        best_val = torch.where(improved, top, best_val)
        torch.where(improved, x, best_x, out=best_x)

    state = {"lists": None, "top": None, "total": None, "t": None}
    since = refreshes = 0

    def step(i: int, frac: float) -> None:
        nonlocal since
        began = time.perf_counter()
        t = geometric(t_start, cfg.t_end, frac)
        lr = geometric(cfg.lr_start, cfg.lr_end, frac)
        interval = cfg.refresh
        if since and not math.isinf(deadline):
            # As many steps as take DEADLINE_STEP_SHARE of a refresh's time, at their mean time since it.
            mean_step = max(timing["steps"] / since, 1e-9)
            interval = max(1, min(interval, int(DEADLINE_STEP_SHARE * timing["refresh"] / mean_step)))
        # Where the schedule will be at the next scheduled refresh (under a
        # deadline: at the pace so far, if that is faster than the steps').
        ahead = (i + interval) / max(steps - 1, 1)
        if i and not math.isinf(deadline):
            ahead = max(ahead, frac * (i + interval) / i)
        ahead = min(1.0, ahead)
        if state["lists"] is None or (
            since >= interval
            and not _still_complete(state["top"], per_row[2], state["lists"].tau, geometric(t_start, cfg.t_end, ahead),
                                    outside, rounding)
        ):
            state["lists"] = None  # free the old lists before the new ones are built
            state["lists"] = refresh()
            since = 0
            began = time.perf_counter()
        since += 1
        top, total, bound = _pair_pass(x, ref, state["lists"], t, grad, per_row, gathered)
        state.update(top=top, total=total, t=t)
        keep_if_best(top, bound)
        if held is not None:
            grad[held] = 0.0
        for a in range(0, k, _ADAM_ROWS):
            b = min(a + _ADAM_ROWS, k)
            riemannian_adam_step(x[a:b], grad[a:b], moment1[a:b], moment2[a:b], i, lr, cfg.beta1, cfg.beta2, cfg.eps)
        if not math.isinf(deadline):
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # the step's time, not its launch's
            timing["steps"] += time.perf_counter() - began

    def log(done: int) -> None:
        # log(total / 2): the lists hold every pair in both directions.
        smooth = float(state["top"] + torch.log(state["total"] / 2) / state["t"])
        history.append((step_offset + done, smooth, float(best_val)))
        clock.report(first_restart, done, steps, float(best_val))

    end = run_steps(steps, clock, step, log, log_every=cfg.log_every, catch_interrupt=True, schedule=schedule)
    interrupted = end.interrupted
    if end.done and not end.timed_out and not interrupted:
        try:
            # The last update has not been measured yet: measure it with fresh lists.
            state["lists"] = None
            state["lists"] = refresh()
            keep_if_best(*_pair_pass(x, ref, state["lists"], cfg.t_end, grad, per_row, gathered)[::2])
        except KeyboardInterrupt:
            interrupted = True
    return Batch(best_x.double().cpu().numpy()[None], end.done, end.timed_out, interrupted, refreshes, end.compressed)


def _pair_pass(x, ref, lists: _Lists, t: float, grad, per_row, gathered):
    """Gradient of the smoothed maximum over the lists, the maximum, the sum, and the staleness bound.

    Each chunk gathers its rows' neighbours once and uses them twice: for the
    cosines and for the gradient ``Σ_j w_ij p_j``.  The weights are first
    shifted by each row's own maximum; the factors ``exp(t (max_i − max))``
    that make them global are applied once all rows are done, so nothing
    overflows and no second pass over the lists is needed.

    Returns (max over the listed pairs, Σ of the weights, bound): every
    unlisted pair has a cosine of at most ``bound`` (0-d tensors, no host sync).
    """
    d = x.shape[1]
    row_max, row_sum, moved = per_row
    for rows, index, valid in zip(lists.rows, lists.index, lists.valid):
        n, width = index.shape
        vectors = gathered[: n * width * d].view(n * width, d)
        torch.index_select(x, 0, index.view(-1), out=vectors)
        vectors = vectors.view(n, width, d)
        own = x.index_select(0, rows)
        cosines = torch.bmm(vectors, own.unsqueeze(2)).squeeze(2).masked_fill_(~valid, -math.inf)
        top = cosines.amax(dim=1)
        weights = cosines.sub_(top[:, None]).mul_(t).clamp_(min=EXP_FLOOR).exp_().masked_fill_(~valid, 0.0)
        row_max.index_copy_(0, rows, top)
        row_sum.index_copy_(0, rows, weights.sum(dim=1))
        grad.index_copy_(0, rows, torch.bmm(weights.unsqueeze(1), vectors).squeeze(1))
        moved.index_copy_(0, rows, (own - ref.index_select(0, rows)).norm(dim=1))
    top = row_max.max()
    factor = row_max.sub(top).mul_(t).clamp_(min=EXP_FLOOR).exp_()
    total = (factor * row_sum).sum()
    grad.mul_((factor / total).unsqueeze(1))
    # An unlisted pair (i, j) had cosine <= tau_i at the refresh and each end
    # has moved by at most its displacement since.
    bound = (lists.tau + moved).max() + moved.max()
    return top, total, bound


def _still_complete(top, moved, tau, t_next: float, outside_log: float, rounding: float) -> bool:
    """Whether the lists will still hold every pair that matters at the next scheduled refresh.

    The unlisted pairs are bounded assuming the points move again as much as
    they did since the refresh; at sharpness ``t_next`` all of them (fewer
    than K²) must weigh less than :data:`LIST_TOLERANCE` of the largest pair.
    """
    future = (tau + 2 * moved).max() + 2 * moved.max()
    return bool(t_next * (top - future - rounding) >= outside_log)
