"""spherecodes: maximally separated class prototypes on the hypersphere.

Examples
--------
>>> import spherecodes
>>> code = spherecodes.generate(d=11, k=12)
>>> code.method, code.k, code.d
('etf', 12, 11)
"""

__version__ = "0.1.0"

from importlib import import_module as _import_module

#: The module of each public name, imported on first use: ``import spherecodes`` stays light, so that the
#: command-line tool's guard (:mod:`spherecodes.cli`) covers the loading of h5py, SciPy and the rest, and a
#: Ctrl-C meanwhile gets one line instead of a traceback.
_HOMES = {
    "Code": "code", "check_labels": "code", "default_code_name": "code", "make_code": "code",
    "SpherecodesError": "errors",
    "catalog_entries": "catalog", "fetch": "catalog",
    "delete_code": "bank", "list_codes": "bank", "read_code": "bank", "write_code": "bank",
    "generate": "run", "plan_run": "run", "RunContext": "context",
    "extend": "extension",
    "max_cos_lower_bound": "bounds", "theorem_3_9": "bounds",
    "separation_statistics": "stats",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'spherecodes' has no attribute {name!r}")
    value = getattr(_import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_HOMES})


__all__ = ["Code", "RunContext", "SpherecodesError", "__version__", "catalog_entries", "check_labels",
           "default_code_name", "delete_code", "extend", "fetch", "generate", "list_codes", "make_code", "plan_run",
           "max_cos_lower_bound", "read_code", "separation_statistics", "theorem_3_9", "write_code"]
