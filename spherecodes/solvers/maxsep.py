"""The hyperspherical-prototype objective of Mettes, van der Pol & Snoek (2019, Eq. 5), as published.

Plain gradient steps on ``L_HP = (1/K) sum_i max_j M_ij`` with
``M = P P^T - 2I``, re-normalising the rows after every step.  It is kept as
a baseline to compare :func:`spherecodes.solvers.tammes` against.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import torch

from ..devices import resolve_device, torch_threads
from ..memory import require_memory
from ..sphere import normalise_rows, random_start
from ..stats import max_cos
from ._core import DTYPES, Clock, Progress, SolverResult, check_common, check_init, run_steps
from ._options import MaxsepSettings

__all__ = ["maxsep"]


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
    """The hyperspherical-prototype objective of Mettes, van der Pol & Snoek (2019, Eq. 5), as published.

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
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
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
        A start code, (K, d), rows rescaled to unit length: start 0 begins
        there instead of at random vectors (the other starts stay random).
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
    d, k, seed, time_limit = check_common(d, k, seed, time_limit, progress)
    init = check_init(init, d, k)
    dev = resolve_device(device)
    cfg = MaxsepSettings.resolve(d, k, steps=steps, lr=lr, restarts=restarts, device=dev, **options)
    steps, lr, restarts = cfg.steps, cfg.lr, cfg.restarts
    settings = {"method": "maxsep", "d": d, "k": k, "seed": seed, "steps": steps, "lr": lr,
                "restarts": restarts, "time_limit": time_limit, "device": str(dev),
                "init": None if init is None else "array",
                **{name: getattr(cfg, name) for name in MaxsepSettings.keywords()}}

    itemsize = 4 if cfg.dtype == "float32" else 8
    require_memory(
        itemsize * cfg.batch_size * (3 * k * k + 6 * k * d),
        f"the maxsep working set ({cfg.batch_size} x {k} x {k} pairwise matrices, {cfg.dtype})",
        device=str(dev),
    )
    clock = Clock(time_limit, progress, restarts, begin)
    with torch_threads(cfg.threads):
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


def _run_maxsep(d, k, seed, steps, lr, restarts, cfg: MaxsepSettings, dev, clock: Clock, init=None) -> SolverResult:
    """Plain (or heavy-ball) gradient steps on L_HP for every start; return the best final code."""
    dtype = DTYPES[cfg.dtype]
    history: list[tuple[float, float, float]] = []
    codes = []
    total_steps = 0
    stop_reason = "steps"
    eye2 = 2 * torch.eye(k, dtype=dtype, device=dev)
    for first in range(0, restarts, cfg.batch_size):
        if first and clock.expired():
            stop_reason = "time_limit"
            break
        members = range(first, min(first + cfg.batch_size, restarts))
        batch = len(members)
        starts = [init if r == 0 and init is not None else random_start(seed, r, k, d) for r in members]
        x = torch.as_tensor(np.stack(starts), dtype=dtype, device=dev)
        state = {"x": x, "velocity": torch.zeros_like(x)}

        def step(i: int, frac: float) -> None:
            x = state["x"]
            m = torch.bmm(x, x.transpose(1, 2)) - eye2
            nearest_cos, nearest = m.max(dim=2)
            grad = _lhp_gradient(x, nearest)
            velocity = state["velocity"].mul_(cfg.momentum).add_(grad)
            x = x - lr * velocity
            state.update(x=x / x.norm(dim=-1, keepdim=True), velocity=velocity, nearest_cos=nearest_cos)

        def log(done: int) -> None:
            # L_HP and max-cos of the iterate this step started from.
            loss = state["nearest_cos"].mean(dim=1)
            top = state["nearest_cos"].amax(dim=1)
            i = int(torch.argmin(top))
            history.append((total_steps + done * batch, float(loss[i]), float(top[i])))
            clock.report(first, done, steps, float(top[i]))

        end = run_steps(steps, clock, step, log, log_every=cfg.log_every, log_first=True)
        done, x = end.done, state["x"]
        if end.timed_out:
            stop_reason = "time_limit"
        total_steps += done * batch
        codes.extend(normalise_rows(code) for code in x.double().cpu().numpy())
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
