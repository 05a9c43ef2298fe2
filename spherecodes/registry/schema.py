"""The registry of a catalog: its entries, the JSON document, and checking one when read.

A **catalog** is a folder of banks plus a ``registry.json`` that lists them, one
:class:`CatalogEntry` per code.  Read by ``auto`` (the bundled code as a
candidate), and shared by :mod:`spherecodes.catalog`.
"""

from __future__ import annotations

import hashlib
import math
import re
import urllib.parse
from collections import Counter
from dataclasses import dataclass

from .. import __version__
from ..bounds import theorem_3_9
from ..checks import check_sizes
from ..code import name_pattern
from ..errors import SpherecodesError
from ..inputs import read_json

#: Name of the registry file of a catalog.
REGISTRY_FILE = "registry.json"

#: ``format`` field of a registry.
CATALOG_FORMAT = "spherecodes-catalog"

#: Registry schema this version writes; readers refuse larger numbers.
CATALOG_SCHEMA_VERSION = 1

#: Methods tried, in this order, when a fetch by (d, K) names none: the best of ``auto`` and the Tammes code
#: (smallest max-cos) before the Softmax Code (largest ρ).
METHOD_PREFERENCE = ("auto", "tammes", "softmax", "maxsep")

#: A bank file of a catalog: a plain ``*.h5`` name (the code-name rule, longer).
FILE_PATTERN = name_pattern(201, ".h5")

#: A SHA-256 digest in lower-case hexadecimal.
SHA_PATTERN = re.compile(r"^[0-9a-f]{64}$")


def method_rank(method: str) -> int:
    """Position of ``method`` in :data:`METHOD_PREFERENCE` (others after all of them)."""
    return METHOD_PREFERENCE.index(method) if method in METHOD_PREFERENCE else len(METHOD_PREFERENCE)


def is_http(location: str) -> bool:
    """Whether a catalog location is an HTTP(S) URL."""
    return urllib.parse.urlsplit(location).scheme.lower() in ("http", "https")


#: What stands for a secret in a URL shown to people.
HIDDEN = "***"


def redact_url(url: str) -> str:
    """``url`` as it may be shown or stored: its user part (``user:password@``) and the value of each query
    parameter (tokens, signatures) replaced by ``***``; other locations unchanged.

    Every message, report, JSON document and cache directory name shows a catalog URL this way: a password or
    token in ``--url`` or ``$SPHERECODES_BANK_URL`` is sent to the server, never printed or written.

    Examples
    --------
    >>> redact_url("https://alice:s3cret@example.org/banks/?token=T0K3N&v=2#top")
    'https://***@example.org/banks/?token=***&v=***#top'
    >>> redact_url("/data/banks")
    '/data/banks'
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # not even a URL (an unclosed bracket): anything between // and @ may be a password
        return re.sub(r"//[^/@]*@", f"//{HIDDEN}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{HIDDEN}@{netloc.rpartition('@')[2]}"
    query = "&".join(f"{item.partition('=')[0]}={HIDDEN}" if item else "" for item in parts.query.split("&")) \
        if parts.query else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def redact_text(text: str, url: str) -> str:
    """``text`` (a message of a library about ``url``) with the secrets of ``url`` replaced by ``***``.

    A library's message may quote the URL's path and query (``Max retries exceeded with url: /banks/?token=...``):
    each secret :func:`redact_url` hides is hidden here too where a URL holds it (before an ``@``, after ``key=``),
    as written and percent-decoded; a bare value (the 2 of ``v=2``) elsewhere in the text is left alone.

    Examples
    --------
    >>> redact_text("failed for url: /banks/registry.json?token=T0K3N&v=2", "https://h/banks/?token=T0K3N&v=2")
    'failed for url: /banks/registry.json?token=***&v=***'
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return redact_url(text)
    pairs = [(f"{parts.netloc.rpartition('@')[0]}@", f"{HIDDEN}@")] if "@" in parts.netloc else []
    for item in parts.query.split("&"):
        key, equals, value = item.partition("=")
        if equals and value:
            pairs += [(f"{key}={value}", f"{key}={HIDDEN}"), (f"{key}={urllib.parse.unquote(value)}", f"{key}={HIDDEN}")]
    for secret, hidden in sorted(set(pairs), key=lambda pair: -len(pair[0])):
        text = text.replace(secret, hidden)
    return text


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
            "theorem_3_9": (
                {"lower": thm.lower, "upper": thm.upper, "best_upper": thm.best_upper,
                 "best_upper_by": thm.best_upper_by} if thm.applicable else None
            ),
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
                max_cos=_real(data["max_cos"]),
                rho_lower=_real(data["rho"]["lower"]),
                rho_upper=_real(data["rho"]["upper"]),
                rho_certified=bool(data["rho"]["certified"]),
                lp_bound=_real(data["max_cos_lower_bound"]["value"]),
                lp_bound_method=str(data["max_cos_lower_bound"]["method"]),
                lp_gap=_real(data["max_cos_lower_bound"]["gap"]),
                prototypes_sha256=str(data["prototypes_sha256"]).lower(),
                source=source,
            )
        except (KeyError, TypeError, ValueError) as err:
            label = data.get("name", "?") if isinstance(data, dict) else "?"
            raise SpherecodesError(f"{where} has a damaged entry {label!r} ({type(err).__name__}: {err})") from None
        if not FILE_PATTERN.match(entry.file):
            raise SpherecodesError(
                f"{where}: entry {entry.name!r} names the file {entry.file!r}; a catalog file must be a plain "
                "*.h5 name inside the catalog"
            )
        if not (SHA_PATTERN.match(entry.sha256) and SHA_PATTERN.match(entry.prototypes_sha256)):
            raise SpherecodesError(f"{where}: entry {entry.name!r} has no valid SHA-256 (64 hexadecimal digits)")
        try:
            check_sizes(entry.d, entry.k)
        except SpherecodesError as err:
            raise SpherecodesError(f"{where}: entry {entry.name!r}: {err}") from None
        if not 0 < entry.size < 2**63:
            raise SpherecodesError(f"{where}: entry {entry.name!r} has the size {entry.size}; a size is a positive "
                                   "number of bytes below 2**63")
        return entry


def _integer(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _real(value) -> float:
    """A finite number as a float (an integer too large for a float64 is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {str(value)[:24]}{'...' if len(str(value)) > 24 else ''}")
    return number


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
        return "http" if is_http(self.location) else "directory"

    @property
    def total_size(self) -> int:
        """Bytes of all the bank files the catalog lists (each file once)."""
        return sum({e.file: e.size for e in self.entries}.values())


# --------------------------------------------------------------------------- registry files


def registry_document(entries) -> dict:
    """The JSON document of a registry listing ``entries``."""
    ordered = sorted(entries, key=lambda e: (e.k, e.d, method_rank(e.method), e.name))
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
    data = read_json(text, f"the registry of {source}")
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
    repeated = sorted(name for name, count in Counter(e.name for e in entries).items() if count > 1)
    if repeated:
        raise SpherecodesError(f"the registry of {source} lists {', '.join(repeated)} more than once")
    return Catalog(location=source, entries=entries)


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
