"""The selection of structured codes: best_structured_code meets the target table, fast, and every tabulated
parameter is rebuilt."""

from fractions import Fraction

import numpy as np
import pytest

from spherecodes.structured import available_codes, best_structured_code, native_codes
from spherecodes.structured.description import blocked_max_cos, exact_fraction
from spherecodes.structured.surd import Surd

TARGETS = [
    (64, 1000, Fraction(1, 8), "extended BCH [64,10,28]"),
    (64, 4000, Fraction(1, 8), "Kerdock n = 64"),
    (128, 10_000, Fraction(15, 127), "shortened extended BCH [127,14,56]"),  # BCH [127,15,55], extended, shortened
    (256, 10_000, Fraction(1, 16), "Kerdock n = 256"),
    (16, 288, Fraction(1, 4), "Nordstrom–Robinson (Kerdock n = 16) + ±e_i"),
    (24, 4096, Fraction(1, 3), "extended Golay [24,12,8]"),
    (24, 196_560, Fraction(1, 2), "Leech lattice minimal vectors"),
    (8, 240, Fraction(1, 2), "E8 roots"),
    (7, 56, Fraction(1, 3), None),
    (6, 27, Fraction(1, 4), None),
    (5, 16, Fraction(1, 5), None),
    (23, 4600, Fraction(1, 3), None),
    (22, 891, Fraction(1, 4), None),
    (64, 100_000, Fraction(19, 63), "shortened extended BCH [63,17,22]"),  # BCH [63,18,21], extended, shortened
]


@pytest.mark.parametrize("d, k, max_cos, name", TARGETS)
def test_targets(d, k, max_cos, name):
    code = best_structured_code(d, k)
    assert code.d == d and code.size >= k
    assert code.max_cos_bound(k) <= max_cos
    if name:
        assert code.name == name


def test_target_points_measured():
    for d, k in [(64, 1000), (64, 4000), (16, 288), (5, 16)]:
        code = best_structured_code(d, k)
        x = code.points(k)
        assert x.shape == (k, d)
        assert exact_fraction(blocked_max_cos(x)) == code.max_cos_for(k) <= code.max_cos_bound(k)
    code = best_structured_code(64, 100_000)
    x = code.points(100_000)
    rows = np.random.default_rng(0).choice(100_000, 200, replace=False)
    assert exact_fraction(blocked_max_cos(x, rows)) == Fraction(19, 63)
    code = best_structured_code(128, 10_000)
    x = code.points(10_000)
    assert exact_fraction(blocked_max_cos(x)) == Fraction(15, 127) == code.max_cos_for(10_000)


def test_decisions_at_large_sizes_come_from_the_parameters_alone():
    """Deciding builds nothing (its speed is a benchmark's question): each choice holds K points in R^d and no
    structured code with K points has a smaller bound on their max-cos."""
    for d in (64, 256, 1024, 4096):
        for k in (100, 10_000, 1_000_000):
            code = best_structured_code(d, k)
            assert code is not None and code.size >= k and code.native_d <= code.d == d, (d, k)
            assert code.max_cos_bound(k) <= best_structured_code(d // 2, k).max_cos_bound(k), (d, k)  # more room


def test_available_codes_filters_and_embeds():
    codes = available_codes(30, 1000)
    assert all(c.size >= 1000 and c.d == 30 for c in codes)
    assert any(c.name == "extended Golay [24,12,8]" for c in codes)
    assert best_structured_code(3, 10**9) is None
    assert available_codes(4096)  # all of them, nothing built


def test_native_parameters_recomputed_from_points():
    """Every native code up to d = 64 with ≤ 2^16 points: size, unit rows, max-cos from the built points."""
    for code in native_codes(64):
        if code.size > 2**16 or code.family == "lattice" and code.d == 64:
            continue
        x = code.points()
        assert x.shape == (code.size, code.native_d), code.name
        assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-14), code.name
        rows = None if code.size <= 4096 else np.random.default_rng(0).choice(code.size, 100, replace=False)
        if isinstance(code.max_cos, Surd):  # an irrational max-cos (a Paley frame): to float64 rounding
            assert abs(blocked_max_cos(x, rows) - float(code.max_cos)) < 1e-12, code.name
            continue
        measured = exact_fraction(blocked_max_cos(x, rows))
        if code.max_cos_exact:
            assert measured == code.max_cos, code.name
        else:
            assert measured <= code.max_cos, code.name
