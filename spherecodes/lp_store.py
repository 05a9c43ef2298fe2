"""LP bounds known before they are asked for: the table shipped with spherecodes, and the sizes computed here.

The Delsarte–Goethals–Seidel bound on max-cos depends on (d, K) alone, and
its search (:func:`spherecodes.bounds.search_lp_bound`) solves ten to forty
linear programs.  So each value found is kept with the polynomial that
proves it: in ``spherecodes/data/lp_bounds.json`` (:data:`TABLE`, written by
``benchmarks/bench_lp_bounds.py``) for the sizes users ask for, and in the
per-user cache (:mod:`spherecodes.cache`, ``lp-bounds/d<D>-k<K>.json``) for
every other size once computed.  Neither is trusted:
:func:`spherecodes.bounds.lp_max_cos_lower_bound` verifies a record's
polynomial again before it shows the value, and ignores one that does not
check (docs/certificate.md, "3. The LP lower bound on max-cos", step 6).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .atomic import replace_atomically
from .cache import LP_BOUNDS_FOLDER, cache_dir
from .errors import SpherecodesError

__all__ = ["FORMAT", "TABLE", "LPRecord", "cache_path", "known_records", "read_table", "record_document",
           "remember"]

#: The ``format`` of a cached record and of the table.
FORMAT = "spherecodes-lp-bound"
#: The version of both; another version is not read.
VERSION = 1

#: The table shipped with spherecodes, under ``spherecodes/data``.
TABLE = "lp_bounds.json"


@dataclass(frozen=True)
class LPRecord:
    """The LP bound of one size as stored, not yet verified.

    Attributes
    ----------
    d, k : int
    degree : int
        The largest degree of the LP (:data:`spherecodes.bounds.LP_MAX_DEGREE`).
    value : float
        The bound s on max-cos.
    coefficients : tuple of float
        The polynomial that the LP gave at s, before the verification's shift.
    source : str
        ``"table"`` or the cache file's path.
    """

    d: int
    k: int
    degree: int
    value: float
    coefficients: tuple
    source: str


def record_document(d: int, k: int, degree: int, value: float, coefficients) -> dict:
    """A record as JSON data (floats in full: JSON keeps every bit of a float64).

    Examples
    --------
    >>> record_document(64, 1000, 1, 0.5, [1.0, 2.0])["coefficients"]
    [1.0, 2.0]
    """
    return {"format": FORMAT, "version": VERSION, "d": int(d), "k": int(k), "degree": int(degree),
            "value": float(value), "coefficients": [float(c) for c in coefficients]}


def _parsed(data, source: str) -> LPRecord | None:
    """The record in ``data`` (a dict of :func:`record_document`), or None where any part is off."""
    try:
        if data["format"] != FORMAT or data["version"] != VERSION:
            return None
        d, k, degree = data["d"], data["k"], data["degree"]
        value, coefficients = data["value"], data["coefficients"]
        numbers = [value, *coefficients]
        if not (all(type(n) is int for n in (d, k, degree)) and all(type(x) is float for x in numbers)
                and len(coefficients) == degree + 1 and all(math.isfinite(x) for x in numbers)):
            return None
    except (KeyError, TypeError):
        return None
    return LPRecord(d, k, degree, value, tuple(coefficients), source)


@functools.lru_cache(maxsize=1)
def read_table() -> dict:
    """The shipped table, ``{(d, K): LPRecord}`` (read once per process; damaged entries left out).

    Examples
    --------
    >>> record = read_table()[(64, 1000)]
    >>> record.source, record.degree, round(record.value, 4)
    ('table', 24, 0.0916)
    """
    try:
        data = json.loads(resources.files("spherecodes").joinpath("data", TABLE).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        return {}
    table = {}
    for entry in data.get("entries", ()):
        if not (isinstance(entry, list) and len(entry) == 4):
            continue
        d, k, value, coefficients = entry
        record = _parsed({"format": FORMAT, "version": VERSION, "d": d, "k": k, "degree": data.get("degree"),
                          "value": value, "coefficients": coefficients}, "table")
        if record is not None:
            table[(d, k)] = record
    return table


def cache_path(d: int, k: int) -> Path:
    """Where this user's cache keeps the LP bound of (d, K).

    Examples
    --------
    >>> from unittest import mock
    >>> with mock.patch.dict("os.environ", {"SPHERECODES_CACHE": "/tmp/c"}):
    ...     str(cache_path(64, 1000))
    '/tmp/c/lp-bounds/d64-k1000.json'
    """
    return cache_dir() / LP_BOUNDS_FOLDER / f"d{d}-k{k}.json"


def known_records(d: int, k: int, degree: int):
    """The stored records of (d, K) at this degree, the table's first, then the cache's (each may still fail
    verification: the caller checks them in this order)."""
    record = read_table().get((d, k))
    if record is not None and record.degree == degree:
        yield record
    path = cache_path(d, k)
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return
    record = _parsed(data, str(path)) if isinstance(data, dict) else None
    if record is not None and (record.d, record.k, record.degree) == (d, k, degree):
        yield record


def remember(d: int, k: int, degree: int, value: float, coefficients) -> None:
    """Keep a bound just computed in this user's cache, atomically; where the cache cannot be written (a
    read-only home, a full disk), nothing is kept and nothing is said: the bound is computed again next time.

    Examples
    --------
    >>> import tempfile
    >>> from unittest import mock
    >>> with mock.patch.dict("os.environ", {"SPHERECODES_CACHE": tempfile.mkdtemp()}):
    ...     remember(64, 1000, 1, 0.0, [1.0, 0.0])
    ...     [(r.value, r.source.endswith("d64-k1000.json")) for r in known_records(64, 1000, 1)]
    [(0.0, True)]
    """
    path = cache_path(d, k)
    text = json.dumps(record_document(d, k, degree, value, coefficients), indent=1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with replace_atomically(path, noted=False) as tmp:
            tmp.write_text(text + "\n")
    except (OSError, SpherecodesError):
        pass
