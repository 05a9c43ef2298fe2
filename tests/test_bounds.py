"""Theorem 3.9 against an independent high-precision evaluation; lower bounds against known codes."""

import math

import mpmath
import pytest

from spherecodes.bounds import check_sizes, known_optimal, max_cos_lower_bound, theorem_3_9
from spherecodes.constructions import cell_24, cell_600, cross_polytope, e8_roots, regular_polygon, simplex_etf
from spherecodes.errors import SpherecodesError

from conftest import dense_offdiagonal_cos, random_code


def theorem_3_9_mpmath(d, k):
    """Eq. 13 of Jiang et al. (2024) evaluated directly with 60-digit Gamma functions."""
    mpmath.mp.dps = 60
    d, k = mpmath.mpf(d), mpmath.mpf(k)
    lower = mpmath.mpf(1) / 2 * (
        mpmath.sqrt(mpmath.pi) / k * mpmath.gamma((d + 1) / 2) / mpmath.gamma(d / 2 + 1)
    ) ** (2 / (d - 1))
    upper = 2 * (
        2 * mpmath.sqrt(mpmath.pi) / k * mpmath.gamma((d + 1) / 2) / mpmath.gamma(d / 2)
    ) ** (1 / (d - 1))
    return float(lower), float(upper)


@pytest.mark.parametrize(
    "d,k",
    [(2, 10), (3, 12), (10, 100), (64, 1000), (339, 5000), (340, 5000), (341, 5000), (512, 100000),
     (1000, 10**6), (2048, 10**5), (4096, 10**6), (4096, 206)],
)
def test_theorem_3_9_matches_independent_evaluation(d, k):
    b = theorem_3_9(d, k)
    assert b.applicable
    lower, upper = theorem_3_9_mpmath(d, k)
    assert b.lower == pytest.approx(lower, rel=1e-11)
    assert b.upper == pytest.approx(upper, rel=1e-11)
    assert 0 < b.lower < b.upper


@pytest.mark.parametrize("d,k", [(1, 5), (512, 72), (100, 10), (4096, 200 - 3)])
def test_theorem_3_9_not_applicable_outside_its_condition(d, k):
    applicable = d >= 2 and k >= math.sqrt(2 * math.pi * math.sqrt(math.e) * d)
    b = theorem_3_9(d, k)
    assert b.applicable is applicable is False
    assert b.lower is None and b.upper is None


@pytest.mark.parametrize(
    "d,k,optimal_rho",
    [(11, 12, 12 / 11), (20, 21, 21 / 20), (10, 20, 1.0), (16, 30, 1.0)]
    + [(2, k, 1 - math.cos(2 * math.pi / k)) for k in (6, 12, 50)],
)
def test_theorem_3_9_contains_the_known_optimal_rho(d, k, optimal_rho):
    """ETF, cross-polytope and polygon are optimal Softmax Codes (Thm 3.3)."""
    b = theorem_3_9(d, k)
    if b.applicable:
        assert b.lower <= optimal_rho <= b.upper


KNOWN_CODES = [
    (simplex_etf(12, 11), 11, 12),
    (simplex_etf(7, 30), 30, 7),
    (cross_polytope(9, 6), 6, 9),
    (cross_polytope(12, 6), 6, 12),
    (regular_polygon(9), 2, 9),
    (cell_24(), 4, 24),
    (cell_600(), 4, 120),
    (e8_roots(), 8, 240),
    (random_code(50, 5, seed=3), 5, 50),
    (random_code(10, 20, seed=4), 20, 10),
]


@pytest.mark.parametrize("w,d,k", KNOWN_CODES)
def test_max_cos_lower_bound_is_valid_on_known_codes(w, d, k):
    assert max_cos_lower_bound(d, k).value <= dense_offdiagonal_cos(w).max() + 1e-12


@pytest.mark.parametrize(
    "w,d,k",
    [(simplex_etf(12, 11), 11, 12), (cross_polytope(10, 6), 6, 10), (regular_polygon(9), 2, 9),
     (cell_600(), 4, 120), (e8_roots(), 8, 240)],
)
def test_optimal_codes_attain_the_bound(w, d, k):
    result = known_optimal(d, k, float(dense_offdiagonal_cos(w).max()))
    assert result.value
    assert "attains" in result.reason


def test_24_cell_and_random_codes_are_not_claimed_optimal():
    assert not known_optimal(4, 24, 0.5).value  # best known, not proven
    assert not known_optimal(5, 50, float(dense_offdiagonal_cos(random_code(50, 5)).max())).value


@pytest.mark.parametrize("d,k", [(0, 3), (3, 1), (2.5, 3), (3, True), (-1, 4)])
def test_sizes_are_checked(d, k):
    with pytest.raises(SpherecodesError):
        check_sizes(d, k)


@pytest.mark.parametrize("d,k", [(2, 7), (3, 12), (5, 40), (16, 30), (64, 100)])
def test_no_code_has_rho_above_k_over_k_minus_1(d, k):
    """The cap K/(K-1) against certified rho of random and optimised codes in many dimensions."""
    from spherecodes.bounds import simplex_rho_cap
    from spherecodes.certificate import one_vs_rest_distances

    cap = simplex_rho_cap(k)
    for seed in range(3):
        cert = one_vs_rest_distances(random_code(k, d, seed), device="cpu")
        assert cert.rho_upper <= cap
    # The simplex attains it (computed by the certificate, not by the formula).
    assert one_vs_rest_distances(simplex_etf(k, k - 1), device="cpu").rho_lower == pytest.approx(k / (k - 1),
                                                                                                rel=1e-12)


@pytest.mark.parametrize("d,k", [(3, 100), (4, 1000), (8, 10**5), (64, 100), (512, 100000), (100, 10)])
def test_best_upper_is_the_tighter_of_the_theorem_and_k_over_k_minus_1(d, k):
    b = theorem_3_9(d, k)
    cap = k / (k - 1)
    if not b.applicable:
        assert (b.best_upper, b.best_upper_by) == (cap, "simplex K/(K-1)")
        return
    _, upper = theorem_3_9_mpmath(d, k)
    assert b.best_upper == pytest.approx(min(upper, cap), rel=1e-11)
    assert b.best_upper_by == ("Theorem 3.9" if upper < cap else "simplex K/(K-1)")
    assert b.to_dict()["best_upper"] == b.best_upper
