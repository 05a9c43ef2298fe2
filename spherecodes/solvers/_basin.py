"""Perturb-and-repolish (iterated local search) for the Tammes problem.

After the annealing and polish of :func:`spherecodes.solvers.tammes`, a larger
budget (``effort="high"``, or ``perturb_rounds``) is spent on the best code
found, in rounds.  Each round makes a batch of perturbed copies of the current
code with the moves that work for jammed packings (Lai, Yue, Hao, Glover & Lü
2023, iterated dynamic neighbourhood search, rest on the same two ideas):

* **reinsert** one to four points of the tightest contacts (the pairs within
  a small margin of max-cos) or, one time in four, of the rattlers (points in
  no such contact) into the deepest holes found among random candidates (the
  candidate whose largest cosine to the other points is smallest);
* **shake** every point by Gaussian noise of a random size (2–30 % of the
  neighbour angle).

The batch is re-annealed together with a short, fairly sharp schedule with
small steps, its best code is polished by the float64 linear-programming
polish, and the result replaces the current code when it is better.  Rounds
are counted, not timed, so the same seed and settings give the same code; a
time limit stops the rounds early, and so do :data:`PATIENCE` rounds in a
row that bring no gain (the stopping rule of iterated local search: further
rounds from the same code rarely help, and each costs a polish).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..stats import max_cos
from ._core import batch_size

__all__ = ["LOCAL_STEPS", "PATIENCE", "contact_pairs", "deepest_holes", "perturb", "perturbation_rounds", "round_batch"]

#: Margin (relative to 1 - max-cos) within which a pair counts as a contact.
_CONTACT_MARGIN = 1e-3

#: Random candidate points per dimension searched for the deepest hole.
_HOLE_CANDIDATES = 200

#: Points reinserted per perturbed copy: 1 to this many.
_REINSERT_MAX = 4

#: Range of the shake, as a fraction of the neighbour angle.
_SHAKE = (0.02, 0.3)

#: The re-annealing starts at t_end divided by one of these, drawn per round.
_SHARPNESS_DIVISORS = (1000.0, 100.0, 30.0)

#: Steps of the local re-annealing of a perturbed batch.
LOCAL_STEPS = 500

#: Rounds in a row without a gain after which the rounds stop.
PATIENCE = 12


def _near(w: np.ndarray) -> np.ndarray:
    """The (K, K) mask of the pairs whose cosine is within the contact margin of max-cos."""
    gram = w @ w.T
    np.fill_diagonal(gram, -2.0)
    top = gram.max()
    return gram >= top - _CONTACT_MARGIN * (1 - top) - 1e-12


def _contacts(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(points in a contact within the margin of max-cos, rattlers: points in none)."""
    degree = _near(w).sum(axis=1)
    return np.flatnonzero(degree > 0), np.flatnonzero(degree == 0)


def contact_pairs(w: np.ndarray) -> np.ndarray:
    """The pairs (i < j) of the code ``w`` in contact: cosine within the contact margin of max-cos, as (m, 2) rows.

    Examples
    --------
    >>> import numpy as np
    >>> octahedron = np.vstack([np.eye(3), -np.eye(3)])
    >>> len(contact_pairs(octahedron))  # its 12 edges
    12
    """
    return np.argwhere(np.triu(_near(w), 1))


