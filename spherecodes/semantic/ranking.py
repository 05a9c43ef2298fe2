"""The privileged optimiser: separation plus the class semantics of word embeddings.

:func:`privileged` follows the ranking loss ``L_PI`` of Mettes, van der Pol &
Snoek (2019), Hyperspherical Prototype Networks (NeurIPS), Eq. 6, over the
triplets of :class:`RankingTriplets`, from the Tammes code placed by
:func:`spherecodes.semantic.assign_by_embeddings` and as far as a max-cos
tolerance allows, on the public descent loop of :mod:`spherecodes.solvers`;
:func:`spherecodes.generate` with ``method="privileged"`` makes it a labelled code.
"""

from __future__ import annotations

import time

import numpy as np

from .. import heavy
from ..checks import check_int, check_positive, check_seed
from ..devices import default_threads, resolve_device, torch_threads
from ..errors import SpherecodesError
from ..memory import require_memory
from ..solvers import Clock, SolverResult, descend_on_sphere, tammes, tammes_defaults
from ..stats import max_cos
from ._options import (
    ALL_TRIPLETS_UP_TO_K,
    DEFAULT_MAX_COS_TOLERANCE,
    DEFAULT_NEIGHBOURS,
    DEFAULT_SEMANTIC_WEIGHT,
    DEFAULT_TRIPLET_SAMPLES,
    TRIPLET_STRATEGIES,
)
from .agreement import semantic_agreement
from .assignment import assign_by_embeddings
from .embeddings import ClassEmbeddings, vectors_of


# Up to this K the ``sampled`` strategy keeps the K x K embedding cosines (128 MiB at the limit).
_EMBEDDING_GRAM_UP_TO_K = 4096


