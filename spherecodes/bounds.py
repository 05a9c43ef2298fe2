"""Bounds on what any K-point code in R^d can achieve.

Two families live here:

* lower bounds on **max-cos** (the Tammes objective): no K unit vectors in R^d
  have a smaller largest pairwise cosine, so a code's distance to the bound is
  a certified optimality gap (classical bounds, and the verified
  Delsarte–Goethals–Seidel linear-programming bound at the end of the file);
* the **Theorem 3.9** bounds of Jiang et al. (Generalized Neural Collapse for a
  Large Number of Classes, Eq. 13) on the best possible one-vs-rest distance ρ,
  with its upper end capped by the simplex's K/(K−1), which no code beats in
  any dimension (:func:`simplex_rho_cap`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from . import heavy, lp_store
from .checks import check_sizes


@dataclass(frozen=True)
class Theorem39Bounds:
    """Bounds on the optimal one-vs-rest distance ρ (Jiang et al. 2024, Theorem 3.9).

    Attributes
    ----------
    lower, upper : float or None
        The theorem's bounds; ``None`` when the theorem does not apply.
    applicable : bool
        Whether ``K >= sqrt(2 pi sqrt(e) d)`` and ``d >= 2``.
    condition : str
        The theorem's condition, spelled out with the numbers of this case.
    best_upper : float
        The tighter of ``upper`` and K/(K−1) (:func:`simplex_rho_cap`), which
        holds for every (d, K); K/(K−1) alone where the theorem does not apply.
    best_upper_by : str
        Which of the two gives ``best_upper``.
    """

    lower: float | None
    upper: float | None
    applicable: bool
    condition: str
    best_upper: float
    best_upper_by: str

    def to_dict(self) -> dict:
        return asdict(self)


#: How :attr:`Theorem39Bounds.best_upper_by` names each bound.
SIMPLEX_CAP = "simplex K/(K-1)"
THEOREM_3_9 = "Theorem 3.9"


def simplex_rho_cap(k: int) -> float:
    """K/(K−1): no K unit vectors in any dimension have a larger ρ.

    ρ = min_k dist_k is at most the distance from w_k to the mean c_k of the
    other K − 1 prototypes (a point of their hull), and
    ``sum_k |w_k - c_k|^2 = (K^3 - K |sum_j w_j|^2) / (K-1)^2 <= K^3/(K-1)^2``,
    so the smallest of the K distances is at most K/(K−1).  The simplex ETF
    (sum zero, all distances equal) attains it.

    Examples
    --------
    >>> simplex_rho_cap(100)
    1.0101010101010102
    """
    return k / (k - 1)


def theorem_3_9(d: int, k: int) -> Theorem39Bounds:
    """Theorem 3.9 bounds on the best one-vs-rest distance ρ of K classes in R^d.

    For ``K >= sqrt(2 pi sqrt(e) d)``::

        lower = 1/2 * [ (sqrt(pi)/K) * Gamma((d+1)/2) / Gamma(d/2 + 1) ]^(2/(d-1))
        upper = 2   * [ (2 sqrt(pi)/K) * Gamma((d+1)/2) / Gamma(d/2) ]^(1/(d-1))

    evaluated through log-gamma, because Γ overflows float64 near d = 340.

    Parameters
    ----------
    d, k : int
        Dimension and number of classes.

    Returns
    -------
    Theorem39Bounds
        With ``applicable=False`` and no theorem numbers outside its condition
        or for d < 2 (the exponent 1/(d-1) is undefined at d = 1); the cap
        K/(K−1) is given in every case, with which bound is the tighter.

    Examples
    --------
    >>> b = theorem_3_9(512, 100000)
    >>> b.applicable, round(b.lower, 4), round(b.upper, 4)
    (True, 0.4739, 1.971)
    >>> round(b.best_upper, 6), b.best_upper_by
    (1.00001, 'simplex K/(K-1)')
    >>> theorem_3_9(512, 10).applicable
    False
    """
    d, k = check_sizes(d, k)
    threshold = math.sqrt(2 * math.pi * math.sqrt(math.e) * d)
    condition = f"K >= sqrt(2*pi*sqrt(e)*d) = {threshold:.4f} and d >= 2"
    cap = simplex_rho_cap(k)
    if d < 2 or k < threshold:
        return Theorem39Bounds(None, None, False, condition, cap, SIMPLEX_CAP)
    log_lower_base = (
        0.5 * math.log(math.pi) - math.log(k) + math.lgamma((d + 1) / 2) - math.lgamma(d / 2 + 1)
    )
    log_upper_base = (
        math.log(2) + 0.5 * math.log(math.pi) - math.log(k) + math.lgamma((d + 1) / 2) - math.lgamma(d / 2)
    )
    lower = 0.5 * math.exp(2.0 / (d - 1) * log_lower_base)
    upper = 2.0 * math.exp(log_upper_base / (d - 1))
    best_upper, best_by = (float(upper), THEOREM_3_9) if upper < cap else (cap, SIMPLEX_CAP)
    return Theorem39Bounds(float(lower), float(upper), True, condition, best_upper, best_by)


@dataclass(frozen=True)
class MaxCosLowerBound:
    """A value that the max-cos of every K-point code in R^d is at least.

    Attributes
    ----------
    value : float
        The bound.
    method : str
        Which theorem gives it.
    """

    value: float
    method: str

    def to_dict(self) -> dict:
        return {"value": self.value, "method": self.method}


def max_cos_lower_bound(d: int, k: int) -> MaxCosLowerBound:
    """The best lower bound on max-cos that spherecodes can prove for (d, K).

    * d = 1: two points are antipodal (max-cos −1); three or more must repeat a
      direction (max-cos 1).
    * d = 2: the regular K-gon is optimal, so max-cos >= cos(2π/K).
    * the sharp configurations of :data:`SHARP_CONFIGURATIONS` attain
      Levenshtein's bound, which is then the exact optimum.
    * K <= d + 1: the simplex bound, max-cos >= −1/(K−1) (the Gram matrix is
      positive semidefinite, so its entries cannot all be below that).
    * K >= d + 2: Rankin's bound, max-cos >= 0.
    * d >= 3: the verified Delsarte–Goethals–Seidel LP bound
      (:func:`lp_max_cos_lower_bound`) where it is larger than the above;
      ``method`` says which bound won.

    Examples
    --------
    >>> max_cos_lower_bound(11, 12)
    MaxCosLowerBound(value=-0.09090909090909091, method='simplex bound -1/(K-1)')
    >>> b = max_cos_lower_bound(64, 1000)
    >>> round(b.value, 4), b.method.startswith("Delsarte-Goethals-Seidel")
    (0.0916, True)
    """
    d, k = check_sizes(d, k)
    if d == 1:
        if k == 2:
            return MaxCosLowerBound(-1.0, "simplex bound -1/(K-1)")
        return MaxCosLowerBound(1.0, "d = 1: three or more points repeat a direction")
    if d == 2:
        return MaxCosLowerBound(math.cos(2 * math.pi / k), "regular K-gon is optimal for d = 2")
    sharp = sharp_optimum(d, k)
    if sharp is not None:
        return sharp
    if k <= d + 1:
        classical = MaxCosLowerBound(-1.0 / (k - 1), "simplex bound -1/(K-1)")
    else:
        classical = MaxCosLowerBound(0.0, "Rankin bound (K >= d+2)")
    if k <= 2 * d:
        # Attained (simplex ETF, cross-polytope vertices): no bound can exceed
        # it, so the LP (and loading its solver) is skipped.
        return classical
    lp = lp_max_cos_lower_bound(d, k)
    return lp if lp.value > classical.value else classical


#: Sources of :data:`SHARP_CONFIGURATIONS`.
LEVENSHTEIN = "Levenshtein 1979, 1992; Cohn & Kumar 2007, Table 1"
KISSING = "Levenshtein 1979; Odlyzko & Sloane 1979"

#: Sharp configurations (m inner products, a spherical (2m − 1)-design; Cohn &
#: Kumar 2007, Table 1) beyond the simplex and cross-polytope: (d, K) →
#: (max-cos, name, source, inner products).  They meet Levenshtein's
#: linear-programming bound, so their max-cos is the exact optimum for their
#: (d, K); the inner products other than 1, where rational, give that bound
#: exactly (:func:`sharp_lp_size_bound`).
SHARP_CONFIGURATIONS = {
    (3, 12): (1 / math.sqrt(5), "icosahedron", LEVENSHTEIN, None),
    (4, 120): ((1 + math.sqrt(5)) / 4, "600-cell", LEVENSHTEIN, None),
    (5, 16): (0.2, "Clebsch configuration", LEVENSHTEIN, ("-3/5", "1/5")),
    (6, 27): (0.25, "Schläfli configuration", LEVENSHTEIN, ("-1/2", "1/4")),
    (7, 56): (1 / 3, "28 antipodal lines of E7", LEVENSHTEIN, ("-1", "-1/3", "1/3")),
    (8, 240): (0.5, "E8 root system", KISSING, ("-1", "-1/2", "0", "1/2")),
    (21, 162): (1 / 7, "SRG(162, 56, 10, 24) configuration", LEVENSHTEIN, ("-2/7", "1/7")),
    (22, 100): (1 / 11, "Higman-Sims configuration", LEVENSHTEIN, ("-4/11", "1/11")),
    (22, 275): (1 / 6, "McLaughlin configuration", LEVENSHTEIN, ("-1/4", "1/6")),
    (22, 891): (0.25, "Leech-derived (22, 891) code", LEVENSHTEIN, ("-1/2", "-1/8", "1/4")),
    (23, 552): (0.2, "276 equiangular lines", LEVENSHTEIN, ("-1", "-1/5", "1/5")),
    (23, 4600): (1 / 3, "Leech-derived (23, 4600) code", LEVENSHTEIN, ("-1", "-1/3", "0", "1/3")),
    (24, 196560): (0.5, "Leech lattice minimal vectors", KISSING,
                   ("-1", "-1/2", "-1/4", "0", "1/4", "1/2")),
}


def _isotropic_sharp_configurations(largest_d: int = 10**5) -> None:
    """Add the isotropic-subspaces codes: (q + 1)(q³ + 1) points in R^(q(q² − q + 1)), max-cos 1/q², q a prime power."""
    q = 2
    while q * (q * q - q + 1) <= largest_d:
        smallest = next(p for p in range(2, q + 1) if q % p == 0)
        if smallest ** round(math.log(q, smallest)) == q:  # q is a power of its smallest prime factor
            SHARP_CONFIGURATIONS.setdefault(
                (q * (q * q - q + 1), (q + 1) * (q**3 + 1)),
                (1 / q**2, f"isotropic subspaces code (q = {q})", LEVENSHTEIN, (f"-1/{q}", f"1/{q * q}")),
            )
        q += 1


_isotropic_sharp_configurations()


@functools.lru_cache(maxsize=None)
def sharp_optimum(d: int, k: int) -> MaxCosLowerBound | None:
    """The optimum max-cos of (d, K) when a sharp configuration of :data:`SHARP_CONFIGURATIONS` has that size.

    For the entries with rational inner products the bound is proven on the
    spot, in exact rationals (:func:`sharp_lp_size_bound` must equal K); the
    icosahedron and the 600-cell rest on the literature. Nothing is solved
    numerically, so this is cheap enough to ask before any work.

    Examples
    --------
    >>> sharp_optimum(22, 275).value == 1 / 6
    True
    >>> sharp_optimum(22, 276) is None
    True
    """
    if (d, k) not in SHARP_CONFIGURATIONS:
        return None
    value, name, source, inner_products = SHARP_CONFIGURATIONS[(d, k)]
    if inner_products is not None and sharp_lp_size_bound(d, inner_products) != k:
        raise ArithmeticError(f"the Levenshtein bound of the {name} is not {k}")
    how = "exact in rationals; " if inner_products is not None else ""
    return MaxCosLowerBound(value, f"Levenshtein LP bound ({how}{source}), met by the {name}")


def sharp_lp_size_bound(d: int, inner_products) -> Fraction | None:
    """The Delsarte–Goethals–Seidel size bound of Levenshtein's polynomial for a sharp configuration, exactly.

    For inner products a_1 < … < a_m = s (other than 1), the polynomial
    f(t) = (t + 1)^ε (t − s) Π (t − a_i)², the product over the a_i other
    than s and −1 (ε = 1 when −1 is one of them), is ≤ 0 on [−1, s]. When its
    Gegenbauer coefficients f_i are all ≥ 0 (f_0 > 0), every code in R^d with
    inner products ≤ s has at most f(1)/f_0 points: computed here in exact
    rationals. A code that meets it is optimal (Levenshtein 1979).

    Returns
    -------
    Fraction or None
        f(1)/f_0, or None when a coefficient is negative (no bound from f).

    Examples
    --------
    >>> sharp_lp_size_bound(8, ["-1", "-1/2", "0", "1/2"])   # E8: the kissing number 240
    Fraction(240, 1)
    """
    values = sorted(Fraction(a) for a in inner_products)
    s = values[-1]
    poly = [Fraction(1)]  # coefficients, lowest degree first

    def times(root):  # poly · (t − root)
        return [(poly[i - 1] if i else 0) - root * (poly[i] if i < len(poly) else 0) for i in range(len(poly) + 1)]

    poly = times(s)
    for a in values[:-1]:
        poly = times(a)
        if a != -1:
            poly = times(a)
    coefficients = _gegenbauer_coefficients_exact(d, poly)
    if coefficients[0] <= 0 or any(c < 0 for c in coefficients[1:]):
        return None
    return sum(poly) / coefficients[0]


def _gegenbauer_coefficients_exact(d: int, poly: list) -> list:
    """Coefficients of a polynomial (monomial basis) in the Gegenbauer basis G_0 … G_n of R^d, G_i(1) = 1, exactly."""
    n = len(poly) - 1
    basis = [[Fraction(1)], [Fraction(0), Fraction(1)]]
    for i in range(1, n):
        # (i + d − 2) G_{i+1} = (2i + d − 2) t G_i − i G_{i−1}
        shifted = [Fraction(0)] + basis[i]
        prev = basis[i - 1] + [Fraction(0)] * 2
        basis.append([((2 * i + d - 2) * shifted[j] - i * prev[j]) / (i + d - 2) for j in range(i + 2)])
    rest = list(poly)
    coefficients = [Fraction(0)] * (n + 1)
    for i in range(n, -1, -1):
        coefficients[i] = rest[i] / basis[i][i]
        for j in range(i + 1):
            rest[j] -= coefficients[i] * basis[i][j]
    return coefficients


#: Slack within which a code's max-cos counts as attaining a lower bound.
OPTIMALITY_TOL = 1e-9


@dataclass(frozen=True)
class KnownOptimal:
    """Whether a code's max-cos is provably optimal, and why (or why not).

    Attributes
    ----------
    value : bool
    reason : str
    gap : float
        max-cos minus the best proven lower bound (0 or more for a valid code).
    """

    value: bool
    reason: str
    gap: float

    def to_dict(self) -> dict:
        return {"value": self.value, "reason": self.reason}


def known_optimal(d: int, k: int, max_cos: float, tol: float = OPTIMALITY_TOL) -> KnownOptimal:
    """Decide optimality of a code's max-cos against the best proven lower bound.

    A code whose max-cos is within ``tol`` of a lower bound that no K-point code
    in R^d can beat is optimal for the Tammes problem, whatever made it.

    Examples
    --------
    >>> known_optimal(11, 12, -1 / 11).value
    True
    >>> known_optimal(6, 9, 0.145).reason
    'max-cos is 0.145 above the Rankin bound (K >= d+2)'
    """
    bound = max_cos_lower_bound(d, k)
    gap = float(max_cos - bound.value)
    if gap <= tol:
        return KnownOptimal(True, f"attains the {bound.method}", gap)
    return KnownOptimal(False, f"max-cos is {gap:.3g} above the {bound.method}", gap)


# --------------------------------------------------------------------------
# The Delsarte–Goethals–Seidel linear-programming bound on max-cos (:class:`LPCertificate`;
# docs/certificate.md, "3. The LP lower bound on max-cos")

#: Largest polynomial degree the LP bound uses.  Degree 11 suffices for the
#: 600-cell and 7 for E8; higher degrees gain little for the sizes spherecodes
#: builds and make the Gegenbauer columns of the LP badly scaled for large d.
LP_MAX_DEGREE = 24

#: The search for the largest provable s stops when its bracket is this narrow.
LP_S_TOL = 1e-10

#: Rounds of the exchange method per LP (each adds the points where f pokes
#: above 0 between grid points and solves again).
LP_EXCHANGE_ROUNDS = 8

#: The exchange method stops once f exceeds 0 by at most this much (f_0 = 1),
#: the order of HiGHS's feasibility tolerance; what is left goes into the
#: shift δ of :func:`lp_certificate` and raises the size bound by about
#: that fraction.
LP_EXCURSION = 1e-7

#: The search also stops once a verified size bound is within this fraction
#: of K: closer than that, the LP's own rounding decides the outcome.
LP_SIZE_RTOL = 1e-6

#: LP solves (each with its exchange rounds) the search may spend.
LP_MAX_SOLVES = 40


@dataclass(frozen=True)
class LPCertificate:
    """A verified Delsarte–Goethals–Seidel polynomial.

    ``f(t) = f_0 + Σ_{i>=1} f_i G_i(t)`` with ``f_0 > 0``, ``f_i >= 0`` and
    ``f(t) <= 0`` on ``[−1, s]`` (checked by :func:`verify_lp_polynomial`), so
    every code with all inner products ``<= s`` has at most
    ``size_bound = f(1)/f_0`` points.

    Attributes
    ----------
    d : int
    s : float
    coefficients : tuple of float
        ``(f_0, f_1, …, f_D)``.
    size_bound : float
        ``f(1)/f_0``, rounded upwards.
    """

    d: int
    s: float
    coefficients: tuple
    size_bound: float


def gegenbauer_table(d: int, degree: int, t) -> np.ndarray:
    """Normalised Gegenbauer polynomials ``G_0 … G_degree`` of R^d at the points ``t``.

    ``G_i(1) = 1``: Legendre polynomials for d = 3, Chebyshev ``T_i`` for
    d = 2.  Three-term recurrence
    ``(i + d − 2) G_{i+1} = (2i + d − 2) t G_i − i G_{i−1}``, stable in float64
    on [−1, 1] because ``|G_i| <= 1`` there.

    Returns
    -------
    ndarray, shape (degree + 1, len(t))

    Examples
    --------
    >>> gegenbauer_table(3, 2, [0.5, 1.0]).tolist()  # Legendre: P_2(1/2) = -1/8
    [[1.0, 1.0], [0.5, 1.0], [-0.125, 1.0]]
    """
    return _gegenbauer_derivatives(d, degree, t, 0)[0]


def _gegenbauer_derivatives(d: int, degree: int, t, order: int) -> list[np.ndarray]:
    """``[G, G', …]`` up to the given derivative order, by the differentiated recurrence.

    The k-th derivative of ``(i+d−2) G_{i+1} = (2i+d−2) t G_i − i G_{i−1}`` is
    ``(i+d−2) G_{i+1}^{(k)} = (2i+d−2) (t G_i^{(k)} + k G_i^{(k−1)}) − i G_{i−1}^{(k)}``.
    """
    t = np.asarray(t, dtype=np.float64).reshape(-1)
    tables = []
    for k in range(order + 1):
        table = np.zeros((degree + 1, t.size))
        if k == 0:
            table[0] = 1.0
        if degree >= 1:
            table[1] = t if k == 0 else (1.0 if k == 1 else 0.0)
        lower = tables[k - 1] if k else None
        for i in range(1, degree):
            term = t * table[i] + (k * lower[i] if k else 0.0)
            table[i + 1] = ((2 * i + d - 2) * term - i * table[i - 1]) / (i + d - 2)
        tables.append(table)
    return tables


def _second_derivative_at_one(d: int, degree: int) -> np.ndarray:
    """``G_i''(1)``, the largest value of ``|G_i''|`` on [−1, 1] (d >= 2).

    ``G_i''`` is a positive multiple of the Gegenbauer polynomial with
    parameter λ + 2 (λ = (d−2)/2), whose absolute value peaks at t = ±1;
    ``G_i'(1) = i(i+d−2)/(d−1)`` and ``G_i''(1) = G_i'(1)(i−1)(i+d−1)/(d+1)``.
    """
    i = np.arange(degree + 1, dtype=np.float64)
    return i * (i + d - 2) * (i - 1) * (i + d - 1) / ((d - 1) * (d + 1))


def _rounding_allowance(degree: int, coefficient_sum: float) -> float:
    """Bound on the float64 error of evaluating ``f`` or ``f'`` by the recurrence.

    With ``|G_i| <= 1`` on [−1, 1] each step of the recurrence adds a few
    unit roundoffs and earlier errors are not amplified (the recurrence is
    evaluated in its stable, oscillatory region); ``8 (D + 1)²`` roundoffs per
    unit of ``Σ |f_i|`` is a generous margin over that.
    """
    return 8.0 * (degree + 1) ** 2 * np.finfo(np.float64).eps * (1.0 + coefficient_sum)


def verify_lp_polynomial(d: int, s: float, coefficients, *, max_cells: int = 2_000_000) -> float:
    """A rigorous upper bound on ``max f`` over ``[−1, s]``.

    ``f(t) = Σ_i coefficients[i] G_i(t)``.  The interval is covered by cells
    of centre c and half-width r on which Taylor's theorem gives
    ``f(t) <= f(c) + |f'(c)| r + M r²/2`` with ``M = Σ |f_i| G_i''(1)`` bounding
    ``|f''|``; cells whose bound is not yet within rounding of the largest
    value seen (or of 0) are halved.  Evaluation errors are covered by
    :func:`_rounding_allowance`.  A polynomial is an LP certificate for s
    only if the result is ``<= 0`` (or after lowering ``f_0`` by it).

    Returns
    -------
    float
        ``U >= max_{[−1, s]} f``, within a few rounding allowances of the true
        maximum when that is >= 0; ``inf`` if ``max_cells`` would be exceeded.

    Examples
    --------
    ``f(t) = t − 1/2`` (``−½ G_0 + G_1``) is at most 0 on [−1, 1/2]; ``f(t) = t``
    reaches 1/2 there:

    >>> verify_lp_polynomial(3, 0.5, [-0.5, 1.0]) <= 1e-12
    True
    >>> round(verify_lp_polynomial(3, 0.5, [0.0, 1.0]), 9)
    0.5
    """
    coefficients = np.asarray(coefficients, dtype=np.float64)
    degree = coefficients.size - 1
    allowance = _rounding_allowance(degree, float(np.abs(coefficients).sum()))
    curvature = float(np.abs(coefficients) @ _second_derivative_at_one(d, degree)) if degree >= 2 else 0.0
    cells = 1024
    half = (s + 1.0) / (2 * cells)
    centres = -1.0 + half * (2 * np.arange(cells) + 1)
    seen = -math.inf  # largest evaluated value of f
    upper = -math.inf  # largest bound over the settled cells
    while centres.size:
        value, slope = _gegenbauer_derivatives(d, degree, centres, 1)
        f = coefficients @ value
        seen = max(seen, float(f.max()))
        bound = f + (np.abs(coefficients @ slope) + allowance) * half + 0.5 * curvature * half * half + allowance
        # A cell is settled once its bound is within rounding of the largest
        # value seen so far (or of zero): halving it could not lower U much.
        settled = bound <= max(seen, 0.0) + 2 * allowance
        if settled.any():
            upper = max(upper, float(bound[settled].max()))
        centres = centres[~settled]
        if centres.size * 2 > max_cells:
            return math.inf
        half /= 2
        centres = np.concatenate([centres - half, centres + half])
    return upper


def _chebyshev_points(a: float, b: float, n: int) -> np.ndarray:
    """n Chebyshev points of the second kind on [a, b], endpoints included."""
    return a + (b - a) * (1.0 - np.cos(np.pi * np.arange(n) / (n - 1))) / 2.0


def _solve_lp(d: int, s: float, degree: int, hints: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """LP-optimal ``(1, f_1, …, f_D)`` for f <= 0 on [−1, s], and the points it touches.

    Minimises ``f(1) = 1 + Σ f_i`` subject to ``f_i >= 0`` and ``f(t) <= 0`` at
    the points of a grid.  Between grid points the optimum pokes above 0 near
    its double roots; those points are found (local maxima, polished by
    Newton's method on f') and added to the grid, and the LP solved again (an
    exchange method).  ``hints`` are such points from a nearby s, which makes
    the first solve nearly exact.  Whatever excursion is left is measured,
    not assumed, by :func:`verify_lp_polynomial`.

    Returns ``(None, hints)`` when the LP is infeasible (no polynomial of this
    degree works for s).
    """
    linprog = heavy.scipy_optimize().linprog

    base = _chebyshev_points(-1.0, s, 12 * degree)
    probe = _chebyshev_points(-1.0, s, 40 * degree + 200)
    probe_table = gegenbauer_table(d, degree, probe)
    grid = np.union1d(base, hints[(hints >= -1.0) & (hints <= s)])
    coefficients, peaks = None, np.empty(0)
    for _ in range(LP_EXCHANGE_ROUNDS):
        result = linprog(c=np.ones(degree), A_ub=gegenbauer_table(d, degree, grid)[1:].T, b_ub=-np.ones(grid.size),
                         bounds=(0, None), method="highs")
        if result.status != 0:
            break
        coefficients = np.concatenate([[1.0], np.clip(result.x, 0.0, None)])
        peaks = _polished_maxima(d, coefficients, probe, coefficients @ probe_table)
        heights = coefficients @ gegenbauer_table(d, degree, peaks)
        poking = peaks[heights > LP_EXCURSION]
        # The touching points (double roots) are the hints for a nearby s.
        peaks = peaks[heights > -1e-3]
        if poking.size == 0:
            break
        grid = np.union1d(grid, poking)
    return coefficients, peaks


def _polished_maxima(d: int, coefficients: np.ndarray, t: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Local maxima of f from samples, refined by Newton steps on f' = 0."""
    inner = np.flatnonzero((values[1:-1] >= values[:-2]) & (values[1:-1] >= values[2:])) + 1
    found = t[inner]
    lower, upper = t[inner - 1], t[inner + 1]
    degree = coefficients.size - 1
    for _ in range(4):
        _, first, second = _gegenbauer_derivatives(d, degree, found, 2)
        slope, curve = coefficients @ first, coefficients @ second
        step = np.where(curve < 0, -slope / np.where(curve < 0, curve, -1.0), 0.0)
        found = np.clip(found + step, lower, upper)
    ends = [x for x, v in ((t[0], values[0]), (t[-1], values[-1])) if v > 0]
    return np.concatenate([found, ends])


def lp_certificate(d: int, s: float, degree: int = LP_MAX_DEGREE, hints=None) -> LPCertificate | None:
    """A verified LP polynomial for inner products in [−1, s], or None.

    Solves the LP (:func:`_solve_lp`), bounds ``max f`` on [−1, s] rigorously
    with :func:`verify_lp_polynomial`, and lowers the constant term by that
    bound ``δ`` so that ``f − δ <= 0`` on the whole interval (``f_0 − δ > 0``
    is checked).  The size bound ``(f(1) − δ)/(f_0 − δ)`` is rounded upwards.

    Examples
    --------
    E8's 240 roots meet at inner products <= 1/2, and no code does better:

    >>> cert = lp_certificate(8, 0.5 - 1e-6)
    >>> 239 < cert.size_bound < 240
    True
    """
    if d < 2 or not -1.0 <= s < 1.0:
        return None
    coefficients, _ = _solve_lp(d, s, degree, np.asarray([] if hints is None else hints, dtype=np.float64))
    return None if coefficients is None else _certify(d, s, coefficients)


def _certify(d: int, s: float, coefficients: np.ndarray) -> LPCertificate | None:
    """Verify and shift LP coefficients into a certificate (see :func:`lp_certificate`)."""
    shift = max(verify_lp_polynomial(d, s, coefficients), 0.0)
    if not shift < 0.5 * coefficients[0]:
        return None
    coefficients = coefficients.copy()
    coefficients[0] -= shift
    value_at_one = math.fsum(coefficients)  # every G_i(1) = 1
    size_bound = value_at_one / coefficients[0] * (1.0 + 8 * np.finfo(np.float64).eps)
    return LPCertificate(d=d, s=float(s), coefficients=tuple(float(c) for c in coefficients), size_bound=float(size_bound))


@dataclass(frozen=True)
class LPSearch:
    """What :func:`search_lp_bound` found.

    Attributes
    ----------
    value : float
        The largest s found whose verified certificate bounds the size of
        codes with inner products <= s below K.
    coefficients : tuple of float or None
        The LP's polynomial at ``value`` as solved, before the shift of
        :func:`lp_certificate` (the same check then gives the same
        certificate again); None for the trivial value −1.
    solves : int
        LPs solved.
    """

    value: float
    coefficients: tuple | None
    solves: int


def search_lp_bound(d: int, k: int) -> LPSearch:
    """Search for the largest s whose verified LP certificate proves that fewer than K points fit.

    A safeguarded regula falsi (Illinois) on ``log size_bound(s) − log K``
    over a bracket whose lower end always carries a verified certificate
    (:func:`lp_certificate`), so the value is proven whatever the LP solver
    does.  :func:`lp_max_cos_lower_bound` runs it once per size and keeps
    the result.

    Examples
    --------
    >>> found = search_lp_bound(8, 240)   # E8 is optimal: 1/2
    >>> round(found.value, 6), len(found.coefficients), found.solves > 0
    (0.5, 25, True)
    """
    d, k = check_sizes(d, k)
    if d < 2 or k <= 2:
        return LPSearch(-1.0, None, 0)
    target = math.log(k)
    # At s = −1 the polynomial 1 + t proves that at most 2 points fit.
    low, g_low = -1.0, math.log(2.0) - target
    high, g_high = 1.0, math.inf
    size_low = 2.0  # the verified size bound at low (g_low may be halved)
    proof = None  # the LP's polynomial at low
    hints = np.empty(0)
    last_side = 0
    solves = 0
    for _ in range(LP_MAX_SOLVES):
        if high - low <= LP_S_TOL or size_low > k * (1 - LP_SIZE_RTOL):
            break
        if math.isfinite(g_high):
            s = (low * g_high - high * g_low) / (g_high - g_low)
            # Safeguard: stay clear of the ends so the bracket always shrinks.
            margin = 1e-3 * (high - low)
            s = min(max(s, low + margin), high - margin)
        else:
            s = 0.5 * (low + high)
        coefficients, hints = _solve_lp(d, s, LP_MAX_DEGREE, hints)
        solves += 1
        certificate = None if coefficients is None else _certify(d, s, coefficients)
        if certificate is not None and certificate.size_bound < k:
            low, size_low, proof = s, certificate.size_bound, coefficients
            g_low = math.log(size_low) - target
            if last_side < 0:
                g_high /= 2  # Illinois: halve the stale end's value
            last_side = -1
        else:
            size = math.inf if certificate is None else certificate.size_bound
            high, g_high = s, max(math.log(size) - target, 1e-300) if math.isfinite(size) else math.inf
            if last_side > 0:
                g_low /= 2
            last_side = 1
    return LPSearch(float(low), None if proof is None else tuple(float(c) for c in proof), solves)


def verify_lp_bound(d: int, k: int, s: float, coefficients) -> bool:
    """Whether a polynomial (:class:`LPSearch`'s ``coefficients``, as stored) proves that K points in R^d have
    max-cos above s: the signs the LP guarantees (f_0 > 0, f_i >= 0), then the check the search made.

    That check bounds ``max f`` on [−1, s] rigorously (:func:`verify_lp_polynomial`), lowers f_0 by it and
    needs the size bound ``f(1)/f_0`` below K (:func:`lp_certificate`); a few milliseconds.

    Examples
    --------
    >>> found = search_lp_bound(8, 240)
    >>> verify_lp_bound(8, 240, found.value, found.coefficients)
    True
    >>> verify_lp_bound(8, 240, found.value + 1e-4, found.coefficients)   # not what this polynomial proves
    False
    """
    f = np.asarray(coefficients, dtype=np.float64)
    if not (-1.0 <= s < 1.0 and f.size == LP_MAX_DEGREE + 1 and np.isfinite(f).all() and f[0] > 0
            and (f[1:] >= 0).all()):
        return False
    certificate = _certify(d, s, f)
    return certificate is not None and certificate.size_bound < k


@functools.lru_cache(maxsize=1024)
def lp_max_cos_lower_bound(d: int, k: int) -> MaxCosLowerBound:
    """The Delsarte–Goethals–Seidel LP bound: every K-point code in R^d has max-cos above it.

    The value of :func:`search_lp_bound`, found once per size: a stored
    record (:mod:`spherecodes.lp_store`) whose polynomial verifies again
    here, else searched, and cached.  For d = 1 or K = 2 the LP says nothing
    beyond max-cos >= −1.

    Examples
    --------
    >>> round(lp_max_cos_lower_bound(8, 240).value, 6)  # E8 is optimal: 1/2
    0.5
    >>> lp_max_cos_lower_bound(3, 12).value <= 1 / 5 ** 0.5  # the icosahedron
    True
    """
    d, k = check_sizes(d, k)
    if d < 2 or k <= 2:
        return MaxCosLowerBound(-1.0, "trivial bound -1 (the LP bound needs d >= 2 and K >= 3)")
    method = f"Delsarte-Goethals-Seidel LP bound (degree <= {LP_MAX_DEGREE}, verified)"
    for record in lp_store.known_records(d, k, LP_MAX_DEGREE):
        if verify_lp_bound(d, k, record.value, record.coefficients):
            return MaxCosLowerBound(record.value, method)
    found = search_lp_bound(d, k)
    if found.coefficients is not None:
        lp_store.remember(d, k, LP_MAX_DEGREE, found.value, found.coefficients)
    return MaxCosLowerBound(found.value, method)