def _reinsert(w: np.ndarray, points: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Move each of ``points`` in turn to the deepest hole among random candidates."""
    k, d = w.shape
    w = w.copy()
    for p in points:
        w[p] = deepest_holes(np.delete(w, p, axis=0), 1, rng, _HOLE_CANDIDATES * d)[0]
    return w


def deepest_holes(w: np.ndarray, count: int, rng: np.random.Generator, candidates: int = 20_000) -> np.ndarray:
    """Up to ``count`` unit vectors far from the code ``w``: its deepest holes among random candidates.

    The candidates are taken in order of their largest cosine to the code,
    smallest first, skipping any within cosine 0.99 of one already taken, so
    that the holes are distinct.

    Examples
    --------
    >>> import numpy as np
    >>> octahedron = np.vstack([np.eye(3), -np.eye(3)])
    >>> holes = deepest_holes(octahedron, 8, np.random.default_rng(0))
    >>> holes.shape, bool(np.all((holes @ octahedron.T).max(axis=1) < 0.6))  # the face centres: 1/sqrt(3)
    ((8, 3), True)
    """
    d = w.shape[1]
    points = rng.standard_normal((candidates, d))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    taken: list[np.ndarray] = []
    for i in np.argsort((points @ w.T).max(axis=1), kind="stable"):
        if all(points[i] @ hole < 0.99 for hole in taken):
            taken.append(points[i])
            if len(taken) == count:
                break
    return np.array(taken).reshape(-1, d)


def round_batch(k: int) -> int:
    """Perturbed copies of a K-point code that one round re-anneals together.

    Sixteen, or fewer where 16 K x K matrices would pass 2^20 entries.

    Examples
    --------
    >>> round_batch(100), round_batch(1000)
    (16, 1)
    """
    return batch_size(k, 16)


def perturb(w: np.ndarray, rng: np.random.Generator, angle: float) -> np.ndarray:
    """One perturbed copy of the code ``w`` (unit rows), of a random strength.

    One to four points of the tightest contacts (or, one time in four, of the
    rattlers) are reinserted into the deepest holes, then every point moves
    by Gaussian noise of 2–30 % of the neighbour ``angle``.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))[0]
    >>> p = perturb(w, np.random.default_rng(0), 1.0)
    >>> p.shape, bool(np.allclose(np.linalg.norm(p, axis=1), 1))
    ((4, 4), True)
    """
    k, d = w.shape
    contacts, rattlers = _contacts(w)
    pool = rattlers if len(rattlers) and rng.random() < 0.25 else contacts
    chosen = rng.choice(pool, size=min(len(pool), int(rng.integers(1, _REINSERT_MAX + 1))), replace=False)
    w = _reinsert(w, chosen, rng)
    w = w + rng.standard_normal((k, d)) * (rng.uniform(*_SHAKE) * angle / math.sqrt(d))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def perturbation_rounds(w: np.ndarray, value: float, rounds: int, seed: int, cfg, clock, history: list,
                        step_offset: int, *, anneal, polish) -> tuple[np.ndarray, float, dict]:
    """Run ``rounds`` perturb / re-anneal / polish rounds from the code ``w`` (max-cos ``value``).

    ``cfg`` holds the run's :class:`spherecodes.solvers.TammesSettings`;
    ``anneal(starts, t_start, options)`` anneals a batch with those options
    and returns its codes (float64, unit rows) and steps per start;
    ``polish(code)`` returns the polished code and its LP rounds.  Round r
    draws from the stream ``(seed, r, 3)``.  Returns the best code, its
    max-cos and a record of the stage (rounds run, fewer than ``rounds`` when
    ``cfg.perturb_patience`` rounds in a row without a gain ended it (0:
    never); improvements; steps; and
    whether Ctrl-C ended it: the best code so far is kept).
    """
    k, d = w.shape
    angle = math.acos(min(1.0, max(-1.0, value)))
    batch = round_batch(k)
    done = improvements = steps = last_gain = 0
    interrupted = False
    try:
        for r in range(rounds):
            if clock.expired() or (cfg.perturb_patience and done - last_gain >= cfg.perturb_patience):
                break
            rng = np.random.default_rng([seed, r, 3])
            starts = np.stack([perturb(w, rng, angle) for _ in range(batch)])
            # A fairly sharp start and a third of the first run's step size: enough
            # to repair the perturbation and re-settle the code, not to forget it
            # (with the full step size, 500 steps from t_end / 100 end 1e-4 to
            # 5e-3 above the code; with a third, within 3e-5, like the full run).
            sharpness = cfg.t_end / float(rng.choice(_SHARPNESS_DIVISORS))
            local = dataclasses.replace(cfg, steps=LOCAL_STEPS, log_every=10**9, lr_start=cfg.lr_start / 3,
                                        lr_end=cfg.lr_start / 300)
            codes, anneal_steps = anneal(starts, np.full(batch, sharpness), local)
            steps += anneal_steps * batch
            # The polish costs more than the batch's annealing: polish its best code only.
            values = np.array([max_cos(code) for code in codes])
            polished, rounds_used = polish(codes[int(np.argmin(values))])
            steps += rounds_used
            polished_value = max_cos(polished)
            done += 1
            if polished_value < value:
                w, value = polished, polished_value
                improvements += 1
                last_gain = done
            history.append((step_offset + steps, value, value))
            clock.report(clock.restarts, done, rounds, value)
    except KeyboardInterrupt:
        # Ctrl-C: the best code so far is already measured.
        interrupted = True
    return w, value, {"rounds": done, "improvements": improvements, "steps": steps, "interrupted": interrupted}
