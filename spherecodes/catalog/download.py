"""Reading catalogs and fetching their banks: locations, the per-user cache, bounded downloads.

Three kinds of catalog are read the same way: the **bundled** one (the
package ``spherecodes.banks``, ``banks/`` in the source tree; it works
offline), a **directory**, whose banks are verified in place, and an
**HTTP(S)** server of such a folder, whose banks are streamed with a hard cap
at the size the registry lists and kept in the per-user cache
(:func:`cache_dir`) only once they match that size and SHA-256 and read as a
bank whose certificate checks.  :func:`fetch_bank` says where :func:`fetch`
looks.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
import shutil
import stat
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ..atomic import replace_atomically
from ..cache import CACHE_ENV, cache_dir
from ..checks import check_sizes
from ..code import Code
from ..constructions import CLOSED_FORMS, applicable_closed_forms, optimal_closed_form
from ..errors import SpherecodesError
from ..run import generate
from ..registry import (
    REGISTRY_FILE,
    Catalog,
    CatalogEntry,
    bundled_catalog,
    check_bank_file,
    is_http,
    method_rank,
    parse_registry,
    read_bundled,
    read_entry,
    redact_url,
)
from ._http import stream_download
from .on_demand import beats, parse_structured_name, structured_for

#: Environment variable naming the catalog to use after the bundled one.
URL_ENV = "SPHERECODES_BANK_URL"

#: Seconds to wait for a catalog server (to connect, and for each read) before giving up.
TIMEOUT_S = 60

#: Seconds a whole download (a registry or a bank) may take; the environment variable below overrides it.
DEADLINE_S = 1800.0

#: Environment variable that sets the deadline of each download, in seconds.
DEADLINE_ENV = "SPHERECODES_DOWNLOAD_DEADLINE"

#: Bytes per second a download must average once :data:`RATE_GRACE_S` have passed (4 KiB/s: a 30 KB bank may take
#: a minute and some seconds, a 100 MB one seven hours, each within the deadline).
MIN_RATE_BYTES_S = 4096.0

#: Seconds of a download before its rate counts.
RATE_GRACE_S = 60.0

#: Most bytes a registry.json may have (about 20,000 entries).
REGISTRY_LIMIT_BYTES = 16 * 2**20


def download_deadline() -> float:
    """Seconds each download may take: ``$SPHERECODES_DOWNLOAD_DEADLINE`` if set, else :data:`DEADLINE_S`.

    Examples
    --------
    >>> import os
    >>> os.environ[DEADLINE_ENV] = "90"
    >>> download_deadline()
    90.0
    >>> del os.environ[DEADLINE_ENV]
    >>> download_deadline() == DEADLINE_S
    True
    """
    text = os.environ.get(DEADLINE_ENV, "").strip()
    if not text:
        return DEADLINE_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise SpherecodesError(f"{DEADLINE_ENV}={text!r} is not a number of seconds; give a positive number, e.g. 3600")
    return seconds


def configured_url(url: str | None = None) -> str | None:
    """The catalog to use after the bundled one: ``url``, else ``$SPHERECODES_BANK_URL``, else none.

    An empty string means "no catalog" and overrides the environment.
    """
    if url is None:
        url = os.environ.get(URL_ENV) or None
    return url or None


def check_location(location: str) -> str:
    """``location`` if it has the form of a catalog: an http(s):// URL with a host, a file:// URL or a path.

    Only the form is checked; nothing is read or downloaded.

    Examples
    --------
    >>> check_location("https://example.org/banks/")
    'https://example.org/banks/'
    >>> check_location("http://[::1")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: 'http://[::1' is not a valid URL (Invalid IPv6 URL); give an http(s):// URL, a file:// URL or a directory
    """
    location = str(location)
    try:
        parts = urllib.parse.urlsplit(location)
        parts.port  # noqa: B018 (parsing the port refuses a malformed one)
    except ValueError as err:
        raise SpherecodesError(
            f"{redact_url(location)!r} is not a valid URL ({err}); give an http(s):// URL, a file:// URL or a "
            "directory"
        ) from None
    if is_http(location) and not parts.hostname:
        raise SpherecodesError(f"{redact_url(location)!r} names no host; give an http(s):// URL with a host, or a "
                               "directory")
    if location and not is_http(location):
        local_path(location)
    return location


def local_path(location: str) -> Path:
    """The directory of a ``file://`` URL or a plain path (that of the registry where it names a ``.json``); any
    other scheme is refused."""
    parts = urllib.parse.urlsplit(location)
    if parts.scheme.lower() == "file":
        from urllib.request import url2pathname  # here: it loads http.client, which the bundled catalog never needs

        path = Path(url2pathname(parts.path))
    elif parts.scheme and len(parts.scheme) > 1:
        raise SpherecodesError(
            f"cannot read a catalog from {redact_url(location)!r}: give an http(s):// URL, a file:// URL or a "
            "directory"
        )
    else:
        path = Path(location).expanduser()
    return path.parent if path.suffix == ".json" else path


def split_url(url: str) -> tuple[str, str]:
    """(base URL of the banks, URL of the registry) for a catalog URL; a query and fragment stay with both.

    Examples
    --------
    >>> split_url("https://example.org/cat/?token=T")
    ('https://example.org/cat/?token=T', 'https://example.org/cat/registry.json?token=T')
    """
    parts = urllib.parse.urlsplit(url)
    path = parts.path
    if path.endswith(".json"):
        registry = url
        base_path = path.rsplit("/", 1)[0] + "/"
    else:
        base_path = path if path.endswith("/") else path + "/"
        registry = urllib.parse.urlunsplit(parts._replace(path=base_path + REGISTRY_FILE))
    return urllib.parse.urlunsplit(parts._replace(path=base_path)), registry


def file_url(base: str, name: str) -> str:
    """The URL of the file ``name`` in the folder at ``base``: the name goes into the path, so that a query
    (a token) and a fragment of ``base`` stay what they are.

    Examples
    --------
    >>> file_url("https://example.org/cat/?token=T", "maxsep-d3-k10.h5")
    'https://example.org/cat/maxsep-d3-k10.h5?token=T'
    """
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(parts._replace(path=parts.path + urllib.parse.quote(name)))


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
    base, _ = split_url(url)
    parts = urllib.parse.urlsplit(base)
    # Named after the host and path alone, keyed by the URL with its secrets hidden: a password or token never
    # reaches the file system, and the same catalog under another token is the same cache.
    host = parts.netloc.rpartition("@")[2]
    readable = re.sub(r"[^A-Za-z0-9.]+", "-", f"{host}{parts.path}").strip("-")[:60]
    digest = hashlib.sha256(redact_url(base).encode()).hexdigest()[:12]
    return cache_dir() / f"{readable}-{digest}"


def _usable_cache(folder: Path) -> Path:
    """``folder``, created if missing, once a file can be written there; else a one-line error."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise SpherecodesError(
            f"cannot use the cache directory {folder} ({err.strerror or err}); set {CACHE_ENV} to a writable "
            "directory, or use a catalog directory with --url"
        ) from None
    return folder


