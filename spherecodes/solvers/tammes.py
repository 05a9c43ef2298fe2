"""The Tammes problem: minimise the largest cosine between K unit vectors in R^d.

:func:`tammes` anneals a log-sum-exp smoothing of max-cos (Mettes, van der
Pol & Snoek 2019, Eq. 4) over all pairs (here) or over neighbour lists
(:mod:`spherecodes.solvers._neighbours`), from random, symmetric
(:mod:`spherecodes.solvers._symmetric`) or given starts, then sharpens and
polishes the best few (:mod:`spherecodes.solvers._polish`) and, with more
effort, perturbs and re-polishes the best (:mod:`spherecodes.solvers._basin`).
``docs/optimisers.md`` describes the algorithm, its defaults and measurements.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from ..checks import check_sizes
from ..devices import resolve_device, timed_call, torch_threads
from ..memory import Estimate, memory_limit, process_peak, require_memory
from ..sphere import normalise_rows, random_start
from ..stats import max_cos
from ._basin import LOCAL_STEPS, perturbation_rounds, round_batch
from ._core import (
    DTYPES, EXP_FLOOR, Batch, Clock, PolishBudget, Progress, Schedule, SolverResult, batch_size, check_common,
    check_frozen, check_init, closed_form_optimum, closed_form_result, hold, riemannian_adam_step, run_steps,
)
from ._neighbours import anneal_neighbours, neighbour_plan, neighbour_seconds
from ._options import TammesSettings, dense_bytes
from ._polish import DENSE_CONTACTS, PairCosines, polish, solve_contacts
from ._symmetric import orbit_choices, symmetric_start

__all__ = ["tammes", "tammes_estimate", "tammes_memory"]


def tammes(
    d: int,
    k: int,
    *,
    seed: int = 0,
    steps: int | None = None,
    restarts: int | None = None,
    time_limit: float | None = None,
    device: str | torch.device = "auto",
    progress: Callable[[Progress], None] | None = None,
    init: np.ndarray | None = None,
    effort: str = "default",
    frozen: np.ndarray | None = None,
    **options,
) -> SolverResult:
    """Minimise the largest cosine between K unit vectors in R^d (Tammes problem).

    Anneals a log-sum-exp smoothing of max-cos over all pairs with Riemannian
    Adam from several random starts (batched on small problems), then
    sharpens the best few (more steps with the smoothing tightening further,
    in float64) and polishes them by sequential linear programming on the
    near-active pairs until max-cos stops improving.  Where a provably optimal closed form exists
    (K <= 2d, d <= 2) it is returned directly unless ``closed_form=False``.
    For large K (above 10,000, or where the K×K matrices do not fit) the
    pairs are each prototype's nearest ones, kept in neighbour lists
    (:mod:`spherecodes.solvers._neighbours`), so memory is O(K·(d + m)).  Ctrl-C
    returns the best code so far (``stop_reason="interrupted"``).

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
    seed : int
        Seed of the random starts; the same seed and settings give bit-identical
        prototypes on the same device and software.
    steps : int, optional
        Annealing steps per start (default: 2000, fewer for large K^2 d so that
        a start costs about 6.4e10 multiply-adds, at least 100).
    restarts : int, optional
        Random starts (default: 64, 16, 4 or 1 as K^2 d grows past 2e4, 2e5,
        2e6, and at most max(4, 8.4e8 / (steps K^2))).
    time_limit : float, optional
        Seconds.  The annealing's schedule is compressed to fit the time (its
        sharpness and step size follow the elapsed time when that is ahead of
        the step count), leaving time for the polish; the solver stops cleanly
        and returns the best code so far, and ``stop_detail`` says what the
        limit changed.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where the annealing runs (the polish always runs on the CPU).
    progress : callable, optional
        Called with a :class:`Progress` every ``log_every`` steps and polish rounds.
    init : array_like, optional
        A start code, (K, d); rows are rescaled to unit length (a structured
        code, or an earlier result).  Start 0 is this code itself; start
        r > 0 is the code moved by Gaussian noise of angular size up to
        ``init_noise`` (default a quarter of the estimated neighbour angle).
        A warm start's annealing begins sharp (``t_start = t_end / 25``) with
        a tenth of the step size, so it refines the code rather than
        forgetting it, and the result is never worse than ``init``.
    effort : {"low", "default", "high", "record"}
        How much work to spend on the dense path (:data:`spherecodes.solvers.EFFORTS`;
        docs/optimisers.md, "Effort"): "low" runs a quarter of the random
        starts; "high" four times as many (at least 512 in R^3 up to 130
        points, half of them symmetric in R^3, energy-continuation above),
        then rounds of perturb-and-repolish of the best code (40, up to 300
        in R^3 up to 130 points) for codes small enough to polish; "record"
        is one chain of :func:`spherecodes.solvers.record_search`: "high",
        its rounds in R^3 run until 150 in a row bring no gain (at most 1000).
        ``result.stages`` records what each stage spent.
    frozen : array_like of bool, shape (K,), optional
        Rows of ``init`` that stay where they are, bit for bit (new classes
        added to a trained code: :func:`spherecodes.extend`).  Their
        gradient is zero at every step, the polish's LP holds them fixed,
        and the stages that move every row (contact solve, perturbation
        rounds) are skipped.
    **options
        Advanced settings, defaults from :func:`tammes_defaults`:
        ``dtype`` ("auto", "float32", "float64"); ``t_start``, ``t_end``
        (sharpness of the smoothed max at the first and last step);
        ``t_spread`` (start i > 0 begins at ``t_start * t_spread**u_i``, u_i
        uniform in [0, 1), for diverse basins); ``sharp_share`` (the share of
        the starts i > 0, interleaved, that begin at ``t_end / 100`` instead:
        the two schedules end in different basins; default 0.5 in R^3 without
        ``init``, else 0); ``lr_start``, ``lr_end`` (Adam step size, geometric
        decay); ``beta1``, ``beta2``, ``eps`` (Adam's constants, :data:`spherecodes.solvers.ADAM_DEFAULTS`);
        ``batch_size`` (starts optimised together); ``threads`` (torch CPU
        threads during the run, restored afterwards; default 1 for small
        problems, else unchanged); ``log_every``;
        ``closed_form`` (return a provably optimal closed form when one
        exists); ``polish`` (run the LP polish; default when K*d <= 20,000);
        ``polish_top`` (how many of the best starts to sharpen and polish);
        ``polish_work`` (simplex work of the LP rounds of the polish, in LP
        non-zeros times simplex iterations, reproducible unlike seconds;
        default for K*d <= 1000: 0.01 x the annealing's K^2 d multiply-adds,
        at least 1e8; else 0); ``polish_time`` (an optional wall-clock cap on the
        polish, in seconds); ``polish_max_nonzeros`` (a round whose LP is larger
        shrinks its trust region instead); ``polish_rounds``, ``polish_radius``,
        ``polish_min_radius``, ``polish_tol``; ``neighbours`` (0: all
        pairs; m: neighbour lists of m prototypes; default chosen from K
        and the memory); ``refresh`` (steps between refreshes of the lists);
        ``max_memory`` (bytes the run may use on the device; default 80% of
        what is free); ``perturb_rounds`` (rounds of perturb-and-repolish;
        default from ``effort``); ``perturb_patience`` (rounds in a row
        without a gain after which they stop; 0: run them all; default 12 for
        the rounds an effort sets, 0 when ``perturb_rounds`` is given);
        ``symmetric_starts`` (how many of the starts are symmetric, R^3 only;
        default from ``effort``); ``riesz_starts`` (how many of the starts
        minimise the Riesz s-energy with s rising from 2 to 512 instead of the
        smoothed max-cos, dense path only; default from ``effort``);
        ``init_noise`` (see ``init``).  :func:`tammes_estimate` gives the
        memory and time a call will take before making it.

    Returns
    -------
    SolverResult

    Raises
    ------
    SpherecodesError
        For invalid input, or working arrays that do not fit in memory (the
        message says what was needed, what is allowed and what to change).

    Examples
    --------
    >>> res = tammes(3, 12, seed=0, device="cpu")
    >>> round(res.max_cos, 10), round(1 / 5 ** 0.5, 10)  # the icosahedron
    (0.4472135955, 0.4472135955)
    >>> res.stop_reason
    'converged'
    """
    begin = time.perf_counter()
    d, k, seed, time_limit = check_common(d, k, seed, time_limit, progress)
    given, init = init, check_init(init, d, k)
    frozen = check_frozen(frozen, init, given)
    dev = resolve_device(device)
    cfg = TammesSettings.resolve(d, k, steps=steps, restarts=restarts, device=dev, warm=init is not None,
                                effort=effort, **options)
    if frozen is not None:
        cfg = dataclasses.replace(cfg, perturb_rounds=0)  # the rounds re-insert any row
    settings = {"method": "tammes", "d": d, "k": k, "seed": seed, "time_limit": time_limit,
                "device": str(dev), "init": None if init is None else "array", **dataclasses.asdict(cfg)}
    if frozen is not None:
        settings["frozen_rows"] = len(frozen)  # rows of the start code kept exactly (spherecodes.extend)

    closed = None if frozen is not None else closed_form_result("tammes", d, k, cfg.closed_form, dev, begin,
                                                                 settings)
    if closed is not None:
        return closed

    plan = tammes_memory(d, k, cfg, dev)
    clock = Clock(time_limit, progress, cfg.restarts, begin)
    # The polish's linear algebra runs in NumPy's BLAS: on a busy machine its
    # threads wait on each other, so it gets the same thread count as torch
    # (figures in docs/optimisers.md, "Threads").
    with torch_threads(cfg.threads), threadpool_limits(cfg.threads, user_api="blas"):
        settings["threads"] = torch.get_num_threads()
        result = _run_tammes(d, k, seed, cfg, dev, clock, plan, init, frozen)
    result.settings = settings
    return result


def tammes_memory(d: int, k: int, cfg: TammesSettings, device: torch.device):
    """Check that the annealing of :func:`tammes` with settings ``cfg`` fits; return its plan.

    The dense path needs two K×K matrices per start in the batch; the
    neighbour-list path the :class:`spherecodes.solvers._neighbours.NeighbourPlan`
    that is returned (None for the dense path).  Both also need the code
    in float64 on the host (three copies while it is re-measured).

    Raises
    ------
    SpherecodesError
        When the estimate exceeds ``cfg.max_memory`` (default: a safe
        fraction of what is available), with what to change.
    """
    itemsize = 4 if cfg.dtype == "float32" else 8
    limit = cfg.max_memory
    host = 3 * 8.0 * k * d
    if not cfg.neighbours:
        require_memory(
            dense_bytes(k, d, cfg.batch_size, itemsize) + (host if device.type == "cpu" else 0.0),
            f"the annealing working set ({cfg.batch_size} x {k} x {k} pairwise matrices, {cfg.dtype})",
            str(device), limit=limit, hint="use neighbour lists (neighbours=m, --neighbours M) or choose a smaller size",
        )
        plan = None
    else:
        plan = neighbour_plan(d, k, cfg.neighbours, itemsize, device=device,
                              limit=memory_limit(str(device), limit))
        require_memory(
            plan.nbytes + (host if device.type == "cpu" else 0.0),
            f"the neighbour-list working set (K={k}, d={d}, m={cfg.neighbours}, {cfg.dtype})",
            str(device), limit=limit, hint="lower neighbours (--neighbours) or choose a smaller size",
        )
    if device.type == "cuda":
        require_memory(host, f"the code in float64 on the host (K={k}, d={d})", "cpu")
    return plan


def tammes_estimate(
    d: int, k: int, *, steps: int | None = None, restarts: int | None = None,
    device: str | torch.device = "auto", effort: str = "default", **options,
) -> Estimate:
    """Memory and time that :func:`tammes` with these arguments is expected to take.

    The settings are resolved exactly as :func:`tammes` resolves them; the
    memory is the estimate that :func:`tammes` checks (so the same refusal
    happens here, before any work), and the time comes from timing a small
    sample of the work on the device (:func:`_seconds_per_start_step`,
    :func:`spherecodes.solvers._neighbours.neighbour_seconds`), perturbation
    rounds counted in full though they stop early once they stop gaining.

    Returns
    -------
    spherecodes.memory.Estimate

    Raises
    ------
    SpherecodesError
        For invalid settings, or a working set that does not fit.

    Examples
    --------
    >>> est = tammes_estimate(64, 100_000, device="cpu", max_memory=4 * 2**30)
    >>> est.what
    'tammes with neighbour lists (m = 64, refresh every 50 steps), 1 x 1000 steps, float32'
    >>> est.nbytes < est.limit
    True
    """
    d, k = check_sizes(d, k)
    dev = resolve_device(device)
    cfg = TammesSettings.resolve(d, k, steps=steps, restarts=restarts, device=dev, effort=effort, **options)
    limit = memory_limit(str(dev), cfg.max_memory)
    if cfg.closed_form and closed_form_optimum(d, k) is not None:
        return Estimate("tammes: a provably optimal closed form", "cpu", process_peak(8.0 * k * d), limit, 0.0)
    plan = tammes_memory(d, k, cfg, dev)
    runs = f"{cfg.restarts} x {cfg.steps} steps, {cfg.dtype}"
    with torch_threads(cfg.threads):
        if plan is not None:
            what = f"tammes with neighbour lists (m = {plan.m}, refresh every {cfg.refresh} steps), {runs}"
            return Estimate(what, str(dev), process_peak(plan.nbytes, loads_torch=True), limit,
                            cfg.restarts * neighbour_seconds(cfg, plan, dev))
        step = _seconds_per_start_step(d, k, cfg, dev)
    itemsize = 4 if cfg.dtype == "float32" else 8
    what = f"tammes, all pairs, {runs}" + (", then the polish" if cfg.polish else "")
    # A perturbation round re-anneals a batch (spherecodes.solvers._basin) and polishes its best
    # code, which takes about as long again (figures in benchmarks/README.md, "tammes: estimates and
    # budgets"). The rounds are an upper bound: they stop early once they stop gaining.
    perturbing = 2 * cfg.perturb_rounds * round_batch(k) * LOCAL_STEPS if cfg.polish else 0
    if perturbing:
        what += f", then up to {cfg.perturb_rounds} perturbation rounds"
    working = dense_bytes(k, d, cfg.batch_size, itemsize)
    return Estimate(what, str(dev), process_peak(working, loads_torch=True), limit,
                    (cfg.restarts * cfg.steps + perturbing) * step)


def _seconds_per_start_step(d: int, k: int, cfg: TammesSettings, dev: torch.device) -> float:
    """Seconds of one annealing step of one start, timed on the batch shape the run uses.

    :func:`_anneal_batch` itself runs a few steps on random starts (up to
    1024 points, scaled by K² above) in a batch of ``cfg.batch_size``: a small
    code's step costs little more in a batch than alone, and the step's other
    passes over the K x K matrices cost more than its products (predictions
    against runs in docs/optimisers.md, "The result").
    """
    n = min(k, 1024)
    batch = batch_size(n, cfg.batch_size)
    starts = np.stack([random_start(0, r, n, d) for r in range(batch)])
    # Enough steps to fill some 10-20 ms (a step passes over the n x n matrices
    # about d + 8 times), and under 0.1 s the quicker of two tries: a busy
    # machine's hiccups, and the first use of a thread pool, only add.
    work = batch * n * n * (d + 8)
    steps = int(min(max(2e7 / work, 4), 400))
    sample = dataclasses.replace(cfg, steps=steps, log_every=10**9)

    def anneal() -> None:
        _anneal_batch(starts, np.full(batch, cfg.t_end), sample, dev, 0, Clock(None, None, 1, time.perf_counter()),
                      [], 0)

    seconds = timed_call(anneal, dev)
    if seconds < 0.1:
        seconds = min(seconds, timed_call(anneal, dev))
    return seconds / (steps * batch) * (k / n) ** 2


def _anneal_batch(
    starts: np.ndarray,
    t_start: np.ndarray,
    cfg: TammesSettings,
    device: torch.device,
    first_restart: int,
    clock: Clock,
    history: list,
    step_offset: int,
    deadline: float = math.inf,
    riesz: bool = False,
    frozen: np.ndarray | None = None,
) -> Batch:
    """Minimise the smoothed maximum ``(1/t) log sum_{i<j} exp(t <p_i, p_j>)``.

    The sharpness t grows geometrically from ``t_start`` (one per start, so that
    the starts also differ in how long they behave like a smooth energy) to
    ``t_end`` while the step size of the Riemannian Adam steps
    (:func:`riemannian_adam_step`) decays geometrically: small t makes the
    surrogate a Gaussian energy, large t the maximum itself.  ``deadline`` (a
    ``time.perf_counter()`` value) compresses the schedule into the time left
    (:class:`Schedule`).

    With ``riesz`` the smoothed function is ``-log(1 - <p_i, p_j>)`` instead of
    the cosine: the Riesz s-energy ``sum |p_i - p_j|^-s`` with ``s = 2 (t - 1)``
    has the same minimisers as ``(1/t) log sum exp(-t log(1 - <p_i, p_j>))``, so
    the same schedule raises s (energy-continuation starts).  Rows ``frozen``
    get no gradient, so they do not move.
    """
    dtype = DTYPES[cfg.dtype]
    steps = cfg.steps
    batch, k, _ = starts.shape
    x = torch.tensor(starts, dtype=dtype, device=device)  # a copy: the steps update it in place
    t0 = torch.as_tensor(t_start, dtype=dtype, device=device).view(batch, 1, 1)
    growth = torch.log(cfg.t_end / t0)
    lr_ratio = cfg.lr_end / cfg.lr_start
    moment1 = torch.zeros_like(x)
    moment2 = torch.zeros_like(x)
    best = {"x": x.clone(), "val": torch.full((batch,), math.inf, dtype=dtype, device=device)}
    diagonal = torch.arange(k, device=device)
    held = None if frozen is None else torch.as_tensor(frozen, device=device)
    last = {}

    def step(i: int, frac: float) -> None:
        t = t0 * torch.exp(growth * frac)
        lr = cfg.lr_start * lr_ratio**frac
        gram = torch.bmm(x, x.transpose(1, 2))
        gram[:, diagonal, diagonal] = -math.inf
        current = gram.amax(dim=(1, 2))
        # Keep each start's best iterate without a host sync (GPU-friendly).
        improved = current < best["val"]
        best["val"] = torch.where(improved, current, best["val"])
        best["x"] = torch.where(improved.view(batch, 1, 1), x, best["x"])
        # Softmax weights over pairs, shifted by the maximum so exp cannot overflow.
        if riesz:
            slack = gram.neg_().add_(1)  # 1 - cosine, +inf on the diagonal
            weights = torch.log(slack).sub_(torch.log1p(-current).view(batch, 1, 1)).mul_(-t)
            weights = weights.clamp_(min=EXP_FLOOR).exp_()
            total = weights.sum(dim=(1, 2), keepdim=True)
            weights.div_(slack)  # the derivative of -log(1 - c)
        else:
            weights = gram.sub_(current.view(batch, 1, 1)).mul_(t).clamp_(min=EXP_FLOOR).exp_()
            total = weights.sum(dim=(1, 2), keepdim=True)
        grad = torch.bmm(weights, x).div_(total)
        if held is not None:
            grad[:, held] = 0.0
        riemannian_adam_step(x, grad, moment1, moment2, i, lr, cfg.beta1, cfg.beta2, cfg.eps)
        last.update(current=current, total=total, t=t)

    def log(done: int) -> None:
        # log(total / 2) because the weight matrix counts every pair twice.
        smooth = last["current"] + torch.log(last["total"].view(batch) / 2) / last["t"].view(batch)
        i = int(torch.argmin(best["val"]))
        history.append((step_offset + done * batch, float(smooth[i]), float(best["val"][i])))
        clock.report(first_restart, done, steps, float(best["val"][i]))

    end = run_steps(steps, clock, step, log, log_every=cfg.log_every, catch_interrupt=True,
                    schedule=Schedule(steps, deadline))
    if end.interrupted:
        # Ctrl-C: keep the best iterates so far (the last update is not measured).
        return Batch(best["x"].double().cpu().numpy(), end.done, end.timed_out, interrupted=True)

    # The last update has not been measured yet; measure it in the working precision.
    gram = torch.bmm(x, x.transpose(1, 2))
    gram[:, diagonal, diagonal] = -math.inf
    improved = gram.amax(dim=(1, 2)) < best["val"]
    best_x = torch.where(improved.view(batch, 1, 1), x, best["x"])
    return Batch(best_x.double().cpu().numpy(), end.done, end.timed_out, compressed=end.compressed)


# --------------------------------------------------------------------------- tammes: the stages


#: Share of a time limit that the annealing's schedule is compressed into when
#: the polish follows (it takes about as long as the annealing), and when it
#: does not (the rest covers the float64 re-measurement).
ANNEAL_SHARE = {True: 0.6, False: 0.9}


def _starts(seed: int, members: list[int], k: int, d: int, init: np.ndarray | None, cfg: TammesSettings,
            frozen: np.ndarray | None = None) -> np.ndarray:
    """The starts of restarts ``members``: random or symmetric, or ``init`` and perturbations of it.

    Without ``init``, the last ``cfg.symmetric_starts`` restarts are unions of
    orbits of a rotation group (:func:`spherecodes.solvers._symmetric.symmetric_start`,
    stream ``(seed, r, 4)``; R^3 only) and the others random.  With it, start 0
    is ``init`` and start r > 0 moves every row by Gaussian noise of angular
    size ``u_r * init_noise`` (u_r uniform in [0, 1) from the stream
    ``(seed, r, 2)``), so the first starts stay close to the code and later
    ones explore further; rows ``frozen`` are not moved.  Every start depends on (seed, r) only.
    """
    if init is None:
        first_symmetric = cfg.restarts - cfg.symmetric_starts
        choices = orbit_choices(k) if members[-1] >= first_symmetric else None
        return np.stack([random_start(seed, r, k, d) if r < first_symmetric
                         else symmetric_start(k, np.random.default_rng([seed, r, 4]), choices)[0] for r in members])
    starts = []
    for r in members:
        if r == 0:
            starts.append(init)
            continue
        rng = np.random.default_rng([seed, r, 2])
        scale = rng.random() * cfg.init_noise / math.sqrt(d)
        noise = scale * rng.standard_normal((k, d))
        if frozen is not None:
            noise[frozen] = 0.0
        starts.append(hold(normalise_rows(init + noise), init, frozen))
    return np.stack(starts)


#: The sharp starts (``sharp_share``) begin at ``t_end / SHARP_START``.
SHARP_START = 100.0


def _start_sharpness(seed: int, members: list[int], cfg: TammesSettings) -> np.ndarray:
    """The sharpness at the first step of each of the starts ``members``.

    Start 0 begins at ``t_start``; of the others, a share ``sharp_share``
    (interleaved: start r is sharp when ``floor((r + 1) s) > floor(r s)``)
    begins at ``t_end / SHARP_START``, the rest at ``t_start * t_spread**u_r``
    (u_r uniform in [0, 1) from the stream ``(seed, r, 1)``).  Never above ``t_end``.

    Examples
    --------
    >>> cfg = TammesSettings.resolve(3, 40, device="cpu", sharp_share=0.5)
    >>> t = _start_sharpness(0, [0, 1, 2, 3], cfg)
    >>> bool(t[0] == cfg.t_start), bool(t[1] == t[3] == cfg.t_end / SHARP_START), bool(t[2] >= cfg.t_start)
    (True, True, True)
    """
    share = cfg.sharp_share
    t = [cfg.t_start if r == 0
         else cfg.t_end / SHARP_START if math.floor((r + 1) * share) > math.floor(r * share)
         else cfg.t_start * cfg.t_spread ** np.random.default_rng([seed, r, 1]).random() for r in members]
    return np.minimum(np.array(t, dtype=np.float64), cfg.t_end)


#: Sharpness of the energy-continuation starts at their first and last step:
#: the Riesz exponent s = 2 (t - 1) rises from 2 to 512.
RIESZ_SHARPNESS = (2.0, 257.0)


def _batch_groups(cfg: TammesSettings) -> tuple[tuple[int, int, bool], ...]:
    """The ranges of starts of one kind: (first, stop, whether they are energy-continuation starts)."""
    first_riesz = cfg.restarts - cfg.symmetric_starts - cfg.riesz_starts
    return ((0, first_riesz, False), (first_riesz, first_riesz + cfg.riesz_starts, True),
            (first_riesz + cfg.riesz_starts, cfg.restarts, False))


def _batches(cfg: TammesSettings, size: int):
    """The starts annealed together: (restarts, whether they are energy-continuation starts), in order.

    Starts ``[restarts - symmetric_starts - riesz_starts, restarts - symmetric_starts)``
    minimise the Riesz energy with a rising exponent (:func:`_anneal_batch`);
    a batch never mixes them with the others, and holds at most ``size``.
    A generator: ``restarts`` may be far more than could ever run.

    Examples
    --------
    >>> cfg = TammesSettings.resolve(22, 100, device="cpu", restarts=5, riesz_starts=2, batch_size=2)
    >>> list(_batches(cfg, cfg.batch_size)), _batch_count(cfg, cfg.batch_size)
    ([([0, 1], False), ([2], False), ([3, 4], True)], 3)
    """
    for start, stop, riesz in _batch_groups(cfg):
        for first in range(start, stop, size):
            yield list(range(first, min(first + size, stop))), riesz


def _batch_count(cfg: TammesSettings, size: int) -> int:
    """How many batches :func:`_batches` yields, by integer arithmetic."""
    return sum(-(-(stop - start) // size) for start, stop, _ in _batch_groups(cfg) if stop > start)


def _batch_size(seed: int, k: int, d: int, init: np.ndarray | None, cfg: TammesSettings, clock: Clock) -> int:
    """``cfg.batch_size``, or fewer starts where the time limit leaves no time for so many.

    Each start costs some time whatever the schedule: it is drawn, and its
    result is measured in float64.  For a small K the batch can hold 10^5
    starts (as many as fit the memory), whose drawing and measuring alone
    would take seconds: the cost of one start is timed here (on a start that
    is drawn again when its turn comes, so the run is the same) and the batch
    holds at most as many as fit half of the time left for annealing.
    """
    if clock.limit is None or cfg.batch_size == 1:
        return cfg.batch_size
    began = time.perf_counter()
    max_cos(normalise_rows(_starts(seed, [0], k, d, init, cfg)[0]))
    per_start = max(time.perf_counter() - began, 1e-6)
    left = clock.begin + ANNEAL_SHARE[bool(cfg.polish)] * clock.limit - time.perf_counter()
    return int(min(cfg.batch_size, max(1.0, 0.5 * left / per_start)))


def _batch_deadline(clock: Clock, cfg: TammesSettings, batches_left: int) -> float:
    """When the batch about to run must end its schedule (``math.inf`` without a time limit).

    The annealing's share of the limit (:data:`ANNEAL_SHARE`) is divided
    evenly among the batches still to run.
    """
    if clock.limit is None:
        return math.inf
    end = clock.begin + ANNEAL_SHARE[bool(cfg.polish)] * clock.limit
    now = time.perf_counter()
    return now + max(end - now, 0.0) / batches_left


def _run_tammes(d: int, k: int, seed: int, cfg: TammesSettings, dev: torch.device, clock: Clock, plan=None,
                init: np.ndarray | None = None, frozen: np.ndarray | None = None) -> SolverResult:
    """Anneal every start, polish the best few, perturb and re-polish the best (with effort), return the best code."""
    history: list[tuple[float, float, float]] = []
    codes = []
    total_steps = refreshes = 0
    stop_reason = "steps"
    compressed = False
    # Batch by batch, never a list over all restarts: a huge --restarts under a time limit must still stop in time.
    size = _batch_size(seed, k, d, init, cfg, clock) if plan is None else cfg.batch_size
    batches = _batch_count(cfg, size)
    for n_batch, (members, riesz) in enumerate(_batches(cfg, size)):
        first = members[0]
        # The first batch always runs, so that a result exists however short the limit.
        if first and clock.expired():
            stop_reason = "time_limit"
            break
        starts = _starts(seed, members, k, d, init, cfg, frozen)
        t_start = _start_sharpness(seed, members, cfg)
        deadline = _batch_deadline(clock, cfg, batches - n_batch)
        if riesz:
            batch = _anneal_batch(starts, np.full(len(members), RIESZ_SHARPNESS[0]),
                                  dataclasses.replace(cfg, t_end=RIESZ_SHARPNESS[1]), dev, first, clock, history,
                                  total_steps, deadline, riesz=True, frozen=frozen)
        elif plan is None:
            batch = _anneal_batch(starts, t_start, cfg, dev, first, clock, history, total_steps, deadline,
                                  frozen=frozen)
        else:
            batch = anneal_neighbours(starts[0], float(t_start[0]), cfg, plan, dev, first, clock, history,
                                      total_steps, deadline, frozen=frozen)
            refreshes += batch.refreshes
        total_steps += batch.steps * len(members)
        compressed |= batch.compressed
        codes.extend(hold(normalise_rows(code), init, frozen) for code in batch.codes)
        if batch.interrupted:
            stop_reason = "interrupted"
            break
        if batch.timed_out:
            stop_reason = "time_limit"
            break
    stages = [{"stage": "anneal", "starts": len(codes), "steps": total_steps, "seconds": clock.elapsed(),
               "compressed": compressed}]

    # Re-measure in float64: the annealing may have run in float32.  Large
    # codes are measured in tiles of the upper triangle on the device.
    values = np.array([max_cos(code) if plan is None else max_cos(code, device=dev, max_memory=cfg.max_memory)
                       for code in codes])
    order = np.argsort(values, kind="stable")
    best = int(order[0])
    best_code, best_value = codes[best], float(values[best])
    stages[0]["max_cos"] = best_value
    # S^0 has no tangent directions to move along, so there is nothing to polish.
    if cfg.polish and d > 1 and stop_reason not in ("time_limit", "interrupted"):
        polish_began, steps_before = clock.elapsed(), total_steps
        # Starts whose annealed values agree closely are usually the same
        # configuration; polishing one of each spends the polish on distinct ones.
        chosen: list[int] = []
        for r in order:
            if len(chosen) == cfg.polish_top:
                break
            if all(abs(values[r] - values[c]) > 1e-7 for c in chosen):
                chosen.append(int(r))
        all_converged = True
        largest_gain = 0.0
        budget = PolishBudget(cfg)
        try:
            sharpened, sharpen_steps = _sharpen(np.stack([codes[r] for r in chosen]), cfg, dev, clock, frozen)
            total_steps += sharpen_steps
            for r, code in zip(chosen, sharpened):
                code = hold(code, init, frozen)
                value = max_cos(code)
                if value < values[r]:
                    codes[r], values[r] = code, value
                if value < best_value:
                    best, best_code, best_value = r, code, value
            chosen.sort(key=lambda r: values[r])
            for r in chosen:
                # A start cannot win if it trails the best by more than twice what
                # polishing has gained so far (about the smoothing's bias).
                if values[r] - best_value > 2 * largest_gain + 1e-9:
                    break
                polished, rounds, converged = polish(codes[r], PairCosines(), cfg, clock, budget, history,
                                                      total_steps, refine=_refine(k, d, frozen), fixed=frozen)
                polished = solve_contacts(polished) if frozen is None else hold(polished, init, frozen)
                total_steps += rounds
                all_converged &= converged
                value = max_cos(polished)
                largest_gain = max(largest_gain, values[r] - value)
                if value < best_value:
                    best, best_code, best_value = r, polished, value
                if clock.expired():
                    break
        except KeyboardInterrupt:
            # Ctrl-C during the polish: the best code so far is already measured.
            stop_reason = "interrupted"
        if stop_reason != "interrupted":
            stop_reason = "time_limit" if clock.expired() else ("converged" if all_converged else "steps")
        stages.append({"stage": "polish", "starts": len(chosen), "steps": total_steps - steps_before,
                       "seconds": clock.elapsed() - polish_began, "max_cos": best_value})
        if cfg.perturb_rounds and stop_reason not in ("time_limit", "interrupted"):
            perturb_began = clock.elapsed()
            best_code, best_value, record = _perturbation_stage(best_code, best_value, seed, cfg, dev, clock,
                                                                history, total_steps)
            total_steps += record["steps"]
            if record["interrupted"]:
                stop_reason = "interrupted"
            elif clock.expired():
                stop_reason = "time_limit"
            stages.append({"stage": "perturb", "starts": record["rounds"], "steps": record["steps"],
                           "seconds": clock.elapsed() - perturb_began, "max_cos": best_value,
                           "improvements": record["improvements"]})
    if compressed and stop_reason in ("steps", "converged"):
        # The limit shortened the planned work, even though the schedule ran to its end.
        stop_reason = "time_limit"
    if init is not None:
        # Never return a code worse than the one given (the annealing may have
        # run in float32, and every start may have left its basin).
        given = max_cos(init) if plan is None else max_cos(init, device=dev, max_memory=cfg.max_memory)
        if given <= best_value:
            best, best_code, best_value = 0, init, given

    return SolverResult(
        prototypes=best_code,
        method="tammes",
        max_cos=best_value,
        history=np.array(history, dtype=np.float64).reshape(-1, 3),
        restarts=len(codes),
        best_restart=best,
        steps=total_steps,
        wall_time=clock.elapsed(),
        device=str(dev),
        stop_reason=stop_reason,
        refreshes=refreshes,
        stages=stages,
        stop_detail=_stop_detail(stop_reason, cfg, stages, clock),
    )


#: The sharpening of the best annealed codes before the LP polish: steps, and
#: the factor by which the sharpness keeps growing past ``t_end`` while the
#: step size decays from ``lr_end`` by :data:`SHARPEN_LR_DECAY`.
SHARPEN_STEPS = 300
SHARPEN_GROWTH = 1000.0
SHARPEN_LR_DECAY = 100.0


def _sharpen(codes: np.ndarray, cfg: TammesSettings, dev: torch.device, clock: Clock,
             frozen: np.ndarray | None = None) -> tuple[list, int]:
    """Continue the annealing of ``codes`` (B, K, d) in float64 with the sharpness still growing.

    The annealing ends with the smoothed maximum still about log(pairs) / t_end
    above max-cos, near, not at, a local optimum, where the LP polish would
    need trust regions holding most pairs of the code; raising the sharpness
    a further ``SHARPEN_GROWTH``-fold with small steps (from ``lr_end``) brings
    the codes to the contact structure of the optimum.  Returns the
    codes (float64 unit rows; each is the best iterate, so never worse than
    its start in max-cos) and the steps done per code times the codes.
    """
    local = dataclasses.replace(cfg, steps=SHARPEN_STEPS, t_end=cfg.t_end * SHARPEN_GROWTH, lr_start=cfg.lr_end,
                                lr_end=cfg.lr_end / SHARPEN_LR_DECAY, dtype="float64", log_every=10**9)
    batch = _anneal_batch(codes, np.full(len(codes), cfg.t_end), local, dev, 0, clock, [], 0, frozen=frozen)
    if batch.interrupted:
        raise KeyboardInterrupt
    return [normalise_rows(code) for code in batch.codes], batch.steps * len(codes)


def _refine(k: int, d: int, frozen: np.ndarray | None = None):
    """The contact solve between the LP rounds of the polish, where it is cheap (K·d < DENSE_CONTACTS), else None.

    Near the optimum the LP rounds converge only linearly (their trust region
    must shrink to keep the curvature they ignore below the gain) while the
    contact graph is already right: solving it by Gauss-Newton ends the polish
    sooner (docs/optimisers.md, step 6).  Not with frozen rows, which it would move.
    """
    return solve_contacts if k * d < DENSE_CONTACTS and frozen is None else None


def _perturbation_stage(w, value, seed, cfg, dev, clock, history, step_offset):
    """Perturb-and-repolish rounds (:func:`spherecodes.solvers._basin.perturbation_rounds`) with this run's steps."""

    def anneal(starts, t_start, local):
        batch = _anneal_batch(starts, t_start, local, dev, 0, clock, [], 0)
        if batch.interrupted:
            raise KeyboardInterrupt  # the round is abandoned; the rounds keep their best code
        return [normalise_rows(code) for code in batch.codes], batch.steps

    def polish_one(code):
        (sharpened,), sharpen_steps = _sharpen(code[None], cfg, dev, clock)
        polished, rounds, _ = polish(sharpened, PairCosines(), cfg, clock, PolishBudget(cfg), [], 0,
                                     refine=_refine(*code.shape))
        return solve_contacts(polished), rounds + sharpen_steps

    return perturbation_rounds(w, value, cfg.perturb_rounds, seed, cfg, clock, history, step_offset,
                               anneal=anneal, polish=polish_one)


def _stop_detail(stop_reason: str, cfg: TammesSettings, stages: list[dict], clock: Clock) -> str:
    """One sentence on when and why a run stopped early, or what the time limit changed; "" for a full run."""
    anneal = stages[0]
    planned = cfg.restarts * cfg.steps
    if stop_reason == "interrupted":
        return f"interrupted (Ctrl-C) after {clock.elapsed():.3g} s; the best code so far is returned"
    if stop_reason != "time_limit":
        return ""
    if stages[-1]["stage"] == "perturb":
        return (f"stopped early at the time limit of {clock.limit:.3g} s, after {stages[-1]['starts']} of "
                f"{cfg.perturb_rounds} perturbation rounds; the best code so far is returned")
    if anneal["compressed"]:
        return (f"the annealing schedule was compressed to fit the time limit of {clock.limit:.3g} s: "
                f"{anneal['steps']} of {planned} steps in {anneal['seconds']:.3g} s"
                + ("; the polish was cut short" if len(stages) > 1 and clock.expired() else ""))
    what = (f"{anneal['starts']} of {cfg.restarts} starts, {anneal['steps']} of {planned} annealing steps"
            + (", polish cut short" if len(stages) > 1 else ", no polish" if cfg.polish else ""))
    return f"stopped early at the time limit of {clock.limit:.3g} s ({what}); the best code so far is returned"
