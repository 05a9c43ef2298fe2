"""Catalogs of precomputed banks: the bundled one, remote ones, publishing, fetching and building.

A **catalog** is a folder of banks plus a ``registry.json`` that lists them
(:mod:`._schema`).  :mod:`.publish` writes the registry of a folder of
certified banks, :mod:`.download` reads catalogs (bundled, a directory, or
HTTP(S) through pooch into a per-user cache) and fetches verified codes, and
:mod:`.build` computes a catalog as tasks on Dask distributed; :mod:`.on_demand`
lists the structured codes that beat the banks, built on demand by ``fetch``.  Text for the
entries is :func:`spherecodes.report.format_entries`.
"""

from ._schema import (
    CATALOG_FORMAT,
    CATALOG_SCHEMA_VERSION,
    METHOD_PREFERENCE,
    REGISTRY_FILE,
    Catalog,
    CatalogEntry,
    catalog_name,
    file_sha256,
    parse_registry,
    registry_document,
)
from .build import BuildReport, BuildTask, build_bank, build_catalog, parse_grid, parse_methods, plan_build
from .bundled import bundled_catalog
from .download import (
    CACHE_ENV,
    REGISTRY_LIMIT_BYTES,
    TIMEOUT_S,
    URL_ENV,
    Fetched,
    cache_dir,
    catalog_entries,
    catalog_cache_dir,
    catalogs,
    check_location,
    configured_url,
    fetch,
    fetch_bank,
    find_entry,
    open_catalog,
)
from .on_demand import StructuredOffer, parse_structured_name, structured_name, structured_offers
from .publish import entry_for_code, fit_budget, publish, scan_directory, select_best

__all__ = [
    "CACHE_ENV",
    "CATALOG_FORMAT",
    "CATALOG_SCHEMA_VERSION",
    "METHOD_PREFERENCE",
    "REGISTRY_FILE",
    "REGISTRY_LIMIT_BYTES",
    "TIMEOUT_S",
    "URL_ENV",
    "BuildReport",
    "BuildTask",
    "Catalog",
    "CatalogEntry",
    "Fetched",
    "StructuredOffer",
    "build_bank",
    "build_catalog",
    "bundled_catalog",
    "cache_dir",
    "catalog_entries",
    "catalog_cache_dir",
    "catalog_name",
    "catalogs",
    "check_location",
    "configured_url",
    "entry_for_code",
    "fetch",
    "fetch_bank",
    "file_sha256",
    "find_entry",
    "fit_budget",
    "open_catalog",
    "parse_grid",
    "parse_methods",
    "parse_registry",
    "parse_structured_name",
    "plan_build",
    "publish",
    "registry_document",
    "scan_directory",
    "select_best",
    "structured_name",
    "structured_offers",
]
