"""Loader for the best-known spherical-code tables in ``tests/data/records/``.

Import it from a benchmark (``from _records import best_records``; the script's
folder is on ``sys.path``) or from a test by path (see
``tests/test_records_data.py``).  The data and their sources are described in
``tests/data/records/README.md``.

``load_rows()`` gives every row of ``records.csv`` (one per dimension, N and
source: where sources differ, all are kept); ``best_records()`` keeps, for each
(dimension, N), the row with the smallest max-cos -- the record to beat.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "records"
CSV = DATA / "records.csv"


@dataclass(frozen=True)
class Record:
    dimension: int
    n: int
    max_cos: float
    min_angle_deg: float
    source: str
    note: str
    max_cos_text: str  # the value as written in the CSV (up to 32 digits)


def load_rows(path: Path = CSV) -> list[Record]:
    """Every row of the table, in file order.

    Reads this folder's layout (``dimension,n,max_cos,min_angle_deg,source,note``)
    and that of the published-records table kept outside the repository
    (``d,N,max_cos,source,proven_optimal``; the angle is then computed and the
    note says whether the source calls the value proven optimal).
    """
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if "dimension" in r:
                rows.append(Record(int(r["dimension"]), int(r["n"]), float(r["max_cos"]), float(r["min_angle_deg"]),
                                   r["source"], r["note"], r["max_cos"]))
            else:
                value = float(r["max_cos"])
                angle = float(np.degrees(np.arccos(min(1.0, max(-1.0, value)))))
                note = "proven optimal" if r.get("proven_optimal", "").strip().lower() == "true" else ""
                rows.append(Record(int(r["d"]), int(r["N"]), value, angle, r["source"], note, r["max_cos"]))
    return rows


def best_records(dimensions=None, path: Path = CSV) -> dict[tuple[int, int], Record]:
    """{(dimension, N): the row with the smallest max-cos}, optionally for some dimensions only."""
    best: dict[tuple[int, int], Record] = {}
    for row in load_rows(path):
        if dimensions is not None and row.dimension not in dimensions:
            continue
        key = (row.dimension, row.n)
        if key not in best or row.max_cos < best[key].max_cos:
            best[key] = row
    return dict(sorted(best.items()))


def coordinates(row: Record) -> np.ndarray | None:
    """The shipped coordinates behind a ``sloane_coords`` row, rows re-normalised; else None."""
    if row.source != "sloane_coords":
        return None
    w = np.loadtxt(DATA / row.note).reshape(-1, row.dimension)
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def max_cos(w: np.ndarray) -> float:
    """float64 max-cos of the re-normalised rows of ``w``."""
    w = np.asarray(w, dtype=np.float64)
    w = w / np.linalg.norm(w, axis=1, keepdims=True)
    g = w @ w.T
    np.fill_diagonal(g, -np.inf)
    return float(g.max())
