"""The verified Delsarte–Goethals–Seidel LP lower bound on max-cos."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from spherecodes.bounds import (
    _second_derivative_at_one,
    gegenbauer_table,
    lp_certificate,
    lp_max_cos_lower_bound,
    max_cos_lower_bound,
    verify_lp_polynomial,
)
from spherecodes.constructions import cell_24, cell_600, cross_polytope, e8_roots, regular_polygon, simplex_etf

from conftest import dense_offdiagonal_cos, random_code

PHI = (1 + math.sqrt(5)) / 2


def icosahedron() -> np.ndarray:
    """The 12 vertices (0, ±1, ±φ) and their cyclic permutations, normalised."""
    base = [(0.0, a, b * PHI) for a in (1, -1) for b in (1, -1)]
    points = [np.roll(p, shift) for p in base for shift in range(3)]
    w = np.array(points)
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def scipy_gegenbauer(d: int, n: int, t) -> np.ndarray:
    """G_n of R^d from SciPy's own special functions, normalised to G_n(1) = 1."""
    if d == 2:
        return special.eval_chebyt(n, t)
    if d == 3:
        return special.eval_legendre(n, t)
    alpha = (d - 2) / 2
    return special.eval_gegenbauer(n, alpha, t) / special.eval_gegenbauer(n, alpha, 1.0)


def evaluate(d: int, coefficients, t) -> np.ndarray:
    return sum(c * scipy_gegenbauer(d, i, t) for i, c in enumerate(coefficients))


# -------------------------------------------------------------- polynomials


@pytest.mark.parametrize("d", [2, 3, 4, 8, 64, 512])
def test_gegenbauer_table_matches_scipy(d):
    t = np.linspace(-1, 1, 101)
    table = gegenbauer_table(d, 20, t)
    for n in range(21):
        np.testing.assert_allclose(table[n], scipy_gegenbauer(d, n, t), atol=1e-12)


@pytest.mark.parametrize("d", [2, 3, 5, 16])
def test_second_derivative_bound_holds_on_the_interval(d):
    # The verification's Taylor bound assumes max |G_n''| on [-1, 1] is G_n''(1).
    t = np.linspace(-1, 1, 4001)
    bound = _second_derivative_at_one(d, 12)
    for n in range(13):
        coeffs = special.gegenbauer(n, (d - 2) / 2) if d > 2 else special.chebyt(n)
        poly = np.poly1d(coeffs.coeffs / np.polyval(coeffs.coeffs, 1.0))
        second = poly.deriv(2)
        assert abs(second(1.0) - bound[n]) <= 1e-8 * max(1.0, bound[n])
        assert np.max(np.abs(second(t))) <= bound[n] * (1 + 1e-9) + 1e-12


# ------------------------------------------------------------- verification


def test_verification_rejects_a_polynomial_positive_only_between_grid_points():
    # f(t) = eps − (t − a)² in the Legendre basis (t² = (2 P_2 + P_0)/3):
    # positive only within sqrt(eps) = 1e-4 of a, which sits half-way between
    # two points of a 1001-point grid, so the grid alone sees f <= 0.
    s = 0.5
    grid = np.linspace(-1, s, 1001)
    a = 0.5 * (grid[400] + grid[401])
    eps = 1e-8
    coefficients = [eps - a * a - 1 / 3, 2 * a, -2 / 3]
    assert np.max(evaluate(3, coefficients, grid)) < 0
    upper = verify_lp_polynomial(3, s, coefficients)
    assert upper > 0
    assert upper == pytest.approx(eps, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(2, 40), degree=st.integers(1, 12),
       s=st.floats(-0.9, 0.95))
def test_verification_bound_is_above_the_true_maximum(seed, d, degree, s):
    rng = np.random.default_rng(seed)
    coefficients = np.concatenate([[rng.normal()], rng.exponential(size=degree)])
    t = np.linspace(-1, s, 20001)
    true_max = np.max(evaluate(d, coefficients, t))
    upper = verify_lp_polynomial(d, s, coefficients)
    assert upper >= true_max - 1e-12
    if true_max >= 0:  # there it is also close to the maximum
        assert upper <= true_max + 1e-6 * (1 + np.abs(coefficients).sum())


