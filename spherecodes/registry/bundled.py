"""The bundled catalog and the checks every catalog bank passes before it is read.

Only the registry schema and the bank reader are imported, so that ``generate`` (:mod:`spherecodes.best_of`) can
offer a bundled code without importing the fetching machinery, which itself calls ``generate``.
"""

from __future__ import annotations

import stat
from importlib import resources
from pathlib import Path

from ..bank import read_code
from ..code import Code
from ..errors import SpherecodesError
from .schema import REGISTRY_FILE, Catalog, CatalogEntry, file_sha256, parse_registry


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


def check_bank_file(path: Path, entry: CatalogEntry, where: str) -> None:
    """Refuse a bank file whose size or SHA-256 differs from its catalog entry (both must match)."""
    try:
        info = path.stat()
    except OSError:
        raise SpherecodesError(f"{where} lists {entry.file} but the file is missing ({path})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpherecodesError(f"{path} is not a regular file; {where} lists a bank file there")
    if info.st_size != entry.size:
        raise SpherecodesError(
            f"{path} does not match {where}: its size is {info.st_size} bytes but the catalog lists {entry.size}; "
            "the bank or the registry was changed"
        )
    got = file_sha256(path)
    if got != entry.sha256:
        raise SpherecodesError(
            f"{path} does not match {where}: SHA-256 expected {entry.sha256}, got {got}; the bank was changed or damaged"
        )


def read_entry(path: Path, entry: CatalogEntry) -> Code:
    """The entry's code, read (its certificate verified) and checked against what the entry says."""
    code = read_code(path, entry.code)
    if code.sha256 != entry.prototypes_sha256 or (code.d, code.k) != (entry.d, entry.k):
        raise SpherecodesError(f"code {entry.code!r} in {path} is not the code its catalog entry describes")
    return code


def read_bundled(entry: CatalogEntry) -> tuple[Code, Path]:
    """A bundled entry's code and the path of its bank, after checking its size and SHA-256.

    Examples
    --------
    >>> entry = next(e for e in bundled_catalog().entries if e.name == "tammes-d16-k100")
    >>> code, path = read_bundled(entry)
    >>> (code.d, code.k), path.name
    ((16, 100), 'tammes-d16-k100.h5')
    """
    with resources.as_file(resources.files("spherecodes.banks").joinpath(entry.file)) as path:
        check_bank_file(Path(path), entry, "the bundled catalog")
        return read_entry(Path(path), entry), Path(path)
