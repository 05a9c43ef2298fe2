"""What the solvers share: the result types, the clock, Riemannian Adam and the one step loop.

Every optimiser of the package (the dense and neighbour-list annealing of
:func:`spherecodes.solvers.tammes`, :func:`spherecodes.solvers.maxsep` and
:func:`descend_on_sphere`) runs its steps through :func:`run_steps`, which
owns the time limit, the logging cadence and Ctrl-C; the step itself is the
caller's.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from scipy.special import betainc

from ..checks import check_positive, check_seed, check_sizes
from ..constructions import construct, optimal_closed_form
from ..errors import SpherecodesError
from ..rows import equal_rows
from ..sphere import normalise_rows
from ..stats import max_cos, validate_prototypes

__all__ = [
    "ADAM_DEFAULTS", "BATCH_ENTRIES", "DTYPES", "EXP_FLOOR", "HISTORY_COLUMNS", "Batch", "Clock", "LoopEnd",
    "PolishBudget", "Progress", "Schedule", "SolverResult", "batch_size", "check_common", "check_dtype", "check_frozen",
    "check_init", "closed_form_optimum", "closed_form_result", "descend_on_sphere", "estimated_angle", "geometric",
    "hold", "riemannian_adam_step", "run_steps",
]

#: Columns of :attr:`SolverResult.history`.
HISTORY_COLUMNS = ("global_step", "objective", "max_cos")

#: Exponents below this are clamped before ``exp``: the weights they produce
#: (< 1e-26) are negligible, and leaving them would create subnormal floats,
#: which make CPU arithmetic many times slower.
EXP_FLOOR = -60.0

#: The torch dtypes the solvers run in, by name.
DTYPES = {"float32": torch.float32, "float64": torch.float64}

#: Adam's constants used by :func:`spherecodes.solvers.tammes` (``eps`` is large
#: enough that a second moment which underflows in float32 cannot turn a
#: negligible gradient into a full step).
ADAM_DEFAULTS = {"beta1": 0.9, "beta2": 0.99, "eps": 1e-12}

#: Entries of the K x K matrices that one batch of starts holds at most
#: (starts x K^2): a small code's step costs little more in a batch than
#: alone, and this keeps a batch's working matrices to tens of MB.
BATCH_ENTRIES = 2**20


def batch_size(k: int, starts: int) -> int:
    """Starts of a K-point code annealed together: all ``starts``, fewer where they would pass :data:`BATCH_ENTRIES`.

    Examples
    --------
    >>> batch_size(100, 256), batch_size(1000, 16), batch_size(10, 3)
    (104, 1, 3)
    """
    return max(1, min(starts, BATCH_ENTRIES // k**2))


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
    """What a solver returns: the code and how it was obtained (docs/optimisers.md, "The result").

    Attributes
    ----------
    prototypes : numpy.ndarray
        float64 array (K, d); every row has unit norm in float64.
    method : str
        ``"tammes"``, ``"maxsep"``, ``"softmax"`` or ``"lines"``.
    max_cos : float
        ``max_{i != j} <p_i, p_j>``, recomputed in float64 from ``prototypes``.
    history : numpy.ndarray
        float64 array (n, 3), one row per logged step with the columns
        :data:`HISTORY_COLUMNS`: steps over all starts (a batch of B starts
        adds B per step, a polish round 1), the quantity being minimised for
        the batch's best start, and that start's max-cos.
    restarts, best_restart : int
        Starts run (fewer than asked when the time limit struck), and the
        0-based index of the one whose code is returned.
    steps : int
        Optimisation steps taken, summed over starts, plus polish rounds.
    wall_time : float
        Seconds from the call to the return.
    device : str
        Where the steps ran (``"cpu"``, ``"cuda:0"``).
    stop_reason : str
        ``"converged"`` (the polish stopped improving, or a closed form is
        provably optimal), ``"steps"``, ``"time_limit"``, or ``"interrupted"``
        (Ctrl-C in :func:`tammes`: the best code so far is returned).
    settings : dict
        Every setting needed to reproduce the run; JSON-serialisable
        (:func:`tammes`: ``neighbours`` 0 for the dense path, else m).
    refreshes : int
        :func:`tammes` with neighbour lists: refreshes of the lists done.
    stages : list of dict
        :func:`tammes`: how the budget was spent, one dict per stage
        (``"anneal"``, ``"polish"``, ``"perturb"``) with ``starts``,
        ``steps``, ``seconds`` and ``max_cos`` after it, and ``compressed``
        (anneal) or ``improvements`` (perturb).
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


def check_common(d, k, seed, time_limit, progress) -> tuple[int, int, int, float | None]:
    """The arguments every solver takes, checked once: (d, K, seed, time_limit)."""
    d, k = check_sizes(d, k)
    seed = check_seed(seed)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit)
    if progress is not None and not callable(progress):
        raise SpherecodesError(f"progress must be a callable or None, got {type(progress).__name__}")
    return d, k, seed, time_limit


