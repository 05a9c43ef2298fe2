"""Line packings: K lines through the origin of R^d, as far from each other as possible.

A line is a unit vector up to sign, so the objective is the **coherence**
``max_{i != j} |<w_i, w_j>|`` (Equiangular Basis Vectors and frame theory
minimise it), not max-cos: a code and its antipodes have the same lines.
This module holds what the line problem has of its own: its statistics
(:func:`max_abs_cos`, :func:`line_report`), its lower bounds (Welch 1974;
Conway, Hardin & Sloane 1996; :func:`line_lower_bound`) and its
constructions (:func:`line_closed_form`, :func:`structured_lines`);
docs/lines.md says what each gives.  The optimiser for the general case is
:func:`spherecodes.solvers.line_packing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checks import check_sizes
from .constructions import cell_600, simplex_etf
from .stats import SeparationStats, separation_statistics

__all__ = ["LineBound", "antipodal_half", "line_closed_form", "line_lower_bound", "line_report", "max_abs_cos",
           "orthoplex_bound", "structured_lines", "welch_bound"]

#: A code whose coherence is within this of the lower bound attains it.
OPTIMAL_TOL = 1e-9

#: Largest structured code (points x d) built for its lines: 256 MiB of float64.
MAX_STRUCTURED_ENTRIES = 2**25

#: Max-cos of the 600-cell, (1 + sqrt 5)/4.
CELL_600_COS = (1 + math.sqrt(5)) / 4


@dataclass(frozen=True)
class LineBound:
    """A value that the coherence (max |cos|) of every K lines in R^d is at least.

    Attributes
    ----------
    value : float
    method : str
        Which theorem gives it.
    exact : bool
        Whether a known construction attains it for every such (d, K), so that
        it is the optimum (K ≤ d, d ≤ 2); the Welch and orthoplex bounds are
        attained only for some sizes.
    """

    value: float
    method: str
    exact: bool = False

    def to_dict(self) -> dict:
        return {"value": self.value, "method": self.method, "exact": self.exact}


def welch_bound(d: int, k: int) -> float:
    """The Welch bound: K > d unit vectors in R^d have ``max |cos| >= sqrt((K - d) / (d (K - 1)))``; 0 for K ≤ d.

    Met exactly by equiangular tight frames (Welch 1974; Strohmer & Heath 2003).

    Examples
    --------
    >>> welch_bound(3, 6) == 1 / 5 ** 0.5   # the six diagonals of the icosahedron
    True
    """
    d, k = check_sizes(d, k)
    return 0.0 if k <= d else math.sqrt((k - d) / (d * (k - 1)))


def orthoplex_bound(d: int, k: int) -> float | None:
    """The orthoplex bound ``1/sqrt(d)``, which holds for K > d(d+1)/2 real lines; None below that.

    Above the Gerzon bound d(d+1)/2 no equiangular frame exists and the
    coherence is at least 1/sqrt(d) (Conway, Hardin & Sloane 1996); mutually
    unbiased bases meet it.

    Examples
    --------
    >>> orthoplex_bound(4, 12), orthoplex_bound(4, 10)
    (0.5, None)
    """
    d, k = check_sizes(d, k)
    return 1.0 / math.sqrt(d) if 2 * k > d * (d + 1) else None


def line_lower_bound(d: int, k: int) -> LineBound:
    """The best lower bound spherecodes knows on the coherence of K lines in R^d.

    * d = 1: every line is the same line (coherence 1);
    * K ≤ d: 0, attained by an orthonormal basis;
    * d = 2: ``cos(pi / K)``, attained by K equally spaced lines (a line at
      angle θ is the point 2θ of the circle, where K points are at best
      2π/K apart);
    * else the larger of the Welch bound and, for K > d(d+1)/2, the orthoplex bound.

    Examples
    --------
    >>> line_lower_bound(3, 6)
    LineBound(value=0.4472135954999579, method='Welch bound', exact=False)
    >>> line_lower_bound(3, 7).method
    'orthoplex bound 1/sqrt(d) (K > d(d+1)/2)'
    """
    d, k = check_sizes(d, k)
    if d == 1:
        return LineBound(1.0, "d = 1: every line is the same line", True)
    if k <= d:
        return LineBound(0.0, "K <= d: an orthonormal basis", True)
    if d == 2:
        return LineBound(math.cos(math.pi / k), "d = 2: K equally spaced lines are optimal", True)
    welch = LineBound(welch_bound(d, k), "Welch bound")
    ortho = orthoplex_bound(d, k)
    if ortho is not None and ortho > welch.value:
        return LineBound(ortho, "orthoplex bound 1/sqrt(d) (K > d(d+1)/2)")
    return welch


def max_abs_cos(code) -> float:
    """The coherence ``max_{i != j} |<w_i, w_j>|`` in float64.

    Parameters
    ----------
    code : SeparationStats, Code or array_like (K, d)
        Statistics already computed (a code's ``stats``) are read, not recomputed:
        the coherence is the larger of max-cos and minus min-cos.

    Examples
    --------
    >>> max_abs_cos(np.array([[1.0, 0.0], [-0.6, 0.8]]))
    0.6
    """
    stats = code if isinstance(code, SeparationStats) else getattr(code, "stats", None)
    if stats is None:
        stats = separation_statistics(code)
    return max(stats.max_cos, -stats.min_cos)


def line_closed_form(d: int, k: int) -> tuple[np.ndarray, str] | None:
    """An optimal set of K lines in R^d given by a formula, as (rows, name), or None.

    K ≤ d: the first K vectors of the standard basis; d = 2: K equally
    spaced lines; K = d + 1: the simplex (an equiangular tight frame at the
    Welch bound 1/d); d = 1: the line itself, K times.

    Examples
    --------
    >>> rows, name = line_closed_form(3, 4)
    >>> name, round(max_abs_cos(rows), 12)
    ('simplex: an equiangular tight frame at the Welch bound', 0.333333333333)
    """
    d, k = check_sizes(d, k)
    if d == 1:
        return np.where(np.arange(k)[:, None] % 2 == 0, 1.0, -1.0), "the only line of R^1"
    if k <= d:
        return np.eye(k, d), "orthonormal basis"
    if d == 2:
        angles = np.pi * np.arange(k) / k
        return np.stack([np.cos(angles), np.sin(angles)], axis=1), "equally spaced lines in the plane"
    if k == d + 1:
        return simplex_etf(k, d), "simplex: an equiangular tight frame at the Welch bound"
    return None


def antipodal_half(points: np.ndarray, decimals: int = 9) -> np.ndarray | None:
    """One row of each antipodal pair of a code in which every row's antipode is present; None otherwise.

    The row kept is the one whose first non-zero coordinate (rounded to
    ``decimals``) is positive; rows are matched by their rounded coordinates.

    Examples
    --------
    >>> antipodal_half(np.array([[1.0, 0.0], [0.0, -1.0], [-1.0, 0.0], [0.0, 1.0]])).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> antipodal_half(np.eye(2)) is None
    True
    """
    rounded = np.round(np.asarray(points, dtype=np.float64), decimals) + 0.0  # + 0.0: no negative zeros
    lead = np.argmax(rounded != 0, axis=1)
    positive = rounded[np.arange(len(rounded)), lead] > 0
    if 2 * int(positive.sum()) != len(rounded):
        return None
    keys = {row.tobytes() for row in rounded[~positive]}
    if not all((-row + 0.0).tobytes() in keys for row in rounded[positive]):
        return None
    return np.asarray(points, dtype=np.float64)[positive]


def structured_lines(d: int, k: int) -> tuple[np.ndarray, str] | None:
    """K lines from the structured code in R^d with the smallest line coherence, as (rows, name).

    Two kinds of structured code give lines:

    * an **antipodal** code of at least 2K points: one row of each antipodal
      pair (:func:`antipodal_half`).  Its max-cos bounds the coherence of the
      half: for two rows that are not antipodes, ``-<w_i, w_j>`` is the cosine
      of w_i with the antipode of w_j, another pair of the code;
    * a code of at least K points without antipodes whose inner products are
      known (a distance-invariant code, e.g. a real equiangular tight frame):
      its first K points, with coherence the largest |c| of its spectrum.

    The codes are those of :func:`~spherecodes.structured.available_codes`
    and the antipodal codes (±w) of the real equiangular tight frames that
    fit (:func:`~spherecodes.structured.etf_codes`), visited by max-cos (a
    lower bound on either value), then size, until none can win; the
    600-cell adds 60 lines in R^4.  None when no code qualifies within
    :data:`MAX_STRUCTURED_ENTRIES`.

    Examples
    --------
    >>> rows, name = structured_lines(8, 120)      # the 240 roots of E8
    >>> name, rows.shape, round(max_abs_cos(rows), 12)
    ('half of E8 roots', (120, 8), 0.5)
    >>> rows, name = structured_lines(7, 14)       # a Paley frame: 1/√13, the Welch bound
    >>> name, abs(max_abs_cos(rows) - welch_bound(7, 14)) < 1e-12
    ('half of Paley ETF q = 13 (14 lines), ±', True)
    """
    from .structured import available_codes, etf_codes

    d, k = check_sizes(d, k)
    found, best = None, math.inf
    frames = [c.embedded(d) for c in etf_codes(d, antipodal=True) if c.size >= 2 * k]
    # Either kind's coherence is at least the code's max-cos: visit by max-cos, stop when it cannot win.
    for code in sorted(available_codes(d, k) + frames, key=lambda c: (c.max_cos, c.size, c.name)):
        if code.max_cos >= best or code.max_cos >= 1:
            break
        if code.size * code.d > MAX_STRUCTURED_ENTRIES:
            continue
        spectrum = code.spectrum()
        if spectrum is not None and -1 not in spectrum:
            coherence = max(abs(c) for c in spectrum if c != 1)
            if coherence < best:
                found, best = (code.points(k), code.name), coherence
        elif code.size >= 2 * k and (spectrum is None or spectrum[-1] == 1):
            half = antipodal_half(code.points())
            if half is not None:
                found, best = (half[:k], f"half of {code.name}"), code.max_cos
    if 4 <= d and k <= 60 and (found is None or max_abs_cos(found[0]) > CELL_600_COS):
        half = antipodal_half(cell_600())
        found = np.pad(half[:k], ((0, 0), (0, d - 4))), "half of the 600-cell"
    return found


def line_report(code) -> dict:
    """The line statistics of a code and how far they are from what is possible, as a dictionary.

    Keys: ``max_abs_cos`` (the coherence, in float64), ``min_line_angle_deg``
    (the smallest angle between two lines), ``welch_bound``,
    ``orthoplex_bound`` (None where it does not hold), ``lower_bound``
    (``value``, ``method``, ``exact``, ``gap`` = coherence − bound) and
    ``optimal`` (whether the coherence meets the bound within
    :data:`OPTIMAL_TOL`: a certificate of optimality; otherwise the gap is
    what is certified).

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> r = line_report(make_code(np.eye(4), method="external"))
    >>> r["max_abs_cos"], r["optimal"]
    (0.0, True)
    """
    d, k = code.d, code.k
    value = max_abs_cos(code)
    bound = line_lower_bound(d, k)
    gap = value - bound.value
    return {"d": d, "k": k, "max_abs_cos": value, "min_line_angle_deg": math.degrees(math.acos(min(1.0, value))),
            "welch_bound": welch_bound(d, k), "orthoplex_bound": orthoplex_bound(d, k),
            "lower_bound": {**bound.to_dict(), "gap": gap}, "optimal": gap <= OPTIMAL_TOL}
