"""The solver of the certificate: Wolfe's minimum-norm-point algorithm, batched in torch.

:func:`certify_block` solves and certifies the one-vs-rest QPs of a block of
classes (the three steps of docs/certificate.md, "2.1 The QP").  Tests tune the
module constants below (``WOLFE_QUICK_ITERATIONS``, ``JAMMED_BAND``) to force
every path of the solver; they are looked up here at call time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..devices import torch_threads
from ..sphere import top_matches
from ._blocks import GLOBAL_ADDITIONS, KNOWN_PER_DIM

__all__ = ["BlockResult", "OutOfTime", "certify_block", "outside_bound"]

#: Global optimality checks (rounds of step 3) before giving up on a class.
MAX_ROUNDS = 50

#: Rounding allowance (relative) within which lo may exceed hi and is set to hi.
ROUNDING_SLACK = 1e-14

#: Candidates that join a corral per major cycle of Wolfe's algorithm.
ADDITIONS = 8

#: Rounds of dropping all negative weights at once before a minor cycle
#: falls back to Wolfe's one-at-a-time ratio test.
JUMP_DROPS = 6

#: The first corral of a class is its nearest ``d · INITIAL_CORRAL_PER_DIM``
#: prototypes with equal weights: optimal supports hold 0.3 d (random codes)
#: to 0.6 d points, mostly the nearest, so this saves most of the major cycles
#: without many minor cycles to drop points that do not belong.
INITIAL_CORRAL_PER_DIM = 0.25

#: Wolfe iterations before a class is restarted from an interior point.
WOLFE_QUICK_ITERATIONS = 12

#: A class is "jammed" (solved from an interior point at once) when its
#: nearest and d-th nearest cosines differ by at most this fraction of
#: 1 − (nearest cosine) (medians by kind of code: docs/certificate.md, "2.1 The QP").
JAMMED_BAND = 0.005

#: Interior-point iterations for the restart (enough to see the support).
IPM_ITERATIONS = 8

#: The interior-point restart works on a class's nearest
#: ``d + IPM_EXTRA_PER_ROOT_DIM · √d`` candidates (Wolfe then sees them all):
#: on Tammes-optimised codes the optimal supports end within 8.6√d of the d-th
#: nearest, and at large d this is fewer than the 2d + 2 of the QP.
IPM_EXTRA_PER_ROOT_DIM = 8.0

#: The Newton systems of the restart are solved with the m × m matrix of
#: its m candidates where m <= IPM_NORMAL_PER_DIM · d, else through the
#: Woodbury identity with a d × d one: the m × m factor costs about m³/3 a
#: step against m·d² for the d × d matrix, less up to about m = √3·d; the
#: threshold sits just below (timings: benchmarks/README.md, "Certificate:
#: blocks, workers, the restart").
IPM_NORMAL_PER_DIM = 1.7

#: Candidates whose interior-point weight is below this fraction of the
#: largest stay out of the restarted corral.
IPM_KEEP = 1e-3

#: Ridges tried in turn (relative to the largest diagonal entry) to keep the
#: corral's Gram matrix positive definite.
RIDGES = (1e-14, 1e-11, 1e-8)

#: Keys per class recomputed exactly after the float32 screen of the global check.
SCREEN_KEEP = 4

#: Factor on the float32 rounding bound of the screen (the bound is already a worst case).
SCREEN_SAFETY = 1.5


class OutOfTime(Exception):
    """Raised by :func:`certify_block` given a ``deadline`` that passes before the block is solved."""


def _check(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime


@dataclass
class BlockResult:
    lo: np.ndarray
    hi: np.ndarray
    features: np.ndarray
    support_indices: np.ndarray
    support_weights: np.ndarray
    rounds: int


def certify_block(
    w: torch.Tensor, w32: torch.Tensor, rows: torch.Tensor, m: int, tol: float, duplicate_of: torch.Tensor,
    tile: int, scratch: torch.Tensor | None, scan_threads: int | None = None, deadline: float | None = None,
) -> BlockResult:
    """Solve and certify the QPs of the classes ``rows``.

    ``w32`` is ``w`` in float32 for the screening products, ``scratch`` a
    float32 buffer of at least ``len(rows) × tile`` elements, and
    ``scan_threads`` the torch threads of the products with all K prototypes
    (the small batched solves run with the caller's setting).  Past
    ``deadline`` (a ``time.perf_counter()`` value) the block stops between
    two iterations with :class:`OutOfTime`: a timing that must stay short.
    """
    n = rows.shape[0]
    dev = w.device
    wk = w[rows]
    itself = rows[:, None]
    # The candidates only steer the solver (a wrong one costs a round, never
    # correctness), so float32 is enough to find them.  The scan keeps more
    # ("known") keys than the m candidates: the last one's score bounds all
    # the others in the global check.
    k, d = w.shape
    n_known = min(k - 1, max(m, KNOWN_PER_DIM * d))
    with torch_threads(scan_threads):
        nearest_values, known = top_matches(wk.to(torch.float32), w32, n_known, exclude=itself, tile=tile,
                                            buffer=scratch)
    cand = known[:, :m].clone()
    # Every prototype outside `known` has a float32 score of at most tau32.
    tau32 = nearest_values[:, -1].to(w.dtype) if n_known < k - 1 else torch.full((n,), -math.inf, dtype=w.dtype,
                                                                                    device=dev)
    norm_max = float(w.norm(dim=1).max())
    # "Jammed" classes: their d nearest prototypes lie in a thin cosine band,
    # so their points w_k − w_j nearly share a hyperplane and the QP is close
    # to degenerate (typical of optimised codes).  They skip the quick Wolfe
    # phase and start from an interior point (see _solve_candidates).
    closest = nearest_values[:, 0].to(w.dtype)
    band = closest - nearest_values[:, min(w.shape[1], m) - 1].to(w.dtype)
    jammed = band <= JAMMED_BAND * (1 - closest)

    # Corral of each class: positions into its candidate list, and weights.
    # Exact duplicates start (and end) at their twin with weight 1.
    twin = duplicate_of >= 0
    start = max(1, min(m, int(INITIAL_CORRAL_PER_DIM * w.shape[1])))
    pos = torch.arange(start, device=dev).repeat(n, 1)
    weights = torch.full((n, start), 1.0 / start, dtype=w.dtype, device=dev)
    if twin.any():
        cand[twin, 0] = duplicate_of[twin]
        pos[twin, 1:] = -1
        weights[twin] = torch.where(pos[twin] >= 0, 1.0, 0.0).to(w.dtype)

    add_threshold = min(1e-3 * tol, 1e-12)
    todo = ~twin
    check = torch.ones(n, dtype=torch.bool, device=dev)  # rows whose primal point changed
    lo = torch.zeros(n, dtype=w.dtype, device=dev)
    hi = torch.zeros(n, dtype=w.dtype, device=dev)
    resid = torch.zeros_like(wk)
    mixed = torch.zeros_like(wk)
    # The best keys of the last scan of all K prototypes (exact scores), where one ran.
    additions = min(GLOBAL_ADDITIONS, k - 1)
    scan_values = torch.full((n, min(max(additions, SCREEN_KEEP), k)), -math.inf, dtype=w.dtype, device=dev)
    scan_indices = torch.zeros((n, scan_values.shape[1]), dtype=torch.long, device=dev)
    # The residual at each row's last scan, and a bound on the exact score of
    # every key that scan did not keep (+inf: no scan yet); see _warm_bound.
    scan_r = torch.zeros_like(wk)
    scan_floor = torch.full((n,), math.inf, dtype=w.dtype, device=dev)
    rounds = 0
    while True:
        _check(deadline)
        if todo.any():
            idx = todo.nonzero().squeeze(1)
            pos, weights = _scatter_corrals(pos, weights, idx, *_solve_candidates(
                wk[idx], w, cand[idx], pos[idx], weights[idx], add_threshold, jammed[idx] & (rounds == 0), deadline
            ))
        # Global check and certificate against all prototypes, for the rows
        # whose point changed.  The weights are put exactly on the simplex (up
        # to float64 rounding) so that hi comes from a feasible point whatever
        # the solver left.
        weights = torch.where(pos >= 0, weights.clamp(min=0), torch.zeros_like(weights))
        weights = weights / weights.sum(1, keepdim=True)
        ci = check.nonzero().squeeze(1)
        support = torch.where(pos[ci] >= 0, cand[ci].gather(1, pos[ci].clamp(min=0)), -1)
        mixed[ci] = torch.einsum("ns,nsd->nd", weights[ci], w[support.clamp(min=0)])
        resid[ci] = wk[ci] - mixed[ci]
        r = resid[ci]
        # At an optimum every support point attains the maximum.  The support
        # and the known keys (with the candidates added since) are evaluated
        # exactly; the rest is bounded from the first scan, and only where
        # that bound does not fall below the best exact score are all K
        # prototypes scanned.
        on_support = torch.einsum("nd,nsd->ns", r, w[support.clamp(min=0)]).masked_fill(support < 0, -math.inf)
        pool = torch.cat([known[ci], cand[ci, m:]], 1)
        pool_scores = torch.einsum("nd,npd->np", r, w[pool])
        best = torch.maximum(on_support.max(1).values, pool_scores.max(1).values)
        # The keys kept by the row's last scan, exactly (the rest are bounded by _warm_bound).
        kept = torch.einsum("nd,npd->np", r, w[scan_indices[ci]]).masked_fill(~torch.isfinite(scan_values[ci]),
                                                                             -math.inf)
        best = torch.maximum(best, kept.max(1).values)
        bound = torch.minimum(outside_bound(wk[ci], r, tau32[ci], norm_max),
                              _warm_bound(r, scan_r[ci], scan_floor[ci], norm_max))
        unsure = bound >= best
        scanned = torch.zeros(n, dtype=torch.bool, device=dev)
        scanned[ci] = unsure
        if bool(unsure.any()):
            u = unsure.nonzero().squeeze(1)
            scan_best, scan_values[ci[u]], scan_indices[ci[u]] = _screened_max(
                r[u], w, w32, torch.cat([itself[ci[u]], support[u]], 1), tile, scratch, scan_threads, norm_max,
                keep=scan_values.shape[1],
            )
            best[u] = torch.maximum(best[u], scan_best)
            scan_r[ci[u]] = r[u]
            scan_floor[ci[u]] = _unkept_bound(r[u], scan_values[ci[u]], norm_max)
        norm = r.norm(dim=1)
        own = (wk[ci] * r).sum(1)
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        # dist >= 0 always.  At an exact optimum lo and hi agree up to
        # rounding, which may put lo a hair above hi; only that hair is
        # trimmed, so that anything larger (a bug) stays visible.
        low = torch.where(norm > 0, (own - best) / safe, torch.zeros_like(norm)).clamp(min=0)
        lo[ci] = torch.where((low > norm) & (low - norm <= ROUNDING_SLACK * (1 + norm)), norm, low)
        hi[ci] = norm
        violation = best - (mixed[ci] * r).sum(1)
        todo = torch.zeros(n, dtype=torch.bool, device=dev)
        todo[ci] = (norm > 0) & (violation > add_threshold * norm) & ~twin[ci]
        check = todo.clone()
        rounds += 1
        if not todo.any() or rounds >= MAX_ROUNDS:
            break
        # The worst violators that are not candidates yet join the candidate sets of the classes that have them
        # (never the class itself): from the keys kept by the row's last scan (their scores recomputed for the
        # current residual) and, unless this round scanned all K, the known keys (where the bound held, every
        # violator is known).
        late = todo.nonzero().squeeze(1)
        keys = torch.cat([scan_indices[late], known[late]], 1)
        values = torch.einsum("nd,npd->np", resid[late], w[keys])
        listed = torch.isfinite(scan_values[late])
        values[:, : scan_indices.shape[1]].masked_fill_(~listed, -math.inf)
        again = ((known[late][:, :, None] == scan_indices[late][:, None, :]) & listed[:, None, :]).any(2)  # twice
        values[:, scan_indices.shape[1]:].masked_fill_(scanned[late, None] | again, -math.inf)
        values.masked_fill_((keys[:, :, None] == cand[late][:, None, :]).any(2), -math.inf)
        values, order = torch.topk(values, additions, dim=1)
        indices = keys.gather(1, order)
        genuine = values > ((mixed[late] * resid[late]).sum(1) + add_threshold * hi[late])[:, None]
        extra = cand[:, :1].repeat(1, additions)
        extra[late] = torch.where(genuine, indices, cand[late, :1])
        cand = torch.cat([cand, extra], dim=1)

    safe = torch.where(hi > 0, hi, torch.ones_like(hi))
    features = torch.where(hi[:, None] > 0, resid / safe[:, None], torch.full_like(resid, math.nan))
    support = cand.gather(1, pos.clamp(min=0))
    support = torch.where(pos >= 0, support, torch.full_like(support, -1))
    return BlockResult(
        lo=lo.cpu().numpy(),
        hi=hi.cpu().numpy(),
        features=features.cpu().numpy(),
        support_indices=support.cpu().numpy(),
        support_weights=torch.where(pos >= 0, weights, torch.zeros_like(weights)).cpu().numpy(),
        rounds=rounds,
    )


def outside_bound(wk: torch.Tensor, r: torch.Tensor, tau32: torch.Tensor, norm_max: float) -> torch.Tensor:
    """Upper bound on ``<w_j, r_n>`` over every prototype w_j whose float32 score with ``wk[n]`` is at most ``tau32[n]``.

    The float32 score of a pair is within ``(d + 2)·u·‖w_k‖·‖w_j‖`` of its
    exact inner product (u = 2⁻²⁴; see :func:`_screened_max`), so every such
    w_j has ``c_j = <w_j, ŵ> <= T`` with ``ŵ = w_k/‖w_k‖`` and T that score
    bound over ‖w_k‖.  Splitting ``r = a ŵ + q`` with q ⟂ ŵ, Cauchy–Schwarz
    on the part of w_j orthogonal to ŵ gives, with N >= ‖w_j‖,

        <w_j, r> = a c_j + <w_j, q> <= g(c_j) = a c_j + ‖q‖ sqrt(N² − c_j²),

    and g is concave with its maximum ``N‖r‖`` at ``c* = a N/‖r‖``, so the
    bound is ``g(T)`` when ``T < c*`` and ``N‖r‖`` otherwise.  A slack of
    ``4(d + 2)`` float64 units of ``N‖r‖`` covers the rounding of these few
    operations.  ``tau32 = −inf`` (no prototype outside) gives −inf.

    Examples
    --------
    Nothing within 60° of w = e_1 but w itself: with r = w/2 every other
    prototype scores at most cos 60° / 2 (up to the rounding allowance).

    >>> import torch
    >>> wk = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    >>> bound = outside_bound(wk, wk / 2, torch.tensor([0.5], dtype=torch.float64), 1.0)
    >>> 0.25 <= float(bound) < 0.25 + 1e-5
    True
    """
    d = wk.shape[1]
    nk = wk.norm(dim=1)
    t = (tau32 + _float32_error(nk, norm_max, d)) / nk
    a = (r * wk).sum(1) / nk
    q = (r - (a / nk)[:, None] * wk).norm(dim=1)
    length = torch.hypot(a, q)
    c = t.clamp(min=-norm_max, max=norm_max)
    peak = a * norm_max / torch.where(length > 0, length, torch.ones_like(length))
    value = torch.where(c < peak, a * c + q * (norm_max**2 - c * c).clamp(min=0).sqrt(), norm_max * length)
    value = value + 4 * (d + 2) * torch.finfo(r.dtype).eps * norm_max * r.norm(dim=1)
    return torch.where(torch.isfinite(tau32), value, torch.full_like(value, -math.inf))


def _unkept_bound(r: torch.Tensor, kept: torch.Tensor, norm_max: float) -> torch.Tensor:
    """Bound on ``<w_j, r_n>`` for every key j that a screened scan did not keep (nor exclude).

    ``kept`` holds the exact scores of the kept keys in the order of their
    float32 scores, largest first (see :func:`_screened_max`).  A key not
    kept has a float32 score at most the last kept key's, and each float32
    score is within e = (d + 2)·u·‖r‖·N of the exact one (safety factor
    included), so its exact score is at most ``kept[:, -1] + 2e``.  When the
    last kept entry is −inf, every key was kept or excluded: −inf.
    """
    return kept[:, -1] + 2 * _float32_error(r.norm(dim=1), norm_max, r.shape[1])


def _warm_bound(r: torch.Tensor, scan_r: torch.Tensor, scan_floor: torch.Tensor, norm_max: float) -> torch.Tensor:
    """Bound on ``<w_j, r_n>`` over the keys that the row's last scan did not keep, from that scan.

    ``<w_j, r> = <w_j, r_s> + <w_j, r − r_s> <= floor + N‖r − r_s‖`` with r_s
    the residual at the scan and floor its :func:`_unkept_bound`.  After a
    round that only added a few candidates, the residual moves little and
    this settles the global check without another scan of all K prototypes.
    ``scan_floor = +inf`` (no scan yet) gives +inf.  The slack covers the
    rounding of these operations, as in :func:`outside_bound`.
    """
    d = r.shape[1]
    value = scan_floor + norm_max * (r - scan_r).norm(dim=1)
    return value + 4 * (d + 2) * torch.finfo(r.dtype).eps * norm_max * (r.norm(dim=1) + scan_r.norm(dim=1))


def _float32_error(norms: torch.Tensor, norm_max: float, d: int) -> torch.Tensor:
    """Bound on the error of a float32 product ``<v, w_j>`` in R^d, for ‖v‖ = ``norms`` and ‖w_j‖ <= ``norm_max``.

    ``(d + 2)·u·‖v‖·‖w_j‖`` with u = 2⁻²⁴, for rounded inputs and any order
    of summation (Higham, Accuracy and Stability of Numerical Algorithms,
    §3.1), times :data:`SCREEN_SAFETY`.
    """
    return SCREEN_SAFETY * (d + 2) * 2.0**-24 * norms * norm_max


def _screened_max(r, w, w32, exclude, tile, scratch, scan_threads, norm_max: float, keep: int = SCREEN_KEEP):
    """Exact float64 ``max_j <w_j, r_n>`` over the keys not excluded, screened in float32.

    A float32 score is within :func:`_float32_error` of the exact value, so
    the key with the largest exact value has a float32 score within twice that
    of the float32 maximum.  The ``keep`` best float32 keys are recomputed in
    float64; a row whose last kept score is still within the margin is
    scanned again in float64.
    Returns the maximum and the kept keys with their exact scores (−inf for
    excluded ones), largest float32 score first.
    """
    n, d = r.shape
    keep = min(keep, w.shape[0])
    margin = 2.0 * _float32_error(r.norm(dim=1), norm_max, d)
    with torch_threads(scan_threads):
        values, indices = top_matches(r.to(torch.float32), w32, keep, exclude=exclude, tile=tile, buffer=scratch)
    values = values.to(r.dtype)
    exact = torch.einsum("nd,nkd->nk", r, w[indices]).masked_fill(~torch.isfinite(values), -math.inf)
    best = exact.max(1).values
    unsure = torch.isfinite(values[:, -1]) & (values[:, -1] >= values[:, 0] - 2 * margin)
    if bool(unsure.any()):
        again = unsure.nonzero().squeeze(1)
        # In float64 over half-width tiles, so that the scores fit the same scratch space.
        scratch64 = None if scratch is None else scratch[: scratch.numel() // 2 * 2].view(torch.float64)
        with torch_threads(scan_threads):
            best[again] = top_matches(r[again], w, 1, exclude=exclude[again], tile=max(1, tile // 2),
                                      buffer=scratch64)[0][:, 0]
    return best, exact, indices


def _scatter_corrals(pos, weights, idx, new_pos, new_w):
    """Write the corrals of classes ``idx`` back, widening the arrays if needed."""
    width = max(pos.shape[1], new_pos.shape[1])
    pos = _widen(pos, width, -1)
    weights = _widen(weights, width, 0.0)
    pos[idx] = _widen(new_pos, width, -1)
    weights[idx] = _widen(new_w, width, 0.0)
    return pos, weights


def _widen(x: torch.Tensor, width: int, fill) -> torch.Tensor:
    if x.shape[1] >= width:
        return x
    pad = torch.full((x.shape[0], width - x.shape[1]), fill, dtype=x.dtype, device=x.device)
    return torch.cat([x, pad], dim=1)


def _solve_candidates(
    wk: torch.Tensor,
    w: torch.Tensor,
    cand: torch.Tensor,
    pos: torch.Tensor,
    weights: torch.Tensor,
    add_threshold: float,
    jammed: torch.Tensor,
    deadline: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact QPs on the candidate sets: Wolfe, restarted from an interior point where slow.

    Wolfe's method is fast while each added point tends to stay.  On codes
    from a good optimiser the nearest ~d prototypes sit within 1e-4 of a
    common supporting hyperplane, the QP is nearly degenerate and Wolfe
    pivots slowly through the near-ties.  Such rows (``jammed``, and those
    not finished after :data:`WOLFE_QUICK_ITERATIONS`) restart from the
    support that a few interior-point iterations point at, from which Wolfe
    needs only a few pivots (docs/certificate.md, "2.1 The QP", step 2).
    """
    d = wk.shape[1]
    quick = (~jammed).nonzero().squeeze(1)
    new_pos, new_w = pos, weights
    finished = jammed.clone()  # jammed rows are handled below, not here
    if quick.numel():
        quick_pos, quick_w, quick_done = _wolfe(
            wk[quick], w, cand[quick], pos[quick], weights[quick], add_threshold, ADDITIONS, WOLFE_QUICK_ITERATIONS,
            deadline,
        )
        new_pos, new_w = _scatter_corrals(new_pos, new_w, quick, quick_pos, quick_w)
        finished[quick] = quick_done
    slow = (jammed | ~finished).nonzero().squeeze(1)
    if slow.numel() == 0:
        return new_pos, new_w
    extra = IPM_EXTRA_PER_ROOT_DIM * math.sqrt(d)
    nearest = cand.shape[1] if d + extra >= cand.shape[1] else d + math.ceil(extra)
    start_pos, start_w = _interior_point_start(wk[slow], w[cand[slow, :nearest]])
    slow_pos, slow_w, _ = _wolfe(
        wk[slow], w, cand[slow], start_pos, start_w, add_threshold, ADDITIONS, 20 * (d + 2) + 100, deadline
    )
    return _scatter_corrals(new_pos, new_w, slow, slow_pos, slow_w)


def _interior_point_start(wk: torch.Tensor, cand_vecs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A corral for Wolfe from a few primal-dual interior-point iterations.

    Mehrotra's predictor-corrector on ``min ½‖Pᵀv‖²`` over the simplex, with
    ``P`` the rows ``w_k − w_j`` of the candidates, batched over classes in
    float32 (only the support is wanted, not the digits).  The Newton
    systems ``(PPᵀ + D) x = b`` (D diagonal, m×m of rank-d plus diagonal) are
    solved with the m×m matrix itself (``PPᵀ`` formed once) where m is at
    most :data:`IPM_NORMAL_PER_DIM` · d, else through the Woodbury identity
    with one d×d Cholesky factor.  The corral is the (at most d) candidates
    whose weight exceeds :data:`IPM_KEEP` times the largest, renormalised.
    """
    p = (wk[:, None, :] - cand_vecs).to(torch.float32)
    b, m, d = p.shape
    pt = p.transpose(1, 2)
    v = torch.full((b, m), 1.0 / m, dtype=p.dtype, device=p.device)
    z = torch.ones_like(v)
    lam = torch.zeros(b, dtype=p.dtype, device=p.device)
    woodbury = m > IPM_NORMAL_PER_DIM * d
    eye = torch.eye(d, dtype=p.dtype, device=p.device) if woodbury else None
    gram = None if woodbury else torch.matmul(p, pt)  # PPᵀ, m×m
    # Products with P are written as (b, 1, ·) matmuls: several times faster
    # on CPU than batched matrix-vector bmm calls.
    for _ in range(IPM_ITERATIONS):
        if woodbury:
            qv = torch.matmul(torch.matmul(v[:, None, :], p), pt)[:, 0]
        else:
            qv = torch.matmul(v[:, None, :], gram)[:, 0]
        dual_residual = qv - lam[:, None] - z
        primal_residual = 1.0 - v.sum(1)
        mu = (v * z).sum(1) / m
        d_inverse = v / z
        if woodbury:
            chol, _ = torch.linalg.cholesky_ex(eye + torch.bmm(pt, p * d_inverse[:, :, None]))
        else:
            newton_matrix = gram.clone()
            newton_matrix.diagonal(dim1=1, dim2=2).add_(1.0 / d_inverse)
            chol, _ = torch.linalg.cholesky_ex(newton_matrix)

        def solve_m(rhs):  # (PPᵀ + Z/V)⁻¹ rhs for (b, m, columns) rhs: directly, or by Woodbury
            if not woodbury:
                return torch.cholesky_solve(rhs, chol)
            t = d_inverse[:, :, None] * rhs
            return t - d_inverse[:, :, None] * torch.matmul(p, torch.cholesky_solve(torch.matmul(pt, t), chol))

        def newton(mg, m_ones, complementarity):
            dlam = (primal_residual - mg.sum(1)) / m_ones.sum(1)
            dv = mg + m_ones * dlam[:, None]
            return dv, -(complementarity + z * dv) / v, dlam

        # The predictor's right-hand side (complementarity v·z) and the ones
        # share one solve.
        both = solve_m(torch.stack([torch.ones_like(v), -dual_residual - z], dim=2))
        m_ones = both[:, :, 0]

        def longest_step(x, dx):
            return torch.where(dx < 0, -x / dx, torch.full_like(x, math.inf)).min(1).values.clamp(max=1.0)

        dv, dz, dlam = newton(both[:, :, 1], m_ones, v * z)  # predictor
        mu_affine = ((v + longest_step(v, dv)[:, None] * dv) * (z + longest_step(z, dz)[:, None] * dz)).sum(1) / m
        sigma = (mu_affine / mu).clamp(min=0, max=1) ** 3
        complementarity = v * z + dv * dz - (sigma * mu)[:, None]
        dv, dz, dlam = newton(solve_m((-dual_residual - complementarity / v)[:, :, None])[:, :, 0], m_ones,
                              complementarity)  # corrector
        primal_step = 0.995 * longest_step(v, dv)
        dual_step = 0.995 * longest_step(z, dz)
        v = v + primal_step[:, None] * dv
        z = z + dual_step[:, None] * dz
        lam = lam + dual_step * dlam
    v = torch.where(torch.isfinite(v).all(1, keepdim=True), v, torch.full_like(v, 1.0 / m)).to(wk.dtype)
    top = torch.topk(v, min(d, m), dim=1)
    keep = top.values > IPM_KEEP * top.values[:, :1]
    pos = torch.where(keep, top.indices, torch.full_like(top.indices, -1))
    weights = torch.where(keep, top.values, torch.zeros_like(top.values))
    return pos, weights / weights.sum(1, keepdim=True)


def _wolfe(
    wk: torch.Tensor,
    w: torch.Tensor,
    cand: torch.Tensor,
    pos: torch.Tensor,
    weights: torch.Tensor,
    add_threshold: float,
    additions: int,
    max_iterations: int,
    deadline: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Batched Wolfe minimum-norm-point iterations on the candidate sets.

    Finds, for every row n, weights on its candidates ``w[cand[n]]`` that put
    ``Σ v_j w_j`` nearest to ``wk[n]``, starting from the corral ``pos``/``weights``
    (positions into ``cand[n]``, −1 for empty; non-negative weights summing
    to 1).  Returns the final corrals and which rows finished within
    ``max_iterations`` (the others hold their last, feasible, corral).

    Each iteration is a *minor cycle* (the affine minimiser of the corral has
    negative weights: walk towards it until a weight hits zero, drop that
    point) or a *major cycle* (the corral is optimal on its affine hull: add
    up to ``additions`` candidates that violate optimality by more than
    ``add_threshold·‖r‖``; a row with none is done).
    """
    n, d = wk.shape
    m = cand.shape[1]
    dev = wk.device
    cand_vecs = w[cand]  # (n, m, d)
    ids = torch.arange(n, device=dev)
    newest = torch.full((n,), -1, dtype=torch.long, device=dev)
    done = torch.zeros(n, dtype=torch.bool, device=dev)
    finished: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []
    for _ in range(max_iterations):
        _check(deadline)
        n_done = int(done.sum())
        # Finished rows ride along (their arrays are cheap) until dropping
        # them is worth copying the candidate vectors of the others.
        if n_done and (n_done == ids.numel() or 4 * n_done >= ids.numel()):
            keep = ~done
            finished.append((ids[done], pos[done], weights[done], done[done]))
            ids, pos, weights, newest, cand_vecs, wk, done = (
                ids[keep], pos[keep], weights[keep], newest[keep], cand_vecs[keep], wk[keep], done[keep]
            )
        if ids.numel() == 0:
            break
        pos, weights = _compact(pos, weights)
        rows = torch.arange(ids.numel(), device=dev)[:, None]
        present = pos >= 0
        corral = cand_vecs[rows, pos.clamp(min=0)]  # (b, s, d)
        p = wk[:, None, :] - corral
        gram = p @ p.transpose(1, 2)
        y = _affine_minimiser(gram, present, weights)

        # Shortcut: drop every point with negative weight at once and take
        # the affine minimiser of the rest if it is feasible and better.
        # Each accepted point is the optimum of its own corral with a smaller
        # norm than before, so the norm still decreases strictly and the
        # method cannot cycle; where it fails, Wolfe's ratio test below runs.
        negative = present & (y < 0) & ~done[:, None]
        jump = negative.any(1)
        if bool(jump.any()):
            kept = present & ~negative
            y_kept = _affine_minimiser(gram, kept, weights)
            for _ in range(JUMP_DROPS - 1):
                still = kept & (y_kept < 0)
                if not bool((still.any(1) & jump).any()):
                    break
                kept &= ~still
                y_kept = _affine_minimiser(gram, kept, weights)
            better = _quadratic(gram, y_kept) < _quadratic(gram, weights)
            jump &= ((y_kept >= 0) | ~kept).all(1) & better & kept.any(1)
            y = torch.where(jump[:, None], y_kept, y)
            pos = torch.where(jump[:, None] & ~kept, torch.full_like(pos, -1), pos)
            present = pos >= 0
            negative &= ~jump[:, None]

        # Ratio test: walk from the feasible weights towards y until the
        # first weight reaches zero (theta = 1: y itself is feasible).
        ratio = torch.where(negative, weights / (weights - y).clamp(min=1e-300), torch.full_like(y, math.inf))
        theta, blocker = ratio.min(dim=1)
        theta = theta.clamp(max=1.0)
        moved = (theta > 0) & ~done
        stalled = (theta <= 0) & ~done
        weights = torch.where(moved[:, None], weights + theta[:, None] * (y - weights), weights)
        partial = (moved & (theta < 1)).nonzero().squeeze(1)
        weights[partial, blocker[partial]] = 0.0
        weights = torch.where(present, weights.clamp(min=0), torch.zeros_like(weights))
        weights = weights / weights.sum(1, keepdim=True)

        # A stalled row cannot move because newcomers (weight 0) would get
        # negative weight.  Dropping those blockers leaves the point where it
        # is; the best newcomer always stays, since alone it provably gets a
        # positive weight (Wolfe's lemma).  If it is the only blocker, the
        # other newcomers go instead, and if it is alone and still blocks,
        # rounding has the last word and the row stops.
        zero = present & (weights <= 0)
        is_newest = pos == newest[:, None]
        other_zero = zero & ~is_newest
        other_blocking = other_zero & (y < 0)
        has_blocker = other_blocking.any(1)
        done |= stalled & ~has_blocker & ~other_zero.any(1)
        drop_when_stalled = torch.where(has_blocker[:, None], other_blocking, other_zero)
        drop = torch.where(stalled[:, None], drop_when_stalled, zero)
        pos = torch.where(drop, torch.full_like(pos, -1), pos)
        weights = torch.where(pos >= 0, weights, torch.zeros_like(weights))
        newest = torch.where(moved, torch.full_like(newest, -1), newest)

        # Where the corral is optimal, ask the oracle over the candidates.
        full = moved & (theta >= 1)
        if not bool(full.any()):
            continue
        mixed = torch.matmul(weights[:, None, :], corral)[:, 0]
        resid = wk - mixed
        norm = resid.norm(dim=1)
        scores = torch.matmul(resid[:, None, :], cand_vecs.transpose(1, 2))[:, 0]
        violation = scores - (mixed * resid).sum(1, keepdim=True)
        in_corral = torch.zeros_like(violation, dtype=torch.bool)
        in_corral.scatter_(1, pos.clamp(min=0), pos >= 0)
        violation = violation.masked_fill(in_corral, -math.inf)
        top_v, top_p = torch.topk(violation, min(additions, m), dim=1)
        accept = (top_v > add_threshold * norm[:, None]) & full[:, None] & (norm[:, None] > 0)
        # Beyond d points the corral's affine hull is all of R^d and its
        # minimiser (the origin) tells nothing: fill up to d, then add one
        # at a time as Wolfe does.
        room = (d - in_corral.sum(1, keepdim=True)).clamp(min=1)
        accept &= torch.arange(accept.shape[1], device=dev)[None, :] < room
        done |= full & ~accept[:, 0]
        grow = accept[:, 0]
        if not bool(grow.any()):
            continue
        new_p = torch.where(accept, top_p, torch.full_like(top_p, -1))
        pos = torch.cat([pos, torch.where(grow[:, None], new_p, torch.full_like(new_p, -1))], dim=1)
        weights = _widen(weights, pos.shape[1], 0.0)
        newest = torch.where(grow, new_p[:, 0], newest)
    finished.append((ids, pos, weights, done))
    width = max(p.shape[1] for _, p, _, _ in finished)
    out_pos = torch.full((n, width), -1, dtype=torch.long, device=dev)
    out_w = torch.zeros((n, width), dtype=wk.dtype, device=dev)
    out_done = torch.zeros(n, dtype=torch.bool, device=dev)
    for i, p, wt, fin in finished:
        out_pos[i, : p.shape[1]] = p
        out_w[i, : wt.shape[1]] = wt
        out_done[i] = fin
    return (*_compact(out_pos, out_w), out_done)


def _compact(pos: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Move each row's corral members to the front and drop all-empty columns."""
    present = pos >= 0
    order = torch.argsort((~present).to(torch.int8), dim=1, stable=True)
    pos = pos.gather(1, order)
    weights = weights.gather(1, order)
    width = max(1, int(present.sum(1).max()))
    return pos[:, :width].contiguous(), weights[:, :width].contiguous()


def _affine_minimiser(gram: torch.Tensor, present: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """Weights (summing to 1) of the min-norm point of each corral's affine hull.

    With ``P`` the corral's points ``w_k − w_j`` as rows and ``A = P Pᵀ``
    (``gram``; rows and columns of absent slots are ignored), the minimiser
    of ``‖Pᵀ y‖`` subject to ``Σ y = 1`` is ``A⁻¹1 / 1ᵀA⁻¹1``.  A tiny ridge
    keeps ``A`` positive definite when the corral is affinely dependent
    (duplicates, symmetric codes such as the cross-polytope); it perturbs the
    optimality conditions by at most the ridge times the largest diagonal
    entry, far below the tolerances, and is raised only for rows whose
    factorisation fails.  Rows that no ridge rescues keep ``fallback``.
    """
    ones = present.to(gram.dtype)
    a = torch.where(present[:, :, None] & present[:, None, :], gram, 0.0)
    diagonal = a.diagonal(dim1=1, dim2=2)
    scale = diagonal.amax(dim=1, keepdim=True).clamp(min=1e-300)
    # Absent slots get a unit diagonal and a zero right-hand side: weight 0.
    diagonal.add_(RIDGES[0] * scale * ones + (1.0 - ones))
    y = fallback.clone()
    rows = torch.arange(gram.shape[0], device=gram.device)
    for attempt, ridge in enumerate(RIDGES):
        if attempt:
            a = a[rows]
            a.diagonal(dim1=1, dim2=2).add_((ridge - RIDGES[attempt - 1]) * scale[rows] * ones[rows])
        chol, info = torch.linalg.cholesky_ex(a)
        sol = torch.cholesky_solve(ones[rows, :, None], chol)[..., 0] * ones[rows]
        total = sol.sum(1, keepdim=True)
        good = (info == 0) & torch.isfinite(total[:, 0]) & (total[:, 0] > 0)
        if bool(good.all()):
            y[rows] = sol / total
            break
        y[rows[good]] = sol[good] / total[good]
        rows, a = rows[~good], a[~good]
    return y


def _quadratic(gram: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``yᵀ A y`` for each row: the squared norm of the point with weights y."""
    return torch.einsum("bs,bst,bt->b", y, gram, y)
