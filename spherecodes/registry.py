"""Catalogs of precomputed banks: the bundled one, remote ones, publishing and fetching.

A **catalog** is a folder of banks plus a ``registry.json`` that lists them,
one entry per code: its name (``<method>-d<d>-k<k>``), size, how it was made,
the SHA-256 and byte size of its bank file, and the numbers a user chooses by
(max-cos, the certified interval on ρ, the gap to the best lower bound on
max-cos).  Every number in an entry is computed in float64 from the stored
prototypes when the catalog is published (:func:`publish`); none is typed in.

Three kinds of catalog are read the same way:

* the **bundled** catalog, installed with spherecodes as the package
  ``spherecodes.banks`` (``banks/`` in the source tree): it works offline;
* a **directory** (a local or mounted folder): banks are verified in place;
* an **HTTP(S)** server that serves such a folder: banks are downloaded
  through pooch, checked against the SHA-256 of the registry, and kept in a
  per-user cache (:func:`cache_dir`), where ``offline=True`` finds them later.
  A failed or altered download is deleted before anything reaches the cache.

:func:`fetch` looks in the bundled catalog first, then at the closed forms
(which need no download), then in the configured catalog (``url=`` or the
``SPHERECODES_BANK_URL`` environment variable).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import shutil
import urllib.parse
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from . import __version__
from .atomic import replace_atomically
from .bank import Code, list_codes, read_code, support_residuals
from .bounds import check_sizes, max_cos_lower_bound, theorem_3_9
from .errors import SpherecodesError
from .stats import separation_statistics

#: Name of the registry file of a catalog.
REGISTRY_FILE = "registry.json"

#: ``format`` field of a registry.
CATALOG_FORMAT = "spherecodes-catalog"

#: Registry schema this version writes; readers refuse larger numbers.
CATALOG_SCHEMA_VERSION = 1

#: Environment variable naming the catalog to use after the bundled one.
URL_ENV = "SPHERECODES_BANK_URL"

#: Environment variable that overrides the per-user cache directory.
CACHE_ENV = "SPHERECODES_CACHE"

#: Seconds to wait for a catalog server before giving up.
TIMEOUT_S = 60

#: Methods tried, in this order, when a fetch by (d, K) names none: the
#: Tammes code (smallest max-cos) before the Softmax Code (largest ρ).
METHOD_PREFERENCE = ("tammes", "softmax", "maxsep")

#: The closed forms that are optimal for both the Tammes and the Softmax-Code
#: problem (SPEC §3): a catalog never needs a bank for these sizes.
OPTIMAL_CLOSED_FORMS = ("etf", "cross-polytope", "polygon")

#: Largest disagreement (absolute) allowed between a stored certificate and
#: the same certificate re-evaluated from its witness.
WITNESS_SLACK = 1e-12

_FILE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.h5$")
_SHA_PATTERN = re.compile(r"^[0-9a-f]{64}$")


# --------------------------------------------------------------------------- entries


@dataclass(frozen=True)
class CatalogEntry:
    """One code listed in a catalog.

    Attributes
    ----------
    name : str
        ``<method>-d<d>-k<k>``: unique within a catalog.
    d, k : int
        Dimension and number of prototypes.
    method : str
        How the code was made (``"tammes"``, ``"softmax"``, ...).
    seed : int or None
        Seed of the optimiser, ``None`` when the code does not depend on one.
    file : str
        Bank file, relative to the catalog.
    code : str
        Name of the code inside that bank.
    sha256 : str
        SHA-256 of the whole bank file: a download must match it.
    size : int
        Size of the bank file in bytes.
    max_cos : float
        Largest cosine between two prototypes.
    rho_lower, rho_upper : float
        Certified interval on the one-vs-rest distance ρ.
    rho_certified : bool
        Whether the interval is within the certificate's tolerance.
    lp_bound : float
        The best lower bound on max-cos of any K-point code in R^d.
    lp_bound_method : str
        The theorem that gives it (Delsarte–Goethals–Seidel LP, Rankin, ...).
    lp_gap : float
        ``max_cos - lp_bound``: how far this code can be from optimal at most.
    prototypes_sha256 : str
        Checksum of the prototypes (the bank's own ``sha256`` attribute).
    source : str
        ``"bundled"``, or the directory or URL of the catalog it came from
        (not stored in the registry).
    """

    name: str
    d: int
    k: int
    method: str
    seed: int | None
    file: str
    code: str
    sha256: str
    size: int
    max_cos: float
    rho_lower: float
    rho_upper: float
    rho_certified: bool
    lp_bound: float
    lp_bound_method: str
    lp_gap: float
    prototypes_sha256: str
    source: str = "bundled"

    def to_dict(self) -> dict:
        """The entry as written in ``registry.json``."""
        thm = theorem_3_9(self.d, self.k)
        return {
            "name": self.name,
            "d": self.d,
            "k": self.k,
            "method": self.method,
            "seed": self.seed,
            "file": self.file,
            "code": self.code,
            "sha256": self.sha256,
            "size": self.size,
            "max_cos": self.max_cos,
            "rho": {
                "lower": self.rho_lower,
                "upper": self.rho_upper,
                "certified": self.rho_certified,
            },
            "max_cos_lower_bound": {
                "value": self.lp_bound,
                "method": self.lp_bound_method,
                "gap": self.lp_gap,
            },
            "theorem_3_9": {"lower": thm.lower, "upper": thm.upper} if thm.applicable else None,
            "prototypes_sha256": self.prototypes_sha256,
        }

    @classmethod
    def from_dict(cls, data: dict, source: str) -> "CatalogEntry":
        """Read and check one registry entry; ``source`` names the catalog in errors."""
        where = f"the registry of {source}"
        try:
            entry = cls(
                name=str(data["name"]),
                d=_integer(data["d"]),
                k=_integer(data["k"]),
                method=str(data["method"]),
                seed=None if data.get("seed") is None else _integer(data["seed"]),
                file=str(data["file"]),
                code=str(data["code"]),
                sha256=str(data["sha256"]).lower(),
                size=_integer(data["size"]),
                max_cos=float(data["max_cos"]),
                rho_lower=float(data["rho"]["lower"]),
                rho_upper=float(data["rho"]["upper"]),
                rho_certified=bool(data["rho"]["certified"]),
                lp_bound=float(data["max_cos_lower_bound"]["value"]),
                lp_bound_method=str(data["max_cos_lower_bound"]["method"]),
                lp_gap=float(data["max_cos_lower_bound"]["gap"]),
                prototypes_sha256=str(data["prototypes_sha256"]).lower(),
                source=source,
            )
        except (KeyError, TypeError, ValueError) as err:
            label = data.get("name", "?") if isinstance(data, dict) else "?"
            raise SpherecodesError(f"{where} has a damaged entry {label!r} ({type(err).__name__}: {err})") from None
        if not _FILE_PATTERN.match(entry.file):
            raise SpherecodesError(
                f"{where}: entry {entry.name!r} names the file {entry.file!r}; a catalog file must be a plain "
                "*.h5 name inside the catalog"
            )
        if not (_SHA_PATTERN.match(entry.sha256) and _SHA_PATTERN.match(entry.prototypes_sha256)):
            raise SpherecodesError(f"{where}: entry {entry.name!r} has no valid SHA-256 (64 hexadecimal digits)")
        try:
            check_sizes(entry.d, entry.k)
        except SpherecodesError as err:
            raise SpherecodesError(f"{where}: entry {entry.name!r}: {err}") from None
        return entry

    @property
    def rho_width(self) -> float:
        return self.rho_upper - self.rho_lower


def _integer(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Catalog:
    """A catalog and its entries.

    Attributes
    ----------
    location : str
        ``"bundled"``, a directory, or an HTTP(S) URL.
    entries : tuple of CatalogEntry
    """

    location: str
    entries: tuple
    left_out: tuple = ()

    @property
    def kind(self) -> str:
        """``"bundled"``, ``"directory"`` or ``"http"``."""
        if self.location == "bundled":
            return "bundled"
        return "http" if _is_http(self.location) else "directory"

    @property
    def total_size(self) -> int:
        """Bytes of all the bank files the catalog lists (each file once)."""
        return sum({e.file: e.size for e in self.entries}.values())


# --------------------------------------------------------------------------- registry files


def registry_document(entries) -> dict:
    """The JSON document of a registry listing ``entries``."""
    ordered = sorted(entries, key=lambda e: (e.k, e.d, _method_rank(e.method), e.name))
    return {
        "format": CATALOG_FORMAT,
        "schema_version": CATALOG_SCHEMA_VERSION,
        "created_by": f"spherecodes {__version__}",
        "entries": [e.to_dict() for e in ordered],
    }


def parse_registry(text: str | bytes, source: str) -> Catalog:
    """Read a registry document and check every entry.

    Parameters
    ----------
    text : str or bytes
        The contents of ``registry.json``.
    source : str
        The catalog's location, kept in each entry and used in messages.

    Examples
    --------
    >>> parse_registry('{"format": "spherecodes-catalog", "schema_version": 1, "entries": []}', "x").entries
    ()
    >>> parse_registry('{"format": "other"}', "x")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: the registry of x is not a spherecodes catalog (format 'other', expected 'spherecodes-catalog')
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise SpherecodesError(f"the registry of {source} is not valid JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != CATALOG_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise SpherecodesError(
            f"the registry of {source} is not a spherecodes catalog (format {found!r}, expected {CATALOG_FORMAT!r})"
        )
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise SpherecodesError(f"the registry of {source} has no integer schema_version; it is damaged")
    if version > CATALOG_SCHEMA_VERSION:
        raise SpherecodesError(
            f"the registry of {source} uses catalog schema version {version}, newer than the version "
            f"{CATALOG_SCHEMA_VERSION} this spherecodes ({__version__}) reads; upgrade spherecodes"
        )
    raw = data.get("entries")
    if not isinstance(raw, list):
        raise SpherecodesError(f"the registry of {source} has no list of entries; it is damaged")
    entries = tuple(CatalogEntry.from_dict(item, source) for item in raw)
    names = [e.name for e in entries]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SpherecodesError(f"the registry of {source} lists {', '.join(repeated)} more than once")
    return Catalog(location=source, entries=entries)


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place."""
    with replace_atomically(path) as tmp:
        tmp.write_bytes(data)


def _atomic_copy(src: Path, dst: Path) -> None:
    with replace_atomically(dst) as tmp:
        shutil.copyfile(src, tmp)


def file_sha256(path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> _ = open(path, "wb").write(b"abc")
    >>> file_sha256(path)[:16]
    'ba7816bf8f01cfea'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- publishing


def verify_witness(code: Code) -> tuple[np.ndarray, np.ndarray]:
    """Re-evaluate a code's stored certificate from its witness, in float64.

    The certificate stores, for each class k, the primal point ``v`` (its
    support and weights).  This recomputes ``hi_k = ‖w_k − Σ v_j w_j‖`` and
    ``lo_k = min_{j≠k} <w_k − w_j, h_k>`` with ``h_k = r_k/‖r_k‖`` against all
    K prototypes (SPEC §2), and checks that they agree with the stored interval.
    This takes one (K, K) product in tiles: milliseconds where solving the QPs
    again takes seconds or minutes.

    Returns
    -------
    lo, hi : ndarray, shape (K,)
        The recomputed interval ends; every ``dist_k`` lies in ``[lo_k, hi_k]``.

    Raises
    ------
    SpherecodesError
        The code has no certificate, the witness is not a point of the simplex,
        or the recomputed interval disagrees with the stored one by more than
        :data:`WITNESS_SLACK`.

    Examples
    --------
    >>> from spherecodes.bank import make_code
    >>> from spherecodes.certificate import one_vs_rest_distances
    >>> from spherecodes.constructions import regular_polygon
    >>> code = make_code(regular_polygon(6), method="polygon")
    >>> code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    >>> lo, hi = verify_witness(code)
    >>> round(float(lo.min()), 12), round(float(hi.min()), 12)
    (0.5, 0.5)
    """
    cert = code.certificate
    where = f"code {code.name!r}"
    if cert is None:
        raise SpherecodesError(f"{where} has no certificate; run spherecodes certify BANK --write first")
    w = code.prototypes
    k = w.shape[0]
    idx = np.asarray(cert.support_indices)
    wt = np.asarray(cert.support_weights, dtype=np.float64)
    if idx.ndim != 2 or idx.shape[0] != k or wt.shape != idx.shape:
        raise SpherecodesError(f"{where}: the certificate's witness has the wrong shape {idx.shape}")
    used = idx >= 0
    bad = used & ((idx >= k) | (idx == np.arange(k)[:, None]))
    if bad.any() or (wt < 0).any() or (wt[~used] != 0).any():
        raise SpherecodesError(f"{where}: the certificate's witness is not a point of the simplex (bad index or weight)")
    sums = wt.sum(axis=1)
    if np.abs(sums - 1).max(initial=0) > 1e-12:
        raise SpherecodesError(
            f"{where}: the certificate's witness weights do not sum to 1 (largest deviation {np.abs(sums - 1).max():.3g})"
        )
    residual = support_residuals(w, idx, wt)
    hi = np.linalg.norm(residual, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(hi[:, None] > 0, residual / hi[:, None], 0.0)
    lo = np.empty(k)
    tile = 2048
    for start in range(0, k, tile):
        block = h[start : start + tile] @ w.T  # <w_j, h_k>, rows k, columns j
        rows = np.arange(start, min(start + tile, k))
        block[np.arange(len(rows)), rows] = -np.inf
        lo[rows] = (w[rows] * h[rows]).sum(axis=1) - block.max(axis=1)
    zero = hi == 0
    lo[zero] = 0.0
    lo = np.minimum(lo, hi)
    slack = WITNESS_SLACK
    if (np.abs(hi - cert.hi) > slack).any() or (lo < cert.lo - slack).any():
        worst = int(np.argmax(np.maximum(np.abs(hi - cert.hi), cert.lo - lo)))
        raise SpherecodesError(
            f"{where}: the stored certificate does not check: class {worst} stores "
            f"[{cert.lo[worst]:.17g}, {cert.hi[worst]:.17g}] but its witness gives [{lo[worst]:.17g}, {hi[worst]:.17g}]"
        )
    return lo, hi


def entry_for_code(code: Code, *, file: str, file_sha256: str, size: int, source: str = "bundled") -> CatalogEntry:
    """The registry entry of a certified code stored in ``file``.

    Everything is computed here in float64 from the stored prototypes:
    max-cos from :func:`spherecodes.stats.separation_statistics`, the ρ
    interval from the certificate's witness (:func:`verify_witness`), and the
    lower bound from :func:`spherecodes.bounds.max_cos_lower_bound`.
    """
    stats = separation_statistics(code.prototypes)
    lo, hi = verify_witness(code)
    bound = max_cos_lower_bound(code.d, code.k)
    rho_lower, rho_upper = float(lo.min()), float(hi.min())
    return CatalogEntry(
        name=catalog_name(code.method, code.d, code.k),
        d=code.d,
        k=code.k,
        method=code.method,
        seed=code.seed,
        file=file,
        code=code.name,
        sha256=file_sha256,
        size=int(size),
        max_cos=float(stats.max_cos),
        rho_lower=rho_lower,
        rho_upper=rho_upper,
        rho_certified=bool((hi - lo).max() <= code.certificate.tol),
        lp_bound=float(bound.value),
        lp_bound_method=bound.method,
        lp_gap=float(stats.max_cos - bound.value),
        prototypes_sha256=code.sha256,
        source=source,
    )


def catalog_name(method: str, d: int, k: int) -> str:
    """The name of a catalog entry: ``<method>-d<d>-k<k>``.

    Examples
    --------
    >>> catalog_name("tammes", 64, 1000)
    'tammes-d64-k1000'
    """
    return f"{method}-d{d}-k{k}"


def scan_directory(directory) -> list[CatalogEntry]:
    """Entries for every code of every bank (``*.h5``) directly inside ``directory``.

    Raises
    ------
    SpherecodesError
        A file that is not a valid bank, a code without a certificate or whose
        certificate does not check, or two codes with the same (method, d, K).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise SpherecodesError(f"{directory} is not a directory; publish a folder of banks")
    entries: dict[str, CatalogEntry] = {}
    for path in sorted(directory.glob("*.h5")):
        if path.name.startswith(".") or not path.is_file():
            continue
        if not _FILE_PATTERN.match(path.name):
            raise SpherecodesError(
                f"{path}: a catalog file name may hold only letters, digits, '.', '_', '+' and '-'; rename it"
            )
        digest, size = file_sha256(path), path.stat().st_size
        for row in list_codes(path):
            code = read_code(path, row["name"])
            if code.certificate is None:
                raise SpherecodesError(
                    f"code {code.name!r} in {path} is not certified; a catalog lists certified codes only "
                    f"(run: spherecodes certify {path} --code {code.name} --write)"
                )
            entry = entry_for_code(code, file=path.name, file_sha256=digest, size=size, source=str(directory))
            if entry.name in entries:
                other = entries[entry.name]
                raise SpherecodesError(
                    f"{other.file} ({other.code}) and {path.name} ({code.name}) are both {entry.name}; a catalog "
                    "lists one code per (method, d, K): move one of them out of the folder"
                )
            entries[entry.name] = entry
    return list(entries.values())


def select_best(entries) -> list[CatalogEntry]:
    """Per (d, K): the code with the smallest max-cos, and the one with the largest ρ where it differs.

    The Tammes problem is answered by the smallest max-cos; the Softmax-Code
    problem by the largest certified ρ.  The second is kept only when its
    certified lower end beats the upper end of the first's ρ interval, so
    codes that are no better at either problem are dropped.

    Examples
    --------
    >>> e = lambda m, c, lo: CatalogEntry(m, 3, 9, m, 0, m + ".h5", m, "0" * 64, 1, c, lo, lo, True, 0, "", c, "0" * 64)
    >>> [x.name for x in select_best([e("tammes", 0.3, 0.9), e("softmax", 0.31, 0.95), e("maxsep", 0.4, 0.8)])]
    ['tammes', 'softmax']
    """
    groups: dict[tuple[int, int], list[CatalogEntry]] = {}
    for entry in entries:
        groups.setdefault((entry.d, entry.k), []).append(entry)
    chosen = []
    for group in groups.values():
        tammes = min(group, key=lambda e: (e.max_cos, _method_rank(e.method), e.name))
        chosen.append(tammes)
        softmax = max(group, key=lambda e: (e.rho_lower, -_method_rank(e.method), e.name))
        if softmax is not tammes and softmax.rho_lower > tammes.rho_upper:
            chosen.append(softmax)
    return chosen


def fit_budget(entries, max_size: int) -> tuple[list[CatalogEntry], list[CatalogEntry]]:
    """Leave out the largest second codes of a (d, K) until the files total at most ``max_size`` bytes.

    A (d, K)'s first code is the one with the smallest max-cos (its Tammes
    code); it is never left out.  The others (a Softmax Code kept for its
    larger ρ, say) are dropped largest file first.

    Returns
    -------
    kept, left_out : list of CatalogEntry

    Raises
    ------
    SpherecodesError
        The first codes alone exceed the budget.

    Examples
    --------
    >>> e = lambda m, c, size: CatalogEntry(m, 3, 9, m, 0, m + ".h5", m, "0" * 64, size, c, .5, .5, True, 0, "", c, "0" * 64)
    >>> kept, out = fit_budget([e("tammes", 0.3, 600), e("softmax", 0.31, 500)], 1000)
    >>> [x.name for x in kept], [x.name for x in out]
    (['tammes'], ['softmax'])
    """
    entries = list(entries)
    first = {}
    for entry in sorted(entries, key=lambda e: (e.max_cos, _method_rank(e.method), e.name)):
        first.setdefault((entry.d, entry.k), entry)
    firsts = set(id(e) for e in first.values())

    def total(selection):
        return sum({e.file: e.size for e in selection}.values())

    kept = list(entries)
    left_out = []
    for entry in sorted((e for e in entries if id(e) not in firsts), key=lambda e: (-e.size, e.name)):
        if total(kept) <= max_size:
            break
        kept.remove(entry)
        left_out.append(entry)
    if total(kept) > max_size:
        raise SpherecodesError(
            f"the catalog's first codes alone take {format_size(total(kept))}, more than the "
            f"{format_size(max_size)} allowed; leave out some sizes or allow more"
        )
    return kept, left_out


def _method_rank(method: str) -> int:
    return METHOD_PREFERENCE.index(method) if method in METHOD_PREFERENCE else len(METHOD_PREFERENCE)


def publish(directory, *, best: bool = False, into=None, max_size: int | None = None) -> Catalog:
    """Write the registry of a folder of banks, making it a catalog.

    Parameters
    ----------
    directory : str or Path
        Folder whose ``*.h5`` banks are listed (each code certified).
    best : bool
        List only :func:`select_best` of each (d, K).
    into : str or Path, optional
        Copy the listed banks into this folder (created if missing) and write
        the registry there instead; banks that the folder's previous registry
        listed and the new one does not are removed.  This is how the bundled
        catalog (``banks/``) is made from a build folder.
    max_size : int, optional
        Bytes the listed files may take at most: second codes of a (d, K)
        are left out, largest first, to fit (:func:`fit_budget`).

    Returns
    -------
    Catalog
        What the written registry lists; ``left_out`` holds the entries
        dropped to fit ``max_size``.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes import generate, write_code
    >>> from spherecodes.certificate import one_vs_rest_distances
    >>> folder = tempfile.mkdtemp()
    >>> code = generate(d=3, k=5)                 # the cross-polytope: a tiny certified bank
    >>> code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    >>> write_code(os.path.join(folder, "octa.h5"), code)
    >>> cat = publish(folder)
    >>> [(e.name, e.max_cos, round(e.rho_lower, 9)) for e in cat.entries]
    [('cross-polytope-d3-k5', 0.0, 1.0)]
    >>> sorted(os.listdir(folder))
    ['octa.h5', 'registry.json']
    """
    directory = Path(directory)
    entries = scan_directory(directory)
    if best:
        entries = select_best(entries)
    left_out: list[CatalogEntry] = []
    if max_size is not None:
        entries, left_out = fit_budget(entries, max_size)
    target = directory if into is None else Path(into)
    if into is not None:
        if target.exists() and not target.is_dir():
            raise SpherecodesError(f"{target} exists and is not a directory")
        target.mkdir(parents=True, exist_ok=True)
    previous = _listed_files(target)
    if target.resolve() != directory.resolve():
        for name in sorted({e.file for e in entries}):
            _atomic_copy(directory / name, target / name)
    entries = [_with_source(e, str(target)) for e in entries]
    document = registry_document(entries)
    _atomic_write_bytes(target / REGISTRY_FILE, (json.dumps(document, indent=1, allow_nan=False) + "\n").encode())
    if into is not None and target.resolve() != directory.resolve():
        for name in previous - {e.file for e in entries}:
            with contextlib.suppress(FileNotFoundError):
                (target / name).unlink()
    written = parse_registry(json.dumps(document), str(target))
    return Catalog(written.location, written.entries, tuple(left_out))


def _with_source(entry: CatalogEntry, source: str) -> CatalogEntry:
    return CatalogEntry(**{**entry.__dict__, "source": source})


def _listed_files(directory: Path) -> set[str]:
    path = directory / REGISTRY_FILE
    if not path.is_file():
        return set()
    try:
        return {e.file for e in parse_registry(path.read_bytes(), str(directory)).entries}
    except SpherecodesError:
        return set()


# --------------------------------------------------------------------------- locations and cache


def cache_dir() -> Path:
    """The per-user cache of downloaded catalogs.

    ``$SPHERECODES_CACHE`` when set, else the platform's cache directory
    (``~/.cache/spherecodes`` on Linux, ``~/Library/Caches/spherecodes`` on
    macOS, ``%LOCALAPPDATA%\\spherecodes\\spherecodes\\Cache`` on Windows).

    Examples
    --------
    >>> import os
    >>> os.environ["SPHERECODES_CACHE"] = "/tmp/my-cache"
    >>> str(cache_dir())
    '/tmp/my-cache'
    >>> del os.environ["SPHERECODES_CACHE"]
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    import pooch

    return Path(pooch.os_cache("spherecodes"))


def configured_url(url: str | None = None) -> str | None:
    """The catalog to use after the bundled one: ``url``, else ``$SPHERECODES_BANK_URL``, else none.

    An empty string means "no catalog" and overrides the environment.
    """
    if url is None:
        url = os.environ.get(URL_ENV) or None
    return url or None


def _is_http(location: str) -> bool:
    return urllib.parse.urlsplit(location).scheme.lower() in ("http", "https")


def _local_path(location: str) -> Path:
    parts = urllib.parse.urlsplit(location)
    if parts.scheme.lower() == "file":
        return Path(urllib.request.url2pathname(parts.path))
    if parts.scheme and len(parts.scheme) > 1:
        raise SpherecodesError(
            f"cannot read a catalog from {location!r}: give an http(s):// URL, a file:// URL or a directory"
        )
    return Path(location).expanduser()


def _split_url(url: str) -> tuple[str, str]:
    """(base URL of the banks, URL of the registry) for a catalog URL."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path
    if path.endswith(".json"):
        registry = url
        base_path = path.rsplit("/", 1)[0] + "/"
    else:
        base_path = path if path.endswith("/") else path + "/"
        registry = urllib.parse.urlunsplit(parts._replace(path=base_path + REGISTRY_FILE))
    return urllib.parse.urlunsplit(parts._replace(path=base_path)), registry


def catalog_cache_dir(url: str) -> Path:
    """Where the banks and registry of the catalog at ``url`` are cached.

    Examples
    --------
    >>> import os
    >>> os.environ["SPHERECODES_CACHE"] = "/tmp/c"
    >>> str(catalog_cache_dir("https://example.org/banks/"))
    '/tmp/c/example.org-banks-058a01479c2e'
    >>> del os.environ["SPHERECODES_CACHE"]
    """
    base, _ = _split_url(url)
    parts = urllib.parse.urlsplit(base)
    readable = re.sub(r"[^A-Za-z0-9.]+", "-", f"{parts.netloc}{parts.path}").strip("-")[:60]
    digest = hashlib.sha256(base.encode()).hexdigest()[:12]
    return cache_dir() / f"{readable}-{digest}"


@contextlib.contextmanager
def _quiet_pooch():
    """Silence pooch's own "Downloading ..." log lines; spherecodes reports itself."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield pooch
    finally:
        logger.setLevel(level)


# --------------------------------------------------------------------------- reading catalogs


def bundled_catalog() -> Catalog:
    """The catalog installed with spherecodes (``banks/`` in the source tree).

    Examples
    --------
    >>> cat = bundled_catalog()
    >>> cat.location, all(e.source == "bundled" for e in cat.entries)
    ('bundled', True)
    """
    root = resources.files("spherecodes.banks")
    registry = root.joinpath(REGISTRY_FILE)
    if not registry.is_file():
        return Catalog("bundled", ())
    return parse_registry(registry.read_bytes(), "bundled")


def open_catalog(location: str, *, offline: bool = False) -> Catalog:
    """Read the catalog at a directory or an HTTP(S) URL.

    For a URL the registry is downloaded afresh (and kept in the cache); with
    ``offline=True`` the cached copy is read instead.

    Parameters
    ----------
    location : str
        A directory, a ``file://`` URL or an ``http(s)://`` URL of the folder
        that holds ``registry.json`` (or of the registry itself).
    offline : bool
        Make no network request.
    """
    if location == "bundled":
        return bundled_catalog()
    if not _is_http(location):
        directory = _local_path(location)
        if directory.suffix == ".json":
            directory = directory.parent
        registry = directory / REGISTRY_FILE
        if not registry.is_file():
            raise SpherecodesError(
                f"{location} is not a catalog: no {REGISTRY_FILE} in {directory} "
                "(spherecodes catalog publish DIR writes one)"
            )
        return parse_registry(registry.read_bytes(), location)
    cached = catalog_cache_dir(location) / REGISTRY_FILE
    if offline:
        if not cached.is_file():
            raise SpherecodesError(
                f"the catalog {location} is not in the cache ({cached.parent}); run once without --offline"
            )
        return parse_registry(cached.read_bytes(), location)
    _, registry_url = _split_url(location)
    cached.parent.mkdir(parents=True, exist_ok=True)
    with replace_atomically(cached) as tmp:
        with _quiet_pooch() as pooch:
            try:
                pooch.HTTPDownloader(progressbar=False, timeout=TIMEOUT_S)(registry_url, str(tmp), None)
            except Exception as err:  # requests' errors, mapped to one line
                raise SpherecodesError(_download_failure(registry_url, err, str(tmp))) from None
        catalog = parse_registry(tmp.read_bytes(), location)
    return catalog


def catalogs(url: str | None = None, *, offline: bool = False) -> list[Catalog]:
    """The bundled catalog, then the configured one (``url`` or ``$SPHERECODES_BANK_URL``) if any."""
    found = [bundled_catalog()]
    location = configured_url(url)
    if location is not None:
        found.append(open_catalog(location, offline=offline))
    return found


def catalog(url: str | None = None, *, offline: bool = False) -> list[CatalogEntry]:
    """Every entry of the bundled catalog and of the configured one.

    Parameters
    ----------
    url : str, optional
        A catalog directory or HTTP(S) URL; default ``$SPHERECODES_BANK_URL``
        (``""`` for the bundled catalog alone).
    offline : bool
        Read a remote catalog's registry from the cache.

    Returns
    -------
    list of CatalogEntry
        Bundled entries first; ``entry.source`` says where each comes from.

    Examples
    --------
    >>> entries = catalog(url="")
    >>> all(e.source == "bundled" for e in entries)
    True
    """
    return [entry for cat in catalogs(url, offline=offline) for entry in cat.entries]


def find_entry(entries, name: str | None = None, *, d: int | None = None, k: int | None = None,
               method: str | None = None) -> CatalogEntry | None:
    """The entry called ``name`` (or whose code is), or the best one for (d, K, method).

    Without a method, the first of :data:`METHOD_PREFERENCE` that the catalog
    has is taken.

    Examples
    --------
    >>> find_entry([], d=64, k=1000) is None
    True
    """
    entries = list(entries)
    if name is not None:
        for entry in entries:
            if name in (entry.name, entry.code):
                return entry
        return None
    matches = [e for e in entries if e.d == d and e.k == k and (method is None or e.method == method)]
    if not matches:
        return None
    return min(matches, key=lambda e: _method_rank(e.method))


# --------------------------------------------------------------------------- fetching


@dataclass
class Fetched:
    """What :func:`fetch_bank` found.

    Attributes
    ----------
    code : Code
        The code, read and validated.
    entry : CatalogEntry or None
        Its catalog entry (``None`` for a closed form).
    path : Path or None
        The verified bank file (bundled, in the catalog folder, or in the cache).
    source : str
        ``"bundled"``, the catalog's directory or URL, or ``"closed form"``.
    downloaded : bool
        Whether the bank was downloaded by this call (not found in the cache).
    """

    code: Code
    entry: CatalogEntry | None
    path: Path | None
    source: str
    downloaded: bool = False


def fetch_bank(name: str | None = None, *, d: int | None = None, k: int | None = None, method: str | None = None,
               url: str | None = None, offline: bool = False) -> Fetched:
    """Find a code by name or by (d, K[, method]), verify its bank and load it.

    The bundled catalog is searched first; then, for (d, K) where a closed
    form is optimal for both problems (and ``method`` is none, ``tammes`` or
    ``softmax``, or names that closed form), the code is constructed on the
    spot; then the configured catalog (``url`` or
    ``$SPHERECODES_BANK_URL``) is searched, downloading into the cache.

    Raises
    ------
    SpherecodesError
        Nothing matches (the message gives the ``spherecodes generate``
        command that makes the code), a download fails, or a bank does not
        match its SHA-256.
    """
    if name is None:
        if d is None or k is None:
            raise SpherecodesError("give a catalog name, or both d and K")
        check_sizes(d, k)
    elif d is not None or k is not None or method is not None:
        raise SpherecodesError("give either a catalog name or (d, K, method), not both")
    bundled = bundled_catalog()
    entry = find_entry(bundled.entries, name, d=d, k=k, method=method)
    if entry is not None:
        return _load(bundled, entry, offline=offline)
    if name is None:
        closed = _closed_form(d, k, method)
        if closed is not None:
            from .generation import generate

            return Fetched(code=generate(d, k, closed), entry=None, path=None, source="closed form")
    location = configured_url(url)
    searched = "the bundled catalog"
    if location is not None:
        remote = open_catalog(location, offline=offline)
        entry = find_entry(remote.entries, name, d=d, k=k, method=method)
        if entry is not None:
            return _load(remote, entry, offline=offline)
        searched += f" or in {location}"
    else:
        searched += f" (no other catalog is configured: --url or ${URL_ENV})"
    if name is not None:
        raise SpherecodesError(f"no bank named {name!r} in {searched}; 'spherecodes catalog list' shows what there is")
    what = f"d={d}, K={k}" + (f", method {method}" if method else "")
    command = f"spherecodes generate --d {d} --k {k}" + (f" --method {method}" if method else "")
    raise SpherecodesError(f"no bank for {what} in {searched}; make it with: {command}")


def _closed_form(d: int, k: int, method: str | None) -> str | None:
    from .constructions import CLOSED_FORMS, applicable_closed_forms

    applicable = applicable_closed_forms(d, k)
    if method in (None, "auto", "tammes", "softmax"):
        # Optimal for both problems, so it is also the Tammes code and the Softmax Code.
        optimal = [m for m in applicable if m in OPTIMAL_CLOSED_FORMS]
        return optimal[0] if optimal else None
    if method in CLOSED_FORMS and method in applicable:
        return method
    return None


def fetch(name: str | None = None, *, d: int | None = None, k: int | None = None, method: str | None = None,
          url: str | None = None, offline: bool = False) -> Code:
    """A precomputed, verified code: by catalog name, or by (d, K[, method]).

    Parameters
    ----------
    name : str, optional
        A catalog entry (``"tammes-d64-k1000"``) or the name of its code.
    d, k : int, optional
        Dimension and number of prototypes.
    method : str, optional
        ``"tammes"``, ``"softmax"``, ...; default: a closed form where one
        is optimal, else the Tammes code, else whatever the catalog has.
    url : str, optional
        Catalog to search after the bundled one: a directory or HTTP(S) URL
        (default ``$SPHERECODES_BANK_URL``; ``""`` for none).
    offline : bool
        Use only banks already in the cache.

    Returns
    -------
    Code
        With its certificate when it comes from a catalog.

    Examples
    --------
    Closed forms are built on the spot, without a catalog:

    >>> import spherecodes
    >>> code = spherecodes.fetch(d=11, k=12, url="")
    >>> code.method, code.k, code.d
    ('etf', 12, 11)
    """
    return fetch_bank(name, d=d, k=k, method=method, url=url, offline=offline).code


def _load(cat: Catalog, entry: CatalogEntry, *, offline: bool) -> Fetched:
    downloaded = False
    if cat.kind == "bundled":
        with resources.as_file(resources.files("spherecodes.banks").joinpath(entry.file)) as path:
            _check_file(Path(path), entry, "the bundled catalog")
            code = _read_entry(Path(path), entry)
            return Fetched(code=code, entry=entry, path=Path(path), source="bundled")
    if cat.kind == "directory":
        directory = _local_path(cat.location)
        if directory.suffix == ".json":
            directory = directory.parent
        path = directory / entry.file
        _check_file(path, entry, cat.location)
    else:
        path, downloaded = _download(cat.location, entry, offline=offline)
    return Fetched(code=_read_entry(path, entry), entry=entry, path=path, source=cat.location, downloaded=downloaded)


def _check_file(path: Path, entry: CatalogEntry, where: str) -> None:
    if not path.is_file():
        raise SpherecodesError(f"{where} lists {entry.file} but the file is missing ({path})")
    got = file_sha256(path)
    if got != entry.sha256:
        raise SpherecodesError(
            f"{path} does not match {where}: SHA-256 expected {entry.sha256}, got {got}; the bank was changed or damaged"
        )


def _read_entry(path: Path, entry: CatalogEntry) -> Code:
    code = read_code(path, entry.code)
    if code.sha256 != entry.prototypes_sha256 or (code.d, code.k) != (entry.d, entry.k):
        raise SpherecodesError(f"code {entry.code!r} in {path} is not the code its catalog entry describes")
    return code


def _download(location: str, entry: CatalogEntry, *, offline: bool) -> tuple[Path, bool]:
    """The cached bank of ``entry``, downloaded through pooch unless already cached and intact."""
    folder = catalog_cache_dir(location)
    target = folder / entry.file
    if target.is_file():
        if file_sha256(target) == entry.sha256:
            return target, False
        target.unlink()  # stale or altered: never leave a file that does not match
    if offline:
        raise SpherecodesError(
            f"{entry.name} from {location} is not in the cache ({folder}); run once without --offline to download it"
        )
    base, _ = _split_url(location)
    url = base + urllib.parse.quote(entry.file)
    seen: dict = {}

    def downloader(url, output_file, pooch_obj):
        try:
            http(url, output_file, pooch_obj)
        finally:
            if os.path.exists(output_file):
                seen["bytes"] = os.path.getsize(output_file)
                seen["sha256"] = file_sha256(output_file)

    folder.mkdir(parents=True, exist_ok=True)
    with _quiet_pooch() as pooch:
        http = pooch.HTTPDownloader(progressbar=False, timeout=TIMEOUT_S)
        try:
            pooch.retrieve(url, known_hash=f"sha256:{entry.sha256}", fname=entry.file, path=folder,
                           downloader=downloader)
        except ValueError as err:
            if "hash" not in str(err).lower():
                raise
            got_bytes, got = seen.get("bytes", 0), seen.get("sha256", "?")
            size_note = (
                f"got {got_bytes} bytes where the catalog lists {entry.size} (a truncated or altered transfer); "
                if got_bytes != entry.size
                else ""
            )
            raise SpherecodesError(
                f"{url} was refused: {size_note}SHA-256 expected {entry.sha256}, got {got}; nothing was cached"
            ) from None
        except Exception as err:  # requests' errors, mapped to one line
            raise SpherecodesError(_download_failure(url, err, None, seen.get("bytes"), entry.size)) from None
    if not target.is_file():  # pooch moves the file into place only when it matched
        raise SpherecodesError(f"downloading {url} left no file in {folder}")
    return target, True


def _download_failure(url: str, err: Exception, tmp: str | None, got_bytes: int | None = None,
                      expected: int | None = None) -> str:
    """One line saying why a download failed: the HTTP status, or the network error."""
    import requests

    if tmp is not None and got_bytes is None and os.path.exists(tmp):
        got_bytes = os.path.getsize(tmp)
    if isinstance(err, requests.HTTPError) and err.response is not None:
        status = err.response.status_code
        reason = err.response.reason or ""
        return f"downloading {url} failed: HTTP {status} {reason}".rstrip() + "; nothing was cached"
    if isinstance(err, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError)) or (
        isinstance(err, requests.ConnectionError) and got_bytes
    ):
        incomplete = re.search(r"IncompleteRead\((\d+) bytes read, (\d+) more expected\)", str(err))
        if incomplete:
            got_bytes = int(incomplete.group(1))
            expected = expected if expected is not None else got_bytes + int(incomplete.group(2))
            reason = "the server closed the connection early"
        else:
            reason = _short(err)
        of = f" of {expected}" if expected is not None else ""
        return (
            f"downloading {url} failed: the transfer was cut short after {got_bytes or 0}{of} bytes "
            f"({reason}); nothing was cached"
        )
    if isinstance(err, requests.Timeout):
        return f"downloading {url} failed: no answer within {TIMEOUT_S} s; nothing was cached"
    if isinstance(err, requests.ConnectionError):
        return f"cannot reach {url} ({_short(err)}); nothing was cached (--offline uses what is already cached)"
    if isinstance(err, requests.RequestException):
        return f"downloading {url} failed ({_short(err)}); nothing was cached"
    if isinstance(err, OSError):
        return f"downloading {url} failed: {err.strerror or err}; nothing was cached"
    raise err


def _short(err: Exception) -> str:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def format_size(size: int) -> str:
    """Bytes in a short human form.

    Examples
    --------
    >>> format_size(512), format_size(1536), format_size(4_200_000)
    ('512 B', '1.5 KiB', '4.0 MiB')
    """
    if size < 1024:
        return f"{size} B"
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}"
    return f"{size} B"  # pragma: no cover


def format_entries(entries) -> str:
    """The entries as an aligned table (text of ``spherecodes catalog list``)."""
    entries = list(entries)
    if not entries:
        return "no banks in the catalog"
    rows = [("name", "d", "K", "method", "max-cos", "rho interval", "LP gap", "size", "source")]
    for e in entries:
        rows.append(
            (
                e.name,
                str(e.d),
                str(e.k),
                e.method,
                f"{e.max_cos:.6f}",
                f"[{e.rho_lower:.6f}, {e.rho_upper:.6f}]" + ("" if e.rho_certified else " (wide)"),
                f"{e.lp_gap:.2e}" if math.isfinite(e.lp_gap) else "n/a",
                format_size(e.size),
                e.source,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1, 2, 4, 6, 7}
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