def check_init(init, d: int, k: int) -> np.ndarray | None:
    """A start code given by the caller as float64 unit rows of shape (K, d), or None.

    Examples
    --------
    >>> check_init([[2.0, 0.0], [0.0, 1.0]], 2, 2)
    array([[1., 0.],
           [0., 1.]])
    """
    if init is None:
        return None
    try:
        init = validate_prototypes(init, normalize=True)
    except SpherecodesError as error:
        raise SpherecodesError(f"init: {error}") from None
    if init.shape != (k, d):
        raise SpherecodesError(f"init has shape {init.shape}; expected (K, d) = ({k}, {d})")
    # Rows pointing the same way get the same gradient at every step, so no optimiser pulls them apart (from
    # init itself they end with max-cos 1); rounding catches rows equal but for the last bits.
    groups, _ = equal_rows(init, lambda rows: np.round(rows, 12) + 0.0)
    if groups:
        first, second = groups[0][:2]
        raise SpherecodesError(f"init: rows {first} and {second} point the same way; a start code needs K "
                               "different directions (no optimiser can pull identical rows apart)")
    return init


def check_frozen(frozen, init: np.ndarray | None, given=None) -> np.ndarray | None:
    """The rows of ``init`` that a solver must not move, as sorted indices, or None.

    ``given`` is the start code as the caller gave it, before :func:`check_init`
    rescaled its rows: the frozen rows must be unit already, and their bits
    are put back into ``init`` (in place), so that they stay exactly as given.

    Examples
    --------
    >>> check_frozen([True, False, True], np.eye(3))
    array([0, 2])
    """
    if frozen is None:
        return None
    mask = np.asarray(frozen)
    if init is None:
        raise SpherecodesError("frozen rows are rows of a start code: give init as well")
    if mask.dtype != bool or mask.shape != (len(init),):
        raise SpherecodesError(f"frozen must be a boolean mask of the {len(init)} rows of init, got "
                               f"{mask.dtype} values of shape {mask.shape}")
    if mask.all():
        raise SpherecodesError("every row is frozen: leave at least one row free to move")
    rows = np.flatnonzero(mask)
    if given is not None:
        try:
            init[rows] = validate_prototypes(np.asarray(given, dtype=np.float64)[rows])
        except SpherecodesError as error:
            raise SpherecodesError(f"frozen rows are kept as given, so they must be unit rows: {error}") from None
    return rows


def hold(code: np.ndarray, init: np.ndarray | None, frozen: np.ndarray | None) -> np.ndarray:
    """``code`` with the rows ``frozen`` of ``init`` put back bit for bit.

    A frozen row gets no step, but re-normalising a unit row (and a float32
    annealing) may still change its last bits.

    Examples
    --------
    >>> hold(np.zeros((2, 2)), np.eye(2), np.array([1]))
    array([[0., 0.],
           [0., 1.]])
    """
    if frozen is None:
        return code
    code = code.copy()
    code[frozen] = init[frozen]
    return code


def check_dtype(value: str, default: str) -> str:
    """A dtype name of :data:`DTYPES`; ``"auto"`` means ``default``."""
    value = default if value == "auto" else value
    if value not in DTYPES:
        raise SpherecodesError(f"dtype must be 'auto', 'float32' or 'float64', got {value!r}")
    return value


# --------------------------------------------------------------------------- closed forms and scales


def closed_form_optimum(d: int, k: int) -> np.ndarray | None:
    """A provably optimal code when one is known in closed form, else None.

    :func:`spherecodes.constructions.optimal_closed_form` decides which; in
    addition d = 1 gets alternating signs (max-cos 1 is forced once K >= 3).
    """
    if d == 1 and k > 2:
        return np.where(np.arange(k) % 2 == 0, 1.0, -1.0)[:, None]
    method = optimal_closed_form(d, k)
    return None if method is None else construct(method, d, k)


def closed_form_result(method: str, d: int, k: int, use: bool, dev, begin: float, settings: dict):
    """The provably optimal closed form as a converged :class:`SolverResult`, or None.

    None also when ``use`` (the caller's ``closed_form`` option) is off.  The
    closed forms are optimal for max-cos and for ρ alike (Jiang et al. 2024,
    Thm 3.3), so every minimax solver returns the same code; its history row
    logs max-cos as both columns for ``tammes`` and leaves ρ (not computed
    here) as NaN otherwise.
    """
    closed = closed_form_optimum(d, k) if use else None
    if closed is None:
        return None
    value = max_cos(closed)
    objective = value if method == "tammes" else np.nan
    return SolverResult(closed, method, value, np.array([(0, objective, value)], dtype=float), 1, 0, 0,
                        time.perf_counter() - begin, str(dev), "converged", settings)


