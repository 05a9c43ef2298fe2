"""The registry of a catalog and the bundled catalog: what ``auto`` and ``fetch`` need of the catalogs.

A **catalog** is a folder of banks plus a ``registry.json`` that lists them.
:mod:`.schema` holds the registry's entries, its JSON document and the checks
made when one is read; :mod:`.bundled` reads the catalog installed with
spherecodes and checks each bank file against its entry (size and SHA-256)
before the code is read.  This package sits below :mod:`spherecodes.catalog`
(fetching, publishing, building) and below ``generate``, which offers a bundled
code as a candidate without loading the fetching machinery.
"""

from .bundled import bundled_catalog, check_bank_file, read_bundled, read_entry
from .schema import (
    CATALOG_FORMAT,
    CATALOG_SCHEMA_VERSION,
    FILE_PATTERN,
    METHOD_PREFERENCE,
    REGISTRY_FILE,
    Catalog,
    CatalogEntry,
    file_sha256,
    is_http,
    method_rank,
    parse_registry,
    redact_text,
    redact_url,
    registry_document,
)

__all__ = [
    "CATALOG_FORMAT",
    "CATALOG_SCHEMA_VERSION",
    "FILE_PATTERN",
    "METHOD_PREFERENCE",
    "REGISTRY_FILE",
    "Catalog",
    "CatalogEntry",
    "bundled_catalog",
    "check_bank_file",
    "file_sha256",
    "is_http",
    "method_rank",
    "parse_registry",
    "read_bundled",
    "read_entry",
    "redact_text",
    "redact_url",
    "registry_document",
]
