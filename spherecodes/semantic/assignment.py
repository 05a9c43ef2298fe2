"""Assignment: which class gets which prototype, without moving any prototype.

:func:`assign_by_embeddings` and :func:`assign_by_class_means` choose an order (:class:`Assignment`);
:func:`relabel_code` and :func:`assign_code` rewrite a code's labels with it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..code import Code
from ..errors import SpherecodesError
from ..inputs import read_npy
from ..memory import require_memory
from ..stats import validate_prototypes
from .agreement import semantic_agreement
from .embeddings import ClassEmbeddings, check_names, positions_of, unit_rows, vectors_of


@dataclass(frozen=True)
class Assignment:
    """Which class gets which prototype, as chosen by an assignment function.

    Attributes
    ----------
    order : ndarray of int64, shape (K,)
        Prototype row ``i`` goes to class ``order[i]`` of the class list, so
        the code's new labels are ``[names[c] for c in order]``.
    initial_order : ndarray of int64, shape (K,)
        The order before (the code's labels, or the identity).
    method : str
        ``"quadratic"`` (embedding similarity) or ``"linear"`` (class means).
    objective_before, objective_after : float
        The matching objective of ``initial_order`` and ``order`` (see the function).
    agreement_before, agreement_after : dict
        :func:`semantic_agreement` of the two orders, on the same triplet sample.
    swaps : int
        Improving pair swaps made (quadratic only).
    stop_reason : str
        ``"optimal"`` (linear), ``"local optimum"``, ``"time limit"`` or ``"swap limit"``.
    wall_time : float
        Seconds spent, the two agreement measurements included.
    """

    order: np.ndarray
    initial_order: np.ndarray
    method: str
    objective_before: float
    objective_after: float
    agreement_before: dict
    agreement_after: dict
    swaps: int = 0
    stop_reason: str = "optimal"
    wall_time: float = 0.0

    def report(self) -> dict:
        """Everything about the assignment as JSON-ready values (for ``spherecodes assign --json``)."""
        return {
            **self.settings(),
            "order": self.order.tolist(),
            "agreement_before": self.agreement_before,
            "agreement_after": self.agreement_after,
        }

    def settings(self) -> dict:
        """The JSON-ready record of this assignment that a code's settings keep."""
        return {
            "method": self.method,
            "objective_before": self.objective_before,
            "objective_after": self.objective_after,
            "triplet_agreement_before": self.agreement_before["triplet_agreement"],
            "triplet_agreement_after": self.agreement_after["triplet_agreement"],
            "spearman_before": self.agreement_before["spearman"],
            "spearman_after": self.agreement_after["spearman"],
            "swaps": int(self.swaps),
            "stop_reason": self.stop_reason,
            "wall_time_s": float(self.wall_time),
        }


def load_class_means(path) -> np.ndarray:
    """Read class-mean features saved with :func:`numpy.save`: a finite (K, d) array.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "means.npy")
    >>> np.save(path, np.eye(3))
    >>> load_class_means(path).shape
    (3, 3)
    """
    means = read_npy(path, "class-means file (a (K, d) array)")
    if means.ndim != 2:
        raise SpherecodesError(
            f"{path} holds an array of shape {means.shape}; class means must be a numeric (K, d) array"
        )
    return unit_rows(means, f"class means in {path}")


def _check_order(order, k: int, what: str) -> np.ndarray:
    if order is None:
        return np.arange(k, dtype=np.int64)
    order = np.asarray(order)
    is_permutation = (
        order.shape == (k,) and np.issubdtype(order.dtype, np.integer) and np.array_equal(np.sort(order), np.arange(k))
    )
    if not is_permutation:
        raise SpherecodesError(f"{what} must be a permutation of 0..{k - 1}")
    return order.astype(np.int64)


def assign_by_class_means(prototypes, class_means, *, initial_order=None, seed: int = 0) -> Assignment:
    """Linear assignment of classes to fixed prototypes from class means (Saadabadi et al. 2024, supplementary).

    Maximises ``Σ_i cos(p_i, h̄_order[i])`` over all orders with the Hungarian
    method (:func:`scipy.optimize.linear_sum_assignment`), cosines because a
    class mean's length says how tightly its features cluster, not where they
    point.  The objectives are the *mean* cosine of each prototype and its class.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Unit rows; they are not changed.
    class_means : array_like, shape (K, d)
        Row c is the mean feature of class c, from a model trained with these
        prototypes in the space of the prototypes.
    initial_order : array_like of int, optional
        The current order (prototype row i serves class ``initial_order[i]``);
        the identity by default.
    seed : int
        Seed of the triplet sample of the agreement measure (large K only).

    Returns
    -------
    Assignment
        Its agreement is measured against the class means' own similarities.

    Examples
    --------
    >>> p = np.eye(3)
    >>> means = np.array([[0.1, 0.9, 0.0], [0.0, 0.2, 2.0], [1.0, 0.0, 0.1]])
    >>> assign_by_class_means(p, means).order
    array([2, 0, 1])
    """
    start = time.perf_counter()
    w = validate_prototypes(prototypes)
    k, d = w.shape
    means = unit_rows(class_means, "class means")
    if means.shape != (k, d):
        raise SpherecodesError(
            f"class means have shape {means.shape} but the code has K={k} prototypes in d={d}; "
            "give one mean feature per class, in the prototypes' space"
        )
    initial = _check_order(initial_order, k, "initial_order")
    require_memory(8.0 * 3 * k * k, f"the linear assignment of K={k} classes")
    cosines = w @ means.T  # [row i, class c]
    rows, classes = linear_sum_assignment(cosines, maximize=True)
    order = classes[np.argsort(rows)].astype(np.int64)
    return Assignment(
        order=order,
        initial_order=initial,
        method="linear",
        objective_before=float(cosines[np.arange(k), initial].mean()),
        objective_after=float(cosines[np.arange(k), order].mean()),
        agreement_before=semantic_agreement(w, means[initial], seed=seed),
        agreement_after=semantic_agreement(w, means[order], seed=seed),
        stop_reason="optimal",
        wall_time=time.perf_counter() - start,
    )


#: Frank–Wolfe iterations of the relaxed quadratic assignment (the start of :func:`assign_by_embeddings`).
DEFAULT_RELAXATION_ITERATIONS = 30


def assign_by_embeddings(
    prototypes,
    class_vectors,
    *,
    initial_order=None,
    seed: int = 0,
    time_limit: float | None = None,
    relaxation_iterations: int = DEFAULT_RELAXATION_ITERATIONS,
    max_swaps: int | None = None,
) -> Assignment:
    """Give similar classes near prototypes: an approximate quadratic assignment.

    Chooses the order that maximises the Pearson correlation between the
    K(K−1)/2 prototype cosines ``cos(p_i, p_j)`` and the embedding cosines
    ``cos(e_order[i], e_order[j])`` of the classes placed there.  Both lists
    are fixed multisets whatever the order, so this is the quadratic
    assignment ``max Σ_ij Ĝ_ij Â_order[i],order[j]`` of the centred cosine
    matrices.  It is NP-hard; the solution is approximate:

    1. **start**: Frank–Wolfe on the relaxation over doubly stochastic
       matrices from the uniform matrix (the FAQ method of Vogelstein et al.,
       2015), rounded to the nearest permutation by linear assignment; the
       initial order is kept instead if it correlates better;
    2. **pair swaps**: swap the classes of two prototype rows while some swap
       raises the correlation (best swap per row, exact incremental gains).

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Unit rows.
    class_vectors : array_like, shape (K, m), or ClassEmbeddings
        Row c is the embedding of class c.
    initial_order : array_like of int, optional
        The current order (row i serves class ``initial_order[i]``); identity by default.
    seed : int
        Seed of the triplet sample of the agreement measure (large K only);
        the assignment itself is deterministic.
    time_limit : float, optional
        Seconds after which the search stops with the best order so far.
    relaxation_iterations : int
        Frank–Wolfe iterations of the start (0 skips it).
    max_swaps : int, optional
        Stop after this many swaps.

    Returns
    -------
    Assignment
        ``objective_before`` / ``objective_after`` are the Pearson correlations.

    Examples
    --------
    >>> p = np.array([[1.0, 0], [-1, 0], [0.8, 0.6], [-0.8, -0.6]])
    >>> e = np.array([[1.0, 0, 0], [0.9, 0.1, 0], [0, 0, 1], [0, 0.1, 0.9]])
    >>> result = assign_by_embeddings(p, e)
    >>> sorted(result.order[[0, 2]].tolist()) in ([0, 1], [2, 3])  # rows 0 and 2 are near
    True
    >>> result.agreement_after["triplet_agreement"] > result.agreement_before["triplet_agreement"]
    True
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    w = validate_prototypes(prototypes)
    e = vectors_of(class_vectors)
    k = w.shape[0]
    if e.shape[0] != k:
        raise SpherecodesError(f"got {e.shape[0]} class vectors for {k} prototypes; give one per prototype row")
    initial = _check_order(initial_order, k, "initial_order")
    require_memory(8.0 * 7 * k * k, f"the quadratic assignment of K={k} classes (7 K x K matrices)")
    proto_cos = _centred_offdiagonal(w @ w.T)
    embed_cos = _centred_offdiagonal(e @ e.T)
    scale = np.sqrt(np.einsum("ij,ij->", proto_cos, proto_cos) * np.einsum("ij,ij->", embed_cos, embed_cos))

    def correlation(order):
        return float(np.einsum("ij,ij->", proto_cos, embed_cos[np.ix_(order, order)]) / scale) if scale > 0 else 0.0

    order = initial
    if relaxation_iterations > 0:
        relaxed = _relaxed_assignment(proto_cos, embed_cos, relaxation_iterations, deadline)
        if correlation(relaxed) > correlation(initial):
            order = relaxed
    order, swaps, stop_reason = _pair_swaps(proto_cos, embed_cos, order, deadline, max_swaps)
    return Assignment(
        order=order,
        initial_order=initial,
        method="quadratic",
        objective_before=correlation(initial),
        objective_after=correlation(order),
        agreement_before=semantic_agreement(w, e[initial], seed=seed),
        agreement_after=semantic_agreement(w, e[order], seed=seed),
        swaps=swaps,
        stop_reason=stop_reason,
        wall_time=time.perf_counter() - start,
    )


def _centred_offdiagonal(gram: np.ndarray) -> np.ndarray:
    """The off-diagonal entries minus their mean, with a zero diagonal (in place)."""
    k = gram.shape[0]
    np.fill_diagonal(gram, 0.0)
    gram -= gram.sum() / (k * (k - 1))
    np.fill_diagonal(gram, 0.0)
    return gram


def _relaxed_assignment(g: np.ndarray, a: np.ndarray, iterations: int, deadline) -> np.ndarray:
    """Frank–Wolfe for ``max tr(G P A Pᵀ)`` over doubly stochastic P, rounded to an order.

    ``P[i, c]`` is the weight of class c at prototype row i.  For symmetric G
    and A the gradient is ``2 G P A``; with ``X = G P A`` every quantity of the
    exact line search needs only ``X`` and the new vertex Q (a permutation):
    ``f(P) = <X, P>``, ``tr(G Q A Pᵀ) = <X, Q>`` and ``f(Q)`` by indexing.
    """
    k = g.shape[0]
    rows = np.arange(k)
    p = np.full((k, k), 1.0 / k)
    for _ in range(iterations):
        x = g @ p @ a
        f_p = np.einsum("ij,ij->", x, p)
        _, vertex = linear_sum_assignment(x, maximize=True)
        x_q = x[rows, vertex].sum()
        f_q = np.einsum("ij,ij->", g, a[np.ix_(vertex, vertex)])
        # f(P + t(Q − P)) = f(P) + t·slope + t²·curvature on t in [0, 1].
        slope = 2.0 * (x_q - f_p)
        curvature = f_q - 2.0 * x_q + f_p
        if curvature < 0:
            step = min(1.0, max(0.0, -slope / (2.0 * curvature)))
        else:
            step = 1.0 if slope + curvature > 0 else 0.0
        if step <= 0.0:
            break
        p *= 1.0 - step
        p[rows, vertex] += step
        if deadline is not None and time.perf_counter() > deadline:
            break
    _, order = linear_sum_assignment(p, maximize=True)
    return order.astype(np.int64)


def _pair_swaps(g: np.ndarray, a: np.ndarray, order: np.ndarray, deadline, max_swaps):
    """Improve ``Σ_ij G_ij A_order[i],order[j]`` by swapping the classes of two rows at a time.

    With ``B = A[order][:, order]`` and ``M = G B`` (zero diagonals), swapping
    rows r and s changes the objective by
    ``2 (M_rs + M_sr − M_rr − M_ss + 2 G_rs B_rs)``, so one row's best swap
    costs O(K); an accepted swap updates M in O(K²) (a rank-one term and two
    columns) instead of recomputing it in O(K³).
    """
    order = order.copy()
    b = a[np.ix_(order, order)]
    m = g @ b
    swaps = 0
    while True:
        improved = False
        for r in range(len(order)):
            if deadline is not None and time.perf_counter() > deadline:
                return order, swaps, "time limit"
            gain = 2.0 * (m[r] + m[:, r] - m[r, r] - np.diagonal(m) + 2.0 * g[r] * b[r])
            s = int(np.argmax(gain))
            # Relative threshold: rounding in the incremental updates must not cycle.
            if gain[s] <= 1e-12 * (1.0 + abs(np.trace(m))):
                continue
            u = b[s] - b[r]
            u[[r, s]] = 0.0
            g_u = g @ u
            m += np.outer(g[:, r] - g[:, s], u)
            m[:, r] += g_u
            m[:, s] -= g_u
            order[[r, s]] = order[[s, r]]
            b[[r, s]] = b[[s, r]]
            b[:, [r, s]] = b[:, [s, r]]
            swaps += 1
            improved = True
            if max_swaps is not None and swaps >= max_swaps:
                return order, swaps, "swap limit"
        if not improved:
            return order, swaps, "local optimum"


def relabel_code(code: Code, assignment: Assignment, names, *, details: dict | None = None) -> Code:
    """The code with the labels of an assignment: same prototypes, bytes, statistics and certificate.

    Only ``labels`` and ``settings["assignment"]`` (the assignment's record
    plus ``details``, e.g. where the embeddings came from; it replaces an
    earlier record) change; everything else, including the certificate of a
    certified code, is carried over, since no row moves.

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> code = make_code(np.eye(3), method="tammes", labels=["a", "b", "c"])
    >>> result = assign_by_class_means(code.prototypes, np.eye(3)[[1, 2, 0]], initial_order=[0, 1, 2])
    >>> new = relabel_code(code, result, ["a", "b", "c"])
    >>> new.labels, new.sha256 == code.sha256, code.labels
    (['c', 'a', 'b'], True, ['a', 'b', 'c'])
    """
    names = check_names(names, code.k)
    return replace(
        code,
        labels=[names[c] for c in assignment.order],
        settings={**code.settings, "assignment": {**assignment.settings(), **(details or {})}},
    )


def assign_code(
    code: Code,
    *,
    embeddings: ClassEmbeddings | None = None,
    class_means=None,
    names=None,
    seed: int = 0,
    time_limit: float | None = None,
) -> tuple[Code, Assignment]:
    """Choose which class gets which prototype of ``code``; what ``spherecodes assign`` runs.

    Give exactly one of:

    * ``embeddings`` — class embeddings (:func:`class_embeddings`), matched by
      :func:`assign_by_embeddings`; the code's labels, if any, must be the same
      names, and give the initial order.
    * ``class_means`` — a (K, d) array of class-mean features from a model
      trained with this code, matched by :func:`assign_by_class_means`.  Row c
      is class ``names[c]``; ``names`` defaults to the code's labels, else
      ``"0"``, ``"1"``, ...

    Returns
    -------
    (Code, Assignment)
        The relabelled code (:func:`relabel_code`; write it back with
        ``write_code(path, new, overwrite=True)``) and the assignment.

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> code = make_code(np.eye(3), method="tammes")
    >>> new, result = assign_code(code, class_means=np.eye(3)[[2, 0, 1]])
    >>> new.labels, result.objective_after
    (['1', '2', '0'], 1.0)
    """
    if (embeddings is None) == (class_means is None):
        raise SpherecodesError("give either class embeddings or class means to assign classes to prototypes, not both")
    k = code.k
    if embeddings is not None:
        names = embeddings.names
    elif names is None:
        names = code.labels if code.labels is not None else [str(c) for c in range(k)]
    names = check_names(names, k)
    initial = None if code.labels is None else positions_of(code.labels, names)
    if embeddings is not None:
        assignment = assign_by_embeddings(
            code.prototypes, embeddings.vectors, initial_order=initial, seed=seed, time_limit=time_limit
        )
    else:
        assignment = assign_by_class_means(code.prototypes, class_means, initial_order=initial, seed=seed)
    details = embeddings.settings() if embeddings is not None else None
    return relabel_code(code, assignment, names, details=details), assignment