def estimated_angle(d: int, k: int) -> float:
    """A rough size of the optimal minimum angle, used to scale steps and sharpness.

    The angle 2*rho at which K caps of angular radius rho would cover the
    sphere's area exactly (packing density 1), capped at pi/2: within ~10% in
    low dimension (docs/optimisers.md, "Defaults, chosen from (d, K)").
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


# --------------------------------------------------------------------------- the clock


class Clock:
    """Wall-clock budget and progress reporting shared by the stages of a solver.

    :meth:`expired` is true ``time_limit`` seconds (None: never) after
    ``begin`` (a ``time.perf_counter()`` value); ``progress`` (or None)
    receives a :class:`Progress`, reporting ``restarts`` starts, at every
    :meth:`report`.

    Examples
    --------
    >>> clock = Clock(None, None, 1, time.perf_counter())
    >>> clock.expired(), clock.remaining()
    (False, inf)
    """

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


class PolishBudget:
    """What the polish may spend: simplex work (deterministic) and, if asked, seconds.

    The work of an LP is its non-zeros times HiGHS's simplex iterations, close
    to proportional to its solve time (benchmarks/README.md, "tammes:
    estimates and budgets") but, unlike seconds, independent of the machine's
    load, so the same seed and settings give the same code.  ``polish_time``
    adds a wall-clock cap.
    """

    def __init__(self, options):
        self.work_left = float(options.polish_work)
        self.deadline = math.inf if options.polish_time is None else time.perf_counter() + options.polish_time

    def out_of_time(self) -> bool:
        return time.perf_counter() >= self.deadline

    def seconds_left(self) -> float:
        return self.deadline - time.perf_counter()


# --------------------------------------------------------------------------- steps on the sphere


@dataclass
class Batch:
    """The outcome of annealing one batch of starts."""

    codes: np.ndarray  # (B, K, d) float64, the best iterate of each start
    steps: int  # steps done per start
    timed_out: bool
    interrupted: bool = False  # stopped by KeyboardInterrupt (Ctrl-C)
    refreshes: int = 0  # neighbour-list refreshes (the large-K path)
    compressed: bool = False  # the schedule was compressed to end by its deadline


@dataclass
class LoopEnd:
    """How :func:`run_steps` ended: steps done, whether the clock or Ctrl-C stopped it, or a deadline compressed it."""

    done: int
    timed_out: bool
    interrupted: bool
    compressed: bool = False


class Schedule:
    """Position in [0, 1] of a schedule of ``steps`` steps that must end by ``deadline``.

    The position of step i is the larger of ``i / (steps - 1)`` and the
    fraction of the time from the first step to ``deadline`` (a
    ``time.perf_counter()`` value) that will have elapsed when the step ends
    (at the mean step time so far), so that under a time limit the whole
    annealing schedule fits the time available instead of being cut off while
    the surrogate is still smooth and the steps large.

    Examples
    --------
    >>> Schedule(5).position(2)
    0.5
    >>> Schedule(1000, deadline=time.perf_counter() - 1).position(0)  # no time left: the end of the schedule
    1.0
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
        elapsed = time.perf_counter() - self.begin
        # Where the schedule will be when this step ends (at the mean step time so
        # far), so that the last step still ends by the deadline.
        by_time = 1.0 if span <= 0 else (elapsed + elapsed / max(step, 1)) / span
        return min(1.0, max(by_steps, by_time))


def geometric(start: float, end: float, frac: float) -> float:
    """``start * (end / start) ** frac``: the geometric schedule of step sizes and sharpness.

    Examples
    --------
    >>> round(geometric(0.1, 0.001, 0.5), 12)
    0.01
    """
    return start * (end / start) ** frac


def run_steps(
    steps: int, clock: Clock, step: Callable[[int, float], None], log: Callable[[int], None], *,
    log_every: int, log_first: bool = False, catch_interrupt: bool = False, schedule: Schedule | None = None,
) -> LoopEnd:
    """The loop every optimiser shares: ``step(i, frac)`` for i < steps, logging every ``log_every``.

    ``frac`` is where step i sits in the ``schedule`` (default
    ``i / (steps - 1)``; with a deadline the step at ``frac = 1`` is the last:
    ``compressed``).  Before each step the clock is checked (the run stops
    cleanly when it has expired); after the step ``log(done)`` is called every
    ``log_every`` steps, after the last one and, with ``log_first``, after the
    first.  With ``catch_interrupt`` Ctrl-C ends the loop and is reported.

    Examples
    --------
    >>> seen = []
    >>> end = run_steps(5, Clock(None, None, 1, time.perf_counter()), lambda i, frac: seen.append(frac),
    ...                 lambda done: None, log_every=2)
    >>> end.done, seen
    (5, [0.0, 0.25, 0.5, 0.75, 1.0])
    """
    done = 0
    timed_out = interrupted = compressed = False
    schedule = Schedule(steps) if schedule is None else schedule
    try:
        for i in range(steps):
            if clock.expired():
                timed_out = True
                break
            frac = schedule.position(i)
            step(i, frac)
            done = i + 1
            compressed = frac >= 1 and done < steps
            if done % log_every == 0 or done == steps or (log_first and i == 0) or compressed:
                log(done)
            if compressed:
                break
    except KeyboardInterrupt:
        if not catch_interrupt:
            raise
        interrupted = True
    return LoopEnd(done, timed_out, interrupted, compressed)


def riemannian_adam_step(
    x: torch.Tensor, grad: torch.Tensor, moment1: torch.Tensor, moment2: torch.Tensor, step: int, lr: float,
    beta1: float, beta2: float, eps: float,
) -> None:
    """One Riemannian Adam step on rows of unit vectors, in place.

    The Euclidean gradient ``grad`` is projected onto the tangent space of
    each row (in place), Adam's moments are updated with it, the row moves
    and is retracted to the sphere by re-normalising, and the first moment
    is projected onto the new tangent space.  Works on any leading shape and
    on row slices (views), so large codes can be updated a block of rows at
    a time with small temporaries.

    Examples
    --------
    >>> x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    >>> m1, m2 = torch.zeros_like(x), torch.zeros_like(x)
    >>> riemannian_adam_step(x, torch.tensor([[0.0, -1.0]], dtype=torch.float64), m1, m2, 0, 0.1, **ADAM_DEFAULTS)
    >>> bool(x[0, 1] > 0), round(float(x.norm()), 12)
    (True, 1.0)
    """
    grad -= (grad * x).sum(-1, keepdim=True) * x
    moment1.mul_(beta1).add_(grad, alpha=1 - beta1)
    moment2.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias1 = 1 - beta1 ** (step + 1)
    bias2 = 1 - beta2 ** (step + 1)
    x.addcdiv_(moment1, torch.div(moment2, bias2).sqrt_().add_(eps), value=-lr / bias1)
    x.div_(x.norm(dim=-1, keepdim=True))
    moment1 -= (moment1 * x).sum(-1, keepdim=True) * x


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
    clock: Clock,
    history: list,
    log_every: int,
) -> tuple[np.ndarray, int, bool]:
    """Minimise a differentiable ``objective(x, step)`` over unit rows x with Riemannian Adam.

    The same steps as :func:`tammes` (:func:`riemannian_adam_step`), with the
    gradient from autograd and a step size decaying geometrically from
    ``lr_start`` to ``lr_end``; ``adam`` holds ``beta1``, ``beta2`` and
    ``eps``.  Used by objectives defined elsewhere, such as the privileged
    loss of :func:`spherecodes.semantic.privileged`.

    Returns the float64 code, the steps done and whether the clock stopped
    the run; appends ``(step, objective, max_cos)`` rows to ``history``.

    Examples
    --------
    >>> import math
    >>> from spherecodes.sphere import random_start
    >>> clock = Clock(None, None, 1, time.perf_counter())
    >>> spread = lambda x, step: torch.logsumexp(20 * (x @ x.T - 3 * torch.eye(len(x))).ravel(), 0)
    >>> code, done, _ = descend_on_sphere(random_start(0, 0, 3, 2), spread, steps=300, lr_start=0.1, lr_end=0.001,
    ...     adam=ADAM_DEFAULTS, dtype="float64", device=torch.device("cpu"), clock=clock, history=[],
    ...     log_every=100)
    >>> abs(max_cos(code) - math.cos(2 * math.pi / 3)) < 1e-3  # three points in the plane: 120 degrees apart
    True
    """
    x = torch.tensor(x0, dtype=DTYPES[dtype], device=device)  # a copy: the steps update it in place
    moment1, moment2 = torch.zeros_like(x), torch.zeros_like(x)
    diagonal = torch.arange(x.shape[0], device=device)
    last = {}

    def step(i: int, frac: float) -> None:
        leaf = x.detach().requires_grad_(True)
        value = objective(leaf, i)
        (grad,) = torch.autograd.grad(value, leaf)
        riemannian_adam_step(x, grad, moment1, moment2, i, geometric(lr_start, lr_end, frac),
                             adam["beta1"], adam["beta2"], adam["eps"])
        last["value"] = value

    def log(done: int) -> None:
        with torch.no_grad():
            gram = x @ x.T
            gram[diagonal, diagonal] = -torch.inf
            current = float(gram.max())
        history.append((done, float(last["value"].detach()), current))
        clock.report(0, done, steps, current)

    end = run_steps(steps, clock, step, log, log_every=log_every, log_first=True)
    return normalise_rows(x.double().cpu().numpy()), end.done, end.timed_out
