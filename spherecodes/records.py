"""Published best-known values of max-cos, as reference data: what a code is compared with.

``spherecodes/data/records.csv`` holds, per (d, N), the smallest max-cos of
N unit vectors in R^d that a published table reports (:data:`SOURCES`: the
3-D packings of Hardin, Sloane & Smith and of Lai et al. (2023), Cohn's
table in R^5 and R^6, the universal optima and codes proven optimal).  It
holds values only, never coordinates: every code of spherecodes comes from
a construction or a search, and these numbers only say how far from the
best known it ended.

:func:`published_record` looks one up; :func:`compare_with_record` says how a
code's max-cos, computed in float64, stands against it.
"""

from __future__ import annotations

import csv
import functools
import io
from dataclasses import dataclass
from importlib import resources

from .checks import check_sizes

__all__ = ["SOURCES", "PublishedRecord", "RecordComparison", "compare_with_record", "published_record",
           "published_records"]

_TABLE = "records.csv"


@dataclass(frozen=True)
class Source:
    """A published table: how to cite it, and how precisely its values are given (in cos)."""

    citation: str
    precision: float


#: The tables the values come from.  ``precision`` is how far a value may be
#: from what the table's own rounding allows (Hardin–Sloane–Smith give
#: separations in degrees to 7 decimals, about 1e-9 in cos; Lai et al. to 12,
#: about 1e-12; Cohn's rows are 12 decimals rounded up, or 32 digits); exact
#: values (universal optima, proofs) have none.
SOURCES = {
    "Sloane": Source("R. H. Hardin, N. J. A. Sloane & W. D. Smith, Tables of spherical codes", 1e-9),
    "Lai2023": Source("X. Lai, D. Yue, J.-K. Hao, F. Glover & Z. Lü (2023), Computers & Operations Research "
                      "151, 106121", 1e-12),
    "Cohn": Source("H. Cohn, Table of spherical codes (spherical-codes.org)", 1e-12),
    "Cohn-universal": Source("H. Cohn & A. Kumar (2007), J. AMS 20: universally optimal codes", 0.0),
    "Bachoc-Vallentin2009": Source("C. Bachoc & F. Vallentin (2009), JCTA 116", 0.0),
    "Cohn-deLaat-Leijenhorst2024": Source("H. Cohn, D. de Laat & N. Leijenhorst (2024), exact semidefinite "
                                          "programming bounds", 0.0),
}


@dataclass(frozen=True)
class PublishedRecord:
    """The best published max-cos of N = ``k`` points in R^``d`` and where it is published."""

    d: int
    k: int
    max_cos: float
    source: str
    proven_optimal: bool

    @property
    def citation(self) -> str:
        return SOURCES[self.source].citation

    @property
    def precision(self) -> float:
        return SOURCES[self.source].precision


@functools.lru_cache(maxsize=1)
def published_records() -> dict[tuple[int, int], PublishedRecord]:
    """Every published value shipped with spherecodes, by (d, K).

    Examples
    --------
    >>> records = published_records()
    >>> sum(1 for d, k in records if d == 3), records[(3, 12)].source
    (126, 'Cohn-universal')
    """
    text = resources.files("spherecodes").joinpath("data", _TABLE).read_text()
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        record = PublishedRecord(int(row["d"]), int(row["N"]), float(row["max_cos"]), row["source"],
                                 row["proven_optimal"].strip().lower() == "true")
        out[(record.d, record.k)] = record
    return out


def published_record(d: int, k: int) -> PublishedRecord | None:
    """The published best-known max-cos of (d, K), or None where no table shipped here lists the size.

    Examples
    --------
    >>> r = published_record(6, 98)
    >>> r.max_cos, r.source
    (0.571052839653, 'Cohn')
    >>> published_record(3, 131) is None
    True
    """
    d, k = check_sizes(d, k)
    return published_records().get((d, k))


@dataclass(frozen=True)
class RecordComparison:
    """A code's max-cos against the published value of its size (see :func:`compare_with_record`)."""

    record: PublishedRecord
    gap: float  # the code's max-cos minus the published value: > 0 above it (worse), < 0 below it (better)
    tolerance: float
    standing: str  # "better", "reaches" or "above"

    def to_dict(self) -> dict:
        return {"value": self.record.max_cos, "source": self.record.source, "citation": self.record.citation,
                "proven_optimal": self.record.proven_optimal, "gap": self.gap, "tolerance": self.tolerance,
                "standing": self.standing}


def compare_with_record(d: int, k: int, max_cos: float) -> RecordComparison | None:
    """How a code's max-cos (computed in float64) stands against the published value of (d, K); None if none.

    The code is *better* when its max-cos lies below the published value by
    more than the tolerance, *reaches* it within the tolerance, and is
    *above* it otherwise.  The tolerance is the table's own precision
    (:data:`SOURCES`) plus the float64 error of the code's max-cos (an
    inner product of unit vectors of length d is within ``d * 2**-53`` of
    exact, and so are the row norms: ``4 * d * 2**-53`` in all), so a code
    is only called better where the float64 numbers show it.

    Examples
    --------
    >>> c = compare_with_record(3, 12, 5 ** -0.5)
    >>> c.standing, c.gap == 0.0
    ('reaches', True)
    >>> compare_with_record(3, 12, 0.46).standing
    'above'
    >>> c = compare_with_record(6, 98, 0.5710484584)
    >>> c.standing, f"{c.gap:.3g}", c.record.source
    ('better', '-4.38e-06', 'Cohn')
    """
    record = published_record(d, k)
    if record is None:
        return None
    gap = float(max_cos) - record.max_cos
    tolerance = record.precision + 4 * d * 2.0**-53
    standing = "better" if gap < -tolerance else "reaches" if gap <= tolerance else "above"
    return RecordComparison(record, gap, tolerance, standing)