def _read_registry(path: Path, source: str) -> Catalog:
    """Parse a registry file after checking that it is a regular file of at most :data:`REGISTRY_LIMIT_BYTES`."""
    try:
        info = path.stat()
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpherecodesError(f"{path} is not a regular file; a registry is a JSON file")
    if info.st_size > REGISTRY_LIMIT_BYTES:
        raise SpherecodesError(
            f"the registry {path} has {info.st_size} bytes, more than the {REGISTRY_LIMIT_BYTES // 2**20} MiB "
            "a registry may have"
        )
    return parse_registry(path.read_bytes(), source)


# --------------------------------------------------------------------------- reading catalogs


def open_catalog(location: str, *, offline: bool = False) -> Catalog:
    """Read the catalog at a directory or an HTTP(S) URL.

    Parameters
    ----------
    location : str
        A directory, a ``file://`` URL or an ``http(s)://`` URL of the folder
        that holds ``registry.json`` (or of the registry itself).
    offline : bool
        Make no network request: read a URL's registry from the cache, where
        it is otherwise downloaded afresh and kept.
    """
    if location == "bundled":
        return bundled_catalog()
    if not is_http(location):
        directory = local_path(location)
        registry = directory / REGISTRY_FILE
        if not registry.exists():
            raise SpherecodesError(
                f"{location} is not a catalog: no {REGISTRY_FILE} in {directory} "
                "(spherecodes catalog publish DIR writes one)"
            )
        return _read_registry(registry, location)
    cached = catalog_cache_dir(location) / REGISTRY_FILE
    shown = redact_url(location)  # the entries' source and every message: secrets hidden
    if offline:
        if not cached.is_file():
            raise SpherecodesError(
                f"the catalog {shown} is not in the cache ({cached.parent}); run once without --offline"
            )
        return dataclasses.replace(_read_registry(cached, shown), location=location)
    _, registry_url = split_url(location)
    _usable_cache(cached.parent)
    with replace_atomically(cached) as tmp:
        stream_download(registry_url, tmp, limit=REGISTRY_LIMIT_BYTES, timeout=TIMEOUT_S,
                        what=f"({REGISTRY_LIMIT_BYTES // 2**20} MiB) a registry may have",
                        deadline=download_deadline(), deadline_name=DEADLINE_ENV, min_rate=MIN_RATE_BYTES_S,
                        rate_grace=RATE_GRACE_S)
        catalog = parse_registry(tmp.read_bytes(), shown)
    return dataclasses.replace(catalog, location=location)


