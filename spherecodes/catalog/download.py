"""Reading catalogs and fetching their banks: locations, the per-user cache, pooch downloads.

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
import logging
import os
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..atomic import replace_atomically
from ..bank import read_code
from ..checks import check_sizes
from ..code import Code
from ..constructions import CLOSED_FORMS, applicable_closed_forms, optimal_closed_form
from ..errors import SpherecodesError
from ..generation import generate
from ._schema import (
    REGISTRY_FILE,
    Catalog,
    CatalogEntry,
    file_sha256,
    is_http,
    method_rank,
    parse_registry,
)

#: Environment variable naming the catalog to use after the bundled one.
URL_ENV = "SPHERECODES_BANK_URL"

#: Environment variable that overrides the per-user cache directory.
CACHE_ENV = "SPHERECODES_CACHE"

#: Seconds to wait for a catalog server before giving up.
TIMEOUT_S = 60


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


def local_path(location: str) -> Path:
    parts = urllib.parse.urlsplit(location)
    if parts.scheme.lower() == "file":
        return Path(urllib.request.url2pathname(parts.path))
    if parts.scheme and len(parts.scheme) > 1:
        raise SpherecodesError(
            f"cannot read a catalog from {location!r}: give an http(s):// URL, a file:// URL or a directory"
        )
    return Path(location).expanduser()


def split_url(url: str) -> tuple[str, str]:
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
    base, _ = split_url(url)
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
    if not is_http(location):
        directory = local_path(location)
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
    _, registry_url = split_url(location)
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
        directory = local_path(cat.location)
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
    base, _ = split_url(location)
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
