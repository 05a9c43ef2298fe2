"""Optimisers that place K unit vectors in R^d as far apart as possible.

Two solvers share one result type, modelled on :class:`scipy.optimize.OptimizeResult`:

* :func:`tammes` minimises the largest cosine between two prototypes (the
  Tammes problem, seed 002 Eq. 4) with an annealed log-sum-exp surrogate,
  Riemannian Adam steps on the sphere, batched random starts and a final
  sequential-linear-programming polish of the near-active pairs.
* :func:`maxsep` is the reference procedure of seed 002 Eq. 5, exactly as
  published: plain gradient steps on ``L_HP = (1/K) sum_i max_j M_ij`` with
  ``M = P P^T - 2I``, re-normalising the rows after every step.

The heavy work runs in torch on the CPU or a CUDA GPU (:func:`spherecodes.devices.resolve_device`);
the polish runs in float64 on the CPU with SciPy's HiGHS.  Every number in a
:class:`SolverResult` is recomputed in float64 from the returned prototypes.
``docs/optimisers.md`` describes the algorithm, its defaults and measurements.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.sparse
import torch
from scipy.optimize import linprog
from scipy.special import betainc

from .constructions import applicable_closed_forms, construct
from .devices import resolve_device, timed_call
from .errors import SpherecodesError
from .memory import Estimate, memory_limit, require_memory
from .stats import max_cos, validate_prototypes

__all__ = ["HISTORY_COLUMNS", "Progress", "SolverResult", "maxsep", "tammes", "tammes_defaults", "tammes_estimate"]

#: Columns of :attr:`SolverResult.history`.
HISTORY_COLUMNS = ("global_step", "objective", "max_cos")

#: Rows of the float64 Gram matrix computed at a time when the polish looks
#: for near-active pairs, so that a large code does not need K^2 memory.
_GRAM_BLOCK_ROWS = 2048

#: Exponents below this are clamped before ``exp``: the weights they produce
#: (< 1e-26) are negligible, and leaving them would create subnormal floats,
#: which make CPU arithmetic many times slower.
_EXP_FLOOR = -60.0

#: Per-step work (multiply-adds of one pairwise product, summed over a batch)
#: below which the solvers run single-threaded by default: on matrices this
#: small, OpenMP threads cost more in synchronisation than they save, and on a
#: busy machine a thread waiting for a core stalls every step (measured: 0.35 s
#: with one thread against 4-18 s with two for 64 starts of K = 8 in R^3).
_SMALL_WORK = 4e6


@dataclass(frozen=True)
class Progress:
    """A progress report passed to the ``progress`` callable of a solver.

    Attributes
    ----------
    restart : int
        0-based index of the first start in the batch being optimised (small
        problems optimise several starts at once); ``restarts`` during the polish.
    restarts : int
        Number of starts the solver will run.
    step : int
        Steps done in the current stage (annealing: per start; polish: LP rounds).
    steps : int
        Steps planned for the current stage.
    max_cos : float
        Best max-cos seen so far in the current batch (or polish).
    elapsed : float
        Seconds since the solver started.
    rho : float or None
        :func:`softmax_code` only: certified ρ of the best code so far
        (``max_cos`` is then that code's max-cos).
    """

    restart: int
    restarts: int
    step: int
    steps: int
    max_cos: float
    elapsed: float
    rho: float | None = None


@dataclass
class SolverResult:
    """What a solver returns: the code and how it was obtained.

    Attributes
    ----------
    prototypes : numpy.ndarray
        float64 array (K, d); every row has unit norm in float64.
    method : str
        ``"tammes"`` or ``"maxsep"``.
    max_cos : float
        ``max_{i != j} <p_i, p_j>``, recomputed in float64 from ``prototypes``.
    history : numpy.ndarray
        float64 array (n, 3), one row per logged step with the columns
        :data:`HISTORY_COLUMNS`: ``global_step`` counts steps over all starts
        (a batch of B starts advances it by B per step; polish rounds add 1),
        ``objective`` is the quantity being minimised at that step (tammes: the
        smoothed maximum of the best start in the batch, then max-cos during the
        polish; maxsep: ``L_HP`` of the best start in the batch), ``max_cos`` is
        the max-cos of that start.
    restarts : int
        Number of starts run (fewer than asked when the time limit struck).
    best_restart : int
        0-based index of the start whose code is returned.
    steps : int
        Optimisation steps taken, summed over starts, plus polish rounds.
    wall_time : float
        Seconds from the call to the return.
    device : str
        Where the steps ran (``"cpu"``, ``"cuda:0"``).
    stop_reason : str
        ``"converged"`` (the polish stopped improving, or a closed form is
        provably optimal), ``"steps"`` (the step budget ran out),
        ``"time_limit"``, or ``"interrupted"`` (Ctrl-C during the annealing
        or the polish of :func:`tammes`: the best code so far is returned).
    settings : dict
        Every setting needed to reproduce the run; JSON-serialisable.
        :func:`tammes`: ``neighbours`` is 0 for the dense path (all pairs),
        else the length m of the neighbour lists, refreshed every ``refresh``
        steps.
    refreshes : int
        :func:`tammes` with neighbour lists: refreshes of the lists done.
    stages : list of dict
        How the budget was spent, one dict per stage in order: ``stage``
        (``"anneal"``, ``"polish"``, ``"perturb"``), ``starts`` (codes it
        worked on), ``steps`` (steps or LP rounds), ``seconds`` and
        ``max_cos`` (the best code's after the stage); the annealing also
        says whether a time limit ``compressed`` its schedule.
    stop_detail : str
        When and why the run stopped early, or what a time limit changed, in
        one sentence; empty for a run that did all it planned.
    """

    prototypes: np.ndarray
    method: str
    max_cos: float
    history: np.ndarray
    restarts: int
    best_restart: int
    steps: int
    wall_time: float
    device: str
    stop_reason: str
    settings: dict = field(default_factory=dict)
    refreshes: int = 0
    stages: list = field(default_factory=list)
    stop_detail: str = ""

    def __repr__(self) -> str:
        k, d = self.prototypes.shape
        return (
            f"SolverResult(method={self.method!r}, d={d}, k={k}, max_cos={self.max_cos:.12g}, "
            f"restarts={self.restarts}, best_restart={self.best_restart}, steps={self.steps}, "
            f"wall_time={self.wall_time:.3g}, device={self.device!r}, stop_reason={self.stop_reason!r})"
        )


# --------------------------------------------------------------------------- input


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise SpherecodesError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise SpherecodesError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SpherecodesError(f"{name} must be a positive number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise SpherecodesError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_fraction(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SpherecodesError(f"{name} must be a number in [0, 1), got {value!r}")
    if not 0 <= value < 1:
        raise SpherecodesError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


def _check_common(d, k, seed, time_limit, progress) -> tuple[int, int, int, float | None]:
    d = _check_int("d", d, 1)
    k = _check_int("K", k, 2)
    seed = _check_int("seed", seed, 0)
    if time_limit is not None:
        time_limit = _check_positive("time_limit", time_limit)
    if progress is not None and not callable(progress):
        raise SpherecodesError(f"progress must be a callable or None, got {type(progress).__name__}")
    return d, k, seed, time_limit


def _check_options(method: str, options: dict, allowed: dict) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise SpherecodesError(
            f"unknown {method} option(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"
        )


_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _check_dtype(value: str, default: str) -> str:
    value = default if value == "auto" else value
    if value not in _DTYPES:
        raise SpherecodesError(f"dtype must be 'auto', 'float32' or 'float64', got {value!r}")
    return value


# --------------------------------------------------------------------------- float64 helpers


def _normalise_rows(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def _pairs_above(w: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs i < j with ``<w_i, w_j> >= threshold``: (i, j, cosine), a block of rows at a time."""
    found = []
    for start in range(0, len(w), _GRAM_BLOCK_ROWS):
        block = w[start : start + _GRAM_BLOCK_ROWS] @ w.T
        rows, cols = np.nonzero(block >= threshold)
        upper = cols > start + rows
        found.append((start + rows[upper], cols[upper], block[rows[upper], cols[upper]]))
    return tuple(np.concatenate(parts) for parts in zip(*found))


def _start(seed: int, restart: int, k: int, d: int) -> np.ndarray:
    """The random start of one restart: K independent uniform unit vectors.

    Each restart draws from its own stream ``(seed, restart)``, so a start does
    not depend on how restarts are batched or on how many are run.
    """
    return _normalise_rows(np.random.default_rng([seed, restart]).standard_normal((k, d)))


def _closed_form_optimum(d: int, k: int) -> np.ndarray | None:
    """A provably optimal code when one is known in closed form, else None.

    K <= d + 1: the simplex (meets the bound -1/(K-1)); d + 2 <= K <= 2d: part
    of the cross-polytope (meets Rankin's bound 0); d = 2: the regular polygon;
    d = 1: alternating signs (max-cos 1 is forced once K >= 3).
    """
    if d == 1 and k > 2:
        return np.where(np.arange(k) % 2 == 0, 1.0, -1.0)[:, None]
    optimal = [m for m in applicable_closed_forms(d, k) if m in ("etf", "cross-polytope", "polygon")]
    return construct(optimal[0], d, k) if optimal else None


def _closed_form_result(method: str, d: int, k: int, cfg: dict, dev, begin: float, settings: dict):
    """The provably optimal closed form as a converged :class:`SolverResult`, or None.

    None also when the caller's ``closed_form`` option is off.  The closed
    forms are optimal for max-cos and for ρ alike (SPEC §3), so every minimax
    solver returns the same code; its history row logs max-cos as both
    columns for ``tammes`` and leaves ρ (not computed here) as NaN otherwise.
    """
    closed = _closed_form_optimum(d, k) if cfg["closed_form"] else None
    if closed is None:
        return None
    value = max_cos(closed)
    objective = value if method == "tammes" else np.nan
    return SolverResult(closed, method, value, np.array([(0, objective, value)], dtype=float), 1, 0, 0,
                        time.perf_counter() - begin, str(dev), "converged", settings)


def _estimated_angle(d: int, k: int) -> float:
    """A rough size of the optimal minimum angle, used to scale steps and sharpness.

    The angle 2*rho at which K caps of angular radius rho would cover the
    sphere's area exactly (packing density 1), capped at pi/2.  It is accurate
    to ~10% in low dimension (icosahedron: 1.17 vs 1.107; 600-cell: 0.64 vs
    0.628) and saturates in high dimension, where the cap is the right answer's
    order of magnitude anyway.
    """
    def cap_fraction(rho: float) -> float:
        # Normalised area of a cap of angular radius rho <= pi/2 on S^{d-1}.
        if d == 2:
            return rho / np.pi
        return 0.5 * betainc((d - 1) / 2, 0.5, np.sin(rho) ** 2)

    lo, hi = 0.0, np.pi / 4
    # S^0 is two points: there is no angle to estimate (and nothing to move).
    if d == 1 or k * cap_fraction(hi) <= 1:
        return np.pi / 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if k * cap_fraction(mid) < 1 else (lo, mid)
    return 2 * hi


# --------------------------------------------------------------------------- tammes: annealing


@dataclass
class _Batch:
    """The outcome of annealing one batch of starts."""

    codes: np.ndarray  # (B, K, d) float64, the best iterate of each start
    steps: int  # steps done per start
    timed_out: bool
    interrupted: bool = False  # stopped by KeyboardInterrupt (Ctrl-C)
    refreshes: int = 0  # neighbour-list refreshes (spherecodes.neighbours)
    compressed: bool = False  # the schedule was compressed to end by its deadline


class _Schedule:
    """Position in [0, 1] of an annealing schedule of ``steps`` steps that must end by ``deadline``.

    The position is the larger of the fraction of steps done and the fraction
    of the time from the first step to the deadline elapsed: without a
    deadline it follows the step count; under a time limit the whole schedule
    (sharpness up, step size down) fits the time available, instead of being
    cut off while the surrogate is still smooth and the steps large.
    """

    def __init__(self, steps: int, deadline: float = math.inf):
        self.steps = steps
        self.deadline = deadline
        self.begin = time.perf_counter()

    def position(self, step: int) -> float:
        by_steps = step / max(self.steps - 1, 1)
        if math.isinf(self.deadline):
            return by_steps
        span = self.deadline - self.begin
        by_time = 1.0 if span <= 0 else (time.perf_counter() - self.begin) / span
        return min(1.0, max(by_steps, by_time))


def _riemannian_adam_step(
    x: torch.Tensor, grad: torch.Tensor, moment1: torch.Tensor, moment2: torch.Tensor, step: int, lr: float, cfg: dict
) -> None:
    """One Riemannian Adam step on rows of unit vectors, in place.

    The Euclidean gradient ``grad`` is projected onto the tangent space of
    each row (in place), Adam's moments are updated with it, the row moves
    and is retracted to the sphere by re-normalising, and the first moment
    is projected onto the new tangent space.  Works on any leading shape and
    on row slices (views), so large codes can be updated a block of rows at
    a time with small temporaries.
    """
    beta1, beta2 = cfg["beta1"], cfg["beta2"]
    grad -= (grad * x).sum(-1, keepdim=True) * x
    moment1.mul_(beta1).add_(grad, alpha=1 - beta1)
    moment2.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias1 = 1 - beta1 ** (step + 1)
    bias2 = 1 - beta2 ** (step + 1)
    x.addcdiv_(moment1, torch.div(moment2, bias2).sqrt_().add_(cfg["eps"]), value=-lr / bias1)
    x.div_(x.norm(dim=-1, keepdim=True))
    moment1 -= (moment1 * x).sum(-1, keepdim=True) * x


def _anneal_batch(
    starts: np.ndarray,
    t_start: np.ndarray,
    cfg: dict,
    device: torch.device,
    first_restart: int,
    clock: "_Clock",
    history: list,
    step_offset: int,
    deadline: float = math.inf,
) -> _Batch:
    """Minimise the smoothed maximum ``(1/t) log sum_{i<j} exp(t <p_i, p_j>)``.

    The sharpness t grows geometrically from ``t_start`` (one per start, so that
    the starts also differ in how long they behave like a smooth energy) to
    ``t_end`` while the Adam step size decays geometrically.  Small t makes the
    surrogate a Gaussian energy, whose minimisers are spread out globally; large
    t makes it the maximum itself.  Adam's moments live in the tangent space:
    the gradient is projected onto it and the iterate is retracted to the sphere
    by re-normalising each row.

    ``deadline`` (a ``time.perf_counter()`` value) compresses the schedule to
    the time available: the schedule's position is the larger of the fraction
    of steps done and the fraction of the time to the deadline elapsed, so a
    run under a time limit still ends sharp and with small steps
    (``compressed`` in the result says the deadline shortened it).
    """
    dtype = _DTYPES[cfg["dtype"]]
    steps = cfg["steps"]
    batch, k, _ = starts.shape
    x = torch.tensor(starts, dtype=dtype, device=device)  # a copy: the steps update it in place
    t0 = torch.as_tensor(t_start, dtype=dtype, device=device).view(batch, 1, 1)
    growth = torch.log(cfg["t_end"] / t0)
    lr_ratio = cfg["lr_end"] / cfg["lr_start"]
    moment1 = torch.zeros_like(x)
    moment2 = torch.zeros_like(x)
    best_x = x.clone()
    best_val = torch.full((batch,), math.inf, dtype=dtype, device=device)
    diagonal = torch.arange(k, device=device)
    done = 0
    timed_out = compressed = False
    schedule = _Schedule(steps, deadline)
    try:
        for step in range(steps):
            if clock.expired():
                timed_out = True
                break
            frac = schedule.position(step)
            t = t0 * torch.exp(growth * frac)
            lr = cfg["lr_start"] * lr_ratio**frac

            gram = torch.bmm(x, x.transpose(1, 2))
            gram[:, diagonal, diagonal] = -math.inf
            current = gram.amax(dim=(1, 2))
            # Keep each start's best iterate without a host sync (GPU-friendly).
            improved = current < best_val
            best_val = torch.where(improved, current, best_val)
            best_x = torch.where(improved.view(batch, 1, 1), x, best_x)

            # Softmax weights over pairs, shifted by the maximum so exp cannot overflow.
            weights = gram.sub_(current.view(batch, 1, 1)).mul_(t).clamp_(min=_EXP_FLOOR).exp_()
            total = weights.sum(dim=(1, 2), keepdim=True)
            grad = torch.bmm(weights, x).div_(total)
            _riemannian_adam_step(x, grad, moment1, moment2, step, lr, cfg)
            done = step + 1
            compressed = frac >= 1 and done < steps

            if done % cfg["log_every"] == 0 or done == steps or compressed:
                # log(total / 2) because the weight matrix counts every pair twice.
                smooth = current + torch.log(total.view(batch) / 2) / t.view(batch)
                i = int(torch.argmin(best_val))
                history.append((step_offset + done * batch, float(smooth[i]), float(best_val[i])))
                clock.report(first_restart, done, steps, float(best_val[i]))
            if compressed:
                break
    except KeyboardInterrupt:
        # Ctrl-C: keep the best iterates so far (the last update is not measured).
        return _Batch(best_x.double().cpu().numpy(), done, timed_out, interrupted=True)

    # The last update has not been measured yet; measure it in the working precision.
    gram = torch.bmm(x, x.transpose(1, 2))
    gram[:, diagonal, diagonal] = -math.inf
    improved = gram.amax(dim=(1, 2)) < best_val
    best_x = torch.where(improved.view(batch, 1, 1), x, best_x)
    return _Batch(best_x.double().cpu().numpy(), done, timed_out, compressed=compressed)


# --------------------------------------------------------------------------- tammes: polish


@dataclass
class _Linearisation:
    """First-order model of the near-active functions f_c of a minimax problem.

    Function c has value ``values[c]``; its gradient is sparse over the
    prototypes: block b says that moving prototype ``rows[b]`` by delta changes
    ``f_{funcs[b]}`` by ``<grads[b], delta>`` to first order.  Rows K, K+1, ...
    are the unit vectors ``aux`` that the functions also depend on: they move
    in the linear programme (on their own tangent spaces) but are not part of
    the code.
    """

    values: np.ndarray  # (n,)
    funcs: np.ndarray  # (nnz,)
    rows: np.ndarray  # (nnz,)
    grads: np.ndarray  # (nnz, d)
    aux: np.ndarray | None = None  # (n_aux, d)


class _PairCosines:
    """Tammes as a minimax problem: the functions are the pairwise cosines."""

    def value(self, w: np.ndarray) -> float:
        return max_cos(w)

    def log_values(self, w: np.ndarray, value: float) -> tuple[float, float]:
        """(objective, max-cos) for the history."""
        return value, value

    def progress_rho(self, logged: tuple[float, float]) -> None:
        return None

    def active(self, w: np.ndarray, threshold: float) -> _Linearisation:
        rows, cols, cosines = _pairs_above(w, threshold)
        pairs = np.arange(len(rows))
        # d<w_i, w_j> = <w_j, delta_i> + <w_i, delta_j>
        return _Linearisation(
            cosines, np.concatenate([pairs, pairs]), np.concatenate([rows, cols]),
            np.concatenate([w[cols], w[rows]]),
        )


class _PolishBudget:
    """What the polish may spend: simplex work (deterministic) and, if asked, seconds.

    The work of an LP is its non-zeros times HiGHS's simplex iterations, which
    predicts its solve time well (1.0–1.4e-8 s per unit on the development
    CPU, over LPs from 2e6 to 4e7 units) and, unlike seconds, does not depend
    on how busy the machine is: the same seed and settings give the same code.
    ``polish_time`` adds a wall-clock cap for those who prefer a bound on time
    to reproducibility.
    """

    def __init__(self, cfg: dict):
        self.work_left = float(cfg["polish_work"])
        self.deadline = math.inf if cfg["polish_time"] is None else time.perf_counter() + cfg["polish_time"]

    def out_of_time(self) -> bool:
        return time.perf_counter() >= self.deadline

    def seconds_left(self) -> float:
        return self.deadline - time.perf_counter()


def _polish(
    w: np.ndarray, model, cfg: dict, clock: "_Clock", budget: _PolishBudget, history: list, step_offset: int
) -> tuple[np.ndarray, int, bool]:
    """Sequential linear programming on the near-active functions, in float64.

    Minimises ``model.value(w) = max_c f_c(w)`` (Tammes: the pairwise cosines;
    Softmax Code: minus the one-vs-rest distances).  Each round solves, for
    tangent moves ``delta_i = r u_i`` (``<w_i, u_i> = 0``, ``|u_i|_inf <= 1``,
    trust radius r), the linear programme

        minimise s  subject to  f_c + sum_i <grad_i f_c, delta_i> <= s

    over the functions within reach of the maximum (a move changes each of
    them by at most ~2 r sqrt(d): their gradients have rows of total norm <= 2),
    then re-normalises the rows.  A round that lowers the true maximum is kept
    and r grows; otherwise r shrinks.  The LP is the exact first-order model of
    the max, so near a jammed optimum the rounds converge to round-off.  It is
    posed in units of r, relative to the current maximum, so that HiGHS's
    tolerances act on O(1) numbers and do not limit the precision.

    The LPs of very symmetric codes are highly degenerate and slow (E8's has
    6720 pairs at the maximum: minutes per LP), so a round whose LP would have
    more than ``polish_max_nonzeros`` non-zeros ends the polish, and so does
    the end of the ``budget`` (shared by the codes polished in one run).

    Returns the polished code, the number of rounds, and whether it converged
    (the LP predicts no improvement above ``polish_tol``, or r fell below
    ``polish_min_radius``).
    """
    k, d = w.shape
    w = _normalise_rows(w)
    current = model.value(w)
    radius = cfg["polish_radius"]
    max_radius = 100 * cfg["polish_radius"]
    coords = np.arange(d)
    for rounds in range(1, cfg["polish_rounds"] + 1):
        if clock.expired() or budget.out_of_time():
            return w, rounds - 1, False
        reach = 4 * radius * math.sqrt(d) + 2 * radius**2 * d
        lin = model.active(w, current - reach)
        n_func = len(lin.values)
        nonzeros = len(lin.rows) * d + n_func
        if nonzeros > cfg["polish_max_nonzeros"] or budget.work_left <= 0:
            return w, rounds - 1, False
        moving, slot_of = np.unique(lin.rows, return_inverse=True)
        n_var = len(moving) * d + 1
        base = w if lin.aux is None else np.vstack([w, lin.aux])

        # Function row: sum_i <grad_i f_c, u_i> - sigma <= (current - f_c) / r,
        # where sigma = (s - current) / r is the last variable.
        a_ub = scipy.sparse.csr_matrix(
            (
                np.concatenate([lin.grads.ravel(), -np.ones(n_func)]),
                (
                    np.concatenate([np.repeat(lin.funcs, d), np.arange(n_func)]),
                    np.concatenate([(slot_of[:, None] * d + coords).ravel(), np.full(n_func, n_var - 1)]),
                ),
            ),
            shape=(n_func, n_var),
        )
        a_eq = scipy.sparse.csr_matrix(
            (base[moving].ravel(), (np.repeat(np.arange(len(moving)), d), np.arange(len(moving) * d))),
            shape=(len(moving), n_var),
        )
        bounds = np.empty((n_var, 2))
        bounds[:-1] = (-1.0, 1.0)
        bounds[-1] = (-np.inf, np.inf)
        objective = np.zeros(n_var)
        objective[-1] = 1.0
        lp_options = {
            "primal_feasibility_tolerance": 1e-10,
            "dual_feasibility_tolerance": 1e-10,
            "time_limit": max(min(clock.remaining(), budget.seconds_left()), 1e-3),
            # One LP may not overrun the work budget either (a degenerate one
            # can need thousands of iterations).
            "maxiter": max(1, int(budget.work_left // nonzeros)),
        }
        lp = linprog(
            objective, A_ub=a_ub, b_ub=(current - lin.values) / radius, A_eq=a_eq,
            b_eq=np.zeros(len(moving)), bounds=bounds, method="highs", options=lp_options,
        )
        budget.work_left -= nonzeros * max(int(lp.nit), 1)
        if lp.status != 0:
            if clock.expired() or budget.out_of_time():
                return w, rounds - 1, False  # the LP was cut short: the round did not happen
            radius /= 4
        else:
            predicted_gain = -radius * lp.x[-1]
            if predicted_gain <= cfg["polish_tol"]:
                history.append((step_offset + rounds, *model.log_values(w, current)))
                return w, rounds, True
            trial = w.copy()
            in_code = moving < k
            trial[moving[in_code]] += radius * lp.x[:-1].reshape(-1, d)[in_code]
            trial = _normalise_rows(trial)
            value = model.value(trial)
            if value < current:
                gain = current - value
                w, current = trial, value
            else:
                gain = 0.0
            # Grow r while the linear model predicts the gain well; shrink it
            # when the curvature it ignores eats the gain.
            radius = min(2 * radius, max_radius) if gain > 0.5 * predicted_gain else radius / 4
        logged = model.log_values(w, current)
        history.append((step_offset + rounds, *logged))
        clock.report(clock.restarts, rounds, cfg["polish_rounds"], logged[1], model.progress_rho(logged))
        if radius < cfg["polish_min_radius"]:
            return w, rounds, True
    return w, rounds, False


@contextlib.contextmanager
def _torch_threads(threads: int | None):
    """Run the enclosed code with ``threads`` torch CPU threads (None: unchanged).

    torch's thread count is process-wide; it is restored on the way out.
    """
    if threads is None or threads == torch.get_num_threads():
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _default_threads(work_per_step: float, device: torch.device) -> int | None:
    return 1 if device.type == "cpu" and work_per_step <= _SMALL_WORK else None


class _Clock:
    """Wall-clock budget and progress reporting shared by the stages of a solver."""

    def __init__(self, time_limit: float | None, progress: Callable | None, restarts: int, begin: float):
        self.begin = begin
        self.limit = time_limit
        self.progress = progress
        self.restarts = restarts

    def elapsed(self) -> float:
        return time.perf_counter() - self.begin

    def remaining(self) -> float:
        return math.inf if self.limit is None else self.limit - self.elapsed()

    def expired(self) -> bool:
        return self.limit is not None and self.elapsed() >= self.limit

    def report(self, restart: int, step: int, steps: int, max_cos: float, rho: float | None = None) -> None:
        if self.progress is not None:
            self.progress(Progress(restart, self.restarts, step, steps, float(max_cos), self.elapsed(), rho))


# --------------------------------------------------------------------------- tammes


#: Work per step (K^2 d multiply-adds) at which the default budget stops
#: growing: a start gets ``_WORK_BUDGET / (K^2 d)`` steps, within the bounds below.
_WORK_BUDGET = 6.4e10
_MIN_STEPS, _MAX_STEPS = 100, 2000

_TAMMES_OPTIONS = {
    "dtype": "auto",
    "t_start": None,
    "t_end": None,
    "t_spread": 100.0,
    "lr_start": None,
    "lr_end": None,
    "beta1": 0.9,
    "beta2": 0.99,
    "eps": 1e-12,
    "batch_size": None,
    "threads": None,
    "log_every": 50,
    "closed_form": True,
    "polish": None,
    "polish_top": 3,
    "polish_rounds": 200,
    "polish_radius": 1e-3,
    "polish_min_radius": 1e-11,
    "polish_tol": 1e-14,
    "polish_time": None,
    "polish_work": None,
    "polish_max_nonzeros": 50_000,
    "neighbours": None,
    "refresh": None,
    "max_memory": None,
    "init_noise": None,
    "perturb_rounds": None,
    "symmetric_starts": None,
}

#: What each ``effort`` adds to the defaults: a factor on the random starts and
#: the perturb-and-repolish rounds (:mod:`spherecodes.basin`) after the polish.
EFFORTS = {
    "low": {"restarts": 0.25, "perturb_rounds": 0, "symmetric": 0.5},
    "default": {"restarts": 1.0, "perturb_rounds": 0, "symmetric": 0.5},
    "high": {"restarts": 4.0, "perturb_rounds": 40, "symmetric": 0.5},
}


def tammes_defaults(
    d: int, k: int, device: str | torch.device = "cpu", *, neighbours: int | None = None,
    max_memory: float | None = None,
) -> dict:
    """The settings :func:`tammes` uses for (d, K) when none are given.

    Parameters
    ----------
    d, k : int
        Dimension and number of prototypes.
    device : str or torch.device
        Where the solver will run (it changes the default precision).
    neighbours : int, optional
        0: the dense path (all pairs).  m >= 1: neighbour lists of m
        prototypes (:mod:`spherecodes.neighbours`).  None: neighbour lists
        (m from :func:`spherecodes.neighbours.neighbour_defaults`) when K
        exceeds :data:`spherecodes.neighbours.NEIGHBOUR_MIN_K` or the dense
        working set of one start does not fit the memory limit, else dense.
    max_memory : float, optional
        Bytes the solver may use on ``device``; default a safe fraction of
        what is available.

    Returns
    -------
    dict
        ``steps``, ``restarts`` and every option of :func:`tammes`;
        ``neighbours`` is 0 for the dense path.

    Examples
    --------
    >>> cfg = tammes_defaults(3, 12)
    >>> cfg["restarts"], cfg["steps"], cfg["dtype"], cfg["polish"]
    (64, 2000, 'float64', True)
    >>> cfg = tammes_defaults(64, 1000)
    >>> cfg["restarts"], cfg["steps"], cfg["dtype"], cfg["polish"]
    (1, 1000, 'float32', False)
    >>> cfg = tammes_defaults(64, 100_000)
    >>> cfg["neighbours"], cfg["refresh"], cfg["steps"], cfg["dtype"]
    (64, 50, 1000, 'float32')
    """
    d, k = _check_int("d", d, 1), _check_int("K", k, 2)
    device = torch.device(device)
    m = _resolve_neighbours(d, k, device, neighbours, max_memory)
    work = float(k) ** 2 * d
    angle = _estimated_angle(d, k)
    # Sharpness is measured against the gap between neighbouring cosines, which
    # is ~ (1 - cos angle); the starting value also scales with the spread
    # 1/sqrt(d) of random cosines, so that the first steps see the whole code.
    gap = 1 - math.cos(angle)
    lr_start = min(0.15 / math.sqrt(d), angle / 10)
    if work <= 2e4:
        restarts = 64
    elif work <= 2e5:
        restarts = 16
    elif work <= 2e6:
        restarts = 4
    else:
        restarts = 1
    cfg = dict(_TAMMES_OPTIONS)
    cfg.update(
        steps=int(min(max(_WORK_BUDGET / work, _MIN_STEPS), _MAX_STEPS)),
        restarts=restarts,
        dtype="float32" if device.type == "cuda" or work > 2e6 else "float64",
        t_start=1.25 * math.sqrt(d) / gap,
        t_end=2500.0 / gap,
        lr_start=lr_start,
        lr_end=lr_start / 100,
        batch_size=max(1, min(restarts, int(2**20 // k**2))),
        # The polish solves LPs with up to K*d variables: worth it, and
        # affordable, for small codes only.
        polish=k * d <= 20_000,
        neighbours=m,
    )
    if m:
        from .neighbours import neighbour_defaults

        large = neighbour_defaults(d, k)
        # One start at a time; the work per step is ~K·m·d, not K²·d.
        cfg.update(steps=large["steps"], refresh=large["refresh"], restarts=1, batch_size=1,
                   dtype="float32" if device.type == "cuda" or k * m * d > 2e6 else "float64")
    cfg["polish_work"] = _default_polish_work(cfg, k, d)
    return cfg


def _dense_bytes(k: int, d: int, batch: int, itemsize: int) -> float:
    """Peak working memory of the dense annealing: two K×K matrices and the vectors, per start."""
    return itemsize * batch * (2.0 * k * k + 8.0 * k * d)


def _resolve_neighbours(d: int, k: int, device: torch.device, neighbours, max_memory) -> int:
    """m for the neighbour-list path, or 0 for the dense one (see :func:`tammes_defaults`)."""
    from .neighbours import NEIGHBOUR_MIN_K, neighbour_defaults

    if neighbours is not None:
        return min(_check_int("neighbours", neighbours, 0), k - 1)
    itemsize = 4 if device.type == "cuda" or float(k) ** 2 * d > 2e6 else 8
    if k > NEIGHBOUR_MIN_K or _dense_bytes(k, d, 1, itemsize) > memory_limit(str(device), max_memory):
        return neighbour_defaults(d, k)["neighbours"]
    return 0


def _check_polish_options(cfg: dict) -> None:
    """Validate, in place, the options of :func:`_polish` that both minimax solvers share."""
    for name in ("polish_radius", "polish_min_radius", "polish_work"):
        cfg[name] = _check_positive(name, cfg[name])
    for name in ("polish_rounds", "polish_max_nonzeros"):
        cfg[name] = _check_int(name, cfg[name], 1)
    if cfg["polish_time"] is not None:
        cfg["polish_time"] = _check_positive("polish_time", cfg["polish_time"])
    cfg["polish_tol"] = float(cfg["polish_tol"])
    cfg["polish"] = bool(cfg["polish"])


def _default_polish_work(cfg: dict, k: int, d: int) -> float:
    """Simplex work (see :class:`_PolishBudget`) that takes about as long as the annealing."""
    return max(2e8, 0.15 * cfg["restarts"] * cfg["steps"] * float(k) ** 2 * d)


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
    **options,
) -> SolverResult:
    """Minimise the largest cosine between K unit vectors in R^d (Tammes problem).

    Anneals a log-sum-exp smoothing of max-cos over all pairs with Riemannian
    Adam from several random starts (batched on small problems), then polishes
    the best few by sequential linear programming on the near-active pairs
    until max-cos stops improving.  Where a provably optimal closed form exists
    (K <= 2d, d <= 2) it is returned directly unless ``closed_form=False``.
    For large K (above 10,000, or where the K×K matrices do not fit) the
    pairs are each prototype's nearest ones, kept in neighbour lists
    (:mod:`spherecodes.neighbours`), so memory is O(K·(d + m)).  Ctrl-C
    returns the best code so far (``stop_reason="interrupted"``).

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    k : int
        Number of prototypes, >= 2.
    seed : int
        Seed of the random starts; the same seed and settings give bit-identical
        prototypes on the same device and software.
    steps : int, optional
        Annealing steps per start (default: 2000, fewer for large K^2 d so that
        a start costs about 6.4e10 multiply-adds, at least 100).
    restarts : int, optional
        Random starts (default: 64, 16, 4 or 1 as K^2 d grows past 2e4, 2e5, 2e6).
    time_limit : float, optional
        Seconds.  The annealing schedule is compressed to fit the time (its
        sharpness and step size follow the elapsed time when that is ahead
        of the step count), leaving time for the polish; the solver stops
        cleanly and returns the best code so far.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where the annealing runs (the polish always runs on the CPU).
    progress : callable, optional
        Called with a :class:`Progress` every ``log_every`` steps and polish rounds.
    init : array_like, optional
        A start code, (K, d), rows rescaled to unit length (a structured code, or an earlier
        result).  Start 0 is this code itself; start r > 0 is the code moved
        by Gaussian noise of angular size up to ``init_noise`` (default a
        quarter of the estimated neighbour angle).  The annealing of a warm
        start begins sharp (``t_start`` = ``t_end`` / 25) with small steps
        (``lr_start`` a tenth of the default), so it refines the code rather
        than forgetting it, and the result is never worse than ``init``.
    effort : {"low", "default", "high"}
        How much work to spend (:data:`EFFORTS`): "low" runs a quarter of
        the random starts; "high" four times as many, then rounds of
        perturb-and-repolish of the best code (:mod:`spherecodes.basin`:
        reinsert the points of the tightest contacts or the rattlers into
        the deepest holes, or shake the code; re-anneal; polish), for codes
        small enough to polish.  ``result.stages`` records what each stage
        spent.
    **options
        Advanced settings, defaults from :func:`tammes_defaults`:
        ``dtype`` ("auto", "float32", "float64"); ``t_start``, ``t_end``
        (sharpness of the smoothed max at the first and last step);
        ``t_spread`` (start i > 0 begins at ``t_start * t_spread**u_i``, u_i
        uniform in [0, 1), for diverse basins); ``lr_start``, ``lr_end``
        (Adam step size, geometric decay); ``beta1``, ``beta2``, ``eps``
        (Adam's constants; eps is large enough that a second moment which
        underflows in float32 cannot turn a negligible gradient into a full step);
        ``batch_size`` (starts optimised together); ``threads`` (torch CPU
        threads during the run, restored afterwards; default 1 for small
        problems, else unchanged); ``log_every``;
        ``closed_form`` (return a provably optimal closed form when one
        exists); ``polish`` (run the LP polish; default when K*d <= 20,000);
        ``polish_top`` (how many of the best starts to polish);
        ``polish_work`` (simplex work of the whole polish, in LP non-zeros
        times simplex iterations; default 0.15 x the annealing's K^2 d
        multiply-adds, at least 2e8, which takes about as long as the
        annealing on a CPU; unlike seconds it does not depend on the machine's
        load, so runs are reproducible); ``polish_time`` (an optional wall-clock cap on the
        polish, in seconds); ``polish_max_nonzeros`` (skip LPs larger than this); ``polish_rounds``, ``polish_radius``,
        ``polish_min_radius``, ``polish_tol``; ``neighbours`` (0: all
        pairs; m: neighbour lists of m prototypes; default chosen from K
        and the memory); ``refresh`` (steps between refreshes of the lists);
        ``max_memory`` (bytes the run may use on the device; default 80% of
        what is free); ``perturb_rounds`` (rounds of perturb-and-repolish
        after the polish; default from ``effort``).  :func:`tammes_estimate` gives the memory and time a
        call will take before making it.

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
    d, k, seed, time_limit = _check_common(d, k, seed, time_limit, progress)
    _check_options("tammes", options, _TAMMES_OPTIONS)
    init = _check_init(init, d, k)
    cfg, dev = _tammes_config(d, k, steps, restarts, device, options, warm=init is not None, effort=effort)
    settings = {"method": "tammes", "d": d, "k": k, "seed": seed, "time_limit": time_limit,
                "device": str(dev), "init": None if init is None else "array", **cfg}

    closed = _closed_form_result("tammes", d, k, cfg, dev, begin, settings)
    if closed is not None:
        return closed

    plan = tammes_memory(d, k, cfg, dev)
    clock = _Clock(time_limit, progress, cfg["restarts"], begin)
    with _torch_threads(cfg["threads"]):
        settings["threads"] = torch.get_num_threads()
        result = _run_tammes(d, k, seed, cfg, dev, clock, plan, init)
    result.settings = settings
    return result


def _check_init(init, d: int, k: int) -> np.ndarray | None:
    """A start code given by the caller as float64 unit rows of shape (K, d), or None."""
    if init is None:
        return None
    try:
        init = validate_prototypes(init, normalize=True)
    except SpherecodesError as error:
        raise SpherecodesError(f"init: {error}") from None
    if init.shape != (k, d):
        raise SpherecodesError(f"init has shape {init.shape}; expected (K, d) = ({k}, {d})")
    return init


def _tammes_config(d: int, k: int, steps, restarts, device, options: dict, warm: bool = False,
                   effort: str = "default") -> tuple[dict, torch.device]:
    """The checked settings of a :func:`tammes` run: defaults for (d, K) and the path, then the options given.

    ``warm``: the run starts from a given code, so the annealing begins sharp
    and with small steps, and starts r > 0 perturb that code by ``init_noise``.
    """
    dev = resolve_device(device)
    max_memory = options.get("max_memory")
    if max_memory is not None:
        max_memory = _check_positive("max_memory", max_memory)
    cfg = tammes_defaults(d, k, dev, neighbours=options.get("neighbours"), max_memory=max_memory)
    if effort not in EFFORTS:
        raise SpherecodesError(f"effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
    cfg["effort"] = effort
    if not cfg["neighbours"]:
        cfg["restarts"] = max(1, round(cfg["restarts"] * EFFORTS[effort]["restarts"]))
        cfg["batch_size"] = max(1, min(cfg["restarts"], int(2**20 // k**2)))
    # Perturbation rounds need the polish (they compare polished codes).
    cfg["perturb_rounds"] = EFFORTS[effort]["perturb_rounds"] if cfg["polish"] else 0
    if warm:
        cfg.update(t_start=cfg["t_end"] / 25, lr_start=cfg["lr_start"] / 10, lr_end=cfg["lr_end"] / 10,
                   init_noise=_estimated_angle(d, k) / 4)
    # None, and dtype "auto", mean "the default for (d, K)"; neighbours and
    # max_memory are already resolved in cfg.
    explicit = {key: value for key, value in options.items()
                if value is not None and (key, value) != ("dtype", "auto") and key not in ("neighbours", "max_memory")}
    cfg.update(explicit)
    cfg["max_memory"] = max_memory
    if steps is not None:
        cfg["steps"] = _check_int("steps", steps, 1)
    if restarts is not None:
        cfg["restarts"] = _check_int("restarts", restarts, 1)
        if "batch_size" not in explicit:
            cfg["batch_size"] = max(1, min(cfg["restarts"], int(2**20 // k**2)))
    if "symmetric_starts" not in explicit:
        # Symmetric starts exist on the 2-sphere only; a warm start perturbs its code instead.
        symmetric = d == 3 and not warm and k >= 4 and not cfg["neighbours"]
        cfg["symmetric_starts"] = int(cfg["restarts"] * EFFORTS[effort]["symmetric"]) if symmetric else 0
    if cfg["neighbours"]:
        cfg["refresh"] = _check_int("refresh", cfg["refresh"], 1)
        cfg["batch_size"] = 1  # the neighbour-list path runs one start at a time
    elif cfg["refresh"] is not None:
        raise SpherecodesError("refresh applies to the neighbour-list path; give neighbours >= 1 as well")
    cfg["dtype"] = _check_dtype(cfg["dtype"], "float64")
    for name in ("t_start", "t_end", "t_spread", "lr_start", "lr_end", "eps"):
        cfg[name] = _check_positive(name, cfg[name])
    cfg["symmetric_starts"] = _check_int("symmetric_starts", cfg["symmetric_starts"], 0)
    if cfg["symmetric_starts"] > cfg["restarts"] or (cfg["symmetric_starts"] and (d != 3 or warm)):
        raise SpherecodesError(f"symmetric_starts must be at most restarts ({cfg['restarts']}), in R^3 only and "
                               f"without init, got {cfg['symmetric_starts']}")
    if cfg["init_noise"] is not None:
        if not warm:
            raise SpherecodesError("init_noise applies to a warm start; give init as well")
        cfg["init_noise"] = _check_positive("init_noise", cfg["init_noise"])
    if cfg["t_spread"] < 1:
        raise SpherecodesError(f"t_spread must be >= 1, got {cfg['t_spread']}")
    for name in ("beta1", "beta2"):
        cfg[name] = _check_fraction(name, cfg[name])
    for name, minimum in (("batch_size", 1), ("log_every", 1), ("polish_top", 1), ("perturb_rounds", 0)):
        cfg[name] = _check_int(name, cfg[name], minimum)
    if "polish_work" not in explicit:
        cfg["polish_work"] = _default_polish_work(cfg, k, d)
    _check_polish_options(cfg)
    cfg["closed_form"] = bool(cfg["closed_form"])
    if cfg["threads"] is None:
        cfg["threads"] = _default_threads(cfg["batch_size"] * k * k * d, dev)
    else:
        cfg["threads"] = _check_int("threads", cfg["threads"], 1)
    return cfg, dev


def tammes_memory(d: int, k: int, cfg: dict, device: torch.device):
    """Check that the annealing of :func:`tammes` with settings ``cfg`` fits; return its plan.

    The dense path needs two K×K matrices per start in the batch; the
    neighbour-list path the :class:`spherecodes.neighbours.NeighbourPlan`
    that is returned (None for the dense path).  Both also need the code
    in float64 on the host (three copies while it is re-measured).

    Raises
    ------
    SpherecodesError
        When the estimate exceeds ``cfg["max_memory"]`` (default: a safe
        fraction of what is available), with what to change.
    """
    itemsize = 4 if cfg["dtype"] == "float32" else 8
    limit = cfg["max_memory"]
    host = 3 * 8.0 * k * d
    if not cfg["neighbours"]:
        require_memory(
            _dense_bytes(k, d, cfg["batch_size"], itemsize) + (host if device.type == "cpu" else 0.0),
            f"the annealing working set ({cfg['batch_size']} x {k} x {k} pairwise matrices, {cfg['dtype']})",
            str(device), limit=limit, hint="use neighbour lists (neighbours=m, --neighbours M) or choose a smaller size",
        )
        plan = None
    else:
        from .neighbours import neighbour_plan

        plan = neighbour_plan(d, k, cfg["neighbours"], itemsize, device=device,
                              limit=memory_limit(str(device), limit))
        require_memory(
            plan.nbytes + (host if device.type == "cpu" else 0.0),
            f"the neighbour-list working set (K={k}, d={d}, m={cfg['neighbours']}, {cfg['dtype']})",
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
    sample of the work on the device (see
    :func:`spherecodes.neighbours.neighbour_seconds`; for the dense path, one
    step on up to 1024 prototypes, scaled by K²).  The polish, when it runs,
    adds at most about as long as the annealing.

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
    d = _check_int("d", d, 1)
    k = _check_int("K", k, 2)
    _check_options("tammes", options, _TAMMES_OPTIONS)
    cfg, dev = _tammes_config(d, k, steps, restarts, device, options, effort=effort)
    limit = memory_limit(str(dev), cfg["max_memory"])
    if cfg["closed_form"] and _closed_form_optimum(d, k) is not None:
        return Estimate("tammes: a provably optimal closed form", "cpu", 8.0 * k * d, limit, 0.0)
    plan = tammes_memory(d, k, cfg, dev)
    runs = f"{cfg['restarts']} x {cfg['steps']} steps, {cfg['dtype']}"
    with _torch_threads(cfg["threads"]):
        if plan is not None:
            from .neighbours import neighbour_seconds

            what = f"tammes with neighbour lists (m = {plan.m}, refresh every {cfg['refresh']} steps), {runs}"
            return Estimate(what, str(dev), plan.nbytes, limit, cfg["restarts"] * neighbour_seconds(cfg, plan, dev))
        n = min(k, 1024)
        x = torch.nn.functional.normalize(torch.randn(1, n, d, dtype=_DTYPES[cfg["dtype"]]), dim=2).to(dev)
        step = timed_call(lambda: torch.bmm(torch.bmm(x, x.transpose(1, 2)).exp_(), x), dev) * (k / n) ** 2
    itemsize = 4 if cfg["dtype"] == "float32" else 8
    what = f"tammes, all pairs, {runs}" + (", then the polish" if cfg["polish"] else "")
    if cfg["perturb_rounds"]:
        what += f", then {cfg['perturb_rounds']} perturbation rounds"
    # A perturbation round re-anneals a batch (spherecodes.basin) and polishes its best code.
    rounds = cfg["perturb_rounds"] * min(16, max(1, 2**20 // k**2)) * 500
    return Estimate(what, str(dev), _dense_bytes(k, d, cfg["batch_size"], itemsize), limit,
                    (cfg["restarts"] * cfg["steps"] + rounds) * step)


#: Share of a time limit that the annealing's schedule is compressed into when
#: the polish follows (the polish takes about as long as the annealing), and
#: when it does not (the rest covers the float64 re-measurement).
_ANNEAL_SHARE = {True: 0.6, False: 0.9}


def _starts(seed: int, members: list[int], k: int, d: int, init: np.ndarray | None, cfg: dict) -> np.ndarray:
    """The starts of restarts ``members``: random or symmetric, or ``init`` and perturbations of it.

    Without ``init``, the last ``cfg["symmetric_starts"]`` restarts are unions
    of orbits of a rotation group (:func:`spherecodes.symmetric.symmetric_start`,
    stream ``(seed, r, 4)``; d = 3 only) and the others random.  A perturbed
    start r moves every row of ``init`` by Gaussian noise of angular size
    ``u_r * init_noise`` (u_r uniform in [0, 1) from the stream ``(seed, r, 2)``),
    so starts near r = 0 stay close to the given code and later ones explore further.
    """
    if init is None:
        first_symmetric = cfg["restarts"] - cfg["symmetric_starts"]
        if members[-1] < first_symmetric:
            return np.stack([_start(seed, r, k, d) for r in members])
        from .symmetric import orbit_choices, symmetric_start

        choices = orbit_choices(k)
        return np.stack([_start(seed, r, k, d) if r < first_symmetric
                         else symmetric_start(k, np.random.default_rng([seed, r, 4]), choices)[0] for r in members])
    noise = cfg["init_noise"]
    starts = []
    for r in members:
        if r == 0:
            starts.append(init)
            continue
        rng = np.random.default_rng([seed, r, 2])
        scale = rng.random() * noise / math.sqrt(d)
        starts.append(_normalise_rows(init + scale * rng.standard_normal((k, d))))
    return np.stack(starts)


def _batch_deadline(clock: _Clock, cfg: dict, batches_left: int) -> float:
    """When the batch about to run must finish its schedule (``math.inf`` without a time limit).

    The annealing's share of the limit (:data:`_ANNEAL_SHARE`) is divided
    evenly among the batches still to run.
    """
    if clock.limit is None:
        return math.inf
    end = clock.begin + _ANNEAL_SHARE[bool(cfg["polish"])] * clock.limit
    now = time.perf_counter()
    return now + max(end - now, 0.0) / batches_left


def _run_tammes(d: int, k: int, seed: int, cfg: dict, dev: torch.device, clock: _Clock, plan=None,
                init: np.ndarray | None = None) -> SolverResult:
    """Anneal every start (on neighbour lists when ``plan`` is given), polish the best few, return the best code."""
    history: list[tuple[float, float, float]] = []
    spread = np.array([cfg["t_spread"] ** np.random.default_rng([seed, r, 1]).random() if r else 1.0
                       for r in range(cfg["restarts"])])
    codes = []
    total_steps = refreshes = 0
    stop_reason = "steps"
    compressed = False
    firsts = list(range(0, cfg["restarts"], cfg["batch_size"]))
    anneal_begin = clock.elapsed()
    for n_batch, first in enumerate(firsts):
        # The first batch always runs, so that a result exists however short the limit.
        if first and clock.expired():
            stop_reason = "time_limit"
            break
        members = list(range(first, min(first + cfg["batch_size"], cfg["restarts"])))
        starts = _starts(seed, members, k, d, init, cfg)
        t_start = np.minimum(cfg["t_start"] * spread[members], cfg["t_end"])
        deadline = _batch_deadline(clock, cfg, len(firsts) - n_batch)
        if plan is None:
            batch = _anneal_batch(starts, t_start, cfg, dev, first, clock, history, total_steps, deadline)
        else:
            from .neighbours import anneal_neighbours

            batch = anneal_neighbours(starts[0], float(t_start[0]), cfg, plan, dev, first, clock, history,
                                      total_steps, deadline)
            refreshes += batch.refreshes
        total_steps += batch.steps * len(members)
        compressed |= batch.compressed
        codes.extend(_normalise_rows(code) for code in batch.codes)
        if batch.interrupted:
            stop_reason = "interrupted"
            break
        if batch.timed_out:
            stop_reason = "time_limit"
            break
    stages = [{"stage": "anneal", "starts": len(codes), "steps": total_steps,
               "seconds": clock.elapsed() - anneal_begin, "compressed": compressed}]

    # Re-measure in float64: the annealing may have run in float32.  Large
    # codes are measured in tiles of the upper triangle on the device.
    values = np.array([max_cos(code) if plan is None else max_cos(code, device=dev, max_memory=cfg["max_memory"])
                       for code in codes])
    order = np.argsort(values, kind="stable")
    best = int(order[0])
    best_code, best_value = codes[best], float(values[best])
    stages[0]["max_cos"] = best_value
    # S^0 has no tangent directions to move along, so there is nothing to polish.
    if cfg["polish"] and d > 1 and stop_reason not in ("time_limit", "interrupted"):
        polish_begin, polish_steps = clock.elapsed(), total_steps
        # Starts whose annealed values agree closely are usually the same
        # configuration; polishing one of each spends the polish on distinct ones.
        chosen: list[int] = []
        for r in order:
            if len(chosen) == cfg["polish_top"]:
                break
            if all(abs(values[r] - values[c]) > 1e-7 for c in chosen):
                chosen.append(int(r))
        all_converged = True
        largest_gain = 0.0
        budget = _PolishBudget(cfg)
        try:
            for r in chosen:
                # A start cannot win if it trails the best by more than twice what
                # polishing has gained so far (about the smoothing's bias).
                if values[r] - best_value > 2 * largest_gain + 1e-9:
                    break
                polished, rounds, converged = _polish(codes[r], _PairCosines(), cfg, clock, budget, history,
                                                      total_steps)
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
        stages.append({"stage": "polish", "starts": len(chosen), "steps": total_steps - polish_steps,
                       "seconds": clock.elapsed() - polish_begin, "max_cos": best_value})
        if cfg["perturb_rounds"] and stop_reason not in ("time_limit", "interrupted"):
            perturb_begin = clock.elapsed()
            best_code, best_value, record = _perturbation_stage(best_code, best_value, seed, cfg, dev, clock,
                                                                history, total_steps)
            total_steps += record["steps"]
            if stop_reason != "interrupted" and clock.expired():
                stop_reason = "time_limit"
            stages.append({"stage": "perturb", "starts": record["rounds"], "steps": record["steps"],
                           "seconds": clock.elapsed() - perturb_begin, "max_cos": best_value,
                           "improvements": record["improvements"]})
    if compressed and stop_reason in ("steps", "converged"):
        # The limit shortened the planned work, even though the schedule ran to its end.
        stop_reason = "time_limit"
    if init is not None:
        # Never return a code worse than the one given (the annealing may have
        # run in float32, and every start may have left its basin).
        given = max_cos(init)
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
        stop_detail=_stop_detail(stop_reason, cfg, len(codes), stages, clock),
    )


def _perturbation_stage(w, value, seed, cfg, dev, clock, history, step_offset):
    """Perturb-and-repolish rounds (:func:`spherecodes.basin.perturbation_rounds`) with this run's annealing and polish."""
    from .basin import perturbation_rounds

    def anneal(starts, t_start, local):
        batch = _anneal_batch(starts, t_start, local, dev, 0, clock, [], 0)
        return [_normalise_rows(code) for code in batch.codes], batch.steps

    def polish(code):
        polished, rounds, _ = _polish(code, _PairCosines(), cfg, clock, _PolishBudget(cfg), [], 0)
        return polished, rounds

    return perturbation_rounds(w, value, cfg["perturb_rounds"], seed, cfg, dev, clock, history, step_offset,
                               anneal=anneal, polish=polish)


def _stop_detail(stop_reason: str, cfg: dict, starts_run: int, stages: list[dict], clock: _Clock) -> str:
    """One sentence on when and why a run stopped, or what the time limit changed; "" for a full run."""
    anneal = stages[0]
    planned = cfg["restarts"] * cfg["steps"]
    if stop_reason == "interrupted":
        return f"interrupted (Ctrl-C) after {clock.elapsed():.3g} s; the best code so far is returned"
    if stop_reason == "time_limit" and len(stages) == 3:
        return (f"stopped early at the time limit of {clock.limit:.3g} s, after {stages[2]['starts']} of "
                f"{cfg['perturb_rounds']} perturbation rounds; the best code so far is returned")
    if stop_reason == "time_limit" and not anneal["compressed"]:
        what = (f"{starts_run} of {cfg['restarts']} starts, {anneal['steps']} of {planned} annealing steps"
                + (", polish cut short" if len(stages) > 1 else ", no polish" if cfg["polish"] else ""))
        return f"stopped early at the time limit of {clock.limit:.3g} s ({what}); the best code so far is returned"
    if anneal["compressed"]:
        return (f"the annealing schedule was compressed into {anneal['seconds']:.3g} s to fit the time limit of "
                f"{clock.limit:.3g} s ({anneal['steps']} of {planned} steps)")
    return ""


# --------------------------------------------------------------------------- maxsep


_MAXSEP_OPTIONS = {"momentum": 0.0, "dtype": "auto", "batch_size": None, "threads": None, "log_every": 50}


def maxsep(
    d: int,
    k: int,
    *,
    seed: int = 0,
    steps: int | None = 1000,
    lr: float = 0.1,
    restarts: int | None = 1,
    time_limit: float | None = None,
    device: str | torch.device = "auto",
    progress: Callable[[Progress], None] | None = None,
    init: np.ndarray | None = None,
    **options,
) -> SolverResult:
    """The hyperspherical-prototype objective of seed 002 (Eq. 5), as published.

    Minimises ``L_HP = (1/K) sum_i max_{j} M_ij`` with ``M = P P^T - 2I`` by
    plain gradient steps from a random start, re-normalising every row after
    each step.  The (sub)gradient of row i is ``(p_{j(i)} + sum_{l: j(l) = i} p_l) / K``
    where j(i) is the nearest neighbour of i (first index on ties).  The
    authors' code (github.com/psmmettes/hpn, ``prototypes.py``) uses
    ``torch.optim.SGD(lr=0.1, momentum=0.9)`` but builds a new optimiser after
    every step, so its momentum buffer never carries over and every update is
    a plain gradient step; that is what ``momentum=0`` (the default)
    reproduces.  The paper's text quotes 1000 epochs, the default here.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    k : int
        Number of prototypes, >= 2.
    seed : int
        Seed of the random starts.
    steps : int, optional
        Gradient steps per start (``None``: 1000).
    lr : float
        Step size.
    restarts : int, optional
        Independent starts; the one with the lowest final max-cos is returned (``None``: 1).
    time_limit : float, optional
        Seconds; stops cleanly and returns the best code so far.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where the steps run.
    progress : callable, optional
        Called with a :class:`Progress` every ``log_every`` steps.
    init : array_like, optional
        A start code, (K, d) unit rows: start 0 begins there instead of at
        random vectors (the other starts stay random).
    **options
        ``momentum`` (heavy-ball coefficient whose buffer *is* kept across
        steps; 0 reproduces the published procedure), ``dtype`` ("auto" =
        float32, as published; or "float64"), ``batch_size``, ``threads`` (as
        in :func:`tammes`), ``log_every``.

    Returns
    -------
    SolverResult
        ``history`` holds ``L_HP`` as the objective; ``stop_reason`` is
        ``"steps"`` or ``"time_limit"``.

    Examples
    --------
    >>> res = maxsep(16, 40, seed=1, steps=200, device="cpu")
    >>> bool(res.history[-1, 1] < res.history[0, 1])  # L_HP went down
    True
    """
    begin = time.perf_counter()
    d, k, seed, time_limit = _check_common(d, k, seed, time_limit, progress)
    _check_options("maxsep", options, _MAXSEP_OPTIONS)
    steps = 1000 if steps is None else _check_int("steps", steps, 1)
    restarts = 1 if restarts is None else _check_int("restarts", restarts, 1)
    lr = _check_positive("lr", lr)
    init = _check_init(init, d, k)
    dev = resolve_device(device)
    cfg = dict(_MAXSEP_OPTIONS)
    cfg.update({key: value for key, value in options.items() if value is not None})
    cfg["momentum"] = _check_fraction("momentum", cfg["momentum"])
    # float32 is torch's default and what the published code ran in.
    cfg["dtype"] = _check_dtype(cfg["dtype"], "float32")
    if cfg["batch_size"] is None:
        cfg["batch_size"] = max(1, min(restarts, int(2**20 // k**2)))
    cfg["batch_size"] = _check_int("batch_size", cfg["batch_size"], 1)
    cfg["log_every"] = _check_int("log_every", cfg["log_every"], 1)
    if cfg["threads"] is None:
        cfg["threads"] = _default_threads(cfg["batch_size"] * k * k * d, dev)
    else:
        cfg["threads"] = _check_int("threads", cfg["threads"], 1)
    settings = {"method": "maxsep", "d": d, "k": k, "seed": seed, "steps": steps, "lr": lr,
                "restarts": restarts, "time_limit": time_limit, "device": str(dev),
                "init": None if init is None else "array", **cfg}

    itemsize = 4 if cfg["dtype"] == "float32" else 8
    require_memory(
        itemsize * cfg["batch_size"] * (3 * k * k + 6 * k * d),
        f"the maxsep working set ({cfg['batch_size']} x {k} x {k} pairwise matrices, {cfg['dtype']})",
        device=str(dev),
    )
    clock = _Clock(time_limit, progress, restarts, begin)
    with _torch_threads(cfg["threads"]):
        settings["threads"] = torch.get_num_threads()
        result = _run_maxsep(d, k, seed, steps, lr, restarts, cfg, dev, clock, init)
    result.settings = settings
    return result


def _lhp_gradient(x: torch.Tensor, nearest: torch.Tensor) -> torch.Tensor:
    """Gradient of L_HP: row i gets ``(p_{j(i)} + sum_{l: j(l) = i} p_l) / K``.

    On the CPU the second sum is a scatter-add, which runs sequentially there
    and is deterministic.  CUDA's scatter-add uses atomics whose order varies,
    so there the sum is a product with the one-hot matrix of the choices.
    """
    batch, k, _ = x.shape
    chosen = torch.gather(x, 1, nearest.unsqueeze(2).expand_as(x))
    if x.device.type == "cpu":
        chosen_by = torch.zeros_like(x).scatter_add_(1, nearest.unsqueeze(2).expand_as(x), x)
    else:
        one_hot = torch.zeros(batch, k, k, dtype=x.dtype, device=x.device).scatter_(2, nearest.unsqueeze(2), 1.0)
        chosen_by = torch.bmm(one_hot.transpose(1, 2), x)
    return (chosen + chosen_by) / k


def _run_maxsep(d, k, seed, steps, lr, restarts, cfg, dev, clock, init=None) -> SolverResult:
    """Plain (or heavy-ball) gradient steps on L_HP for every start; return the best final code."""
    dtype = _DTYPES[cfg["dtype"]]
    history: list[tuple[float, float, float]] = []
    codes = []
    total_steps = 0
    stop_reason = "steps"
    eye2 = 2 * torch.eye(k, dtype=dtype, device=dev)
    for first in range(0, restarts, cfg["batch_size"]):
        if first and clock.expired():
            stop_reason = "time_limit"
            break
        members = range(first, min(first + cfg["batch_size"], restarts))
        batch = len(members)
        starts = [init if r == 0 and init is not None else _start(seed, r, k, d) for r in members]
        x = torch.as_tensor(np.stack(starts), dtype=dtype, device=dev)
        velocity = torch.zeros_like(x)
        done = 0
        for step in range(steps):
            if clock.expired():
                stop_reason = "time_limit"
                break
            m = torch.bmm(x, x.transpose(1, 2)) - eye2
            nearest_cos, nearest = m.max(dim=2)
            grad = _lhp_gradient(x, nearest)
            velocity = velocity.mul_(cfg["momentum"]).add_(grad)
            x = x - lr * velocity
            x = x / x.norm(dim=-1, keepdim=True)
            done = step + 1
            if step == 0 or done % cfg["log_every"] == 0 or done == steps:
                # L_HP and max-cos of the iterate this step started from.
                loss = nearest_cos.mean(dim=1)
                top = nearest_cos.amax(dim=1)
                i = int(torch.argmin(top))
                history.append((total_steps + done * batch, float(loss[i]), float(top[i])))
                clock.report(first, done, steps, float(top[i]))
        total_steps += done * batch
        codes.extend(_normalise_rows(code) for code in x.double().cpu().numpy())
        if stop_reason == "time_limit":
            break

    values = [max_cos(code) for code in codes]
    best = int(np.argmin(values))
    return SolverResult(
        prototypes=codes[best],
        method="maxsep",
        max_cos=float(values[best]),
        history=np.array(history, dtype=np.float64).reshape(-1, 3),
        restarts=len(codes),
        best_restart=best,
        steps=total_steps,
        wall_time=clock.elapsed(),
        device=str(dev),
        stop_reason=stop_reason,
    )


# --------------------------------------------------------------------------- any objective


def descend_on_sphere(
    x0: np.ndarray,
    objective: Callable,
    *,
    steps: int,
    lr_start: float,
    lr_end: float,
    adam: dict,
    dtype: str,
    device: torch.device,
    clock: "_Clock",
    history: list,
    log_every: int,
) -> tuple[np.ndarray, int, bool]:
    """Minimise a differentiable ``objective(x, step)`` over unit rows x with Riemannian Adam.

    The same steps as :func:`tammes` (:func:`_riemannian_adam_step`), with the
    gradient from autograd and a step size decaying geometrically from
    ``lr_start`` to ``lr_end``; ``adam`` holds ``beta1``, ``beta2`` and
    ``eps``.  Used by objectives defined elsewhere, such as the privileged
    loss of :func:`spherecodes.semantic.privileged`.

    Returns the float64 code, the steps done and whether the clock stopped
    the run; appends ``(step, objective, max_cos)`` rows to ``history``.

    Examples
    --------
    >>> import math
    >>> clock = _Clock(None, None, 1, time.perf_counter())
    >>> spread = lambda x, step: torch.logsumexp(20 * (x @ x.T - 3 * torch.eye(len(x))).ravel(), 0)
    >>> code, done, _ = descend_on_sphere(_start(0, 0, 3, 2), spread, steps=300, lr_start=0.1, lr_end=0.001,
    ...     adam=_TAMMES_OPTIONS, dtype="float64", device=torch.device("cpu"), clock=clock, history=[],
    ...     log_every=100)
    >>> abs(max_cos(code) - math.cos(2 * math.pi / 3)) < 1e-3  # three points in the plane: 120 degrees apart
    True
    """
    x = torch.tensor(x0, dtype=_DTYPES[dtype], device=device)  # a copy: the steps update it in place
    moment1, moment2 = torch.zeros_like(x), torch.zeros_like(x)
    diagonal = torch.arange(x.shape[0], device=device)
    done = 0
    for step in range(steps):
        if clock.expired():
            return _normalise_rows(x.double().cpu().numpy()), done, True
        lr = lr_start * (lr_end / lr_start) ** (step / max(steps - 1, 1))
        leaf = x.detach().requires_grad_(True)
        value = objective(leaf, step)
        (grad,) = torch.autograd.grad(value, leaf)
        _riemannian_adam_step(x, grad, moment1, moment2, step, lr, adam)
        done = step + 1
        if done % log_every == 0 or done == steps or step == 0:
            with torch.no_grad():
                gram = x @ x.T
                gram[diagonal, diagonal] = -torch.inf
                current = float(gram.max())
            history.append((done, float(value.detach()), current))
            clock.report(0, done, steps, current)
    return _normalise_rows(x.double().cpu().numpy()), done, False


# --------------------------------------------------------------------------- softmax code


class _OneVsRestDistances:
    """Softmax Code as a minimax problem: the functions are minus the one-vs-rest distances.

    Every value comes from the certificate of the code (SPEC §2), so the
    objective the solver improves is the *certified* ρ (its lower end).  The
    certificates of the last two codes seen are kept: both the ascent and the
    polish certify a trial code and, when it is rejected, go on from the
    current one, whose certificate must not be computed again.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self.certificates = 0
        self._recent: list[tuple[bytes, object]] = []  # (code bytes, certificate), newest last

    def certificate(self, w: np.ndarray):
        # Imported here: the certificate module imports the solvers (through
        # spherecodes.neighbours), so a module-level import would be circular.
        from .certificate import one_vs_rest_distances

        key = w.tobytes()
        for seen, cert in self._recent:
            if seen == key:
                return cert
        cert = one_vs_rest_distances(w, device=self.device)
        self.certificates += 1
        self._recent = [*self._recent[-1:], (key, cert)]
        return cert

    def value(self, w: np.ndarray) -> float:
        return -self.certificate(w).rho_lower

    def log_values(self, w: np.ndarray, value: float) -> tuple[float, float]:
        """(certified ρ, max-cos) for the history."""
        return -value, max_cos(w)

    def progress_rho(self, logged: tuple[float, float]) -> float:
        return logged[0]

    def active(self, w: np.ndarray, threshold: float) -> _Linearisation:
        # By duality dist_k = max_{|h|<=1} min_j <w_k - w_j, h>, attained at
        # h_k.  Its first-order model moves both the prototypes and h:
        #     <w_k - w_j, h_k> + <delta_k - delta_j, h_k> + <w_k - w_j, eta_k>
        # for the j near the minimum, with eta_k tangent to h_k.  Maximising
        # over eta_k gives the exact directional derivative
        # min_{v optimal} <delta_k - sum_j v_j delta_j, h_k> (a single v, or
        # h held fixed, would stall on degenerate supports such as the
        # cross-polytope's, where the optimal v is not unique).
        k = len(w)
        cert = self.certificate(w)
        classes = np.flatnonzero(-cert.lo >= threshold)
        features = np.nan_to_num(cert.features[classes])
        margins = (w[classes] * features).sum(1, keepdims=True) - features @ w.T
        margins[np.arange(len(classes)), classes] = np.inf
        own, other = np.nonzero(-margins >= threshold)
        pairs = np.arange(len(own))
        return _Linearisation(
            -margins[own, other],
            np.concatenate([pairs, pairs, pairs]),
            np.concatenate([classes[own], other, k + own]),
            np.concatenate([-features[own], features[own], w[other] - w[classes[own]]]),
            aux=features,
        )

    def smoothed_min(self, dist: np.ndarray, t: float) -> float:
        """``-(1/t) log sum_k exp(-t dist_k)``, a smooth lower bound of min_k dist_k."""
        low = dist.min()
        return float(low - np.log(np.exp(-t * (dist - low)).sum()) / t)

    def ascent_direction(self, w: np.ndarray, t: float) -> np.ndarray:
        """Gradient of the smoothed minimum of the distances, projected on the tangent spaces."""
        cert = self.certificate(w)
        k = len(w)
        alpha = np.exp(-t * (cert.hi - cert.hi.min()))
        alpha /= alpha.sum()
        own, slot = np.nonzero(cert.support_indices >= 0)
        # Row k of A holds alpha_k at k and -alpha_k v_kj at each support point j.
        a = scipy.sparse.csr_matrix(
            (
                np.concatenate([alpha, -alpha[own] * cert.support_weights[own, slot]]),
                (np.concatenate([np.arange(k), own]), np.concatenate([np.arange(k), cert.support_indices[own, slot]])),
            ),
            shape=(k, k),
        )
        grad = a.T @ np.nan_to_num(cert.features)
        return grad - (grad * w).sum(1, keepdims=True) * w


_SOFTMAX_OPTIONS = {
    "start": "tammes",
    "lr": None,
    "t_start": 20.0,
    "t_end": 2e5,
    "log_every": 10,
    "threads": None,
    "closed_form": True,
    "polish": None,
    "polish_rounds": 200,
    "polish_radius": 1e-3,
    "polish_min_radius": 1e-11,
    "polish_tol": 1e-14,
    "polish_time": None,
    "polish_work": 2e8,
    "polish_max_nonzeros": 200_000,
}


def softmax_code(
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
    **options,
) -> SolverResult:
    """Maximise ρ, the smallest distance from a prototype to the hull of the others (Softmax Code).

    ρ = min_k dist_k is the objective of seed 003 (Eq. 3).  Starting from the
    :func:`tammes` code (or a random one), each step certifies the code
    (:func:`spherecodes.certificate.one_vs_rest_distances`), takes the
    subgradient of SPEC §4 (``d dist_k/d w_k = h_k``, ``d dist_k/d w_j =
    -v_kj h_k``) of a log-sum-exp smoothing of the minimum over classes, whose
    sharpness t grows geometrically, and moves along it on the sphere; a step
    that does not raise the smoothed minimum is undone and the step size
    halved.  Small codes (K*d <= 20,000) are then polished by sequential
    linear programming on the classes nearest the minimum, as in
    :func:`tammes`.  The code returned is the one with the largest certified
    ρ seen, so it is never worse than the start.  Where a closed form is
    provably optimal (K <= 2d, d <= 2: seed 003 Thm 3.3) it is returned directly.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    k : int
        Number of prototypes, >= 2.
    seed : int
        Seed of the starting code.
    steps : int, optional
        Ascent steps (default: 300 for K*d <= 20,000, else 50).  Each costs one
        certificate: about 1.5 s at (d, K) = (64, 1000) and 45 s at (256, 1000)
        on two CPU cores, growing like K d^2.5; ``time_limit`` caps the total.
    restarts : int, optional
        Starts of the :func:`tammes` run that gives the starting code.
    time_limit : float, optional
        Seconds for the whole run, start included; the best code so far is returned.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where the start and the certificates run.
    progress : callable, optional
        Called with a :class:`Progress` every ``log_every`` steps; its
        ``max_cos`` field carries the certified ρ of the best code so far.
    init : array_like, optional
        A start code, (K, d) unit rows (the same as ``start=init``); the
        result is never worse than it.
    **options
        ``start`` ("tammes", "random", or a (K, d) array of unit rows);
        ``lr`` (first step, as an angle; default a tenth of the typical
        neighbour angle from a random start, a hundredth from the Tammes
        code); ``t_start``, ``t_end`` (sharpness of the smoothed minimum, in
        units of 1/ρ of the start); ``threads``; ``log_every``;
        ``closed_form``; ``polish`` and the ``polish_*`` options of :func:`tammes`.

    Returns
    -------
    SolverResult
        ``method`` is ``"softmax"``; ``history`` holds the certified ρ as the
        objective (maximised) and the max-cos of each logged step;
        ``settings["rho_start"]`` is the certified ρ of the start.  Ctrl-C
        returns the best code so far with ``stop_reason="interrupted"`` (and
        ``rho`` None if it struck before the start was certified).

    Examples
    --------
    From a random start, five points in the plane reach the regular pentagon,
    whose ρ is 1 − cos(2π/5):

    >>> import math
    >>> from spherecodes.certificate import one_vs_rest_distances
    >>> res = softmax_code(2, 5, start="random", closed_form=False, device="cpu")
    >>> rho = one_vs_rest_distances(res.prototypes).rho_lower
    >>> abs(rho - (1 - math.cos(2 * math.pi / 5))) < 1e-9
    True
    """
    begin = time.perf_counter()
    d, k, seed, time_limit = _check_common(d, k, seed, time_limit, progress)
    _check_options("softmax", options, _SOFTMAX_OPTIONS)
    dev = resolve_device(device)
    cfg = dict(_SOFTMAX_OPTIONS)
    cfg.update({key: value for key, value in options.items() if value is not None})
    if init is not None:
        if "start" in options:
            raise SpherecodesError("give the start code as init or as start, not both")
        cfg["start"] = init
    small = k * d <= 20_000
    cfg["steps"] = (300 if small else 50) if steps is None else _check_int("steps", steps, 1)
    if cfg["polish"] is None:
        cfg["polish"] = small
    for name in ("t_start", "t_end"):
        cfg[name] = _check_positive(name, cfg[name])
    cfg["log_every"] = _check_int("log_every", cfg["log_every"], 1)
    if cfg["threads"] is not None:
        cfg["threads"] = _check_int("threads", cfg["threads"], 1)
    _check_polish_options(cfg)
    start = cfg.pop("start")
    if isinstance(start, str):
        if start not in ("tammes", "random"):
            raise SpherecodesError(f"start must be 'tammes', 'random' or a (K, d) array, got {start!r}")
    else:
        start = validate_prototypes(start)
        if start.shape != (k, d):
            raise SpherecodesError(f"the start has shape {start.shape}; expected (K, d) = ({k}, {d})")
    angle = _estimated_angle(d, k)
    if cfg["lr"] is None:
        cfg["lr"] = angle / (100 if isinstance(start, str) and start == "tammes" else 10)
    cfg["lr"] = _check_positive("lr", cfg["lr"])
    settings = {"method": "softmax", "d": d, "k": k, "seed": seed, "time_limit": time_limit, "device": str(dev),
                "start": start if isinstance(start, str) else "array", **cfg}

    closed = _closed_form_result("softmax", d, k, cfg, dev, begin, settings)
    if closed is not None:
        return closed

    clock = _Clock(time_limit, progress, 1, begin)
    with _torch_threads(cfg["threads"]):
        if isinstance(start, str) and start == "tammes":
            first = tammes(d, k, seed=seed, restarts=restarts, time_limit=time_limit, device=dev,
                           progress=progress, threads=cfg["threads"])
            w0, first_steps = first.prototypes, first.steps
            settings["start_settings"] = first.settings
            start_interrupted = first.stop_reason == "interrupted"
        else:
            w0 = _start(seed, 0, k, d) if isinstance(start, str) else start
            first_steps = 0
            start_interrupted = False
        settings["threads"] = torch.get_num_threads()
        result = _run_softmax(w0, first_steps, cfg, dev, clock, start_interrupted)
    result.settings = {**settings, **result.settings}
    return result


def _run_softmax(
    w: np.ndarray, steps_before: int, cfg: dict, dev: torch.device, clock: _Clock, interrupted: bool = False
) -> SolverResult:
    """Run the ascent and the polish from ``w``; Ctrl-C returns the best code so far.

    ``interrupted`` says that the start itself was cut short by Ctrl-C: it is
    returned as it is.
    """
    model = _OneVsRestDistances(dev)
    history: list[tuple[float, float, float]] = []
    best = {"w": w, "rho": None, "rho_start": None, "steps": 0}
    stop_reason = "interrupted"
    if not interrupted:
        try:
            stop_reason = _softmax_stages(w, steps_before, cfg, clock, model, history, best)
        except KeyboardInterrupt:
            stop_reason = "interrupted"
    return SolverResult(
        prototypes=best["w"],
        method="softmax",
        max_cos=max_cos(best["w"]),
        history=np.array(history, dtype=np.float64).reshape(-1, 3),
        restarts=1,
        best_restart=0,
        steps=steps_before + best["steps"],
        wall_time=clock.elapsed(),
        device=str(dev),
        stop_reason=stop_reason,
        settings={"rho_start": best["rho_start"], "rho": best["rho"], "certificates": model.certificates},
    )


def _softmax_stages(w, steps_before: int, cfg: dict, clock: _Clock, model, history: list, best: dict) -> str:
    """Smoothed subgradient ascent on ρ with step-size control, then the LP polish.

    Keeps the best certified code in ``best`` as it goes (so that an interrupt
    loses nothing) and returns the stop reason.
    """
    best["rho_start"] = best["rho"] = model.certificate(w).rho_lower
    scale = 1 / max(best["rho"], 1e-3)
    lr = cfg["lr"]
    steps = cfg["steps"]
    stop_reason = "steps"
    for step in range(steps):
        if clock.expired():
            stop_reason = "time_limit"
            break
        t = scale * cfg["t_start"] * (cfg["t_end"] / cfg["t_start"]) ** (step / max(steps - 1, 1))
        direction = model.ascent_direction(w, t)
        longest = np.linalg.norm(direction, axis=1).max()
        before = model.smoothed_min(model.certificate(w).hi, t)
        if longest > 0:
            trial = _normalise_rows(w + (lr / longest) * direction)
            cert = model.certificate(trial)
            if model.smoothed_min(cert.hi, t) > before:
                w = trial
                lr *= 1.25
                if cert.rho_lower > best["rho"]:
                    best.update(w=trial, rho=cert.rho_lower)
            else:
                lr /= 2
        best["steps"] = step + 1
        if best["steps"] % cfg["log_every"] == 0 or best["steps"] == steps:
            history.append((steps_before + best["steps"], best["rho"], max_cos(best["w"])))
            clock.report(0, best["steps"], steps, history[-1][2], best["rho"])

    if cfg["polish"] and stop_reason != "time_limit" and w.shape[1] > 1:
        polished, rounds, converged = _polish(
            best["w"], model, cfg, clock, _PolishBudget(cfg), history, steps_before + best["steps"]
        )
        best["steps"] += rounds
        rho = model.certificate(polished).rho_lower
        if rho > best["rho"]:
            best.update(w=polished, rho=rho)
        stop_reason = "time_limit" if clock.expired() else ("converged" if converged else "steps")
    return stop_reason