def catalogs(url: str | None = None, *, offline: bool = False) -> list[Catalog]:
    """The bundled catalog, then the configured one (``url`` or ``$SPHERECODES_BANK_URL``) if any."""
    found = [bundled_catalog()]
    location = configured_url(url)
    if location is not None:
        found.append(open_catalog(location, offline=offline))
    return found


def catalog_entries(url: str | None = None, *, offline: bool = False) -> list[CatalogEntry]:
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
    >>> entries = catalog_entries(url="")
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
    return min(matches, key=lambda e: method_rank(e.method))


# --------------------------------------------------------------------------- fetching


@dataclass
class Fetched:
    """What :func:`fetch_bank` found.

    Attributes
    ----------
    code : Code
        The code, read and validated.
    entry : CatalogEntry or None
        Its catalog entry (``None`` for a code built here).
    path : Path or None
        The verified bank file (bundled, in the catalog folder, or in the cache).
    source : str
        ``"bundled"``, the catalog's directory or URL, ``"closed form"`` or ``"structured code"``.
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
    spot; then the configured catalog (``url`` or ``$SPHERECODES_BANK_URL``)
    is searched, downloading into the cache.  Without a method (or with
    ``structured``), the structured code for (d, K) is built on the spot
    (:mod:`.on_demand`) instead of a bank whose max-cos it beats, and where no
    catalog has the size; so is a name ``structured-d<D>-k<K>``.

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
    if name is not None and parse_structured_name(name) is not None:
        return _structured(*parse_structured_name(name))
    if method == "structured":
        return _structured(d, k)
    structured = structured_for(d, k) if name is None and method in (None, "auto") else None
    bundled = bundled_catalog()
    entry = find_entry(bundled.entries, name, d=d, k=k, method=method)
    if entry is not None:
        return _structured(d, k) if beats(structured, k, entry.max_cos) else _load(bundled, entry, offline=offline)
    if name is None:
        closed = _closed_form(d, k, method)
        if closed is not None:
            # As built, like the structured code: the fetch command turns it where it leaves dimensions unused.
            return Fetched(code=_certified(generate(d, k, closed, rotation="none")), entry=None, path=None,
                           source="closed form")
    location = configured_url(url)
    searched = "the bundled catalog"
    if location is not None:
        remote = open_catalog(location, offline=offline)
        entry = find_entry(remote.entries, name, d=d, k=k, method=method)
        if entry is not None:
            return _structured(d, k) if beats(structured, k, entry.max_cos) else _load(remote, entry, offline=offline)
        searched += f" or in {redact_url(location)}"
    if structured is not None:
        return _structured(d, k)
    if location is None:
        searched += f" (no other catalog is configured: --url or ${URL_ENV})"
    if name is not None:
        raise SpherecodesError(f"no bank named {name!r} in {searched}; 'spherecodes catalog list' shows what there is")
    what = f"d={d}, K={k}" + (f", method {method}" if method else "")
    if method in CLOSED_FORMS:
        # A closed form that applies was built above: this one does not construct K points in R^d.
        fits = ", ".join(applicable_closed_forms(d, k)) or "none"
        raise SpherecodesError(f"no bank for {what}: the closed form {method} does not construct {k} points in "
                               f"R^{d} (closed forms that do: {fits}); 'spherecodes generate --d {d} --k {k}' "
                               "makes the best code there is")
    command = f"spherecodes generate --d {d} --k {k}" + (f" --method {method}" if method else "")
    raise SpherecodesError(f"no bank for {what} in {searched}; make it with: {command}")


def _structured(d: int, k: int) -> Fetched:
    """The structured code for (d, K), built here (a clear error names the closest option when none fits)."""
    # As built: the fetch command turns an embedded code (and says so) unless asked not to.
    return Fetched(code=_certified(generate(d, k, "structured", rotation="none")), entry=None, path=None,
                   source="structured code")


#: Most seconds that :func:`fetch_bank` spends certifying a code it builds; a code whose certificate is estimated
#: longer is returned uncertified, and the report says which command certifies it.
FETCH_CERTIFY_SECONDS = 60.0


def _certified(code: Code) -> Code:
    """A code built on the spot, with its certificate where that is estimated to take at most
    :data:`FETCH_CERTIFY_SECONDS` (from its structure or nearest shells: seconds for the closed forms)."""
    from ..certificate import certificate_estimate, one_vs_rest_distances

    if certificate_estimate(code.prototypes, device="cpu", orbit=code.orbit).seconds <= FETCH_CERTIFY_SECONDS:
        code.certificate = one_vs_rest_distances(code.prototypes, device="cpu", orbit=code.orbit)
    return code


def _closed_form(d: int, k: int, method: str | None) -> str | None:
    if method in (None, "auto", "tammes", "softmax"):
        # Optimal for both problems, so it is also the Tammes code and the Softmax Code.
        return optimal_closed_form(d, k)
    if method in CLOSED_FORMS and method in applicable_closed_forms(d, k):
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
        ``"tammes"``, ``"softmax"``, ``"structured"``, ...; default: a
        closed form where one is optimal, else the structured code where it
        beats the catalog's banks (or they have none of this size), else the
        Tammes code, else whatever the catalog has.
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
    Closed forms and structured codes are built on the spot, without a catalog:

    >>> import spherecodes
    >>> code = spherecodes.fetch(d=11, k=12, url="")
    >>> code.method, code.k, code.d
    ('etf', 12, 11)
    >>> code = spherecodes.fetch(d=64, k=1000, url="")   # beats the bundled tammes bank (0.1456)
    >>> code.name, code.settings["exact_max_cos"]
    ('structured-d64-k1000', '1/8')
    """
    return fetch_bank(name, d=d, k=k, method=method, url=url, offline=offline).code


