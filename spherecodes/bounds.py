"""Bounds on what any K-point code in R^d can achieve.

Two families live here:

* lower bounds on **max-cos** (the Tammes objective): no K unit vectors in R^d
  have a smaller largest pairwise cosine, so a code's distance to the bound is
  a certified optimality gap;
* the **Theorem 3.9** bounds of Jiang et al. (Generalized Neural Collapse for a
  Large Number of Classes, Eq. 13) on the best possible one-vs-rest distance ρ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import gammaln

from .errors import SpherecodesError


def check_sizes(d: int, k: int) -> None:
    """Refuse dimensions and class counts that define no code.

    Parameters
    ----------
    d, k : int
        Dimension (at least 1) and number of prototypes (at least 2).

    Raises
    ------
    SpherecodesError
        If either is not an integer in range.

    Examples
    --------
    >>> check_sizes(3, 12)
    >>> check_sizes(3, 1)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: K must be an integer >= 2 (one prototype per class, at least two classes), got 1
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise SpherecodesError(f"d must be a positive integer, got {d!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise SpherecodesError(
            f"K must be an integer >= 2 (one prototype per class, at least two classes), got {k!r}"
        )


@dataclass(frozen=True)
class Theorem39Bounds:
    """Bounds on the optimal one-vs-rest distance ρ (seed 003, Theorem 3.9).

    Attributes
    ----------
    lower, upper : float or None
        The bounds; ``None`` when the theorem does not apply.
    applicable : bool
        Whether ``K >= sqrt(2 pi sqrt(e) d)`` and ``d >= 2``.
    condition : str
        The theorem's condition, spelled out with the numbers of this case.
    """

    lower: float | None
    upper: float | None
    applicable: bool
    condition: str

    def to_dict(self) -> dict:
        return {
            "lower": self.lower,
            "upper": self.upper,
            "applicable": self.applicable,
            "condition": self.condition,
        }


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
        With ``applicable=False`` and no numbers outside the theorem's condition
        or for d < 2 (the exponent 1/(d-1) is undefined at d = 1).

    Examples
    --------
    >>> b = theorem_3_9(512, 100000)
    >>> b.applicable, round(b.lower, 4), round(b.upper, 4)
    (True, 0.4739, 1.971)
    >>> theorem_3_9(512, 10).applicable
    False
    """
    check_sizes(d, k)
    threshold = math.sqrt(2 * math.pi * math.sqrt(math.e) * d)
    condition = f"K >= sqrt(2*pi*sqrt(e)*d) = {threshold:.4f} and d >= 2"
    if d < 2 or k < threshold:
        return Theorem39Bounds(None, None, False, condition)
    log_lower_base = (
        0.5 * math.log(math.pi) - math.log(k) + gammaln((d + 1) / 2) - gammaln(d / 2 + 1)
    )
    log_upper_base = (
        math.log(2) + 0.5 * math.log(math.pi) - math.log(k) + gammaln((d + 1) / 2) - gammaln(d / 2)
    )
    lower = 0.5 * math.exp(2.0 / (d - 1) * log_lower_base)
    upper = 2.0 * math.exp(log_upper_base / (d - 1))
    return Theorem39Bounds(float(lower), float(upper), True, condition)


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
    * K <= d + 1: the simplex bound, max-cos >= −1/(K−1) (the Gram matrix is
      positive semidefinite, so its entries cannot all be below that).
    * K >= d + 2: Rankin's bound, max-cos >= 0.

    Examples
    --------
    >>> max_cos_lower_bound(11, 12)
    MaxCosLowerBound(value=-0.09090909090909091, method='simplex bound -1/(K-1)')
    >>> max_cos_lower_bound(64, 1000).value
    0.0
    """
    check_sizes(d, k)
    if d == 1:
        if k == 2:
            return MaxCosLowerBound(-1.0, "simplex bound -1/(K-1)")
        return MaxCosLowerBound(1.0, "d = 1: three or more points repeat a direction")
    if d == 2:
        return MaxCosLowerBound(math.cos(2 * math.pi / k), "regular K-gon is optimal for d = 2")
    if (d, k) in SHARP_CONFIGURATIONS:
        value, name = SHARP_CONFIGURATIONS[(d, k)]
        return MaxCosLowerBound(value, f"Levenshtein LP bound, attained by the {name}")
    if k <= d + 1:
        return MaxCosLowerBound(-1.0 / (k - 1), "simplex bound -1/(K-1)")
    return MaxCosLowerBound(0.0, "Rankin bound (K >= d+2)")


#: Sharp configurations (Cohn & Kumar 2007) beyond the simplex and cross-polytope:
#: codes that attain Levenshtein's linear-programming bound, so their max-cos is
#: the exact optimum for their (d, K).
SHARP_CONFIGURATIONS = {
    (3, 12): (1 / math.sqrt(5), "icosahedron"),
    (4, 120): ((1 + math.sqrt(5)) / 4, "600-cell"),
    (8, 240): (0.5, "E8 root system"),
}

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
    >>> known_optimal(64, 1000, 0.145).reason
    'no proof of optimality: max-cos is 0.145 above the Rankin bound (K >= d+2)'
    """
    bound = max_cos_lower_bound(d, k)
    gap = float(max_cos - bound.value)
    if gap <= tol:
        return KnownOptimal(True, f"attains the {bound.method}", gap)
    return KnownOptimal(
        False, f"no proof of optimality: max-cos is {gap:.3g} above the {bound.method}", gap
    )
