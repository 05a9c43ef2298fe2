"""Class names and word embeddings: one unit vector per class.

:func:`read_class_names` reads the names, :func:`load_embeddings` the word
vectors, and :func:`class_embeddings` turns every class name into one vector.
The small helpers (:func:`unit_rows`, :func:`vectors_of`, :func:`positions_of`,
:func:`check_names`) are shared by the rest of :mod:`spherecodes.semantic`.
"""

from __future__ import annotations

import codecs
import gc
import hashlib
import unicodedata
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import heavy
from ..errors import SpherecodesError
from ..inputs import check_input_file
from ..memory import format_bytes, require_memory

#: Formats :func:`load_embeddings` reads; ``auto`` recognises each from the file's first bytes.
EMBEDDING_FORMATS = ("auto", "word2vec-binary", "word2vec-text", "glove", "gensim")

#: What :func:`class_embeddings` does with a class name none of whose words has a vector.
MISSING_POLICIES = ("error", "random")

#: The characters besides ``\n`` at which Python's ``str.splitlines`` (and some editors) break a line: a class
#: name holding one is refused, so that a names file has one meaning (line i is class i) everywhere.
LINE_BREAKS = frozenset("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


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
        The file is missing or not UTF-8 text, holds fewer than two names,
        a name holding a NUL character, or repeats a name (every repeated
        name is listed with its line numbers).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "classes.txt")
    >>> _ = open(path, "w").write("cat\\ndog\\n\\npickup_truck\\nmaple tree\\n")
    >>> read_class_names(path)
    ['cat', 'dog', 'pickup_truck', 'maple tree']
    """
    path = check_input_file(path, "class-names file (one class name per line)")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise SpherecodesError(
            f"{path} is not UTF-8 text (byte {err.start}); give a text file with one class name per line"
        ) from None
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    names, lines_of = [], {}
    # Lines end at \n alone (\r\n too: the \r is stripped), never at the other characters Python's
    # splitlines() breaks at (\x0c, \x85, U+2028, ...), which an editor shows inside one line.
    for number, line in enumerate(text.split("\n"), start=1):
        name = line.strip()
        if "\0" in name:  # checked before any work: a bank cannot store it as a label
            raise SpherecodesError(f"{path}: the class name on line {number} holds a NUL character (byte 0), which "
                                   "a name cannot hold; remove it")
        breaks = sorted({c for c in name if c in LINE_BREAKS})
        if breaks:
            shown = ", ".join(f"U+{ord(c):04X}" for c in breaks)
            raise SpherecodesError(f"{path}: the class name on line {number} holds a line or page break ({shown}) "
                                   "that some programs split lines at; class names are one per line, ended by a "
                                   "newline: remove it")
        if name:
            names.append(name)
            # Two Unicode spellings of one name (composed é, or e and a combining accent) print alike: one class.
            lines_of.setdefault(unicodedata.normalize("NFC", name), []).append(number)
    if len(names) < 2:
        raise SpherecodesError(f"{path} holds {len(names)} class names; give at least 2, one per line")
    repeated = [f"{name!r} (lines {', '.join(map(str, lines))})" for name, lines in lines_of.items() if len(lines) > 1]
    if repeated:
        raise SpherecodesError(f"{path} repeats class names, each class must appear once (names are compared in "
                               f"Unicode's composed form NFC): {'; '.join(repeated)}")
    return names


# --------------------------------------------------------------------------- embeddings


def load_embeddings(path, fmt: str = "auto"):
    """Load word embeddings with gensim.

    Parameters
    ----------
    path : str or Path
        The embedding file; ``.gz`` and ``.bz2`` files are read compressed.
    fmt : {"auto", "word2vec-binary", "word2vec-text", "glove", "gensim"}
        The formats of ``docs/semantic.md``; ``auto`` tells the data formats
        apart from the first bytes and refuses a file that starts like a pickle.

    Returns
    -------
    gensim.models.KeyedVectors

    Raises
    ------
    SpherecodesError
        Unknown ``fmt``, a missing or special file (a fifo, a device), a pickle
        under ``auto``, a header declaring more vectors than the file holds,
        or a file gensim cannot read in that format.

    Notes
    -----
    A gensim save is a Python pickle, and unpickling runs whatever code the file names: ``fmt="gensim"`` is the
    only way one is loaded, so name it only for files you trust.  The whole vocabulary is loaded (about 3.6 GB for
    the 3M-word GoogleNews vectors).

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
    KeyedVectors = heavy.gensim("models").KeyedVectors

    if fmt not in EMBEDDING_FORMATS:
        raise SpherecodesError(f"unknown embedding format {fmt!r}; choose one of {', '.join(EMBEDDING_FORMATS)}")
    path = check_input_file(path, "word-vector file (word2vec, GloVe or a gensim save)")
    if fmt == "auto":
        fmt = _sniff_embedding_format(path)
    if fmt in ("word2vec-text", "glove"):
        _check_text_lines(path)
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            vectors = KeyedVectors.load_word2vec_format(
                str(path),
                binary=fmt == "word2vec-binary",
                no_header=fmt == "glove",
                # Large published vector files contain a few tokens cut mid-character.
                unicode_errors="ignore",
            )
            gc.collect()  # gensim's reader of the file is left in a reference cycle: closed here, not at random later
        return vectors
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
    utils = heavy.gensim("utils")

    try:
        with utils.open(str(path), "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    if head[:1] == b"\x80":  # pickle protocol 2 and later, as in a gensim .save
        raise SpherecodesError(
            f"{path} starts like a Python pickle (a gensim .save); auto never unpickles, because unpickling runs "
            'any code the file holds: if you trust the file, pass fmt="gensim"',
            flags={'fmt="gensim"': "--embeddings-format gensim"},
        )
    first, _, rest = head.partition(b"\n")
    fields = first.split()
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        count, dim = int(fields[0]), int(fields[1])
        if count == 0 or dim == 0:
            raise SpherecodesError(f"{path}: the header declares {count} vectors of dimension {dim}; the file holds "
                                   "no word vectors")
        second = rest.split(b"\n", 1)[0]
        if _is_text_vector_line(second, None) and not _is_text_vector_line(second, dim):
            # Binary vectors are raw bytes, not numbers as text: this is a text file whose lines disagree with it.
            held = len(second.decode("utf-8").split()) - 1
            raise SpherecodesError(
                f"{path}: the header declares vectors of dimension {dim} but the first vector line holds {held} "
                "numbers; the header or the file is damaged"
            )
        fmt = "word2vec-text" if _is_text_vector_line(second, dim) else "word2vec-binary"
        _check_declared_size(path, count, dim, fmt)
        if fmt == "word2vec-binary":
            _check_binary_words(path, dim)
        return fmt
    if _is_text_vector_line(first, None):
        return "glove"
    raise SpherecodesError(
        f"{path} is not a recognised embedding file (neither word2vec with a 'count dim' header nor GloVe text "
        "lines 'word x1 x2 ...')"
    )


def _check_declared_size(path: Path, count: int, dim: int, fmt: str) -> None:
    """Refuse a word2vec header that declares more vectors than the file can hold (gensim allocates them first)."""
    needed = count * dim * 4  # gensim keeps float32 vectors
    smallest = count * (dim * 4 if fmt == "word2vec-binary" else dim * 2)  # each number takes 4 bytes, or 2 as text
    compressed = path.suffix.lower() in (".gz", ".bz2")
    if not compressed and smallest > path.stat().st_size:
        raise SpherecodesError(
            f"{path} declares {count} vectors of dimension {dim} but has only {path.stat().st_size} bytes; "
            "the header or the file is damaged"
        )
    require_memory(1.5 * needed, f"the {count} x {dim} vectors of {path}")


#: Longest line of a word-vector text file (a 300-dimensional GloVe line has about 3 KB), and longest word of a
#: binary one: gensim reads a line whole, and scans a growing buffer for a word's end, so a longer one is refused.
MAX_LINE_BYTES = 2**20


def _check_text_lines(path: Path) -> None:
    """Refuse a text file of word vectors with a line too long to be one, or more vectors than memory holds.

    A 2 KB ``.bz2`` file can hold a line of a gigabyte, which gensim would read whole and split: the lines are
    measured (:func:`_scan_runs`) and counted against the free memory (float32 vectors and some 100 bytes a
    word) before gensim allocates anything.
    """
    dim = None

    def check(lines: int, head: bytes) -> None:
        nonlocal dim
        if head.startswith(codecs.BOM_UTF8):
            # gensim would read the mark as part of the first word, which then matches no class name.
            word = head[3:].split(maxsplit=1)[0][:40].decode("utf-8", "replace") if head[3:].split() else ""
            raise SpherecodesError(f"{path} starts with a UTF-8 byte-order mark, which would be read as part of its "
                                   f"first word {word!r}; save the file without it")
        if dim is None:  # the longer of the first two lines: a word2vec header, or a vector
            dim = max(len(line.split()) - 1 for line in head.split(b"\n")[:2])
        require_memory(1.5 * lines * (4 * max(dim, 1) + 100), f"the {lines}+ lines of {dim}-dimensional vectors "
                       f"of {path}", hint="check the file")

    _scan_runs(path, b"\n", MAX_LINE_BYTES, "line", "a line of word vectors holds one word and its numbers", check)


def _check_binary_words(path: Path, dim: int) -> None:
    """Refuse a binary word2vec file holding more bytes without a space than a word and a vector can.

    Between two spaces lie at most a word, the ``4 dim`` bytes of a vector and the next word.  gensim scans
    a growing buffer whole for each space: a gigabyte without one (a megabyte of ``.gz``) would take hours.
    """
    _scan_runs(path, b" ", 2 * MAX_LINE_BYTES + 4 * dim, None, "a word of a binary word2vec file ends at a space",
               lambda count, head: None)


def _scan_runs(path: Path, separator: bytes, limit: int, unit: str | None, why: str, check) -> None:
    """Read ``path`` once in 1 MiB blocks (decompressed as it streams) and refuse a run of more than ``limit``
    bytes without ``separator`` (the ``unit`` numbered in the message, if any; ``why`` it is refused);
    ``check(separators so far, first block)`` is called after each block.  The runs are measured in NumPy."""
    utils = heavy.gensim("utils")

    count, carry, head = 0, 0, b""  # carry: the length so far of the run still open at the end of a block
    try:
        with utils.open(str(path), "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                head = head or block
                ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == separator[0])
                lengths = np.diff(ends, prepend=-1) - 1
                if ends.size:
                    lengths[0] += carry
                    carry = len(block) - 1 - int(ends[-1])
                else:
                    carry += len(block)
                too_long = np.flatnonzero(lengths > limit)
                if too_long.size or carry > limit:
                    number = count + 1 + (int(too_long[0]) if too_long.size else ends.size)
                    what = (f"{unit} {number} is longer than {format_bytes(limit)}" if unit else
                            f"more than {format_bytes(limit)} in a row hold no {separator.decode()!r}")
                    raise SpherecodesError(f"{path}: {what}; {why}")
                count += ends.size
                check(count, head)
    except SpherecodesError:
        raise
    except (OSError, EOFError, ValueError) as err:  # a damaged .gz or .bz2 stream
        raise SpherecodesError(f"cannot read {path}: {str(err).splitlines()[0][:160] if str(err) else err}") from None


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
        return positions_of(labels, self.names)


def positions_of(labels, names) -> np.ndarray:
    """``names.index(label)`` for every label; refuses, listing the differences, unless both are the same set."""
    position = {name: c for c, name in enumerate(names)}
    labels = list(labels)
    unknown = [name for name in labels if name not in position]
    absent = sorted(set(names) - set(labels))
    if unknown or absent or len(labels) != len(names):
        parts = [f"the code has {len(labels)} labels and the class list {len(names)} names"]
        if unknown:
            parts.append(f"labels not among the class names: {quoted(unknown)}")
        if absent:
            parts.append(f"class names not among the labels: {quoted(absent)}")
        raise SpherecodesError("the code's labels and the class names differ: " + "; ".join(parts))
    return np.array([position[name] for name in labels], dtype=np.int64)


def check_names(names, k: int | None = None) -> list[str]:
    """Distinct class names as strings, K of them when ``k`` is given."""
    names = [str(n) for n in names]
    if k is not None and len(names) != k:
        raise SpherecodesError(f"got {len(names)} class names for a code of K={k} prototypes; give one per prototype")
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise SpherecodesError(f"class names must be distinct; repeated: {quoted(repeated)}")
    return names


def quoted(names) -> str:
    return ", ".join(repr(n) for n in names)


def class_embeddings(names, embeddings, *, missing: str = "error", fmt: str = "auto") -> ClassEmbeddings:
    """Embed every class name with word vectors.

    A name is looked up whole first (``maple tree`` also as ``maple_tree``), exactly and then lower-cased;
    otherwise it gets the mean of the unit vectors of its words, split at spaces and underscores (a word vector's
    length tracks the word's frequency, not its meaning); words without a vector are recorded in ``partial``.

    Parameters
    ----------
    names : sequence of str
        Class names (see :func:`read_class_names`).
    embeddings : KeyedVectors, Word2Vec, str or Path
        Loaded vectors (or a gensim model with ``.wv``), or a file for :func:`load_embeddings`.
    missing : {"error", "random"}
        A name none of whose words has a vector is an error that lists every such name, or gets a random unit
        vector seeded by the name (nearly orthogonal to every other class: unrelated to all of them).
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
    names = check_names(names)
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
            f"no word vector for {len(unembedded)} of {len(names)} class names: {quoted(unembedded)}; "
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
            vector = _unit(np.asarray(embeddings[candidate], dtype=np.float64))
            if vector is None:  # the word is there, its vector is not usable: not the same as no vector
                raise SpherecodesError(
                    f"the word vector of {candidate!r} is zero or not finite, so it has no direction; "
                    "the word-vector file is damaged: fix it or use other embeddings"
                )
            return vector
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


def unit_rows(vectors, what: str) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    if v.ndim != 2 or v.shape[0] < 2 or v.shape[1] < 1:
        raise SpherecodesError(f"{what} must be a (K, m) array with K >= 2, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        raise SpherecodesError(f"{what} must be finite; row {int(np.argwhere(~np.isfinite(v))[0, 0])} is not")
    norms = np.linalg.norm(v, axis=1)
    if np.any(norms == 0):
        raise SpherecodesError(f"{what}: row {int(np.argmin(norms))} is zero and has no direction")
    return v / norms[:, None]


def vectors_of(class_vectors) -> np.ndarray:
    if isinstance(class_vectors, ClassEmbeddings):
        class_vectors = class_vectors.vectors
    return unit_rows(class_vectors, "class vectors")