def _load(cat: Catalog, entry: CatalogEntry, *, offline: bool) -> Fetched:
    if cat.kind == "bundled":
        code, path = read_bundled(entry)
        return Fetched(code=code, entry=entry, path=path, source="bundled")
    if cat.kind == "directory":
        path = local_path(cat.location) / entry.file
        check_bank_file(path, entry, cat.location)
        return Fetched(code=read_entry(path, entry), entry=entry, path=path, source=cat.location)
    return _download(cat.location, entry, offline=offline)


def _download(location: str, entry: CatalogEntry, *, offline: bool) -> Fetched:
    """The entry's bank from the cache, or streamed from the catalog into it once it checks out."""
    folder = catalog_cache_dir(location)
    target = folder / entry.file
    shown = redact_url(location)
    if target.is_file():
        try:
            check_bank_file(target, entry, shown)
            return Fetched(code=read_entry(target, entry), entry=entry, path=target, source=shown)
        except SpherecodesError:
            target.unlink()  # stale or altered: never keep a file that does not check out
    if offline:
        raise SpherecodesError(
            f"{entry.name} from {shown} is not in the cache ({folder}); run once without --offline to download it"
        )
    _usable_cache(folder)
    free = shutil.disk_usage(folder).free
    if entry.size > free:
        raise SpherecodesError(
            f"the catalog lists a size of {entry.size} bytes for {entry.file}, more than the {free} bytes free in "
            f"the cache directory {folder}"
        )
    base, _ = split_url(location)
    url = file_url(base, entry.file)
    with replace_atomically(target) as tmp:
        size, digest = stream_download(url, tmp, limit=entry.size, timeout=TIMEOUT_S,
                                       what="the catalog lists for it", deadline=download_deadline(),
                                       deadline_name=DEADLINE_ENV, min_rate=MIN_RATE_BYTES_S,
                                       rate_grace=RATE_GRACE_S)
        if size != entry.size or digest != entry.sha256:
            raise SpherecodesError(
                f"{redact_url(url)} was refused: its size and SHA-256 must both match the catalog: size expected "
                f"{entry.size} "
                f"bytes, got {size}; SHA-256 expected {entry.sha256}, got {digest}; nothing was cached"
            )
        try:
            code = read_entry(tmp, entry)
        except SpherecodesError as err:  # name the download, not its temporary file
            raise SpherecodesError(f"{str(err).replace(str(tmp), redact_url(url))}; nothing was cached",
                                   flags=err.flags) from None
    return Fetched(code=code, entry=entry, path=target, source=shown, downloaded=True)
