"""The polish: sequential linear programming on the near-active functions of a minimax problem.

The annealing of :func:`spherecodes.solvers.tammes` and the ascent of
:func:`spherecodes.solvers.softmax_code` end near an optimum whose largest
functions (pairwise cosines, or minus the one-vs-rest distances) are almost
equal; a first-order model of those functions, solved as an LP by SciPy's
HiGHS in float64, converges to round-off where gradient steps would crawl.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from scipy.optimize import linprog

from ..sphere import normalise_rows, pairs_above
from ..stats import max_cos
from ._core import Clock, PolishBudget

__all__ = ["CONTACT_MARGINS", "DENSE_CONTACTS", "Linearisation", "PairCosines", "polish", "solve_contacts"]


@dataclass
class Linearisation:
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


class PairCosines:
    """Tammes as a minimax problem: the functions are the pairwise cosines."""

    def value(self, w: np.ndarray) -> float:
        return max_cos(w)

    def log_values(self, w: np.ndarray, value: float) -> tuple[float, float]:
        """(objective, max-cos) for the history."""
        return value, value

    def progress_rho(self, logged: tuple[float, float]) -> None:
        return None

    def active(self, w: np.ndarray, threshold: float) -> Linearisation:
        rows, cols, cosines = pairs_above(w, threshold)
        pairs = np.arange(len(rows))
        # d<w_i, w_j> = <w_j, delta_i> + <w_i, delta_j>
        return Linearisation(
            cosines, np.concatenate([pairs, pairs]), np.concatenate([rows, cols]),
            np.concatenate([w[cols], w[rows]]),
        )


#: Predicted gain of an LP round, relative to 1 - max-cos, below which
#: :func:`polish` tries ``refine`` (the contact solve) after the round.
REFINE_BELOW = 1e-5


def polish(
    w: np.ndarray, model, cfg, clock: Clock, budget: PolishBudget, history: list, step_offset: int,
    refine=None, fixed: np.ndarray | None = None,
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
    and r grows; otherwise r shrinks.  The LP is posed in units of r, relative
    to the current maximum, so that HiGHS's tolerances act on O(1) numbers.
    A round whose LP would have more than ``polish_max_nonzeros`` non-zeros
    (very symmetric codes: highly degenerate, slow LPs) quarters r instead;
    the end of the ``budget`` (shared by the codes polished in one run) ends
    the polish.  ``cfg`` holds the ``polish_*`` settings
    (:class:`spherecodes.solvers.TammesSettings` or
    :class:`spherecodes.solvers.SoftmaxSettings`); the rows ``fixed``
    (indices) have their moves bounded to 0.

    Returns the polished code, the number of rounds, and whether it converged
    (the LP predicts no improvement above ``polish_tol``, or r fell below
    ``polish_min_radius``).
    """
    k, d = w.shape
    w = normalise_rows(w)
    current = model.value(w)
    radius = cfg.polish_radius
    max_radius = 100 * cfg.polish_radius
    coords = np.arange(d)
    for rounds in range(1, cfg.polish_rounds + 1):
        if clock.expired() or budget.out_of_time():
            return w, rounds - 1, False
        reach = 4 * radius * math.sqrt(d) + 2 * radius**2 * d
        lin = model.active(w, current - reach)
        n_func = len(lin.values)
        nonzeros = len(lin.rows) * d + n_func
        if budget.work_left <= 0:
            return w, rounds - 1, False
        if nonzeros > cfg.polish_max_nonzeros:
            # Too many functions within reach: a smaller trust region reaches fewer.
            radius /= 4
            if radius < cfg.polish_min_radius:
                return w, rounds - 1, False
            continue
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
        if fixed is not None:
            bounds[:-1].reshape(len(moving), d, 2)[np.isin(moving, fixed)] = 0.0
        objective = np.zeros(n_var)
        objective[-1] = 1.0
        lp_options = {
            "primal_feasibility_tolerance": 1e-10,
            "dual_feasibility_tolerance": 1e-10,
            "time_limit": max(min(clock.remaining(), budget.seconds_left()), 1e-3),
            # One LP may not overrun the work budget either (a degenerate one
            # can need thousands of iterations); HiGHS takes a C int (a budget
            # from --steps 10**30 would be a TypeError).
            "maxiter": max(1, min(int(budget.work_left // nonzeros), 2**31 - 1)),
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
            if predicted_gain <= cfg.polish_tol:
                history.append((step_offset + rounds, *model.log_values(w, current)))
                return w, rounds, True
            trial = w.copy()
            in_code = moving < k
            trial[moving[in_code]] += radius * lp.x[:-1].reshape(-1, d)[in_code]
            trial = normalise_rows(trial)
            value = model.value(trial)
            if value < current:
                gain = current - value
                w, current = trial, value
                if refine is not None and predicted_gain < REFINE_BELOW * (1 - current):
                    refined = refine(w)
                    refined_value = model.value(refined)
                    if refined_value < current:
                        w, current = refined, refined_value
            else:
                gain = 0.0
            # Grow r while the linear model predicts the gain well; shrink it
            # when the curvature it ignores eats the gain.
            radius = min(2 * radius, max_radius) if gain > 0.5 * predicted_gain else radius / 4
        logged = model.log_values(w, current)
        history.append((step_offset + rounds, *logged))
        clock.report(clock.restarts, rounds, cfg.polish_rounds, logged[1], model.progress_rho(logged))
        if radius < cfg.polish_min_radius:
            return w, rounds, True
    return w, rounds, False


#: Margins below max-cos (relative to 1 - max-cos) within which pairs are
#: tried as the contact graph by :func:`solve_contacts`.
CONTACT_MARGINS = (1e-4, 1e-5, 1e-6, 1e-7)

#: K·d below which :func:`solve_contacts` solves each Gauss–Newton step from
#: the dense normal equations (a Cholesky factorisation, milliseconds) instead
#: of by LSQR, which needs thousands of iterations on the ill-conditioned
#: Jacobians of codes with near-rattlers (docs/optimisers.md, step 6).
DENSE_CONTACTS = 1024


def _damped_step(jacobian: scipy.sparse.csr_matrix, residual: np.ndarray) -> np.ndarray:
    """The Gauss–Newton step ``-(J^T J + mu I)^-1 J^T r``, with a tiny damping mu.

    J^T J is singular along the rotations of the whole code and the tangent
    moves of rattlers, which change no equation; the damping (1e-12 of the
    largest diagonal entry) keeps the step out of those directions, as the
    minimum-norm step would, while leaving the others' steps exact to about
    1e-12 relative, which the iteration corrects.
    """
    normal = (jacobian.T @ jacobian).toarray()
    normal[np.diag_indices_from(normal)] += 1e-12 * normal.diagonal().max()
    return -scipy.linalg.cho_solve(scipy.linalg.cho_factor(normal, check_finite=False),
                                   jacobian.T @ residual, check_finite=False)


def solve_contacts(w: np.ndarray, *, iterations: int = 20, work: float = 5e7) -> np.ndarray:
    """Move the code onto the optimum of its contact graph by Gauss–Newton; return it if it is better.

    Near a local optimum of max-cos the pairs at the maximum (the contacts)
    are known, and the optimum solves ``<w_i, w_j> = s`` on them with unit
    rows.  Where the contact graph is highly degenerate the LP rounds of the
    polish approach it only linearly, while Gauss–Newton on these equations
    converges quadratically.  For each margin of :data:`CONTACT_MARGINS` the
    pairs within it of max-cos are taken as the contacts; the best code found
    is returned when its max-cos (float64) is lower than ``w``'s, else ``w``.
    Each step is solved from the dense normal equations below
    :data:`DENSE_CONTACTS`, else by LSQR (minimum-norm steps, so the rotations
    of the whole code are not taken).  A margin is left after the first step
    that fails to halve the residual (it holds pairs that are not contacts).
    ``work`` bounds the LSQR iterations times the Jacobian's non-zeros over
    the call, counted, not timed, so runs are reproducible (figures:
    docs/optimisers.md, step 6, the contact solve).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> w = np.array([[1.0, 0.0], [-0.5, 3 ** 0.5 / 2], [-0.5, -(3 ** 0.5) / 2]]) + 1e-7 * rng.standard_normal((3, 2))
    >>> bool(abs(max_cos(solve_contacts(w)) + 0.5) < 1e-14)
    True
    """
    w = normalise_rows(w)
    k, d = w.shape
    best, best_value = w, max_cos(w)
    for margin in CONTACT_MARGINS:
        if work <= 0:
            break
        rows, cols, _ = pairs_above(w, best_value - margin * (1 - best_value))
        x, s = w.copy(), best_value
        n_pairs = len(rows)
        previous = math.inf
        for _ in range(iterations):
            residual = np.concatenate([(x[rows] * x[cols]).sum(axis=1) - s, 0.5 * ((x * x).sum(axis=1) - 1)])
            size = np.abs(residual).max()
            # Converged, or stalled: pairs that are not contacts make the equations inconsistent.
            if size < 1e-15 or size > previous / 2:
                break
            previous = size
            # Jacobian: d<x_i, x_j>/dx_i = x_j, d<x_i, x_j>/dx_j = x_i, d/ds = -1; d(|x_i|^2/2)/dx_i = x_i.
            pair_index = np.arange(n_pairs)
            entries = np.concatenate([x[cols].ravel(), x[rows].ravel(), -np.ones(n_pairs), x.ravel()])
            row_index = np.concatenate([np.repeat(pair_index, d), np.repeat(pair_index, d), pair_index,
                                        n_pairs + np.repeat(np.arange(k), d)])
            col_index = np.concatenate([(rows[:, None] * d + np.arange(d)).ravel(),
                                        (cols[:, None] * d + np.arange(d)).ravel(), np.full(n_pairs, k * d),
                                        np.arange(k * d)])
            jacobian = scipy.sparse.csr_matrix((entries, (row_index, col_index)), shape=(n_pairs + k, k * d + 1))
            if k * d < DENSE_CONTACTS:
                step = _damped_step(jacobian, residual)
            else:
                iteration_limit = min(10 * (k * d + 1), int(work // jacobian.nnz))
                if iteration_limit < 1:
                    break
                step, _, done = scipy.sparse.linalg.lsqr(jacobian, -residual, atol=1e-15, btol=1e-15,
                                                         iter_lim=iteration_limit)[:3]
                work -= done * jacobian.nnz
            x = x + step[:-1].reshape(k, d)
            s += step[-1]
        x = normalise_rows(x)
        value = max_cos(x)
        if value < best_value:
            best, best_value = x, value
    return best