class RankingTriplets:
    """The triplet set T of Mettes et al. 2019, Eq. 6 with its targets S̄, one batch per step.

    Strategies:

    * ``all`` — every (i, j, k) with j < k, both ≠ i: Eq. 6 exactly (the
      mirrored (i, k, j) carries the same information);
    * ``sampled`` — a fresh uniform sample of ``samples`` triplets every step:
      an unbiased estimate of Eq. 6;
    * ``neighbours`` — as the paper's released code intends: j among the
      ``neighbours`` nearest embedding neighbours of i, k any other class, so
      the target is always 1; ``samples`` of them are drawn every step (it
      reaches a lower agreement than ``sampled``: ``docs/semantic.md``);
    * ``auto`` — ``all`` up to :data:`ALL_TRIPLETS_UP_TO_K` classes, else ``sampled``.

    Triplets are returned as flat indices into the K×K prototype Gram matrix,
    so that the loss is two gathers and no (T, d) array is ever formed.

    Parameters
    ----------
    class_vectors : array_like, shape (K, m), or ClassEmbeddings
    strategy : {"auto", "all", "sampled", "neighbours"}
    samples : int
    neighbours : int
    seed : int
        Seed of the per-step samples; the sequence of batches is a function of it.
    device : str or torch.device

    Examples
    --------
    >>> e = np.array([[1.0, 0], [0.9, 0.1], [0, 1]])
    >>> triplets = RankingTriplets(e, "all")
    >>> near, far, target = triplets.batch()
    >>> near.tolist(), far.tolist(), target.tolist()
    ([1, 3, 6], [2, 5, 7], [1.0, 1.0, 0.0])
    >>> triplets.settings()["triplets"]
    'all'
    """

    def __init__(
        self,
        class_vectors,
        strategy: str = "auto",
        *,
        samples: int = DEFAULT_TRIPLET_SAMPLES,
        neighbours: int = DEFAULT_NEIGHBOURS,
        seed: int = 0,
        device="cpu",
    ):
        torch = heavy.torch()

        vectors = vectors_of(class_vectors)
        k = vectors.shape[0]
        if k < 3:
            raise SpherecodesError(f"the ranking loss needs at least 3 classes, got {k}")
        if strategy not in TRIPLET_STRATEGIES:
            raise SpherecodesError(
                f"unknown triplet strategy {strategy!r}; choose one of {', '.join(TRIPLET_STRATEGIES)}"
            )
        if strategy == "auto":
            strategy = "all" if k <= ALL_TRIPLETS_UP_TO_K else "sampled"
        if samples < 1:
            raise SpherecodesError(f"triplet samples per step must be at least 1, got {samples}")
        if strategy == "neighbours" and not 1 <= neighbours <= k - 2:
            raise SpherecodesError(f"neighbours per class must be between 1 and K-2 = {k - 2}, got {neighbours}")
        self.k, self.strategy, self.seed = k, strategy, int(seed)
        self.samples, self.neighbours = int(samples), int(neighbours)
        self.device = torch.device(device)
        self._generator = torch.Generator(device="cpu").manual_seed(int(seed))
        self._embeddings = torch.as_tensor(vectors, dtype=torch.float64)
        # Targets of sampled triplets are looked up in the embedding Gram matrix while it
        # is small, and computed from the vectors (O(m) per triplet) beyond.
        self._embed_gram = None
        if strategy == "sampled" and k <= _EMBEDDING_GRAM_UP_TO_K:
            self._embed_gram = self._embeddings @ self._embeddings.T
        if strategy == "all":
            require_memory(8.0 * 3 * k * (k - 1) * (k - 2) / 2, f"all triplets of K={k} classes")
            self._fixed = self._all_triplets()
        elif strategy == "neighbours":
            gram = self._embeddings @ self._embeddings.T
            gram.fill_diagonal_(-np.inf)
            # Ties are broken by index, so the neighbour lists are deterministic.
            self._near = torch.topk(gram, neighbours, dim=1, sorted=True).indices
            self._excluded = torch.sort(torch.cat([self._near, torch.arange(k)[:, None]], dim=1), dim=1).values

    def _all_triplets(self):
        torch = heavy.torch()

        k = self.k
        first, second = np.triu_indices(k, 1)
        anchors = np.repeat(np.arange(k), first.size)
        near, far = np.tile(first, k), np.tile(second, k)
        keep = (near != anchors) & (far != anchors)
        anchors, near, far = anchors[keep], near[keep], far[keep]
        embed_gram = (self._embeddings @ self._embeddings.T).numpy()
        target = embed_gram[anchors, near] >= embed_gram[anchors, far]
        return (
            torch.as_tensor(anchors * k + near, device=self.device),
            torch.as_tensor(anchors * k + far, device=self.device),
            torch.as_tensor(target, dtype=torch.float64, device=self.device),
        )

    def batch(self):
        """``(near, far, target)``: flat Gram indices of ``(i, j)`` and ``(i, k)``, and S̄_ijk."""
        torch = heavy.torch()

        if self.strategy == "all":
            return self._fixed
        k, n, gen = self.k, self.samples, self._generator
        anchors = torch.randint(0, k, (n,), generator=gen)
        if self.strategy == "sampled":
            near = torch.randint(0, k - 1, (n,), generator=gen)
            near += near >= anchors
            low, high = torch.minimum(anchors, near), torch.maximum(anchors, near)
            far = torch.randint(0, k - 2, (n,), generator=gen)
            far += far >= low
            far += far >= high
            if self._embed_gram is not None:
                flat = self._embed_gram.reshape(-1)
                target = (flat[anchors * k + near] >= flat[anchors * k + far]).to(torch.float64)
            else:
                e = self._embeddings
                target = ((e[anchors] * (e[near] - e[far])).sum(dim=1) >= 0).to(torch.float64)
        else:
            near = self._near[anchors, torch.randint(0, self.neighbours, (n,), generator=gen)]
            far = torch.randint(0, k - 1 - self.neighbours, (n,), generator=gen)
            # Skip the anchor and its neighbours, in increasing order, to land uniformly on the others.
            excluded = self._excluded[anchors]
            for column in range(excluded.shape[1]):
                far += far >= excluded[:, column]
            target = torch.ones(n, dtype=torch.float64)
        return (
            (anchors * k + near).to(self.device),
            (anchors * k + far).to(self.device),
            target.to(self.device),
        )

    def settings(self) -> dict:
        """What a bank records about T."""
        out = {"triplets": self.strategy}
        if self.strategy == "all":
            out["triplets_per_step"] = int(self._fixed[0].numel())
        else:
            out["triplets_per_step"] = self.samples
            out["triplet_seed"] = self.seed
        if self.strategy == "neighbours":
            out["neighbours"] = self.neighbours
        return out


def privileged_information_loss(gram, near, far, target):
    """Mettes et al. (2019) Eq. 6 on a batch of triplets: the RankNet loss of the similarity order.

    ``L_PI = mean over T of −S̄ log S − (1 − S̄) log(1 − S)`` with
    ``S = σ(cos(p_i,p_j) − cos(p_i,p_k))``, computed stably from the logits.

    Parameters
    ----------
    gram : Tensor, shape (K, K)
        Prototype cosines ``P Pᵀ`` (unit rows).
    near, far, target : Tensor
        A batch of :meth:`RankingTriplets.batch`.

    Returns
    -------
    Tensor
        The scalar loss (differentiable in ``gram``).

    Examples
    --------
    >>> import torch
    >>> gram = torch.tensor([[1.0, 0.5, -0.5], [0.5, 1.0, 0.0], [-0.5, 0.0, 1.0]])
    >>> loss = privileged_information_loss(gram, torch.tensor([1]), torch.tensor([2]), torch.tensor([1.0]))
    >>> round(loss.item(), 6), round(float(np.log1p(np.exp(-1.0))), 6)  # −log σ(0.5 − (−0.5))
    (0.313262, 0.313262)
    """
    F = heavy.torch().nn.functional

    flat = gram.reshape(-1)
    logits = flat[near] - flat[far]
    return F.binary_cross_entropy_with_logits(logits, target.to(logits.dtype))


