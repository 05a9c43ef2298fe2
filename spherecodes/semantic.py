"""Semantic prototypes: class names, word embeddings, agreement and assignment.

Four pieces, all behind ``spherecodes generate --method privileged``,
``spherecodes assign`` and the ``semantic`` part of a report (SPEC §4):

* **class names and embeddings** — :func:`read_class_names` reads one class
  name per line; :func:`load_embeddings` reads word2vec (binary or text),
  GloVe text (with or without the header line) and saved gensim models;
  :func:`class_embeddings` turns every class name into one vector, averaging
  the words of multi-word names and refusing names it cannot embed;
* **semantic agreement** — :func:`semantic_agreement` measures how well the
  prototypes' similarity order matches the embeddings' (triplet agreement and
  Spearman correlation);
* **assignment** — :func:`assign_by_embeddings` (approximate quadratic
  assignment) and :func:`assign_by_class_means` (linear assignment, seed 000)
  choose which class gets which prototype without moving any prototype;
* **the privileged optimiser** — :func:`privileged` minimises seed 002's
  ``L_HP + w · L_PI`` (Eq. 5 + Eq. 6) over the triplets of :class:`RankingTriplets`;
  :func:`spherecodes.generation.generate` with ``method="privileged"`` makes it a labelled code.

Conventions: a code's ``labels[i]`` is the class of prototype row ``i``.  An
assignment is an ``order`` array: prototype row ``i`` goes to class
``order[i]`` of the class list, so the new labels are ``names[order]``.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.stats import spearmanr

from .bank import Code
from .errors import SpherecodesError
from .memory import require_memory
from .stats import max_cos, validate_prototypes

#: Formats :func:`load_embeddings` reads; ``auto`` recognises each from the file's first bytes.
EMBEDDING_FORMATS = ("auto", "word2vec-binary", "word2vec-text", "glove", "gensim")

#: What :func:`class_embeddings` does with a class name none of whose words has a vector.
MISSING_POLICIES = ("error", "random")

#: Above this many triplets (i, j, k) the agreement is estimated on a uniform sample of this size.
DEFAULT_MAX_TRIPLETS = 1_000_000

#: Above this many pairs the Spearman correlation is estimated on a uniform sample of this size.
DEFAULT_MAX_PAIRS = 1_000_000

#: Cosine differences at most this large count as ties: structured codes (the
#: cross-polytope, lattices) have exactly equal cosines that rounding perturbs.
TIE_TOL = 1e-12

# Rows of sampled triplets handled at once, so that memory stays O(chunk · (d + m)).
_TRIPLET_CHUNK = 1 << 16


# --------------------------------------------------------------------------- class names


def read_class_names(path) -> list[str]:
    """Read a class-names file: one name per line, K = number of names.

    Surrounding whitespace is stripped and blank lines are skipped; spaces
    inside a name are kept (``maple tree``).  The file is UTF-8 (a byte-order
    mark is allowed).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    list of str
        The names in file order.

    Raises
    ------
    SpherecodesError
        The file is missing or not UTF-8 text, holds fewer than two names, or
        repeats a name (every repeated name is listed with its line numbers).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "classes.txt")
    >>> _ = open(path, "w").write("cat\\ndog\\n\\npickup_truck\\nmaple tree\\n")
    >>> read_class_names(path)
    ['cat', 'dog', 'pickup_truck', 'maple tree']
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SpherecodesError(f"no such class-names file: {path}") from None
    except IsADirectoryError:
        raise SpherecodesError(f"{path} is a directory; give a text file with one class name per line") from None
    except UnicodeDecodeError as err:
        raise SpherecodesError(
            f"{path} is not UTF-8 text (byte {err.start}); give a text file with one class name per line"
        ) from None
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    names, lines_of = [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        name = line.strip()
        if name:
            names.append(name)
            lines_of.setdefault(name, []).append(number)
    if len(names) < 2:
        raise SpherecodesError(f"{path} holds {len(names)} class names; give at least 2, one per line")
    repeated = [f"{name!r} (lines {', '.join(map(str, lines))})" for name, lines in lines_of.items() if len(lines) > 1]
    if repeated:
        raise SpherecodesError(f"{path} repeats class names, each class must appear once: {'; '.join(repeated)}")
    return names


# --------------------------------------------------------------------------- embeddings


def load_embeddings(path, fmt: str = "auto"):
    """Load word embeddings with gensim.

    Parameters
    ----------
    path : str or Path
        The embedding file; ``.gz`` and ``.bz2`` files are read compressed.
    fmt : {"auto", "word2vec-binary", "word2vec-text", "glove", "gensim"}
        ``word2vec-text`` also covers GloVe files that carry a ``count dim``
        header line; ``glove`` is GloVe's header-less text; ``gensim`` is a
        ``KeyedVectors`` (or a ``Word2Vec``/``FastText`` model) saved with
        gensim's ``.save``.  ``auto`` tells them apart from the first bytes:
        a pickle is a gensim save, a ``count dim`` first line is word2vec
        (text when the next line is a word and ``dim`` numbers, else binary),
        anything else is tried as GloVe.

    Returns
    -------
    gensim.models.KeyedVectors

    Raises
    ------
    SpherecodesError
        Unknown ``fmt``, a missing file, or a file gensim cannot read in that format.

    Notes
    -----
    A gensim save is a Python pickle, and loading a pickle can run code: load
    only files you trust.  The whole vocabulary is loaded; for the 3M-word
    GoogleNews vectors that is about 3.6 GB.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from gensim.models import KeyedVectors
    >>> kv = KeyedVectors(3)
    >>> kv.add_vectors(["cat", "dog"], np.array([[1, 0, 0], [0.8, 0.6, 0]], dtype=np.float32))
    >>> path = os.path.join(tempfile.mkdtemp(), "vectors.bin")
    >>> kv.save_word2vec_format(path, binary=True)
    >>> loaded = load_embeddings(path)
    >>> loaded.vector_size, sorted(loaded.key_to_index)
    (3, ['cat', 'dog'])
    """
    from gensim.models import KeyedVectors

    if fmt not in EMBEDDING_FORMATS:
        raise SpherecodesError(f"unknown embedding format {fmt!r}; choose one of {', '.join(EMBEDDING_FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise SpherecodesError(f"no such embedding file: {path}")
    if fmt == "auto":
        fmt = _sniff_embedding_format(path)
    try:
        if fmt == "gensim":
            loaded = KeyedVectors.load(str(path))
            # A saved Word2Vec/FastText model loads as the model; its vectors are .wv.
            vectors = getattr(loaded, "wv", loaded)
            if not isinstance(vectors, KeyedVectors):
                raise SpherecodesError(
                    f"{path} is a gensim save of {type(loaded).__name__}, not word vectors; "
                    "save a KeyedVectors or a Word2Vec/FastText model"
                )
            return vectors
        return KeyedVectors.load_word2vec_format(
            str(path),
            binary=fmt == "word2vec-binary",
            no_header=fmt == "glove",
            # Large published vector files contain a few tokens cut mid-character.
            unicode_errors="ignore",
        )
    except SpherecodesError:
        raise
    except Exception as err:  # gensim reports bad files with many exception types
        reason = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise SpherecodesError(
            f"cannot read {path} as {fmt} embeddings ({reason}); check the file or pass the format explicitly "
            f"(one of {', '.join(EMBEDDING_FORMATS[1:])})"
        ) from None


def _sniff_embedding_format(path: Path) -> str:
    """Recognise an embedding file's format from its first 64 KiB (see :func:`load_embeddings`)."""
    from gensim import utils

    try:
        with utils.open(str(path), "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    if head[:1] == b"\x80":  # pickle protocol 2 and later: a gensim .save
        return "gensim"
    first, _, rest = head.partition(b"\n")
    fields = first.split()
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        dim = int(fields[1])
        second = rest.split(b"\n", 1)[0]
        return "word2vec-text" if _is_text_vector_line(second, dim) else "word2vec-binary"
    if _is_text_vector_line(first, None):
        return "glove"
    raise SpherecodesError(
        f"{path} is not a recognised embedding file (neither a gensim save, nor word2vec with a "
        "'count dim' header, nor GloVe text lines 'word x1 x2 ...')"
    )


def _is_text_vector_line(line: bytes, dim: int | None) -> bool:
    """Whether ``line`` reads as ``word x1 ... x_dim`` in UTF-8 text (any length when ``dim`` is None)."""
    try:
        tokens = line.decode("utf-8").rstrip().split(" ")
        numbers = [float(t) for t in tokens[1:]]
    except (UnicodeDecodeError, ValueError):
        return False
    return len(numbers) > 0 and (dim is None or len(numbers) == dim)


@dataclass(frozen=True)
class ClassEmbeddings:
    """One embedding vector per class name, as :func:`class_embeddings` makes them.

    Attributes
    ----------
    names : list of str
        The class names, in the order given.
    vectors : ndarray, shape (K, m)
        float64 unit rows; row ``c`` belongs to ``names[c]``.
    partial : dict
        Multi-word names some of whose words had no vector: name -> the missing words.
    fallback : list of str
        Names none of whose words had a vector and that got a random vector instead.
    source : str
        Where the vectors came from (a path, or a description).
    """

    names: list[str]
    vectors: np.ndarray
    partial: dict = field(default_factory=dict)
    fallback: list = field(default_factory=list)
    source: str = ""

    def settings(self) -> dict:
        """The JSON-ready description of these vectors that a bank's settings record."""
        return {
            "embeddings": self.source,
            "embedding_dim": int(self.vectors.shape[1]),
            "partially_embedded": {name: list(words) for name, words in self.partial.items()},
            "random_fallback": list(self.fallback),
        }

    def aligned_to(self, labels) -> np.ndarray:
        """The vectors reordered so that row ``i`` belongs to ``labels[i]``.

        Raises
        ------
        SpherecodesError
            When ``labels`` is not the same set of names (the differences are listed).

        Examples
        --------
        >>> emb = ClassEmbeddings(["a", "b"], np.eye(2))
        >>> emb.aligned_to(["b", "a"])
        array([[0., 1.],
               [1., 0.]])
        """
        return self.vectors[self.indices_of(labels)]

    def indices_of(self, labels) -> np.ndarray:
        """Position of each of ``labels`` in :attr:`names` (the labels must be the same set)."""
        return _positions_of(labels, self.names)


def _positions_of(labels, names) -> np.ndarray:
    """``names.index(label)`` for every label; refuses, listing the differences, unless both are the same set."""
    position = {name: c for c, name in enumerate(names)}
    labels = list(labels)
    unknown = [name for name in labels if name not in position]
    absent = sorted(set(names) - set(labels))
    if unknown or absent or len(labels) != len(names):
        parts = [f"the code has {len(labels)} labels and the class list {len(names)} names"]
        if unknown:
            parts.append(f"labels not among the class names: {_quoted(unknown)}")
        if absent:
            parts.append(f"class names not among the labels: {_quoted(absent)}")
        raise SpherecodesError("the code's labels and the class names differ: " + "; ".join(parts))
    return np.array([position[name] for name in labels], dtype=np.int64)


def _check_names(names, k: int | None = None) -> list[str]:
    """Distinct class names as strings, K of them when ``k`` is given."""
    names = [str(n) for n in names]
    if k is not None and len(names) != k:
        raise SpherecodesError(f"got {len(names)} class names for a code of K={k} prototypes; give one per prototype")
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise SpherecodesError(f"class names must be distinct; repeated: {_quoted(repeated)}")
    return names


def _quoted(names) -> str:
    return ", ".join(repr(n) for n in names)


def class_embeddings(names, embeddings, *, missing: str = "error", fmt: str = "auto") -> ClassEmbeddings:
    """Embed every class name with word vectors.

    A name is looked up whole first (``pickup_truck`` is one token in the
    GoogleNews vectors; ``maple tree`` is also tried as ``maple_tree``), each
    time exactly and then lower-cased.  Otherwise it is split at spaces and
    underscores and gets the mean of its words' unit vectors: unit, because a
    word vector's length tracks the word's frequency rather than its meaning,
    and the mean should not be dominated by the most frequent word.  Words
    without a vector are skipped and recorded in ``partial``.

    Parameters
    ----------
    names : sequence of str
        Class names (see :func:`read_class_names`).
    embeddings : KeyedVectors, Word2Vec, str or Path
        Loaded vectors (or a gensim model with ``.wv``), or a file for :func:`load_embeddings`.
    missing : {"error", "random"}
        A name none of whose words has a vector is an error that lists every
        such name (``"error"``), or gets a random unit vector seeded by the
        name (``"random"``: in many dimensions nearly orthogonal to every
        other class, i.e. semantically unrelated to all of them).
    fmt : str
        Format of an embedding file (see :func:`load_embeddings`).

    Returns
    -------
    ClassEmbeddings

    Raises
    ------
    SpherecodesError
        Repeated names, an unknown ``missing`` policy, or (with ``"error"``)
        names that cannot be embedded.

    Examples
    --------
    >>> import numpy as np
    >>> from gensim.models import KeyedVectors
    >>> kv = KeyedVectors(2)
    >>> kv.add_vectors(["maple", "tree", "oak"], np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32))
    >>> emb = class_embeddings(["Oak", "maple tree"], kv)
    >>> np.round(emb.vectors, 4)
    array([[0.6   , 0.8   ],
           [0.7071, 0.7071]])
    >>> class_embeddings(["oak", "pine", "fir"], kv)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: no word vector for 2 of 3 class names: 'pine', 'fir'; fix the names, use other embeddings, or ask for random vectors for them (missing='random', --missing-words random)
    """
    if missing not in MISSING_POLICIES:
        raise SpherecodesError(f"unknown missing-word policy {missing!r}; choose one of {', '.join(MISSING_POLICIES)}")
    names = _check_names(names)
    if isinstance(embeddings, (str, Path)):
        source = str(embeddings)
        embeddings = load_embeddings(embeddings, fmt)
    else:
        source = f"in-memory {type(embeddings).__name__}"
        embeddings = getattr(embeddings, "wv", embeddings)  # a Word2Vec/FastText model's vectors
    rows, partial, unembedded = [], {}, []
    for name in names:
        vector, missing_words = _embed_name(embeddings, name)
        if vector is None:
            unembedded.append(name)
        elif missing_words:
            partial[name] = tuple(missing_words)
        rows.append(vector)
    if unembedded and missing == "error":
        raise SpherecodesError(
            f"no word vector for {len(unembedded)} of {len(names)} class names: {_quoted(unembedded)}; "
            "fix the names, use other embeddings, or ask for random vectors for them "
            "(missing='random', --missing-words random)"
        )
    dim = int(embeddings.vector_size)
    for c, name in enumerate(names):
        if rows[c] is None:
            rows[c] = _name_seeded_unit_vector(name, dim)
    return ClassEmbeddings(
        names=names, vectors=np.array(rows, dtype=np.float64), partial=partial, fallback=unembedded, source=source
    )


def _lookup(embeddings, token: str):
    for candidate in (token, token.lower()):
        if candidate in embeddings.key_to_index:
            return _unit(np.asarray(embeddings[candidate], dtype=np.float64))
    return None


def _unit(v: np.ndarray):
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 and np.isfinite(norm) else None


def _embed_name(embeddings, name: str):
    """The unit vector of one class name and the words it had to skip; ``None`` if all are missing."""
    for whole in dict.fromkeys((name, "_".join(name.split()))):
        vector = _lookup(embeddings, whole)
        if vector is not None:
            return vector, []
    words = name.replace("_", " ").split()
    found, missing_words = [], []
    for word in words:
        vector = _lookup(embeddings, word)
        if vector is None:
            missing_words.append(word)
        else:
            found.append(vector)
    if not found:
        return None, missing_words
    return _unit(np.mean(found, axis=0)), missing_words


def _name_seeded_unit_vector(name: str, dim: int) -> np.ndarray:
    # Seeded by the name alone, so a class keeps its fallback vector whatever the class order.
    seed = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")
    return _unit(np.random.default_rng(seed).standard_normal(dim))


def _unit_rows(vectors, what: str) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] < 2 or v.shape[1] < 1:
        raise SpherecodesError(f"{what} must be a (K, m) array with K >= 2, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise SpherecodesError(f"{what} must be finite; row {int(np.argwhere(~np.isfinite(v))[0, 0])} is not")
    norms = np.linalg.norm(v, axis=1)
    if np.any(norms == 0):
        raise SpherecodesError(f"{what}: row {int(np.argmin(norms))} is zero and has no direction")
    return v / norms[:, None]


def _vectors_of(class_vectors) -> np.ndarray:
    if isinstance(class_vectors, ClassEmbeddings):
        class_vectors = class_vectors.vectors
    return _unit_rows(class_vectors, "class vectors")


# --------------------------------------------------------------------------- agreement


def semantic_agreement(
    prototypes,
    class_vectors,
    *,
    max_triplets: int = DEFAULT_MAX_TRIPLETS,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    seed: int = 0,
) -> dict:
    """How well the prototypes' similarity order matches the class vectors'.

    **Triplet agreement** is the fraction of class triplets (i, j, k), j ≠ k,
    both ≠ i, whose prototype order ``cos(p_i,p_j) >= cos(p_i,p_k)`` equals
    the embedding order ``cos(e_i,e_j) >= cos(e_i,e_k)`` — the indicator
    ``S̄_ijk`` of seed 002 Eq. 6 on both sides.  Over the two orders of
    (j, k), a triplet tied on one side only counts one half.  Independent
    orders give 0.5.  **Spearman** is the rank correlation between the K(K−1)/2
    prototype cosines and the matching embedding cosines.

    Every triplet (every pair) is used while there are at most
    ``max_triplets`` (``max_pairs``) of them; beyond, a uniform sample of that
    size drawn with ``seed``, and the result says so.

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
    e = _vectors_of(class_vectors)
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
    >>> from spherecodes.bank import make_code
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


def format_semantic_report(semantic: dict) -> list[tuple[str, str]]:
    """The ``(label, value)`` lines of a text report for :func:`semantic_report`'s dict.

    Examples
    --------
    >>> format_semantic_report({"triplet_agreement": 0.75, "spearman": 0.5, "triplets": 4,
    ...     "triplets_total": 4, "triplets_sampled": False, "pairs": 6, "pairs_total": 6,
    ...     "pairs_sampled": False, "seed": 0})
    [('triplet agreement', '0.75   (all 4 triplets; 0.5 = chance)'), ('Spearman', '0.5   (all 6 pairs)')]
    """
    def extent(used, total, sampled, what):
        if sampled:
            return f"sample of {used:,} of {total:,} {what}, seed {semantic['seed']}"
        return f"all {total:,} {what}"

    spearman = "n/a" if semantic["spearman"] is None else f"{semantic['spearman']:.6g}"
    return [
        (
            "triplet agreement",
            f"{semantic['triplet_agreement']:.6g}   ("
            f"{extent(semantic['triplets'], semantic['triplets_total'], semantic['triplets_sampled'], 'triplets')}"
            "; 0.5 = chance)",
        ),
        (
            "Spearman",
            f"{spearman}   ({extent(semantic['pairs'], semantic['pairs_total'], semantic['pairs_sampled'], 'pairs')})",
        ),
    ]


# --------------------------------------------------------------------------- assignment


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


def format_assignment(assignment: Assignment) -> str:
    """A short text summary of an assignment: objective and agreement before and after.

    Examples
    --------
    >>> p = np.array([[1.0, 0], [0.8, 0.6], [-1, 0], [0, -1]])
    >>> result = assign_by_class_means(p, p[[2, 0, 3, 1]])
    >>> print(format_assignment(result))  # doctest: +ELLIPSIS
    linear assignment (optimal), 0 swaps, ... s
      mean cos(prototype, class mean)  -0.2 -> 1
      triplet agreement                0.166667 -> 1
      Spearman                         -0.794118 -> 1
    """
    objective = "Pearson(prototype cos, embedding cos)" if assignment.method == "quadratic" \
        else "mean cos(prototype, class mean)"

    def pair(before, after):
        fmt = lambda x: "n/a" if x is None else f"{x:.6g}"  # noqa: E731
        return f"{fmt(before)} -> {fmt(after)}"

    rows = [
        (objective, pair(assignment.objective_before, assignment.objective_after)),
        ("triplet agreement", pair(assignment.agreement_before["triplet_agreement"],
                                   assignment.agreement_after["triplet_agreement"])),
        ("Spearman", pair(assignment.agreement_before["spearman"], assignment.agreement_after["spearman"])),
    ]
    width = max(len(label) for label, _ in rows)
    head = (f"{assignment.method} assignment ({assignment.stop_reason}), {assignment.swaps} swaps, "
            f"{assignment.wall_time:.3g} s")
    return "\n".join([head] + [f"  {label:<{width}}  {value}" for label, value in rows])


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
    path = Path(path)
    try:
        means = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise SpherecodesError(f"no such class-means file: {path}") from None
    except (OSError, ValueError) as err:
        raise SpherecodesError(
            f"cannot read {path} as a .npy array ({str(err).splitlines()[0][:120]}); "
            "save the (K, d) class means with numpy.save"
        ) from None
    if means.ndim != 2 or not np.issubdtype(means.dtype, np.number):
        raise SpherecodesError(
            f"{path} holds a {means.ndim}-D {means.dtype} array; class means must be a numeric (K, d) array"
        )
    return _unit_rows(means, f"class means in {path}")


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
    """Linear assignment of classes to fixed prototypes from class-mean features (seed 000).

    Maximises ``Σ_i cos(p_i, h̄_order[i])`` over all orders with the Hungarian
    method (:func:`scipy.optimize.linear_sum_assignment`).  Cosines, not dot
    products: a class mean's length says how tightly its features cluster, not
    where they point.  The objectives are the *mean* cosine between each
    prototype and the mean of the class it serves.

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
    means = _unit_rows(class_means, "class means")
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

    The prototypes are never touched, so every separation number is unchanged.

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
    e = _vectors_of(class_vectors)
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
    >>> from spherecodes.bank import make_code
    >>> code = make_code(np.eye(3), method="tammes", labels=["a", "b", "c"])
    >>> result = assign_by_class_means(code.prototypes, np.eye(3)[[1, 2, 0]], initial_order=[0, 1, 2])
    >>> new = relabel_code(code, result, ["a", "b", "c"])
    >>> new.labels, new.sha256 == code.sha256, code.labels
    (['c', 'a', 'b'], True, ['a', 'b', 'c'])
    """
    names = _check_names(names, code.k)
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

    * ``embeddings`` — class embeddings (:func:`class_embeddings`), matched to
      the prototype Gram matrix by :func:`assign_by_embeddings`.  When the
      code has labels they must be the same names; they give the initial
      order.
    * ``class_means`` — a (K, d) array of class-mean features from a model
      trained with this code, matched by :func:`assign_by_class_means`.  Row c
      is class ``names[c]``; ``names`` defaults to the code's labels (the model
      was trained with class ``labels[c]`` on prototype row c), and to
      ``"0"``, ``"1"``, ... for a code without labels.

    Returns
    -------
    (Code, Assignment)
        The relabelled code (:func:`relabel_code`; write it back with
        ``write_code(path, new, overwrite=True)``) and the assignment.

    Examples
    --------
    >>> from spherecodes.bank import make_code
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
    names = _check_names(names, k)
    initial = None if code.labels is None else _positions_of(code.labels, names)
    if embeddings is not None:
        assignment = assign_by_embeddings(
            code.prototypes, embeddings.vectors, initial_order=initial, seed=seed, time_limit=time_limit
        )
    else:
        assignment = assign_by_class_means(code.prototypes, class_means, initial_order=initial, seed=seed)
    details = embeddings.settings() if embeddings is not None else None
    return relabel_code(code, assignment, names, details=details), assignment


# --------------------------------------------------------------------------- privileged information (seed 002 Eq. 6)

#: Ways to choose the triplet set T of Eq. 6; ``auto`` is ``all`` up to :data:`ALL_TRIPLETS_UP_TO_K` classes,
#: ``sampled`` beyond.
TRIPLET_STRATEGIES = ("auto", "all", "sampled", "neighbours")

#: Largest K for which ``auto`` uses every triplet (K = 200 gives 3.9 million per step).
ALL_TRIPLETS_UP_TO_K = 200

#: Triplets drawn per step by the ``sampled`` and ``neighbours`` strategies.
DEFAULT_TRIPLET_SAMPLES = 1 << 16

#: Nearest embedding neighbours per class for the ``neighbours`` strategy.
DEFAULT_NEIGHBOURS = 10

# Up to this K the ``sampled`` strategy keeps the K x K embedding cosines (128 MiB at the limit).
_EMBEDDING_GRAM_UP_TO_K = 4096


class RankingTriplets:
    """The triplet set T of seed 002 Eq. 6 with its targets S̄, one batch per step.

    Strategies:

    * ``all`` — every (i, j, k) with j < k, both ≠ i: Eq. 6 exactly (the
      mirrored (i, k, j) carries the same information);
    * ``sampled`` — a fresh uniform sample of ``samples`` triplets every step:
      an unbiased estimate of Eq. 6;
    * ``neighbours`` — as the paper's released code intends: j among the
      ``neighbours`` nearest embedding neighbours of i, k any other class, so
      the target is always 1; ``samples`` of them are drawn every step.  It
      spends the budget on each class's nearest classes only, and on planted
      clusters (K = 500, ``docs/semantic.md``) it reaches a clearly lower
      agreement over all triplets than ``sampled`` at the same cost;
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
        import torch

        vectors = _vectors_of(class_vectors)
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
        import torch

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
        import torch

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
    """Seed 002 Eq. 6 on a batch of triplets: the RankNet loss of the similarity order.

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
    import torch.nn.functional as F

    flat = gram.reshape(-1)
    logits = flat[near] - flat[far]
    return F.binary_cross_entropy_with_logits(logits, target.to(logits.dtype))


# --------------------------------------------------------------------------- the privileged optimiser

#: Weight of L_PI in ``L_HP + weight · L_PI``; seed 002 sums the two losses.
DEFAULT_SEMANTIC_WEIGHT = 1.0


def privileged(
    d: int,
    k: int,
    embeddings,
    *,
    semantic_weight: float = DEFAULT_SEMANTIC_WEIGHT,
    seed: int = 0,
    steps: int | None = None,
    device="auto",
    time_limit: float | None = None,
    progress=None,
    triplets: str = "auto",
    triplet_samples: int = DEFAULT_TRIPLET_SAMPLES,
    neighbours: int = DEFAULT_NEIGHBOURS,
):
    """Prototypes that are separated *and* ordered like the class embeddings (seed 002 §2.1).

    Minimises ``L_HP + semantic_weight · L_PI`` over K unit vectors in R^d:
    ``L_HP = (1/K) Σ_i max_{j≠i} cos(p_i, p_j)`` (Eq. 5) pushes every
    prototype away from its nearest neighbour, and ``L_PI`` (Eq. 6,
    :func:`privileged_information_loss` on the triplets of
    :class:`RankingTriplets`) asks each class's prototype similarities to be
    ordered like its embedding similarities.  The weight trades separation for
    semantics: 0 is Eq. 5 alone, larger values follow the embeddings more
    closely at a higher max-cos.

    The optimiser is Riemannian Adam on the sphere (gradients projected on the
    tangent space, rows re-normalised after each step) from the same seeded
    random start as :func:`spherecodes.solvers.tammes`, with its default step
    sizes for (d, K) decayed geometrically by a factor of 100.

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of classes (>= 3).
    embeddings : ClassEmbeddings or array_like, shape (K, m)
        One vector per class; row c is class c (prototype row c).
    semantic_weight : float
        Weight of L_PI, >= 0.
    seed : int
        Seed of the start and of the triplet samples; a seed and settings give
        bit-identical prototypes on the same CPU and software.
    steps : int, optional
        Optimisation steps (default: :func:`spherecodes.solvers.tammes_defaults`' steps for (d, K)).
    device : {"auto", "cpu", "cuda", "cuda:N"}
    time_limit : float, optional
        Seconds; stops then and returns the current code.
    progress : callable, optional
        Receives :class:`spherecodes.solvers.Progress` updates.
    triplets : {"auto", "all", "sampled", "neighbours"}
        The triplet set of L_PI (see :class:`RankingTriplets`): every triplet
        up to 200 classes, a fresh uniform sample every step beyond.
    triplet_samples, neighbours : int
        Triplets per step (``sampled``, ``neighbours``) and neighbours per class.

    Returns
    -------
    spherecodes.solvers.SolverResult
        ``method="privileged"``; ``history`` logs ``L_HP + w·L_PI`` and max-cos;
        ``settings`` records the weight, the triplet strategy and its sample
        sizes, and the embeddings' description.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.standard_normal((3, 8))
    >>> emb = centres[np.arange(12) % 3] + 0.2 * rng.standard_normal((12, 8))
    >>> res = privileged(4, 12, emb, seed=0, steps=300, device="cpu")
    >>> res.method, res.prototypes.shape, res.settings["triplets"]
    ('privileged', (12, 4), 'all')
    >>> plain = privileged(4, 12, emb, semantic_weight=0, seed=0, steps=300, device="cpu")
    >>> agreement = lambda r: semantic_agreement(r.prototypes, emb)["triplet_agreement"]
    >>> agreement(res) > agreement(plain) + 0.1
    True
    """
    import torch

    from . import solvers
    from .devices import resolve_device

    begin = time.perf_counter()
    d, k, seed, time_limit = solvers._check_common(d, k, seed, time_limit, progress)
    vectors = _vectors_of(embeddings)
    if vectors.shape[0] != k:
        raise SpherecodesError(f"got {vectors.shape[0]} class embeddings for K={k}; give one per class")
    if isinstance(semantic_weight, bool) or not isinstance(semantic_weight, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(semantic_weight) and semantic_weight >= 0):
        raise SpherecodesError(f"semantic weight must be a finite number >= 0, got {semantic_weight!r}")
    dev = resolve_device(device)
    defaults = solvers.tammes_defaults(d, k, dev)
    steps = defaults["steps"] if steps is None else solvers._check_int("steps", steps, 1)
    ranking = RankingTriplets(
        vectors, triplets, samples=triplet_samples, neighbours=neighbours, seed=seed, device=dev
    )
    dtype = defaults["dtype"]
    itemsize = 4 if dtype == "float32" else 8
    per_step = ranking.settings()["triplets_per_step"]
    require_memory(
        itemsize * (4 * k * k + 8 * k * d) + 32.0 * per_step,
        f"the privileged working set (K x K matrices and {per_step:,} triplets, {dtype})",
        device=str(dev),
    )
    # A step costs a K x K x d Gram product and a few operations per triplet.
    threads = solvers._default_threads(k * k * d + 4 * per_step, dev)
    settings = {
        "method": "privileged", "d": d, "k": k, "seed": seed, "steps": steps, "time_limit": time_limit,
        "device": str(dev), "dtype": dtype, "threads": threads, "semantic_weight": float(semantic_weight),
        "objective": "L_HP + semantic_weight * L_PI (seed 002 Eq. 5 + Eq. 6)",
        "lr_start": defaults["lr_start"], "lr_end": defaults["lr_start"] / 100,
        "beta1": defaults["beta1"], "beta2": defaults["beta2"], "eps": defaults["eps"],
        "log_every": defaults["log_every"],
        **ranking.settings(),
        **(
            embeddings.settings() if isinstance(embeddings, ClassEmbeddings)
            else {"embedding_dim": int(vectors.shape[1])}
        ),
    }
    eye2 = 2 * torch.eye(k, dtype=solvers._DTYPES[dtype], device=dev)

    def objective(x, step):
        gram = x @ x.T
        separation = (gram - eye2).amax(dim=1).mean()
        if semantic_weight == 0:
            return separation
        return separation + semantic_weight * privileged_information_loss(gram, *ranking.batch())

    clock = solvers._Clock(time_limit, progress, 1, begin)
    history: list = []
    with solvers._torch_threads(threads):
        code, done, timed_out = solvers.descend_on_sphere(
            solvers._start(seed, 0, k, d), objective, steps=steps, lr_start=settings["lr_start"],
            lr_end=settings["lr_end"], adam=settings, dtype=dtype, device=dev,
            clock=clock, history=history, log_every=settings["log_every"],
        )
    return solvers.SolverResult(
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
