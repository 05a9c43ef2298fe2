"""The Softmax Code: maximise ρ, the smallest distance from a prototype to the hull of the others.

ρ = min_k dist_k is the objective of Jiang, Zhou, Wang, Qu, Mixon, You & Zhu
(2024, Generalized Neural Collapse for a Large Number of Classes, Eq. 3).
Every value the solver improves comes from a certificate
(:func:`spherecodes.certificate.one_vs_rest_distances`), so the ρ it reports
is certified.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
import scipy.sparse
import torch

from ..certificate import one_vs_rest_distances
from ..devices import resolve_device, torch_threads
from ..errors import SpherecodesError
from ..sphere import normalise_rows, random_start
from ..stats import max_cos
from ._core import Clock, PolishBudget, Progress, SolverResult, check_common, check_init, closed_form_result
from ._options import SoftmaxSettings
from ._polish import Linearisation, polish
from .tammes import tammes

__all__ = ["softmax_code"]


class _OneVsRestDistances:
    """Softmax Code as a minimax problem: the functions are minus the certified one-vs-rest distances.

    The certificates of the last two codes seen are kept: both the ascent and
    the polish certify a trial code and, when it is rejected, go on from the
    current one, whose certificate must not be computed again.
    """

    def __init__(self, device: torch.device):
        self.device = device
        self.certificates = 0
        self._recent: list[tuple[bytes, object]] = []  # (code bytes, certificate), newest last

    def certificate(self, w: np.ndarray):
        key = w.tobytes()
        for seen, cert in self._recent:
            if seen == key:
                return cert
        # The ascent needs every class's witness and feature as arrays.
        cert = one_vs_rest_distances(w, device=self.device).expanded(w)
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

    def active(self, w: np.ndarray, threshold: float) -> Linearisation:
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
        return Linearisation(
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

    ρ = min_k dist_k is the objective of Jiang et al. (2024, Eq. 3).  Starting from the
    :func:`tammes` code (or a random one), each step certifies the code
    (:func:`spherecodes.certificate.one_vs_rest_distances`), takes the
    subgradient of the distances (``d dist_k/d w_k = h_k``, ``d dist_k/d w_j =
    -v_kj h_k``) of a log-sum-exp smoothing of the minimum over classes, whose
    sharpness t grows geometrically, and moves along it on the sphere; a step
    that does not raise the smoothed minimum is undone and the step size
    halved.  Small codes (K*d <= 20,000) are then polished as in :func:`tammes`.
    The code returned has the largest certified ρ seen, never worse than the
    start.  Where a closed form is provably optimal (K <= 2d, d <= 2: Jiang et
    al. 2024, Thm 3.3) it is returned directly.

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
    seed : int
        Seed of the starting code.
    steps : int, optional
        Ascent steps (default: 300 for K*d <= 20,000, else 50).  Each costs one
        certificate, growing like K d^2.5 (timings in docs/optimisers.md,
        "`softmax_code`"); ``time_limit`` caps the total.
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
        A start code, (K, d), rows rescaled to unit length (the same as
        ``start=init`` with unit rows); the result is never worse than it.
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
    d, k, seed, time_limit = check_common(d, k, seed, time_limit, progress)
    dev = resolve_device(device)
    init = check_init(init, d, k)
    if init is not None:
        if "start" in options:
            raise SpherecodesError("give the start code as init or as start, not both")
        options["start"] = init
    cfg, start = SoftmaxSettings.resolve(d, k, steps=steps, **options)
    settings = {"method": "softmax", "d": d, "k": k, "seed": seed, "time_limit": time_limit, "device": str(dev),
                "start": start if isinstance(start, str) else "array", **dataclasses.asdict(cfg)}

    closed = closed_form_result("softmax", d, k, cfg.closed_form, dev, begin, settings)
    if closed is not None:
        return closed

    clock = Clock(time_limit, progress, 1, begin)
    with torch_threads(cfg.threads):
        if isinstance(start, str) and start == "tammes":
            first = tammes(d, k, seed=seed, restarts=restarts, time_limit=time_limit, device=dev,
                           progress=progress, threads=cfg.threads)
            w0, first_steps = first.prototypes, first.steps
            settings["start_settings"] = first.settings
            start_interrupted = first.stop_reason == "interrupted"
        else:
            w0 = random_start(seed, 0, k, d) if isinstance(start, str) else start
            first_steps = 0
            start_interrupted = False
        settings["threads"] = torch.get_num_threads()
        result = _run_softmax(w0, first_steps, cfg, dev, clock, start_interrupted)
    result.settings = {**settings, **result.settings}
    return result


def _run_softmax(
    w: np.ndarray, steps_before: int, cfg: SoftmaxSettings, dev: torch.device, clock: Clock, interrupted: bool = False
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


def _softmax_stages(w, steps_before: int, cfg: SoftmaxSettings, clock: Clock, model, history: list, best: dict) -> str:
    """Smoothed subgradient ascent on ρ with step-size control, then the LP polish.

    Keeps the best certified code in ``best`` as it goes (so that an interrupt
    loses nothing) and returns the stop reason.
    """
    best["rho_start"] = best["rho"] = model.certificate(w).rho_lower
    scale = 1 / max(best["rho"], 1e-3)
    lr = cfg.lr
    steps = cfg.steps
    stop_reason = "steps"
    for step in range(steps):
        if clock.expired():
            stop_reason = "time_limit"
            break
        t = scale * cfg.t_start * (cfg.t_end / cfg.t_start) ** (step / max(steps - 1, 1))
        direction = model.ascent_direction(w, t)
        longest = np.linalg.norm(direction, axis=1).max()
        before = model.smoothed_min(model.certificate(w).hi, t)
        if longest > 0:
            trial = normalise_rows(w + (lr / longest) * direction)
            cert = model.certificate(trial)
            if model.smoothed_min(cert.hi, t) > before:
                w = trial
                lr *= 1.25
                if cert.rho_lower > best["rho"]:
                    best.update(w=trial, rho=cert.rho_lower)
            else:
                lr /= 2
        best["steps"] = step + 1
        if best["steps"] % cfg.log_every == 0 or best["steps"] == steps:
            history.append((steps_before + best["steps"], best["rho"], max_cos(best["w"])))
            clock.report(0, best["steps"], steps, history[-1][2], best["rho"])

    if cfg.polish and stop_reason != "time_limit" and w.shape[1] > 1:
        polished, rounds, converged = polish(
            best["w"], model, cfg, clock, PolishBudget(cfg), history, steps_before + best["steps"]
        )
        best["steps"] += rounds
        rho = model.certificate(polished).rho_lower
        if rho > best["rho"]:
            best.update(w=polished, rho=rho)
        stop_reason = "time_limit" if clock.expired() else ("converged" if converged else "steps")
    return stop_reason
