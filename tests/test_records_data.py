"""The best-known spherical-code tables in tests/data/records/ and their loader."""

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("_records", ROOT / "benchmarks" / "_records.py")
records = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("_records", records)  # dataclasses look their module up there
_spec.loader.exec_module(records)

TRIBONACCI = 1.8392867552141612  # real root of x^3 = x^2 + x + 1
#: Exact optima: (dimension, N) -> max-cos.
CLOSED_FORMS = {
    (3, 5): 0.0,
    (3, 6): 0.0,
    (3, 8): (2 * math.sqrt(2) - 1) / 7,
    (3, 9): 1 / 3,
    (3, 11): 1 / math.sqrt(5),
    (3, 12): 1 / math.sqrt(5),
    (3, 24): (TRIBONACCI - 1) / (3 - TRIBONACCI),
    (4, 5): -1 / 4,
    (4, 8): 0.0,
    (4, 10): 1 / 6,
    (4, 24): 1 / 2,
    (8, 16): 0.0,
}
#: Sources quoted to >= 12 significant digits (coordinate rows are only as good
#: as the published coordinates: Sloane's are within ~1e-9 of the optimum).
PRECISE = {"closed_form", "cohn_table", "cohn_table_quoted", "oeis_a383860", "spherical_codes_org_quoted"}


def test_loader_returns_the_tables():
    rows = records.load_rows()
    best = records.best_records()
    assert rows and best
    assert {r.dimension for r in rows} == {3, 4, 5, 6, 7, 8}
    assert {r.source for r in rows} <= PRECISE | {"sloane_coords"}
    for (d, n), row in best.items():
        assert (row.dimension, row.n) == (d, n)
        assert row.max_cos == min(r.max_cos for r in rows if (r.dimension, r.n) == (d, n))
        assert -1 <= row.max_cos < 1
        assert row.min_angle_deg == pytest.approx(math.degrees(math.acos(row.max_cos)), abs=1e-9)
    assert set(records.best_records(dimensions={3})) == {k for k in best if k[0] == 3}
    # Precise rows carry at least 12 significant digits unless the value is exact in fewer.
    for row in rows:
        if row.source in PRECISE and row.max_cos not in (0.0, 0.5, -0.25, -0.2, -0.125):
            digits = row.max_cos_text.lstrip("-0.").replace(".", "")
            assert len(digits) >= 12, row


@pytest.mark.parametrize("key", sorted(CLOSED_FORMS))
def test_closed_forms(key):
    rows = [r for r in records.load_rows() if (r.dimension, r.n) == key]
    assert rows, f"no row for {key}"
    for row in rows:
        tolerance = 1e-12 if row.source in PRECISE else 1e-8
        assert row.max_cos == pytest.approx(CLOSED_FORMS[key], abs=tolerance), row
    assert records.best_records()[key].max_cos == pytest.approx(CLOSED_FORMS[key], abs=1e-12)


def test_small_3d_optima_agree_across_sources():
    """N <= 14 in 3-D (all proved optimal): every source gives the same value, to
    1e-12 between precise sources and to 1e-8 for Sloane's coordinates."""
    rows = [r for r in records.load_rows() if r.dimension == 3 and r.n <= 14]
    for n in sorted({r.n for r in rows}):
        same = [r for r in rows if r.n == n]
        best = min(r.max_cos for r in same)
        for row in same:
            tolerance = 1e-12 if row.source in PRECISE else 1e-8
            assert row.max_cos - best <= tolerance, row


def test_shipped_coordinates_reproduce_the_csv():
    coordinate_rows = [r for r in records.load_rows() if r.source == "sloane_coords"]
    assert coordinate_rows
    for row in coordinate_rows:
        w = records.coordinates(row)
        assert w.shape == (row.n, row.dimension)
        assert records.max_cos(w) == pytest.approx(row.max_cos, abs=1e-12), row


def test_max_cos_does_not_decrease_with_n():
    best = records.best_records()
    for d in {k[0] for k in best}:
        values = [best[k].max_cos for k in sorted(best) if k[0] == d]
        assert all(a <= b + 1e-12 for a, b in zip(values, values[1:])), d


def test_max_cos_helper():
    w = np.vstack([np.eye(3), -np.eye(3)]) * 2.0
    assert records.max_cos(w) == 0.0
