"""Semantic agreement: how well a code's similarity order matches class embeddings.

:func:`semantic_agreement` measures it and :func:`semantic_report` gives the ``semantic`` part of a code's
report, as numbers (:func:`spherecodes.report.format_semantic_report` turns them into text).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from ..code import Code
from ..errors import SpherecodesError
from ..stats import validate_prototypes
from .embeddings import ClassEmbeddings, vectors_of

#: Above this many triplets (i, j, k) the agreement is estimated on a uniform sample of this size.
DEFAULT_MAX_TRIPLETS = 1_000_000

#: Above this many pairs the Spearman correlation is estimated on a uniform sample of this size.
DEFAULT_MAX_PAIRS = 1_000_000

#: Cosine differences at most this large count as ties: structured codes (the
#: cross-polytope, lattices) have exactly equal cosines that rounding perturbs.
TIE_TOL = 1e-12

# Rows of sampled triplets handled at once, so that memory stays O(chunk · (d + m)).
_TRIPLET_CHUNK = 1 << 16


def semantic_agreement(
    prototypes,
    class_vectors,
    *,
    max_triplets: int = DEFAULT_MAX_TRIPLETS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    seed: int = 0,
) -> dict:
    """How well the prototypes' similarity order matches the class vectors'.

    **Triplet agreement** is the fraction of class triplets (i, j, k), j ≠ k, both ≠ i, whose prototype order
    ``cos(p_i,p_j) >= cos(p_i,p_k)`` equals the embedding order ``cos(e_i,e_j) >= cos(e_i,e_k)`` (the indicator
    ``S̄_ijk`` of Mettes et al. 2019, Eq. 6 on both sides); a triplet tied on one side only counts one half, and
    independent orders give 0.5.  **Spearman** is the rank correlation between the K(K−1)/2 prototype cosines
    and the matching embedding cosines.  Beyond ``max_triplets`` triplets (``max_pairs`` pairs), a uniform
    sample of that size drawn with ``seed`` is used, and the result says so.

    Parameters
    ----------
    prototypes : array_like, shape (K, d)
        Unit rows.
    class_vectors : array_like, shape (K, m), or ClassEmbeddings
        Row i belongs to the class of prototype row i (see
        :meth:`ClassEmbeddings.aligned_to`).  Class-mean features work too.
    max_triplets, max_pairs : int
    seed : int

    Returns
    -------
    dict
        ``triplet_agreement``, ``spearman`` (``None`` when undefined, e.g.
        constant cosines), ``triplets`` and ``triplets_total`` (used / existing
        unordered triplets), ``triplets_sampled``, ``pairs``, ``pairs_total``,
        ``pairs_sampled``, ``seed``.

    Examples
    --------
    >>> p = np.array([[1.0, 0.0], [0.8, 0.6], [-1.0, 0.0]])
    >>> r = semantic_agreement(p, p)
    >>> r["triplet_agreement"], r["spearman"], r["triplets"], r["triplets_sampled"]
    (1.0, 1.0, 3, False)
    >>> semantic_agreement(p, p[::-1])["triplet_agreement"]
    0.6666666666666666
    """
    w = validate_prototypes(prototypes)
    e = vectors_of(class_vectors)
    k = w.shape[0]
    if e.shape[0] != k:
        raise SpherecodesError(f"got {e.shape[0]} class vectors for {k} prototypes; give one per prototype row")
    if k < 3:
        raise SpherecodesError(f"semantic agreement needs at least 3 classes, got {k}")
    if max_triplets < 1 or max_pairs < 1:
        raise SpherecodesError("max_triplets and max_pairs must be at least 1")
    rng = np.random.default_rng(seed)
    triplets_total = k * (k - 1) * (k - 2) // 2
    if triplets_total <= max_triplets:
        agreement = _triplet_agreement_exhaustive(w, e)
        triplets = triplets_total
    else:
        anchors, near, far = _sample_triplets(rng, k, max_triplets)
        agreement = _triplet_agreement_sampled(w, e, anchors, near, far)
        triplets = max_triplets
    pairs_total = k * (k - 1) // 2
    if pairs_total <= max_pairs:
        first, second = np.triu_indices(k, 1)
    else:
        first, second = _sample_pairs(rng, k, max_pairs)
    proto_cos = _rowwise_dot(w, first, second)
    embed_cos = _rowwise_dot(e, first, second)
    spearman = None
    # Cosines equal up to rounding (a simplex) have no order to correlate.
    if np.ptp(proto_cos) > TIE_TOL and np.ptp(embed_cos) > TIE_TOL:
        spearman = float(spearmanr(proto_cos, embed_cos).statistic)
    return {
        "triplet_agreement": float(agreement),
        "spearman": spearman,
        "triplets": int(triplets),
        "triplets_total": int(triplets_total),
        "triplets_sampled": triplets < triplets_total,
        "pairs": int(first.size),
        "pairs_total": int(pairs_total),
        "pairs_sampled": first.size < pairs_total,
        "seed": int(seed),
    }


def _tie_sign(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) <= TIE_TOL, 0, np.sign(x))


def _triplet_score(proto_diff: np.ndarray, embed_diff: np.ndarray) -> np.ndarray:
    # 1 when the orders agree (or both tie), 0 when they are opposite, 1/2 when one side ties:
    # the mean of the ≥-indicator agreement over the orders (j, k) and (k, j).
    return 1.0 - np.abs(_tie_sign(proto_diff) - _tie_sign(embed_diff)) / 2.0


def _triplet_agreement_exhaustive(w: np.ndarray, e: np.ndarray) -> float:
    k = w.shape[0]
    proto_gram, embed_gram = w @ w.T, e @ e.T
    first, second = np.triu_indices(k, 1)
    total = 0.0
    for i in range(k):
        keep = (first != i) & (second != i)
        j, l = first[keep], second[keep]
        total += _triplet_score(proto_gram[i, j] - proto_gram[i, l], embed_gram[i, j] - embed_gram[i, l]).sum()
    return total / (k * (k - 1) * (k - 2) / 2)


def _sample_triplets(rng, k: int, n: int):
    """``n`` uniform triplets (i, j, l) of distinct classes."""
    anchors = rng.integers(0, k, n)
    near = rng.integers(0, k - 1, n)
    near += near >= anchors  # uniform over the K-1 classes other than i
    low, high = np.minimum(anchors, near), np.maximum(anchors, near)
    far = rng.integers(0, k - 2, n)
    far += far >= low  # skip the two taken classes, in increasing order
    far += far >= high
    return anchors, near, far


def _sample_pairs(rng, k: int, n: int):
    first = rng.integers(0, k, n)
    second = rng.integers(0, k - 1, n)
    second += second >= first
    return first, second


def _rowwise_dot(v: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    out = np.empty(rows_a.size)
    for start in range(0, rows_a.size, _TRIPLET_CHUNK):
        span = slice(start, start + _TRIPLET_CHUNK)
        out[span] = np.einsum("ij,ij->i", v[rows_a[span]], v[rows_b[span]])
    return out


def _triplet_agreement_sampled(w, e, anchors, near, far) -> float:
    proto_diff = _rowwise_dot(w, anchors, near) - _rowwise_dot(w, anchors, far)
    embed_diff = _rowwise_dot(e, anchors, near) - _rowwise_dot(e, anchors, far)
    return float(_triplet_score(proto_diff, embed_diff).mean())


def semantic_report(
    code: Code,
    class_vectors,
    *,
    labels=None,
    max_triplets: int = DEFAULT_MAX_TRIPLETS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    seed: int = 0,
) -> dict:
    """The ``semantic`` part of a code's report: agreement with class embeddings.

    Parameters
    ----------
    code : Code
        A code with labels, or without when ``labels`` names its rows or
        ``class_vectors`` is a plain array whose row i belongs to prototype row i.
    class_vectors : ClassEmbeddings or array_like, shape (K, m)
        ClassEmbeddings are matched to the code's labels by name.
    labels : sequence of str, optional
        Class of each prototype row, overriding the code's labels (for a code
        stored without labels).
    max_triplets, max_pairs, seed
        As in :func:`semantic_agreement`.

    Returns
    -------
    dict
        :func:`semantic_agreement`'s keys plus ``embeddings`` (the source of the
        vectors, or ``None``), ``partially_embedded`` and ``random_fallback``.

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> code = make_code(np.array([[1.0, 0], [0.8, 0.6], [-1, 0]]), method="tammes", labels=["cat", "dog", "car"])
    >>> emb = ClassEmbeddings(["car", "cat", "dog"], np.array([[0.0, 1], [1, 0], [0.9, 0.1]]), source="toy")
    >>> r = semantic_report(code, emb)
    >>> r["triplet_agreement"], r["embeddings"]
    (1.0, 'toy')
    """
    if isinstance(class_vectors, ClassEmbeddings):
        labels = code.labels if labels is None else list(labels)
        if labels is None:
            raise SpherecodesError(
                f"code {code.name!r} has no labels, so its rows cannot be matched to class names; "
                "name its rows in order (--classes) or label the code first (spherecodes assign)"
            )
        vectors = class_vectors.aligned_to(labels)
        described = {
            "embeddings": class_vectors.source,
            "partially_embedded": {n: list(w) for n, w in class_vectors.partial.items()},
            "random_fallback": list(class_vectors.fallback),
        }
    else:
        vectors = class_vectors
        described = {"embeddings": None, "partially_embedded": {}, "random_fallback": []}
    agreement = semantic_agreement(code.prototypes, vectors, max_triplets=max_triplets, max_pairs=max_pairs, seed=seed)
    return {**agreement, **described}