# --------------------------------------------------------------------------- the privileged optimiser

#: Steps of the ranking descent when none are given.
DEFAULT_PRIVILEGED_STEPS = 1000

#: Step size of the ranking descent, decayed geometrically by a factor of 100 over the steps.
PRIVILEGED_LR = 1e-2

#: Weight of the quadratic penalty on cosines above the cap, against the ranking loss.
CAP_PENALTY = 1e3

#: Steps between two checkpoints (max-cos and agreement measured in float64).
CHECK_EVERY = 25


def privileged(
    d: int,
    k: int,
    embeddings,
    *,
    max_cos_tolerance: float = DEFAULT_MAX_COS_TOLERANCE,
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
    seed: int = 0,
    steps: int | None = None,
    device="auto",
    time_limit: float | None = None,
    progress=None,
    triplets: str = "auto",
    triplet_samples: int = DEFAULT_TRIPLET_SAMPLES,
    neighbours: int = DEFAULT_NEIGHBOURS,
    start=None,
):
    """Prototypes that are separated *and* ordered like the class embeddings (Mettes et al. 2019, §2.1).

    Starts from the Tammes code (or ``start``) with its classes placed by
    :func:`assign_by_embeddings`, max-cos ``m₀``; descends with Riemannian
    Adam on ``semantic_weight · L_PI`` (:func:`privileged_information_loss`)
    plus a quadratic penalty on every cosine above ``m₀ + ¾ · max_cos_tolerance``;
    keeps the checkpoint (every :data:`CHECK_EVERY` steps, in float64) of
    highest :func:`semantic_agreement` whose max-cos is at most
    ``m₀ + max_cos_tolerance``, the start among them.  So the result never
    agrees less with the embeddings than ``assign`` on the same Tammes code;
    the tolerance trades separation for agreement (``docs/semantic.md``).

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of classes (>= 3).
    embeddings : ClassEmbeddings or array_like, shape (K, m)
        One vector per class; row c is class c (prototype row c).
    max_cos_tolerance : float
        How far max-cos may rise above the start's, >= 0.
    semantic_weight : float
        Weight of L_PI against the penalty, >= 0 (0: the start is returned).
    seed : int
        Seed of the Tammes start and of the triplet samples; a seed and
        settings give bit-identical prototypes on the same CPU and software.
    steps : int, optional
        Descent steps (default 1000).
    device : {"auto", "cpu", "cuda", "cuda:N"}
    time_limit : float, optional
        Seconds for the whole run; the descent stops then with the best checkpoint.
    progress : callable, optional
        Receives :class:`spherecodes.solvers.Progress` updates.
    triplets : {"auto", "all", "sampled", "neighbours"}
        The triplet set of L_PI (see :class:`RankingTriplets`).
    triplet_samples, neighbours : int
        Triplets per step (``sampled``, ``neighbours``) and neighbours per class.
    start : array_like, shape (K, d), optional
        Unit rows to start from instead of running ``tammes`` (they are assigned first).

    Returns
    -------
    spherecodes.solvers.SolverResult
        ``method="privileged"``; row c is class c.  ``history`` logs the
        descent's objective and max-cos; ``settings`` records the start
        (``start_max_cos``, ``start_agreement``: assign's), the cap, the
        agreement reached and the step it was reached at.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.standard_normal((3, 8))
    >>> emb = centres[np.arange(12) % 3] + 0.2 * rng.standard_normal((12, 8))
    >>> res = privileged(4, 12, emb, seed=0, steps=200, device="cpu", max_cos_tolerance=0.05)
    >>> res.method, res.prototypes.shape, res.settings["triplets"]
    ('privileged', (12, 4), 'all')
    >>> res.max_cos <= res.settings["start_max_cos"] + 0.05
    True
    >>> res.settings["agreement"] >= res.settings["start_agreement"]
    True
    """
    torch = heavy.torch()

    begin = time.perf_counter()
    d, k = check_int("d", d, 1), check_int("K", k, 2)
    seed = check_seed(seed)
    if time_limit is not None:
        time_limit = check_positive("time_limit", time_limit)
    if progress is not None and not callable(progress):
        raise SpherecodesError(f"progress must be a callable or None, got {type(progress).__name__}")
    vectors = vectors_of(embeddings)
    if vectors.shape[0] != k:
        raise SpherecodesError(f"got {vectors.shape[0]} class embeddings for K={k}; give one per class")
    for what, value in (("semantic weight", semantic_weight), ("max-cos tolerance", max_cos_tolerance)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(value) and value >= 0):
            raise SpherecodesError(f"{what} must be a finite number >= 0, got {value!r}")
    dev = resolve_device(device)
    steps = DEFAULT_PRIVILEGED_STEPS if steps is None else check_int("steps", steps, 1)
    ranking = RankingTriplets(
        vectors, triplets, samples=triplet_samples, neighbours=neighbours, seed=seed, device=dev
    )
    defaults = tammes_defaults(d, k, dev)
    per_step = ranking.settings()["triplets_per_step"]
    require_memory(
        8.0 * (4 * k * k + 8 * k * d) + 32.0 * per_step,
        f"the privileged working set (K x K matrices and {per_step:,} triplets, float64)",
        device=str(dev),
    )
    if start is None:
        start_code = tammes(d, k, seed=seed, device=dev, time_limit=time_limit, progress=progress).prototypes
    else:
        start_code = np.asarray(start, dtype=np.float64)
        if start_code.shape != (k, d):
            raise SpherecodesError(f"the start has shape {start_code.shape}; give (K, d) = ({k}, {d})")
    # The caller's embeddings as given, so that the order is exactly what `assign` computes from them.
    assignment = assign_by_embeddings(start_code, embeddings, seed=seed)
    first = start_code[np.argsort(assignment.order)]  # row c: the prototype assign gives class c
    start_max_cos = max_cos(first)
    cap = start_max_cos + float(max_cos_tolerance)
    target = start_max_cos + 0.75 * float(max_cos_tolerance)

    def agreement(w):
        return semantic_agreement(w, embeddings, seed=seed)["triplet_agreement"]

    best = {"agreement": agreement(first), "prototypes": first, "step": 0}
    start_agreement = best["agreement"]

    def checkpoint(x, step):
        w = np.asarray(x.detach().double().cpu().numpy(), dtype=np.float64)
        w = w / np.linalg.norm(w, axis=1, keepdims=True)
        if max_cos(w) <= cap:
            value = agreement(w)
            if value > best["agreement"]:
                best.update(agreement=value, prototypes=w, step=step)

    threads = default_threads(k * k * d + 4 * per_step, dev)
    eye2 = 2 * torch.eye(k, dtype=torch.float64, device=dev)

    def objective(x, step):
        if step > 0 and step % CHECK_EVERY == 0:
            checkpoint(x, step)  # x is the iterate after `step` steps
        gram = x @ x.T
        over = torch.relu(gram - eye2 - target)
        return semantic_weight * privileged_information_loss(gram, *ranking.batch()) \
            + CAP_PENALTY * (over * over).sum() / k

    settings = {
        "method": "privileged", "d": d, "k": k, "seed": seed, "steps": steps, "time_limit": time_limit,
        "device": str(dev), "dtype": "float64", "threads": threads, "semantic_weight": float(semantic_weight),
        "max_cos_tolerance": float(max_cos_tolerance),
        "objective": "semantic_weight * L_PI (Mettes et al. 2019, Eq. 6) + penalty on cosines above the cap, "
                     "from the Tammes code placed by assign",
        "start": "tammes" if start is None else "given", "start_max_cos": start_max_cos,
        "start_agreement": start_agreement, "max_cos_cap": cap,
        "lr_start": PRIVILEGED_LR, "lr_end": PRIVILEGED_LR / 100,
        "beta1": defaults["beta1"], "beta2": defaults["beta2"], "eps": defaults["eps"],
        "log_every": defaults["log_every"], "check_every": CHECK_EVERY,
        **ranking.settings(),
        **(
            embeddings.settings() if isinstance(embeddings, ClassEmbeddings)
            else {"embedding_dim": int(vectors.shape[1])}
        ),
    }
    clock = Clock(time_limit, progress, 1, begin)
    history: list = []
    done, timed_out = 0, False
    if semantic_weight > 0:
        with torch_threads(threads):
            final, done, timed_out = descend_on_sphere(
                first, objective, steps=steps, lr_start=PRIVILEGED_LR, lr_end=PRIVILEGED_LR / 100,
                adam=settings, dtype="float64", device=dev, clock=clock, history=history,
                log_every=settings["log_every"],
            )
        checkpoint(torch.from_numpy(final), done)
    code = best["prototypes"]
    settings.update(agreement=best["agreement"], best_step=best["step"])
    return SolverResult(
        prototypes=code,
        method="privileged",
        max_cos=max_cos(code),
        history=np.array(history, dtype=np.float64).reshape(-1, 3),
        restarts=1,
        best_restart=0,
        steps=done,
        wall_time=clock.elapsed(),
        device=str(dev),
        stop_reason="time_limit" if timed_out else "steps",
        settings=settings,
    )
