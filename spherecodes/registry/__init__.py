"""The registry of a catalog and the bundled catalog: what ``auto`` and ``fetch`` need of the catalogs.

:mod:`.schema` holds a registry's entries, its JSON document and the checks
made when one is read; :mod:`.bundled` reads the catalog installed with
spherecodes.  This package sits below :mod:`spherecodes.catalog` and below
``generate``, which offers a bundled code without loading the fetching machinery.
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
