"""The per-user cache: banks downloaded from catalogs, and LP bounds computed on this machine.

One folder per user (:func:`cache_dir`) holds ``<catalog>-<hash>/``, one
folder per remote catalog with its ``registry.json`` and the banks fetched
from it (:mod:`spherecodes.catalog.download`), and ``lp-bounds/d<D>-k<K>.json``,
the LP bound of each size computed here (:mod:`spherecodes.lp_store`).

:func:`cached_files` lists what spherecodes put there (``spherecodes cache
list``) and :func:`clear_cache` removes it (``spherecodes cache clear``);
files of any other name are listed as such and never removed.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import SpherecodesError

__all__ = ["CACHE_ENV", "LP_BOUNDS_FOLDER", "CachedFile", "cache_dir", "cached_files", "clear_cache"]

#: Environment variable that overrides the per-user cache directory.
CACHE_ENV = "SPHERECODES_CACHE"

#: The folder of the cache that holds the computed LP bounds.
LP_BOUNDS_FOLDER = "lp-bounds"

#: A catalog's folder: its readable host and path, then 12 hex digits of the URL's SHA-256.
_CATALOG_FOLDER = re.compile(r"[A-Za-z0-9.-]*-[0-9a-f]{12}")
#: A temporary file of an atomic write (spherecodes.atomic) left by a writer that died.
_TEMPORARY = re.compile(r"\..+\.tmp")
_LP_BOUND = re.compile(r"d[0-9]+-k[0-9]+\.json")


def cache_dir() -> Path:
    """The per-user cache of downloaded catalogs and computed LP bounds.

    ``$SPHERECODES_CACHE`` when set, else the platform's cache directory
    (``~/.cache/spherecodes`` on Linux, ``~/Library/Caches/spherecodes`` on
    macOS, ``%LOCALAPPDATA%\\spherecodes\\spherecodes\\Cache`` on Windows),
    where pooch would keep them.

    Examples
    --------
    >>> from unittest import mock
    >>> with mock.patch.dict("os.environ", {"SPHERECODES_CACHE": "/tmp/my-cache"}):
    ...     str(cache_dir())
    '/tmp/my-cache'
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # the module pooch.os_cache asks, without loading pooch

    return Path(platformdirs.user_cache_dir("spherecodes"))


@dataclass(frozen=True)
class CachedFile:
    """A file in the cache.

    Attributes
    ----------
    path : Path
    kind : str
        ``"bank"``, ``"registry"``, ``"LP bound"``, ``"unfinished write"``
        (the temporary file of a writer that died), or ``"other"``: not
        written by spherecodes, so never removed.
    folder : str
        The folder within the cache: the catalog's (host, path and hash of
        its URL) or ``lp-bounds``.
    size : int
        Bytes.
    """

    path: Path
    kind: str
    folder: str
    size: int

    @property
    def removable(self) -> bool:
        """Whether spherecodes wrote it (and ``clear_cache`` removes it)."""
        return self.kind != "other"

    def to_dict(self) -> dict:
        return {"path": str(self.path), "kind": self.kind, "folder": self.folder, "size": self.size}


def _kind(folder: str, name: str) -> str:
    if _TEMPORARY.fullmatch(name):
        return "unfinished write"
    if folder == LP_BOUNDS_FOLDER:
        return "LP bound" if _LP_BOUND.fullmatch(name) else "other"
    if _CATALOG_FOLDER.fullmatch(folder):
        if name == "registry.json":
            return "registry"
        if name.endswith(".h5"):
            return "bank"
    return "other"


def cached_files(folder: Path | None = None) -> list[CachedFile]:
    """Every file in the cache (default :func:`cache_dir`), sorted by folder and name; none if it does not exist.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "lp-bounds").mkdir()
    >>> _ = (root / "lp-bounds" / "d64-k1000.json").write_text("{}")
    >>> [(f.kind, f.folder, f.path.name, f.size) for f in cached_files(root)]
    [('LP bound', 'lp-bounds', 'd64-k1000.json', 2)]
    """
    root = cache_dir() if folder is None else Path(folder)
    try:
        entries = sorted(root.iterdir())
    except FileNotFoundError:
        return []
    except OSError as err:
        raise SpherecodesError(f"cannot read the cache directory {root} ({err.strerror or err}); set {CACHE_ENV} "
                               "to another directory") from None
    found = []
    for entry in entries:
        info = entry.lstat()
        if stat.S_ISDIR(info.st_mode):
            for path in sorted(entry.iterdir()):
                inner = path.lstat()
                if stat.S_ISREG(inner.st_mode):
                    found.append(CachedFile(path, _kind(entry.name, path.name), entry.name, inner.st_size))
                else:  # spherecodes writes no folders or links deeper down
                    found.append(CachedFile(path, "other", entry.name, 0))
        else:
            found.append(CachedFile(entry, "other", "", info.st_size if stat.S_ISREG(info.st_mode) else 0))
    return found


def clear_cache(files: list[CachedFile]) -> int:
    """Remove the files spherecodes wrote among ``files`` (from :func:`cached_files`), then their folders once
    empty; the bytes freed.  Files of other names stay.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "lp-bounds").mkdir()
    >>> _ = (root / "lp-bounds" / "d64-k1000.json").write_text("{}")
    >>> _ = (root / "notes.txt").write_text("mine")
    >>> clear_cache(cached_files(root)), [f.path.name for f in cached_files(root)]
    (2, ['notes.txt'])
    """
    freed = 0
    folders = set()
    for item in files:
        if not item.removable:
            continue
        try:
            item.path.unlink()
        except FileNotFoundError:
            continue  # removed meanwhile (another clear, or a writer's own clean-up)
        except OSError as err:
            raise SpherecodesError(f"cannot remove {item.path} ({err.strerror or err}); removed "
                                   f"{freed} bytes before it") from None
        freed += item.size
        folders.add(item.path.parent)
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty: it holds files spherecodes did not write
    return freed