def test_certificate_is_valid_when_checked_independently():
    s = 0.5 - 1e-6
    cert = lp_certificate(8, s)
    f = np.array(cert.coefficients)
    assert f[0] > 0 and np.all(f[1:] >= 0)
    t = np.linspace(-1, s, 200001)
    assert np.max(evaluate(8, f, t)) <= 0
    assert cert.size_bound == pytest.approx(f.sum() / f[0], rel=1e-12)
    assert cert.size_bound < 240  # so no 240 points have inner products <= s


# --------------------------------------------------------- the bound itself


def known_codes():
    yield "etf", simplex_etf(12, 11), 11, 12
    yield "etf", simplex_etf(5, 9), 9, 5
    yield "cross-polytope", cross_polytope(9, 6), 6, 9
    yield "cross-polytope", cross_polytope(8, 4), 4, 8
    yield "polygon", regular_polygon(7), 2, 7
    yield "polygon", regular_polygon(12), 2, 12
    yield "icosahedron", icosahedron(), 3, 12
    yield "24-cell", cell_24(), 4, 24
    yield "600-cell", cell_600(), 4, 120
    yield "E8", e8_roots(), 8, 240
    yield "random", random_code(50, 5, seed=3), 5, 50


@pytest.mark.parametrize("name,w,d,k", list(known_codes()), ids=[c[0] for c in known_codes()])
@pytest.mark.slow
def test_bound_is_valid_on_known_codes(name, w, d, k):
    max_cos = dense_offdiagonal_cos(w).max()
    assert lp_max_cos_lower_bound(d, k).value <= max_cos + 1e-12
    assert max_cos_lower_bound(d, k).value <= max_cos + 1e-12


#: Optimal 3-D Tammes codes: exact max-cos where it has a closed form,
#: otherwise the literature's angle in degrees, rounded to 1e-4.
TAMMES_3D_EXACT = {4: -1 / 3, 5: 0.0, 6: 0.0, 12: 1 / math.sqrt(5)}
TAMMES_3D_ANGLES = {7: 77.8695, 8: 74.8585, 9: 70.5288, 10: 66.1468, 11: 63.4349,
                    13: 57.1367, 14: 55.6706, 24: 43.6908}


@pytest.mark.parametrize("k,max_cos", sorted(TAMMES_3D_EXACT.items()))
def test_bound_is_valid_on_exact_3d_tammes_optima(k, max_cos):
    assert lp_max_cos_lower_bound(3, k).value <= max_cos + 1e-12


@pytest.mark.parametrize("k,angle", sorted(TAMMES_3D_ANGLES.items()))
def test_bound_is_valid_on_the_3d_tammes_table(k, angle):
    smallest_true_cos = math.cos(math.radians(angle + 0.5e-4))
    assert lp_max_cos_lower_bound(3, k).value <= smallest_true_cos + 1e-12


@pytest.mark.parametrize(
    "d,k,optimum",
    [(8, 240, 0.5), (4, 120, (1 + math.sqrt(5)) / 4), (3, 12, 1 / math.sqrt(5))],
    ids=["E8", "600-cell", "icosahedron"],
)
def test_bound_is_tight_on_sharp_configurations(d, k, optimum):
    value = lp_max_cos_lower_bound(d, k).value
    assert optimum - 1e-6 <= value <= optimum


@pytest.mark.parametrize(
    "d,k,reference,digits",
    [(3, 12, 0.4472, 4), (4, 120, 0.8090, 4), (64, 1000, 0.092, 3), (100, 100, -0.0101, 4)],
)
def test_reference_values_from_the_issue(d, k, reference, digits):
    assert round(lp_max_cos_lower_bound(d, k).value, digits) == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("d,ks", [(4, [6, 10, 20, 40, 80, 160]), (16, [20, 100, 500, 5000])])
@pytest.mark.slow
def test_bound_grows_with_k(d, ks):
    values = [lp_max_cos_lower_bound(d, k).value for k in ks]
    assert values == sorted(values)
    assert values[-1] > values[0]


def test_bound_says_nothing_for_two_points_or_one_dimension():
    assert lp_max_cos_lower_bound(5, 2).value == -1.0
    assert lp_max_cos_lower_bound(1, 3).value == -1.0


@pytest.mark.parametrize(
    "d,k,method",
    [(64, 1000, "Delsarte-Goethals-Seidel"), (6, 9, "Rankin"), (11, 12, "simplex"), (8, 240, "E8")],
)
def test_max_cos_lower_bound_names_the_winner(d, k, method):
    best = max_cos_lower_bound(d, k)
    assert method in best.method
    assert best.value >= lp_max_cos_lower_bound(d, k).value
