"""Catalogs of precomputed banks (``docs/catalog.md``): remote ones, publishing, fetching and building.

A **catalog** is a folder of banks plus the ``registry.json`` that lists them
(:mod:`spherecodes.registry`).  :mod:`.publishing` writes a registry,
:mod:`.download` reads catalogs and fetches verified codes, :mod:`.build`
computes a catalog on Dask, and :mod:`.on_demand` lists the structured codes
that ``fetch`` builds on demand.  Each name below is loaded from its module on
first use, so that reading a catalog does not load the build.
"""

from importlib import import_module as _import_module

#: The module of each public name, relative to this package.
_HOMES = {
    "CATALOG_FORMAT": "..registry", "CATALOG_SCHEMA_VERSION": "..registry", "METHOD_PREFERENCE": "..registry",
    "REGISTRY_FILE": "..registry", "Catalog": "..registry", "CatalogEntry": "..registry",
    "bundled_catalog": "..registry", "file_sha256": "..registry",
    "parse_registry": "..registry", "registry_document": "..registry",
    "BankOptions": ".build", "BuildReport": ".build", "BuildTask": ".build", "build_bank": ".build", "build_catalog": ".build",
    "parse_grid": ".build", "parse_methods": ".build", "plan_build": ".build",
    "CACHE_ENV": ".download", "REGISTRY_LIMIT_BYTES": ".download", "TIMEOUT_S": ".download", "URL_ENV": ".download",
    "Fetched": ".download", "cache_dir": ".download", "catalog_entries": ".download",
    "catalog_cache_dir": ".download", "catalogs": ".download", "check_location": ".download",
    "configured_url": ".download", "fetch": ".download", "fetch_bank": ".download", "find_entry": ".download",
    "open_catalog": ".download",
    "StructuredOffer": ".on_demand", "parse_structured_name": ".on_demand",
    "structured_offers": ".on_demand",
    "entry_for_code": ".publishing", "fit_budget": ".publishing", "publish": ".publishing",
    "scan_directory": ".publishing", "select_best": ".publishing",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_HOMES})


__all__ = list(_HOMES)
