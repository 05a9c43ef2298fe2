"""Line packings by optimisation: minimise the largest |cos| between K unit vectors in R^d.

The line problem is the Tammes problem of the code together with its
antipodes: ``max_{i != j} |<w_i, w_j>|`` is the max-cos of ``[W; -W]``
without the pairs (w_i, -w_i).  :func:`line_packing` therefore runs the
machinery of :func:`spherecodes.solvers.tammes` on those cosines: its
annealed smoothing (:func:`spherecodes.solvers.descend_on_sphere`), its
schedule, and its float64 LP polish with the functions ``±<w_i, w_j>``
(:class:`LineCosines`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
import torch

from ..devices import resolve_device, torch_threads
from ..lines import line_closed_form, line_lower_bound
from ..memory import require_memory
from ..sphere import pairs_above, random_start
from ..stats import max_cos
from ._core import Clock, PolishBudget, Progress, SolverResult, check_common, check_init, descend_on_sphere
from ._options import EFFORTS, TammesSettings
from ._polish import Linearisation, PairCosines, polish

__all__ = ["LINE_RESTARTS", "LINE_STEPS", "LineCosines", "coherence", "line_packing"]

#: Default starts and steps per start (at most Tammes's for the size; ``effort`` scales the starts).
LINE_RESTARTS = 16
LINE_STEPS = 500

#: Annealed codes that are polished (the best; Tammes's default polishes more, for the basins of R^3).
LINE_POLISH_TOP = 3


def coherence(w: np.ndarray) -> float:
    """``max_{i != j} |<w_i, w_j>|`` in float64: the max-cos of the code and its antipodes, in tiles.

    Examples
    --------
    >>> coherence(np.array([[1.0, 0.0], [-0.6, 0.8]]))
    0.6
    """
    return max_cos(np.vstack([w, -w])) if len(w) > 1 else -1.0


class LineCosines(PairCosines):
    """The line problem as a minimax problem for the polish: the functions are ``±<w_i, w_j>``, i < j (logged as
    :class:`PairCosines` logs max-cos: the objective twice, here max |cos|)."""

    def value(self, w: np.ndarray) -> float:
        return coherence(w)

    def active(self, w: np.ndarray, threshold: float) -> Linearisation:
        k = len(w)
        rows, cols, cosines = pairs_above(np.vstack([w, -w]), threshold)
        # Each line pair appears twice among the 2K points; keep row i < K with column j or K + j, j > i.
        j = cols % k
        keep = (rows < k) & (j > rows)
        i, j, cosines = rows[keep], j[keep], cosines[keep]
        sign = np.where(cols[keep] < k, 1.0, -1.0)[:, None]
        pairs = np.arange(len(i))
        # d(s <w_i, w_j>) = s <w_j, delta_i> + s <w_i, delta_j>
        return Linearisation(cosines, np.concatenate([pairs, pairs]), np.concatenate([i, j]),
                             np.concatenate([sign * w[j], sign * w[i]]))


def line_packing(
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
) -> SolverResult:
    """Minimise the largest |cos| between K unit vectors in R^d (K lines through the origin).

    Where an optimal closed form exists (K ≤ d, K = d + 1, d ≤ 2:
    :func:`spherecodes.lines.line_closed_form`) it is returned.  Otherwise
    each start anneals ``(1/t) log sum_{i != j} exp(±t <w_i, w_j>)`` with the
    schedule of :func:`spherecodes.solvers.tammes` for (d, K), and the best
    few are polished by linear programming on the near-active ``±<w_i, w_j>``.
    The code is (K, d) in memory O(K² ) per step (all pairs), so K is at most a
    few thousand.

    Parameters
    ----------
    d, k : int
        Dimension and number of lines.
    seed, steps, restarts, time_limit, device, progress, effort
        As for :func:`spherecodes.solvers.tammes`.
    init : array_like, optional
        A start code (K, d), e.g. the lines of a structured code; the result
        is never worse than it.

    Returns
    -------
    SolverResult
        ``method="lines"``; ``max_cos`` is the code's max-cos as always, and
        ``settings["max_abs_cos"]`` the largest |cos|, the objective, with the
        lower bound it is compared with (``settings["lower_bound"]``).

    Examples
    --------
    >>> res = line_packing(3, 6, device="cpu", restarts=8)   # the six diagonals of the icosahedron
    >>> round(res.settings["max_abs_cos"], 9), round(1 / 5 ** 0.5, 9)
    (0.447213595, 0.447213595)
    """
    begin = time.perf_counter()
    d, k, seed, time_limit = check_common(d, k, seed, time_limit, progress)
    init = check_init(init, d, k)
    dev = resolve_device(device)
    # Tammes's schedule for (d, K), with fewer and shorter starts by default: each start is one
    # autograd descent (not a batch), and the polish finishes what the annealing leaves.
    defaults = TammesSettings.resolve(d, k, device=dev, effort=effort, neighbours=0)
    cfg = TammesSettings.resolve(d, k, steps=steps or min(defaults.steps, LINE_STEPS),
                                restarts=restarts or max(1, min(defaults.restarts, round(LINE_RESTARTS * EFFORTS[effort]["restarts"]))),
                                device=dev, effort=effort, neighbours=0, polish_top=LINE_POLISH_TOP)
    bound = line_lower_bound(d, k)
    settings = {"method": "lines", "d": d, "k": k, "seed": seed, "time_limit": time_limit, "device": str(dev),
                "init": None if init is None else "array", "lower_bound": bound.to_dict(),
                **{key: value for key, value in dataclasses.asdict(cfg).items()
                   if key in ("steps", "restarts", "t_start", "t_end", "lr_start", "lr_end", "dtype", "polish")}}
    closed = line_closed_form(d, k)
    if closed is not None:
        rows, name = closed
        return _result(rows, [], 1, 0, 0, begin, dev, "converged", {**settings, "construction": name})
    itemsize = 8 if cfg.dtype == "float64" else 4
    # Autograd keeps the Gram matrix, its doubled copy and their gradients: about 6 K x K arrays.
    require_memory(6.0 * itemsize * k * k, f"the line annealing (K={k}: {k} x {k} cosines, {cfg.dtype})",
                   str(dev), hint="choose a smaller K")
    clock = Clock(time_limit, progress, cfg.restarts, begin)
    history: list = []
    codes, total_steps = [], 0
    stop_reason = "steps"
    with torch_threads(cfg.threads):
        settings["threads"] = torch.get_num_threads()
        for r in range(cfg.restarts):
            if r and clock.expired():
                stop_reason = "time_limit"
                break
            start = init if (init is not None and r == 0) else random_start(seed, r, k, d)
            objective = _smoothed_coherence(cfg.t_start, cfg.t_end, cfg.steps)
            code, done, timed_out = descend_on_sphere(
                start, objective, steps=cfg.steps, lr_start=cfg.lr_start, lr_end=cfg.lr_end, adam=cfg.adam(),
                dtype=cfg.dtype, device=dev, clock=clock, history=history, log_every=cfg.log_every)
            codes.append(code)
            total_steps += done
            if timed_out:
                stop_reason = "time_limit"
                break
    model = LineCosines()
    values = np.array([model.value(code) for code in codes])
    order = np.argsort(values, kind="stable")
    best = int(order[0])
    best_code, best_value = codes[best], float(values[best])
    if cfg.polish and stop_reason != "time_limit":
        budget = PolishBudget(cfg)
        converged = True
        for r in order[: cfg.polish_top]:
            polished, rounds, done = polish(codes[r], model, cfg, clock, budget, history, total_steps)
            total_steps += rounds
            converged &= done
            value = model.value(polished)
            if value < best_value:
                best, best_code, best_value = int(r), polished, value
            if clock.expired():
                break
        stop_reason = "time_limit" if clock.expired() else ("converged" if converged else "steps")
    if init is not None and model.value(init) <= best_value:
        best, best_code = 0, init
    return _result(best_code, history, len(codes), best, total_steps, begin, dev, stop_reason, settings)


def _smoothed_coherence(t_start: float, t_end: float, steps: int):
    """The annealed smooth maximum of ±<w_i, w_j> over i != j, as an objective of :func:`descend_on_sphere`."""

    def objective(x: torch.Tensor, step: int) -> torch.Tensor:
        t = t_start * (t_end / t_start) ** (step / max(steps - 1, 1))
        gram = x @ x.T
        off = gram[~torch.eye(len(x), dtype=torch.bool, device=x.device)]
        return torch.logsumexp(t * torch.cat([off, -off]), 0) / t

    return objective


def _result(code, history, restarts, best, steps, begin, dev, stop_reason, settings) -> SolverResult:
    """The :class:`SolverResult` of a line packing, its numbers measured in float64."""
    code = np.asarray(code, dtype=np.float64)
    value = coherence(code)
    bound = settings["lower_bound"]["value"]
    settings = {**settings, "max_abs_cos": value, "gap": value - bound}
    return SolverResult(
        prototypes=code, method="lines", max_cos=max_cos(code), history=np.array(history, dtype=np.float64).reshape(
            -1, 3), restarts=restarts, best_restart=best, steps=steps, wall_time=time.perf_counter() - begin,
        device=str(dev), stop_reason=stop_reason, settings=settings,
        stop_detail="" if stop_reason != "time_limit" else "stopped at the time limit; the best code so far is returned",
    )
