"""Certified one-vs-rest distances of a code (SPEC §2; seed 003 Def. 2.1, Lemma C.4/C.6).

The one-vs-rest distance of class k is the distance from its prototype to the
convex hull of the other prototypes::

    dist_k = min over v in the simplex of ‖w_k − Σ_{j≠k} v_j w_j‖

and ρ = min_k dist_k is the Softmax-Code objective.  Every number reported here
comes with a proof that it is right to within the interval ``[lo_k, hi_k]``:

* ``hi_k = ‖r_k‖`` with ``r_k = w_k − Σ v_j w_j`` for a point ``v`` of the
  simplex (any feasible point of the QP bounds its minimum from above);
* ``lo_k = min_{j≠k} <w_k − w_j, h_k>`` with ``h_k = r_k/‖r_k‖`` (weak duality of
  Lemma C.6: for every unit h and every v in the simplex,
  ``‖w_k − Σ v_j w_j‖ >= Σ v_j <w_k − w_j, h> >= min_j <w_k − w_j, h>``).

Both are evaluated in float64 over *all* K prototypes, whatever the solver did,
so a certificate never contains a number that was not checked.

The solver (all classes as a batch, on CPU or CUDA through torch):

1. each class gets a candidate set, its ``m`` nearest prototypes (a product
   of a block of classes with all K prototypes, streamed over tiles of
   prototypes so that no block × K matrix is needed);
2. Wolfe's minimum-norm-point algorithm runs on the candidate sets of a block of
   classes at once: the support ("corral") of each class is kept, the affine
   minimiser of the corral is one batched Cholesky solve, a ratio test drops
   points that would get negative weight, and the most violating candidates
   join the corral when it is optimal.  Classes whose QP is nearly
   degenerate (optimised codes, where about d neighbours sit at nearly the
   same cosine) start Wolfe from the support suggested by a few
   interior-point iterations instead;
3. one matrix product per block (streamed the same way) checks the
   optimality condition ``max_j <w_j, r_k> = <Σ v_j w_j, r_k>`` against all K
   prototypes; violators join the candidate sets and step 2 resumes for the
   classes that had them.  The same product gives ``lo_k``.

The blocks are sized to the memory allowed (``max_memory``, by default a safe
fraction of the device's), so memory is O(K·d) plus the blocks, whatever K.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .errors import SpherecodesError
from .memory import Estimate, available_memory_bytes, memory_limit, require_memory
from .devices import resolve_device
from .neighbours import top_matches
from .stats import RATTLER_TOL, validate_prototypes

#: Default bound on every class's interval width ``hi_k − lo_k``.
DEFAULT_TOL = 1e-9

#: Bytes that the working arrays of one block of classes may take, by device
#: type; the block size is chosen so that this holds, and never more than a
#: quarter of what is free on the device (or half of ``max_memory`` beyond
#: the inputs and results).  A GPU needs large blocks to be busy; on a CPU
#: larger blocks gain nothing.
BLOCK_BUDGET_BYTES = {"cpu": 256 * 2**20, "cuda": 4 * 2**30}

#: Prototypes per tile of the products of a block with all K prototypes, so
#: that a block holds ``block × COLUMN_TILE`` similarities, not ``block × K``.
COLUMN_TILE = 32768

#: Global optimality checks (rounds of step 3) before giving up on a class.
MAX_ROUNDS = 50

#: Candidates that join a class's candidate set per failed global check.
GLOBAL_ADDITIONS = 32

#: Rounding allowance (relative) within which lo may exceed hi and is set to hi.
ROUNDING_SLACK = 1e-14

#: Candidates that join a corral per major cycle of Wolfe's algorithm.
ADDITIONS = 8

#: Rounds of dropping all negative weights at once before a minor cycle
#: falls back to Wolfe's one-at-a-time ratio test.
JUMP_DROPS = 6

#: The first corral of a class is its nearest ``d · INITIAL_CORRAL_PER_DIM``
#: prototypes with equal weights.  Optimal supports have about 0.3 d (random
#: codes) to 0.6 d (well-spread codes) points, mostly the nearest ones, so
#: this saves most of the major cycles of growing a corral from one point
#: without many minor cycles to drop points that do not belong.
INITIAL_CORRAL_PER_DIM = 0.25

#: Wolfe iterations before a class is restarted from an interior point.
WOLFE_QUICK_ITERATIONS = 12

#: A class is "jammed" (solved from an interior point at once) when its
#: nearest and d-th nearest cosines differ by at most this fraction of
#: 1 − (nearest cosine).  Measured medians at d = 64, K = 1000: 0.3 for
#: random codes, 0.02 for repelled ones, 6e-4 for a Tammes-optimised one.
JAMMED_BAND = 0.005

#: Interior-point iterations for the restart (enough to see the support).
IPM_ITERATIONS = 8

#: Candidates whose interior-point weight is below this fraction of the
#: largest stay out of the restarted corral.
IPM_KEEP = 1e-3

#: Ridges tried in turn (relative to the largest diagonal entry) to keep the
#: corral's Gram matrix positive definite.
RIDGES = (1e-14, 1e-11, 1e-8)


@dataclass(frozen=True)
class CertificateProgress:
    """A progress report passed to the ``progress`` callable of :func:`one_vs_rest_distances`.

    Attributes
    ----------
    step : int
        Classes certified so far.
    steps : int
        Classes in all (K).
    elapsed : float
        Seconds since the call.
    """

    step: int
    steps: int
    elapsed: float


@dataclass(frozen=True)
class OneVsRestCertificate:
    """Certified one-vs-rest distances of a code and what follows from them.

    Attributes
    ----------
    lo, hi : ndarray, shape (K,)
        float64 bounds with ``lo[k] <= dist_k <= hi[k]``.
    tol : float
        The width that was asked for: the certificate is :attr:`certified` when
        every ``hi[k] − lo[k] <= tol``.
    rattler_tol : float
        Margin in the definition of a Softmax-Code rattler (see
        :attr:`softmax_rattlers`).
    support_indices : ndarray of int64, shape (K, s)
        For each class the prototypes with positive weight in the primal point
        ``v`` that gives ``hi``, padded with −1.
    support_weights : ndarray, shape (K, s)
        Their weights (they sum to 1 in each row), padded with 0.
    features : ndarray, shape (K, d)
        Optimal features ``h_k = r_k/‖r_k‖`` (seed 003 Thm 3.5 Eq. 9).  A row
        is NaN where ``r_k = 0``, i.e. where ``w_k`` duplicates another
        prototype and no direction separates them.
    duplicates : list of tuple of int
        Groups of indices of identical prototypes; their classes have
        ``dist = 0`` exactly.
    rounds : int
        Global optimality checks (one matrix product against all K prototypes
        per block and round) that were needed.
    device : str
        Where the solver ran.
    wall_time : float
        Seconds spent.
    """

    lo: np.ndarray
    hi: np.ndarray
    tol: float
    rattler_tol: float
    support_indices: np.ndarray
    support_weights: np.ndarray
    features: np.ndarray
    duplicates: list
    rounds: int
    device: str
    wall_time: float

    @property
    def k(self) -> int:
        """Number of classes."""
        return int(self.lo.shape[0])

    @property
    def rho_lower(self) -> float:
        """Lower end of the certified interval for ρ: ``min_k lo_k``."""
        return float(self.lo.min())

    @property
    def rho_upper(self) -> float:
        """Upper end of the certified interval for ρ: ``min_k hi_k``."""
        return float(self.hi.min())

    @property
    def widths(self) -> np.ndarray:
        """Per-class interval widths ``hi − lo``."""
        return self.hi - self.lo

    @property
    def width(self) -> float:
        """Largest per-class width; ρ's own interval is never wider."""
        return float(self.widths.max())

    @property
    def certified(self) -> bool:
        """Whether every class's interval is at most :attr:`tol` wide."""
        return self.width <= self.tol

    @property
    def softmax_rattlers(self) -> np.ndarray:
        """Classes that are certainly Softmax-Code rattlers (seed 003 Def. 3.4).

        A rattler is a class whose distance exceeds ρ.  With a margin
        ``rattler_tol`` (exact optima have equal distances only up to the
        accuracy of the optimiser that produced them), class k is reported
        when ``lo_k > rho_upper + rattler_tol``: then ``dist_k − ρ >
        rattler_tol`` for every value the intervals allow.
        """
        return np.flatnonzero(self.lo > self.rho_upper + self.rattler_tol)

    @property
    def rattlers_undecided(self) -> np.ndarray:
        """Classes the intervals cannot classify as rattler or non-rattler.

        Those with ``hi_k > rho_lower + rattler_tol`` (possibly a rattler) that
        are not in :attr:`softmax_rattlers`; empty whenever the widths are far
        below ``rattler_tol`` and no distance sits right at ``ρ + rattler_tol``.
        """
        maybe = self.hi > self.rho_lower + self.rattler_tol
        return np.flatnonzero(maybe & ~(self.lo > self.rho_upper + self.rattler_tol))

    def weights_of(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and weights of the primal point ``v`` of class ``k``.

        Examples
        --------
        >>> from spherecodes.constructions import regular_polygon
        >>> cert = one_vs_rest_distances(regular_polygon(6), device="cpu")
        >>> idx, w = cert.weights_of(0)
        >>> sorted(idx.tolist()), w.round(12).tolist()
        ([1, 5], [0.5, 0.5])
        """
        keep = self.support_indices[k] >= 0
        return self.support_indices[k][keep], self.support_weights[k][keep]

    def to_dict(self, per_class: bool = False) -> dict:
        """A JSON-ready summary; ``per_class=True`` adds lo, hi and the supports.

        Examples
        --------
        >>> from spherecodes.constructions import simplex_etf
        >>> d = one_vs_rest_distances(simplex_etf(4), device="cpu").to_dict()
        >>> d["certified"], round(d["rho_lower"], 12), round(d["rho_upper"], 12)
        (True, 1.333333333333, 1.333333333333)
        """
        out = {
            "k": self.k,
            "rho_lower": self.rho_lower,
            "rho_upper": self.rho_upper,
            "width": self.width,
            "tol": self.tol,
            "certified": self.certified,
            "softmax_rattlers": self.softmax_rattlers.tolist(),
            "rattlers_undecided": self.rattlers_undecided.tolist(),
            "rattler_tol": self.rattler_tol,
            "duplicates": [list(group) for group in self.duplicates],
            "rounds": self.rounds,
            "device": self.device,
            "wall_time": self.wall_time,
        }
        if per_class:
            out["lo"] = self.lo.tolist()
            out["hi"] = self.hi.tolist()
            out["support"] = [
                {"indices": i.tolist(), "weights": w.tolist()}
                for i, w in (self.weights_of(k) for k in range(self.k))
            ]
        return out


def one_vs_rest_distances(
    prototypes,
    *,
    tol: float = DEFAULT_TOL,
    device: str | torch.device = "auto",
    candidates: int | None = None,
    rattler_tol: float = RATTLER_TOL,
    max_memory: float | None = None,
    progress: Callable[[CertificateProgress], None] | None = None,
) -> OneVsRestCertificate:
    """Certified one-vs-rest distances ``dist_k`` and ρ of a code.

    Parameters
    ----------
    prototypes : array_like or torch.Tensor, shape (K, d)
        Unit rows (within :data:`spherecodes.stats.UNIT_TOL`).
    tol : float
        Width asked of every class's interval; the solver keeps going until
        the widths are far below it (normally at rounding level), and the
        result says whether it was reached.
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device
        ``"auto"`` takes the GPU when torch sees one.  The arithmetic is
        float64 on every device.
    candidates : int, optional
        Size of the initial candidate set of each class (its nearest
        prototypes).  Default ``max(32, 2d + 2)``, capped at K − 1.  Too few
        only costs extra global checks, never correctness.
    rattler_tol : float
        Margin for :attr:`OneVsRestCertificate.softmax_rattlers`.
    max_memory : float, optional
        Bytes the certificate may use on the device (and on the host for
        its inputs and results); the blocks of classes are sized to fit.
        Default: a safe fraction of what is free.
    progress : callable, optional
        Called with a :class:`CertificateProgress` after every block of classes.

    Returns
    -------
    OneVsRestCertificate

    Raises
    ------
    SpherecodesError
        Input that is not a code (see :func:`spherecodes.stats.validate_prototypes`),
        a non-positive ``tol`` or ``candidates``, an unknown or absent device,
        or working memory that cannot be allocated.

    Examples
    --------
    The regular hexagon: the hull of the other five vertices is nearest to a
    vertex at the chord between its two neighbours, so ρ = 1 − cos(2π/6) = 1/2.

    >>> from spherecodes.constructions import regular_polygon
    >>> cert = one_vs_rest_distances(regular_polygon(6), device="cpu")
    >>> cert.certified, round(cert.rho_lower, 12), round(cert.rho_upper, 12)
    (True, 0.5, 0.5)
    >>> cert.softmax_rattlers.tolist()
    []
    """
    started = time.perf_counter()
    if isinstance(prototypes, torch.Tensor):
        prototypes = prototypes.detach().cpu().numpy()
    w_np = validate_prototypes(prototypes)
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol > 0):
        raise SpherecodesError(f"tol must be a positive finite number, got {tol!r}")
    if not (isinstance(rattler_tol, (int, float)) and math.isfinite(rattler_tol) and rattler_tol >= 0):
        raise SpherecodesError(f"rattler_tol must be a finite number >= 0, got {rattler_tol!r}")
    k, d = w_np.shape
    if candidates is None:
        m = min(k - 1, max(32, 2 * d + 2))
    elif isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
        raise SpherecodesError(f"candidates must be a positive integer, got {candidates!r}")
    else:
        m = min(k - 1, candidates)
    dev = resolve_device(device)

    require_memory(
        host_memory(k, d),
        f"the certificate's inputs and results (K={k}, d={d})",
        "cpu",
        limit=max_memory,
    )
    if dev.type == "cuda":
        require_memory(8.0 * k * d, f"the prototypes on the GPU (K={k}, d={d})", str(dev), limit=max_memory)
    w = torch.from_numpy(w_np).to(dev)
    duplicates, duplicate_of = _exact_duplicates(w_np)

    block, tile = _block_size(k, d, m, dev, max_memory)
    # The similarities of every streamed product, reused (no fresh allocation per tile).
    scratch = torch.empty(block * tile, dtype=w.dtype, device=dev)
    lo = np.empty(k)
    hi = np.empty(k)
    features = np.empty((k, d))
    supports: list[tuple[np.ndarray, np.ndarray]] = []
    rounds = 0
    with _small_linalg_threads(dev):
        for start in range(0, k, block):
            rows = torch.arange(start, min(start + block, k), device=dev)
            result = _certify_block(
                w, rows, m, tol, torch.from_numpy(duplicate_of[start : start + block]).to(dev), tile, scratch
            )
            lo[start : start + len(rows)] = result.lo
            hi[start : start + len(rows)] = result.hi
            features[start : start + len(rows)] = result.features
            supports.append((result.support_indices, result.support_weights))
            rounds = max(rounds, result.rounds)
            if progress is not None:
                progress(CertificateProgress(start + len(rows), k, time.perf_counter() - started))
    support_indices, support_weights = _pad_supports(supports)
    return OneVsRestCertificate(
        lo=lo,
        hi=hi,
        tol=float(tol),
        rattler_tol=float(rattler_tol),
        support_indices=support_indices,
        support_weights=support_weights,
        features=features,
        duplicates=duplicates,
        rounds=rounds,
        device=str(dev),
        wall_time=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------
# setup


def _exact_duplicates(w: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Groups of identical rows, and for each row another member of its group (or −1).

    Rows are hashed (a multiply-add of their bit patterns, a block of rows at
    a time, so memory stays O(K)); rows with equal hashes are then compared
    exactly.  ``−0.0`` counts as ``0.0``.  Groups are listed by first member.
    """
    k, d = w.shape
    multipliers = np.random.default_rng(0).integers(1, 2**63, size=d, dtype=np.uint64) | np.uint64(1)
    keys = np.empty(k, dtype=np.uint64)
    for start in range(0, k, _HASH_ROWS):
        # Adding 0.0 turns -0.0 into 0.0; uint64 arithmetic wraps around.
        bits = np.ascontiguousarray(w[start : start + _HASH_ROWS] + 0.0).view(np.uint64)
        keys[start : start + _HASH_ROWS] = (bits * multipliers).sum(axis=1, dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    same = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    duplicate_of = np.full(k, -1, dtype=np.int64)
    groups = []
    if same.size:
        # Runs of equal keys: each candidate set is split by exact equality.
        starts = np.flatnonzero(np.diff(np.concatenate([[-2], same])) > 1)
        for first, last in zip(same[starts], np.append(same[starts[1:] - 1], same[-1])):
            candidates = np.sort(order[first : last + 2])
            _, label = np.unique(w[candidates] + 0.0, axis=0, return_inverse=True)
            for value in np.unique(label.reshape(-1)):
                members = candidates[label.reshape(-1) == value]
                if len(members) > 1:
                    groups.append(tuple(int(i) for i in members))
                    # Each member's nearest point in the hull of the others is its twin.
                    duplicate_of[members] = np.roll(members, 1)
    return sorted(groups), duplicate_of


#: Rows hashed at a time by :func:`_exact_duplicates`.
_HASH_ROWS = 8192


def host_memory(k: int, d: int) -> float:
    """Bytes of the certificate's inputs and results on the host: prototypes, features, supports, bounds."""
    return 8.0 * k * d * 3 + 8.0 * k * (2 * (d + 2) + 4)


def _per_class_bytes(k: int, d: int, m: int) -> float:
    """Working memory of one class in a block (see :func:`_block_size`)."""
    s = d + 2 + 16
    return 8.0 * (2 * min(k, COLUMN_TILE) + 2 * (m + GLOBAL_ADDITIONS) * d + 2 * s * d + 4 * s * s + 8 * m)


def _block_size(k: int, d: int, m: int, dev: torch.device, max_memory: float | None = None) -> tuple[int, int]:
    """Classes per block and prototypes per column tile, so that a block's working arrays fit.

    Per class a block holds one row of a column tile of similarities, the
    candidate vectors (m·d, up to twice after global additions), the corral
    vectors and their Gram matrix and Cholesky factor (s·d + 3·s² with
    s <= d + 1 + the corral growth of one step), all float64.  The
    interior-point restart runs after Wolfe's arrays are freed and needs less
    (float32 points w_k − w_j and a scaled copy, 8·m·d bytes, and two d×d
    matrices).
    """
    tile = min(k, COLUMN_TILE)
    per_class = _per_class_bytes(k, d, m)
    budget = min(BLOCK_BUDGET_BYTES["cuda" if dev.type == "cuda" else "cpu"], 0.25 * available_memory_bytes(str(dev)))
    if max_memory is not None:
        # The prototypes stay on the device; on the CPU the inputs and results share the limit.
        fixed = 8.0 * k * d + (host_memory(k, d) if dev.type == "cpu" else 0.0)
        budget = min(budget, 0.5 * (max_memory - fixed))
    block = int(max(1, min(k, budget // per_class)))
    require_memory(
        per_class * block,
        f"the working arrays of a block of {block} classes (K={k}, d={d}, {m} candidates each)",
        str(dev),
        limit=None if max_memory is None else max(max_memory - 8.0 * k * d, 0.0),
    )
    return block, tile


def certificate_estimate(
    prototypes=None, *, k: int | None = None, d: int | None = None, device: str | torch.device = "auto",
    max_memory: float | None = None,
) -> Estimate:
    """Memory (and time, given the code) that :func:`one_vs_rest_distances` is expected to take.

    The memory is the estimate the certificate itself checks, so an
    impossible size is refused here with the same message, before any work.
    Given ``prototypes``, the time is measured on a sample: the first 32
    classes are certified against all K prototypes on ``device`` and the time
    is scaled to K (the sample is too small to keep a GPU busy, so on a GPU
    this errs on the long side).  Given only ``k`` and ``d``, the time is 0
    (unknown).

    Examples
    --------
    >>> est = certificate_estimate(k=100_000, d=64, device="cpu")
    >>> est.what  # doctest: +ELLIPSIS
    'certificate of K = 100000 classes in d = 64 (blocks of ...)'
    >>> est.nbytes < 2**30, est.seconds
    (True, 0.0)
    """
    if prototypes is not None:
        if isinstance(prototypes, torch.Tensor):
            prototypes = prototypes.detach().cpu().numpy()
        prototypes = validate_prototypes(prototypes)
        k, d = prototypes.shape
    dev = resolve_device(device)
    m = min(k - 1, max(32, 2 * d + 2))
    require_memory(host_memory(k, d), f"the certificate's inputs and results (K={k}, d={d})", "cpu",
                   limit=max_memory)
    block, tile = _block_size(k, d, m, dev, max_memory)
    device_bytes = 8.0 * k * d + block * _per_class_bytes(k, d, m)
    if dev.type == "cpu":
        device_bytes += host_memory(k, d)
    seconds = 0.0
    if prototypes is not None:
        w = torch.from_numpy(prototypes).to(dev)
        rows = torch.arange(min(k, 32), device=dev)
        no_twins = torch.full((len(rows),), -1, dtype=torch.long, device=dev)
        with _small_linalg_threads(dev):
            started = time.perf_counter()
            _certify_block(w, rows, m, DEFAULT_TOL, no_twins, tile, None)
            seconds = (time.perf_counter() - started) * k / len(rows)
    return Estimate(f"certificate of K = {k} classes in d = {d} (blocks of {block})", str(dev), device_bytes,
                    memory_limit(str(dev), max_memory), seconds)


@contextlib.contextmanager
def _small_linalg_threads(dev: torch.device):
    """Run batched small-matrix LAPACK calls single-threaded on CPU.

    Batched Cholesky of many ~100×100 matrices gains nothing from threads
    inside each factorisation, and on a busy machine the spinning worker
    threads slowed it down by up to 50× in measurements; the large matrix
    products are batched GEMMs that stay efficient on one thread.
    """
    if dev.type != "cpu":
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _pad_supports(supports: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Stack per-block supports into (K, s) arrays padded with −1 / 0."""
    width = max(idx.shape[1] for idx, _ in supports)
    indices = np.vstack([np.pad(idx, ((0, 0), (0, width - idx.shape[1])), constant_values=-1) for idx, _ in supports])
    weights = np.vstack([np.pad(wt, ((0, 0), (0, width - wt.shape[1]))) for _, wt in supports])
    return indices, weights


# --------------------------------------------------------------------------
# the solver


@dataclass
class _BlockResult:
    lo: np.ndarray
    hi: np.ndarray
    features: np.ndarray
    support_indices: np.ndarray
    support_weights: np.ndarray
    rounds: int


def _certify_block(
    w: torch.Tensor, rows: torch.Tensor, m: int, tol: float, duplicate_of: torch.Tensor, tile: int,
    scratch: torch.Tensor | None,
) -> _BlockResult:
    """Solve and certify the QPs of the classes ``rows`` (a contiguous block); ``scratch`` holds rows × tile."""
    n = rows.shape[0]
    dev = w.device
    wk = w[rows]
    itself = rows[:, None]
    nearest_values, cand = top_matches(wk, w, m, exclude=itself, tile=tile, buffer=scratch)  # nearest first
    # "Jammed" classes: their d nearest prototypes lie in a thin cosine band,
    # so their points w_k − w_j nearly share a hyperplane and the QP is close
    # to degenerate (typical of optimised codes).  They skip the quick Wolfe
    # phase and start from an interior point (see _solve_candidates).
    closest = nearest_values[:, 0]
    band = closest - nearest_values[:, min(w.shape[1], m) - 1]
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
    rounds = 0
    while True:
        if todo.any():
            idx = todo.nonzero().squeeze(1)
            pos, weights = _scatter_corrals(pos, weights, idx, *_solve_candidates(
                wk[idx], w, cand[idx], pos[idx], weights[idx], add_threshold, jammed[idx] & (rounds == 0)
            ))
        # Global check and certificate in one product against all prototypes.
        # The weights are put exactly on the simplex (up to float64 rounding)
        # so that hi comes from a feasible point whatever the solver left.
        weights = torch.where(pos >= 0, weights.clamp(min=0), torch.zeros_like(weights))
        weights = weights / weights.sum(1, keepdim=True)
        support = cand.gather(1, pos.clamp(min=0))
        mixed = torch.einsum("ns,nsd->nd", weights, w[support])
        resid = wk - mixed
        best = top_matches(resid, w, 1, exclude=itself, tile=tile, buffer=scratch)[0][:, 0]
        norm = resid.norm(dim=1)
        own = (wk * resid).sum(1)
        hi = norm
        safe = torch.where(norm > 0, norm, torch.ones_like(norm))
        # dist >= 0 always.  At an exact optimum lo and hi agree up to
        # rounding, which may put lo a hair above hi; only that hair is
        # trimmed, so that anything larger (a bug) stays visible.
        lo = torch.where(norm > 0, (own - best) / safe, torch.zeros_like(norm)).clamp(min=0)
        lo = torch.where((lo > hi) & (lo - hi <= ROUNDING_SLACK * (1 + hi)), hi, lo)
        violation = best - (mixed * resid).sum(1)
        todo = (norm > 0) & (violation > add_threshold * norm) & ~twin
        rounds += 1
        if not todo.any() or rounds >= MAX_ROUNDS:
            break
        # The worst violators that are not candidates yet join the candidate
        # sets of the classes that have them (a second streamed product, for
        # those classes only; never the class itself).
        late = todo.nonzero().squeeze(1)
        values, indices = top_matches(
            resid[late], w, min(GLOBAL_ADDITIONS, w.shape[0] - 1), exclude=torch.cat([itself[late], cand[late]], 1),
            tile=tile, buffer=scratch,
        )
        genuine = values > ((mixed * resid).sum(1) + add_threshold * norm)[late, None]
        extra = cand[:, :1].repeat(1, values.shape[1])
        extra[late] = torch.where(genuine, indices, cand[late, :1])
        cand = torch.cat([cand, extra], dim=1)

    features = torch.where(norm[:, None] > 0, resid / safe[:, None], torch.full_like(resid, math.nan))
    support = cand.gather(1, pos.clamp(min=0))
    support = torch.where(pos >= 0, support, torch.full_like(support, -1))
    return _BlockResult(
        lo=lo.cpu().numpy(),
        hi=hi.cpu().numpy(),
        features=features.cpu().numpy(),
        support_indices=support.cpu().numpy(),
        support_weights=torch.where(pos >= 0, weights, torch.zeros_like(weights)).cpu().numpy(),
        rounds=rounds,
    )


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
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact QPs on the candidate sets: Wolfe, restarted from an interior point where slow.

    Wolfe's method is fast while each added point tends to stay.  On codes
    from a good optimiser the nearest ~d prototypes sit within 1e-4 of a
    common supporting hyperplane, the QP is nearly degenerate and Wolfe
    pivots slowly through the near-ties.  Such rows (``jammed``, and those
    not finished after :data:`WOLFE_QUICK_ITERATIONS`) restart from the
    support that a few interior-point iterations point at, from which Wolfe
    needs only a few pivots (measured on a Tammes-optimised code, d = 64:
    ~250 batched solves from the nearest points, ~35 from the interior point).
    """
    d = wk.shape[1]
    quick = (~jammed).nonzero().squeeze(1)
    new_pos, new_w = pos, weights
    finished = jammed.clone()  # jammed rows are handled below, not here
    if quick.numel():
        quick_pos, quick_w, quick_done = _wolfe(
            wk[quick], w, cand[quick], pos[quick], weights[quick], add_threshold, ADDITIONS, WOLFE_QUICK_ITERATIONS
        )
        new_pos, new_w = _scatter_corrals(new_pos, new_w, quick, quick_pos, quick_w)
        finished[quick] = quick_done
    slow = (jammed | ~finished).nonzero().squeeze(1)
    if slow.numel() == 0:
        return new_pos, new_w
    start_pos, start_w = _interior_point_start(wk[slow], w[cand[slow]])
    slow_pos, slow_w, _ = _wolfe(
        wk[slow], w, cand[slow], start_pos, start_w, add_threshold, ADDITIONS, 20 * (d + 2) + 100
    )
    return _scatter_corrals(new_pos, new_w, slow, slow_pos, slow_w)


def _interior_point_start(wk: torch.Tensor, cand_vecs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A corral for Wolfe from a few primal-dual interior-point iterations.

    Mehrotra's predictor-corrector on ``min ½‖Pᵀv‖²`` over the simplex, with
    ``P`` the rows ``w_k − w_j`` of the candidates, batched over classes in
    float32 (only the support is wanted, not the digits).  The Newton
    systems ``(PPᵀ + D) x = b`` (D diagonal, m×m of rank-d plus diagonal) are
    solved through the Woodbury identity with one d×d Cholesky factor.  The
    corral is the (at most d) candidates whose weight exceeds
    :data:`IPM_KEEP` times the largest, with those weights renormalised.
    """
    p = (wk[:, None, :] - cand_vecs).to(torch.float32)
    b, m, d = p.shape
    pt = p.transpose(1, 2)
    v = torch.full((b, m), 1.0 / m, dtype=p.dtype, device=p.device)
    z = torch.ones_like(v)
    lam = torch.zeros(b, dtype=p.dtype, device=p.device)
    eye = torch.eye(d, dtype=p.dtype, device=p.device)
    # Products with P are written as (b, 1, ·) matmuls: several times faster
    # on CPU than batched matrix-vector bmm calls.
    for _ in range(IPM_ITERATIONS):
        qv = torch.matmul(torch.matmul(v[:, None, :], p), pt)[:, 0]
        dual_residual = qv - lam[:, None] - z
        primal_residual = 1.0 - v.sum(1)
        mu = (v * z).sum(1) / m
        d_inverse = v / z
        chol, _ = torch.linalg.cholesky_ex(eye + torch.bmm(pt, p * d_inverse[:, :, None]))

        def solve_m(rhs):  # (PPᵀ + Z/V)⁻¹ rhs by Woodbury
            t = d_inverse * rhs
            u = torch.cholesky_solve(torch.matmul(t[:, None, :], p).transpose(1, 2), chol)
            return t - d_inverse * torch.matmul(u.transpose(1, 2), pt)[:, 0]

        m_ones = solve_m(torch.ones_like(v))

        def newton(complementarity):
            mg = solve_m(-dual_residual - complementarity / v)
            dlam = (primal_residual - mg.sum(1)) / m_ones.sum(1)
            dv = mg + m_ones * dlam[:, None]
            return dv, -(complementarity + z * dv) / v, dlam

        def longest_step(x, dx):
            return torch.where(dx < 0, -x / dx, torch.full_like(x, math.inf)).min(1).values.clamp(max=1.0)

        dv, dz, dlam = newton(v * z)  # predictor
        mu_affine = ((v + longest_step(v, dv)[:, None] * dv) * (z + longest_step(z, dz)[:, None] * dz)).sum(1) / m
        sigma = (mu_affine / mu).clamp(min=0, max=1) ** 3
        dv, dz, dlam = newton(v * z + dv * dz - (sigma * mu)[:, None])  # corrector
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
